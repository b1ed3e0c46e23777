"""Sets of vectors given as plain arrays, gathered in one pass: the fast
path of the validation of sets (`_validation.check_sets`).

A list of C-contiguous float arrays is copied into one block of points and
checked for non-finite values in the same pass, with no Python loop over
the arrays beyond reading their shapes: a small call spends microseconds
here. Anything else is declined (None) and takes the full validation, which
names what is wrong.
"""
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBuffer_Release
from cpython.buffer cimport PyObject_GetBuffer
from libc.math cimport isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, strcmp

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
    """gather_plain for sets of one dtype (`zero`: 0 of that type). The
    arrays are read through the buffer protocol (C-contiguous, their format
    that of native `floating`): a few tens of nanoseconds per array."""
    cdef Py_ssize_t n = len(sets), i, j, d = -1, total = 0, size
    cdef Py_buffer view
    cdef const char *fmt = b"d" if floating is double else b"f"
    cdef floating[:, ::1] points
    cdef floating *dst
    cdef bint finite = True
    cdef const floating **data = <const floating **>malloc(
        max(n, 1) * sizeof(floating *))
    if data == NULL:
        raise MemoryError()
    offsets_a = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_a
    try:
        offsets[0] = 0
        for i in range(n):
            s = sets[i]
            if type(s) is not np.ndarray:
                return None
            try:
                PyObject_GetBuffer(s, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
            except (ValueError, BufferError):  # not C-contiguous
                return None
            # The list holds the array and the GIL is held throughout: its
            # data stay where they are after the buffer is released.
            ok = (view.ndim == 2 and view.itemsize == sizeof(floating)
                  and view.format != NULL and strcmp(view.format, fmt) == 0
                  and view.shape[0] > 0 and view.shape[1] > 0
                  and (d < 0 or view.shape[1] == d))
            data[i] = <const floating *>view.buf
            if ok:
                d = view.shape[1]
                total += view.shape[0]
                offsets[i + 1] = total
            PyBuffer_Release(&view)
            if not ok:
                return None
        if total * d * sizeof(floating) > max_bytes:
            return None
        points_a = np.empty((total, d), dtype=dtype)
        points = points_a
        for i in range(n):
            size = (offsets[i + 1] - offsets[i]) * d
            dst = &points[offsets[i], 0]
            memcpy(dst, data[i], size * sizeof(floating))
            for j in range(size):
                finite &= isfinite(dst[j])
            if not finite:
                return None
        return points_a, offsets_a
    finally:
        free(data)
