"""Sets of vectors given as plain arrays, gathered in one pass: the fast
path of the validation of sets (`_validation.check_sets`).

A list of C-contiguous float arrays is copied into one block of points and
checked for non-finite values in the same pass, with no Python loop over
the arrays beyond reading their shapes: a small call spends microseconds
here. Anything else is declined (None) and takes the full validation, which
names what is wrong.
"""
from libc.math cimport isfinite
from libc.stdint cimport int64_t
from libc.string cimport memcpy

import numpy as np

from ._runtime cimport floating

_FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)


def gather_plain(sets, Py_ssize_t max_bytes):
    """``(points, offsets)`` of the collection `sets`, or None.

    Gathered only when `sets` is a list or tuple of 2-D ndarrays (or a 3-D
    ndarray, its sets along the first axis), all C-contiguous native float64
    or all native float32, with one number of columns (at least 1), at least
    one row each, every value finite, and at most `max_bytes` bytes in all:
    ``points`` (total, d) is a new array of that dtype, ``offsets`` int64
    (n_sets + 1,). Every other input, valid or not, gives None.
    """
    if type(sets) is np.ndarray:  # (n_sets, n_points, d): one block
        if sets.ndim != 3 or 0 in sets.shape:
            return None
        n_sets, n, d = sets.shape
        gathered = gather_plain([sets.reshape(n_sets * n, d)], max_bytes)
        if gathered is None:
            return None
        return gathered[0], np.arange(n_sets + 1, dtype=np.int64) * n
    if (type(sets) is not list and type(sets) is not tuple) or not sets:
        return None
    first = sets[0]
    if type(first) is not np.ndarray:
        return None
    if first.dtype is _FLOAT64:
        return _gather(sets, max_bytes, _FLOAT64, <double>0)
    if first.dtype is _FLOAT32:
        return _gather(sets, max_bytes, _FLOAT32, <float>0)
    return None


cdef object _gather(sets, Py_ssize_t max_bytes, object dtype, floating zero):
    """gather_plain for sets of one dtype (`zero`: 0 of that type)."""
    cdef Py_ssize_t n = len(sets), i, j, d = -1, total = 0, size
    cdef const floating[:, ::1] a
    cdef floating[:, ::1] points
    cdef floating *dst
    cdef bint finite = True
    offsets_a = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_a

    offsets[0] = 0
    for i in range(n):
        s = sets[i]
        if type(s) is not np.ndarray or s.dtype is not dtype or s.ndim != 2:
            return None
        rows, cols = s.shape
        if rows == 0 or cols == 0 or (d >= 0 and cols != d):
            return None
        d = cols
        total += rows
        offsets[i + 1] = total
    if total * d * sizeof(floating) > max_bytes:
        return None
    points_a = np.empty((total, d), dtype=dtype)
    points = points_a
    for i in range(n):
        try:
            a = sets[i]
        except (ValueError, BufferError):  # not C-contiguous
            return None
        size = a.shape[0] * d
        dst = &points[offsets[i], 0]
        memcpy(dst, &a[0, 0], size * sizeof(floating))
        for j in range(size):
            finite &= isfinite(dst[j])
        if not finite:
            return None
    return points_a, offsets_a
