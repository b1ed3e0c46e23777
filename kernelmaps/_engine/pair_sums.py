"""Sums of a point kernel over all pairs of points of two sets.

The driver of the engine in ``_pair_sums.pyx``: it rescales the points,
plans segments and groups, packs the points for the tile kernels, runs the
group pairs (in chunks when a progress bar is shown) and folds segment sums
back into set sums. Inputs are validated `Bags` (anything with ``points``,
``offsets`` and ``dim``).
"""

import numpy as np
import scipy.sparse

from . import _pair_sums as _impl
from .layout import (
    PAIR_GEMM_BLOCK,
    PAIR_GEMM_DIM,
    PAIR_MAX_SEGMENTS,
    TILE_ROWS,
    bandwidth_scale,
    pack_cols,
    pack_rows,
    panel_points,
    round_up,
    row_blocks,
    scaled,
)
from .schedule import TASK_WORK, run_chunked, threads_for

__all__ = ["pair_means", "pair_sums", "self_sums", "set_sums"]


def pair_sums(X, Y=None, *, kernel, gamma=1.0, coef0=1.0, degree=2, n_threads=1,
              progress=False, desc="kernel sums", normalize=False):
    """``S[i, j]`` = sum of ``k(x, y)`` over ``x`` in ``X[i]``, ``y`` in
    ``Y[j]``, float64 of shape ``(len(X), len(Y))``; ``Y=None`` computes each
    unordered pair of sets once and returns the symmetric matrix.

    `kernel` is "rbf" (``exp(-gamma |x-y|^2)``), "laplacian"
    (``exp(-gamma |x-y|_1)``), "polynomial" (``(gamma <x,y> + coef0)^degree``)
    or "sqeuclidean" (``|x-y|^2``). The sums are computed in chunks of about
    50 ms (Ctrl-C stops between two), on at most `n_threads` threads.
    With `normalize`, ``S[i, j]`` is divided by ``len(X[i]) * len(Y[j])``
    (the mean of the kernel values).
    """
    symmetric = Y is None
    xp, yp = X.points, None if symmetric else Y.points
    e, gamma, dtype = _standardize(xp, yp, kernel, gamma)
    if kernel == "rbf" and dtype == np.float64 and X.dim >= PAIR_GEMM_DIM:
        S = _rbf_by_products(X, Y, e, gamma, n_threads, progress, desc)
        if S is not None:
            return pair_means(S, X, Y) if normalize else S
    max_points = panel_points(X.dim, dtype)
    if _one_group(X, max_points) and (symmetric or _one_group(Y, max_points)):
        # A small call (a few milliseconds at most): one task, no planning.
        Y = X if symmetric else Y
        return _impl.one_group(xp.astype(dtype, copy=False), X.offsets,
                               Y.points.astype(dtype, copy=False), Y.offsets,
                               e, symmetric, kernel, gamma, coef0, degree,
                               normalize)
    xplan = _impl.plan_segments(X.offsets, max_points, PAIR_MAX_SEGMENTS, True)
    if symmetric:
        yp, yplan = xp, xplan
    else:
        yplan = _impl.plan_segments(Y.offsets, max_points, PAIR_MAX_SEGMENTS, True)
    # Threads share out the row groups: put the longer side on the rows.
    transposed = not symmetric and len(yplan[2]) > len(xplan[2])
    if transposed:
        xp, yp, xplan, yplan = yp, xp, yplan, xplan

    n_row_seg, n_col_seg = len(xplan[1]), len(yplan[1])
    n_row_groups, n_col_groups = len(xplan[2]) - 1, len(yplan[2]) - 1
    jlo = (np.arange(n_row_groups, dtype=np.int64) if symmetric
           else np.zeros(n_row_groups, dtype=np.int64))
    jhi = np.full(n_row_groups, n_col_groups, dtype=np.int64)
    out = np.empty(n_row_seg * n_col_seg)
    _run(xp, xplan, yp, yplan, jlo, jhi, e, dtype,
         rowbase=np.arange(n_row_seg, dtype=np.int64) * n_col_seg,
         colidx=np.arange(n_col_seg, dtype=np.int64),
         out=out, mirror=symmetric, kernel=kernel, gamma=gamma, coef0=coef0,
         degree=degree, n_threads=n_threads, progress=progress, desc=desc)

    S = out.reshape(n_row_seg, n_col_seg)
    S = _fold_segments(S, xplan[1], axis=0)
    S = _fold_segments(S, yplan[1], axis=1)
    S = S.T.copy() if transposed else S
    return pair_means(S, X, Y) if normalize else S


def pair_means(S, X, Y):
    """Sums over the pairs of sets of X and Y (None: X) divided, in place,
    by their numbers of pairs of points (as `one_group` divides: by the
    product of the two sizes, in float64)."""
    S /= np.multiply.outer(X.sizes.astype(np.float64), (X if Y is None else Y).sizes)
    return S


# The largest error allowed in gamma |x - y|^2 from the expansion: the
# relative error of every kernel value is about this much.
_EXPANSION_ERROR = 5e-13


def _rbf_by_products(X, Y, e, gamma, n_threads, progress, desc):
    """`pair_sums` of the rbf kernel in float64, the dot products of the
    points by BLAS (many features: faster than the difference tiles), or
    None where that is not exact enough.

    With the points centred (c the mean of all of them) and M = gamma times
    their largest squared norm, the error of gamma (|x|^2 + |y|^2 - 2 <x,
    y>) computed in float64 is below 4 (d + 4) u M (u = 2**-53: the dot
    products and norms err by at most d u |x| |y| <= d u M / gamma each,
    the centring and the sum by a few u M more). Where that bound exceeds
    _EXPANSION_ERROR (points farther than a few bandwidths from their
    centre) None is returned and the exact difference tiles run.
    """
    symmetric = Y is None
    xp = scaled(X.points, e, np.float64)
    yp = xp if symmetric else scaled(Y.points, e, np.float64)
    centre = xp.mean(axis=0) if symmetric else (
        (xp.sum(axis=0) + yp.sum(axis=0)) / (len(xp) + len(yp)))
    for points in (xp,) if symmetric else (xp, yp):
        for a, b in row_blocks(points):
            points[a:b] -= centre
    nx = np.einsum("ij,ij->i", xp, xp)
    ny = nx if symmetric else np.einsum("ij,ij->i", yp, yp)
    bound = 4 * (X.dim + 4) * 2.0**-53 * gamma * max(nx.max(), ny.max())
    if not bound <= _EXPANSION_ERROR:
        return None

    xplan = _impl.plan_segments(X.offsets, PAIR_GEMM_BLOCK, len(xp) + 1, True)
    yplan = xplan if symmetric else _impl.plan_segments(
        Y.offsets, PAIR_GEMM_BLOCK, len(yp) + 1, True)
    xseg, xgroups = xplan[0], xplan[2]
    yseg, ygroups = yplan[0], yplan[2]
    pairs = [(g, h) for g in range(len(xgroups) - 1)
             for h in range(g if symmetric else 0, len(ygroups) - 1)]
    out = np.zeros((len(xplan[1]), len(yplan[1])))
    buffer = np.empty(PAIR_GEMM_BLOCK * PAIR_GEMM_BLOCK)
    rowsums = np.empty((PAIR_GEMM_BLOCK, PAIR_GEMM_BLOCK))
    sizes = [(xseg[xgroups[g + 1]] - xseg[xgroups[g]])
             * (yseg[ygroups[h + 1]] - yseg[ygroups[h]]) for g, h in pairs]
    cost = np.array(sizes, dtype=np.float64) * (X.dim + _KERNEL_COST)
    n_threads = threads_for(n_threads, cost.sum(), len(xp))

    def run(start, stop):
        for g, h in pairs[start:stop]:
            s0, s1, t0, t1 = xgroups[g], xgroups[g + 1], ygroups[h], ygroups[h + 1]
            r0, r1, c0, c1 = xseg[s0], xseg[s1], yseg[t0], yseg[t1]
            block = buffer[:(r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
            np.matmul(xp[r0:r1], yp[c0:c1].T, out=block)
            _impl.rbf_from_products(block, nx[r0:r1], ny[c0:c1],
                                    xseg[s0:s1 + 1] - r0, yseg[t0:t1 + 1] - c0,
                                    gamma, symmetric, symmetric and g == h,
                                    rowsums, out, s0, t0, n_threads)

    run_chunked(run, cost, n_threads=n_threads, progress=progress, desc=desc)
    S = _fold_segments(out, xplan[1], axis=0)
    return _fold_segments(S, yplan[1], axis=1)


def _one_group(bags, max_points):
    """Whether `plan_segments` makes one group of the sets of `bags`."""
    return bags.n_points <= max_points and len(bags) <= PAIR_MAX_SEGMENTS


def self_sums(X, *, kernel, gamma=1.0, coef0=1.0, degree=2, n_threads=1):
    """``s[i]`` = sum of ``k(x, x')`` over all ``x, x'`` in ``X[i]`` (the
    diagonal of ``pair_sums(X)`` at a fraction of its cost)."""
    xp = X.points
    e, gamma, dtype = _standardize(xp, None, kernel, gamma)
    max_points = panel_points(X.dim, dtype)
    plan = _impl.plan_segments(X.offsets, max_points, PAIR_MAX_SEGMENTS, False)
    seg_set = plan[1]
    # Every segment is a group here; a set cut into p pieces needs the p x p
    # pieces' pair sums, stored in a block of its own.
    first = np.searchsorted(seg_set, np.arange(len(X))).astype(np.int64)
    pieces = np.diff(np.append(first, len(seg_set)))
    base = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(pieces**2, out=base[1:])
    local = np.arange(len(seg_set), dtype=np.int64) - first[seg_set]
    out = np.empty(base[-1])
    _run(xp, plan, xp, plan,
         e=e, dtype=dtype, jlo=np.arange(len(seg_set), dtype=np.int64),
         jhi=(first + pieces)[seg_set],
         rowbase=base[seg_set] + local * pieces[seg_set], colidx=local,
         out=out, mirror=True, kernel=kernel, gamma=gamma, coef0=coef0,
         degree=degree, n_threads=n_threads, progress=False, desc="")
    return np.add.reduceat(out, base[:-1])


def set_sums(X):
    """Sum of the points of each set, float64 of shape ``(len(X), d)``."""
    n_points = X.n_points
    indicator = scipy.sparse.csr_array(
        (np.ones(n_points), np.arange(n_points), X.offsets),
        shape=(len(X), n_points),
    )
    return np.asarray(indicator @ X.points.astype(np.float64, copy=False))


def _standardize(x, y, kernel, gamma):
    """The exponent of the power of two the points are packed times, the
    matching gamma and the dtype to compute in: rbf and laplacian points in
    units of their bandwidth (`bandwidth_scale`), others as they are."""
    if kernel not in ("rbf", "laplacian"):
        return 0, gamma, x.dtype
    return bandwidth_scale(x, y, kernel, gamma)


# Element operations of a kernel value beyond the features (exp, powers).
_KERNEL_COST = 8


def _run(xp, xplan, yp, yplan, jlo, jhi, e, dtype, *, rowbase, colidx, out,
         mirror, kernel, gamma, coef0, degree, n_threads, progress, desc):
    """Run row group g against the column groups jlo[g] <= h < jhi[g], for
    every g, as items of at most TASK_WORK each, in chunks."""
    xseg, _, xgroups = xplan
    yseg, _, ygroups = yplan
    xbounds, ybounds = xseg[xgroups], yseg[ygroups]
    row_points, col_points = xbounds[1:] - xbounds[:-1], ybounds[1:] - ybounds[:-1]
    items, cost, pairs = _plan_items(row_points, col_points, jlo, jhi,
                                     xp.shape[1] + _KERNEL_COST)
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    rows, cols = pack_rows(xp, e, dtype), pack_cols(yp, e, dtype)
    phases = np.zeros(cols.shape[1], dtype=dtype)
    ldo = round_up(col_points.max(), dtype)
    max_acc = (int((xgroups[1:] - xgroups[:-1]).max())
               * int((ygroups[1:] - ygroups[:-1]).max()))
    tile_buffers = np.empty((n_threads, TILE_ROWS * ldo), dtype=dtype)
    acc_buffers = np.empty((n_threads, max_acc))

    def run(start, stop):
        _impl.pair_sums(rows, xseg, xgroups, cols, phases, yseg, ygroups,
                        items[start:stop], rowbase, colidx, out, mirror,
                        tile_buffers, acc_buffers, kernel, float(gamma),
                        float(coef0), int(degree), n_threads)

    run_chunked(run, cost, n_threads=n_threads, progress=progress, desc=desc,
                unit_cost=pairs)


def _plan_items(row_points, col_points, jlo, jhi, unit):
    """Items (g, h0, h1): row group g against the column groups h0 <= h < h1,
    consecutive column groups of the range jlo[g] <= h < jhi[g] gathered up
    to TASK_WORK (row points x column points x `unit`). Returns the items,
    their work and their numbers of group pairs."""
    counts = jhi - jlo
    if counts.sum() == 0:
        return np.empty((0, 3), dtype=np.int64), np.empty(0), np.empty(0)
    if len(counts) == 1:  # one row group (small calls): one item if it fits
        work = float(row_points[0]) * float(col_points[jlo[0]:jhi[0]].sum()) * unit
        if work <= TASK_WORK:
            return (np.array([[0, jlo[0], jhi[0]]], dtype=np.int64),
                    np.array([work]), np.array([counts[0]]))
    g = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    h = np.arange(len(g), dtype=np.int64) - np.repeat(first - jlo, counts)
    work = row_points[g].astype(np.float64) * col_points[h] * unit
    cum = np.cumsum(work)
    before = np.repeat(cum[first[counts > 0]] - work[first[counts > 0]],
                       counts[counts > 0])
    bucket = ((cum - before - work) // TASK_WORK).astype(np.int64)
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (bucket[1:] != bucket[:-1])
    starts = np.flatnonzero(new)
    stops = np.append(starts[1:], len(g))
    items = np.stack([g[starts], h[starts], h[stops - 1] + 1], axis=1)
    return (np.ascontiguousarray(items), np.add.reduceat(work, starts),
            stops - starts)


def _fold_segments(S, seg_set, axis):
    """Sum the rows (axis 0) or columns (axis 1) of the pieces of each set."""
    if len(seg_set) == 0 or seg_set[-1] == len(seg_set) - 1:
        return S  # one segment per set
    starts = np.flatnonzero(np.diff(seg_set, prepend=-1))
    return np.add.reduceat(S, starts, axis=axis)
