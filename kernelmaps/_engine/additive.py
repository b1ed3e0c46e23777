"""Additive kernels between histograms, for every pair of rows: the driver
of ``_additive.pyx``. Dense rows go through the SIMD tiles, CSR rows through
their common non-zeros. Inputs are validated (`check_histograms`): finite,
non-negative, float32 or float64, dense C-contiguous or canonical CSR.
"""

import numpy as np
import scipy.sparse

from . import _additive as _impl
from .layout import (
    ADDITIVE_ROW_BLOCK,
    TILE_COLS,
    TILE_ROWS,
    additive_panel,
    pack_cols,
    pack_rows,
)
from .schedule import TASK_WORK, run_chunked, threads_for

__all__ = ["additive_sums"]


def additive_sums(X, Y, kind, n_threads):
    """Sum of the one-dimensional kernel `kind` over the features, for every
    pair of rows; Y=None: X against itself (symmetric)."""
    symmetric = Y is None
    if symmetric:
        Y = X
    n, m = X.shape[0], Y.shape[0]
    out = np.empty((n, m))
    if n == 0 or m == 0:
        return out
    if scipy.sparse.issparse(X) and not scipy.sparse.issparse(Y):
        # The kernels are symmetric in x and y: dense rows against CSR.
        return additive_sums(Y, X, kind, n_threads).T.copy()
    if scipy.sparse.issparse(Y):
        _sparse(X, Y, kind, symmetric, out, n_threads)
    else:
        _dense(X, Y, kind, symmetric, out, n_threads)
    return out


# Element operations per feature of a pair of rows, by kind.
_COST = {"chi2": 4, "intersection": 1, "product": 1, "xlogx": 12, "js": 24}


def _dense(X, Y, kind, symmetric, out, n_threads):
    n, d = X.shape
    m = Y.shape[0]
    block = additive_panel(d, X.dtype)
    items, cost = _dense_items(n, m, block, TILE_COLS[X.dtype.name], symmetric,
                               d * _COST[kind])
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    buffers = np.empty((n_threads, TILE_ROWS * block))
    rows, cols = pack_rows(X), pack_cols(Y)

    def run(start, stop):
        _impl.dense(rows, cols, n, m, kind, symmetric, ADDITIVE_ROW_BLOCK, block,
                    items[start:stop], out, buffers, n_threads)

    run_chunked(run, cost, n_threads=n_threads)


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


def _sparse(X, Y, kind, symmetric, out, n_threads):
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
    scratch = np.zeros((n_threads, X.shape[1]))

    def run(start, stop):
        _impl.sparse(x_dense, x_data, x_indices, x_indptr, Y.data, y_indices,
                     y_indptr, kind, symmetric, start, stop, out, scratch,
                     n_threads)

    run_chunked(run, cost, n_threads=n_threads)
