"""Additive kernels between histograms, for every pair of rows: the driver
of ``_additive.pyx``. Dense rows go through the SIMD tiles, CSR rows through
their common non-zeros. Inputs are validated (`check_histograms`): finite,
non-negative, float32 or float64, dense C-contiguous or canonical CSR.
"""

import numpy as np
import scipy.sparse

from . import _additive as _impl
from .layout import ADDITIVE_ROW_BLOCK, TILE_ROWS, additive_panel, pack_cols, pack_rows

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


def _dense(X, Y, kind, symmetric, out, n_threads):
    n, d = X.shape
    m = Y.shape[0]
    block = additive_panel(d, X.dtype)
    buffers = np.empty((n_threads, TILE_ROWS * block))
    _impl.dense(pack_rows(X), pack_cols(Y), n, m, kind, symmetric,
                ADDITIVE_ROW_BLOCK, block, out, buffers, n_threads)


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
    scratch = np.zeros((n_threads, X.shape[1]))
    _impl.sparse(x_dense, x_data, x_indices, x_indptr, Y.data, y_indices, y_indptr,
                 kind, symmetric, out, scratch, n_threads)
