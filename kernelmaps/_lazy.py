"""mmd_test on Dask input: the samples checked without computing them.

Lazy samples (`lazy_samples`): 2-D Dask arrays of points or of histograms,
or `Bags` whose points are a Dask array. Their shapes, dtypes and set sizes
are checked at once; their values (finite; histograms non-negative) in the
tasks that read them, a chunk at a time, with the words of the checks of
input in memory (`check_rows`, `check_sets`), naming X or Y (and the set).
The tests' passes over them are Dask tasks (`kernelmaps._two_sample.dask_pass`).
"""

import numpy as np

from ._bags import Bags, pack_sets
from ._probes import all_finite, as_float_array, float_dtype, is_dask_array
from ._transforms import is_lazy, map_delayed
from ._validation import check_rows, check_sets, check_unweighted_beside_lazy

__all__ = ["is_lazy_input", "lazy_samples"]


def lazy_samples(spec, X, Y):
    """X and Y (one of them lazy) checked without computing them, as the
    objects `spec.pool` takes: Dask arrays of float rows (one chunk of
    columns; points of X and Y in their common dtype), or Bags of Dask
    points; their values are checked as their chunks are read. A sample in
    memory is checked as the spec checks it, then made lazy."""
    if spec.kind == "sets":
        return tuple(_lazy_sets(spec, A, name) for A, name in ((X, "X"),
                                                               (Y, "Y")))
    points = spec.kind == "points"
    what = "vectors" if points else "histograms"
    arrays = [_lazy_rows(A, name, what) for A, name in ((X, "X"), (Y, "Y"))]
    if points and arrays[0].shape[1] != arrays[1].shape[1]:
        raise ValueError(f"X and Y must have the same number of features, "
                         f"got {arrays[0].shape[1]} and {arrays[1].shape[1]}")
    dtype = (np.result_type(*(A.dtype for A in arrays)) if points else None)
    return tuple(
        A.map_blocks(_checked_rows, name, not points, dtype or A.dtype,
                     dtype=dtype or A.dtype)
        for A, name in zip(arrays, ("X", "Y"), strict=True))


def _lazy_rows(A, name, what):
    """`A` as a Dask array of float rows, its shape and dtype checked (an
    array in memory wrapped as one chunk)."""
    import dask.array as da

    if not is_dask_array(A):  # (its values are checked in the tasks too)
        A = da.from_array(as_float_array(A, name), chunks=-1)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of {what} (one per "
                         f"row), got {A.ndim} dimension(s)")
    if any(np.isnan(size) for size in A.shape):
        raise ValueError(f"{name} is a Dask array of unknown shape: compute "
                         f"its chunk sizes first ({name}.compute_chunk_sizes())")
    if A.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got an array of "
                        f"dtype {A.dtype}")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {A.shape})")
    if A.shape[0] < 2:
        unit = "points" if what == "vectors" else "objects"
        raise ValueError(f"{name} must hold at least 2 {unit}, got "
                         f"{A.shape[0]}")
    return A.astype(float_dtype(A.dtype)).rechunk({1: -1})


def _checked_rows(block, name, nonnegative, dtype):
    """A chunk of rows of the sample `name`, checked as `check_rows` checks
    the sample in memory (the same errors), in `dtype`."""
    if block.shape[0] == 0:
        return block.astype(dtype)
    return check_rows(block, name, nonnegative=nonnegative).astype(
        dtype, copy=False)


def _lazy_sets(spec, A, name):
    """The sets `A` as a Bags of Dask points (one chunk of columns), the
    number and sizes of its sets checked, its points as they are read.
    Weighted sets are refused (the tasks' `Bags` carry no weights): by a
    kernel without weights as in memory, else as beside lazy sets."""
    if not is_lazy(A):
        bags = spec.check(A, name)
        check_unweighted_beside_lazy(bags, name)
        return _enough(Bags(_as_dask(bags.points), bags.offsets), name)
    bags = pack_sets(A, name)
    if bags.weights is not None:
        check_sets(bags, name, lazy=True, weighted=spec.weighted)
    if len(bags) == 0:
        raise ValueError(f"{name} must contain at least one set")
    if bags.dim == 0:
        raise ValueError(f"{name}: the sets have no feature (d == 0)")
    sizes = bags.sizes
    if (sizes == 0).any():
        raise ValueError(f"{name}[{int(np.argmin(sizes))}] is empty")
    spec.check_sizes(bags, name)
    points = bags.points.rechunk({1: -1})
    points = points.map_blocks(_checked_set_points, name,
                               map_delayed(bags.offsets), dtype=points.dtype)
    return _enough(Bags(points, bags.offsets), name)


def _as_dask(points):
    import dask.array as da

    return da.from_array(points, chunks=(-1, -1))


def _enough(bags, name):
    if len(bags) < 2:
        raise ValueError(f"{name} must hold at least 2 objects, got "
                         f"{len(bags)}")
    return bags


def _checked_set_points(block, name, offsets, block_info=None):
    """A chunk of the points of the sets `name` (offsets: theirs), checked
    as `check_sets` checks sets in memory (the same error, naming the
    set)."""
    if not all_finite(block):
        start = block_info[0]["array-location"][0][0]
        bad = start + np.flatnonzero(~np.isfinite(block).all(axis=1))[0]
        i = np.searchsorted(offsets, bad, side="right") - 1
        raise ValueError(f"{name}[{i}] contains NaN or infinity")
    return block


def is_lazy_input(X, Y):
    """Whether X or Y is a Dask array, or a Bags of Dask points."""
    return is_lazy(X) or is_lazy(Y)
