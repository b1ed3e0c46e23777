"""Additive nearest-neighbour feature maps: the driver of ``_anchors.pyx``.

The anchors of each dimension (uniform, or the optimal 1-D k-means of its
values), the anchors and weights of every value, and the features: the
weighted rows of the anchor feature table. Inputs are validated histograms
(dense C-contiguous or canonical CSR) and the arrays of a fitted AnchorMap.
"""

import numpy as np
import scipy.sparse

from . import _anchors as _impl
from .schedule import run_chunked, threads_for

__all__ = ["decode", "features", "kmeans_anchors", "neighbours"]


def kmeans_anchors(values, n_anchors, top):
    """0 and the n_anchors - 1 optimal 1-D k-means centres of `values`;
    with fewer distinct values, those, then a uniform fill up to `top`."""
    distinct, counts = np.unique(np.asarray(values, dtype=np.float64),
                                 return_counts=True)
    k = n_anchors - 1
    if len(distinct) >= k:
        centres = _impl.kmeans_1d(distinct, counts.astype(np.float64), k)
    else:
        fill = np.linspace(0.0, top, n_anchors + 1)[1:]
        fill = fill[~np.isin(fill, distinct)][: k - len(distinct)]
        centres = np.sort(np.concatenate([distinct, fill]))
    return np.concatenate([[0.0], centres])


def features(X, anchors, inv_step, n_neighbors, distance, table, table_offsets,
             rank, feature_offsets, n_threads):
    """The features of the rows of `X` (n, d): dense rows, or CSR rows that
    hold the features of the non-zero values only (when those of 0 are
    zero), in the dtype of `X`.

    anchors: (d, n_anchors); inv_step: 1 / the grid step of uniform anchors
    (0: searched); distance: weight the neighbours by inverse distance;
    table, table_offsets, rank, feature_offsets: as in AnchorMap.
    """
    n, d = X.shape
    width = int(feature_offsets[-1])
    if scipy.sparse.issparse(X):
        # Output rows: the features of the non-zero values, in order.
        widths = np.empty(n, dtype=np.int64)
        _impl.row_widths(X.data, X.indices, X.indptr, rank, widths,
                         threads_for(n_threads, float(X.nnz), n))
        out_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(widths, out=out_indptr[1:])
        total = int(out_indptr[-1])
        big = max(X.nnz, total, width) > 2**31 - 1
        index = np.int64 if big else X.indices.dtype
        out = np.empty(total, dtype=X.dtype)
        out_cols = np.empty(total, dtype=index)
        values, cols = X.data, X.indices.astype(index, copy=False)
        indptr = X.indptr.astype(index, copy=False)
    else:
        out = np.empty(n * width, dtype=X.dtype)
        values, cols = X.reshape(-1), np.empty(0, dtype=np.intc)
        indptr = out_cols = cols
        out_indptr = np.empty(0, dtype=np.int64)
    # Per row: a binary search and the lookup of every value.
    per_value = 16.0 + n_neighbors * float(rank.max(initial=1))
    cost = (np.diff(X.indptr) if scipy.sparse.issparse(X)
            else np.full(n, d)) * per_value
    n_threads = threads_for(n_threads, cost.sum(), n)

    plan = (values, cols, indptr, d, anchors.reshape(-1), anchors.shape[1],
            inv_step, n_neighbors, distance, table, table_offsets, rank,
            feature_offsets, out, out_cols, out_indptr,
            not scipy.sparse.issparse(X))
    run_chunked(_impl.transform, plan, cost, n_threads=n_threads)
    if not scipy.sparse.issparse(X):
        return out.reshape(n, width)
    return scipy.sparse.csr_matrix(
        (out, out_cols, out_indptr.astype(index)), shape=(n, width)
    )


def neighbours(X, anchors, inv_step, n_neighbors, distance, n_threads):
    """For every value of `X` (row by row; the stored values of CSR), the
    indices (int64) and weights (float32) of its `n_neighbors` anchors,
    each shape (n_values, n_neighbors)."""
    if scipy.sparse.issparse(X):
        values, cols = X.data, X.indices
    else:
        values, cols = X.reshape(-1), np.empty(0, dtype=np.intc)
    idx = np.empty((len(values), n_neighbors), dtype=np.int64)
    w = np.empty((len(values), n_neighbors), dtype=np.float32)
    cost = 16.0 * n_neighbors  # per value
    n_threads = threads_for(n_threads, cost * len(values), len(values))

    plan = (values, cols, X.shape[1], anchors.reshape(-1), anchors.shape[1],
            inv_step, n_neighbors, distance, 0, idx, w)
    run_chunked(_impl.neighbours, plan, cost, n_tasks=len(values),
                n_threads=n_threads)
    return idx, w


def decode(indices, weights, table, table_offsets, rank, feature_offsets,
           n_threads):
    """Dense float64 features (n, width) from anchor `indices` and their
    `weights`, both (n, d, n_neighbors), indices in range."""
    n, d, k = indices.shape
    width = int(feature_offsets[-1])
    idx = indices.reshape(n * d, k).astype(np.int64)
    out = np.empty(n * width)
    rows = np.repeat(np.arange(n, dtype=np.int64), d)
    out_pos = rows * width + np.tile(feature_offsets[:-1], n)
    weights = np.ascontiguousarray(weights.reshape(n * d, k), dtype=np.float32)
    cost = float(k) * float(rank.max(initial=1))  # per value
    n_threads = threads_for(n_threads, cost * n * d, n * d)

    plan = (idx, weights, np.empty(0, dtype=np.intc), d, table, table_offsets,
            rank, out_pos, out)
    run_chunked(_impl.lookup, plan, cost, n_tasks=n * d, n_threads=n_threads)
    return out.reshape(n, width)
