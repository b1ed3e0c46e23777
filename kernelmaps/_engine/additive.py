"""Additive kernels between histograms, for every pair of rows: the driver
of ``_additive.pyx``. Dense rows go through the SIMD tiles, CSR rows
through their common non-zeros (as do dense float64 rows of the
Jensen-Shannon kernel with few non-zeros: its term is 0 where either value
is). Inputs
are validated (`check_histograms`): finite, non-negative, float32 or
float64, dense C-contiguous or canonical CSR.
"""

import math

import numpy as np
import scipy.sparse

from . import _additive as _impl
from .layout import (
    TILE_ROWS,
    additive_panel,
    pack_cols,
    pack_rows,
    row_blocks,
    tile_cols,
)
from .schedule import TASK_WORK, run_chunked, threads_for, touch_pages

__all__ = ["additive_sums"]


def additive_sums(X, Y, kind, n_threads, progress=False, desc=""):
    """Sum of the one-dimensional kernel `kind` over the features, for every
    pair of rows; Y=None: X against itself (symmetric). Float64 of shape
    ``(len(X), len(Y))``. With `progress`, a bar (`desc`) moves after every
    chunk of the pairs (the chunks are the same without it: the result
    does not depend on it).

    `kind` is "chi2" (x y / (x + y)), "intersection" (min(x, y)), "product"
    (x y) or "js" (the Jensen-Shannon term). The kernels are homogeneous
    (of degree 1, "product" 2): inputs whose largest value is beyond
    2**(+-100) (float32: 2**(+-20)) are scaled by a power of two (exact) to
    about 1, and the result back, so that no sum overflows before the
    result does and no value is subnormal unless the data span more than
    the floating-point range. "chi2" needs no scaling (its terms neither
    overflow nor underflow): each pair's value depends on its two rows only.
    The result may hold inf where it overflows.
    """
    symmetric = Y is None
    if symmetric:
        Y = X
    n, m = X.shape[0], Y.shape[0]
    out = np.empty((n, m))
    if n == 0 or m == 0:
        return out
    e = 0 if kind == "chi2" else _scale_exponent(X, None if symmetric else Y)
    if e:
        X = _ldexp(X, -e)
        Y = X if symmetric else _ldexp(Y, -e)
        out = additive_sums(X, None if symmetric else Y, kind, n_threads,
                            progress, desc)
        with np.errstate(over="ignore"):
            for a, b in row_blocks(out):  # (Ctrl-C stops between blocks)
                np.ldexp(out[a:b], e * (2 if kind == "product" else 1),
                         out=out[a:b])
        return out
    if scipy.sparse.issparse(X) and not scipy.sparse.issparse(Y):
        # The kernels are symmetric in x and y: dense rows against CSR.
        return additive_sums(Y, X, kind, n_threads, progress, desc).T.copy()
    if (kind == "js" and Y.dtype == np.float64 and not scipy.sparse.issparse(Y)
            and np.count_nonzero(Y) <= JS_SPARSE_DENSITY * Y.size):
        # A term is 0 where either value is: the common non-zeros only
        # (float32 tiles, twice as wide, stay ahead: see JS_SPARSE_DENSITY).
        Y = scipy.sparse.csr_array(Y)
    if scipy.sparse.issparse(Y):
        _sparse(X, Y, kind, symmetric, out, n_threads, progress, desc)
    else:
        _dense(X, Y, kind, symmetric, out, n_threads, progress, desc)
    return out


# The Jensen-Shannon kernel of dense float64 histograms with at most this
# share of non-zero values runs through their common non-zeros (CSR),
# faster there than the tiles, which skip only the features that are 0 in
# all the rows of a tile; float32 tiles, twice as wide, are faster at every
# density (benchmarks/TUNING.md).
JS_SPARSE_DENSITY = 0.3
# Element operations per feature of a pair of rows, by kind.
_COST = {"chi2": 4, "intersection": 1, "product": 1, "js": 32}
# ... and per value of its parts for the "js" tiles.
_PARTS_COST = 20


def _scale_exponent(X, Y):
    """e such that the values over 2**e are about 1, when the largest value
    is beyond 2**(+-100) (float32: 2**(+-20)); else 0."""
    top = max(_max(X), 0.0 if Y is None else _max(Y))
    if top == 0:
        return 0
    e = math.frexp(top)[1]
    bound = 100 if X.dtype == np.float64 else 20
    return e if abs(e) > bound else 0


def _max(A):
    data = A.data if scipy.sparse.issparse(A) else A
    return float(data.max()) if data.size else 0.0


def _ldexp(A, e):
    """A * 2**e, dense or CSR, in its dtype."""
    if scipy.sparse.issparse(A):
        A = A.copy()
        A.data = np.ldexp(A.data, e).astype(A.dtype, copy=False)
        return A
    return np.ldexp(A, e).astype(A.dtype, copy=False)


# Rows per task of the tiles.
ADDITIVE_ROW_BLOCK = 64


def _dense(X, Y, kind, symmetric, out, n_threads, progress, desc):
    n, d = X.shape
    m = Y.shape[0]
    block = additive_panel(d, X.dtype)
    items, cost = _dense_items(n, m, block, tile_cols(X.dtype), symmetric,
                               d * _COST[kind])
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    buffers = np.empty((n_threads, TILE_ROWS * block))
    if symmetric:  # the first row block writes a value in every row
        touch_pages(out, n_threads)
    rows, cols = pack_rows(X), pack_cols(Y)
    if kind == "chi2":
        _reciprocals(rows)
        _reciprocals(cols)
    if kind == "js":
        row_parts = _js_parts(rows, 3, n_threads)
        col_parts = _js_parts(cols, 2, n_threads)
    else:
        row_parts = col_parts = np.empty((0, 0, 0), dtype=X.dtype)

    plan = (rows, row_parts, cols, col_parts, n, m, kind, symmetric,
            ADDITIVE_ROW_BLOCK, block, items, out, buffers)
    run_chunked(_impl.dense, plan, cost, n_threads=n_threads, progress=progress,
                desc=desc)
    if kind == "chi2" and X.dtype == np.float32 and min(_max(X), _max(Y)) > 2.0**100:
        _chi2_overflowed_runs(rows, cols, out, n_threads)


def _chi2_overflowed_runs(rows, cols, out, n_threads):
    """The pairs of float32 "chi2" tiles where the float32 sum of a run
    of features overflowed (inf; possible where both rows hold values
    beyond 2**100), again with those runs in float64."""
    i, j = (np.ascontiguousarray(a) for a in np.nonzero(np.isinf(out)))
    run_chunked(_impl.chi2_pairs, (rows, cols, i, j, out),
                float(rows.shape[1]) * _COST["chi2"], n_tasks=len(i),
                n_threads=n_threads)


def _reciprocals(A):
    """2 / A in place, +inf where A is 0: what the "chi2" tiles take."""
    two = A.dtype.type(2)
    for a, b in row_blocks(A):
        with np.errstate(divide="ignore", over="ignore"):
            np.divide(two, A[a:b], out=A[a:b])
        np.abs(A[a:b], out=A[a:b])  # 2 / -0.0 = -inf


def _js_parts(A, planes, n_threads):
    """The parts of the values of the 2-D array `A` that the "js" tiles
    read (`_additive.js_parts`): E, M, I (3 planes) or M, I (2)."""
    parts = np.empty((planes, *A.shape), dtype=A.dtype)
    n_threads = threads_for(n_threads, float(A.size) * _PARTS_COST, A.shape[0])

    run_chunked(_impl.js_parts, (A, parts), float(A.shape[1]) * _PARTS_COST,
                n_tasks=A.shape[0], n_threads=n_threads)
    return parts


def _dense_items(n, m, block, nr, symmetric, unit):
    """Items (b, c0, c1) of `_additive.dense`: row block b against runs of
    consecutive column panels of `block` columns, up to TASK_WORK each
    (rows x columns x `unit`); and the work of each item."""
    n_blocks = -(-n // ADDITIVE_ROW_BLOCK)
    b = np.arange(n_blocks, dtype=np.int64)
    r_lo = b * ADDITIVE_ROW_BLOCK
    rows = np.minimum(n, r_lo + ADDITIVE_ROW_BLOCK) - r_lo
    c_lo = (r_lo // nr) * nr if symmetric else np.zeros_like(b)
    panel_work = float(block) * unit * rows
    per_item = np.maximum(1, (TASK_WORK // panel_work).astype(np.int64)) * block
    counts = -(-(m - c_lo) // per_item)
    owner = np.repeat(b, counts)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    c0 = c_lo[owner] + k * per_item[owner]
    c1 = np.minimum(m, c0 + per_item[owner])
    items = np.ascontiguousarray(np.stack([owner, c0, c1], axis=1))
    return items, rows[owner] * (c1 - c0) * float(unit)


def _sparse(X, Y, kind, symmetric, out, n_threads, progress, desc):
    index = np.int64 if Y.indices.dtype == np.int64 or (
        scipy.sparse.issparse(X) and X.indices.dtype == np.int64) else np.intc
    y_indices = Y.indices.astype(index, copy=False)
    y_indptr = Y.indptr.astype(index, copy=False)
    if scipy.sparse.issparse(X):
        x_dense = np.empty((0, X.shape[1]), dtype=X.dtype)
        x_data = X.data
        x_indices = X.indices.astype(index, copy=False)
        x_indptr = X.indptr.astype(index, copy=False)
    else:
        x_dense = np.ascontiguousarray(X)
        x_data = np.empty(0, dtype=X.dtype)
        x_indices = x_indptr = np.empty(0, dtype=index)
    n = out.shape[0]
    # Row i meets the stored values of the rows of Y from i (symmetric) or 0.
    after = Y.nnz - Y.indptr[:n] if symmetric else np.full(n, Y.nnz)
    cost = (after + X.shape[1]) * float(_COST[kind])
    n_threads = threads_for(n_threads, cost.sum(), n)
    scratch = np.zeros((n_threads, 3 * X.shape[1] + 16))
    if symmetric:  # the first row writes a value in every row
        touch_pages(out, n_threads)

    plan = (x_dense, x_data, x_indices, x_indptr, Y.data, y_indices, y_indptr,
            kind, symmetric, out, scratch)
    run_chunked(_impl.sparse, plan, cost, n_threads=n_threads, progress=progress,
                desc=desc)
