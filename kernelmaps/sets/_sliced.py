"""Sliced-Wasserstein distances between sets, their Gaussian kernel, and
the quantile feature map whose distances approximate them."""

import functools
import math

import numpy as np

from .. import _array_api
from .._bags import Bags
from .._base import FeatureMap
from .._config import working_memory_bytes
from .._draws import DIRECTION_DRAWS, draw_directions
from .._engine.layout import max_abs, power_of_two_exponent, row_blocks, scaled
from .._engine.scales import divergence_kernel_values, median_scale
from .._engine.sliced import (
    quantile_edges,
    quantile_means,
    sliced_means,
    sliced_power_means,
)
from .._hints import takes_hints
from .._lazy import is_lazy, lazy_gram
from .._parallel import check_progress, resolve_workers
from .._spec import kernel_function, spec_for
from .._transforms import blocked_sets
from .._validation import (
    DTYPE_DOC,
    cast_output,
    check_choice,
    check_dtype,
    check_finite_output,
    check_rng,
    check_scalar,
    check_set_pair,
    check_sets,
    check_size,
    fill_docs,
    pair_names,
)
from . import _array_sets

__all__ = ["SlicedWassersteinFeatures", "sliced_directions",
           "sliced_wasserstein", "sliced_wasserstein_kernel"]

_REFERENCES = """.. [1] N. Bonneel, J. Rabin, G. Peyre and H. Pfister, "Sliced and
       Radon Wasserstein Barycenters of Measures", Journal of Mathematical
       Imaging and Vision 51, 2015.
    .. [2] S. Kolouri, Y. Zou and G. K. Rohde, "Sliced Wasserstein Kernels
       for Probability Distributions", IEEE Conference on Computer Vision
       and Pattern Recognition (CVPR), 2016.
    .. [3] M. Carriere, M. Cuturi and S. Oudot, "Sliced Wasserstein Kernel
       for Persistence Diagrams", International Conference on Machine
       Learning (ICML), 2017.
    .. [4] D. Meunier, M. Pontil and C. Ciliberto, "Distribution Regression
       with Sliced Wasserstein Kernels", International Conference on
       Machine Learning (ICML), 2022."""

_PROJECTIONS_DOC = """n_projections : int, default=100
        Number L of random directions (ignored when `projections` is
        given).
    projections : array_like of shape (L, d), optional
        The directions, as rows (POT's ``projections`` is its transpose,
        (d, L)): finite and nonzero; each row is divided by its norm, so
        only its direction counts. None draws `n_projections` of them by
        `draw` from `rng`.
    draw : {"iid", "orthogonal", "qmc"}, default="iid"
        How the directions are drawn, each uniform on the unit sphere:
        independently (normalised Gaussian vectors), in blocks of d
        orthonormal directions (Yu et al.'s orthogonal draw, as
        `RandomFourierFeatures` ``draw="orthogonal"``), or from scrambled
        Sobol points through the normal quantile, normalised.
    rng : int or numpy.random.Generator, optional
        Seed or generator of the directions; None: fresh entropy."""


def _check_projections(projections, dim, name="projections"):
    """`projections` (L, dim) as float64 unit rows, or a ValueError or
    TypeError naming it."""
    try:
        P = np.asarray(projections)
    except Exception as exc:  # ragged lists, objects
        raise TypeError(f"{name} must be a 2-D array of numbers") from exc
    if P.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {P.dtype}")
    P = P.astype(np.float64)
    if P.ndim != 2 or P.shape[1] != dim or P.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n_projections, {dim}) (one "
                         f"direction per row, at least one), got shape "
                         f"{P.shape}")
    if not np.isfinite(P).all():
        raise ValueError(f"{name} contains NaN or infinity")
    top = np.abs(P).max(axis=1, keepdims=True)
    if not (top > 0).all():
        raise ValueError(f"{name}[{int(np.flatnonzero(top[:, 0] == 0)[0])}] "
                         f"is zero: every direction must be nonzero")
    unit = P / top  # no overflow or underflow in the norms
    return unit / np.sqrt(np.einsum("ij,ij->i", unit, unit))[:, None]


def kernel_params(gamma=None, n_projections=100, projections=None, draw="iid"):
    """The parameters of `sliced_wasserstein_kernel`, checked as far as
    they can be without the points (the directions against their
    dimension: `sliced_directions`)."""
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
    draw = check_choice(draw, "draw", DIRECTION_DRAWS)
    if projections is None:
        n_projections = check_scalar(n_projections, "n_projections",
                                     kind="int", low=1)
    return {"gamma": gamma, "n_projections": n_projections,
            "projections": projections, "draw": draw}


@takes_hints()
def sliced_directions(dim, n_projections, projections, draw, rng):
    """The unit directions of the sliced-Wasserstein tools.

    Parameters
    ----------
    dim : int
        Dimension d >= 1 of the points.
    n_projections : int
        Number L >= 1 of directions to draw (ignored when `projections`
        is given).
    projections : array_like of shape (L, dim), or None
        Given directions (finite, nonzero rows, normalised here), or None.
    draw : {"iid", "orthogonal", "qmc"}
        How the directions are drawn (see `sliced_wasserstein`).
    rng : int or numpy.random.Generator, or None
        Seed or generator of the draw.

    Returns
    -------
    directions : ndarray of shape (L, dim)
        Unit rows, float64.
    record : DirectionDraw or None
        The draw's recipe (it replays the directions), None for given
        ones.
    """
    dim = check_scalar(dim, "dim", kind="int", low=1)
    draw = check_choice(draw, "draw", DIRECTION_DRAWS)
    if projections is not None:
        return _check_projections(projections, dim), None
    n = check_scalar(n_projections, "n_projections", kind="int", low=1)
    # the draw holds the directions three times (Gaussian, norms, unit)
    check_size(n_projections=n, dim=dim, copies=3)
    return draw_directions(dim, n, draw, check_rng(rng))


def _scaled_bags(bags, e):
    """`bags` with its points times 2**e (weights kept)."""
    if e == 0:
        return bags
    return Bags._trusted(scaled(bags.points, e, bags.points.dtype),
                         bags.offsets, bags.weights)


def _centre(*bags):
    """The middle of the bounding box of the points of `bags` (float64):
    the sliced-Wasserstein distance is invariant to a translation of both
    sets, and points far from the origin lose fewer digits centred."""
    low = np.min([b.points.min(axis=0) for b in bags], axis=0)
    high = np.max([b.points.max(axis=0) for b in bags], axis=0)
    return low.astype(np.float64) / 2 + high.astype(np.float64) / 2


def _centred(X, Y):
    """X and Y (None: X) centred (`_centre`) and scaled by 2**e so that
    every projected difference is at most 1 (nothing overflows, whatever
    p), in their dtype, and e."""
    centre = _centre(X, *(() if Y is None else (Y,)))
    # in float64, where |x - centre| never overflows: one new array each
    cx = np.subtract(X.points, centre, dtype=np.float64)
    cy = None if Y is None else np.subtract(Y.points, centre, dtype=np.float64)
    e = power_of_two_exponent(max_abs(cx, cy))
    # |<x - y, theta>| <= 2 sqrt(d) max|x|: one more power of two for it
    e -= math.ceil(math.log2(2 * math.sqrt(X.dim)))
    Xs = Bags._trusted(_scaled_copy(cx, e, X.points.dtype), X.offsets,
                       X.weights)
    Ys = None if Y is None else Bags._trusted(
        _scaled_copy(cy, e, Y.points.dtype), Y.offsets, Y.weights)
    return Xs, Ys, e


def _scaled_copy(a, e, dtype):
    """The float64 copy `a` times 2**e as `dtype`: in place in float64."""
    return scaled(a, e, dtype, out=a if a.dtype == dtype else None)


@takes_hints("pair")
def sliced_wasserstein(X, Y=None, *, n_projections=100, p=2, projections=None,
                       draw="iid", rng=None, workers=None, progress=False,
                       dtype=None):
    r"""Sliced-Wasserstein distances between sets of points.

    .. math::

        SW_p(A, B) = \Big(\frac{1}{L} \sum_{l=1}^{L}
        W_p^p(\theta_l \# A, \theta_l \# B)\Big)^{1/p}, \qquad
        W_p^p(\mu, \nu) = \int_0^1 |F_\mu^{-1}(t) - F_\nu^{-1}(t)|^p\,dt

    the mean, over L unit directions :math:`\theta_l`, of the p-Wasserstein
    cost between the projections of the sets on them (1-D distributions
    with quantile functions :math:`F^{-1}`), as POT's
    ``ot.sliced_wasserstein_distance`` [1]_.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of points; a `Bags` with point weights gives weighted sets
        (each set's weights normalised to sum to 1; unweighted points weigh
        the same). A `Bags` of Dask points (or a 3-D Dask array) gives a
        lazy Dask array (see Notes).
    Y : sequence of array_like (m_j, d), or Bags, optional
        None means `X` (symmetric result, zero diagonal, each pair
        computed once).
    {projections}
    p : float, default=2
        Order p > 0 of the Wasserstein cost: any positive float (p = 1 and
        2 are the fastest; see Notes for the others).
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
    sliced_wasserstein_kernel : Its Gaussian kernel.
    SlicedWassersteinFeatures : Features whose distances approximate it.

    Notes
    -----
    The points of every set are projected on each direction once (a BLAS
    product, a block of directions at a time within the working-memory
    budget of `set_config`; in blocks of rows where one product would take
    more than a fraction of a second, so that Ctrl-C stops it, which
    rounds a few projections otherwise), sorted once per set and
    direction, and every
    pair of sets costs one merge of their two step quantile functions per
    direction, O(n_i + m_j), in compiled code on `workers` threads. Two
    unweighted sets step at the same levels i / n_i and j / m_j along
    every direction: their merge is walked once, each step a vectorised
    sum over the directions (equal sizes pair their sorted values
    directly). Weighted sets step where their cumulative weights do,
    direction by direction: their merges (four directions interleaved)
    cost several times more.
    Costs are summed in float64; float32 points are projected with
    float64 sums, rounded once to float32 (equal points give equal
    projections, whatever the BLAS), and sorted in float32 (the
    projections hold about 7 digits).

    The distance is positively homogeneous: the points are scaled by a
    power of two (exact) before the projection, so that no cost overflows
    or underflows needlessly, and the result is scaled back: points near
    1e-150 or 1e150 give the scaled result. The result does not depend on
    `workers`, bit for bit.

    *Other p.* At p other than 1 and 2, the merges of each pair are walked
    twice: once for the largest projected difference M of the pair (over
    the levels of positive length and all the directions), once for the
    powers of t = difference / M, in [0, 1], which neither overflow nor,
    at large p, underflow to 0 where it matters (the levels at M weigh
    their length): :math:`SW_p = M\,(\text{mean of } t^p)^{1/p}`. As p
    tends to 0 the mean of :math:`t^p` tends to 1 and :math:`SW_p` to the
    geometric mean of the differences (0 where some are 0), so for p < 1
    the mean of :math:`(t^p - 1) / p` is summed too, in a form without
    cancellation (:math:`\log t \cdot \mathrm{expm1}(x) / x`, x = p log t),
    and :math:`SW_p = M \exp(\mathrm{log1p}(p V) / p)`, V that mean (where
    the mean of :math:`t^p` is at least 1/2; below, from its own
    logarithm); as p grows :math:`SW_p` tends to M. Every p > 0 is so computed to about
    1e-13 relatively (the tests check 1e-12 against extended precision, p
    from 1e-17 to 1e4). Each step of a merge then costs a ``pow`` (p > 1) or
    a logarithm and an exponential (p < 1) per direction: on sets of about
    100 points, 10 to 15 times the time of p = 2 (unweighted) or 10 times
    (weighted).

    {lazy}

    References
    ----------
    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import sliced_wasserstein
    >>> A = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> sets = [A, A + [3.0, 4.0]]  # a translation by 5: SW_2^2 about 25 / 2
    >>> sliced_wasserstein(sets, rng=0).round(6)
    array([[0.      , 3.571924],
           [3.571924, 0.      ]])
    >>> sliced_wasserstein(sets, projections=[[0.6, 0.8]])  # along it
    array([[0., 5.],
           [5., 0.]])
    """
    library = _array_api.library_of_objects(X=X, Y=Y)
    if library is not None:
        return _array_distances(library, X, Y, n_projections, p, projections, draw,
                                rng, workers, progress, dtype)
    lazy = is_lazy(X, Y)
    X, Y = check_set_pair(X, Y, lazy=lazy, weighted=True)
    p = check_scalar(p, "p", low=0.0, low_inclusive=False)
    n_threads = resolve_workers(workers)
    check_progress(progress)
    out = check_dtype(dtype, X, Y)
    directions, _ = sliced_directions(X.dim, n_projections, projections, draw, rng)
    if lazy:
        return lazy_gram(functools.partial(
            _distances, directions=directions, p=p, names=pair_names(Y),
            progress=False, out=out), X, Y, dtype=out, workers=workers,
            name="sliced_wasserstein")
    return _distances(X, Y, directions, p, pair_names(Y), n_threads, progress,
                      out)


def _array_distances(library, X, Y, n_projections, p, projections, draw, rng,
                     workers, progress, dtype):
    """`sliced_wasserstein` of sets of `library` (`kernelmaps._array_api`):
    through NumPy, or (`library.native`) by the library on their device
    (`_array_sets.sliced_wasserstein`, the directions drawn as for NumPy),
    the result in the library."""
    if not library.native:
        return library.from_numpy(sliced_wasserstein(
            *(_array_api.numpy_objects(library, S) for S in (X, Y)),
            n_projections=n_projections, p=p, projections=projections, draw=draw,
            rng=rng, workers=workers, progress=progress,
            dtype=library.numpy_dtype(dtype)))
    X, Y = _array_sets.check_array_set_pair(library, X, Y, weighted=True)
    p = check_scalar(p, "p", low=0.0, low_inclusive=False)
    resolve_workers(workers)
    check_progress(progress)
    out = _array_api.result_dtype(library, dtype, X, Y)
    directions, _ = sliced_directions(X.dim, n_projections, projections, draw, rng)
    return _array_sets.sliced_wasserstein(library, X, Y, directions, p, out)


def _distances(X, Y, directions, p, names, n_threads, progress, out):
    """`sliced_wasserstein` of validated sets X and Y (None: X) as `out`;
    `names` names the inputs in errors."""
    Xs, Ys, e = _centred(X, Y)
    # p = 1, 2, the common case: the costs summed as they are; else each
    # pair's differences over their largest (no underflow)
    means = sliced_means if p in (1.0, 2.0) else sliced_power_means
    D = means(Xs, Ys, directions, p, n_threads, working_memory_bytes(),
              progress)
    power = 1.0 / p if p in (1.0, 2.0) else 1.0
    with np.errstate(over="ignore", under="ignore"):
        for a, b in row_blocks(D):  # in place (Ctrl-C stops between two)
            D[a:b] = np.ldexp(D[a:b] ** power, -e)
    D = check_finite_output(D, f"the sliced-Wasserstein distances between the "
                               f"sets of {names} overflow float64")
    return cast_output(D, out, names)


@kernel_function("sliced_wasserstein")
@takes_hints("pair")
def sliced_wasserstein_kernel(X, Y=None, *, gamma=None, n_projections=100,
                              projections=None, draw="iid", rng=None,
                              workers=None, progress=False, dtype=None):
    r"""The sliced-Wasserstein kernel: a Gaussian kernel of the
    sliced-Wasserstein distance.

    .. math::

        K(X_i, Y_j) = \exp(-\gamma\, SW_2^2(X_i, Y_j))

    positive definite for every gamma > 0 ([2]_: SW_2 is a Hilbert
    distance, that of the quantile functions), with a unit diagonal.

    Parameters
    ----------
    X : sequence of array_like (n_i, d), or Bags
        Sets of points, weighted or not (as in `sliced_wasserstein`); a
        `Bags` of Dask points gives a lazy Dask array (`gamma` then
        needed).
    Y : sequence of array_like (m_j, d), or Bags, optional
        None means `X` (symmetric result).
    gamma : float, optional
        Positive scale; None means ``1 / median`` of the off-diagonal
        :math:`SW_2^2` between the sets of `Y` (`X` when `Y` is None), the
        rule of the kernels of divergences (`divergence_kernel`), computed
        with the same directions.
    {projections}
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
    sliced_wasserstein : The distances.
    SlicedWassersteinFeatures : Features whose distances approximate
        :math:`SW_2`; random Fourier features of them approximate this
        kernel.

    Notes
    -----
    With `gamma` None and `Y` given, the distances between the sets of `Y`
    are computed too (a second matrix). The kernel is computed from
    :math:`SW_2^2` at the scale of the points times a power of two and the
    scale folded into gamma: exact at any magnitude of the points and of
    gamma.

    {lazy} With lazy sets `gamma` must be given: its median rule needs
    every distance at once.

    References
    ----------
    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import sliced_wasserstein_kernel
    >>> A = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> sets = [A, A + [3.0, 4.0]]
    >>> sliced_wasserstein_kernel(sets, gamma=0.04,
    ...                           projections=[[0.6, 0.8]]).round(4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    library = _array_api.library_of_objects(X=X, Y=Y)
    if library is not None:
        return _array_kernel(library, X, Y, gamma, n_projections, projections,
                             draw, rng, workers, progress, dtype)
    lazy = is_lazy(X, Y)
    X, Y = check_set_pair(X, Y, lazy=lazy, weighted=True)
    spec = spec_for("sliced_wasserstein", {
        "gamma": gamma, "n_projections": n_projections,
        "projections": projections, "draw": draw})
    if spec.params["gamma"] is None and lazy:
        raise ValueError(
            "gamma=None needs the distances between all the sets of "
            f"{'X' if Y is None else 'Y'} in memory, which lazy Dask sets are "
            "not: give gamma (for instance 1 / the median of "
            "sliced_wasserstein(sample) ** 2, off the diagonal, for a sample "
            "of sets computed in memory)")
    n_threads = resolve_workers(workers)
    check_progress(progress)
    out = check_dtype(dtype, X, Y)
    spec.rng = rng
    spec.directions(X.dim)
    if lazy:
        return lazy_gram(functools.partial(_kernel, spec=spec, out=out), X, Y,
                         dtype=out, workers=workers,
                         name="sliced_wasserstein_kernel")
    return _kernel(X, Y, spec, n_threads, progress, out=out, warn=True)


def _array_kernel(library, X, Y, gamma, n_projections, projections, draw, rng,
                  workers, progress, dtype):
    """`sliced_wasserstein_kernel` of sets of `library`: through NumPy, or
    (`library.native`) by the library on their device from
    `_array_sets.sliced_wasserstein` (the directions drawn as for NumPy),
    the result in the library. gamma None takes the median rule on the
    host values of the distances (a constant to the gradient; a
    ValueError where they cannot be read, under ``jax.jit``)."""
    if not library.native:
        return library.from_numpy(sliced_wasserstein_kernel(
            *(_array_api.numpy_objects(library, S) for S in (X, Y)), gamma=gamma,
            n_projections=n_projections, projections=projections, draw=draw,
            rng=rng, workers=workers, progress=progress,
            dtype=library.numpy_dtype(dtype)))
    X, Y = _array_sets.check_array_set_pair(library, X, Y, weighted=True)
    params = kernel_params(gamma, n_projections, projections, draw)
    resolve_workers(workers)
    check_progress(progress)
    out = _array_api.result_dtype(library, dtype, X, Y)
    directions, _ = sliced_directions(X.dim, params["n_projections"], projections,
                                      draw, rng)
    # the distances D times 2**e (of points near 1), and gamma SW_2^2 as
    # T^2, T = sqrt(gamma) D: no overflow nor underflow before the square
    D, e = _array_sets.sliced_wasserstein(library, X, Y, directions, 2.0, X.dtype,
                                          scaled=True)
    if params["gamma"] is not None:
        T = _times(D, math.sqrt(params["gamma"]), -e)
    else:  # 1 / the median of SW_2^2 of Y (X), in their units, 2**(2 e_B)
        DB, eB = (D, e) if Y is None else _array_sets.sliced_wasserstein(
            library, Y, None, directions, 2.0, Y.dtype, scaled=True)
        SB = library.to_numpy(DB).astype(np.float64) ** 2
        T = _times(D, 1.0, -e)  # (none positive: gamma 1)
        if np.any(SB[~np.eye(len(SB), dtype=bool)] > 0):
            T = _times(D, 1 / math.sqrt(median_scale(SB)), eB - e)
    xp = library.xp
    K = xp.exp(-(T * T))
    _array_api.warn_uninformative(  # (the NumPy path's `_kernel`)
        library, K, Y is None, "sliced-Wasserstein", f"sets of {pair_names(Y)}",
        params["gamma"], lambda: not library.holds(xp.any(D != 0)))
    return xp.astype(K, out, copy=False)


def _times(D, factor, e):
    """The array D times the float `factor` times ``2**e``: D times the
    mantissa of `factor`, then its exponent and e as powers of two (no
    factor beyond the range of D's dtype: 0 stays 0)."""
    mantissa, exponent = math.frexp(factor)
    return _array_api.times_power_of_two(D * mantissa, exponent + e)


def _kernel(X, Y, spec, n_threads, progress=False, *, out, warn=False):
    """`sliced_wasserstein_kernel` of validated sets X and Y (None: X), its
    `spec`'s kernel (`SlicedWassersteinSpec.kernel`), as `out`; with
    `warn`, its `DegenerateWarning`."""
    names = pair_names(Y)
    K = spec.kernel(X, Y, spec.params["gamma"], n_threads, progress,
                    f"sets of {names}" if warn else None)[0]
    return cast_output(K, out, names)


def _kernel_values(S, units, gamma):
    """``exp(-gamma SW_2^2)`` from S, SW_2^2 times ``2**units``."""
    try:
        g = math.ldexp(gamma, -units)
    except OverflowError:
        g = math.inf
    if _TINY <= g < math.inf:
        return divergence_kernel_values(S, 1.0, gamma=g)
    return divergence_kernel_values(
        S, 1.0, log_gamma=math.log(gamma) - units * math.log(2.0))


_TINY = np.finfo(np.float64).tiny


class SlicedWassersteinFeatures(FeatureMap):
    r"""Quantile features of sets: Euclidean distances that approximate the
    sliced-Wasserstein distance :math:`SW_2`.

    For each of L unit directions :math:`\theta_l` and Q cells
    :math:`[t_k, t_{k+1}]`, :math:`t_k = \sin^2(\pi k / (2Q))` (equal steps
    of the angle :math:`\phi` of :math:`t = (1 - \cos\phi) / 2`: cells
    narrower in the tails, where the quantile functions of samples are
    steepest), the feature of a set is the mean of the quantile function of
    its projection on :math:`\theta_l` over the cell, scaled by the root of
    the cell's width :math:`w_k = t_{k+1} - t_k`:

    .. math::

        \Phi(A)_{lk} = \sqrt{\frac{w_k}{L}}\; \frac{1}{w_k}
        \int_{t_k}^{t_{k+1}} F_{\theta_l \# A}^{-1}(t)\,dt, \qquad
        \|\Phi(A) - \Phi(B)\|^2 \approx SW_2^2(A, B)

    (the same directions: `sliced_wasserstein` with ``projections=
    map.projections_``). A Gaussian kernel of these features is the
    sliced-Wasserstein kernel ([2]_, [4]_): random Fourier features of them,
    ``make_pipeline(SlicedWassersteinFeatures(...),
    RandomFourierFeatures(gamma=...))``, approximate
    `sliced_wasserstein_kernel` (see Examples).

    `fit` draws the directions for the dimension of the training points.

    Parameters
    ----------
    n_projections : int, default=100
        Number L of random directions (ignored when `projections` is
        given).
    n_quantiles : int, default=50
        Number Q of quantile cells per direction; the map has L Q features.
    projections : array_like of shape (L, d), optional
        The directions, as rows: finite and nonzero, each divided by its
        norm. None draws `n_projections` of them by `draw` from `rng`.
    draw : {"iid", "orthogonal", "qmc"}, default="iid"
        How the directions are drawn (see `sliced_wasserstein`).
    rng : int or numpy.random.Generator, optional
        Seed or generator, used by `fit`; the same seed gives the same map.

    Attributes
    ----------
    projections_ : ndarray, shape (L, ``n_features_in_``)
        The unit directions.
    n_features_in_ : int
        Dimension d of the points.
    n_features_out_ : int
        Number of features, L Q.

    See Also
    --------
    sliced_wasserstein : The distances approximated.
    sliced_wasserstein_kernel : Their Gaussian kernel.

    Notes
    -----
    **Error.** Let :math:`h = F^{-1} - G^{-1}` be the difference of the
    quantile functions of the projections of two sets A and B on one
    direction and :math:`P_Q h` its mean on each cell. The squared
    distance of the features along that direction is
    :math:`\int_0^1 (P_Q h)^2`, and since :math:`P_Q` is the orthogonal
    projection of :math:`L^2(0, 1)` on the functions constant on the
    cells,

    .. math::

        0 \le \int_0^1 h^2 - \int_0^1 (P_Q h)^2
          = \sum_{k} \int_{t_k}^{t_{k+1}} (h - P_Q h)^2
          \le \sum_k w_k \frac{\omega_k^2}{4}
          \le \sin\frac{\pi}{2Q}\, \frac{(R_A + R_B)^2}{4}
          \le \frac{\pi (R_A + R_B)^2}{8 Q},

    where :math:`\omega_k` is the oscillation of h on cell k (a function
    with values in an interval of length :math:`\omega` varies by at most
    :math:`\omega^2 / 4` about its mean), bounded by the increments of
    the two monotone quantile functions over the cell, so that
    :math:`\sum_k \omega_k \le R_A + R_B`, the spreads (largest minus
    smallest projected value) of the two sets,
    :math:`\sum_k \omega_k^2 \le (\max_k \omega_k) \sum_k \omega_k`, and
    :math:`w_k = \sin(\pi (2k + 1) / (2Q)) \sin(\pi / (2Q))` is at most
    :math:`\sin(\pi / (2Q))` (the middle cells; cells of equal width 1/Q
    would bound it by :math:`(R_A + R_B)^2 / (4Q)`).
    Only the cells where h jumps, at most :math:`n + m - 1` of them for
    sets of n and m points, contribute: for Q above the set sizes each
    holds one jump of the quantile functions, of size about R / n, and
    the error is about :math:`(n + m) (R/n)^2 / (4Q)`. Averaged over the
    directions: the features never overestimate :math:`SW_2^2` (with the
    same directions), and underestimate it by at most the mean of
    :math:`\sin(\pi / (2Q)) (R_A + R_B)^2 / 4`, an error of order
    :math:`1/Q`. The error does not change when a set is translated (h
    changes by a constant, which :math:`P_Q` keeps): it depends on the
    shapes only.

    The cells are narrower in the tails because the quantile functions of
    samples jump most there (their spacings are about
    :math:`1 / (n f(F^{-1}(t)))`, f the density). Measured at Q = 100 (100
    directions, the median over the pairs of the relative error of the
    squared distances), cells of equal width against these: 1.3e-3 and
    8.6e-4 on 120 Gaussian sets of 50 to 150 points in 16 dimensions with
    random means, 1.3e-2 and 6.3e-3 on Student t sets (3 degrees of
    freedom), 2.2e-3 and 1.3e-3 on exponential ones, 1.0e-3 and 7.1e-4 on
    uniform ones; on weighted digit images, pixel grids whose quantile
    functions are not steeper in the tails, 2 to 10 % more error with
    these cells (``studies/weighted_digits``: 4.9e-4 against 4.8e-4 over
    the matrix, Frobenius norms).

    The point values at the midpoints of the cells also err by
    :math:`O(1/Q)` (at most :math:`2 M (R_A + R_B) \sin(\pi / (2Q))`, M
    the largest :math:`|h|`), with either sign and a constant that grows
    with the distance itself. Measured on weighted digit images
    (`digit_clouds` of ``kernelmaps._data``: 60 images, 100 directions,
    translations of 2 pixels), the squared distances of the cell means err
    by 6.1e-4 (Frobenius norm of the error over that of :math:`SW_2^2`,
    pairs off the diagonal) at Q = 100, the midpoints by 1.2e-3; without
    translations the midpoints err less (4.7e-3 against 9.6e-3), with
    translations of 5 pixels four times more. The cell means are taken:
    the error bound above, their sign, and their independence of
    translations. Pairs of nearly equal sets have the largest relative
    error (5.5 % at Q = 100 for the worst pair of that sample: the error
    is about :math:`R^2 / (n Q)` whatever the distance).

    **Computation.** As `sliced_wasserstein`: one BLAS projection per
    block of directions, one sort per set and direction, then one merge of
    each set's quantile function with the grid of cells (compiled, over
    the sets in parallel); weighted sets (a `Bags` with weights) take
    their normalised weights. float32 points are projected, sorted and
    returned in float32 (means in float64).

    References
    ----------
    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import (RandomFourierFeatures, SlicedWassersteinFeatures,
    ...                         sliced_wasserstein)
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(40, 2)) for i in range(6)]
    >>> swf = SlicedWassersteinFeatures(50, n_quantiles=100, rng=0)
    >>> F = swf.fit_transform(sets)
    >>> F.shape
    (6, 5000)
    >>> D2 = ((F[:, None] - F[None]) ** 2).sum(-1)
    >>> SW2 = sliced_wasserstein(sets, projections=swf.projections_) ** 2
    >>> bool(np.abs(D2 - SW2).max() < 0.01 * SW2.max())
    True

    The Gaussian sliced-Wasserstein kernel, through random Fourier features
    of these features (the two maps chained, as a scikit-learn
    ``make_pipeline`` of them would):

    >>> from kernelmaps import sliced_wasserstein_kernel
    >>> quantiles = SlicedWassersteinFeatures(50, rng=0).fit(sets)
    >>> rff = RandomFourierFeatures(4000, gamma=0.1, rng=0)
    >>> Z = rff.fit_transform(quantiles.transform(sets))
    >>> K = sliced_wasserstein_kernel(
    ...     sets, gamma=0.1, projections=quantiles.projections_)
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.05)
    True
    """

    _takes_sets = True
    _replayed = (("_projection_draw", ("projections_",)),)

    def __init__(self, n_projections=100, n_quantiles=50, *, projections=None,
                 draw="iid", rng=None):
        self.n_projections = n_projections
        self.n_quantiles = n_quantiles
        self.projections = projections
        self.draw = draw
        self.rng = rng

    def _fit(self, X, workers, progress):
        return self._fitted_state(check_sets(X, "X", weighted=True).dim)

    def _array_fit(self, library, X, n_threads):
        """`fit` on sets of `library`, checked on their device."""
        return self._fitted_state(_array_sets.check_array_sets(
            library, X, "X", weighted=True).dim)

    def _fitted_state(self, dim):
        Q = check_scalar(self.n_quantiles, "n_quantiles", kind="int", low=1)
        directions, record = sliced_directions(
            dim, self.n_projections, self.projections, self.draw, self.rng)
        check_size(n_projections=directions.shape[0], n_quantiles=Q)
        return {"projections_": directions, "_projection_draw": record,
                "n_features_in_": dim,
                "n_features_out_": directions.shape[0] * Q}

    @blocked_sets(weighted=True, checked=True)
    def transform(self, X, *, workers=None, progress=False):
        """Quantile features of the sets of `X`.

        Parameters
        ----------
        X : sequence of array_like of shape (n_i, d), or Bags
            The sets, weighted or not.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of sets (needs tqdm).

        Returns
        -------
        F : ndarray, shape (len(X), ``n_features_out_``)
            In the dtype of the points (float32 or float64); features
            ``l * Q + k`` are those of direction l.
        """
        n_threads = resolve_workers(workers)
        directions = self.projections_
        Q = self.n_features_out_ // directions.shape[0]
        e = power_of_two_exponent(max_abs(X.points))
        F = quantile_means(_scaled_bags(X, e), directions,
                           quantile_edges(Q), n_threads, working_memory_bytes())
        with np.errstate(over="ignore", under="ignore"):
            for a, b in row_blocks(F):  # in place (Ctrl-C stops between two)
                np.ldexp(F[a:b], -e, out=F[a:b])
        return check_finite_output(
            F, "the quantile features of X overflow its dtype; scale X down")

    def _array_features(self, library, X):
        """`transform` of the sets X of `library`, computed there
        (`_array_sets.quantile_means`)."""
        sets = _array_sets.check_array_sets(library, X, "X", weighted=True)
        self._check_width(sets.dim, "X")
        dtype = np.float32 if sets.dtype == library.xp.float32 else np.float64
        (directions,) = self._on_device(library, dtype, "projections_")
        Q = self.n_features_out_ // directions.shape[0]
        return _array_sets.quantile_means(
            library, sets, library.xp.matrix_transpose(directions), quantile_edges(Q))


_LAZY_DOC = """*Dask input.* `X` or `Y` given as a `Bags` whose points are a Dask
    array (or a 3-D Dask array of sets of equal size) gives a lazy Dask
    array, computed in blocks of sets by the same code as in memory, with
    the same directions (drawn once, when the graph is built; equal up to
    rounding: each block is centred and scaled on its own): the blocks
    follow the row chunks of the points, moved to set boundaries and split
    where one task would need more than the working-memory budget
    (`set_config`); one task per pair of blocks, and for ``Y=None`` one
    per unordered pair. The points' values are checked in the tasks, with
    the errors of the in-memory call; `progress` is ignored (use Dask's
    diagnostics), and `workers` is the threads of each task (1 by
    default). Weighted sets need their points in memory."""

fill_docs((sliced_wasserstein, sliced_wasserstein_kernel,
           SlicedWassersteinFeatures), dtype=DTYPE_DOC,
          projections=_PROJECTIONS_DOC, references=_REFERENCES, lazy=_LAZY_DOC)
