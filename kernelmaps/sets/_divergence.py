"""kNN estimates of the Renyi divergence between sets, and kernels made
from them."""

import itertools
import math
import numbers

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import gammaln

from .._parallel import check_progress, progress_bar, resolve_workers
from .._validation import check_bool, check_kernel_matrix, check_scalar, check_set_pair
from . import _knn_impl as _impl
from ._pair_sums import centre_scale, pack_cols, pack_rows, panel_points, squared_norms
from ._pair_sums_impl import TILE_COLS, TILE_ROWS

__all__ = ["divergence_kernel", "renyi_divergence"]

# min_dist=None floors both kNN distances of the pairs (X_i, .) at this
# fraction of the median positive rho_k of X_i.
_RELATIVE_FLOOR = 1e-3
# The floor for min_dist=0: the smallest normal float64, so log stays finite.
_LOG_TINY = math.log(np.finfo(np.float64).tiny)
# float32 distances |x|^2 + |y|^2 - 2 <x, y> are too coarse for the close
# neighbours of low dimensions: below this dimension, compute in float64.
_FLOAT32_MIN_DIM = 5
# Column sets at least this large (on average), by dimension, are faster
# with kd-trees than with distance blocks: see _choose_method.
_KDTREE_MIN_SET = {1: 800, 2: 900, 3: 1100, 4: 2000}
# Pairs of sets per call of the distance-block engine (memory per call).
_PAIRS_PER_CALL = 1 << 15


def renyi_divergence(X, Y=None, *, alpha=0.99, k=5, min_dist=None, clamp=True,
                     workers=None, progress=False):
    r"""kNN estimate of the Renyi divergence between every pair of sets.

    ``D[i, j]`` estimates :math:`D_\alpha(p_i \| q_j)`, the Renyi-alpha
    divergence between the distributions that sampled ``X[i]`` and ``Y[j]``,
    with the estimator of Poczos et al. [1]_ used by the NPKL baseline of
    [2]_:

    .. math::

        D_\alpha(X_i \| Y_j) = \frac{1}{\alpha - 1} \log\Big( B_{k,\alpha}
        \Big(\frac{n - 1}{m}\Big)^{1-\alpha} \frac{1}{n} \sum_{t \in X_i}
        \Big(\frac{\rho_k(t)}{\nu_k(t)}\Big)^{d (1 - \alpha)} \Big),
        \qquad B_{k,\alpha} = \frac{\Gamma(k)^2}
        {\Gamma(k - \alpha + 1)\, \Gamma(k + \alpha - 1)}

    where ``n = len(X[i])``, ``m = len(Y[j])``, :math:`\rho_k(t)` is the
    distance from ``t`` to its k-th nearest neighbour in ``X[i]`` (``t``
    itself excluded) and :math:`\nu_k(t)` to its k-th nearest neighbour in
    ``Y[j]``.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of vectors; each needs more than `k` points.
    Y : sequence of array_like (m_j, d), or Bags, optional
        Second collection; each set needs at least `k` points. None means
        `X`: one distance computation serves ``D[i, j]`` and ``D[j, i]``,
        and the diagonal is exactly 0.
    alpha : float or sequence of float, default=0.99
        Order of the divergence, positive and not 1, with ``|alpha - 1| <
        k``. A sequence gives one matrix per alpha from a single neighbour
        search.
    k : int, default=5
        Neighbour rank.
    min_dist : float, optional
        Floor on both kNN distances, so duplicate points give finite values.
        None (default) floors the distances of the pairs ``(X[i], .)`` at
        ``1e-3`` times the median of the positive :math:`\rho_k` of
        ``X[i]`` (see Notes); a float is an absolute floor in the units of
        the data; 0 means no floor beyond the smallest normal float.
    clamp : bool, default=True
        Replace negative estimates (the true divergence is >= 0) by 0.
    workers : int, optional
        Threads; None or -1 means all cores. Results are bit-identical for
        every number of threads.
    progress : bool, default=False
        Show a progress bar (needs tqdm).

    Returns
    -------
    D : ndarray of float64, shape (len(X), len(Y))
        Or ``(len(alpha), len(X), len(Y))`` for a sequence of alphas. Not
        symmetric.

    See Also
    --------
    divergence_kernel : A kernel from these divergences.
    project_psd : Make that kernel positive semi-definite.

    Notes
    -----
    The estimator is consistent (as the set sizes grow, with `k` fixed) but
    converges slowly and underestimates large divergences; negative values
    are estimation noise around small divergences. It is computed in log
    space: the mean of the ratios is a log-sum-exp, and ``I`` (the argument
    of the log) is floored at machine epsilon, as in the reference
    implementation, skl-groups.

    *The distance floor.* Without a floor, a point of ``X[i]`` that
    coincides with a point of ``Y[j]`` (or of ``X[i]``) gives an infinite
    ratio. skl-groups floors both distances at an absolute 1e-3; since kNN
    distances shrink like ``n ** (-1 / d)`` and scale with the data, that
    floor rewrites a growing share of the distances of large or
    small-scaled samples, and the estimate stops converging. The default
    floor is relative instead: the estimator without a floor depends on the
    data only through ratios of distances, and so does it with this floor,
    so the result does not change when all data are scaled (exactly, for
    powers of two). Distances a thousand times shorter than a typical
    within-set neighbour distance are rare for continuous data (a fraction
    of about ``1e-3 ** d`` of the points), so the floor leaves the estimate
    unchanged there and only acts on duplicates. ``D[i, j]`` depends only
    on ``X[i]`` and ``Y[j]``. A set whose points are all equal takes the
    median floor of the other sets (1e-3 of the data's half-range if all
    are so).

    *Computation.* The cost is the neighbour search. At moderate and high
    dimension it computes each block of squared distances
    ``|x|^2 + |y|^2 - 2 <x, y>`` in tiles (as in `sum_match_kernel`),
    keeping the k smallest values along its rows and, for ``Y=None``, its
    columns in the same pass; nothing larger than a tile is stored. float32
    input is computed in float32 from ``d = 5`` on and in float64 below,
    where neighbours are so close that float32 cancellation would spoil
    their distances. For ``d <= 4`` and large sets it
    queries one `scipy.spatial.cKDTree` per set instead, which is faster
    there. The points are first centred and scaled by a power of two, which
    changes no ratio of distances.

    References
    ----------
    .. [1] B. Poczos, L. Xiong and J. Schneider, "Nonparametric Divergence
       Estimation with Applications to Machine Learning on Distributions",
       UAI 2011.
    .. [2] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", seed paper 000 of kernelmaps, section 5.1 (NPKL).

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import renyi_divergence
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(500, 2)), rng.normal(size=(500, 2)),
    ...         rng.normal(loc=(1.0, 0.0), size=(500, 2))]
    >>> D = renyi_divergence(sets, alpha=0.99, k=5)
    >>> D.round(2)  # the truth: 0 within the first two, 0.495 to the third
    array([[0.  , 0.04, 0.49],
           [0.  , 0.  , 0.28],
           [0.46, 0.32, 0.  ]])
    """
    X, Y = check_set_pair(X, Y)
    k = check_scalar(k, "k", kind="int", low=1)
    alphas, single = _check_alpha(alpha, k)
    if min_dist is not None:
        min_dist = check_scalar(min_dist, "min_dist", low=0.0)
    clamp = check_bool(clamp, "clamp")
    progress = check_progress(progress)
    n_threads = resolve_workers(workers)
    _check_sizes(X, "X", k + 1, f"more than k={k}")
    if Y is not None:
        _check_sizes(Y, "Y", k, f"at least k={k}")

    method = _choose_method(X, Y)
    D = _renyi(X, Y, alphas, k, min_dist, method, n_threads, progress)
    if clamp:
        np.maximum(D, 0.0, out=D)
    return D[0] if single else D


def _renyi(X, Y, alphas, k, min_dist, method, n_threads, progress):
    """The estimate before clamping, shape (len(alphas), len(X), len(Y))."""
    symmetric = Y is None
    xp, yp = X.points, None if symmetric else Y.points
    if xp.dtype == np.float32 and X.dim < _FLOAT32_MIN_DIM:
        xp = xp.astype(np.float64)
        yp = None if symmetric else yp.astype(np.float64)
    xp, yp, exponent = centre_scale(xp, yp)
    if symmetric:
        Y, yp = X, xp
    sizes_x, sizes_y = X.sizes, Y.sizes

    if method == "kdtree":
        log_rho = _kdtree_log_kth(xp, X.offsets, k, n_threads)
    else:
        # Packed once: X's rows (and columns, for rho) serve both passes.
        x_rows, x_cols = _row_side(xp), _col_side(xp)
        log_rho = _blocks_log_kth(xp, X.offsets, k, n_threads, x_rows, x_cols)
    if min_dist is None:
        log_floor = _relative_floors(log_rho, X.offsets)
    elif min_dist > 0:
        log_floor = np.full(len(X), math.log(min_dist) - exponent * math.log(2))
    else:
        log_floor = np.full(len(X), _LOG_TINY)
    np.maximum(log_rho, np.repeat(log_floor, sizes_x), out=log_rho)

    coef = X.dim * (1.0 - alphas)
    if method == "kdtree":
        L = _kdtree_log_sums(xp, X.offsets, yp, Y.offsets, k, log_rho, log_floor,
                             coef, n_threads, progress)
    else:
        y_cols = x_cols if symmetric else _col_side(yp)
        L = _blocks_log_sums(xp, X.offsets, Y.offsets, symmetric, k, log_rho,
                             log_floor, coef, n_threads, progress, x_rows, y_cols)

    a = alphas[:, None, None]
    log_b = (2 * gammaln(k) - gammaln(k - alphas + 1) - gammaln(k + alphas - 1))
    log_i = (log_b[:, None, None]
             + (1 - a) * np.log((sizes_x[:, None] - 1) / sizes_y[None, :])
             + L - np.log(sizes_x)[:, None])
    np.maximum(log_i, math.log(np.finfo(np.float64).eps), out=log_i)
    D = log_i / (a - 1)
    if symmetric:
        D[:, np.arange(len(X)), np.arange(len(X))] = 0.0
    return D


def _check_alpha(alpha, k):
    """alpha as a float64 array, and whether a single value was given."""
    single = isinstance(alpha, numbers.Real) or np.ndim(alpha) == 0
    values = [alpha] if single else list(np.ravel(np.asarray(alpha, dtype=object)))
    if not values:
        raise ValueError("alpha must not be empty")
    alphas = np.array([check_scalar(a, "alpha", low=0.0, low_inclusive=False)
                       for a in values])
    if np.any(alphas == 1.0):
        raise ValueError(
            "alpha must not be 1 (the Kullback-Leibler limit; use e.g. 0.99)"
        )
    bad = np.abs(alphas - 1.0) >= k
    if bad.any():
        raise ValueError(
            f"alpha={alphas[bad][0]} needs |alpha - 1| < k={k}: the estimator's "
            f"constant B needs k + alpha - 1 > 0 and k - alpha + 1 > 0"
        )
    return alphas, single


def _check_sizes(bags, name, need, what):
    small = np.flatnonzero(bags.sizes < need)
    if small.size:
        i = small[0]
        raise ValueError(
            f"{name}[{i}] has {bags.sizes[i]} point(s); the kNN estimator needs "
            f"{what} points in every set of {name}"
        )


def _choose_method(X, Y):
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


def _relative_floors(log_rho, offsets):
    """log of _RELATIVE_FLOOR times the median positive rho of each set."""
    n_sets = len(offsets) - 1
    sizes = np.diff(offsets)
    set_id = np.repeat(np.arange(n_sets), sizes)
    positive = np.isfinite(log_rho)
    values, owners = log_rho[positive], set_id[positive]
    order = np.lexsort((values, owners))
    values = values[order]
    counts = np.bincount(owners, minlength=n_sets)
    starts = np.cumsum(counts) - counts
    has = counts > 0
    rho = np.exp(values)
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    floors = np.empty(n_sets)
    floors[has] = np.log(_RELATIVE_FLOOR * (rho[lo] + rho[hi]) / 2)
    if not has.all():
        floors[~has] = np.median(floors[has]) if has.any() else math.log(
            _RELATIVE_FLOOR)
    return floors


# -- distance blocks (Cython) ------------------------------------------------


def _row_side(points):
    """Points packed as tile rows, and their squared norms."""
    rows = pack_rows(points)
    return rows, squared_norms(points, "sqeuclidean", rows.shape[0])


def _col_side(points):
    """Points packed as tile columns (transposed), and their squared norms."""
    cols = pack_cols(points)
    return cols, squared_norms(points, "sqeuclidean", cols.shape[1])


def _blocks_log_kth(xp, offsets, k, n_threads, row_side, col_side):
    """log rho_k of every point within its set (-inf for 0); row_side and
    col_side: the points as packed by `_row_side` and `_col_side`."""
    sizes = np.diff(offsets)
    owners = np.arange(len(sizes))
    cost = sizes * sizes
    items = _row_items(owners, owners, offsets, offsets, cost,
                       max(cost.sum() / (4 * n_threads), 1.0))
    col_block, ldo = _col_block(xp, int(sizes.max()))
    kth = np.empty(len(xp))
    _impl.self_kth(*row_side, *col_side, items, k, col_block, kth,
                   np.empty((n_threads, TILE_ROWS * ldo), xp.dtype),
                   np.empty((n_threads, k * _impl.LANES[xp.dtype.name]
                             * _max_rows(items)), xp.dtype),
                   n_threads)
    with np.errstate(divide="ignore"):
        return 0.5 * np.log(kth)


def _blocks_log_sums(xp, xoff, yoff, symmetric, k, log_rho, log_floor, coef,
                     n_threads, progress, row_side, col_side):
    """L[a, i, j] = log of the sum over t in X_i of exp(coef[a] u(t)), with
    u = log rho_k(t) - log nu_k(t) (both floored), by distance blocks;
    row_side: X packed by `_row_side`, col_side: Y packed by `_col_side`.

    The pairs are run in chunks of consecutive row sets, about
    _PAIRS_PER_CALL pairs each, so that memory beyond the output stays
    bounded however many pairs there are.
    """
    nx, ny = len(xoff) - 1, len(yoff) - 1
    sx, sy = np.diff(xoff), np.diff(yoff)
    L = np.full((len(coef), nx * ny), -np.inf)
    if symmetric:
        if nx == 1:  # only the diagonal, which is 0
            return L.reshape(len(coef), 1, 1)
        largest = np.sort(sx)[-2:]
        total = (float(sx.sum()) ** 2 - float(np.sum(sx.astype(float) ** 2))) / 2
        # One item per unordered pair serves both directions, unless one
        # pair alone outweighs the threads' shares: then ordered pairs with
        # their rows split, for balance.
        both = largest[0] * largest[1] <= 2 * total / n_threads
        per_row = nx - 1 - np.arange(nx) if both else np.full(nx, nx - 1)
    else:
        both = False
        total = float(sx.sum()) * float(sy.sum())
        per_row = np.full(nx, ny)
    share = max(total / (4 * n_threads), 1.0)

    rows, row_norms = row_side
    cols, col_norms = col_side
    col_block, ldo = _col_block(xp, int(sy.max()))
    lanes = _impl.LANES[xp.dtype.name]
    ldc = int(sy.max()) + lanes if both else 1
    max_rows = int(sx.max())
    buffers = dict(
        tile_buffers=np.empty((n_threads, TILE_ROWS * ldo), xp.dtype),
        row_buffers=np.empty((n_threads, k * lanes * max_rows), xp.dtype),
        col_buffers=np.empty((n_threads, k * ldc), xp.dtype),
        log_buffers=np.empty((n_threads, max(max_rows, ldc))),
    )
    n_pairs = int(per_row.sum())
    per_call = _PAIRS_PER_CALL
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
            work = (items[:, 3] - items[:, 2]) * (items[:, 5] - items[:, 4])
            # Largest first: the dynamic schedule then balances the threads.
            items = items[np.argsort(-work, kind="stable")]
            out = np.empty((len(coef), len(entries)))
            _impl.divergence_sums(rows, row_norms, cols, col_norms, items, k,
                                  col_block, log_rho, log_rho, log_floor, log_floor,
                                  coef, out, n_threads=n_threads, **buffers)
            order = np.argsort(entries, kind="stable")
            first = np.flatnonzero(np.diff(entries[order], prepend=-1))
            L[:, entries[order][first]] = np.logaddexp.reduceat(out[:, order], first,
                                                               axis=1)
            bar.update(int(per_row[i0:i1].sum()))
    return L.reshape(len(coef), nx, ny)


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


def _col_block(points, max_cols):
    """Columns per panel, and the padded leading dimension of a tile."""
    block = min(panel_points(points.shape[1], points.dtype), max_cols)
    nr = TILE_COLS[points.dtype.name]
    return block, -(-block // nr) * nr


# -- kd-trees (SciPy) --------------------------------------------------------


def _kdtree_log_kth(xp, offsets, k, n_threads):
    """log rho_k of every point within its set, by one kd-tree per set."""
    out = np.empty(len(xp))
    for a, b in itertools.pairwise(offsets):
        pts = xp[a:b].astype(np.float64, copy=False)
        # The (k+1)-th neighbour counting the point itself is the k-th
        # without it, with or without duplicates.
        dist, _ = cKDTree(pts).query(pts, k=[k + 1], workers=n_threads)
        out[a:b] = dist[:, 0]
    with np.errstate(divide="ignore"):
        return np.log(out)


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
            nu, _ = tree.query(queries, k=[k], workers=n_threads)
            with np.errstate(divide="ignore"):
                u = log_rho - np.maximum(np.log(nu[:, 0]), floor)
            v = coef[:, None] * u
            top = np.maximum.reduceat(v, xoff[:-1], axis=1)
            total = np.add.reduceat(np.exp(v - np.repeat(top, sizes, axis=1)),
                                    xoff[:-1], axis=1)
            L[:, :, j] = top + np.log(total)
            bar.update(1)
    return L


def divergence_kernel(D, *, gamma=None, power=2):
    r"""Kernel from a matrix of divergences between sets.

    .. math::

        K = \exp(-\gamma S^p), \qquad S = \max\Big(\frac{D + D^T}{2}, 0\Big)

    as in the NPKL baseline of [1]_. The result is symmetric but, in
    general, not positive semi-definite: follow it with `project_psd` (or a
    `PSDProjector`) before a kernel machine.

    Parameters
    ----------
    D : array_like (n, n)
        Divergences between every pair of n sets, such as the output of
        `renyi_divergence` with ``Y=None``.
    gamma : float, optional
        Positive scale. None means ``1 / median(S_off) ** power`` with
        ``S_off`` the off-diagonal entries of ``S`` (the positive ones, if
        the median is 0; 1 if none is positive).
    power : float, default=2
        Positive power of the symmetrised divergence.

    Returns
    -------
    K : ndarray of float64, shape (n, n)

    See Also
    --------
    renyi_divergence : The divergences.
    project_psd : The nearest positive semi-definite matrix.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", seed paper 000 of kernelmaps, section 5.1 (NPKL).

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import divergence_kernel
    >>> D = np.array([[0.0, 1.0, 4.0], [3.0, 0.0, 2.0], [2.0, 2.0, 0.0]])
    >>> divergence_kernel(D, gamma=0.25, power=1).round(4)
    array([[1.    , 0.6065, 0.4724],
           [0.6065, 1.    , 0.6065],
           [0.4724, 0.6065, 1.    ]])
    """
    D = check_kernel_matrix(D, "D")
    power = check_scalar(power, "power", low=0.0, low_inclusive=False)
    S = np.maximum((D + D.T) / 2, 0.0)
    if gamma is None:
        gamma = median_gamma(S, power)
    else:
        gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
    return np.exp(-gamma * S**power)


def median_gamma(S, power):
    """``1 / median(off-diagonal S) ** power`` (the median of the positive
    entries if that is 0; 1 if none is positive): `divergence_kernel`'s
    default scale for the symmetrised divergences `S`."""
    off = S[~np.eye(len(S), dtype=bool)]
    scale = np.median(off) if off.size else 0.0
    if scale == 0 and np.any(off > 0):
        scale = np.median(off[off > 0])
    return 1.0 / scale**power if scale > 0 else 1.0
