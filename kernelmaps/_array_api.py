"""Arrays of other libraries: PyTorch, JAX, CuPy, array-api-strict and any
library that follows the Python array API standard.

NumPy input (and lists, scipy.sparse matrices, Dask arrays, `Bags`) keeps
the compiled path as it is. An array of another library is recognised here
(`library_of`) and computed in one of two ways, the result always returned
in the input's library, on its device:

- by the compiled engine, through a zero-copy exchange with NumPy (DLPack),
  for PyTorch and JAX arrays on the CPU where no gradient is asked: the
  engine is many times faster than the same array arithmetic, and its
  values are NumPy's bit for bit;
- by the library itself, on the array's device (`ArrayLibrary.native`):
  another device (a GPU), a gradient asked (a PyTorch tensor that requires
  one, a JAX tracer) or any other library. Each spec's ``array_block`` is
  that computation; `row_blocks` bounds its memory.

Mixed libraries or devices are refused (`library_of`). The namespaces come
from ``array-api-compat`` (``pip install "kernelmaps[array]"``), imported
only when an array of another library is given.
"""

import dataclasses
import functools

import numpy as np
import scipy.sparse

from ._bags import Bags
from ._config import working_memory_bytes
from ._probes import is_dask_array

__all__ = ["ArrayLibrary", "as_float", "check_rows", "exchanged", "library_of",
           "library_of_objects", "numpy_objects", "pair_sums", "result_dtype",
           "row_blocks", "symmetrised"]

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
        host = self._host(a)
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

            return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)
        return self.xp.asarray(a, device=self.device)

    def scalar(self, a):
        """The value of the 0-D array `a` as a Python float (no gradient),
        or None where it cannot be read (`readable`)."""
        value = self._host(a)
        return None if value is None else float(value)

    def holds(self, condition):
        """Whether the 0-D boolean array `condition` is true, or True where
        its value cannot be read: the checks of values are made where they
        can."""
        value = self._host(condition)
        return True if value is None else bool(value)

    def readable(self, a):
        """Whether the values of `a` can be read on the host (not those of
        a JAX tracer under ``jit``, nor of a PyTorch ``meta`` tensor)."""
        return self._host(a) is not None

    def numpy_dtype(self, dtype):
        """A `dtype` argument with the library's float32 or float64 as
        NumPy's (others as given)."""
        xp = self.xp
        for ours, numpy in ((xp.float32, np.float32), (xp.float64, np.float64)):
            if dtype is ours:
                return numpy
        return dtype

    def _host(self, a):
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
    array, a scipy.sparse matrix, a Dask array, a plain sequence or a type,
    such as a `dtype` argument's ``numpy.float32``)."""
    if a is None or isinstance(a, (np.ndarray, np.generic, list, tuple, type)):
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
            f"{name} is a {_type_name(foreign[name])}: arrays of libraries "
            f"other than NumPy need array-api-compat (pip install "
            f"\"kernelmaps[array]\")"
        ) from None
    names = {name: _library(a) for name, a in given.items()}
    if len(set(names.values())) > 1:
        (a, la), (b, lb) = list(names.items())[:2]
        raise TypeError(
            f"{a} is a {_type_name(given[a])} and {b} a {_type_name(given[b])}: "
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


def _type_name(a):
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


def row_blocks(n, row_bytes, library):
    """The (start, stop) of blocks of the `n` rows of a result, each row
    taking `row_bytes` of temporaries, within the working-memory budget
    (`kernelmaps.set_config`), or the device's free memory where the
    library reports it and it is lower."""
    budget = working_memory_bytes()
    free = _free_device_memory(library)
    if free is not None:
        budget = min(budget, free // 2)
    step = max(1, int(budget // max(row_bytes, 1)))
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def _free_device_memory(library):
    """The free memory of the device (bytes) where the library reports it
    (PyTorch and CuPy on a CUDA device), else None."""
    if library.name == "torch" and library.device.type == "cuda":
        import torch

        return torch.cuda.mem_get_info(library.device)[0]
    if library.name == "cupy":
        import cupy

        with cupy.cuda.Device(library.device.id):
            return cupy.cuda.runtime.memGetInfo()[0]
    return None


def check_rows(library, X, name, *, nonnegative=False):
    """`kernelmaps._validation.check_rows` for an array of `library`
    computed there: 2-D, real, not empty, finite and (`nonnegative`)
    non-negative where its values can be read, as float32 (kept) or
    float64 (any other real dtype), with the same messages."""
    xp = library.xp
    what = "histograms" if nonnegative else "vectors"
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of {what} (one per row), "
                         f"got {X.ndim} dimension(s)")
    X = as_float(library, X, name)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(X.shape)})")
    if not library.holds(xp.all(xp.isfinite(X))):
        raise ValueError(f"{name} contains NaN or infinity")
    if nonnegative and not library.holds(xp.all(X >= 0)):
        raise ValueError(f"{name} contains negative values; histograms "
                         f"must be >= 0")
    return X


def as_float(library, A, name):
    """The array `A` (argument `name`) of `library` as float32 (kept) or
    float64 (any other real dtype); a TypeError for other dtypes."""
    xp = library.xp
    if xp.isdtype(A.dtype, ("complex floating", "bool")) or not xp.isdtype(
            A.dtype, ("real floating", "integral")):
        raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}")
    return A if A.dtype in (xp.float32, xp.float64) else xp.astype(A, xp.float64)


def result_dtype(library, dtype, *arrays):
    """The output dtype in `library` (`kernelmaps._validation.check_dtype`'s
    rule: `dtype`, else float32 where every array is float32); `dtype` may
    also be the library's float32 or float64."""
    from ._validation import check_dtype

    xp = library.xp
    if dtype is None:
        float32 = all(a.dtype == xp.float32 for a in arrays if a is not None)
        return xp.float32 if float32 else xp.float64
    return xp.float32 if check_dtype(library.numpy_dtype(dtype)) == np.float32 \
        else xp.float64


def pair_sums(library, A, B, term):
    """``S[i, j] = sum_k term(A[i, k], B[j, k])`` between the rows of A
    and B (None: A, then S exactly symmetric) of `library`, computed there
    by blocks of rows of A (`row_blocks`): differentiable where `term` is.
    `term` takes arrays of shapes (rows, 1, d) and (1, m, d) and
    returns an array of their broadcast shape."""
    xp = library.xp
    C = A if B is None else B
    row_bytes = 4 * C.shape[0] * C.shape[1] * (4 if A.dtype == xp.float32 else 8)
    right = xp.expand_dims(C, axis=0)
    blocks = [xp.sum(term(xp.expand_dims(A[a:b, :], axis=1), right), axis=-1)
              for a, b in row_blocks(A.shape[0], row_bytes, library)]
    S = blocks[0] if len(blocks) == 1 else xp.concat(blocks)
    return S if B is not None else symmetrised(library, S)


def symmetrised(library, S):
    """``(S + S^T) / 2``: exactly symmetric, for a square S of `library`
    whose entries (i, j) and (j, i) may differ by roundoff."""
    return (S + library.xp.matrix_transpose(S)) / 2


def _arrays_of(S):
    """The arrays that make the objects `S`: the points of a Bags, the
    arrays of a list of sets; S itself otherwise."""
    if isinstance(S, Bags):
        return [S.points]
    if isinstance(S, (list, tuple)):
        return list(S)
    return [S]


def library_of_objects(**objects):
    """`library_of` for arrays or collections of sets (a list of arrays, a
    3-D array, a Bags), each array of a list named by its index. NumPy
    objects pay one test each (of a list, its first array's)."""
    if not any(_has_foreign(S) for S in objects.values()):
        return None
    named = {}
    for name, S in objects.items():
        if S is None:
            continue
        listed = isinstance(S, (list, tuple))
        named.update({f"{name}[{i}]" if listed else name: a
                      for i, a in enumerate(_arrays_of(S))})
    if not any(is_foreign(a) for a in named.values()):
        return None
    return library_of(**named)


def numpy_objects(library, S):
    """The objects `S` of `library` (`library_of_objects`) with NumPy
    arrays in place of the library's (`ArrayLibrary.to_numpy`)."""
    if S is None or not any(is_foreign(a) for a in _arrays_of(S)):
        return S
    if isinstance(S, Bags):
        return Bags(library.to_numpy(S.points), S.offsets, S.weights)
    if isinstance(S, (list, tuple)):
        return [library.to_numpy(a) for a in S]
    return library.to_numpy(S)


def exchanged(func):
    """Decorate a public function computed with NumPy only: arrays (or
    sets) of another library among its arguments, on the CPU without a
    gradient, are passed as their NumPy views and an array result (or each
    array of a tuple result) returned in that library; on another device or
    with a gradient, a TypeError says so. Calls without such arrays pay one
    scan of the arguments."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not (any(map(_has_foreign, args))
                or any(map(_has_foreign, kwargs.values()))):
            return func(*args, **kwargs)
        named = {f"argument {i}": a for i, a in enumerate(args)}
        named.update(kwargs)
        library = library_of_objects(**{k: a for k, a in named.items()
                                        if _has_foreign(a)})
        if library.native:
            raise TypeError(
                f"{func.__name__} computes with NumPy only: give {library.name} "
                f"arrays on the CPU without a gradient (the compiled engine then "
                f"computes, the result in {library.name}), or NumPy arrays"
            )
        result = func(*(numpy_objects(library, a) for a in args),
                      **{k: numpy_objects(library, a) for k, a in kwargs.items()})
        if isinstance(result, tuple):
            return tuple(library.from_numpy(r) if isinstance(r, np.ndarray) else r
                         for r in result)
        return library.from_numpy(result) if isinstance(result, np.ndarray) else result

    return wrapper


def _has_foreign(a):
    """Whether `a`, or the first array of a list or a Bags, is foreign."""
    if isinstance(a, (list, tuple)):
        return bool(a) and is_foreign(a[0])
    if isinstance(a, Bags):
        return is_foreign(a.points)
    return is_foreign(a)
