"""Sums of a point kernel over all pairs of points of two sets.

The Python side of the engine in ``_pair_sums_impl.pyx``: it rescales the
points, plans segments and groups, packs the points for the tile kernels,
runs the group pairs (in chunks when a progress bar is shown) and folds
segment sums back into set sums. Inputs are validated `Bags`.
"""

import math

import numpy as np
import scipy.sparse

from .._parallel import progress_bar, progress_chunks, resolve_workers
from . import _pair_sums_impl as _impl

__all__ = [
    "centre_scale",
    "pack_cols",
    "pack_rows",
    "pair_sums",
    "panel_points",
    "self_sums",
    "set_sums",
    "squared_norms",
]

# A column group's points, transposed, should stay in the L2 cache while the
# row group streams past them.
_PANEL_BYTES = 1 << 17
_MAX_SEGMENTS = 128


def pair_sums(X, Y=None, *, kernel, gamma=1.0, coef0=1.0, degree=2, workers=None,
              progress=False, desc="kernel sums"):
    """``S[i, j]`` = sum of ``k(x, y)`` over ``x`` in ``X[i]``, ``y`` in
    ``Y[j]``, float64 of shape ``(len(X), len(Y))``; ``Y=None`` computes each
    unordered pair of sets once and returns the symmetric matrix.

    `kernel` is "rbf" (``exp(-gamma |x-y|^2)``), "laplacian"
    (``exp(-gamma |x-y|_1)``), "polynomial" (``(gamma <x,y> + coef0)^degree``)
    or "sqeuclidean" (``|x-y|^2``).
    """
    n_threads = resolve_workers(workers)
    symmetric = Y is None
    xp, yp, gamma = _standardize(X.points, None if symmetric else Y.points, kernel,
                                 gamma)
    max_points = panel_points(X.dim, xp.dtype)
    xplan = _impl.plan_segments(X.offsets, max_points, _MAX_SEGMENTS, True)
    if symmetric:
        yp, yplan = xp, xplan
    else:
        yplan = _impl.plan_segments(Y.offsets, max_points, _MAX_SEGMENTS, True)
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
    _run(xp, xplan, yp, yplan, jlo, jhi,
         rowbase=np.arange(n_row_seg, dtype=np.int64) * n_col_seg,
         colidx=np.arange(n_col_seg, dtype=np.int64),
         out=out, mirror=symmetric, kernel=kernel, gamma=gamma, coef0=coef0,
         degree=degree, n_threads=n_threads, progress=progress, desc=desc)

    S = out.reshape(n_row_seg, n_col_seg)
    S = _fold_segments(S, xplan[1], axis=0)
    S = _fold_segments(S, yplan[1], axis=1)
    return S.T.copy() if transposed else S


def self_sums(X, *, kernel, gamma=1.0, coef0=1.0, degree=2, workers=None):
    """``s[i]`` = sum of ``k(x, x')`` over all ``x, x'`` in ``X[i]`` (the
    diagonal of ``pair_sums(X)`` at a fraction of its cost)."""
    n_threads = resolve_workers(workers)
    xp, _, gamma = _standardize(X.points, None, kernel, gamma)
    max_points = panel_points(X.dim, xp.dtype)
    plan = _impl.plan_segments(X.offsets, max_points, _MAX_SEGMENTS, False)
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
         jlo=np.arange(len(seg_set), dtype=np.int64),
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


def centre_scale(x, y=None):
    """Centre the points (of both collections together) on the midpoint of
    their range and scale them by a power of two (exact) into [-1, 1].

    Returns ``(x, y, exponent)``: distances in the new units are those of
    the input times ``2**-exponent``, exactly. Squared norms then cannot
    overflow, however large the input, and float32 loses less to
    cancellation in ``|x|^2 + |y|^2 - 2 <x, y>``.
    """
    dtype = x.dtype
    both = (x,) if y is None else (x, y)
    lo = np.min([a.min(axis=0) for a in both], axis=0).astype(np.float64)
    hi = np.max([a.max(axis=0) for a in both], axis=0).astype(np.float64)
    centre = lo / 2 + hi / 2
    half_span = float(np.max(hi / 2 - lo / 2))
    # half_span < 2**exponent; the floor keeps the scale finite for
    # subnormal data (which then stays below 1 rather than reaching it).
    exponent = max(math.frexp(half_span)[1], -1000)
    scale = math.ldexp(1.0, -exponent)
    x = ((x - centre) * scale).astype(dtype, copy=False)
    if y is not None:
        y = ((y - centre) * scale).astype(dtype, copy=False)
    return x, y, exponent


def _standardize(x, y, kernel, gamma):
    """Points ready for the tile kernels, and the matching gamma.

    rbf and laplacian depend on differences only: `centre_scale` the points
    and fold the scale into gamma. gamma is capped where it would make the
    exponent overflow; any capped value gives exp(-gamma z) = 0 for every
    z > 0 that the data can produce.
    """
    if kernel not in ("rbf", "laplacian"):
        return x, y, gamma
    x, y, exponent = centre_scale(x, y)
    power = 2 if kernel == "rbf" else 1
    try:
        gamma = math.ldexp(gamma, power * exponent)
    except OverflowError:
        gamma = math.inf
    # |x_k| <= 1, so |x - y|^2 <= 4 d and |x - y|_1 <= 2 d.
    cap = float(np.finfo(x.dtype).max) / (8 * x.shape[1])
    return x, y, min(gamma, cap)


def panel_points(d, dtype):
    """Largest group, in points: a column panel within _PANEL_BYTES."""
    n = _PANEL_BYTES // (d * np.dtype(dtype).itemsize)
    return int(min(max(n, 64), 1024))


def pack_rows(points):
    """Row points, padded with zero rows so every tile is whole."""
    rows = np.zeros((points.shape[0] + _impl.TILE_ROWS, points.shape[1]),
                    dtype=points.dtype)
    rows[: points.shape[0]] = points
    return rows


def pack_cols(points):
    """Column points, transposed and padded to a multiple of the tile width."""
    pad = _impl.TILE_COLS[points.dtype.name]
    cols = np.zeros((points.shape[1], points.shape[0] + pad), dtype=points.dtype)
    cols[:, : points.shape[0]] = points.T
    return cols


def squared_norms(points, kernel, size):
    """Squared norms padded to `size` (zeros for kernels that need none)."""
    norms = np.zeros(size, dtype=points.dtype)
    if kernel in ("rbf", "sqeuclidean"):
        norms[: points.shape[0]] = np.square(points, dtype=np.float64).sum(axis=1)
    return norms


def _run(xp, xplan, yp, yplan, jlo, jhi, *, rowbase, colidx, out, mirror, kernel,
         gamma, coef0, degree, n_threads, progress, desc):
    """Run the row groups of the plan, in chunks if a bar is shown."""
    xseg, _, xgroups = xplan
    yseg, _, ygroups = yplan
    rows, cols = pack_rows(xp), pack_cols(yp)
    row_norms = squared_norms(xp, kernel, rows.shape[0])
    col_norms = squared_norms(yp, kernel, cols.shape[1])
    nr = _impl.TILE_COLS[xp.dtype.name]
    col_points = np.diff(yseg[ygroups])
    ldo = -(-int(col_points.max()) // nr) * nr
    max_acc = int(np.diff(xgroups).max()) * int(np.diff(ygroups).max())
    tile_buffers = np.empty((n_threads, _impl.TILE_ROWS * ldo), dtype=xp.dtype)
    acc_buffers = np.empty((n_threads, max_acc))

    chunks = progress_chunks(jhi - jlo, n_threads, progress)
    with progress_bar(progress, int(np.sum(jhi - jlo)), desc) as bar:
        for g0, g1, cost in chunks:
            _impl.pair_sums(rows, row_norms, xseg, xgroups, cols, col_norms, yseg,
                            ygroups, jlo, jhi, g0, g1, rowbase, colidx, out, mirror,
                            tile_buffers, acc_buffers, kernel, float(gamma),
                            float(coef0), int(degree), n_threads)
            bar.update(cost)


def _fold_segments(S, seg_set, axis):
    """Sum the rows (axis 0) or columns (axis 1) of the pieces of each set."""
    if len(seg_set) == 0 or seg_set[-1] == len(seg_set) - 1:
        return S  # one segment per set
    starts = np.flatnonzero(np.diff(seg_set, prepend=-1))
    return np.add.reduceat(S, starts, axis=axis)
