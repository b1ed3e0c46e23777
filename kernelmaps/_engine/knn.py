"""k-th nearest-neighbour distances between sets, the search behind the kNN
Renyi divergences: the driver of ``_knn.pyx`` (blocks of distances, in
tiles or, for small sets in few dimensions, computed on the fly, the k
smallest kept along rows and columns in one pass) and SciPy's `cKDTree`
(one tree per set), whichever `choose_method` finds faster.

`NeighbourSearch` holds the points ready for either method (scaled by a
power of two, packed once for every pass); its passes give ``log rho_k``
of every point within its set and the log-sum-exp terms of the estimator
between every pair of sets, in one direction or in both from one block
per pair (`NeighbourSearch.log_sums_both`).
"""

import copy
import itertools
import math

import numpy as np
from scipy.spatial import cKDTree

from . import _knn as _impl
from .lapack import one_blas_thread
from .layout import (
    PRODUCT_CHUNK,
    TILE_ROWS,
    max_abs,
    pack_cols,
    pack_rows,
    panel_points,
    round_up,
    row_blocks,
    scaled,
    squares_exponent,
)
from .pair_sums import centred_points, expansion_bound
from .progress import progress_bar
from .schedule import TASK_WORK, run_chunked, thread_map, threads_for

__all__ = ["FLOAT32_MIN_DIM", "MAX_K", "NeighbourSearch", "choose_method"]

# The largest k: the compiled search takes it as a C int.
MAX_K = 2**31 - 1

# float32 distances |x|^2 + |y|^2 - 2 <x, y> are too coarse for the close
# neighbours of low dimensions: below this dimension, compute in float64.
FLOAT32_MIN_DIM = 5
# Column sets at least this large (on average), by dimension, are faster
# with kd-trees than with distance blocks: see choose_method.
_KDTREE_MIN_SET = {1: 800, 2: 900, 3: 1100, 4: 2000}
# Element operations of a distance beyond the features (the selection).
_SELECT_COST = 8
# Element operations of one kd-tree query per feature, as timed at k = 5
# (benchmarks/TUNING.md).
_QUERY_COST = 2000
# The products path (`_knn.pyx`) certifies a list where its bound on the
# error of the k-th squared distance is at most this many times the worst
# case of the tiles it replaces, d u (d squared differences summed).
_PRODUCT_TOLERANCE = 4.0
# A pair of sets is computed whole (one block, both directions where wanted)
# only up to this work; larger pairs split their rows (`_blocks_log_sums`).
_BOTH_WORK = 5 * TASK_WORK
# Pairs of sets in at most _FLIP_ANY_DIM dimensions, or of at most
# _FLIP_MAX_POINTS points on each side in at most _FLIP_MAX_DIM dimensions,
# compute their block of distances on the fly, twice (once transposed), so
# that both directions keep one list per point: the lane lists of the tiles
# cost a merge per row, and below these sizes more than computing the
# distances again.
_FLIP_ANY_DIM = 4
_FLIP_MAX_POINTS = 128
_FLIP_MAX_DIM = 12
# With at least this many features, squared distances come from BLAS
# products of the centred points where a bound certifies them
# (`NeighbourSearch._prepare_products`): from there they are faster than
# the tiles, or as fast.
KNN_GEMM_DIM = {np.dtype(np.float64): 128, np.dtype(np.float32): 512}
# Pairs of sets per engine call of `_blocks_log_sums`: the memory of a call
# (its items and outputs) stays bounded however many pairs there are.
KNN_PAIRS_PER_CALL = 1 << 15


def choose_method(X, Y):
    """"kdtree" or "blocks": whichever is faster for this shape.

    A kd-tree query costs about ``log(m)`` at small d, a row of a distance
    block about ``m``: the trees win when the column sets hold on average
    more than `_KDTREE_MIN_SET` points (benchmarks/TUNING.md).
    """
    min_set = _KDTREE_MIN_SET.get(X.dim)
    sizes = X.sizes if Y is None else Y.sizes
    return "kdtree" if min_set and np.mean(sizes) >= min_set else "blocks"


class NeighbourSearch:
    """The sets `X` and `Y` (None: `X` against itself) ready for a search
    of k-th neighbours by `method` ("blocks" or "kdtree") on `n_threads`
    threads.

    The points are scaled by ``2**-exponent`` (`squares_exponent`:
    their largest magnitude to about 2**505 in float64, 2**60 in float32,
    less for many features, the most with which squared distances summed
    over the features cannot overflow), which changes no ratio of
    distances; float32 points of fewer than
    `FLOAT32_MIN_DIM` dimensions are searched in float64. Distances are
    computed from differences of coordinates, exactly 0 between duplicates.

    The distances within a set (rho) only involve that set: a set much
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
        if dtype == np.float32 and X.dim < FLOAT32_MIN_DIM:
            dtype = np.dtype(np.float64)
        e = squares_exponent(max_abs(xp, yp), X.dim, xp.dtype)
        self.exponent = -e  # distances here are those of the input * 2**-exponent
        self.dtype, self.dim = dtype, X.dim
        self.x = _Side(xp, X.offsets, e, yp, method, dtype)
        self.y = self.x if self.symmetric else _Side(yp, Y.offsets, e, xp, method,
                                                     dtype)
        self.bound = (0, 0.0, 0.0, 0.0)
        sides = (self.x,) if self.symmetric else (self.x, self.y)
        # The tiles only (no centred copies), unless the products path of
        # `_knn.pyx`: the points centred on the mean of X and Y together,
        # their squared norms, and its bound ``(chunk, c1, c2, tol)``: a list
        # is certified where ``c1 r R + c2 (r + R)^2 <= tol nu^2`` (r, R the
        # radii of the two sides, nu^2 the k-th squared distance; c1, c2
        # from `pair_sums.expansion_bound`), tol `_PRODUCT_TOLERANCE` d u in
        # the working precision.
        centred = ([np.zeros((0, X.dim), dtype)] * len(sides),
                   [np.zeros(0)] * len(sides))
        if (method == "blocks" and X.dim >= KNN_GEMM_DIM[dtype]
                and all(s.rho_shift is None for s in sides)):
            centred = centred_points(
                [s.rows[:int(s.offsets[-1])] for s in sides], n_threads)
            c1, c2 = expansion_bound(X.dim, dtype)
            self.bound = (PRODUCT_CHUNK[dtype], c1, c2,
                          _PRODUCT_TOLERANCE * X.dim * np.finfo(dtype).eps / 2)
        for s, points, norms in zip(sides, *centred, strict=True):
            s.centred, s.norms = points, norms

    def self_log_kth(self, side="x"):
        """log rho_k of every point of X (`side` "x") or of Y ("y"), the
        distance to its k-th nearest neighbour within its own set (itself
        excluded): -inf for 0. A generator of steps (`run_steps`), as
        `log_sums` and `log_sums_both`."""
        s = self.x if side == "x" else self.y
        if self.method == "kdtree":
            log_rho = _kdtree_log_kth(s.rho_points, s.offsets, self.k,
                                      self.n_threads)
        else:
            log_rho = yield from _blocks_log_kth(
                self.dtype, self.dim, s.offsets, self.k, self.n_threads,
                s.rho_rows, s.rho_cols, (s.centred, s.norms, self.bound))
        if s.rho_shift is not None:
            log_rho -= s.rho_shift * math.log(2.0)
        return log_rho

    def log_sums(self, log_rho, log_floor, coef, progress):
        """``L[a, i, j]``: the log of the sum over the points t of X_i of
        ``exp(coef[a] u(t))``, with ``u = log rho_k(t) - max(log nu_k(t),
        log_floor[i])`` and nu_k(t) the distance from t to its k-th nearest
        neighbour in Y_j; shape (len(coef), len(X), len(Y))."""
        if self.method == "kdtree":
            return _kdtree_log_sums(self.x, self.y, self.k, log_rho, log_floor,
                                    coef, self.n_threads, progress)
        if self._pairs_fit():
            # With X = Y, one block serves (i, j) and (j, i).
            L, _ = yield from self._pair_log_sums(
                log_rho, log_rho, log_floor, log_floor, coef, progress,
                both=self.symmetric)
            return L
        return (yield from _blocks_log_sums(
            self.dtype, self.dim, self.x, self.y, self.symmetric, self.k,
            log_rho, log_floor, coef, self.n_threads, progress, self.bound))

    def log_sums_both(self, log_rho, log_floor, coef, progress):
        """`log_sums` of X against Y and of Y against X: ``(L_xy, L_yx)``,
        with `log_rho` and `log_floor` pairs (X's, Y's). One block of
        distances per pair of sets serves both where the pairs are small
        enough to balance the threads."""
        if self.symmetric:
            raise ValueError("log_sums_both needs Y")
        if self.method == "blocks" and self._pairs_fit():
            return (yield from self._pair_log_sums(*log_rho, *log_floor, coef,
                                                   progress))
        swapped = copy.copy(self)
        swapped.x, swapped.y = self.y, self.x
        return ((yield from self.log_sums(log_rho[0], log_floor[0], coef,
                                          progress)),
                (yield from swapped.log_sums(log_rho[1], log_floor[1], coef,
                                             progress)))

    def _pairs_fit(self):
        """Whether every pair of sets can be computed whole, in the tasks
        of `_impl.pair_log_sums`: no pair outweighs _BOTH_WORK, or, with several
        threads, half a thread's share of the work."""
        sx, sy = np.diff(self.x.offsets), np.diff(self.y.offsets)
        if len(sx) == 0 or len(sy) == 0:
            return False
        if self.symmetric:
            if len(sx) < 2:
                return False
            largest = np.sort(sx)[-2:].astype(float)
            pair = largest[0] * largest[1]
            total = (float(sx.sum()) ** 2 - float(np.sum(sx.astype(float) ** 2))) / 2
        else:
            pair = float(sx.max()) * float(sy.max())
            total = float(sx.sum()) * float(sy.sum())
        unit = self.dim + _SELECT_COST
        n_threads = threads_for(self.n_threads, total * unit, len(sx))
        return pair * unit <= _BOTH_WORK and pair <= 2 * total / n_threads

    def _pair_log_sums(self, x_log_rho, y_log_rho, x_log_floor, y_log_floor,
                       coef, progress, both=True):
        """Both directions by `_impl.pair_log_sums`: (L_xy, L_yx), one array
        with X = Y; unless `both`, X against Y only: (L_xy, None) (the
        arguments of Y unused)."""
        x, y, k, dtype = self.x, self.y, self.k, self.dtype
        triangle = self.symmetric
        sx, sy = np.diff(x.offsets), np.diff(y.offsets)
        nx, ny = len(sx), len(sy)
        unit = self.dim + _SELECT_COST
        tasks = _pair_tasks(sx, sy, triangle, unit)
        pairs = (tasks[:, 2] - tasks[:, 1]).astype(np.float64)
        work = _pair_task_work(tasks, x.offsets, y.offsets) * unit
        n_threads = threads_for(self.n_threads, float(work.sum()), len(tasks))
        largest = int(max(sx.max(), sy.max()))
        small = _flip_points(self.dim)
        col_block, ldo = _col_block(dtype, self.dim, largest)
        lanes = _impl.LANES[dtype.name]
        ldc = largest + lanes
        x_log_rho = _padded(x_log_rho, lanes)
        y_log_rho = x_log_rho if triangle else _padded(y_log_rho, lanes)
        out_xy = np.full((len(coef), nx * ny), -np.inf)
        out_yx = np.full((len(coef), nx * ny), -np.inf) if both else out_xy
        zeros = np.zeros(max(x.cols.shape[1], y.cols.shape[1]), dtype=dtype)
        plan = (x.rows, x.cols, y.rows, y.cols, zeros, x.offsets, y.offsets, tasks,
                k, col_block, ldo, x_log_rho, y_log_rho, x_log_floor, y_log_floor,
                coef, out_xy, out_yx, np.empty((n_threads, TILE_ROWS * ldo), dtype),
                np.empty((n_threads, k * max(lanes * int(sx.max()), ldc)), dtype),
                np.empty((n_threads, k * ldc), dtype), np.empty((n_threads, ldc)),
                small, both, x.centred, x.norms, y.centred, y.norms, self.bound,
                _product_buffers(x.centred, n_threads))
        with one_blas_thread():
            yield (_impl.pair_log_sums, plan, work, {
                "n_threads": n_threads, "progress": progress,
                "desc": "kNN distances", "unit_cost": pairs})
        L_xy = out_xy.reshape(len(coef), nx, ny)
        if not both:
            return L_xy, None
        # out_yx holds the value of (j, i) at (i, j).
        L_yx = out_yx.reshape(len(coef), nx, ny).transpose(0, 2, 1)
        if triangle:  # (i, j), i < j, in out_xy; (j, i) in out_yx
            np.copyto(L_xy, L_yx, where=np.tri(nx, k=-1, dtype=bool))
            return L_xy, L_xy
        return L_xy, np.ascontiguousarray(L_yx)


class _Side:
    """The points of one side (X or Y) of a search, ready for `method`;
    `others`: the points of the other side (None for X against itself),
    for the scales of rho (`_own_scales`)."""

    def __init__(self, points, offsets, e, others, method, dtype):
        self.offsets = offsets
        # Per point: how many more powers of two its set is scaled by for
        # rho (None: no set is).
        self.rho_shift = _own_scales(points, others, offsets, dtype)
        rho = None
        if self.rho_shift is not None:
            rho = np.ldexp(points.astype(dtype), (e + self.rho_shift)[:, None])
        if method == "blocks":
            # Packed once: rows and columns serve every pass.
            self.rows = pack_rows(points, e, dtype)
            self.cols = pack_cols(points, e, dtype)
            if rho is None:
                self.rho_rows, self.rho_cols = self.rows, self.cols
            else:
                self.rho_rows = pack_rows(rho, 0, dtype)
                self.rho_cols = pack_cols(rho, 0, dtype)
        else:
            self.points = scaled(points, e, np.float64)
            self.rho_points = (self.points if rho is None
                               else rho.astype(np.float64, copy=False))


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
    top = max_abs(xp, yp)
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


def _blocks_log_kth(dtype, dim, offsets, k, n_threads, rows, cols, products):
    """log rho_k of every point within its set (-inf for 0); rows and
    cols: the points (of `dim` features, in `dtype`) packed by `pack_rows`
    and `pack_cols`; products: (centred points, norms, bound) of the
    products path (no points: the tiles)."""
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
    plan = (rows, cols, zeros, items, k, col_block, kth, tile_buffers, row_buffers,
            *products, _product_buffers(products[0], n_threads))
    with one_blas_thread():
        yield (_impl.self_kth, plan, _item_work(items) * unit,
               {"n_threads": n_threads})
    with np.errstate(divide="ignore"):
        return 0.5 * np.log(kth)


def _blocks_log_sums(dtype, dim, x, y, symmetric, k, log_rho, log_floor, coef,
                     n_threads, progress, bound):
    """L[a, i, j] = log of the sum over t in X_i of exp(coef[a] u(t)), with
    u = log rho_k(t) - log nu_k(t) (both floored), by distance blocks, one
    direction per ordered pair of sets (j != i with X = Y), a pair's rows
    split for balance; x, y: the `_Side` of X and of Y.

    The pairs are run in calls of consecutive row sets, about
    KNN_PAIRS_PER_CALL pairs each, so that memory beyond the output stays
    bounded however many pairs there are; each call in the chunks of
    `run_chunked`, which move the bar.
    """
    xoff, yoff = x.offsets, y.offsets
    nx, ny = len(xoff) - 1, len(yoff) - 1
    sx, sy = np.diff(xoff), np.diff(yoff)
    unit = dim + _SELECT_COST
    L = np.full((len(coef), nx * ny), -np.inf)
    if symmetric:
        total = (float(sx.sum()) ** 2 - float(np.sum(sx.astype(float) ** 2)))
    else:
        total = float(sx.sum()) * float(sy.sum())
    n_threads = threads_for(n_threads, total * unit, nx * ny)
    per_row = np.full(nx, ny - 1 if symmetric else ny)
    share = _share(total, n_threads, unit)
    col_block, ldo = _col_block(dtype, dim, int(sy.max()))
    max_rows = int(sx.max())
    zeros = np.zeros(y.cols.shape[1], dtype=dtype)
    buffers = (np.empty((n_threads, TILE_ROWS * ldo), dtype),
               np.empty((n_threads, k * _impl.LANES[dtype.name] * max_rows), dtype),
               np.empty((n_threads, max_rows + _impl.LANES[dtype.name])))
    product_buffers = _product_buffers(x.centred, n_threads)
    log_rho = _padded(log_rho, _impl.LANES[dtype.name])
    n_pairs = int(per_row.sum())
    starts = _chunk_rows(per_row, KNN_PAIRS_PER_CALL) if n_pairs else [0]
    with progress_bar(progress, n_pairs, "kNN distances") as bar:
        for i0, i1 in itertools.pairwise(starts):
            counts = per_row[i0:i1]
            i = np.repeat(np.arange(i0, i1), counts)
            j = np.arange(len(i)) - np.repeat(np.cumsum(counts) - counts, counts)
            if symmetric:  # j != i
                j += j >= i
            items = _row_items(i, j, xoff, yoff, sx[i] * sy[j], share)
            # Largest first: the dynamic schedule then balances the threads.
            items = np.ascontiguousarray(
                items[np.argsort(-_item_work(items), kind="stable")])
            # Item s writes slot s; slots are then folded into their
            # entries (several when rows were split), each a pair of the
            # bar: a slot counts 1 / (the slots of its entry).
            entries = items[:, 0] * ny + items[:, 1]
            order = np.argsort(entries, kind="stable")
            first = np.flatnonzero(np.diff(entries[order], prepend=-1))
            pieces = np.diff(first, append=len(entries))
            share_of_pair = np.empty(len(entries))
            share_of_pair[order] = np.repeat(1.0 / pieces, pieces)
            out = np.empty((len(coef), len(entries)))
            plan = (x.rows, y.cols, zeros, items, k, col_block, log_rho, log_floor,
                    coef, out, *buffers, x.centred, x.norms, y.centred, y.norms,
                    bound, product_buffers)
            with one_blas_thread():
                yield (_impl.divergence_sums, plan, _item_work(items) * unit,
                       {"n_threads": n_threads, "progress": bar,
                        "unit_cost": share_of_pair})
            L[:, entries[order][first]] = np.logaddexp.reduceat(out[:, order],
                                                                first, axis=1)
    return L.reshape(len(coef), nx, ny)


def _product_buffers(centred, n_threads):
    """The threads' buffers of the products path (none without points)."""
    size = _impl.PRODUCT_BUFFER if len(centred) else 1
    return np.empty((n_threads, size))


def _pair_tasks(sx, sy, triangle, unit):
    """The tasks of `_impl.pair_log_sums`: rows (i, j0, j1), the pairs of X_i
    with the sets j0 .. j1 - 1 of Y (j > i with `triangle`). Y's sets are
    cut into runs of consecutive sets so that a task's work stays below
    TASK_WORK (a run holds at least one set)."""
    nx, ny = len(sx), len(sy)
    run_points = max(TASK_WORK / (unit * float(sx.max())), float(sy.max()))
    cum = np.concatenate([[0], np.cumsum(sy, dtype=np.float64)])
    cuts = [0]
    while cuts[-1] < ny:
        nxt = int(np.searchsorted(cum, cum[cuts[-1]] + run_points, side="right")) - 1
        cuts.append(min(max(nxt, cuts[-1] + 1), ny))
    cuts = np.asarray(cuts, dtype=np.int64)
    i = np.repeat(np.arange(nx, dtype=np.int64), len(cuts) - 1)
    j0 = np.tile(cuts[:-1], nx)
    j1 = np.tile(cuts[1:], nx)
    if triangle:
        j0 = np.maximum(j0, i + 1)
    keep = j0 < j1
    return np.ascontiguousarray(np.stack([i[keep], j0[keep], j1[keep]], axis=1))


def _pair_task_work(tasks, xoff, yoff):
    """Row points x column points of every pair task."""
    i, j0, j1 = tasks.T
    return ((xoff[i + 1] - xoff[i]) * (yoff[j1] - yoff[j0])).astype(np.float64)


def _flip_points(dim):
    """Pairs of sets of at most this many points (each) in `dim`
    dimensions compute their blocks on the fly (`_impl.pair_log_sums`)."""
    if dim <= _FLIP_ANY_DIM:
        return MAX_K
    return _FLIP_MAX_POINTS if dim <= _FLIP_MAX_DIM else 0


def _padded(values, n):
    """`values` (float64) followed by n zeros: the compiled sums read
    whole vectors."""
    return np.concatenate([np.asarray(values, dtype=np.float64), np.zeros(n)])


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


def _row_items(i, j, xoff, yoff, cost, share):
    """The item table for the ordered pairs (i[s], j[s]): the rows of X_i
    against all of Y_j, a pair's rows cut into pieces of at most `share`
    work (row points times column points)."""
    n_rows = xoff[i + 1] - xoff[i]
    pieces = np.clip(np.ceil(cost / share), 1, n_rows).astype(np.int64)
    pair = np.repeat(np.arange(len(i)), pieces)
    piece = np.arange(len(pair)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    ii, jj, n, p = i[pair], j[pair], n_rows[pair], pieces[pair]
    items = np.empty((len(pair), len(_impl.ITEM_FIELDS)), dtype=np.int64)
    items[:, 0], items[:, 1] = ii, jj
    items[:, 2] = xoff[ii] + n * piece // p
    items[:, 3] = xoff[ii] + n * (piece + 1) // p
    items[:, 4], items[:, 5] = yoff[jj], yoff[jj + 1]
    items[:, 6] = np.arange(len(pair))
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
    """Distance of every point to its k-th neighbour in the tree, in the
    chunks of `run_chunked` (Ctrl-C stops between two), each split among
    the threads of `thread_map`. (SciPy's own ``workers`` joins its
    threads from Python: a Ctrl-C there leaves them writing to freed
    memory.)"""
    out = np.empty(len(points))
    run_chunked(_query_rows, (tree, points, k, out), _QUERY_COST * points.shape[1],
                n_tasks=len(points), n_threads=n_threads)
    return out


def _query_rows(tree, points, k, out, start, stop, n_threads):
    """The rows start to stop of `_query`, split among the threads."""
    n = threads_for(n_threads, float(stop - start) * _QUERY_COST * points.shape[1],
                    stop - start)
    cuts = np.linspace(start, stop, n + 1).astype(np.int64)

    def query(rows):
        out[rows] = tree.query(points[rows], k=[k])[0][:, 0]

    for _ in thread_map(query, [slice(a, b) for a, b in
                                itertools.pairwise(cuts)], n):
        pass


def _kdtree_log_sums(x, y, k, log_rho, log_floor, coef, n_threads, progress):
    """As `_blocks_log_sums`, by one kd-tree per set of Y, queried with all
    the points of X at once; x, y: the `_Side` of X and of Y."""
    xoff, yoff = x.offsets, y.offsets
    nx, ny = len(xoff) - 1, len(yoff) - 1
    sizes = np.diff(xoff)
    floor = np.repeat(log_floor, sizes)
    L = np.empty((len(coef), nx, ny))

    def run(start, stop, _):  # one set at a time, each query on n_threads
        for j in range(start, stop):
            tree = cKDTree(y.points[yoff[j]:yoff[j + 1]])
            nu = _query(tree, x.points, k, n_threads)
            with np.errstate(divide="ignore"):
                u = log_rho - np.maximum(np.log(nu), floor)
            v = coef[:, None] * u
            top = np.maximum.reduceat(v, xoff[:-1], axis=1)
            total = np.add.reduceat(np.exp(v - np.repeat(top, sizes, axis=1)),
                                    xoff[:-1], axis=1)
            L[:, :, j] = top + np.log(total)

    run_chunked(run, (), float(xoff[-1]) * _QUERY_COST * x.points.shape[1],
                n_tasks=ny, n_threads=1, progress=progress, desc="kd-tree queries")
    return L
