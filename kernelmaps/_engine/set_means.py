"""Per-set means of point features: the engine behind the set feature maps.

``set_means(X, centres, phases, kind=..., gamma=...)`` returns, for every
set ``X[i]``, the mean over its points ``x`` of ``f(x, c_j)`` for each
column ``c_j`` of `centres` (shape ``(d, t)``) (of weighted sets: the
weighted mean, each point's weight divided by its set's total):

- ``"cos"``: ``cos(x . c_j + phases[j])`` (random Fourier features),
- ``"rbf"``: ``exp(-gamma |x - c_j|^2)``,
- ``"laplacian"``: ``exp(-gamma |x - c_j|_1)``.

The (points x t) matrix of point features is never formed.
"""

import numpy as np

from . import _set_means as _impl
from .layout import (
    TILE_ROWS,
    bandwidth_scale,
    means_panel,
    pack_cols,
    pack_rows,
)
from .schedule import TASK_WORK, run_chunked, threads_for

__all__ = ["csr_cos", "normalised_weights", "set_means",
           "weights_over_largest"]


def set_means(X, centres, phases=None, *, kind, gamma=1.0, scale=1.0,
              n_threads=1):
    """`scale` times the mean of the point features of each set of the
    `Bags` `X`: the weighted mean for weighted sets.

    Parameters
    ----------
    X : Bags
        Validated sets, float32 or float64, every set non-empty (weighted:
        of positive total weight).
    centres : ndarray, shape (d, t)
        Frequencies ("cos") or centres ("rbf", "laplacian") as columns.
    phases : ndarray, shape (t,), optional
        The phases of "cos".
    kind : {"cos", "rbf", "laplacian"}
    gamma : float
        Scale of "rbf" and "laplacian".
    scale : float
        Factor applied to the means.
    n_threads : int

    Returns
    -------
    ndarray, shape (len(X), t), dtype of `X`; the features are summed over
    strips of 4 points in that dtype, then in float64. Computed in chunks
    (Ctrl-C stops between two) on at most `n_threads` threads.
    """
    points = X.points
    dtype = points.dtype
    centres = np.asarray(centres, dtype=dtype)
    t = centres.shape[1]
    # The weights of singleton sets, normalised, are all 1: none.
    weights = X.weights if len(X) < X.n_points else None
    if kind == "cos" and len(X) == X.n_points and points.shape[1] >= MEANS_GEMM_DIM:
        # Rows, many features: BLAS computes x W faster than the tiles; the
        # phases, cosine and scale follow in place.
        return _gemm_cos(points, centres, phases, scale, n_threads)
    e, work_dtype = 0, dtype
    if kind != "cos":
        e, gamma, work_dtype = bandwidth_scale(points, centres.T, kind, gamma,
                                               "sets")
    offsets, factors, owners = _pieces(X.offsets, scale, points.shape[1], dtype)
    row_weights = np.zeros(0, dtype=work_dtype)
    if weights is not None:
        # Each point's share of its set's weight, in [0, 1] (no overflow in
        # float32): the tiles sum the weighted means; the factors are the
        # scale alone.
        row_weights = np.zeros(points.shape[0] + TILE_ROWS, dtype=work_dtype)
        row_weights[:points.shape[0]] = normalised_weights(weights, X.offsets)
        factors = np.full(len(offsets) - 1, float(scale) if owners is None
                          else 1.0)
    rows = pack_rows(points, e, work_dtype)
    cols = pack_cols(centres.T, e, work_dtype)
    phases_padded = np.zeros(cols.shape[1], dtype=work_dtype)
    if kind == "cos":
        phases_padded[:t] = phases
    groups = _impl.plan_groups(offsets, MEANS_GROUP_POINTS, MEANS_GROUP_SETS)
    panel = means_panel(work_dtype)
    n_panels = -(-t // panel)
    widths = np.minimum(panel, t - panel * np.arange(n_panels))
    cost = np.outer(np.diff(offsets[groups]), widths).ravel() * (
        points.shape[1] + _KERNEL_COST)
    n_threads = threads_for(n_threads, cost.sum(), len(cost))
    out = np.empty((len(offsets) - 1, t), dtype=work_dtype)
    tile_buffers = np.empty((n_threads, TILE_ROWS * panel), dtype=work_dtype)
    acc_buffers = np.empty((n_threads, int(np.diff(groups).max()) * panel))
    plan = (rows, row_weights, offsets, factors, groups, cols, phases_padded,
            out, panel, tile_buffers, acc_buffers, kind, float(gamma))
    run_chunked(_impl.set_means, plan, cost, n_threads=n_threads)
    if owners is not None:  # pieces of large sets: their sums, added in order
        sums = np.add.reduceat(out.astype(np.float64), np.flatnonzero(
            np.diff(owners, prepend=-1)), axis=0)
        if weights is not None:  # sums of weighted means
            out = (sums * scale).astype(dtype)
        else:
            out = (sums * (scale / np.diff(X.offsets))[:, None]).astype(dtype)
    return out.astype(dtype, copy=False)


def weights_over_largest(weights, offsets):
    """Each weight divided by the largest of its set (sets delimited by
    `offsets`), float64: their sums never overflow, and a set's depend on
    it alone."""
    starts = offsets[:-1]
    if len(weights) == 0:
        return np.zeros(0)
    largest = np.maximum.reduceat(weights, starts)
    with np.errstate(invalid="ignore", divide="ignore"):  # (all 0: NaN)
        return weights / np.repeat(largest, np.diff(offsets))


def normalised_weights(weights, offsets):
    """Each weight divided by the total of its set (sets delimited by
    `offsets`, each of positive total), float64: computed from
    `weights_over_largest`, so that no total overflows."""
    shares = weights_over_largest(weights, offsets)
    if len(shares) == 0:
        return shares
    return shares / np.repeat(np.add.reduceat(shares, offsets[:-1]),
                              np.diff(offsets))


# Element operations of a feature value beyond the coordinates (exp, cos).
_KERNEL_COST = 8
# A task's group of whole sets holds up to this many points (more for a
# larger set) and sets, against a panel of columns (`means_panel`).
MEANS_GROUP_POINTS = 256
MEANS_GROUP_SETS = 64
# Singleton sets (rows) with at least this many features: BLAS computes
# their products with the columns faster than the tiles (`_gemm_cos`).
MEANS_GEMM_DIM = 256


def _pieces(offsets, scale, d, dtype):
    """The sets cut into the pieces the tasks take: sets larger than a
    task's work (TASK_WORK against one panel) are cut into near-equal
    pieces. Returns the offsets of the pieces, the factor of each (scale /
    n for a whole set, 1 for a piece: its sum) and, when a set was cut, the
    set of each piece (else None)."""
    sizes = np.diff(offsets)
    limit = max(MEANS_GROUP_POINTS,
                int(TASK_WORK // (means_panel(dtype) * (d + _KERNEL_COST))))
    if sizes.max(initial=0) <= limit:
        return offsets, scale / sizes.astype(np.float64), None
    pieces = np.maximum(1, -(-sizes // limit))
    owners = np.repeat(np.arange(len(sizes), dtype=np.int64), pieces)
    k = np.arange(len(owners)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    starts = offsets[owners] + sizes[owners] * k // pieces[owners]
    new_offsets = np.append(starts, offsets[-1]).astype(np.int64)
    return new_offsets, np.ones(len(owners)), owners


def _gemm_cos(points, centres, phases, scale, n_threads):
    """scale * cos(points @ centres + phases) by BLAS, in fixed blocks of
    `_GEMM_ROWS` rows (the tasks: a BLAS product's values may depend on
    the rows it multiplies at once, so the calls must not follow the
    chunks)."""
    n, d = points.shape
    t = centres.shape[1]
    out = np.empty((n, t), dtype=points.dtype)
    phases = np.asarray(phases, dtype=points.dtype)
    n_threads = threads_for(n_threads, float(n) * t * d, n)
    run_chunked(_cos_of_products, (points, centres, phases, float(scale), out),
                float(t) * (d + _KERNEL_COST) * _GEMM_ROWS,
                n_tasks=-(-n // _GEMM_ROWS), n_threads=n_threads)
    return out


# Rows of one BLAS product of `_gemm_cos`.
_GEMM_ROWS = 256


def _cos_of_products(points, centres, phases, scale, out, start, stop, n_threads):
    """The blocks start to stop of `_gemm_cos`."""
    first, last = start * _GEMM_ROWS, min(stop * _GEMM_ROWS, len(points))
    for row in range(first, last, _GEMM_ROWS):
        end = min(row + _GEMM_ROWS, last)
        np.matmul(points[row:end], centres, out=out[row:end])
    _impl.cos_rows(out, phases, scale, first, last, n_threads)


# csr_cos: rows per task, and the bytes of W's column block that a task
# keeps in cache (L2) across its rows.
CSR_MEANS_TASK_ROWS = 64
CSR_MEANS_BLOCK_BYTES = 1 << 20


def csr_cos(X, W, phases, *, scale=1.0, n_threads=1):
    """``scale * cos(X @ W + phases)`` for a CSR matrix `X` (n, p) and a
    dense `W` (p, t) of its dtype (float32 or float64): the products summed
    in float64, fused with the cosine; shape (n, t). In chunks of rows
    (Ctrl-C stops between two)."""
    n, (p, t) = X.shape[0], W.shape
    dtype = X.dtype
    W = np.ascontiguousarray(W, dtype=dtype)
    phases = np.ascontiguousarray(phases, dtype=dtype)
    out = np.empty((n, t), dtype=dtype)
    # Columns per block: W's block (p x block) in about CSR_MEANS_BLOCK_BYTES.
    block = max(64, min(t, CSR_MEANS_BLOCK_BYTES // max(1, p * dtype.itemsize))
                // 64 * 64)
    row_work = (X.nnz / max(n, 1) + _KERNEL_COST) * float(t)
    n_threads = threads_for(n_threads, row_work * n, -(-n // CSR_MEANS_TASK_ROWS))
    acc = np.empty((n_threads, block))
    data = np.ascontiguousarray(X.data)
    indices = X.indices.astype(np.int64)
    indptr = X.indptr.astype(np.int64)
    plan = (data, indices, indptr, W, phases, float(scale), out, acc,
            CSR_MEANS_TASK_ROWS)
    run_chunked(_impl.csr_cos, plan, row_work, n_tasks=n, n_threads=n_threads)
    return out
