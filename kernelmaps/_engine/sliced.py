"""Sliced-Wasserstein distances and quantile features: the driver of
``_sliced.pyx``.

Both work a block of directions at a time: the points of every set are
projected on the block's directions by one BLAS product, the projections
sorted once per set and direction (the sorted layout of ``_sliced.pyx``),
then merged pair by pair (`sliced_sums`) or with the grid of quantile
levels (`quantile_means`). The blocks of directions are sized so that the
projections and their sorted layout fit the working-memory budget.

Inputs are validated `Bags` (``points``, ``offsets``, ``weights``), already
scaled by a power of two (`power_of_two_scale`) so that no projection or
cost overflows or underflows: sliced-Wasserstein distances and quantiles
are positively homogeneous, and the callers scale the results back.
"""

import math

import numpy as np

from . import _sliced as _impl
from .layout import max_abs
from .progress import progress_bar
from .schedule import TASK_WORK, run_chunked, threads_for
from .set_means import weights_over_largest

__all__ = ["power_of_two_scale", "quantile_means", "sliced_sums"]

# Element operations of one step of a merge (a comparison, a cost).
_MERGE_COST = 4


def power_of_two_scale(*arrays):
    """The exponent e such that ``2**e`` times the largest absolute value
    of `arrays` lies in [0.5, 1) (0 when every value is 0): scaled so, the
    projections on unit directions are at most sqrt(d) and their squared
    differences never overflow, nor do small values underflow."""
    top = max((max_abs(a) for a in arrays), default=0.0)
    return -math.frexp(top)[1] if top > 0 else 0


def _block_directions(n_points, itemsize, weighted, L, budget):
    """Directions per block: the projections (points x block, the
    points' dtype), their sorted copy and, for weighted sets, the
    cumulative weights (float64) within `budget` bytes; at least one."""
    per = max(1, n_points) * (2 * itemsize + (8 if weighted else 0))
    return int(min(L, max(1, budget // per)))


def _sorted_layout(points, offsets, weights, directions, n_threads):
    """The sorted layout of `_sliced.sort_projections` of the sets on the
    rows of `directions` (L, d), in the points' dtype: (values, cum),
    cum empty for unweighted sets."""
    dtype = points.dtype
    P = points @ directions.T.astype(dtype)  # (points, L), BLAS
    P = np.ascontiguousarray(P, dtype=dtype)
    n_sets = len(offsets) - 1
    L = directions.shape[0]
    values = np.empty(P.size, dtype=dtype)
    weighted = weights is not None
    cum = np.empty(P.size if weighted else 0)
    largest = int(np.diff(offsets).max(initial=1))
    sizes = np.diff(offsets).astype(np.float64)
    cost = sizes * np.log2(sizes + 1.0) * L
    threads = threads_for(n_threads, float(cost.sum()), n_sets)
    vbuf = np.empty((threads, 2 * largest), dtype=dtype)
    wbuf = np.empty((threads, largest if weighted else 0))
    w = weights if weighted else np.empty(0)
    run_chunked(_impl.sort_projections,
                (P, offsets, w, weighted, values, cum, vbuf, wbuf), cost,
                n_threads=threads)
    return values, cum


def sliced_sums(X, Y, directions, p, n_threads, budget, progress=False,
                desc="sliced Wasserstein"):
    """``S[i, j]`` = the sum over the rows of `directions` (L, d, unit
    rows, float64) of ``W_p^p`` between the projections of ``X[i]`` and
    ``Y[j]`` (Y None: X, each unordered pair once, zero diagonal,
    symmetric), float64, from the points as they are (the caller scales
    them). Weighted sets take their weights (a mixed pair: uniform
    weights for the unweighted side). The projections of a block of
    directions held at once fit in `budget` bytes."""
    symmetric = Y is None
    Yb = X if symmetric else Y
    weighted = X.weights is not None or Yb.weights is not None
    wx = _weights_of(X) if weighted else None
    wy = _weights_of(Yb) if weighted else None
    n_x, n_y = len(X), len(Yb)
    out = np.zeros((n_x, n_y))
    L = directions.shape[0]
    if n_x == 0 or n_y == 0 or L == 0:
        return out
    n_points = X.n_points + (0 if symmetric else Yb.n_points)
    step = _block_directions(n_points, X.points.dtype.itemsize, weighted, L,
                             budget)
    row_width, col_width, cost = _plan_pairs(np.diff(X.offsets),
                                             np.diff(Yb.offsets), symmetric,
                                             step)
    n_col_blocks = -(-n_y // col_width)
    n_tasks = len(cost)
    threads = threads_for(n_threads, float(cost.sum()) * L / step, n_tasks)
    n_blocks = -(-L // step)
    with progress_bar(progress, n_blocks * n_tasks, desc,
                      unit="task") as bar:
        for l0 in range(0, L, step):
            block = directions[l0:l0 + step]
            vx, cx = _sorted_layout(X.points, X.offsets, wx, block, n_threads)
            if symmetric:
                vy, cy = vx, cx
            else:
                vy, cy = _sorted_layout(Yb.points, Yb.offsets, wy, block,
                                        n_threads)
            plan = (vx, cx, X.offsets, vy, cy, Yb.offsets, out, len(block),
                    float(p), weighted, symmetric, row_width, n_col_blocks,
                    col_width)
            run_chunked(_impl.pair_block, plan,
                        cost * (len(block) / step), n_threads=threads,
                        progress=bar, desc=desc)
    if symmetric:
        out += out.T
    return out


# Rows of a task: each column's sorted projections are read once for them
# all (a few sets of a hundred points on a hundred directions: in L2).
PAIR_ROWS = 4


def _plan_pairs(sx, sy, symmetric, L):
    """The tasks of `sliced_sums` for sets of sizes sx (rows) and sy
    (columns) on L directions: ``(row_width, col_width, cost)``, a task
    being `row_width` rows against `col_width` columns (about TASK_WORK
    / 4 element operations), cost its work (the pairs above the diagonal
    only when `symmetric`)."""
    n_x, n_y = len(sx), len(sy)
    row_width = min(PAIR_ROWS, n_x)
    pair = (float(sx.mean()) + float(sy.mean())) * _MERGE_COST * L
    col_width = int(max(1, min(n_y, TASK_WORK / 4 / max(1.0, pair * row_width))))
    rows = np.arange(n_x)
    row_block, col_starts = rows // row_width, np.arange(0, n_y, col_width)
    col_stops = np.minimum(col_starts + col_width, n_y)
    # per row and column block: the pairs and the points of the columns
    if symmetric:
        first = np.maximum(col_starts[None, :], rows[:, None] + 1)
    else:
        first = np.broadcast_to(col_starts[None, :], (n_x, len(col_starts)))
    counts = np.maximum(col_stops[None, :] - first, 0)
    cum_y = np.concatenate([[0], np.cumsum(sy)])
    points = cum_y[np.maximum(col_stops[None, :], first)] - cum_y[
        np.minimum(first, n_y)]
    work = counts * sx[:, None] + points
    starts = np.flatnonzero(np.diff(row_block, prepend=-1))
    cost = np.add.reduceat(work, starts, axis=0).astype(np.float64)
    return row_width, col_width, cost.ravel() * _MERGE_COST * L


def _weights_of(bags):
    """The point weights of `bags` divided by the largest of their set
    (`set_means.weights_over_largest`), ones where it has none."""
    if bags.weights is not None:
        return weights_over_largest(bags.weights, bags.offsets)
    return np.ones(bags.n_points)


def quantile_means(X, directions, n_quantiles, scale, n_threads, budget,
                   midpoint=False):
    """``F[s, l * Q + k]`` = `scale` times the mean of the quantile
    function of the projection of set s on direction l over the cell [k /
    Q, (k + 1) / Q] (`midpoint`: its value at the cell's middle), in the
    points' dtype (computed in float64), from the points as they are; a
    block of directions at a time within `budget` bytes."""
    L, Q = directions.shape[0], int(n_quantiles)
    dtype = X.points.dtype
    out = np.empty((len(X), L * Q), dtype=dtype)
    if len(X) == 0 or L == 0:
        return out
    weighted = X.weights is not None
    w = _weights_of(X) if weighted else None
    step = _block_directions(X.n_points, dtype.itemsize, weighted, L, budget)
    sizes = np.diff(X.offsets).astype(np.float64)
    for l0 in range(0, L, step):
        block = directions[l0:l0 + step]
        values, cum = _sorted_layout(X.points, X.offsets, w, block, n_threads)
        cost = (sizes + Q) * len(block) * _MERGE_COST
        threads = threads_for(n_threads, float(cost.sum()), len(X))
        run_chunked(_impl.quantile_features,
                    (values, cum, X.offsets, weighted, len(block), Q, l0,
                     float(scale), bool(midpoint), out), cost,
                    n_threads=threads)
    return out
