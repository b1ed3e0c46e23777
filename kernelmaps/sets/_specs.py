"""The specs of the kernels between sets (`kernelmaps._spec`): the mean
map, MMD, Renyi divergence and sliced-Wasserstein kernels (and the energy
kernel of their points) as the tools over
objects (`mmd_test`, `NystroemMap`, `SetKernel`) compute them, on sets
checked once, a block at a time. Each checks its parameters with its
function's own checks."""

import functools
import math
import warnings

import numpy as np

from .. import _array_api
from .._bags import Bags, concat_sets
from .._config import working_memory_bytes
from .._engine import knn
from .._engine.layout import power_of_two_exponent
from .._engine.pair_sums import pair_sums
from .._engine.scales import (
    divergence_kernel_matrix,
    divergence_kernel_values,
    median_scale,
    scale_gamma,
)
from .._engine.schedule import run_steps
from .._engine.sliced import sliced_means
from .._gamma import point_median_gamma
from .._lazy import ItemBlocks, is_lazy
from .._spec import (
    BANDWIDTH_SAMPLE,
    N_BANDWIDTHS,
    DistanceSpec,
    PointSpec,
    Spec,
    distance_grid,
    given_gammas,
    object_sample,
    point_gamma,
    point_grid,
    register,
    value_rows,
)
from .._validation import check_bool, check_scalar, check_sets
from .._warnings import DegenerateWarning, warn_uninformative
from . import _array_divergence, _array_sets
from ._divergence import (
    _check_sizes,
    _renyi,
    divergence_kernel,
    divergence_kernel_params,
    renyi_divergence,
    renyi_divergence_both,
    renyi_params,
)
from ._mean_map import _level2, check_gamma2, mmd, mmd_squared, point_params
from ._random_features import RandomDistributionFeatures, RandomFourierFeatures
from ._sliced import (
    SlicedWassersteinFeatures,
    _centred,
    _kernel_values,
    kernel_params,
    sliced_directions,
    sliced_wasserstein,
)

__all__ = ["EnergySpec", "FourierSpec", "MMDSpec", "MeanMapSpec", "RenyiSpec",
           "SlicedWassersteinSpec"]

_POINT = ("kernel", "gamma", "degree", "coef0")
# Width of the random distribution features that embed sets for k-means++.
SET_EMBEDDING = 128
# Quantiles per direction of the embedding of the sliced-Wasserstein
# kernel for k-means++ (its squared distances approach SW_2^2).
SW_EMBEDDING_QUANTILES = 16
# The smallest positive float64: the least median scale of SW_2^2.
_SMALLEST = math.ulp(0.0)


class SetSpec(Spec):
    """A kernel of sets of points (a `Bags`). `weighted`: whether it takes
    sets with point weights (which every method here carries)."""

    kind = "sets"
    weighted = False

    def check(self, X, name="X"):
        return check_sets(X, name, weighted=self.weighted)

    def check_array(self, library, X, name="X"):
        """`check` for sets of another library (`_array_api`): their
        `_array_sets.ArraySets`, checked on their device."""
        return self.check_sizes(_array_sets.check_array_sets(
            library, X, name, weighted=self.weighted), name)

    def check_bags(self, library, X, name="X"):
        """`check` for sets of another library (`_array_api`), as given
        (their gradient kept): a `Bags` of their points on their device,
        and its host stand-in (`_array_sets.array_bags`)."""
        return _array_sets.array_bags(library, X, name, self.check)

    def count(self, X):
        return len(X)

    def pool(self, X, Y):
        return concat_sets(X, Y)

    def as_float64(self, X):
        return Bags(X.points.astype(np.float64), X.offsets, X.weights)

    def value_keys(self, Z):
        """Each set's mean, mean square and size (ties of the first broken
        by the others; weighted sets: the weighted mean and mean square
        and the total weight), in memory (lazy sets: computed a chunk of
        whole sets at a time)."""
        sums = (_lazy_set_sums(Z) if is_lazy(Z) else _set_sums(
            Z.points, Z.offsets, np.abs(Z.points).max(initial=0.0), Z.weights))
        sizes = Z.set_weights()
        mean = sums[:, :Z.dim] / sizes[:, None]
        square = sums[:, Z.dim:] / sizes[:, None]
        return np.hstack([mean, square, sizes[:, None] / sizes.max()])

    def point_median(self, Z, point):
        """`point_gamma` (the median heuristic on the `value_sample` of the
        pooled points of Z); of weighted sets, the weighted rule of
        `point_median_gamma` on the value sample of the points of positive
        weight, with their weights."""
        if Z.weights is None:
            return point_gamma(None, _points(Z), point)
        points, weights = _weighted_points(Z)
        if len(points) > BANDWIDTH_SAMPLE:
            rows = value_rows(points, BANDWIDTH_SAMPLE)
            points, weights = points[rows], weights[rows]
        return point_median_gamma(
            Bags(points, np.array([0, len(points)]), weights), kernel=point,
            sample=None, name="X and Y", degenerate="fallback")

    def check_sizes(self, bags, name):
        """`bags` (checked sets), or a ValueError naming a set too small for
        the kernel."""
        return bags

    def embedding(self, X, params, rng):
        """Random distribution features of the sets, at the point kernel's
        scale (a kernel without one: the median heuristic of the
        features')."""
        point = params.get("kernel", "rbf")
        return RandomDistributionFeatures(
            SET_EMBEDDING, gamma=params.get("gamma") if "kernel" in self.takes
            else None, kernel=point if point in ("rbf", "laplacian") else "rbf",
            rng=rng).fit_transform(X)

    def resolved_point(self, Z):
        """The point kernel's parameters, with gamma None fixed by the
        median heuristic on the `value_sample` of Z's points (rbf,
        laplacian) or ``1 / d`` (polynomial)."""
        params = self.point_params()
        if params.get("gamma") is None:
            point = params["kernel"]
            params["gamma"] = (self.point_median(Z, point)
                               if point in ("rbf", "laplacian")
                               else 1.0 / Z.dim)
        return params


def _points(Z):
    return Z.points.astype(np.float64, copy=False)


def _weighted_points(Z):
    """The points of Z (float64) of positive weight, and their weights (all
    the points, weighing 1, for unweighted sets)."""
    points = _points(Z)
    if Z.weights is None:
        return points, np.ones(len(points))
    keep = Z.weights > 0
    return points[keep], Z.weights[keep]


def _set_sums(points, offsets, top, weights=None):
    """The sums of each set's points and of their squares, in float64, the
    points divided by `top` (their largest absolute value; not where it is
    0): ``(n_sets, 2 d)``; with `weights`, the weighted sums. Each set's
    from its points alone, in their order."""
    points = points.astype(np.float64, copy=False)
    unit = points / top if top > 0 else points
    square = unit**2
    if weights is not None:
        unit, square = unit * weights[:, None], square * weights[:, None]
    return np.hstack([np.add.reduceat(unit, offsets[:-1], axis=0),
                      np.add.reduceat(square, offsets[:-1], axis=0)])


def _lazy_set_sums(Z):
    """`_set_sums` of a Bags of Dask points: their largest absolute value
    first, then one task per block of whole sets (`ItemBlocks`: the chunks
    of the points moved to the sets' boundaries)."""
    import dask
    from dask.base import tokenize

    top = np.float64(abs(Z.points).max().compute())
    blocks = ItemBlocks(Z, None)
    parts = [dask.delayed(_block_sums, pure=True)(block, top) for block in
             blocks.delayed("set-sums", tokenize(blocks.token()))]
    return np.concatenate(dask.compute(*parts))


def _block_sums(bags, top):
    return _set_sums(bags.points, bags.offsets, top)


@register("rbf", "laplacian")
class FourierSpec(PointSpec):
    """The rbf and laplacian kernels of points, with their random Fourier
    features (`RandomFourierFeatures`: the linear test's map)."""

    def random_features(self, width, gamma, rows, sample, rng):
        if gamma is None:
            gamma = point_gamma(None, sample(), self.name)
        return RandomFourierFeatures(width, kernel=self.name, gamma=gamma,
                                     rng=rng).fit(rows)


@register("mean_map")
class MeanMapSpec(SetSpec):
    """`sum_match_kernel`: the mean of a point kernel over the pairs of
    points (weighted sets: the weighted mean); its scale is the point
    kernel's gamma (default: the weighted median heuristic for weighted
    sets; the grid of the aggregated tests from the distances between the
    points of positive weight, unweighted)."""

    takes = (*_POINT, "normalize")
    scale = "gamma"
    weighted = True
    label = "mean map"

    def check_params(self, params):
        checked = point_params(**_given(params, _POINT))
        if "normalize" in params:
            checked["normalize"] = check_bool(params["normalize"], "normalize")
        return {**params, **_given(checked, params)}

    def scales(self, Z, gamma, grid, n_threads):
        point = self.params.get("kernel", "rbf")
        if point not in ("rbf", "laplacian"):  # linear, polynomial: no rule
            return given_gammas(gamma, lambda: self.resolved_point(Z)["gamma"],
                                lambda: [self.resolved_point(Z)["gamma"]], grid)
        return given_gammas(gamma, lambda: self.point_median(Z, point),
                            lambda: point_grid(_weighted_points(Z)[0], point,
                                               N_BANDWIDTHS, grid), grid)

    @property
    def degenerate_scale(self):
        return self.params.get("kernel", "rbf") in ("rbf", "laplacian")

    def blocks(self, A, B, scales, n_threads):
        params = self.point_params()
        normalize = self.params.get("normalize", True)
        for g in scales:
            yield pair_sums(A, B, **{**params, "gamma": g},
                            n_threads=n_threads, normalize=normalize)


@register("mmd")
class MMDSpec(DistanceSpec, SetSpec):
    """`mmd_kernel`: ``exp(-gamma2 MMD^2)`` (weighted sets: of the weighted
    mean embeddings); its scale is gamma2, the point kernel's gamma is in
    `params` (None: fixed on the pooled points)."""

    takes = (*_POINT, "gamma2")
    scale = "gamma2"
    default_scale = 1.0
    weighted = True
    label = "MMD"

    def check_params(self, params):
        checked = point_params(**_given(params, _POINT))
        if "gamma2" in params:
            checked["gamma2"] = check_gamma2(params["gamma2"])
        return {**params, **_given(checked, params)}

    def scales(self, Z, gamma, grid, n_threads):
        self.params = {**self.params, **self.resolved_point(Z)}
        return super().scales(Z, gamma, grid, n_threads)

    def distance_call(self, A, B, n_threads):
        """The biased MMD^2 between the sets of A and B (None: A, the
        symmetric block, its diagonal 0): `mmd`'s (`mmd_squared`)."""
        params = self.point_params()
        return (functools.partial(pair_sums, A, B, **params,
                                  n_threads=n_threads, normalize=True),
                functools.partial(mmd_squared, X=A, Y=B, params=params,
                                  n_threads=n_threads))

    def array_distance(self, A, B):
        """The biased MMD^2 (`mmd`'s)."""
        return mmd(A, B, squared=True, **self.point_params())

    def function_gram(self, A, params, n_threads, between):
        """`mmd_kernel`'s values (MMD^2 once, `_level2`) and its warning of
        the MMD kernel."""
        S = self.distance(A, None, n_threads)
        gamma2 = self.function_scale(params)
        equal = not S.any()  # (read before S becomes the kernel)
        K = self.finite(_level2(S, gamma2), "X")
        if between is not None:
            warn_uninformative(K, True, self.label, between, gamma2, equal,
                               scale=self.scale)
        return K, params

    def array_warning(self, K, A, params, between):
        """`function_gram`'s: at gamma2, the MMD^2 between the sets of A
        computed again where K is constant (whether they are all 0)."""
        library = _array_api.library_of(K=K)
        S = self.array_distance
        _array_api.warn_uninformative(
            library, K, True, self.label, between, self.function_scale(params),
            lambda: not library.holds(library.xp.any(S(A, None) != 0)),
            scale=self.scale)


@register("renyi")
class RenyiSpec(SetSpec):
    """`divergence_kernel` of the symmetrised kNN Renyi divergences
    (`renyi_divergence` with `alpha`, `k`, `min_dist`), ``exp(-gamma
    S**power)``; its default scale is the median rule of the divergence
    kernel, a ("scale", s) value: gamma ``s ** -power``."""

    takes = ("alpha", "k", "min_dist", "clamp", "gamma", "power", "scale")
    scale = "gamma"
    label = "Renyi divergence"
    positive_definite = False

    def check_params(self, params):
        given = _given(params, ("alpha", "k", "min_dist", "clamp"))
        k, alphas, single, min_dist, clamp = renyi_params(**given)
        if not single:
            raise TypeError(f"alpha must be a real number (one order) for the "
                            f"Renyi kernel, got {params['alpha']!r}")
        gamma, power = divergence_kernel_params(
            **_given(params, ("gamma", "power")))
        self.alpha, self.k, self.min_dist, self.clamp, self.power = (
            float(alphas[0]), k, min_dist, clamp, power)
        checked = {"alpha": self.alpha, "k": k, "min_dist": min_dist,
                   "clamp": clamp, "gamma": gamma, "power": power}
        if params.get("scale") is not None:
            checked["scale"] = check_scalar(params["scale"], "scale", low=0.0,
                                            low_inclusive=False)
        return {**params, **_given(checked, params)}

    def check(self, X, name="X"):
        return self.check_sizes(check_sets(X, name), name)

    def check_sizes(self, bags, name):
        _check_sizes(bags, name, self.k + 1, f"more than k={self.k}")
        return bags

    def divergences(self, A, B, n_threads):
        """The kNN Renyi divergences of order alpha (at least 0 with
        `clamp`), `renyi_divergence`'s: ``D(A, A)``
        for B None, else ``(D(A, B), D(B, A))`` from one search; a
        generator of the search's steps (`run_steps`: the compiled loops
        two calls below the tools' blocks)."""
        method = knn.choose_method(A, B)
        alphas = np.array([self.alpha], dtype=np.float64)
        out = yield from _renyi(A, B, alphas, self.k, self.min_dist, method,
                                n_threads, False, both=B is not None,
                                clamp=self.clamp)
        return out[0] if B is None else tuple(D[0] for D in out)

    def scales(self, Z, gamma, grid, n_threads):
        if gamma is not None:
            return given_gammas(gamma, None, None, grid)
        D = run_steps(self.divergences(object_sample(self, Z), None, n_threads))
        if not grid:
            _, scale = divergence_kernel_matrix(D, power=self.power)
            return [("scale", scale)]
        S = np.maximum((D + D.T) / 2, 0.0)
        with np.errstate(over="ignore", under="ignore"):
            T = S[~np.eye(len(S), dtype=bool)] ** (self.power / 2)
        return list(distance_grid(T[np.isfinite(T)], grid))

    def report(self, value):
        if isinstance(value, tuple):  # (inf or 0 beyond the float range)
            with np.errstate(over="ignore", under="ignore"):
                return float(np.float64(value[1]) ** -self.power)
        return value

    def function_scale(self, params):
        """gamma where given, else ("scale", s) where the scale s is given,
        else None (the median rule: `landmark_scale`)."""
        if params.get("gamma") is not None:
            return params["gamma"]
        if params.get("scale") is not None:
            return ("scale", params["scale"])
        return None

    def function_gram(self, A, params, n_threads, between):
        """As `Spec`'s; with neither gamma nor scale given, the scale is the
        median divergence over the pairs of A, the function's rule
        (``params["scale"]``, gamma None: the kernel is computed from it,
        stably, where gamma is beyond the float range)."""
        D = run_steps(self.divergences(A, None, n_threads))
        value = self.function_scale(params)
        given = ({} if value is None else {"scale": value[1]}
                 if isinstance(value, tuple) else {"gamma": value})
        K, scale = divergence_kernel_matrix(D, power=self.power, **given)
        if between is not None:
            warn_uninformative(K, True, self.label, between, params.get("gamma"),
                               lambda: not np.any(np.maximum(D + D.T, 0)))
        if scale is not None:
            params = {**params, "gamma": None, "scale": scale}
        return K, params

    def array_gram(self, A, params, between):
        """As `function_gram` (`Spec.array_gram`): with neither gamma nor
        scale given, the divergences computed once in A's library
        (`array_part`), copied to the host for the median rule's scale,
        and the kernel of them at that scale there."""
        if self.function_scale(params) is not None:
            return super().array_gram(A, params, between)
        part = self.array_part(A, None)
        library = _array_api.library_of(D=part[0])
        D = library.to_numpy(part[0]).astype(np.float64)
        with warnings.catch_warnings():  # (its own, of "objects of D")
            warnings.simplefilter("ignore", DegenerateWarning)
            _, scale = divergence_kernel_matrix(D, power=self.power)
        params = {**params, "gamma": None, "scale": scale}
        K = self.array_values(part, params)
        _array_api.warn_uninformative(library, K, True, self.label, between, None,
                                      lambda: not np.any(np.maximum(D + D.T, 0)))
        return K, params

    def array_warning(self, K, A, params, between):
        """`function_gram`'s: at the gamma given, the divergences between
        the sets of A computed again where K is constant (whether none is
        positive)."""
        library = _array_api.library_of(K=K)
        xp = library.xp

        def equal():
            D = self.array_part(A, None)[0]
            S = xp.maximum(D + xp.matrix_transpose(D), 0)
            return not library.holds(xp.any(S != 0))

        _array_api.warn_uninformative(library, K, True, self.label, between,
                                      params.get("gamma"), equal)

    def call(self, A, B, params):
        """The kernel of the Renyi divergences between sets of another
        library (`Spec.call`), at gamma or at the scale fixed on the
        training sets, computed there (`divergence_kernel`'s, of both
        directions' divergences, as `blocks`)."""
        return self.array_values(self._array_divergences(A, B, params), params)

    def array_part(self, A, B):
        """The divergences of the spec's parameters (`_array_divergences`)."""
        return self._array_divergences(A, B, self.params)

    def _array_divergences(self, A, B, params):
        """The divergences D(A, A) (B None), else D(A, B) and D(B, A), of
        `params` (`renyi_divergence`'s), a pair."""
        options = {k: params[k] for k in ("alpha", "k", "min_dist", "clamp")
                   if k in params}
        return ((renyi_divergence(A, **options), None) if B is None
                else renyi_divergence_both(A, B, **options))

    def array_values(self, part, params):
        """`divergence_kernel`'s values of the divergences `part` at gamma,
        or at the scale, of `params`."""
        D, reverse = part
        value = self.function_scale(params)
        gamma, scale = (None, value[1]) if isinstance(value, tuple) else (value, None)
        return _array_divergence.divergence_kernel(
            _array_api.library_of(D=D), D, gamma, scale, self.power, reverse)

    def fitted_gamma(self, params):
        if params.get("gamma") is None and params.get("scale") is not None:
            return scale_gamma(params["scale"], self.power)
        return params.get("gamma")

    def blocks(self, A, B, scales, n_threads):
        pair = run_steps(self.divergences(A, B, n_threads))
        D, D_reverse = (pair, None) if B is None else pair
        for value in scales:
            given = ({"scale": value[1]} if isinstance(value, tuple)
                     else {"gamma": value})
            yield divergence_kernel_matrix(D, D_reverse, power=self.power,
                                           **given)[0]


@register("sliced_wasserstein")
class SlicedWassersteinSpec(DistanceSpec, SetSpec):
    """`sliced_wasserstein_kernel`: ``exp(-gamma SW_2^2)``; its scale is
    gamma (default ``1 / median`` of SW_2^2, the rule of `DistanceSpec`).

    The directions are `projections` where given, else `n_projections`
    drawn by `draw` from the tool's generator (`rng`, which the tool sets
    on the spec) the first time they are needed, for the dimension of the
    objects: every block of the call or fit uses the same ones, and a
    tool's fitted parameters keep them (``params["projections"]``)."""

    takes = ("gamma", "n_projections", "projections", "draw")
    scale = "gamma"
    weighted = True  # the distances honour the point weights
    label = "sliced-Wasserstein"
    # The generator of the directions, set by the tool (None: fresh).
    rng = None

    def __init__(self, name, params=None):
        super().__init__(name, params)
        self._fixed = None

    def check_params(self, params):
        checked = kernel_params(**_given(params, self.takes))
        return {**params, **_given(checked, params)}

    def directions(self, dim):
        """The unit directions (L, dim), drawn once (see the class)."""
        if self._fixed is None or self._fixed.shape[1] != dim:
            p = self.params
            self._fixed, _ = sliced_directions(
                dim, p.get("n_projections", 100), p.get("projections"),
                p.get("draw", "iid"), self.rng)
            self.params = {**p, "projections": self._fixed}
        return self._fixed

    def costs(self, A, B, n_threads, progress=False):
        """SW_2^2 between the sets of A and B (None: A, the symmetric block,
        its diagonal 0) times ``2**units`` (`_centred`: nothing overflows),
        as ``(call, units)``: `call`, the engine's driver bound to its
        arguments (the compiled loop two calls below the tools' blocks)."""
        Xs, Ys, e = _centred(A, B)
        return functools.partial(
            sliced_means, Xs, Ys, self.directions(A.dim), 2.0, n_threads,
            working_memory_bytes(), progress), 2 * e

    def distance(self, A, B, n_threads):
        """SW_2^2 between the sets of A and B (None: A): `costs` scaled."""
        call, units = self.costs(A, B, n_threads)
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(call(), -units)

    def array_distance(self, A, B):
        """SW_2^2 (`sliced_wasserstein`'s, on the `directions`), float64
        (the squares of float32 sets' distances may leave float32's
        range)."""
        D = sliced_wasserstein(A, B, projections=self.directions(A.dim),
                               dtype=np.float64)
        return D * D

    def blocks(self, A, B, scales, n_threads):
        """`sliced_wasserstein_kernel`'s values at each gamma
        (`_kernel_values` of the `costs`, in their units)."""
        call, units = self.costs(A, B, n_threads)
        S = call()
        for g in scales:
            yield _kernel_values(S, units, g)

    def kernel(self, A, B, gamma, n_threads, progress=False, between=None):
        """`sliced_wasserstein_kernel` between the checked sets of A and B
        (None: A) at `gamma`, float64, with its `DegenerateWarning` naming
        `between` (None: none), and its `costs` S and their units. gamma
        None: the median rule of the kernels of divergences, ``1 /
        median`` of SW_2^2 between the sets of B (A where B is None), off
        the diagonal; none positive: gamma 1."""
        call, units = self.costs(A, B, n_threads, progress)
        S = call()
        if gamma is not None:
            K = _kernel_values(S, units, gamma)
        else:  # the median of SW_2^2 of B (A) in the units of S
            SB, units_b = S, units
            if B is not None:
                call, units_b = self.costs(B, None, n_threads)
                SB = call()
            positive = np.any(SB[~np.eye(len(SB), dtype=bool)] > 0)
            try:  # (none positive: gamma 1)
                scale = math.ldexp(*((median_scale(SB), units - units_b)
                                     if positive else (1.0, units)))
            except OverflowError:
                scale = math.inf
            K = divergence_kernel_values(S, 1.0, scale=max(scale, _SMALLEST))
        if between is not None:
            warn_uninformative(K, B is None, self.label, between, gamma,
                               lambda: not S.any())
        return K, S, units

    def function_gram(self, A, params, n_threads, between):
        """`kernel` (the function's values and warning); gamma None fixed
        at its median rule's (a ValueError where the median or its gamma is
        beyond the float64 range)."""
        K, S, units = self.kernel(A, None, params.get("gamma"), n_threads,
                                  between=between)
        if params.get("gamma") is None:
            params = {**params, "gamma": self._costs_gamma(S, units)}
        return self.finite(K, "X"), params

    def array_gram(self, A, params, between):
        """As `function_gram` (`Spec.array_gram`): gamma None fixed at its
        median rule's on the distances SW_2 computed in A's library
        (`sliced_wasserstein`) and copied to the host, the kernel of them
        at that gamma there."""
        if params.get("gamma") is not None:
            return super().array_gram(A, params, between)
        D = sliced_wasserstein(A, projections=params["projections"])
        library = _array_api.library_of(D=D)
        H = library.to_numpy(D).astype(np.float64)
        e = power_of_two_exponent(float(H.max(initial=0.0)))  # (no overflow)
        params = {**params, "gamma": self._costs_gamma(np.ldexp(H, e) ** 2, 2 * e)}
        with warnings.catch_warnings():  # (its own, of "objects of D")
            warnings.simplefilter("ignore", DegenerateWarning)
            K = divergence_kernel(D, gamma=params["gamma"], power=2)
        _array_api.warn_uninformative(library, K, True, self.label, between, None,
                                      lambda: not H.any())
        return K, params

    def array_warning(self, K, A, params, between):
        """`function_gram`'s (`kernel`'s): at the gamma given, the
        distances between the sets of A computed again where K is constant
        (whether they are all 0)."""
        library = _array_api.library_of(K=K)
        _array_api.warn_uninformative(
            library, K, True, self.label, between, params.get("gamma"),
            lambda: not library.holds(library.xp.any(sliced_wasserstein(
                A, projections=params["projections"]) != 0)))

    def _costs_gamma(self, S, units):
        """The median rule's gamma, ``1 / median`` of the SW_2^2 ``S *
        2**-units`` over the pairs of distinct sets (none positive: 1), a
        float; a ValueError where it is beyond the float64 range."""
        positive = np.any(S[~np.eye(len(S), dtype=bool)] > 0)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            median = np.ldexp(median_scale(S), -units) if positive else 1.0
            return float(self._finite(np.array([1.0 / median, median]))[0])

    def embedding(self, X, params, rng):
        """The quantile features of the sets along the directions (their
        squared distances approach SW_2^2)."""
        return SlicedWassersteinFeatures(
            projections=params["projections"],
            n_quantiles=SW_EMBEDDING_QUANTILES).fit_transform(X)

    def function_params(self, params, X, rng=None):
        """`params` with the directions fixed (drawn from `rng` where not
        given); gamma None stays None: the tool fixes it on its objects
        (`scales`)."""
        if rng is not None:
            self.rng = rng
        self.params = dict(params)
        self._fixed = None
        return {**params, "projections": self.directions(X.dim)}


def _given(params, names):
    """The items of `params` named in `names` (those given)."""
    return {name: params[name] for name in names if name in params}


@register("energy")
class EnergySpec(PointSpec):
    """The distance-induced kernel of points ``(|x| + |y| - |x - y|) / 2``
    (Sejdinovic et al., 2013), the point kernel "energy" of the set
    kernels: its squared MMD is half the energy distance of Szekely and
    Rizzo (`mmd_test`'s statistic, unbiased, times ``2 N^3 (n - 1) (m - 1)
    / (n m (N - 1) (N - 2) (N - 3))`` is hyppo's ``Energy`` statistic). It
    has no scale: one kernel, in the aggregated tests too."""

    scale = None

    def scales(self, Z, gamma, grid, n_threads):
        return Spec.scales(self, Z, gamma, grid, n_threads)

    def blocks(self, A, B, scales, n_threads):
        yield pair_sums(Bags(A, np.arange(len(A) + 1)),
                        None if B is None else Bags(B, np.arange(len(B) + 1)),
                        kernel="energy", n_threads=n_threads)
