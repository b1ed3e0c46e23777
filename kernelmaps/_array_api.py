"""Arrays of other libraries: PyTorch, JAX, CuPy, array-api-strict and any
library that follows the Python array API standard.

NumPy input (and lists, scipy.sparse matrices, Dask arrays, `Bags`) keeps
the compiled path as it is. An array of another library is recognised by
`kernelmaps._libraries` (`library_of`, also of the arrays of sets here:
`library_of_objects`) and computed in one of two ways, the result always
returned in the input's library, on its device:

- by the compiled engine, through a zero-copy exchange with NumPy (DLPack),
  for PyTorch and JAX arrays on the CPU where no gradient is asked: the
  engine is many times faster than the same array arithmetic, and its
  values are NumPy's bit for bit;
- by the library itself, on the array's device (`ArrayLibrary.native`):
  another device (a GPU), a gradient asked (a PyTorch tensor that requires
  one, a JAX tracer) or any other library: each unit's ``_array_*``
  module (or a spec's ``array_block``), with the helpers here; a public
  function says which by `dispatched` (or its own test of
  ``library.native``); `row_blocks` bounds the memory.

Mixed libraries or devices are refused (`library_of`). The namespaces come
from ``array-api-compat`` (``pip install "kernelmaps[array]"``), imported
only when an array of another library is given.
"""

import functools
import inspect
import math

import numpy as np

from ._bags import Bags
from ._config import working_memory_bytes
from ._libraries import ArrayLibrary, as_float, is_foreign, library_of, type_name

__all__ = [
    "DIRECT_WIDTH",
    "ArrayLibrary",
    "as_float",
    "check_rows",
    "dispatched",
    "exp_minus",
    "free_device_memory",
    "is_foreign",
    "library_objects",
    "library_of",
    "library_of_objects",
    "numpy_objects",
    "pair_sums",
    "point_distances",
    "point_kernel",
    "result_dtype",
    "row_blocks",
    "row_norms",
    "scalar_argument",
    "symmetrised",
    "times_power_of_two",
]


# On the host's CPU, blocks of at most this many bytes of temporaries: an
# operation of the library cannot be stopped by Ctrl-C, and this bounds
# its work to some 0.1 s (Python checks for Ctrl-C between two); larger
# blocks, beyond the caches, are no faster there.
HOST_BLOCK_BYTES = 1 << 27


def row_blocks(n, row_bytes, library):
    """The (start, stop) of blocks of the `n` rows of a result, each row
    taking `row_bytes` of temporaries, within half the device's free
    memory where the library reports it (`free_device_memory`), else the
    working-memory budget (`kernelmaps.set_config`); on the host's CPU,
    within `HOST_BLOCK_BYTES`."""
    free = free_device_memory(library)
    budget = working_memory_bytes() if free is None else free // 2
    if library.on_host():
        budget = min(budget, HOST_BLOCK_BYTES)
    step = max(1, int(budget // max(row_bytes, 1)))
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def free_device_memory(library):
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


def scalar_argument(library, value, name, check):
    """The scalar parameter `name` given as `value`, checked by `check`
    (`kernelmaps._validation.check_scalar`'s, on its value where it can be
    read). A 0-D real array of `library` (the objects' library, on their
    device) is kept where the library computes, so that a gradient flows
    to it (a learned bandwidth), and taken as its value otherwise; an
    array of another library or device, or of more dimensions, is refused
    naming `name`."""
    if not is_foreign(value):
        return check(value)
    given = library_of(**{name: value})
    if library is None or given.name != library.name or (
            None not in (given.device, library.device)
            and given.device != library.device):
        where = "NumPy" if library is None else f"{library.name} on {library.device}"
        raise TypeError(f"{name} is a {type_name(value)} on {given.device}: give it "
                        f"as a Python float, or as a 0-D array of the objects' "
                        f"library and device ({where})")
    xp = library.xp
    if value.ndim != 0 or not xp.isdtype(value.dtype, "real floating"):
        raise TypeError(f"{name} must be a real number (a 0-D array of real "
                        f"floats), got an array of shape {tuple(value.shape)} and "
                        f"dtype {value.dtype}")
    number = library.scalar(value)
    checked = check(number) if number is not None else None
    return value if library.native else checked


def check_rows(library, X, name, *, nonnegative=False):
    """`kernelmaps._validation.check_rows` for an array of `library`
    computed there: 2-D, real, not empty, finite and (`nonnegative`)
    non-negative where its values can be read, as float32 (kept) or
    float64 (any other real dtype), with the same messages."""
    xp = library.xp
    what = "histograms" if nonnegative else "vectors"
    if not is_foreign(X):  # (None, a list, a NumPy array beside the others)
        raise TypeError(f"{name} must be a 2-D array of {library.name} {what} "
                        f"(one per row), as the other arrays, got "
                        f"{type_name(X)}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of {what} (one per row), "
                         f"got {X.ndim} dimension(s)")
    X = as_float(library, X, name)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(X.shape)})")
    if not library.all_finite(X):
        raise ValueError(f"{name} contains NaN or infinity")
    if nonnegative and not library.holds(xp.all(X >= 0)):
        raise ValueError(f"{name} contains negative values; histograms "
                         f"must be >= 0")
    return X


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


def cast_result(library, K, out, names, overflow=None):
    """The result `K` (float64, of `library`) as `out`, as the NumPy path
    casts it (`kernelmaps._validation.cast_output`): a ValueError with the
    message `overflow` where a value is not finite, and the float32 range
    message where `out` is float32 and cannot hold one (where the values
    can be read)."""
    from ._validation import float32_range_message

    xp = library.xp
    if overflow is not None and not library.all_finite(K):
        raise ValueError(overflow)
    with np.errstate(over="ignore"):  # (refused below; libraries on NumPy)
        R = xp.astype(K, out, copy=False)
    if out != K.dtype and not library.all_finite(R):
        raise ValueError(float32_range_message(
            names, library.scalar(xp.max(xp.abs(K)))))
    return R


def warn_uninformative(library, K, symmetric, kernel, between, gamma=None,
                       equal=None, scale="gamma"):
    """`kernelmaps._warnings.warn_uninformative` of the kernel matrix K of
    `library`: whether it is 0 between distinct objects or constant, read
    on the device (booleans and one value; nothing where K's values cannot
    be read), then the NumPy path's warning, from a 2 x 2 matrix of the
    same kind. `equal` as there (a bool, or a function called only where
    K is constant)."""
    from ._warnings import CONSTANT_RTOL
    from ._warnings import warn_uninformative as warn

    xp = library.xp
    if (not library.readable(K) or K.shape[0] < 2
            or (not symmetric and K.shape[1] < 2)):
        return
    off = (K * (1 - xp.eye(K.shape[0], dtype=K.dtype, device=library.device))
           if symmetric else K)
    zero = library.holds(xp.all(off == 0)) and (
        not symmetric or library.holds(xp.all(xp.linalg.diagonal(K) != 0)))
    value = library.scalar(K[0, 0])
    constant = np.isfinite(value) and library.holds(
        xp.all(xp.abs(K - value) <= CONSTANT_RTOL * abs(value)))
    if constant:
        warn(np.full((2, 2), value), symmetric, kernel, between, gamma, equal, scale)
    elif zero:
        warn(np.eye(2) if symmetric else np.zeros((2, 2)), symmetric, kernel,
             between, gamma, equal, scale)


def pair_sums(library, A, B, term):
    """``S[i, j] = sum_k term(A[i, k], B[j, k])`` between the rows of A
    and B (None: A, then S exactly symmetric) of `library`, computed there
    by blocks of rows of A (`row_blocks`): differentiable where `term` is.
    `term` takes arrays of shapes (rows, 1, d) and (1, m, d) and
    returns an array of their broadcast shape; it is homogeneous of degree
    1 (``term(c x, c y) = c term(x, y)``, as the additive kernels' are),
    and each pair of rows is summed at a power-of-two scale of its own
    (`_pair_exponents`): no subnormal or overflowing term where the pair's
    kernel value is not."""
    xp = library.xp
    C = A if B is None else B
    row_bytes = 5 * C.shape[0] * C.shape[1] * (4 if A.dtype == xp.float32 else 8)
    right = xp.expand_dims(C, axis=0)
    e_c = _top_exponents(xp, C)
    blocks = []
    for a, b in row_blocks(A.shape[0], row_bytes, library):
        s = _pair_exponents(xp, _top_exponents(xp, A[a:b, :]), e_c)
        half = xp.floor(s / 2)
        two = xp.asarray(2.0, dtype=A.dtype)
        down = [xp.pow(two, -half)[..., None], xp.pow(two, half - s)[..., None]]
        scaled = term(xp.expand_dims(A[a:b, :], axis=1) * down[0] * down[1],
                      right * down[0] * down[1])
        blocks.append(xp.sum(scaled, axis=-1) * xp.pow(two, half)
                      * xp.pow(two, s - half))
    S = blocks[0] if len(blocks) == 1 else xp.concat(blocks)
    return S if B is not None else symmetrised(library, S)


def _top_exponents(xp, A):
    """``floor(log2(max |row|))`` of each row of A (0 for a row of zeros)."""
    top = xp.max(xp.abs(A), axis=1)
    usable = (top > 0) & xp.isfinite(top)
    return xp.floor(xp.log2(xp.where(usable, top, 1)))


def _pair_exponents(xp, e_a, e_c):
    """The exponent s of the power of two ``2**-s`` each pair of rows is
    taken to, from the exponents of their largest values: that of the
    pair's largest value (its values then below 2: no overflow, and those
    of two small rows scaled up: no subnormal), but not so large that the
    other row's largest value would fall below 2**-1000 (a tiny row beside
    a huge one stays as it is: the terms of such a pair are in range).
    Constants for a gradient."""
    e_a, e_c = xp.expand_dims(e_a, axis=1), xp.expand_dims(e_c, axis=0)
    return xp.minimum(xp.maximum(e_a, e_c),
                      xp.clip(xp.minimum(e_a, e_c) + 1000, min=0))


def point_kernel(library, A, B, params, direct=False):
    """The point kernel ``params["kernel"]`` (with its "gamma", "coef0",
    "degree") between the points A (..., r, d) and B (..., c, d) of
    `library`: (..., r, c). rbf and laplacian: 1 where the points are
    equal, whatever gamma, and 0 where their distance overflows; the
    squared distances of rbf from the differences up to `DIRECT_WIDTH`
    features, or any number where `direct` (0 between equal points,
    exactly; any scale), else from the products, a matrix product (NaN
    where the squares of the points overflow); energy ``(|a| + |b| - |a -
    b|) / 2``. Differentiable: gradient 0, not NaN, where a distance is
    0."""
    # (a distance that overflows to inf is meant: kernel value 0; not a
    # warning of the libraries that compute with NumPy, array-api-strict)
    with np.errstate(over="ignore"):
        return _point_kernel(library.xp, A, B, params, direct)


def _point_kernel(xp, A, B, params, direct):
    kernel, gamma = params["kernel"], params.get("gamma")
    if kernel in ("linear", "polynomial"):
        products = A @ xp.matrix_transpose(B)
        if kernel == "linear":
            return products
        return (gamma * products + params["coef0"]) ** params["degree"]
    if kernel in ("rbf", "laplacian"):
        return exp_minus(xp, gamma, _distances(xp, A, B, kernel, direct))
    return (xp.expand_dims(row_norms(xp, A), axis=-1)  # energy
            + xp.expand_dims(row_norms(xp, B), axis=-2)
            - row_norms(xp, xp.expand_dims(A, axis=-2) - xp.expand_dims(B, axis=-3))
            ) / 2


def point_distances(library, A, B, kernel, direct=False):
    """The distances of the point kernel `kernel` ("rbf": squared
    Euclidean, "laplacian": L1) between the points A (..., r, d) and B
    (..., c, d) of `library`, as `point_kernel` computes them: its values
    at any gamma are ``exp_minus(xp, gamma, distances)``."""
    with np.errstate(over="ignore"):  # (as `point_kernel`)
        return _distances(library.xp, A, B, kernel, direct)


def _distances(xp, A, B, kernel, direct):
    if kernel == "rbf" and A.shape[-1] > DIRECT_WIDTH and not direct:
        return xp.clip(xp.expand_dims(xp.sum(A * A, axis=-1), axis=-1)
                       + xp.expand_dims(xp.sum(B * B, axis=-1), axis=-2)
                       - 2 * (A @ xp.matrix_transpose(B)), min=0)
    differences = xp.expand_dims(A, axis=-2) - xp.expand_dims(B, axis=-3)
    if kernel == "rbf":
        return xp.sum(differences * differences, axis=-1)
    return xp.sum(xp.abs(differences), axis=-1)


# Features up to which the rbf kernel's squared distances come from the
# differences of the points (beyond: from their products, a matrix product).
DIRECT_WIDTH = 16


def exp_minus(xp, gamma, S):
    """``exp(-gamma S)`` of the non-negative S, 1 where S is 0 (whatever
    gamma: no 0 times inf). A finite float gamma needs no mask: ``-gamma
    * 0`` is 0 (the same values, two passes over S fewer, each way)."""
    if isinstance(gamma, (int, float)) and math.isfinite(gamma):
        return xp.exp(-gamma * S)
    positive = S > 0
    return xp.where(positive, xp.exp(-gamma * xp.where(positive, S, 1)), 1)


def row_norms(xp, A):
    """The Euclidean norms along the last axis, with gradient 0 at 0."""
    squares = xp.sum(A * A, axis=-1)
    positive = squares > 0
    return xp.where(positive, xp.sqrt(xp.where(positive, squares, 1)),
                    0 * squares)  # (NaN kept)


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
        return type(S)(library.to_numpy(a) for a in S)
    return library.to_numpy(S)


def library_objects(library, S):
    """The NumPy objects `S` (an array, a list or tuple of arrays, a Bags)
    in `library`, on its device: `numpy_objects` the other way."""
    if isinstance(S, Bags):
        return Bags(library.from_numpy(S.points), S.offsets, S.weights)
    if isinstance(S, (list, tuple)):
        return type(S)(library.from_numpy(a) for a in S)
    return library.from_numpy(S)


def dispatched(native, *names):
    """Decorate a function computed with NumPy whose arguments `names` are
    arrays (or collections of sets): where they are of another library, on
    the CPU without a gradient, their NumPy views go through it (a `dtype`
    of the library taken as NumPy's) and an array result (or each of a
    tuple) comes back in the library; where the library computes
    (`ArrayLibrary.native`), ``native(library, *args, **kwargs)`` gives
    the result. Calls with NumPy input pay one scan of `names`."""

    def decorate(func):
        positions = list(inspect.signature(func).parameters)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            given = {**dict(zip(positions, args, strict=False)), **kwargs}
            library = library_of_objects(**{name: given.get(name) for name in names})
            if library is None:
                return func(*args, **kwargs)
            if library.native:
                return native(library, *args, **kwargs)
            given = {name: numpy_objects(library, a) if name in names else a
                     for name, a in given.items()}
            if given.get("dtype") is not None:
                given["dtype"] = library.numpy_dtype(given["dtype"])
            result = func(**given)
            if isinstance(result, tuple):
                return tuple(library.from_numpy(r) if isinstance(r, np.ndarray)
                             else r for r in result)
            return (library.from_numpy(result) if isinstance(result, np.ndarray)
                    else result)

        return wrapper

    return decorate


def times_power_of_two(A, e):
    """The array (or float) `A` times ``2**e`` for any integer e, exact
    where the result is a normal number, by steps that every float dtype
    holds (a float ``2**e`` alone may overflow)."""
    while e:
        step = max(-60, min(60, e))
        A = A * 2.0**step
        e -= step
    return A


def _has_foreign(a):
    """Whether `a`, or the first array of a list or a Bags, is foreign."""
    if isinstance(a, (list, tuple)):
        return bool(a) and is_foreign(a[0])
    if isinstance(a, Bags):
        return is_foreign(a.points)
    return is_foreign(a)
