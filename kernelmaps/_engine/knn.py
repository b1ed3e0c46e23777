"""k-th nearest-neighbour distances between sets, the search behind the kNN
Renyi divergences: the driver of ``_knn.pyx`` (blocks of distances in tiles,
the k smallest kept along rows and columns in one pass) and SciPy's
`cKDTree` (one tree per set), whichever `choose_method` finds faster.

`NeighbourSearch` holds the points ready for either method (centred and
scaled by a power of two, packed once for both passes); its two passes give
``log rho_k`` of every point within its set and the log-sum-exp terms of the
estimator between every pair of sets.
"""

import itertools
import math

import numpy as np
from scipy.spatial import cKDTree

from . import _knn as _impl
from .layout import (
    KNN_PAIRS_PER_CALL,
    TILE_ROWS,
    distance_scale,
    max_abs,
    pack_cols,
    pack_rows,
    panel_points,
    round_up,
    row_blocks,
    scaled,
)
from .progress import progress_bar
from .schedule import TASK_WORK, run_chunked, threads_for

__all__ = ["MAX_K", "NeighbourSearch", "choose_method"]

# The largest k: the compiled search takes it as a C int.
MAX_K = 2**31 - 1

# float32 distances |x|^2 + |y|^2 - 2 <x, y> are too coarse for the close
# neighbours of low dimensions: below this dimension, compute in float64.
_FLOAT32_MIN_DIM = 5
# Column sets at least this large (on average), by dimension, are faster
# with kd-trees than with distance blocks: see choose_method.
_KDTREE_MIN_SET = {1: 800, 2: 900, 3: 1100, 4: 2000}
# Points per kd-tree query (a few milliseconds; Ctrl-C stops between two).
_QUERY_BLOCK = 8192
# Element operations of a distance beyond the features (the selection).
_SELECT_COST = 8
# A pair of sets is one item serving both directions only up to this work.
_BOTH_WORK = 5 * TASK_WORK
# Such items of sets of at most this many points in at most this many
# dimensions compute their block twice, once transposed, so that both
# directions keep one list per point: for small sets the merge of a row's
# lane lists costs about as much as their selection, and at low dimension
# the block costs less than either (1797 sets of 16-34 points in 2-D: 1.46x
# faster).
_FLIP_MAX_POINTS = 64
_FLIP_MAX_DIM = 8


def choose_method(X, Y):
    """"kdtree" or "blocks": whichever measured faster for this shape.

    A kd-tree query costs about ``log(m)`` at small d, a row of a distance
    block about ``m``: with 2 threads on the reference machine (AMD EPYC,
    AVX2), the trees win when the column sets hold on average more than
    `_KDTREE_MIN_SET` points (for 200 sets of 100 points in 3-D the blocks
    take 0.6 s and the trees 2.8 s; for 6 sets of 4000, 0.6 s and 0.2 s).
    """
    min_set = _KDTREE_MIN_SET.get(X.dim)
    sizes = X.sizes if Y is None else Y.sizes
    return "kdtree" if min_set and np.mean(sizes) >= min_set else "blocks"


class NeighbourSearch:
    """The sets `X` and `Y` (None: `X` against itself) ready for a search
    of k-th neighbours by `method` ("blocks" or "kdtree") on `n_threads`
    threads.

    The points are scaled by ``2**-exponent`` (`distance_scale`), which
    changes no ratio of distances; float32 points of fewer than
    `_FLOAT32_MIN_DIM` dimensions are searched in float64. Distances are
    computed from differences of coordinates, exactly 0 between duplicates.

    The distances within a set of X (rho) only involve that set: a set much
    smaller in magnitude than the largest point of X and Y (e.g. subnormal
    points beside points of magnitude 1), whose squared distances would
    underflow at the common scale, is searched for rho at its own scale
    (`_own_scales`), and its log rho brought back to the common one.
    """

    def __init__(self, X, Y, k, method, n_threads):
        self.symmetric = Y is None
        self.k, self.method, self.n_threads = k, method, n_threads
        xp, yp = X.points, None if self.symmetric else Y.points
        dtype = xp.dtype
        if dtype == np.float32 and X.dim < _FLOAT32_MIN_DIM:
            dtype = np.dtype(np.float64)
        e = distance_scale(xp, yp)
        self.exponent = -e  # distances here are those of the input * 2**-exponent
        self.xoff = X.offsets
        self.yoff = X.offsets if self.symmetric else Y.offsets
        # Per point of X: how many more powers of two its set is scaled by
        # for rho (None: no set is).
        self.rho_shift = _own_scales(xp, yp, X.offsets, dtype)
        rho_points = None
        if self.rho_shift is not None:
            rho_points = np.ldexp(xp.astype(dtype), (e + self.rho_shift)[:, None])
        if method == "blocks":
            # Packed once: X's rows (and columns, for rho) serve both passes.
            self.x_rows = pack_rows(xp, e, dtype)
            self.x_cols = pack_cols(xp, e, dtype)
            self.y_cols = self.x_cols if self.symmetric else pack_cols(yp, e, dtype)
            self.dtype, self.dim = dtype, X.dim
            if rho_points is None:
                self.rho_rows, self.rho_cols = self.x_rows, self.x_cols
            else:
                self.rho_rows = pack_rows(rho_points, 0, dtype)
                self.rho_cols = pack_cols(rho_points, 0, dtype)
        else:
            self.xp = scaled(xp, e, np.float64)
            self.yp = self.xp if self.symmetric else scaled(yp, e, np.float64)
            self.rho_xp = (self.xp if rho_points is None
                           else rho_points.astype(np.float64, copy=False))

    def self_log_kth(self):
        """log rho_k of every point of X, the distance to its k-th nearest
        neighbour within its own set (itself excluded): -inf for 0."""
        if self.method == "kdtree":
            log_rho = _kdtree_log_kth(self.rho_xp, self.xoff, self.k,
                                      self.n_threads)
        else:
            log_rho = _blocks_log_kth(self.dtype, self.dim, self.xoff, self.k,
                                      self.n_threads, self.rho_rows, self.rho_cols)
        if self.rho_shift is not None:
            log_rho -= self.rho_shift * math.log(2.0)
        return log_rho

    def log_sums(self, log_rho, log_floor, coef, progress):
        """``L[a, i, j]``: the log of the sum over the points t of X_i of
        ``exp(coef[a] u(t))``, with ``u = log rho_k(t) - max(log nu_k(t),
        log_floor[i])`` and nu_k(t) the distance from t to its k-th nearest
        neighbour in Y_j; shape (len(coef), len(X), len(Y))."""
        if self.method == "kdtree":
            return _kdtree_log_sums(self.xp, self.xoff, self.yp, self.yoff, self.k,
                                    log_rho, log_floor, coef, self.n_threads,
                                    progress)
        return _blocks_log_sums(self.dtype, self.dim, self.xoff, self.yoff,
                                self.symmetric, self.k, log_rho, log_floor, coef,
                                self.n_threads, progress, self.x_rows, self.y_cols)


def _own_scales(xp, yp, offsets, dtype):
    """For the rho pass: per point of X, the extra power of two by which
    its set is scaled (None if no set needs one).

    A set whose largest magnitude is more than 2**(maxexp / 4) below the
    largest point of X and Y (2**256 in float64) is scaled to the common
    top magnitude on its own: exact, and its squared distances then stay
    normal numbers. Other sets keep the common scale (shift 0)."""
    sizes = np.diff(offsets)
    if len(sizes) == 0 or xp.shape[0] == 0:
        return None
    top = max(max_abs(xp), max_abs(yp))
    if top == 0:
        return None
    row_top = np.empty(xp.shape[0])
    for a, b in row_blocks(xp):
        row_top[a:b] = np.abs(xp[a:b]).max(axis=1, initial=0.0)
    set_top = np.maximum.reduceat(row_top, offsets[:-1][sizes > 0])
    shift = np.zeros(len(sizes), dtype=np.int64)
    shift[sizes > 0] = np.where(
        set_top > 0, math.frexp(top)[1] - np.frexp(set_top)[1], 0)
    shift[shift <= np.finfo(dtype).maxexp // 4] = 0
    if not shift.any():
        return None
    return np.repeat(shift, sizes)


# -- distance blocks (Cython) ------------------------------------------------


def _blocks_log_kth(dtype, dim, offsets, k, n_threads, rows, cols):
    """log rho_k of every point within its set (-inf for 0); rows and
    cols: the points (of `dim` features, in `dtype`) packed by `pack_rows`
    and `pack_cols`."""
    sizes = np.diff(offsets)
    owners = np.arange(len(sizes))
    unit = dim + _SELECT_COST
    cost = sizes * sizes
    n_threads = threads_for(n_threads, float(cost.sum()) * unit, len(sizes))
    items = _row_items(owners, owners, offsets, offsets, cost,
                       _share(cost.sum(), n_threads, unit))
    col_block, ldo = _col_block(dtype, dim, int(sizes.max()))
    kth = np.empty(int(offsets[-1]))
    zeros = np.zeros(cols.shape[1], dtype=dtype)
    tile_buffers = np.empty((n_threads, TILE_ROWS * ldo), dtype)
    row_buffers = np.empty((n_threads, k * _impl.LANES[dtype.name]
                            * _max_rows(items)), dtype)

    def run(start, stop):
        _impl.self_kth(rows, cols, zeros, items[start:stop], k, col_block, kth,
                       tile_buffers, row_buffers, n_threads)

    run_chunked(run, _item_work(items) * unit, n_threads=n_threads)
    with np.errstate(divide="ignore"):
        return 0.5 * np.log(kth)


def _blocks_log_sums(dtype, dim, xoff, yoff, symmetric, k, log_rho, log_floor,
                     coef, n_threads, progress, rows, cols):
    """L[a, i, j] = log of the sum over t in X_i of exp(coef[a] u(t)), with
    u = log rho_k(t) - log nu_k(t) (both floored), by distance blocks;
    rows: X packed by `pack_rows`, cols: Y packed by `pack_cols`.

    The pairs are run in calls of consecutive row sets, about
    KNN_PAIRS_PER_CALL pairs each, so that memory beyond the output stays
    bounded however many pairs there are; each call in chunks.
    """
    nx, ny = len(xoff) - 1, len(yoff) - 1
    sx, sy = np.diff(xoff), np.diff(yoff)
    unit = dim + _SELECT_COST
    L = np.full((len(coef), nx * ny), -np.inf)
    if symmetric:
        if nx == 1:  # only the diagonal, which is 0
            return L.reshape(len(coef), 1, 1)
        largest = np.sort(sx)[-2:]
        total = (float(sx.sum()) ** 2 - float(np.sum(sx.astype(float) ** 2))) / 2
        n_threads = threads_for(n_threads, total * unit, nx)
        # One item per unordered pair serves both directions, unless one
        # pair alone outweighs the threads' shares or an item's bound: then
        # ordered pairs with their rows split, for balance.
        pair = float(largest[0]) * float(largest[1])
        both = pair <= 2 * total / n_threads and pair * unit <= _BOTH_WORK
        per_row = nx - 1 - np.arange(nx) if both else np.full(nx, nx - 1)
    else:
        both = False
        total = float(sx.sum()) * float(sy.sum())
        n_threads = threads_for(n_threads, total * unit, nx * ny)
        per_row = np.full(nx, ny)
    share = _share(total, n_threads, unit)

    col_block, ldo = _col_block(dtype, dim, int(sy.max()))
    lanes = _impl.LANES[dtype.name]
    ldc = int(sy.max()) + lanes if both else 1
    max_rows = int(sx.max())
    zeros = np.zeros(cols.shape[1], dtype=dtype)
    small_sets = _FLIP_MAX_POINTS if both and dim <= _FLIP_MAX_DIM else 0
    buffers = dict(
        tile_buffers=np.empty((n_threads, TILE_ROWS * ldo), dtype),
        row_buffers=np.empty((n_threads, k * max(lanes * max_rows, ldc)), dtype),
        col_buffers=np.empty((n_threads, k * ldc), dtype),
        log_buffers=np.empty((n_threads, max(max_rows, ldc))),
    )
    n_pairs = int(per_row.sum())
    per_call = KNN_PAIRS_PER_CALL
    if progress:  # about 50 steps, each with work for every thread
        per_call = min(per_call, max(n_pairs // 50, 16 * n_threads))
    starts = _chunk_rows(per_row, per_call)
    with progress_bar(progress, n_pairs, "kNN distances") as bar:
        for i0, i1 in itertools.pairwise(starts):
            counts = per_row[i0:i1]
            i = np.repeat(np.arange(i0, i1), counts)
            j = np.arange(len(i)) - np.repeat(np.cumsum(counts) - counts, counts)
            if both:  # j > i
                j += i + 1
            elif symmetric:  # j != i
                j += j >= i
            items = _row_items(i, j, xoff, yoff, sx[i] * sy[j], share, both=both)
            # The row direction of item s writes slot s, the column
            # direction of a both-item slot len(items) + s; slots are then
            # folded into their entries (several when rows were split).
            entries = items[:, 0] * ny + items[:, 1]
            if both:
                entries = np.concatenate([entries, items[:, 1] * ny + items[:, 0]])
            work = _item_work(items)
            # Largest first: the dynamic schedule then balances the threads.
            items = np.ascontiguousarray(items[np.argsort(-work, kind="stable")])
            out = np.empty((len(coef), len(entries)))

            def run(start, stop, items=items, out=out):
                _impl.divergence_sums(rows, cols, zeros, items[start:stop], k,
                                      col_block, log_rho, log_rho, log_floor,
                                      log_floor, coef, out, small_sets=small_sets,
                                      n_threads=n_threads, **buffers)

            run_chunked(run, _item_work(items) * unit, n_threads=n_threads)
            order = np.argsort(entries, kind="stable")
            first = np.flatnonzero(np.diff(entries[order], prepend=-1))
            L[:, entries[order][first]] = np.logaddexp.reduceat(out[:, order], first,
                                                               axis=1)
            bar.update(int(per_row[i0:i1].sum()))
    return L.reshape(len(coef), nx, ny)


def _share(total, n_threads, unit):
    """Work (row points x column points) of an item at most: a quarter of a
    thread's share, and TASK_WORK."""
    return max(min(total / (4 * n_threads), TASK_WORK / unit), 1.0)


def _item_work(items):
    """Row points x column points of every item."""
    return ((items[:, 3] - items[:, 2]) * (items[:, 5] - items[:, 4])).astype(
        np.float64)


def _chunk_rows(per_row, per_call):
    """Boundaries of consecutive row ranges of about `per_call` pairs."""
    cum = np.cumsum(per_row)
    cuts = np.searchsorted(cum, np.arange(per_call, cum[-1], per_call), side="right")
    return np.unique(np.concatenate([[0], cuts, [len(per_row)]]))


def _row_items(i, j, xoff, yoff, cost, share, *, both=False):
    """The item table for the ordered pairs (i[s], j[s]): the rows of X_i
    against all of Y_j. Unless `both`, a pair's rows are cut into pieces of
    at most `share` work (row points times column points)."""
    n_rows = xoff[i + 1] - xoff[i]
    if both:
        pieces = np.ones(len(i), dtype=np.int64)
    else:
        pieces = np.clip(np.ceil(cost / share), 1, n_rows).astype(np.int64)
    pair = np.repeat(np.arange(len(i)), pieces)
    piece = np.arange(len(pair)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    ii, jj, n, p = i[pair], j[pair], n_rows[pair], pieces[pair]
    items = np.empty((len(pair), len(_impl.ITEM_FIELDS)), dtype=np.int64)
    items[:, 0], items[:, 1] = ii, jj
    items[:, 2] = xoff[ii] + n * piece // p
    items[:, 3] = xoff[ii] + n * (piece + 1) // p
    items[:, 4], items[:, 5] = yoff[jj], yoff[jj + 1]
    items[:, 6] = both
    items[:, 7] = np.arange(len(pair))
    items[:, 8] = len(pair) + np.arange(len(pair)) if both else -1
    return items


def _max_rows(items):
    return max(int((items[:, 3] - items[:, 2]).max(initial=1)), 1)


def _col_block(dtype, dim, max_cols):
    """Columns per panel, and the padded leading dimension of a tile."""
    block = min(panel_points(dim, dtype), max_cols)
    return block, round_up(block, dtype)


# -- kd-trees (SciPy) --------------------------------------------------------


def _kdtree_log_kth(xp, offsets, k, n_threads):
    """log rho_k of every point within its set, by one kd-tree per set."""
    out = np.empty(len(xp))
    for a, b in itertools.pairwise(offsets):
        pts = xp[a:b].astype(np.float64, copy=False)
        # The (k+1)-th neighbour counting the point itself is the k-th
        # without it, with or without duplicates.
        out[a:b] = _query(cKDTree(pts), pts, k + 1, n_threads)
    with np.errstate(divide="ignore"):
        return np.log(out)


def _query(tree, points, k, n_threads):
    """Distance of every point to its k-th neighbour in the tree, in blocks
    of _QUERY_BLOCK points (Ctrl-C stops between two)."""
    out = np.empty(len(points))
    for a in range(0, len(points), _QUERY_BLOCK):
        block = points[a:a + _QUERY_BLOCK]
        dist, _ = tree.query(block, k=[k], workers=threads_for(
            n_threads, float(len(block)) * 64 * points.shape[1], len(block)))
        out[a:a + len(block)] = dist[:, 0]
    return out


def _kdtree_log_sums(xp, xoff, yp, yoff, k, log_rho, log_floor, coef, n_threads,
                     progress):
    """As `_blocks_log_sums`, by one kd-tree per set of Y, queried with all
    the points of X at once."""
    nx, ny = len(xoff) - 1, len(yoff) - 1
    sizes = np.diff(xoff)
    floor = np.repeat(log_floor, sizes)
    queries = xp.astype(np.float64, copy=False)
    L = np.empty((len(coef), nx, ny))
    with progress_bar(progress, ny, "kd-tree queries") as bar:
        for j in range(ny):
            tree = cKDTree(yp[yoff[j]:yoff[j + 1]].astype(np.float64, copy=False))
            nu = _query(tree, queries, k, n_threads)
            with np.errstate(divide="ignore"):
                u = log_rho - np.maximum(np.log(nu), floor)
            v = coef[:, None] * u
            top = np.maximum.reduceat(v, xoff[:-1], axis=1)
            total = np.add.reduceat(np.exp(v - np.repeat(top, sizes, axis=1)),
                                    xoff[:-1], axis=1)
            L[:, :, j] = top + np.log(total)
            bar.update(1)
    return L
