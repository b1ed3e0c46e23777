"""Sliced-Wasserstein distances and quantile features: the driver of
``_sliced.pyx``.

Both work a block of directions at a time: the points of every set are
projected on the block's directions by one BLAS product, the projections
sorted once per set and direction (the sorted layout of ``_sliced.pyx``),
then merged pair by pair (`sliced_means`) or with the grid of quantile
levels (`quantile_means`). The blocks of directions are sized so that the
projections and their sorted layout fit the working-memory budget.

Inputs are validated `Bags` (``points``, ``offsets``, ``weights``), already
scaled by a power of two (`layout.power_of_two_exponent`) so that no
projection or cost overflows or underflows: sliced-Wasserstein distances and quantiles
are positively homogeneous, and the callers scale the results back.
"""

import numpy as np

from . import _sliced as _impl
from .layout import row_blocks
from .progress import progress_bar
from .schedule import TASK_WORK, run_chunked, threads_for, touch_pages
from .set_means import weights_over_largest

__all__ = [
    "mirror",
    "quantile_edges",
    "quantile_means",
    "sliced_means",
    "sliced_power_means",
]

# Element operations of one step of a merge (a comparison, a cost).
_MERGE_COST = 4
# ... at p other than 1 and 2: a power (pow, or log, exp and expm1).
_POWER_COST = 100
# Pairs per block of `_power_mean` (a few transcendental functions each:
# milliseconds, Ctrl-C stops between two blocks).
_MEAN_BLOCK = 1 << 16
# The largest projection computed as one BLAS product (`_blas_work`): about
# 0.2 s on one core, at most; larger ones go in blocks of rows.
PROJECTION_WORK = float(1 << 27)


def _block_directions(n_points, itemsize, weighted, L, budget):
    """Directions per block: the projections (points x block, the
    points' dtype), their sorted copy and, for weighted sets, the
    cumulative weights (float64) within `budget` bytes; at least one."""
    per = max(1, n_points) * (2 * itemsize + (8 if weighted else 0))
    return int(min(L, max(1, budget // per)))


def _projections(points, directions, n_threads):
    """``points @ directions.T`` (points, L) in the points' dtype, into an
    array whose pages are touched first, a block at a time (`touch_pages`:
    on a virtual machine the first touch of fresh memory costs about a
    second per 300 MB, which Ctrl-C could not stop inside the product).
    One BLAS product where it takes a fraction of a second (`_blas_work`
    at most PROJECTION_WORK), else blocks of rows of a 16th of that,
    between which Ctrl-C stops (BLAS rounds some rows of a block otherwise
    than in the whole product: such large projections differ in the last
    bit from one product, whatever the threads).

    float32 points are projected with float64 sums (a float64 product of
    each block), rounded to float32 once: a float32 product rounds each
    sum of d terms as its BLAS kernel does, which differs between rows and
    machines, so that equal points could project a unit apart, a
    difference that a small p raises to a large share of the distance."""
    dtype = points.dtype
    wide = dtype == np.float32
    D = directions.T.astype(np.float64 if wide else dtype)
    P = touch_pages(np.empty((points.shape[0], D.shape[1]), dtype=dtype),
                    n_threads)
    work = _blas_work(P.size, D.shape[0], D.shape[1])
    if work <= PROJECTION_WORK and not wide:
        np.matmul(points, D, out=P)
        return P
    step = (P.shape[0] if work <= PROJECTION_WORK  # (float32, one block)
            else max(1, int(P.shape[0] * (PROJECTION_WORK / 16) // work)))
    for start in range(0, P.shape[0], step):
        block = points[start:start + step]
        if wide:
            P[start:start + step] = block.astype(np.float64) @ D
        else:
            np.matmul(block, D, out=P[start:start + step])
    return P


def _blas_work(values, d, L):
    """The time of a BLAS product of `values` outputs, `d` features, `L`
    directions, in units of about 2.5 ns on one core: slower per value
    with more features and with few directions (measured with OpenBLAS on
    a Zen 5 core: 2.5 ns a value at d = 16, L = 100; 6 at L = 16, 65 at L
    = 4; 15 at d = 256, L = 100)."""
    return values * (1.0 + d / 32) * (1.0 + 64 / max(L, 1))


def _sorted_layout(points, offsets, weights, directions, n_threads, steps):
    """The sorted layout of `_sliced.sort_projections` of the sets on the
    rows of `directions` (L, d), in the points' dtype: (values, cum),
    cum empty for unweighted sets, computed by the step ``(fn, plan,
    cost, options of run_chunked)`` appended to `steps` (the caller runs
    the steps: the compiled loops two calls below the tools' blocks)."""
    dtype = points.dtype
    P = _projections(points, directions, n_threads)
    n_sets = len(offsets) - 1
    L = directions.shape[0]
    weighted = weights is not None
    if weighted and dtype == np.float64:
        # one allocation: the merges reach a value at a fixed distance from
        # its cumulative weight (km_sliced_kernel.h)
        both = np.empty(2 * P.size)
        cum, values = both[:P.size], both[P.size:]
    else:
        values = np.empty(P.size, dtype=dtype)
        cum = np.empty(P.size if weighted else 0)
    largest = int(np.diff(offsets).max(initial=1))
    sizes = np.diff(offsets).astype(np.float64)
    cost = sizes * np.log2(sizes + 1.0) * L
    threads = threads_for(n_threads, float(cost.sum()), n_sets)
    vbuf = np.empty((threads, 2 * largest), dtype=dtype)
    wbuf = np.empty((threads, largest if weighted else 0))
    w = weights if weighted else np.empty(0)
    steps.append((_impl.sort_projections,
                  (P, offsets, w, weighted, values, cum, vbuf, wbuf), cost,
                  {"n_threads": threads}))
    return values, cum


def sliced_means(X, Y, directions, p, n_threads, budget, progress=False,
                 desc="sliced Wasserstein"):
    """``S[i, j]`` = the mean over the rows of `directions` (L, d, unit
    rows, float64) of ``W_p^p`` between the projections of ``X[i]`` and
    ``Y[j]`` (Y None: X, each unordered pair once, zero diagonal,
    symmetric), float64, for p = 1 or 2, from the points as they are (the
    caller scales them). Weighted sets take their weights (a mixed pair:
    uniform weights for the unweighted side). The projections of a block
    of directions held at once fit in `budget` bytes."""
    walk = _PairWalk(X, Y, directions, budget, _MERGE_COST)
    out = np.zeros((walk.n_x, walk.n_y))
    if walk.empty:
        return out
    with progress_bar(progress, walk.n_blocks * walk.n_tasks, desc,
                      unit="task") as bar:
        for block, (vx, cx, vy, cy), steps in walk.layouts(n_threads):
            for fn, plan, cost, options in steps:
                run_chunked(fn, plan, cost, **options)
            steps.clear()  # (the projections: not held through the merges)
            plan = (vx, cx, X.offsets, vy, cy, walk.Yb.offsets, out,
                    len(block), float(p), walk.weighted, walk.symmetric,
                    walk.row_width, walk.n_col_blocks, walk.col_width)
            cost, threads = walk.chunks(block, n_threads)
            run_chunked(_impl.pair_block, plan, cost, n_threads=threads,
                        progress=bar, desc=desc)
    if walk.symmetric:
        mirror(out)
    for a, b in row_blocks(out):  # (Ctrl-C stops between two blocks)
        out[a:b] /= len(directions)
    return out


def mirror(out):
    """``out += out.T`` for a square `out` that holds values above its
    diagonal only (zeros elsewhere): the upper triangle copied below it, in
    blocks of rows (each block adds the transposed strip of the columns of
    its rows: the same values as the whole sum, and Ctrl-C stops between
    two blocks); returns `out`."""
    for a, b in row_blocks(out):
        out[a:b, :b] += out[:b, a:b].T
    return out


def sliced_power_means(X, Y, directions, p, n_threads, budget,
                       progress=False, desc="sliced Wasserstein"):
    """``D[i, j]`` = the mean over the rows of `directions` of ``W_p^p``
    between the projections of ``X[i]`` and ``Y[j]``, to the power 1 / p
    (`sliced_means` to the power 1 / p), for any p > 0, p = 1
    and 2 included (slower than `sliced_means` there: for the other p).

    The merges of each pair are walked twice: the first time for the
    largest difference M of its projections (over the steps of positive
    length, every direction), the second for the sums of the powers of t
    = difference / M, in [0, 1]: ``D = M * (mean t^p)^(1/p)``, where no
    power overflows and the steps at M weigh their length whatever p (no
    underflow to 0 at large p). As p tends to 0, ``mean t^p`` tends to 1
    and ``D`` to the geometric mean of the differences: for p < 1 the sums
    of ``(t^p - 1) / p`` are kept too (in the `expm1` form, whose digits
    do not cancel), and ``D = M * exp(log1p(p V) / p)``, V their mean,
    wherever ``mean t^p`` is at least 1/2 (otherwise its own logarithm
    loses no digits)."""
    walk = _PairWalk(X, Y, directions, budget, _POWER_COST)
    top = np.zeros((walk.n_x, walk.n_y))
    if walk.empty:
        return top
    A = np.zeros(top.shape)  # (np.zeros: pages first touched by the tasks)
    U = np.zeros(top.shape) if p < 1 else np.zeros((0, 0))
    cached = None
    with progress_bar(progress, 2 * walk.n_blocks * walk.n_tasks, desc,
                      unit="task") as bar:
        for first in (True, False):
            layouts = cached or walk.layouts(n_threads)
            if walk.n_blocks == 1 and first:  # sorted once for both passes
                cached = layouts = list(layouts)
            for block, (vx, cx, vy, cy), steps in layouts:
                for fn, plan, cost, options in steps:
                    run_chunked(fn, plan, cost, **options)
                steps.clear()  # (sorted once where cached; the projections)
                plan = (vx, cx, X.offsets, vy, cy, walk.Yb.offsets, top, A, U,
                        len(block), float(p), walk.weighted, walk.symmetric,
                        first, walk.row_width, walk.n_col_blocks,
                        walk.col_width)
                cost, threads = walk.chunks(
                    block, n_threads, _MERGE_COST / _POWER_COST if first else 1)
                run_chunked(_impl.pair_block_any, plan, cost, n_threads=threads,
                            progress=bar, desc=desc)
    L = directions.shape[0]
    flat, fa, fu = top.reshape(-1), A.reshape(-1), U.reshape(-1)
    for i in range(0, flat.size, _MEAN_BLOCK):  # in place of the tops
        j = i + _MEAN_BLOCK
        flat[i:j] = _power_mean(flat[i:j], fa[i:j], fu[i:j] if p < 1 else fu,
                                L, p)
    if walk.symmetric:
        mirror(top)
    return top


def _power_mean(top, A, U, L, p):
    """M (mean t^p)^(1/p) from top = M, A = the sum over the L directions
    of the integral of t^p and (p < 1) U = that of (t^p - 1) / p
    (`sliced_power_means`); 0 where M is 0."""
    with np.errstate(divide="ignore", over="ignore", under="ignore",
                     invalid="ignore"):
        mean = A / L
        if p >= 1:
            D = top * mean ** (1.0 / p)
        else:
            V = U / L  # (mean t^p - 1) / p, at most 0 (-inf: overflowed)
            y = p * V  # mean t^p - 1
            near = y >= -0.5
            ratio = np.log1p(y) / y  # log(mean t^p) / (mean t^p - 1)
            ratio[y == 0] = 1.0
            G = np.where(near, V * ratio, np.log(mean) / p)  # log(mean) / p
            D = top * np.exp(G)
    D[top == 0] = 0.0
    return D


class _PairWalk:
    """The blocks of directions and the tasks (`_plan_pairs`) of the pairs
    of sets of X and Y (None: X) for `sliced_means` and
    `sliced_power_means`, `step_cost` the work of one step of a merge on
    one direction."""

    def __init__(self, X, Y, directions, budget, step_cost):
        self.X, self.directions = X, directions
        self.symmetric = Y is None
        self.Yb = Yb = X if self.symmetric else Y
        self.weighted = X.weights is not None or Yb.weights is not None
        self.wx = _weights_of(X) if self.weighted else None
        self.wy = _weights_of(Yb) if self.weighted else None
        self.n_x, self.n_y = len(X), len(Yb)
        L = directions.shape[0]
        self.empty = self.n_x == 0 or self.n_y == 0 or L == 0
        if self.empty:
            return
        n_points = X.n_points + (0 if self.symmetric else Yb.n_points)
        self.step = _block_directions(n_points, X.points.dtype.itemsize,
                                      self.weighted, L, budget)
        self.row_width, self.col_width, self.cost = _plan_pairs(
            np.diff(X.offsets), np.diff(Yb.offsets), self.symmetric,
            self.step, step_cost)
        self.n_col_blocks = -(-self.n_y // self.col_width)
        self.n_tasks = len(self.cost)
        self.n_blocks = -(-L // self.step)

    def layouts(self, n_threads):
        """Per block of directions: (block, (vx, cx, vy, cy), steps), the
        sorted layouts of X and Y on it, computed by the steps (a
        generator: the caller runs the steps)."""
        X, Yb, step = self.X, self.Yb, self.step
        for l0 in range(0, self.directions.shape[0], step):
            block, steps = self.directions[l0:l0 + step], []
            vx, cx = _sorted_layout(X.points, X.offsets, self.wx, block,
                                    n_threads, steps)
            if self.symmetric:
                vy, cy = vx, cx
            else:
                vy, cy = _sorted_layout(Yb.points, Yb.offsets, self.wy, block,
                                        n_threads, steps)
            yield block, (vx, cx, vy, cy), steps

    def chunks(self, block, n_threads, scale=1.0):
        """The cost and threads of `run_chunked` over every task for the
        directions `block`, a part of cost `scale` of the tasks' cost."""
        L = self.directions.shape[0]
        threads = threads_for(n_threads, float(self.cost.sum()) * L / self.step,
                              self.n_tasks)
        return self.cost * (len(block) / self.step * scale), threads


# Rows of a task: each column's sorted projections are read once for them
# all (a few sets of a hundred points on a hundred directions: in L2).
PAIR_ROWS = 4


def _plan_pairs(sx, sy, symmetric, L, step_cost=_MERGE_COST):
    """The tasks of `sliced_means` for sets of sizes sx (rows) and sy
    (columns) on L directions: ``(row_width, col_width, cost)``, a task
    being `row_width` rows against `col_width` columns (about TASK_WORK
    / 4 element operations), cost its work (the pairs above the diagonal
    only when `symmetric`), `step_cost` that of one step of a merge on one
    direction."""
    n_x, n_y = len(sx), len(sy)
    row_width = min(PAIR_ROWS, n_x)
    pair = (float(sx.mean()) + float(sy.mean())) * step_cost * L
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
    return row_width, col_width, cost.ravel() * step_cost * L


def _weights_of(bags):
    """The point weights of `bags` divided by the largest of their set
    (`set_means.weights_over_largest`), ones where it has none."""
    if bags.weights is not None:
        return weights_over_largest(bags.weights, bags.offsets)
    return np.ones(bags.n_points)


def quantile_edges(n_quantiles):
    """The Q + 1 edges of the quantile cells, ``sin(pi k / (2 Q))**2`` for
    k = 0 .. Q (0 and exactly 1 at the ends): equal steps of the angle of
    ``t = (1 - cos(theta)) / 2``, cells narrower in the tails (by about
    pi / (2 Q) in the middle, pi**2 / (4 Q**2) at the ends), where the
    quantile functions of samples are steepest."""
    Q = int(n_quantiles)
    edges = np.sin(np.arange(Q + 1) * (np.pi / (2 * Q))) ** 2
    edges[0], edges[-1] = 0.0, 1.0
    return edges


def quantile_means(X, directions, edges, n_threads, budget, midpoint=False):
    """``F[s, l * Q + k]`` = the mean of the quantile function of the
    projection of set s on direction l over the cell [edges[k], edges[k +
    1]], times ``sqrt(w_k / L)`` (w_k the cell's width, L the rows of
    `directions`): ``|F[s] - F[r]|^2`` is then the mean
    over the directions of the integral of the square of the difference of
    the cell means (`midpoint`: its value at the cell's middle level,
    ``(edges[k] + edges[k + 1]) / 2``, times the same). In the points'
    dtype (computed in float64), from the points as they are; a block of
    directions at a time within `budget` bytes."""
    edges = np.ascontiguousarray(edges, dtype=np.float64)
    widths = np.diff(edges)
    L, Q = directions.shape[0], len(widths)
    if midpoint:
        levels = edges[:-1] + widths / 2
        cell_scale = np.sqrt(widths / L)
    else:
        levels = edges
        cell_scale = 1.0 / np.sqrt(widths * L)  # (of the cell's integral)
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
        steps = []
        values, cum = _sorted_layout(X.points, X.offsets, w, block, n_threads,
                                     steps)
        for fn, plan, step_cost, options in steps:
            run_chunked(fn, plan, step_cost, **options)
        del steps, plan  # (the projections)
        cost = (sizes + Q) * len(block) * _MERGE_COST
        threads = threads_for(n_threads, float(cost.sum()), len(X))
        run_chunked(_impl.quantile_features,
                    (values, cum, X.offsets, weighted, len(block), l0, levels,
                     cell_scale, bool(midpoint), out), cost,
                    n_threads=threads)
    return out
