"""Exact kernels between sets of vectors: the sum-match (mean map) kernel,
the maximum mean discrepancy, the MMD kernel, and the median heuristic."""

import functools

import numpy as np

from .. import _array_api
from .._engine.layout import max_abs, power_of_two_exponent, row_blocks
from .._engine.pair_sums import pair_means, pair_sums, self_sums
from .._gamma import MEDIAN_SAMPLE, MEDIAN_SEED, point_median_gamma, resolve_gamma
from .._hints import takes_hints
from .._lazy import is_lazy, lazy_gram
from .._parallel import check_progress, resolve_workers
from .._spec import kernel_function
from .._validation import (
    DTYPE_DOC,
    cast_output,
    check_bool,
    check_choice,
    check_dtype,
    check_finite_output,
    check_scalar,
    check_set_pair,
    fill_docs,
)
from .._warnings import (
    degenerate,
    degenerate_message,
    warn_degenerate,
    warn_uninformative,
)
from . import _array_sets

__all__ = ["median_heuristic", "mmd", "mmd_kernel", "sum_match_kernel"]

_KERNELS = ("rbf", "laplacian", "linear", "polynomial", "energy")


@kernel_function("mean_map")
@takes_hints("pair")
def sum_match_kernel(X, Y=None, *, kernel="rbf", gamma=None, degree=2, coef0=1.0,
                     normalize=True, workers=None, progress=False, dtype=None):
    r"""Sum-match kernel between sets of vectors (mean map kernel).

    .. math::

        K(X_i, Y_j) = \frac{1}{n_i m_j} \sum_{x \in X_i} \sum_{y \in Y_j} k(x, y)

    the inner product of the kernel mean embeddings of the sets; without the
    normalisation, the sum-match kernel of [1]_.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of vectors, each with at least one point. A `Bags` of Dask
        points (or a 3-D Dask array) gives a lazy Dask array (see Notes).
        A `Bags` with point weights gives the weighted kernel (see Notes).
    Y : sequence of array_like (m_j, d), or Bags, optional
        Second collection of sets. None means `X`: each unordered pair of sets
        is computed once and the result is symmetric.
    kernel : {"rbf", "laplacian", "linear", "polynomial", "energy"}, default="rbf"
        Kernel between points: ``exp(-gamma ||x - y||^2)``,
        ``exp(-gamma ||x - y||_1)``, ``<x, y>``,
        ``(gamma <x, y> + coef0) ** degree``, or the distance-induced kernel
        ``(||x|| + ||y|| - ||x - y||) / 2`` of the energy distance [3]_
        (no parameter).
    gamma : float, optional
        Positive kernel parameter; None means the median heuristic on `Y`
        (`X` when `Y` is None) for "rbf" and "laplacian", ``1 / d`` for
        "polynomial" (see `median_heuristic`).
    degree : int, default=2
        Degree of the polynomial kernel, from 1 to 2**31 - 1.
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    normalize : bool, default=True
        Divide by ``n_i * m_j`` (mean map kernel; weighted sets: by the
        product of their total weights); False gives the plain sum.
    workers : int, optional
        Threads; None or -1 means all cores. Results are bit-identical for
        every number of threads.
    progress : bool, default=False
        Show a progress bar (needs tqdm).
    {dtype}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (len(X), len(Y))
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    mmd : The distance between the mean embeddings.
    mmd_kernel : A Gaussian kernel on the mean embeddings.

    Notes
    -----
    float32 input is computed in float32 (kernel values of four points are
    added in float32) with float64 sums; other input in float64. For "rbf"
    and "laplacian" the points are first centred and scaled by a power of
    two, which leaves the kernel unchanged and keeps squared norms from
    overflowing. The work is ``O(sum_i n_i * sum_j m_j * d)``; memory beyond
    the output and a few copies of the points is a few hundred kB per
    thread. A ``(len(X), len(Y))`` matrix that overflows float64 (large
    polynomial values) raises a ValueError.

    *Weighted sets.* The points of a `Bags` with weights count with their
    weights: ``K(X_i, Y_j) = sum_x sum_y (w_x / W_i) (w_y / W_j) k(x, y)``
    with ``W_i`` the total weight of ``X_i`` (normalised per set: the inner
    product of the weighted mean embeddings; integer weights give the
    kernel of the sets with each point repeated that many times, a
    constant factor on the weights of a set changes nothing), and
    ``sum_x sum_y w_x w_y k(x, y)`` with ``normalize=False``. A point of
    weight 0 counts as absent; a set of total weight 0 is refused. An
    unweighted `Y` (or `X`) beside a weighted one weighs 1 a point. The
    engine runs as without weights (each row of kernel values multiplied
    by its point's weight over the total, the column sums dotted with the
    column weights; float32 weights in the float32 tiles, float64 sums);
    ``gamma=None`` is the weighted median heuristic (`median_heuristic`).
    Weighted Dask points are refused.

    {lazy}

    References
    ----------
    .. [1] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", NIPS 2009, eq. (2).
    .. [2] A. Gretton, K. Borgwardt, M. Rasch, B. Schoelkopf and A. Smola,
       "A Kernel Two-Sample Test", JMLR 13, 2012.
    .. [3] D. Sejdinovic, B. Sriperumbudur, A. Gretton and K. Fukumizu,
       "Equivalence of distance-based and RKHS-based statistics in
       hypothesis testing", Annals of Statistics 41(5), 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import sum_match_kernel
    >>> X = [np.array([[0.0], [1.0]]), np.array([[0.0], [2.0]])]
    >>> sum_match_kernel(X, kernel="linear")
    array([[0.25, 0.5 ],
           [0.5 , 1.  ]])
    >>> sum_match_kernel(X, gamma=1.0).round(4)
    array([[0.6839, 0.4385],
           [0.4385, 0.5092]])

    Weights: the point 2.0 of the second set weighing 3 moves its mean to
    1.5 (the weights [1, 3] are those of the set ``[0, 2, 2, 2]``).

    >>> from kernelmaps import Bags
    >>> W = Bags.from_list(X, weights=[[1.0, 1.0], [1.0, 3.0]])
    >>> sum_match_kernel(W, kernel="linear")
    array([[0.25, 0.75],
           [0.75, 2.25]])
    """
    lazy, X, Y, params = _check_common(X, Y, kernel, gamma, degree, coef0)
    normalize = check_bool(normalize, "normalize")
    return _run(_sum_match, "sum_match_kernel", X, Y, lazy, params, workers,
                progress, dtype, normalize=normalize)


@takes_hints("pair")
def mmd(X, Y=None, *, kernel="rbf", gamma=None, degree=2, coef0=1.0, squared=False,
        unbiased=False, workers=None, progress=False, dtype=None):
    r"""Maximum mean discrepancy between every pair of sets.

    The distance between the kernel mean embeddings of the sets,

    .. math::

        \mathrm{MMD}^2(X_i, Y_j) = K(X_i, X_i) + K(Y_j, Y_j) - 2 K(X_i, Y_j)

    with `K` the mean map kernel (`sum_match_kernel`). This biased
    V-statistic is clipped at 0 (it is a squared distance; roundoff may make
    it slightly negative) before the square root.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of vectors. A `Bags` of Dask points (or a 3-D Dask array) gives
        a lazy Dask array (see Notes). A `Bags` with point weights gives the
        MMD of the weighted mean embeddings (see Notes).
    Y : sequence of array_like (m_j, d), or Bags, optional
        None means `X`; the result is then symmetric with a zero diagonal.
    kernel : {"rbf", "laplacian", "linear", "polynomial", "energy"}, default="rbf"
        Kernel between points, as in `sum_match_kernel` ("energy": the
        squared MMD is half the energy distance between the sets).
    gamma : float, optional
        Positive kernel parameter; None means the median heuristic on `Y`
        (`X` when `Y` is None) for "rbf" and "laplacian", ``1 / d`` for
        "polynomial" (see `median_heuristic`).
    degree : int, default=2
        Degree of the polynomial kernel.
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    squared : bool, default=False
        Return MMD^2 instead of MMD.
    unbiased : bool, default=False
        Return the unbiased U-statistic of MMD^2 ([1]_, eq. 3), which leaves
        out the pairs of a point with itself inside each set, may be negative
        and needs ``squared=True`` and at least two points per set. With
        ``Y=None`` its diagonal is set to 0. Weighted sets: a ValueError.
    workers : int, optional
        Threads; None or -1 means all cores, -2 all but one.
    progress : bool, default=False
        Show a progress bar (needs tqdm).
    {dtype}

    Returns
    -------
    D : ndarray of float32 or float64 (see `dtype`), shape (len(X), len(Y))
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    sum_match_kernel, mmd_kernel

    Notes
    -----
    MMD^2 is a difference of mean kernel values: its rounding error is
    about the float64 precision times those values, not times MMD^2. The
    "rbf" and "laplacian" kernels are computed from differences of points
    (exact at any offset); for "linear" and "polynomial" kernels of points
    far from the origin (say offset by 1e8 with unit spread) the kernel
    values dwarf MMD^2, which then has no correct digit: centre the points
    first.

    *Weighted sets.* With point weights, `K` is the weighted mean map
    kernel of `sum_match_kernel` (weights normalised per set): MMD is the
    distance between the weighted mean embeddings, the same as for the
    sets with each point repeated its (integer) weight times; a point of
    weight 0 counts as absent. The within-set terms are weighted too.
    ``unbiased=True`` is refused (ValueError): the U-statistic leaves out
    the pairs of a point with itself, and a weight does not say whether it
    counts copies of one observation (whose pairs are then not left out)
    or one observation of that importance. ``gamma=None`` is the weighted
    median heuristic.

    {lazy} The within-set means of each block of sets are computed once, in
    a task of their own.

    References
    ----------
    .. [1] A. Gretton, K. Borgwardt, M. Rasch, B. Schoelkopf and A. Smola,
       "A Kernel Two-Sample Test", JMLR 13, 2012, eqs. (3) and (5).
    .. [2] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", eq. (7).

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import mmd
    >>> X = [np.array([[0.0], [1.0]]), np.array([[0.0], [2.0]])]
    >>> mmd(X, kernel="linear")  # distance between the means 0.5 and 1
    array([[0. , 0.5],
           [0.5, 0. ]])
    >>> mmd(X, [np.array([[0.0], [1.0], [2.0]])], kernel="linear", squared=True)
    array([[0.25],
           [0.  ]])
    """
    min_size = 2 if check_bool(unbiased, "unbiased") else 1
    lazy, X, Y, params = _check_common(X, Y, kernel, gamma, degree, coef0,
                                       min_size)
    weighted = [name for name, B in (("X", X), ("Y", Y))
                if B is not None and B.weights is not None]
    if unbiased and weighted:
        raise ValueError(
            f"{weighted[0]} is a Bags with point weights, for which "
            f"unbiased=True is not defined here (the U-statistic leaves out "
            f"the pairs of a point with itself, which weights do not say how "
            f"to count); pass unbiased=False or the sets without weights"
        )
    squared = check_bool(squared, "squared")
    if unbiased and not squared:
        raise ValueError(
            "unbiased=True gives the U-statistic of MMD^2, which may be negative; "
            "pass squared=True"
        )
    return _run(_mmd, "mmd", X, Y, lazy, params, workers, progress, dtype,
                prepare=within, squared=squared, unbiased=unbiased, gamma2=None)


@kernel_function("mmd")
@takes_hints("pair")
def mmd_kernel(X, Y=None, *, gamma=None, gamma2=1.0, kernel="rbf", degree=2,
               coef0=1.0, workers=None, progress=False, dtype=None):
    r"""The MMD kernel: a Gaussian kernel on the mean embeddings of sets.

    .. math::

        K(X_i, Y_j) = \exp(-\gamma_2 \, \mathrm{MMD}^2(X_i, Y_j))

    with the biased MMD of `mmd` under the point kernel `kernel` (Gaussian by
    default). It is positive definite (a Gaussian kernel on a Hilbert space)
    and has a unit diagonal.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of vectors. A `Bags` of Dask points (or a 3-D Dask array) gives
        a lazy Dask array (see Notes). A `Bags` with point weights gives the
        kernel of the weighted mean embeddings (see Notes).
    Y : sequence of array_like (m_j, d), or Bags, optional
        None means `X` (symmetric result).
    gamma : float, optional
        Parameter of the point kernel; None means the median heuristic on
        `Y` (`X` when `Y` is None) for "rbf" and "laplacian", ``1 / d`` for
        "polynomial" (see `median_heuristic`).
    gamma2 : float, default=1.0
        Positive parameter of the level-2 Gaussian kernel.
    kernel : {"rbf", "laplacian", "linear", "polynomial", "energy"}, default="rbf"
        Point kernel of the embedding, as in `sum_match_kernel`.
    degree : int, default=2
        Degree of the polynomial point kernel.
    coef0 : float, default=1.0
        Constant of the polynomial point kernel.
    workers : int, optional
        Threads; None or -1 means all cores, -2 all but one.
    progress : bool, default=False
        Show a progress bar (needs tqdm).
    {dtype}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (len(X), len(Y))
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    mmd, sum_match_kernel

    Notes
    -----
    The accuracy is that of MMD^2 (see `mmd`): an error e of MMD^2 leaves
    the result between ``exp(-gamma2 (MMD^2 + e))`` and ``exp(-gamma2
    (MMD^2 - e))``, which for linear or polynomial kernels of points far
    from the origin may be anywhere in [0, 1]: centre the points first. A
    `gamma2` so large that ``gamma2 * MMD^2`` overflows gives 0.

    *Weighted sets.* With point weights, MMD^2 is that of `mmd` between
    the weighted mean embeddings (weights normalised per set; a point of
    weight 0 counts as absent); ``gamma=None`` is the weighted median
    heuristic.

    {lazy} The within-set means of each block of sets are computed once, in
    a task of their own.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", eq. (8).
    .. [2] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning
       from Distributions via Support Measure Machines", NIPS 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import mmd_kernel
    >>> X = [np.array([[0.0], [1.0]]), np.array([[0.0], [2.0]])]
    >>> mmd_kernel(X, kernel="linear", gamma2=4.0).round(4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    lazy, X, Y, params = _check_common(X, Y, kernel, gamma, degree, coef0,
                                       gamma2=gamma2)
    gamma2 = _array_api.scalar_argument(
        lazy if isinstance(lazy, _array_api.ArrayLibrary) else None, gamma2,
        "gamma2", check_gamma2)
    return _run(_mmd, "mmd_kernel", X, Y, lazy, params, workers, progress,
                dtype, prepare=within, squared=True, unbiased=False,
                gamma2=gamma2)


@takes_hints("sets")
def median_heuristic(X, *, kernel="rbf", sample=MEDIAN_SAMPLE, rng=MEDIAN_SEED):
    r"""Kernel parameter from the median distance between points.

    .. math::

        \gamma = 1 / \operatorname{median}_{a < b} \|x_a - x_b\|^2
        \quad \text{("rbf")}, \qquad
        \gamma = 1 / \operatorname{median}_{a < b} \|x_a - x_b\|_1
        \quad \text{("laplacian")}

    over pairs of distinct points (indices, not values) of a sample of at most
    `sample` points, drawn without replacement. With this `gamma`, the kernel
    ``exp(-gamma ||x - y||^2)`` is ``exp(-1)`` at the median distance. (The
    other common convention, ``sigma`` = median distance in
    ``exp(-||x - y||^2 / (2 sigma^2))``, is half this value.) This is what
    ``gamma=None`` means throughout the package, on the training data
    (see the user guide, "Conventions").

    Parameters
    ----------
    X : array_like (n, d), or sequence of array_like (n_i, d), or Bags
        Points: the rows of a 2-D array, or the pooled points of all sets.
        A `Bags` with point weights gives the weighted rule (see Notes).
    kernel : {"rbf", "laplacian"}, default="rbf"
        The kernel whose distance is taken: squared Euclidean, or L1.
    sample : int or None, default=1000
        Number of points to draw (at least 2); None uses all points, with
        ``O(n^2)`` memory.
    rng : int, numpy.random.Generator or None, default=0
        Seed or generator for the sample; the fixed default seed gives the
        same value on every call, None a fresh sample each time. Unused
        when every point is taken.

    Returns
    -------
    gamma : float

    Raises
    ------
    ValueError
        If there are fewer than 2 points, or the median distance is 0 (more
        than half of the sampled pairs coincide).

    Notes
    -----
    *Weighted sets.* For a `Bags` with point weights, the points of weight
    0 are left out, the sample is drawn among the others as without
    weights (uniformly: the weights are not normalised, and not used to
    draw), and the median is the weighted median of the distances between
    the pairs of distinct sampled points, pair ``(a, b)`` weighing
    ``w_a w_b``: the smallest distance at which the cumulative weight of
    the pairs, in ascending order of distance, reaches half of the total
    (where it is exactly half, the mean of that distance and the next).
    Equal weights give the unweighted value, and so does a constant factor
    on all the weights (up to the rounding of the half-way comparison).
    Sampling in proportion to the weights was not chosen: without
    replacement it does not sample the weighted distribution, and a heavy
    point would count once. Unlike the kernels, a pair of copies of one
    point (an integer weight) is not counted: integer weights are not
    exactly repeated points here.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 5 ("median trick").
    .. [2] A. Gretton, K. Borgwardt, M. Rasch, B. Schoelkopf and A. Smola,
       "A Kernel Two-Sample Test", Journal of Machine Learning Research 13,
       2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import median_heuristic
    >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))  # pairs: 1, 9, 4
    0.25
    >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]), kernel="laplacian")
    0.5

    Weights: the pair (0, 3), of weight 3 * 3 = 9, outweighs the others (of
    weight 3 each) together; its squared distance 9 is the median.

    >>> from kernelmaps import Bags
    >>> median_heuristic(Bags.from_list([np.array([[0.0], [1.0], [3.0]])],
    ...                                 weights=[[3.0, 1.0, 3.0]]))
    0.1111111111111111
    """
    kernel = check_choice(kernel, "kernel", ("rbf", "laplacian"))
    library = _array_api.library_of_objects(X=X)
    if library is not None and library.native:
        # (checked there; only the sampled points come to the host)
        X = _array_sets.stacked_rows(library, X)
        X = (_array_api.check_rows(library, X, "X")
             if _array_api.is_foreign(X) and X.ndim == 2
             else _array_sets.check_array_sets(library, X, "X", weighted=True))
    elif library is not None:
        X = _array_api.numpy_objects(library, X)
    return point_median_gamma(X, kernel=kernel, sample=sample, rng=rng)


def _check_common(X, Y, kernel, gamma, degree, coef0, min_size=1, gamma2=None):
    """Validate what the set kernels share; returns the input's mode (True:
    lazy, False: in memory, or the `_array_api.ArrayLibrary` of sets of
    another library), the sets (Bags, or `_array_sets.ArraySets` where the
    library computes) and a dict of kernel parameters (gamma checked, None
    left for `_resolve_gamma`). Bags of Dask points stay lazy (their values
    are checked in the tasks). Weighted sets are taken in memory
    (`check_set_pair` refuses them lazy or beside lazy sets)."""
    library = _array_api.library_of_objects(X=X, Y=Y)
    if library is not None:  # (a scale that asks for a gradient: computed by
        # the library)
        library = _array_api.library_of_objects(X=X, Y=Y, **{
            name: a for name, a in (("gamma", gamma), ("gamma2", gamma2))
            if _array_api.is_foreign(a)})
    if _array_api.is_foreign(gamma):  # (a 0-D array of the objects' library:
        # kept where it computes)
        params = point_params(kernel, None, degree, coef0)
        params["gamma"] = _array_api.scalar_argument(
            library, gamma, "gamma",
            lambda g: point_params(kernel, g, degree, coef0)["gamma"])
    else:
        params = point_params(kernel, gamma, degree, coef0)
    if library is not None and library.native:
        return library, *_array_sets.check_array_set_pair(
            library, X, Y, min_size, weighted=True), params
    if library is not None:  # the compiled engine, on NumPy views
        X, Y = (_array_api.numpy_objects(library, S) for S in (X, Y))
    lazy = library is None and is_lazy(X, Y)
    X, Y = check_set_pair(X, Y, min_size=min_size, lazy=lazy, weighted=True)
    return library or lazy, X, Y, params


def point_params(kernel="rbf", gamma=None, degree=2, coef0=1.0):
    """The point kernel's parameters of the set kernels, checked (gamma
    None left for `_resolve_gamma`): what their functions and specs
    check."""
    kernel = check_choice(kernel, "kernel", _KERNELS)
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma", low=0, low_inclusive=False)
    # The engine takes a C int; larger degrees overflow any data but 0 and 1.
    degree = check_scalar(degree, "degree", kind="int", low=1, high=2**31 - 1)
    coef0 = check_scalar(coef0, "coef0")
    return {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}


def check_gamma2(gamma2):
    """The MMD kernel's scale, checked."""
    return check_scalar(gamma2, "gamma2", low=0, low_inclusive=False)


def _run(core, name, X, Y, lazy, params, workers, progress, dtype, prepare=None,
         **options):
    """The end of the function `name` of checked sets X and Y (None: X):
    `workers`, `progress` and `dtype` checked, gamma resolved, then its
    `core` (`_sum_match`, `_mmd`) with `options`, in memory, or, `lazy`,
    a lazy Dask array of blocks each computed by it (`lazy_gram`), with
    `prepare` (`within`, for `_mmd`: the within-set means) run once per
    block of sets."""
    n_threads = resolve_workers(workers)
    check_progress(progress)
    library = None if isinstance(lazy, bool) else lazy
    if library is not None and library.native:
        return _array_sets.run(name, X, Y, library, _resolve_gamma(
            params, X, Y), _array_api.result_dtype(library, dtype, X, Y), **options)
    out = check_dtype(library.numpy_dtype(dtype) if library else dtype, X, Y)
    params = _resolve_gamma(params, X, Y)
    if library is not None:
        return library.from_numpy(core(X, Y, params=params, symmetric=Y is None,
                                       out=out, n_threads=n_threads,
                                       progress=progress, **options))
    if lazy:
        if prepare is not None:
            prepare = functools.partial(prepare, params=params,
                                        unbiased=options["unbiased"])
        return lazy_gram(functools.partial(
            core, params=params, symmetric=Y is None, out=out, warn=False,
            **options), X, Y, dtype=out, workers=workers, name=name,
            prepare=prepare)
    return core(X, Y, params=params, symmetric=Y is None, out=out,
                n_threads=n_threads, progress=progress, **options)


def _resolve_gamma(params, X, Y):
    """`params` with gamma=None resolved (`resolve_gamma` on Y, or X when Y
    is None): after every other check, since on lazy sets it computes the
    sampled points."""
    reference = X if Y is None else Y
    if _array_api.is_foreign(params["gamma"]):  # (checked, see _check_common)
        return params
    gamma = resolve_gamma(params["gamma"], params["kernel"], reference,
                          data="X" if Y is None else "Y")
    return {**params, "gamma": gamma}


def _sum_match(X, Y, *, params, normalize, symmetric, n_threads, progress=False,
               out, warn=True):
    """`sum_match_kernel` of validated X and Y (None: X) as `out`;
    `symmetric` (Y None in the whole call) names the inputs in errors."""
    K, warned = _pair_kernel_sums(X, Y, params, n_threads, progress,
                                  normalize=normalize, warn=warn)
    if params["kernel"] not in ("rbf", "laplacian"):
        # (rbf, laplacian: sums of values in [0, 1] of finite points: finite)
        _check_finite(K, params, symmetric)
    if warn and not warned and (normalize or not _weighted(X, Y)):
        # (weighted sums: equal only for equal total weights, and 0 where
        # the pairs' weights underflow)
        warn_uninformative(K, symmetric, "mean map",
                           "sets of X" if symmetric else "sets of X and Y")
    return cast_output(K, out, "X" if symmetric else "X and Y")


def _weighted(X, Y):
    """Whether X or Y (None) is a weighted Bags."""
    return X.weights is not None or (Y is not None and Y.weights is not None)


def _level2(D2, gamma2):
    """The MMD kernel ``exp(-gamma2 * D2)`` of the squared MMDs `D2`."""
    # In place, a block of rows at a time (Ctrl-C stops between two).
    with np.errstate(over="ignore"):  # gamma2 * D2 beyond float64: exp(-inf) = 0
        for a, b in row_blocks(D2):
            np.exp(-gamma2 * D2[a:b], out=D2[a:b])
    return D2


def _pair_kernel_sums(X, Y, params, n_threads, progress, normalize=False,
                      warn=True):
    """The mean map kernel between the sets of X and Y (None: X, the
    symmetric block; the engine's `pair_sums`, sums without `normalize`),
    float64, and whether it issued
    a `DegenerateWarning`, as it does where the point kernel is the identity
    or a constant on the data (with `warn`; a block of a lazy kernel does
    not warn: the values of one block say nothing about the whole
    matrix)."""
    K = pair_sums(X, Y, **params, n_threads=n_threads, progress=progress,
                  normalize=normalize)
    if not normalize and _weighted(X, Y):
        names = "X" if Y is None else "X and Y"
        check_finite_output(K, f"the weighted sums of the kernel values of "
                               f"{names} overflow float64; scale the weights "
                               f"of {names} down (or normalize=True)")
    if warn and params["kernel"] in ("rbf", "laplacian"):
        # (weighted sums: the pairs' total weights, which may overflow)
        with np.errstate(over="ignore", invalid="ignore"):
            pairs = None if normalize else (
                X.set_weights(), (X if Y is None else Y).set_weights())
            kind = degenerate(K, Y is None, pairs)
        if kind is not None:
            warn_degenerate(degenerate_message(
                kind, params["kernel"], params["gamma"],
                "points of different sets",
                kind == "one" and _all_equal(X, Y)))
            return K, True
    return K, False


def _all_equal(X, Y):
    """Whether the points of X and Y (None: X) are all one point."""
    first = X.points[:1]
    return all(np.array_equal(np.broadcast_to(first, b.points.shape), b.points)
               for b in (X, X if Y is None else Y))


def _point_kernel_diagonal_sums(X, params):
    """Sum of k(x, x) over the points of each set."""
    kernel = params["kernel"]
    if kernel in ("rbf", "laplacian"):
        return X.sizes.astype(np.float64)
    if kernel == "energy":  # k(x, x) = ||x||, at a power-of-two scale
        e = power_of_two_exponent(max_abs(X.points))
        unit = np.ldexp(X.points.astype(np.float64), e)
        return np.ldexp(np.add.reduceat(np.sqrt(np.einsum(
            "ij,ij->i", unit, unit)), X.offsets[:-1]), -e)
    with np.errstate(over="ignore"):  # overflow is reported by _check_finite
        norms = np.square(X.points, dtype=np.float64).sum(axis=1)
        if kernel == "polynomial":
            norms = (params["gamma"] * norms + params["coef0"]) ** params["degree"]
    return np.add.reduceat(norms, X.offsets[:-1])


def within(bags, params, n_threads, unbiased=False, diagonal=None):
    """The within-set means of the kernel values of each set of `bags`,
    float64 (`diagonal`, when known: the diagonal of their mean map
    kernel; else the engine's `self_sums`, a fraction of the cost of
    `pair_sums`), with `unbiased` over the pairs of distinct points."""
    sizes = bags.sizes.astype(np.float64)
    # Means (and so D2) that overflow are reported by _check_finite in
    # mmd_squared, naming the inputs: no warning here.
    with np.errstate(over="ignore", invalid="ignore"):
        if diagonal is None and bags.weights is not None:
            # (normalised by the engine: no rescaling)
            diagonal = self_sums(bags, **params, n_threads=n_threads,
                                 normalize=True)
        elif diagonal is None:
            diagonal = self_sums(bags, **params, n_threads=n_threads) / sizes**2
        if not unbiased:
            return diagonal
        # Leave out the pairs (a, a): sum over a != b, divided by n (n - 1).
        total = diagonal * sizes**2
        return (total - _point_kernel_diagonal_sums(bags, params)) / (
            sizes * (sizes - 1)
        )


def mmd_squared(K, X, Y, params, n_threads, unbiased=False, kx=None, ky=None,
                symmetric=None):
    """MMD^2 between the sets of X and Y (None: X, the symmetric block, its
    diagonal 0) from K, their mean map kernel (made MMD^2 in place), as
    `mmd` computes it: at least 0 unless `unbiased`; `kx`, `ky`: the
    within-set means of X and Y (`within`), when known (ky None: kx); a
    ValueError naming X (`symmetric`: Y None in the whole call, default Y
    None) or X and Y where a value overflowed float64."""
    symmetric = Y is None if symmetric is None else symmetric
    _check_finite(K, params, symmetric)
    if kx is None:
        kx = within(X, params, n_threads, unbiased,
                    np.diag(K).copy() if Y is None else None)
    if Y is None:
        ky = kx
    elif ky is None:
        ky = within(Y, params, n_threads, unbiased)
    # D2 = kx[i] + ky[j] - 2 K[i, j] (at least 0 where biased), in place of
    # K, a block of rows at a time (whole-array passes held Ctrl-C for
    # seconds at 20,000 sets).
    D2 = K
    with np.errstate(over="ignore", invalid="ignore"):
        for a, b in row_blocks(D2):
            twice = 2 * K[a:b]
            np.add.outer(kx[a:b], ky, out=D2[a:b])
            D2[a:b] -= twice
            if not unbiased:
                np.maximum(D2[a:b], 0.0, out=D2[a:b])
    if Y is None:
        np.fill_diagonal(D2, 0.0)
    return _check_finite(D2, params, symmetric)


def _mmd(X, Y, kx=None, ky=None, *, params, squared, unbiased, gamma2,
         n_threads, progress=False, out, symmetric=None, warn=True):
    """`mmd` (`gamma2` None) or `mmd_kernel` between the sets of validated
    X and Y (None: X) as `out` (`mmd_squared`, of `kx`, `ky` and
    `symmetric`); with `warn`, the `DegenerateWarning` of the point kernel
    or the MMD kernel."""
    symmetric = Y is None if symmetric is None else symmetric
    names = "X" if symmetric else "X and Y"
    K, warned = _pair_kernel_sums(X, Y, params, n_threads, progress,
                                  normalize=_weighted(X, Y), warn=warn)
    if not _weighted(X, Y):  # (weighted: the engine's normalised sums)
        K = pair_means(K, X, Y)
    if Y is not None:  # (the within-set means from here: depth 6)
        kx = within(X, params, n_threads, unbiased) if kx is None else kx
        ky = within(Y, params, n_threads, unbiased) if ky is None else ky
    D2 = mmd_squared(K, X, Y, params, n_threads, unbiased, kx, ky, symmetric)
    if not squared:
        for a, b in row_blocks(D2):
            np.sqrt(D2[a:b], out=D2[a:b])
    if gamma2 is not None:
        equal = warn and not D2.any()  # (read before D2 becomes the kernel)
        D2 = _level2(D2, gamma2)
        if warn and not warned:  # (a point kernel 1 everywhere: warned of)
            warn_uninformative(D2, symmetric, "MMD", f"sets of {names}",
                               gamma2, equal)
    return cast_output(D2, out, names)


# Dask input, for the Notes of the three kernels.
_LAZY_DOC = """*Dask input.* `X` or `Y` given as a `Bags` whose points are a Dask
    array (or a 3-D Dask array of sets of equal size) gives a lazy Dask
    array, computed in blocks of sets by the same code as in memory (equal
    up to rounding: the sums of a pair of sets are grouped in other
    tiles): the blocks follow the row chunks of the points, moved to set
    boundaries and split where one task would need more than the
    working-memory budget (`set_config`, read when the graph is built);
    one task per pair of blocks, and for ``Y=None`` one per unordered pair
    (the block below the diagonal is the transpose of the one above). The
    points' values are checked in the tasks, with the errors of the
    in-memory call; ``gamma=None`` first computes the points the median
    heuristic samples (the same as in memory); `progress` is ignored (use
    Dask's diagnostics), and `workers` is the threads of each task (1 by
    default). No `DegenerateWarning` is given."""

fill_docs((sum_match_kernel, mmd, mmd_kernel), dtype=DTYPE_DOC, lazy=_LAZY_DOC)


def _check_finite(K, params, symmetric):
    """K, or a ValueError naming the inputs (X, or X and Y) where their
    kernel values (or the MMD made of them) overflow float64."""
    names = "X" if symmetric else "X and Y"
    return check_finite_output(
        K,
        f"the {params['kernel']} kernel values of {names} overflow float64; "
        f"scale {names} down or use smaller gamma/coef0",
    )

