"""The library, device and path of arrays of libraries other than NumPy
(`kernelmaps._array_api` builds on it): `library_of` recognises them
(`is_foreign`), refuses mixed libraries and devices, and gives their
`ArrayLibrary`: the array API namespace (``array-api-compat``'s), and
whether the library computes (`ArrayLibrary.native`) or the compiled
engine through NumPy."""

import dataclasses

import numpy as np
import scipy.sparse

from ._probes import is_dask_array

__all__ = ["ArrayLibrary", "as_float", "is_foreign", "library_of", "type_name"]

# Libraries whose CPU arrays the compiled engine takes through DLPack.
_EXCHANGED = ("torch", "jax")


@dataclasses.dataclass(frozen=True)
class ArrayLibrary:
    """The library and device of the arrays of one call.

    xp: the array API namespace (`array_api_compat`'s); name: the library's
    module name ("torch", "jax", "cupy", "array_api_strict", ...); device:
    the arrays' device; native: whether the library computes (True), or the
    compiled engine through NumPy (False)."""

    xp: object
    name: str
    device: object
    native: bool

    def to_numpy(self, a):
        """`a` of this library as a NumPy array (no gradient), without a
        copy where the exchange allows (on the CPU; a read-only view of a
        JAX array), else copied to the host."""
        if a is None:
            return None
        host = self.host_values(a)
        if host is None:
            raise ValueError(
                "this call needs the values of an array that carries none here "
                "(a JAX array under jit, a PyTorch meta tensor): the median "
                "heuristic's gamma=None among them; give gamma"
            )
        a = host
        if self.name == "torch":
            return a.cpu().numpy()
        if self.name == "cupy":
            return a.get()
        try:
            return np.from_dlpack(a)
        except (TypeError, BufferError, RuntimeError, ValueError):
            return np.asarray(a)

    def from_numpy(self, a):
        """The NumPy array `a` in this library, on this device."""
        if self.name == "torch":
            import torch

            a = np.ascontiguousarray(a)  # (PyTorch takes writable arrays)
            return torch.from_numpy(a if a.flags.writeable else a.copy()).to(
                self.device)
        return self.xp.asarray(a, device=self.device)

    def scalar(self, a):
        """The value of the 0-D array `a` as a Python float (no gradient),
        or None where it cannot be read (`readable`)."""
        value = self.host_values(a)
        return None if value is None else float(value)

    def holds(self, condition):
        """Whether the 0-D boolean array `condition` is true, or True where
        its value cannot be read: the checks of values are made where they
        can."""
        value = self.host_values(condition)
        return True if value is None else bool(value)

    def all_finite(self, a):
        """Whether every value of the array `a` is finite (True where its
        values cannot be read): its sum is finite only then (a NaN or an
        infinity makes it NaN or infinite), one read of `a`; `a` is read
        value by value only where the sum is not (finite values whose sum
        overflows; NumPy's warning of it silenced, for libraries on NumPy)."""
        xp = self.xp
        with np.errstate(over="ignore", invalid="ignore"):
            total = xp.sum(a)
        return self.holds(xp.isfinite(total)) or self.holds(xp.all(xp.isfinite(a)))

    def readable(self, a):
        """Whether the values of `a` can be read on the host (not those of
        a JAX tracer under ``jit``, nor of a PyTorch ``meta`` tensor)."""
        return self.host_values(a) is not None

    def numpy_dtype(self, dtype):
        """A `dtype` argument with the library's float32 or float64 as
        NumPy's (others as given)."""
        xp = self.xp
        for ours, numpy in ((xp.float32, np.float32), (xp.float64, np.float64)):
            if dtype is ours:
                return numpy
        return dtype

    def on_host(self):
        """Whether the arrays lie in the host's memory, computed by its CPU
        (array-api-strict's, PyTorch's and JAX's CPU devices; a JAX tracer
        where JAX computes on the CPU)."""
        if self.name == "array_api_strict":
            return True
        if self.name == "jax" and self.device is None:
            import jax

            return jax.default_backend() == "cpu"
        return _on_cpu(self.name, self.device)

    def host_values(self, a):
        """`a` without its gradient, as an array whose values can be read,
        or None: a PyTorch tensor detached (None on ``meta``), a JAX
        tracer's concrete primal (under ``jax.grad``; None under ``jit``)."""
        if self.name == "torch":
            return None if a.device.type == "meta" else a.detach()
        if self.name == "jax":
            import jax

            while isinstance(a, jax.core.Tracer):
                a = getattr(a, "primal", None)
                if a is None:
                    return None
        return a


def is_foreign(a):
    """Whether `a` is an array of a library other than NumPy (not a NumPy
    array, a scipy.sparse matrix, a Dask array, a plain sequence, a Python
    number or string, or a type, such as a `dtype` argument's
    ``numpy.float32``)."""
    if a is None or isinstance(a, (np.ndarray, np.generic, list, tuple, type, float,
                                   int, str)):
        return False
    if scipy.sparse.issparse(a) or is_dask_array(a):
        return False
    return hasattr(a, "__array_namespace__") or hasattr(a, "__dlpack__")


def library_of(**arrays):
    """The `ArrayLibrary` of the named `arrays` (None values ignored), or
    None where none is an array of another library than NumPy.

    Raises TypeError where the arrays are of several libraries (NumPy among
    them) and ValueError where they lie on several devices, naming the
    arguments."""
    given = {name: a for name, a in arrays.items() if a is not None}
    foreign = {name: a for name, a in given.items() if is_foreign(a)}
    if not foreign:
        return None
    try:
        import array_api_compat
    except ImportError:  # pragma: no cover (the [array] extra installs it)
        name = next(iter(foreign))
        raise ImportError(
            f"{name} is a {type_name(foreign[name])}: arrays of libraries "
            f"other than NumPy need array-api-compat (pip install "
            f"\"kernelmaps[array]\")"
        ) from None
    names = {name: _library(a) for name, a in given.items()}
    if len(set(names.values())) > 1:
        (a, la), (b, lb) = list(names.items())[:2]
        raise TypeError(
            f"{a} is a {type_name(given[a])} and {b} a {type_name(given[b])}: "
            f"give every array in one library ({la} or {lb})"
        )
    # (None: unknown, as for a JAX tracer under a transformation)
    devices = {name: device for name, a in given.items()
               if (device := array_api_compat.device(a)) is not None}
    first = next(iter(devices), None)
    for name, device in devices.items():
        if device != devices[first]:
            raise ValueError(
                f"{first} is on device {devices[first]} and {name} on device "
                f"{device}: move them to one device"
            )
    library = next(iter(names.values()))
    device = devices.get(first)
    xp = array_api_compat.array_namespace(*given.values())
    native = not (library in _EXCHANGED and _on_cpu(library, device)
                  and not any(_wants_gradient(library, a) for a in given.values()))
    return ArrayLibrary(xp, library, device, native)


def _library(a):
    """The top module of the library of `a` ("numpy" for a NumPy array)."""
    if isinstance(a, np.ndarray):
        return "numpy"
    return type(a).__module__.split(".")[0].replace("jaxlib", "jax")


def type_name(a):
    t = type(a)
    return f"{t.__module__.split('.')[0]}.{t.__qualname__}"


def _on_cpu(library, device):
    if library == "torch":
        return device.type == "cpu"
    return getattr(device, "platform", None) == "cpu"  # jax


def _wants_gradient(library, a):
    """Whether a gradient may be asked through `a`: a PyTorch tensor that
    requires one (with gradients enabled), or a JAX tracer."""
    if library == "torch":
        import torch

        return a.requires_grad and torch.is_grad_enabled()
    import jax

    return isinstance(a, jax.core.Tracer)


def as_float(library, A, name):
    """The array `A` (argument `name`) of `library` as float32 (kept) or
    float64 (any other real dtype); a TypeError for other dtypes."""
    xp = library.xp
    if xp.isdtype(A.dtype, ("complex floating", "bool")) or not xp.isdtype(
            A.dtype, ("real floating", "integral")):
        raise TypeError(f"{name} must hold real numbers, got an array of dtype "
                        f"{str(A.dtype).rsplit('.', 1)[-1]}")  # (NumPy's words)
    return A if A.dtype in (xp.float32, xp.float64) else xp.astype(A, xp.float64)
