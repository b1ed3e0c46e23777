"""Probes of what an input is, shared by the base modules: whether it is a
Dask array (without importing Dask), and the float dtype it is computed in.
A leaf: it imports nothing from kernelmaps."""

import numbers
import sys

import numpy as np

__all__ = [
    "all_finite",
    "any_negative",
    "as_float_array",
    "check_not_sparse",
    "float_dtype",
    "is_dask_array",
    "is_sparse",
]


def is_dask_array(x):
    """Whether `x` is a dask.array.Array (without importing Dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(x, da.Array)


def is_sparse(x):
    """Whether `x` is a scipy.sparse matrix or array (of any format),
    without importing SciPy."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(x)


def check_not_sparse(x, name, what="dense values"):
    """A TypeError naming `name` if `x` is a scipy.sparse matrix or array
    (any format: CSR, COO, DIA, BSR, ...): the functions that take points
    or parameter arrays need `what`, and a sparse input is never densified
    silently."""
    if is_sparse(x):
        raise TypeError(
            f"{name} is a scipy.sparse {x.format.upper()} "
            f"{'array' if type(x).__name__.endswith('_array') else 'matrix'}; "
            f"this function needs {what}: pass {name}.toarray()"
        )


def float_dtype(dtype):
    """The dtype data of `dtype` are computed in: float32 (in either byte
    order) stays float32, every other dtype becomes float64 (native)."""
    dtype = np.dtype(dtype)
    single = dtype.kind == "f" and dtype.itemsize == 4
    return np.dtype(np.float32) if single else np.dtype(np.float64)


def as_float_array(a, name):
    """`a` (argument `name`) as an ndarray of float32 (kept) or float64
    (any other real dtype). A Dask array is refused, not computed: the
    caller needs the values in memory; a scipy.sparse matrix is refused
    (TypeError), not densified."""
    if type(a) is np.ndarray and (a.dtype == np.float64 or a.dtype == np.float32):
        return a  # the common case, first: no probe needed
    if is_dask_array(a):
        raise TypeError(
            f"{name} is a lazy Dask array; this function needs the values in "
            f"memory: pass {name}.compute() (the feature maps' transform "
            f"takes Dask input and stays lazy)"
        )
    check_not_sparse(a, name)
    try:
        arr = np.asarray(a)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} could not be made an array: {err}") from None
    if arr.dtype == np.float32 or arr.dtype == np.float64:
        return arr
    if arr.dtype.kind in "biuf":  # (float32 in the other byte order: float32)
        return arr.astype(float_dtype(arr.dtype))
    if arr.dtype == object and all(isinstance(v, numbers.Real) for v in arr.flat):
        try:
            return arr.astype(np.float64)
        except OverflowError:  # Python ints beyond the float range
            raise ValueError(
                f"{name} holds a number too large for float64"
            ) from None
    raise TypeError(
        f"{name} must hold real numbers, got an array of dtype {arr.dtype}"
    )


# Whole-array checks go in blocks of about this many values: no temporary
# array is larger, and Ctrl-C stops between two blocks.
PROBE_BLOCK_VALUES = 1 << 21


def all_finite(a):
    """Whether every value of the array `a` is finite (no NaN or inf)."""
    if a.size <= PROBE_BLOCK_VALUES:
        return bool(np.isfinite(a).all())
    flat = a.reshape(-1)
    return all(np.isfinite(flat[i:i + PROBE_BLOCK_VALUES]).all()
               for i in range(0, flat.shape[0], PROBE_BLOCK_VALUES))


def any_negative(a):
    """Whether some value of the array `a` is negative."""
    flat = a.reshape(-1)
    return any((flat[i:i + PROBE_BLOCK_VALUES] < 0).any()
               for i in range(0, flat.shape[0], PROBE_BLOCK_VALUES))
