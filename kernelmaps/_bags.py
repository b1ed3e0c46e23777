"""Packed collections of sets of vectors."""

import operator

import numpy as np

from ._engine.layout import COPY_BLOCK_BYTES, row_blocks
from ._probes import as_float_array, float_dtype, is_dask_array, is_sparse

__all__ = ["Bags", "check_weights", "concat_sets", "pack_sets", "segment_sums",
           "shape_stand_in"]


class Bags:
    """A collection of sets of vectors, packed into one array.

    The points of all sets are stacked in one ``(total, d)`` array and the
    sets delimited by offsets, as the rows of a CSR matrix: set ``i`` is
    ``points[offsets[i]:offsets[i + 1]]``. Every function of kernelmaps that
    takes sets accepts a `Bags` or a list of 2-D arrays; packing once saves
    the copy on every call.

    Parameters
    ----------
    points : array_like or dask.array.Array, shape (total, d)
        Points of all sets, one after the other. float32 stays float32; other
        dtypes are converted to float64. A Dask array stays lazy: the feature
        maps' ``transform`` and the exact kernels between sets then return a
        lazy Dask array, chunked by sets; the other functions need the
        points in memory and raise a TypeError (compute them first:
        ``Bags(points.compute(), offsets)``).
    offsets : array_like of int, shape (n_sets + 1,)
        Non-decreasing, ``offsets[0] == 0`` and ``offsets[-1] == total``.
        Always copied.
    weights : array_like, shape (total,), optional
        A non-negative, finite weight for each point: the sets are weighted
        point clouds (a point of weight 2 counts as two copies of it). None
        (the default) weighs every point 1. Each function that takes
        weighted sets says how it uses the weights (most normalise them per
        set, as they divide by the number of points without weights); the
        others refuse a weighted `Bags` with a ValueError. Always copied, as
        float64.

    Attributes
    ----------
    points : ndarray, shape (total, d)
        The packed points (C-contiguous, read-only).
    offsets : ndarray of int64, shape (n_sets + 1,)
        The set boundaries (read-only).
    weights : ndarray of float64, shape (total,), or None
        The weights of the points (read-only), or None.

    See Also
    --------
    Bags.from_list : Pack a list of arrays.

    Notes
    -----
    A `Bags` may hold empty sets (equal consecutive offsets); the kernel
    functions reject them with a ValueError. Values are checked (finite) by
    the functions that use them, not here. The points are not copied when
    they already are a C-contiguous float32 or float64 array: the `Bags`
    is a read-only view of the caller's array, which it sees change if the
    caller writes to that array (copy the points first, ``np.array(points)``,
    to keep a snapshot). The offsets are always copied: they never change.

    With Dask points, each block of the output holds the sets that start in
    one row chunk of the points (the chunks are moved to set boundaries), so
    chunk the points at about the number of rows a worker should handle at
    once.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import Bags
    >>> bags = Bags.from_list([np.zeros((2, 3)), np.ones((4, 3))])
    >>> len(bags), bags.dim, bags.sizes
    (2, 3, array([2, 4]))
    >>> bags[1].shape
    (4, 3)
    >>> bags.offsets
    array([0, 2, 6])

    Weighted sets, e.g. pixels with their intensities:

    >>> wbags = Bags.from_list([np.zeros((2, 3)), np.ones((4, 3))],
    ...                        weights=[[1, 3], [0.5, 0.5, 0.5, 0.5]])
    >>> wbags.set_weights()
    array([4., 2.])
    """

    __slots__ = ("_offsets", "_points", "_weights")

    def __init__(self, points, offsets, weights=None):
        lazy = is_dask_array(points)
        foreign = _foreign_library(points)
        if foreign is not None:
            points = _foreign_points(foreign, points)
        elif lazy:
            if points.dtype.kind not in "biuf":
                raise TypeError(
                    f"points must hold real numbers, got dtype {points.dtype}"
                )
            if points.dtype != np.float32:
                points = points.astype(float_dtype(points.dtype))
        else:
            points = as_float_array(points, "points")
        if points.ndim != 2:
            raise ValueError(
                f"points must be 2-D (total, d), got shape {points.shape}"
            )
        offsets = np.asarray(offsets)
        if offsets.ndim != 1 or offsets.shape[0] < 1:
            raise ValueError(
                f"offsets must be 1-D with n_sets + 1 >= 1 entries, got shape "
                f"{offsets.shape}"
            )
        if offsets.dtype.kind not in "iu":
            raise TypeError(f"offsets must be integers, got dtype {offsets.dtype}")
        # Always a copy (never a view of the caller's array): the offsets
        # of a Bags never change, whatever the caller does to its array.
        offsets = np.array(offsets, dtype=np.int64, copy=True)
        if offsets[0] != 0 or offsets[-1] != points.shape[0]:
            raise ValueError(
                f"offsets must start at 0 and end at the number of points "
                f"({points.shape[0]}), got {offsets[0]} and {offsets[-1]}"
            )
        if (offsets[1:] < offsets[:-1]).any():
            raise ValueError("offsets must be non-decreasing")
        if not lazy and foreign is None:
            points = np.ascontiguousarray(points).view()
            points.flags.writeable = False
        offsets = offsets.view()
        offsets.flags.writeable = False
        if foreign is not None and _foreign_library(weights, "weights") is not None:
            weights = _foreign_library(weights, "weights", points=points).to_numpy(
                weights)
        self._points = points
        self._offsets = offsets
        self._weights = (None if weights is None
                         else check_weights(weights, points.shape[0], "weights"))

    @classmethod
    def _trusted(cls, points, offsets, weights=None):
        """A Bags of arrays made for it: C-contiguous float32 or float64
        `points`, int64 `offsets` and float64 `weights` (or None) that
        satisfy the checks of the constructor, owned by no caller (made
        read-only in place)."""
        bags = cls.__new__(cls)
        points.flags.writeable = False
        offsets.flags.writeable = False
        if weights is not None:
            weights.flags.writeable = False
        bags._points, bags._offsets, bags._weights = points, offsets, weights
        return bags

    @classmethod
    def from_list(cls, sets, weights=None):
        """Pack a sequence of 2-D arrays ``(n_i, d)`` with the same ``d``.

        The result is float32 if every set is float32, else float64.
        `weights`, if given, is a sequence of 1-D arrays, the weights of the
        points of each set (``weights[i]`` of shape ``(n_i,)``).

        Examples
        --------
        >>> import numpy as np
        >>> from kernelmaps import Bags
        >>> Bags.from_list([[[0.0, 1.0]], [[2.0, 3.0], [4.0, 5.0]]])
        Bags(n_sets=2, dim=2, n_points=3, dtype=float64)
        >>> Bags.from_list([[[0.0, 1.0]], [[2.0, 3.0], [4.0, 5.0]]],
        ...                weights=[[1.0], [2.0, 0.5]])
        Bags(n_sets=2, dim=2, n_points=3, dtype=float64, weighted)
        """
        bags = pack_sets(sets, "sets")
        if weights is None:
            return bags
        return bags.with_weights(pack_weights(weights, bags.sizes, "weights"))

    def with_weights(self, weights):
        """The same sets (no copy of the points) with the point weights
        `weights` (shape ``(total,)``; None: unweighted)."""
        return Bags(self._points, self._offsets, weights)

    @property
    def points(self):
        """All points, ``(total, d)``, C-contiguous and read-only."""
        return self._points

    @property
    def offsets(self):
        """Set boundaries, int64 ``(n_sets + 1,)``, read-only."""
        return self._offsets

    @property
    def weights(self):
        """Weights of the points, float64 ``(total,)`` read-only, or None
        (every point weighs 1)."""
        return self._weights

    def set_weights(self):
        """Total weight of each set, float64 ``(n_sets,)``: its number of
        points when the sets are not weighted."""
        if self._weights is None:
            return self.sizes.astype(np.float64)
        return segment_sums(self._weights, self._offsets)

    @property
    def dim(self):
        """Number of features ``d``."""
        return self._points.shape[1]

    @property
    def sizes(self):
        """Number of points of each set, shape ``(n_sets,)``."""
        return self._offsets[1:] - self._offsets[:-1]

    @property
    def n_points(self):
        """Total number of points."""
        return self._points.shape[0]

    @property
    def dtype(self):
        """dtype of the points: float32 or float64."""
        return self._points.dtype

    def __len__(self):
        return self._offsets.shape[0] - 1

    @property
    def shape(self):
        """``(n_sets,)``: the `Bags` as a 1-D sequence of sets, whose length
        is `len`; libraries that read the number of samples from ``shape``
        (scikit-learn's cross-validation) then index a `Bags` as a whole,
        which keeps its weights."""
        return (len(self),)

    def __getitem__(self, index):
        """Set ``index`` as a read-only ``(n_i, d)`` view; a slice, an array
        or list of integers, or a boolean mask gives a `Bags` of those
        sets, with their weights (a slice of step 1: views, no copy)."""
        if index is Ellipsis:
            index = slice(None)
        if isinstance(index, tuple):  # NumPy's a[key, ...] (scikit-learn)
            key = index[:-1] if index and index[-1] is Ellipsis else index
            if len(key) > 1 or not index:
                raise TypeError(
                    f"Bags takes one index (of sets), got the tuple {index!r}"
                )
            index = key[0] if key else slice(None)
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self._take(np.arange(start, stop, step))
            stop = max(stop, start)
            offsets = self._offsets[start : stop + 1]
            points = self._points[int(offsets[0]) : int(offsets[-1]), ...]
            weights = (None if self._weights is None
                       else self._weights[offsets[0] : offsets[-1]])
            return Bags(points, offsets - offsets[0], weights)
        n = len(self)
        selection = _selection(index, n)
        if selection is not None:
            return self._take(selection)
        # An integer (Python or NumPy, or a 0-d integer array): never a
        # string, float or bool, which int() would also take.
        try:
            i = None if isinstance(index, (bool, np.bool_)) else operator.index(index)
        except TypeError:
            i = None
        if i is None:
            raise TypeError(
                f"Bags indices must be integers, slices, or 1-D arrays (or "
                f"lists) of integers or booleans, got {type(index).__name__}"
            )
        if not -n <= i < n:
            raise IndexError(f"set index {i} out of range for {n} sets")
        i %= n
        return self._points[int(self._offsets[i]) : int(self._offsets[i + 1]), ...]

    def _take(self, selection):
        """A new `Bags` of the sets `selection` (int64, in range, in any
        order and with repeats), their points and weights copied in blocks
        of rows (Ctrl-C stops between two)."""
        starts = self._offsets[selection]
        sizes = self._offsets[selection + 1] - starts
        offsets = np.zeros(selection.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        rows = np.repeat(starts - offsets[:-1], sizes) + np.arange(offsets[-1])
        weights = None if self._weights is None else self._weights[rows]
        if is_dask_array(self._points):
            return Bags(self._points[rows], offsets, weights)
        foreign = _foreign_library(self._points)
        if foreign is not None:  # (a gather in the library, on its device)
            return Bags(foreign.xp.take(self._points, foreign.from_numpy(rows),
                                        axis=0), offsets, weights)
        points = np.empty((rows.shape[0], self.dim), dtype=self.dtype)
        for a, b in row_blocks(points):  # (rows in range: "clip" does not
            # buffer the output, as the default "raise" does)
            np.take(self._points, rows[a:b], axis=0, out=points[a:b], mode="clip")
        return Bags._trusted(points, offsets,
                             None if weights is None else np.array(weights))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        weighted = "" if self._weights is None else ", weighted"
        return (
            f"Bags(n_sets={len(self)}, dim={self.dim}, n_points={self.n_points}, "
            f"dtype={self.dtype}{weighted})"
        )

    def __reduce__(self):
        points = self._points
        kept = is_dask_array(points) or _foreign_library(points) is not None
        return (Bags, (points if kept else np.array(points),
                       np.array(self._offsets),
                       None if self._weights is None else np.array(self._weights)))


def _foreign_library(a, name="points", **others):
    """The `kernelmaps._libraries.ArrayLibrary` of `a` (argument `name`,
    and of `others`, the arguments it must agree with), an array of a
    library other than NumPy; else None."""
    if type(a) is np.ndarray:  # (NumPy's points pay no more)
        return None
    from ._libraries import is_foreign, library_of

    return library_of(**{name: a}, **others) if is_foreign(a) else None


def _foreign_points(library, points):
    """The points of a Bags, an array of `library`: kept in it, on its
    device (and with its gradient), float32 or float64 (`as_float`); their
    values are checked by the functions that use them."""
    from ._libraries import as_float

    if points.ndim != 2:
        raise ValueError(f"points must be 2-D (total, d), got shape "
                         f"{tuple(points.shape)}")
    return as_float(library, points, "points")


def _selection(index, n):
    """The sets chosen by a list, range, array (or array-like: a pandas
    Index) or boolean mask `index` of `n` sets, as non-negative int64
    indices; None where `index` is no such thing (an integer, or a type the
    caller refuses)."""
    if not (isinstance(index, (list, range)) or hasattr(index, "__array__")):
        return None  # (a tuple is NumPy's index of several dimensions)
    key = np.asarray(index)
    if key.ndim != 1:
        return None
    if key.dtype == bool:
        if key.shape[0] != n:
            raise IndexError(
                f"boolean index of {key.shape[0]} entries for {n} sets"
            )
        return np.flatnonzero(key).astype(np.int64)
    if key.size == 0:  # [] is float64 to NumPy: an empty selection
        return np.zeros(0, dtype=np.int64)
    if key.dtype.kind not in "iu":
        raise TypeError(
            f"Bags indices must be integers, slices, or 1-D arrays (or lists) "
            f"of integers or booleans, got an array of dtype {key.dtype}"
        )
    bad = (key >= n) if key.dtype.kind == "u" else (key < -n) | (key >= n)
    if bad.any():
        raise IndexError(
            f"set index {int(key[bad][0])} out of range for {n} sets"
        )
    key = key.astype(np.int64)
    return np.where(key < 0, key + n, key)


def concat_sets(X, Y):
    """The sets of Bags X, then those of Y, as one Bags (of their common
    dtype; with weights, 1 for the points of an unweighted one, where
    either is weighted)."""
    if X.dim != Y.dim:
        raise ValueError(f"X and Y must hold sets of points of the same "
                         f"dimension, got {X.dim} and {Y.dim}")
    dtype = np.result_type(X.points.dtype, Y.points.dtype)
    weights = None
    if X.weights is not None or Y.weights is not None:
        weights = np.concatenate([
            np.ones(B.n_points) if B.weights is None else B.weights
            for B in (X, Y)])
    return Bags(np.concatenate([X.points, Y.points]).astype(dtype, copy=False),
                np.concatenate([X.offsets, X.offsets[-1] + Y.offsets[1:]]),
                weights)


def check_weights(weights, n_points, name):
    """`weights` (argument `name`) as a new read-only float64 array of
    shape ``(n_points,)``, checked finite and non-negative."""
    w = as_float_array(weights, name)
    if w.shape != (n_points,):
        raise ValueError(
            f"{name} must have one weight per point, shape ({n_points},), got "
            f"shape {w.shape}"
        )
    w = np.array(w, dtype=np.float64, copy=True)
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or infinity")
    if (w < 0).any():
        raise ValueError(f"{name} must be non-negative, got {float(w.min())!r}")
    w.flags.writeable = False
    return w


def pack_weights(weights, sizes, name):
    """The per-set weight vectors `weights` (argument `name`, one 1-D array
    per set, of the sizes `sizes`) concatenated, float64."""
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__"):
        raise TypeError(
            f"{name} must be a sequence of 1-D arrays, one per set, got "
            f"{type(weights).__name__}"
        )
    if len(weights) != len(sizes):
        raise ValueError(
            f"{name} must hold one array per set ({len(sizes)}), got "
            f"{len(weights)}"
        )
    parts = []
    for i, (w, n) in enumerate(zip(weights, sizes, strict=True)):
        w = as_float_array(w, f"{name}[{i}]")
        if w.shape != (n,):
            raise ValueError(
                f"{name}[{i}] must have one weight per point of set {i}, shape "
                f"({n},), got shape {w.shape}"
            )
        parts.append(w.astype(np.float64, copy=False))
    return np.concatenate(parts) if parts else np.zeros(0)


def segment_sums(values, offsets):
    """Sums of `values` (1-D float64) over the segments delimited by
    `offsets` (empty segments sum to 0), float64."""
    totals = np.zeros(offsets.shape[0] - 1)
    nonempty = offsets[1:] > offsets[:-1]
    if nonempty.any():
        totals[nonempty] = np.add.reduceat(values, offsets[:-1][nonempty])
    return totals


def pack_sets(sets, name):
    """Pack the collection of sets `sets` (argument `name`) into a Bags.

    Nothing is computed: a Bags with Dask points is returned as it is, and a
    3-D Dask array becomes one (lazily); a sequence holding a Dask array is
    refused (`as_float_array`).
    """
    if isinstance(sets, Bags):
        return sets
    if is_sparse(sets):  # iterating would give 1-row sparse matrices (or fail)
        raise TypeError(
            f"{name} is a scipy.sparse {sets.format.upper()} matrix; a "
            f"collection of sets is a sequence of dense 2-D arrays (n_i, d) "
            f"or a Bags"
        )
    if hasattr(sets, "columns") and len(getattr(sets, "shape", ())) == 2:
        # a DataFrame: iterating it would give its column names
        raise TypeError(
            f"{name} is a {type(sets).__name__} of {sets.shape[0]} rows, not a "
            f"collection of sets: pass one set of points as a list of one array "
            f"([{name}.to_numpy()]), and the sets of a long table as one array "
            f"per set (e.g. [group.to_numpy() for _, group in "
            f"{name}.groupby(set_column)], without that column)"
        )
    if is_dask_array(sets) or (isinstance(sets, np.ndarray)
                               and sets.dtype != object):
        if sets.ndim != 3:
            hint = " (one set: wrap it in a list)" if sets.ndim == 2 else ""
            raise ValueError(
                f"{name} must be a sequence of 2-D arrays (n_i, d) or a 3-D "
                f"array (n_sets, n_points, d), got an array of shape "
                f"{sets.shape}{hint}"
            )
        n_sets, n, d = sets.shape
        if is_dask_array(sets):  # whole sets in each block before reshaping
            sets = sets.rechunk({1: -1, 2: -1})
        return Bags(sets.reshape(n_sets * n, d), np.arange(n_sets + 1) * n)
    if isinstance(sets, (str, bytes)) or not hasattr(sets, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence of 2-D arrays or a Bags, got "
            f"{type(sets).__name__}"
        )
    if isinstance(sets, (list, tuple)) and sets and _foreign_library(sets[0]):
        return _pack_foreign(sets, name)
    arrays, ends = [], [0]
    for i, a in enumerate(sets):
        if not (type(a) is np.ndarray and a.dtype in _FLOATS):  # else: as is
            a = as_float_array(a, f"{name}[{i}]")
        if a.ndim != 2:
            hint = (f" (sets of scalars: give each as a column, e.g. "
                    f"[np.reshape(s, (-1, 1)) for s in {name}]; one set of "
                    f"points: wrap it in a list, [{name}])" if a.ndim == 1 else "")
            raise ValueError(
                f"{name}[{i}] must be a 2-D array (n_points, d), got shape "
                f"{a.shape}{hint}"
            )
        if arrays and a.shape[1] != arrays[0].shape[1]:
            raise ValueError(
                f"all sets of {name} must have the same number of features: "
                f"{name}[0] has {arrays[0].shape[1]}, {name}[{i}] has "
                f"{a.shape[1]}"
            )
        arrays.append(a)
        ends.append(ends[-1] + a.shape[0])
    if not arrays:
        raise ValueError(f"{name} must contain at least one set")
    dtype = np.result_type(*arrays)
    offsets = np.array(ends, dtype=np.int64)
    if ends[-1] * arrays[0].shape[1] * dtype.itemsize <= COPY_BLOCK_BYTES:
        # (concatenate keeps the layout of its inputs: Fortran order for
        # some strided ones)
        points = np.ascontiguousarray(np.concatenate(arrays, axis=0, dtype=dtype))
        return Bags._trusted(points, offsets)
    points = np.empty((ends[-1], arrays[0].shape[1]), dtype=dtype)
    for a, start in zip(arrays, ends[:-1], strict=True):
        for i, j in row_blocks(a):  # a large set in blocks: Ctrl-C between
            points[start + i:start + j] = a[i:j]
    return Bags._trusted(points, offsets)


_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def shape_stand_in(a, ndim):
    """Zeros of the shape of the array `a` (anything else: `a` itself),
    with at most one point per set where it has `ndim` dimensions (a set,
    or an array of sets): a broadcast view, no memory, on which NumPy's
    checks of the layout of sets give their messages."""
    shape = getattr(a, "shape", None)
    if shape is None:
        return a
    shape = tuple(shape)
    if len(shape) == ndim:
        shape = (*shape[:-2], min(shape[-2], 1), shape[-1])
    return np.broadcast_to(np.float64(0.0), shape)


def _pack_foreign(sets, name):
    """`pack_sets` of a list of arrays of a library other than NumPy: one
    array of that library, on their device (mixed libraries or devices
    refused, naming the sets)."""
    from ._libraries import as_float, library_of

    library = library_of(**{f"{name}[{i}]": a for i, a in enumerate(sets)})
    xp = library.xp
    pack_sets([shape_stand_in(a, 2) for a in sets], name)  # (NumPy's messages)
    arrays = [as_float(library, a, f"{name}[{i}]") for i, a in enumerate(sets)]
    dtype = xp.float32 if all(a.dtype == xp.float32 for a in arrays) else xp.float64
    points = xp.concat([xp.astype(a, dtype) for a in arrays])
    return Bags(points, np.cumsum([0, *(a.shape[0] for a in arrays)]))
