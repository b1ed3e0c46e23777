"""kNN estimates of the Renyi divergence between sets, and kernels made
from them."""

import functools
import math
import numbers

import numpy as np

from .. import _array_api
from .._engine import knn
from .._engine.scales import divergence_kernel_matrix
from .._engine.schedule import run_steps
from .._hints import takes_hints
from .._lazy import is_lazy, lazy_gram
from .._parallel import check_progress, resolve_workers
from .._validation import (
    DTYPE_DOC,
    cast_output,
    check_array_matrix,
    check_bool,
    check_dtype,
    check_kernel_matrix,
    check_scalar,
    check_set_pair,
    fill_docs,
    pair_names,
)
from .._warnings import warn_uninformative
from . import _array_divergence
from ._array_sets import check_array_set_pair
from ._renyi_terms import LOG_EPS, LOG_TINY, RELATIVE_FLOOR, estimate_terms

__all__ = ["divergence_kernel", "renyi_divergence"]


def _array_renyi_divergence(library, X, Y=None, *, alpha=0.99, k=5, min_dist=None,
                            clamp=True, workers=None, progress=False, dtype=None,
                            both=False):
    """`renyi_divergence` (`both`: `renyi_divergence_both`) of sets of
    `library`, computed by it on their device (`_array_divergence.renyi`),
    with the checks of the NumPy path; `workers` and `progress` checked,
    unused."""
    X, Y, k, alphas, single, min_dist, clamp, *_ = _checked(
        X, Y, k, alpha, min_dist, clamp, progress, workers,
        functools.partial(check_array_set_pair, library), both)
    out = _array_api.result_dtype(library, dtype, X, Y)
    pair = _array_divergence.renyi(library, X, Y, alphas, k, min_dist, both=both,
                                   clamp=clamp)
    pair = tuple(library.xp.astype(D[0, ...] if single else D, out,
                                       copy=False)
                 for D in (pair if both else (pair,)))
    return pair if both else pair[0]


@takes_hints()
@_array_api.dispatched(_array_renyi_divergence, "X", "Y")
def renyi_divergence(X, Y=None, *, alpha=0.99, k=5, min_dist=None, clamp=True,
                     workers=None, progress=False, dtype=None):
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
        Sets of vectors; each needs more than `k` points. A `Bags` of Dask
        points (or a 3-D Dask array) gives a lazy Dask array (see Notes).
    Y : sequence of array_like (m_j, d), or Bags, optional
        Second collection; each set needs at least `k` points. None means
        `X`: one distance computation serves ``D[i, j]`` and ``D[j, i]``,
        and the diagonal is exactly 0.
    alpha : float or sequence of float, default=0.99
        Order of the divergence, positive and not 1, with ``|alpha - 1| <
        k``. A sequence gives one matrix per alpha from a single neighbour
        search.
    k : int, default=5
        Neighbour rank, at most ``2**31 - 1``.
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
    {dtype}

    Returns
    -------
    D : ndarray of float32 or float64 (see `dtype`), shape (len(X), len(Y))
        Or ``(len(alpha), len(X), len(Y))`` for a sequence of alphas. Not
        symmetric. A lazy dask.array.Array of that dtype and shape for Dask
        input.

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

    *Dask input.* `X` or `Y` given as a `Bags` whose points are a Dask
    array (or a 3-D Dask array of sets of equal size) gives a lazy Dask
    array, computed in blocks of sets by the same code as in memory (the
    same values: ``D[i, j]`` depends only on ``X[i]`` and ``Y[j]``, and
    the search method is chosen once for the whole call): the blocks
    follow the row chunks of the points, moved to set boundaries and split
    where one task would need more than the working-memory budget
    (`set_config`, read when the graph is built); one task per pair of
    blocks, and for ``Y=None`` one per unordered pair, whose search gives
    both directions (blocks (I, J) and (J, I)). The points' values are
    checked in the tasks, with the errors of the in-memory call;
    `progress` is ignored (use Dask's diagnostics), and `workers` is the
    threads of each task (1 by default).

    References
    ----------
    .. [1] B. Poczos, L. Xiong and J. Schneider, "Nonparametric Divergence
       Estimation with Applications to Machine Learning on Distributions",
       UAI 2011.
    .. [2] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 5.1 (NPKL).

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
    lazy = is_lazy(X, Y)
    X, Y, k, alphas, single, min_dist, clamp, progress, n_threads = _checked(
        X, Y, k, alpha, min_dist, clamp, progress, workers,
        functools.partial(check_set_pair, lazy=lazy))
    out = check_dtype(dtype, X, Y)

    # Chosen once for the whole call (from the set sizes): every block of a
    # lazy call searches as the call in memory does.
    method = knn.choose_method(X, Y)
    if lazy:
        return lazy_gram(
            functools.partial(_renyi_output, alphas=alphas, k=k, min_dist=min_dist,
                              method=method, clamp=clamp, single=single,
                              names=pair_names(Y), progress=False, out=out),
            X, Y, dtype=out, workers=workers, both=True,
            lead=() if single else (len(alphas),), name="renyi_divergence")
    return _renyi_output(X, Y, alphas, k, min_dist, method, clamp, single,
                         pair_names(Y), n_threads, progress, out)


def _renyi_output(X, Y, alphas, k, min_dist, method, clamp, single, names,
                  n_threads, progress, out, both=False):
    """`renyi_divergence` of validated X and Y (None: X) as `out`; `names`
    names the inputs in errors. With `both`, ``(renyi_divergence(X, Y),
    renyi_divergence(Y, X))`` from one search."""
    pair = run_steps(_renyi(X, Y, alphas, k, min_dist, method, n_threads,
                            progress, both=both, clamp=clamp))
    pair = [cast_output(D, out, names) for D in (pair if both else (pair,))]
    pair = tuple(D[0] if single else D for D in pair)
    return pair if both else pair[0]


@_array_api.dispatched(functools.partial(_array_renyi_divergence, both=True), "X",
                     "Y")
def renyi_divergence_both(X, Y, *, alpha=0.99, k=5, min_dist=None, clamp=True,
                          workers=None, progress=False, dtype=None):
    """``(renyi_divergence(X, Y), renyi_divergence(Y, X))`` from one search:
    the distances between two sets serve both directions (for
    ``SetKernel("renyi").transform``). Every set of X and of Y needs more
    than k points; the arguments are those of `renyi_divergence`, and so
    are the results, up to rounding.
    """
    X, Y, k, alphas, single, min_dist, clamp, progress, n_threads = _checked(
        X, Y, k, alpha, min_dist, clamp, progress, workers, check_set_pair,
        both=True)
    out = check_dtype(dtype, X, Y)
    method = knn.choose_method(X, Y)
    return _renyi_output(X, Y, alphas, k, min_dist, method, clamp, single,
                         "X and Y", n_threads, progress, out, both=True)


def _checked(X, Y, k, alpha, min_dist, clamp, progress, workers, check_pair,
             both=False):
    """The checks of `renyi_divergence` (`both`: of
    `renyi_divergence_both`), the sets checked by ``check_pair(X, Y)``:
    X, Y and the checked arguments of `_check_args`."""
    X, Y = check_pair(X, Y)
    if both and Y is None:
        raise TypeError("Y must be given: sets of points")
    args = _check_args(k, alpha, min_dist, clamp, progress, workers)
    k = args[0]
    _check_sizes(X, "X", k + 1, f"more than k={k}")
    if Y is not None:
        _check_sizes(Y, "Y", k + 1 if both else k,
                     f"more than k={k}" if both else f"at least k={k}")
    return X, Y, *args


def _check_args(k, alpha, min_dist, clamp, progress, workers):
    """The checked scalar arguments of the Renyi estimates: k, the alphas
    (an array), whether alpha was one value, min_dist, clamp, progress and
    the thread count."""
    k, alphas, single, min_dist, clamp = renyi_params(alpha, k, min_dist, clamp)
    progress = check_progress(progress)
    return k, alphas, single, min_dist, clamp, progress, resolve_workers(workers)


def renyi_params(alpha=0.99, k=5, min_dist=None, clamp=True):
    """The checked parameters of the Renyi estimates: k, the alphas (an
    array), whether alpha was one value, min_dist and clamp: what
    `renyi_divergence` and the spec of the Renyi kernel check."""
    k = check_scalar(k, "k", kind="int", low=1, high=knn.MAX_K)
    alphas, single = _check_alpha(alpha, k)
    if min_dist is not None:
        min_dist = check_scalar(min_dist, "min_dist", low=0.0)
    return k, alphas, single, min_dist, check_bool(clamp, "clamp")


def _renyi(X, Y, alphas, k, min_dist, method, n_threads, progress, both=False,
           clamp=False):
    """The estimate (with `clamp`, at least 0), shape (len(alphas), len(X),
    len(Y)); with `both` (Y given), also that of Y against X from the same
    search (one block of distances per pair of sets serves both): a pair
    (D_xy, D_yx). A generator of the search's steps (`run_steps`)."""
    symmetric = Y is None
    search = knn.NeighbourSearch(X, Y, k, method, n_threads)
    log_rho, log_floor = [], []
    for side, bags in [("x", X), ("y", Y)][:2 if both else 1]:
        rho = yield from search.self_log_kth(side)
        if min_dist is None:
            floor = _relative_floors(rho, bags.offsets)
        elif min_dist > 0:
            floor = np.full(len(bags),
                            math.log(min_dist) - search.exponent * math.log(2))
        else:
            floor = np.full(len(bags), LOG_TINY)
        np.maximum(rho, np.repeat(floor, bags.sizes), out=rho)
        log_rho.append(rho)
        log_floor.append(floor)

    coef = X.dim * (1.0 - alphas)
    if both:
        L_xy, L_yx = yield from search.log_sums_both(log_rho, log_floor, coef,
                                                     progress)
        pair = (_estimate(L_xy, X.sizes, Y.sizes, alphas, k),
                _estimate(L_yx, Y.sizes, X.sizes, alphas, k))
    else:
        L = yield from search.log_sums(log_rho[0], log_floor[0], coef, progress)
        pair = (_estimate(L, X.sizes, X.sizes if symmetric else Y.sizes,
                          alphas, k),)
        if symmetric:
            pair[0][:, np.arange(len(X)), np.arange(len(X))] = 0.0
    for D in pair if clamp else ():
        np.maximum(D, 0.0, out=D)
    return pair if both else pair[0]


def _estimate(L, sizes_x, sizes_y, alphas, k):
    """The estimates from the log sums L of `NeighbourSearch.log_sums`,
    computed in place: log I = log B + (1 - alpha) log((n - 1) / m) + L -
    log n, floored at log(eps), over alpha - 1."""
    rows, cols = estimate_terms(sizes_x, sizes_y, alphas, k)
    for a, alpha in enumerate(alphas):
        La = L[a]
        La += rows[a][:, None]
        La -= cols[a][None, :]
        np.maximum(La, LOG_EPS, out=La)
        La /= alpha - 1
    return L


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


def _relative_floors(log_rho, offsets):
    """log of RELATIVE_FLOOR times the median positive rho of each set."""
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
    floors[has] = np.log(RELATIVE_FLOOR * (rho[lo] + rho[hi]) / 2)
    if not has.all():
        floors[~has] = np.median(floors[has]) if has.any() else math.log(
            RELATIVE_FLOOR)
    return floors


def _array_divergence_kernel(library, D, *, gamma=None, power=2, dtype=None):
    """`divergence_kernel` of a matrix of `library`, computed by it on its
    device (`_array_divergence.divergence_kernel`), with the checks of the
    NumPy path there; gamma None: the median rule there too
    (`_array_divergence.median_scale`, a constant of the gradient)."""
    xp = library.xp
    D = check_array_matrix(library, D, "D")
    gamma, power = divergence_kernel_params(gamma, power)
    out = _array_api.result_dtype(library, dtype, D)
    scale = None if gamma is not None else _array_divergence.median_scale(library, D)
    K = _array_divergence.divergence_kernel(library, D, gamma, scale, power)
    _array_api.warn_uninformative(  # (the NumPy path's, read on the device)
        library, K, True, "divergence", "objects of D", gamma,
        lambda: library.holds(xp.all(D + xp.matrix_transpose(D) <= 0)))
    return xp.astype(K, out, copy=False)


@_array_api.dispatched(_array_divergence_kernel, "D")
def divergence_kernel(D, *, gamma=None, power=2, dtype=None):
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
    {dtype}
        The floating input is `D`.

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, n)

    See Also
    --------
    renyi_divergence : The divergences.
    project_psd : The nearest positive semi-definite matrix.

    Notes
    -----
    The kernel is exact at any magnitude of the divergences and of
    `gamma`: where ``gamma * S ** power`` would overflow or underflow it is
    computed as ``exp(-(S / m) ** power)`` for the default ``gamma = m **
    -power`` (m the median), ``exp(-exp(log(gamma) + power * log(S)))`` for
    a given one (``S == 0`` gives 1), so the result never holds NaN or
    infinity.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 5.1 (NPKL).

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
    D = check_kernel_matrix(D, "D", keep_float32=True)
    gamma, power = divergence_kernel_params(gamma, power)
    out = check_dtype(dtype, D)
    K, _ = divergence_kernel_matrix(D.astype(np.float64, copy=False),
                                    power=power, gamma=gamma)
    warn_uninformative(K, True, "divergence", "objects of D", gamma,
                       lambda: not np.any(np.maximum(D + D.T, 0)))
    return cast_output(K, out, "D")


def divergence_kernel_params(gamma=None, power=2):
    """`divergence_kernel`'s gamma (None: the median rule) and power,
    checked."""
    power = check_scalar(power, "power", low=0.0, low_inclusive=False)
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
    return gamma, power


fill_docs((renyi_divergence, divergence_kernel), dtype=DTYPE_DOC)
