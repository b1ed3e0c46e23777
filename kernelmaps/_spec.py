"""The kernel over objects as one spec: the base every kernel's spec
builds on, the registry of the kernels by name, and what the specs share
(the data-dependent default scales, the samples they are computed on).

A kernel over objects (sets, histograms, Gaussians, points) is one
subclass of `Spec`, which lives beside the kernel's function in the unit
that owns it (the mean map's in ``sets``, chi2's in ``histograms``, ...)
and registers its names (`register`). A spec holds the kernel's
parameters, checked at construction by the same code, with the same
messages, as the kernel's public function checks its arguments
(`check_params`); and it knows how to check its objects once (`check`),
pool two samples of them (`pool`), take a range of them (`take`), resolve
its data-dependent scales on pooled objects (`scales`: one value for a
single test, a grid for the aggregated and fused tests, ``[None]`` for a
kernel without one), and compute any block of its kernel between two
collections of checked objects at every scale (`blocks`: the work shared
between the scales, a distance block, done once). Everything below
`check` trusts its input. The tools over objects (`mmd_test`,
`NystroemMap`, the scikit-learn adapters) only iterate specs
(`spec_for`): none of them names a kernel.

==============================  ===========  ==================================
kernel                          objects      scale (``gamma`` of `mmd_test`)
==============================  ===========  ==================================
"rbf", "laplacian"              points       the point kernel's gamma
"mean_map", "expected"          sets,        the point kernel's gamma
                                Gaussians
"mmd"                           sets         gamma2 of `mmd_kernel`
"exp_chi2"                      histograms   beta of `exp_chi2_kernel`
"renyi"                         sets         gamma of `divergence_kernel`
"sliced_wasserstein"            sets         gamma of
                                             `sliced_wasserstein_kernel`
"chi2", "intersection",         histograms   none
"hellinger", "js"
"precomputed", a callable       any          none
==============================  ===========  ==================================

Every default depends on the values of the pooled objects only, never on
which sample an object is in, so that a test stays exact, and on at most
`BANDWIDTH_SAMPLE` of them, so that it costs no pass over all pairs: a
point kernel's gamma is the median heuristic on the `value_sample` of the
pooled points; the scale of a kernel ``exp(-gamma S)`` of a distance S
between objects (MMD^2, chi2) is ``1 / median`` of S over the pairs of the
`object_sample`, and the divergence kernel's is its own median rule on the
same pairs. The aggregated test's grid is MMDAgg's rule applied to the
kernel's distance on the same samples: 10 bandwidths spaced geometrically
from half the 5 % quantile of the (positive) distances to twice the
largest (Schrab et al., 2023); MMD-FUSE's, linearly from half the 5 % to
twice the 95 % order statistic (Biggs et al., 2023).

The samples take lazy objects too (a Dask array, a Bags of Dask points:
`mmd_test` on Dask input): their projections (one float per object, each
from that object alone, so the same however the objects are chunked) are
computed, then the sampled objects only.
"""

import math
import warnings

import numpy as np
import scipy.sparse

from . import _array_api
from ._bags import Bags, concat_sets
from ._engine.layout import row_blocks
from ._engine.pair_sums import kernel_power, pair_sums
from ._engine.scales import median_scale
from ._gamma import (
    point_median_gamma,
    resolve_gamma,
    scaled_distances,
    unscaled_gammas,
)
from ._lazy import is_lazy
from ._probes import as_float_array
from ._validation import (
    check_finite_output,
    check_kernel_matrix,
    check_scalar,
    check_sets,
)
from ._warnings import DegenerateWarning, warn_uninformative

__all__ = ["BANDWIDTH_SAMPLE", "FUNCTIONS", "KINDS", "N_BANDWIDTHS", "SPECS",
           "DistanceSpec", "Spec", "check_kernel_params", "check_precomputed",
           "computed", "given_gammas", "kernel_function", "kernel_names",
           "object_kind", "object_sample", "point_gamma", "point_grid",
           "pool_any", "register", "spec_for", "value_rows", "value_sample"]

# Points (objects) from which the default scales are computed.
BANDWIDTH_SAMPLE = 1000
# Scale values of each kernel in the aggregated and fused tests.
N_BANDWIDTHS = 10
# The kernel at c gamma from the log of the kernel at gamma, ``exp(c log
# k)``, for c up to this ratio, and computed anew beyond: a value of k that
# rounds to 1 (gamma d^2 < 1.1e-16) gives k^c with an error of at most c *
# 1.1e-16.
LOG_KERNEL_REACH = 1e4
_POINT = ("kernel", "gamma", "degree", "coef0")


class Spec:
    """A kernel over objects (see the module's docstring).

    `name` is the kernel as results report it, `kind` the objects it takes
    ("points", "sets", "rows", "gaussians", "any", "precomputed"),
    `takes` the keyword parameters of its function (None: any), `scale`
    the parameter `mmd_test`'s gamma stands for (None: it has none),
    `between` what its degenerate warning names. `params` are checked
    once, at construction (`check_params`)."""

    name = kind = scale = None
    takes = ()
    between = "distinct objects of X and Y"
    # The kernel as warnings name it (None: its name).
    label = None
    # Whether its kernel matrices are positive semi-definite (the tools
    # project those of a kernel that is not: `SetKernel`'s psd).
    positive_definite = True

    def __init__(self, name, params=None):
        self.name = name
        self.params = self.check_params(dict(params or {}))

    def check_params(self, params):
        """`params` with each value the kernel takes checked by its public
        function's own checks (the unit's, with their messages), those not
        given left out; a name the kernel does not take is left to the tool
        to refuse (it names its own argument)."""
        return params

    @property
    def degenerate_scale(self):
        """Whether the kernel's scale can make it degenerate (the identity
        or a constant on the data: `DegenerateWarning`)."""
        return self.scale is not None

    # -- the objects --------------------------------------------------------

    def check(self, X, name="X"):
        """`X` validated as this kernel's objects."""
        raise NotImplementedError

    def count(self, X):
        """The number of checked objects."""
        return X.shape[0] if hasattr(X, "shape") else len(X)

    def pool(self, X, Y):
        """The checked objects of X, then those of Y, as one collection."""
        raise NotImplementedError

    def take(self, Z, index):
        """The objects `index` (a slice, or sorted integers) of checked
        objects."""
        return Z[index]

    def common_dtype(self, A, B):
        """Checked objects A and B of one dtype: float64 both where one is
        float32 and the other not (as the public functions compute mixed
        input)."""
        dtypes = {getattr(getattr(X, "points", X), "dtype", None)
                  for X in (A, B)}
        if len(dtypes) < 2 or None in dtypes:
            return A, B
        return self.as_float64(A), self.as_float64(B)

    def as_float64(self, X):
        return X.astype(np.float64)

    def value_keys(self, Z):
        """Keys (one row per object) that order the objects by their values
        only (`object_sample`), or None for a kernel without a scale."""
        return None

    # -- the kernel ---------------------------------------------------------

    def scales(self, Z, gamma, grid, n_threads):
        """The scale values on the pooled objects Z: `gamma` checked, or the
        default (a grid, by the rule `grid`: "mmdagg" or "fuse")."""
        if gamma is not None:
            raise ValueError(f"the {self.name!r} kernel has no scale: leave "
                             f"gamma None")
        return [None]

    def report(self, value):
        """The scale a result reports for a scale value."""
        return value

    # The scale of the kernel's public function where its parameter is not
    # given (`function_scale`).
    default_scale = None

    def point_params(self):
        """The parameters of the point kernel under a kernel of objects
        (kernel, gamma, degree, coef0), with their functions' defaults."""
        return {"kernel": "rbf", "degree": 2, "coef0": 1.0,
                **{k: v for k, v in self.params.items() if k in _POINT}}

    def function_params(self, params, X, rng=None):
        """`params` with the defaults that depend on data fixed on the
        training objects X as the kernel's public function fixes them (the
        point kernel's gamma: `resolve_gamma`), for `NystroemMap`; `rng`,
        the tool's generator, draws what the kernel draws (its
        directions, for "sliced_wasserstein")."""
        params = dict(params)
        if self.takes is not None and "kernel" in self.takes:
            point = params.get("kernel", "rbf")
            params["gamma"] = resolve_gamma(params.get("gamma"), point,
                                            self.points_of(X))
        return params

    def points_of(self, X):
        """The points of checked objects X a point kernel's default gamma
        is fixed on."""
        return X

    def function_scale(self, params):
        """The scale value of the kernel's public function called with
        `params` (None for a kernel without a scale)."""
        if self.scale is None:
            return None
        value = params.get(self.scale)
        return self.default_scale if value is None else value

    def blocks(self, A, B, scales, n_threads):
        """k(A, B) at each scale, float64 (B None: the symmetric k(A, A)),
        one array at a time: each valid until the next is asked for (an
        array may be used again for the next scale)."""
        raise NotImplementedError

    def function_gram(self, A, params, n_threads, between):
        """k(A, A) of checked objects A as the kernel's public function
        computes it for `params` (`function_params`'s), with the
        `DegenerateWarning` it gives (naming `between`, e.g. "sets of X";
        None: no warning),
        and `params` with the kernel's own data-dependent scale fixed on A
        where the function fixes it there (the sliced-Wasserstein and
        Renyi kernels'): what `SetKernel` fits on and `NystroemMap`
        computes on its landmarks."""
        K = self.function_block(A, None, params, n_threads)
        if between is not None:
            warn_uninformative(K, True, self.label or self.name, between)
        return K, params

    def array_gram(self, A, params, between):
        """`function_gram` of checked objects A of another library
        (`kernelmaps._array_api`): k(A, A) computed there, differentiably,
        by the kernel's function (`call`, whose warning names the objects
        of X), and `params` with the kernel's own scale fixed on A where
        `function_gram` fixes it (the overrides: only what the scale's
        rule reads comes to the host), with `function_gram`'s warning
        (`array_warning`), not the function's; what `SetKernel` fits
        on."""
        with warnings.catch_warnings():  # (the function's, of its arguments)
            warnings.simplefilter("ignore", DegenerateWarning)
            K = self.call(A, None, params)
        self.array_warning(K, A, params, between)
        return K, params

    def array_warning(self, K, A, params, between):
        """`function_gram`'s `DegenerateWarning` of the kernel K (of
        another library) of the objects A at `params`, read on K's
        device."""
        _array_api.warn_uninformative(_array_api.library_of(K=K), K, True,
                                      self.label or self.name, between)

    def fitted_gamma(self, params):
        """The scale a fitted tool reports as ``gamma_`` for `params`."""
        return params.get("gamma")

    def random_features(self, width, gamma, rows, sample, rng):
        """`width` random features of the kernel at scale `gamma` (None:
        its default, fixed on the points ``sample()``), fitted on `rows`:
        the map of the linear test; None for a kernel without them."""
        return None

    def embedding(self, X, params, rng):
        """Vectors whose Euclidean distances follow the kernel's between
        the checked objects X (for k-means++ landmarks), or None where
        there are none."""
        return None

    def finite(self, K, names="X and Y"):
        """K, or a ValueError where a kernel value overflowed float64."""
        return check_finite_output(
            K, f"the {self.name} kernel values between the objects of {names} "
               f"overflow float64; scale {names} down")

    def matrix(self, A, B, scale, n_threads):
        """k(A, B) at one scale."""
        return next(iter(self.blocks(A, B, [scale], n_threads)))

    @property
    def public_function(self):
        """The kernel's public function (`kernel_function` registers it), or
        None (a callable, a precomputed matrix)."""
        return FUNCTIONS.get(self.name)

    def call(self, A, B, params):
        """The kernel's `public_function` of A and B (None: A) for
        `params`: how the tools compute on objects of another library
        (`kernelmaps._array_api`), which the function computes in that
        library, on their device."""
        if self.public_function is None:
            raise TypeError(f"the {self.name} kernel computes with NumPy only: "
                            f"give NumPy arrays")
        return self.public_function(A, B, **{
            k: v for k, v in params.items() if self.takes is None or k in self.takes})

    def array_part(self, A, B):
        """What the kernel's values between the checked objects of A and B
        (None: A) of another library share at every scale (a distance),
        computed once in that library (`array_values` gives the values
        from it); None where they share nothing (`call` at each scale)."""
        return None

    def array_values(self, part, params):
        """The kernel's values at `params` from its `array_part`."""
        raise NotImplementedError

    def function_block(self, A, B, params, n_threads, names="X"):
        """k(A, B) of checked objects at the scale the kernel's public
        function takes for `params` (`function_scale`; B None: the
        symmetric k(A, A)), float64, with a ValueError naming `names` where
        a value overflowed: what `NystroemMap` and `SetKernel` compute."""
        if B is not None:
            A, B = self.common_dtype(A, B)
        return self.finite(self.matrix(A, B, self.function_scale(params),
                                       n_threads), names)


# -- points ----------------------------------------------------------------

class PointSpec(Spec):
    """A kernel of points (rows of a float array) with a scale gamma: the
    rbf and laplacian kernels' spec (registered with their random features
    by the sets unit)."""

    kind = "points"
    scale = "gamma"
    between = "distinct points of X and Y"

    def check(self, X, name="X"):
        return X  # (mmd_test's _check_samples)

    def pool(self, X, Y):
        return np.concatenate([X, Y])

    def value_keys(self, Z):
        return Z

    def scales(self, Z, gamma, grid, n_threads):
        return given_gammas(
            gamma, lambda: point_gamma(None, Z, self.name),
            lambda: point_grid(Z, self.name, N_BANDWIDTHS, grid), grid)

    def blocks(self, A, B, scales, n_threads):
        """The engine's kernel at the first of each run of scales within
        `LOG_KERNEL_REACH` of it, the others from its logarithm (the
        engine's `kernel_power`, into the array of the previous one)."""
        a = Bags(A, np.arange(len(A) + 1))
        b = None if B is None else Bags(B, np.arange(len(B) + 1))
        base = log_k = None
        for i, g in enumerate(scales):
            if base is None or g > LOG_KERNEL_REACH * base:
                base = g
                K = pair_sums(a, b, kernel=self.name, gamma=g,
                              n_threads=n_threads)
                following = scales[i + 1] if i + 1 < len(scales) else math.inf
                log_k = None
                if following <= LOG_KERNEL_REACH * g:
                    # (before K is yielded: its user may change it)
                    with np.errstate(divide="ignore"):  # exp(log 0) = 0
                        log_k = _by_rows(lambda rows: 0.5 * np.log(rows), K)
                yield K
            else:
                K = kernel_power(log_k, g / base, n_threads, out=K)
                yield K


def _by_rows(function, A):
    """``function(A)`` of an elementwise `function`, a block of rows at a
    time (`row_blocks`): no temporary larger than a block, and Ctrl-C
    stops between two blocks of a large matrix."""
    out = np.empty_like(A)
    for start, stop in row_blocks(A):
        out[start:stop] = function(A[start:stop])
    return out


def value_sample(Z, size):
    """At most `size` of the points of Z chosen by their values only: those
    at evenly spaced ranks along a fixed random direction. The same points
    for every order of the pooled sample, so that the kernel the test
    chooses does not depend on which points were in which sample (the
    test's exactness requires it). For a Dask array Z, the projections of
    its points (one float each) are computed, then the sampled points
    only: never the whole array."""
    if len(Z) <= size:
        return computed(Z)
    return computed(Z[value_rows(Z, size)])


def value_rows(Z, size):
    """The indices of `size` rows of Z (more than `size`) at evenly spaced
    ranks of their projections on a fixed random direction: chosen by
    their values only (`value_sample`)."""
    projections = row_projections(Z, sample_direction(Z.shape[1])[:, None])
    order = np.argsort(projections[:, 0], kind="stable")
    return order[sample_ranks(len(Z), size)]


def sample_direction(d):
    """The fixed random direction of `value_rows` in `d` features."""
    return np.random.default_rng(0).normal(size=d)


def sample_ranks(n, size):
    """The `size` evenly spaced ranks of `value_rows` among `n`."""
    return np.linspace(0, n - 1, size).astype(np.int64)


def _value_ranks(keys, size):
    """The sorted indices of `size` rows of `keys` (dense, sparse or a
    Dask array) at evenly spaced ranks of their projections on fixed random
    directions (the first, ties broken by the second)."""
    directions = np.random.default_rng(0).normal(size=(keys.shape[1], 2))
    if scipy.sparse.issparse(keys):
        top = abs(keys).max()
        if top > 0:  # no overflow in the projection
            keys = keys.multiply(1.0 / top)
        projections = np.asarray(keys @ directions)
    else:
        projections = row_projections(keys, directions)
    order = np.lexsort((projections[:, 1], projections[:, 0]))
    return np.sort(order[np.linspace(0, len(order) - 1, size).astype(np.int64)])


# Values of the rows of a block of `_projections` (its temporary).
PROJECTION_BLOCK_VALUES = 2**16


def _projections(keys, top, directions):
    """``(keys / top) @ directions`` in float64 (keys as they are where
    top is 0), each row's value from that row alone: an elementwise product
    summed along the row, in blocks of rows. (A BLAS product's rows change
    in their last bits with the rows computed beside them, so a sample
    chosen from its projections would change with how the rows are split,
    into the chunks of a Dask array say.)"""
    out = np.empty((keys.shape[0], directions.shape[1]))
    step = max(1, PROJECTION_BLOCK_VALUES // max(1, keys.shape[1]))
    for a in range(0, keys.shape[0], step):
        block = keys[a:a + step]
        if top > 0:  # no overflow in the projection
            block = block / top
        for c in range(directions.shape[1]):
            out[a:a + step, c] = (block * directions[:, c]).sum(axis=1)
    return out


def row_projections(keys, directions):
    """`_projections` of the rows of `keys` scaled by their largest
    absolute value: of a Dask array, that value first, then one task per
    chunk of rows (two passes over the array, one float per row and
    direction kept)."""
    if not is_lazy(keys):
        return _projections(keys, np.abs(keys).max(), directions)
    keys = keys.rechunk({1: -1})
    top = keys.dtype.type(abs(keys).max().compute())
    return keys.map_blocks(
        _projections, top, directions, dtype=np.float64,
        chunks=(keys.chunks[0], (directions.shape[1],))).compute()


def computed(objects):
    """Objects in memory: a Dask array, or a Bags of Dask points,
    computed; anything else as it is."""
    if not is_lazy(objects):
        return objects
    if isinstance(objects, Bags):
        return Bags(objects.points.compute(), objects.offsets, objects.weights)
    return np.asarray(objects.compute())


def point_gamma(gamma, Z, kernel):
    """`gamma` checked, or the median heuristic on the `value_sample` of
    the pooled points Z."""
    if gamma is not None:
        return check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
    return point_median_gamma(value_sample(Z, BANDWIDTH_SAMPLE),
                              kernel=kernel, sample=None, name="X and Y",
                              degenerate="fallback")


def point_grid(Z, kernel, count, rule="mmdagg"):
    """The aggregated test's collection for the point kernel `kernel`:
    `count` bandwidths b from the distances between the `value_sample`
    points (`_bandwidths`, by `rule`), as gammas, ascending. MMDAgg's:
    ``exp(-|x-y|^2 / b^2)`` ("rbf"), ``exp(-|x-y|_1 / b)`` ("laplacian");
    MMD-FUSE's: ``exp(-|x-y|^2 / (2 b^2))``, ``exp(-sqrt(2) |x-y|_1 /
    b)``. Found at the scale of `scaled_distances` (no overflow), then
    scaled back."""
    distances, exponent = scaled_distances(
        value_sample(Z, BANDWIDTH_SAMPLE), kernel)
    if kernel == "rbf":
        distances = np.sqrt(distances)
    bandwidths = _bandwidths(distances, count, rule)
    if bandwidths is None:  # every point the same: any kernel is constant
        return np.ones(count)
    power = 2 if kernel == "rbf" else 1
    factor = 1.0 if rule == "mmdagg" else 0.5 if kernel == "rbf" else math.sqrt(2)
    with np.errstate(over="ignore"):  # beyond float64: refused below
        gammas = factor * bandwidths**-power
    return np.sort(unscaled_gammas(gammas, kernel, exponent,
                                   f"{kernel} bandwidth of X and Y", "X and Y"))


def _bandwidths(distances, count, rule):
    """`count` bandwidths from the positive `distances` (None if none is
    positive): MMDAgg's ("mmdagg"), spaced geometrically from half their
    5 % quantile to twice the largest; MMD-FUSE's ("fuse"), spaced
    linearly from half their 5 % to twice their 95 % order statistic (the
    sorted distances at ``floor(0.05 len)`` and ``floor(0.95 len)``, as the
    authors' code, whose list also holds the N zeros of the diagonal
    replaced by the median distance: left out here, as every zero)."""
    distances = distances[distances > 0]
    if distances.size == 0:
        return None
    # (a distance that doubles to inf: NaN in the spacing, which the callers
    # refuse as a scale beyond the float64 range)
    with np.errstate(invalid="ignore", over="ignore"):
        if rule == "fuse":
            ordered = np.sort(distances)
            low = ordered[int(0.05 * ordered.size)] / 2
            high = ordered[int(0.95 * ordered.size)] * 2
            return np.linspace(low, high, count)
        low = np.quantile(distances, 0.05) / 2
        high = distances.max() * 2
        return (np.geomspace(high, low, count) if high > low
                else np.full(count, high))


def given_gammas(gamma, default, grid, rule):
    """The scale values of a kernel: `gamma` checked (a 1-D sequence for
    the tests over a grid, `rule` "mmdagg" or "fuse"), else ``[default()]``
    or, for those, ``grid()``."""
    if gamma is None:
        return list(grid()) if rule else [default()]
    if rule and isinstance(gamma, (list, tuple, np.ndarray)):
        values = np.asarray(gamma, dtype=object).ravel()
        if values.size == 0:
            raise ValueError("gamma must hold at least one value")
    elif isinstance(gamma, (list, tuple, np.ndarray)):
        raise TypeError("gamma must be a positive number (a sequence of them "
                        "for method='aggregated' or 'fuse' only)")
    else:
        values = [gamma]
    return sorted(check_scalar(g, "gamma", low=0.0, low_inclusive=False)
                  for g in values)


# -- objects ----------------------------------------------------------------


def object_sample(spec, Z):
    """At most `BANDWIDTH_SAMPLE` of the pooled objects Z chosen by their
    values only (`_value_ranks` of their `value_keys`), in their order;
    all of them when there are no more. In memory (lazy objects: the
    sampled ones computed)."""
    n = spec.count(Z)
    if n <= BANDWIDTH_SAMPLE:
        return computed(Z)
    return computed(spec.take(Z, _value_ranks(spec.value_keys(Z),
                                               BANDWIDTH_SAMPLE)))



class DistanceSpec(Spec):
    """A kernel ``exp(-gamma S)`` of a distance S between objects (MMD^2
    between sets, chi2 between histograms): S computed once for all the
    scales. Default scale ``1 / median`` of S over the pairs of the
    `object_sample` (the divergence kernels' rule, `median_scale`); grid:
    MMDAgg's (MMD-FUSE's) on ``sqrt(S)`` (S is a squared distance: bandwidth
    b, gamma ``1 / b^2``, ``1 / (2 b^2)``)."""

    def distance_call(self, A, B, n_threads):
        """The distances S between the checked objects of A and B (None:
        A) as ``finish(call())``: `call`, the engine's driver bound to its
        arguments (a `functools.partial`), `finish`, what makes S of its
        result, float64; `blocks` calls the driver itself (the compiled
        loop two calls below the tools' blocks)."""
        raise NotImplementedError

    def distance(self, A, B, n_threads):
        """The distances S (`distance_call`)."""
        call, finish = self.distance_call(A, B, n_threads)
        return finish(call())

    def array_distance(self, A, B):
        """The distances S between the checked objects of A and B (None: A)
        of another library (`_array_api`), in that library, computed by the
        kernel's functions (on the device, or by the compiled engine where
        the library does not compute): the kernel at a scale g is ``exp(-g
        S)``."""
        raise NotImplementedError

    def array_part(self, A, B):
        """S (`array_distance`), float64."""
        S = self.array_distance(A, B)
        xp = _array_api.library_of(S=S).xp
        return xp.astype(S, xp.float64, copy=False)

    def array_values(self, S, params):
        """``exp(-g S)`` at the scale g of `params`."""
        return _array_api.library_of(S=S).xp.exp(-params[self.scale] * S)

    def scales(self, Z, gamma, grid, n_threads):
        if gamma is not None:
            return given_gammas(gamma, None, None, grid)
        S = self.distance(object_sample(self, Z), None, n_threads)
        if not grid:
            return [self._median_gamma(S)]
        off = S[~np.eye(len(S), dtype=bool)]
        return list(self._finite(distance_grid(np.sqrt(off), grid)))

    def _median_gamma(self, S):
        """The kernel's default scale on the distances S: ``1 / median``
        (`median_scale`), or a ValueError where that is beyond the float64
        range (a subnormal median)."""
        with np.errstate(over="ignore"):
            return float(self._finite(np.array([1.0 / median_scale(S)]))[0])

    def _finite(self, gammas):
        """`gammas`, or a ValueError where one is beyond the float64 range
        (the distances between the objects are subnormal: infinite, or
        overflow it: 0)."""
        if not np.all(np.isfinite(gammas) & (np.asarray(gammas) > 0)):
            raise ValueError(f"the {self.name} kernel's scale for the distances "
                             f"between the objects of X and Y is beyond the "
                             f"float64 range: scale X and Y to magnitudes "
                             f"nearer 1")
        return gammas

    def blocks(self, A, B, scales, n_threads):
        call, finish = self.distance_call(A, B, n_threads)
        S = finish(call())  # (not `distance`: the driver called from here)
        for g in scales:
            yield _by_rows(lambda rows, g=g: exp_minus(g, rows), S)


def distance_grid(T, rule):
    """Gammas of ``exp(-gamma T^2)`` for the distances T between objects,
    ascending: ``1 / b^2`` (MMDAgg), ``1 / (2 b^2)`` (MMD-FUSE)."""
    b = _bandwidths(T, N_BANDWIDTHS, rule)
    if b is None:
        return np.ones(N_BANDWIDTHS)
    with np.errstate(over="ignore"):
        return np.sort((1.0 if rule == "mmdagg" else 0.5) * b**-2.0)


def exp_minus(gamma, S):
    """``exp(-gamma S)`` as the units' kernels compute it (bit for bit for
    a finite gamma), with ``gamma S`` of 0 where S is 0 (an infinite gamma:
    the identity, not NaN) and ``exp(-inf) = 0`` where it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(-np.where(S > 0, gamma * S, 0.0))


class CallableSpec(Spec):
    """A user's ``kernel(A, B, **params)``: A and B are ranges of the
    input, indexed as it is (rows of an array or sparse matrix, items of a
    sequence, sets of a Bags)."""

    kind = "any"
    takes = None

    def __init__(self, function, params=None):
        super().__init__(getattr(function, "__name__", "kernel"), params)
        self.function = function

    def check(self, X, name="X"):
        if isinstance(X, Bags) or scipy.sparse.issparse(X) or \
                isinstance(X, np.ndarray):
            return X
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise TypeError(f"{name} must be a sequence or an array of objects "
                            f"(for a callable kernel), got {type(X).__name__}")
        return list(X)

    def count(self, X):
        return len(X) if isinstance(X, (list, Bags)) else X.shape[0]

    def pool(self, X, Y):
        return pool_any(X, Y)

    def take(self, Z, index):
        if isinstance(Z, list):
            if isinstance(index, slice):
                return Z[index]
            return [Z[i] for i in index]
        return Z[index]

    def blocks(self, A, B, scales, n_threads):
        K = self.function(A, A if B is None else B, **self.params)
        shape = (self.count(A), self.count(A if B is None else B))
        try:
            K = as_float_array(K, "the kernel's value")
        except (TypeError, ValueError):
            raise self.refused(K, shape) from None
        self.check_value(K.shape, shape, lambda: np.isfinite(K).all())
        yield np.asarray(K, dtype=np.float64)

    def call(self, A, B, params):
        """The user's function of A and B (None: A), objects of another
        library (`kernelmaps._array_api`), as given: its value checked there
        as `blocks` checks it (an array of their library and device, real,
        of the shape of the objects, finite where its values can be read),
        float32 for float32 A (as `NystroemMap` gives), else float64."""
        library = _array_api.library_of_objects(A=A, B=B)
        xp = library.xp
        K = self.function(A, A if B is None else B, **params)
        shape = (self.count(A), self.count(A if B is None else B))
        given = _array_api.library_of(K=K) if _array_api.is_foreign(K) else None
        if (given is None or given.name != library.name
                or (None not in (given.device, library.device)
                and given.device != library.device)
                or not xp.isdtype(K.dtype, ("bool", "integral", "real floating"))):
            raise self.refused(K, shape)
        self.check_value(K.shape, shape,
                         lambda: library.all_finite(K))
        return xp.astype(K, xp.float32 if getattr(A, "dtype", None) == xp.float32
                         else xp.float64)

    @staticmethod
    def refused(K, shape):
        """The TypeError of a value K of the user's function that is not a
        real array (for `shape` objects)."""
        return TypeError(f"kernel (a callable) must return a real array of shape "
                         f"{shape}, got {type(K).__name__}")

    @staticmethod
    def check_value(given, shape, finite):
        """A ValueError unless the `given` shape of the user's function's
        value is `shape` and ``finite()`` (whether its values are)."""
        if tuple(given) != shape:
            raise ValueError(f"kernel (a callable) returned shape {tuple(given)} "
                             f"for {shape[0]} x {shape[1]} objects")
        if not finite():
            raise ValueError("kernel (a callable) returned NaN or infinite "
                             "values")


class PrecomputedSpec(Spec):
    """Kernel matrices given: the objects are the indices of their rows
    (in the order of the samples), the scales the matrices (L, N, N)."""

    kind = "precomputed"

    def __init__(self, K):
        super().__init__("precomputed")
        self.K = K

    def count(self, X):
        return len(X)

    def take(self, Z, index):
        return Z[index]

    def scales(self, Z, gamma, grid, n_threads):
        return list(range(len(self.K)))

    def report(self, value):
        return None

    def blocks(self, A, B, scales, n_threads):
        for index in scales:
            M = self.K[index]
            yield (M[np.ix_(A, A)] if B is None else M[np.ix_(A, B)])


def pool_any(X, Y):
    """The objects of X then those of Y, of any kind: sparse rows stacked,
    sets of two `Bags` pooled (of a weighted `Bags` beside other sets too,
    keeping its weights), arrays concatenated, else a list."""
    if scipy.sparse.issparse(X) or scipy.sparse.issparse(Y):
        return scipy.sparse.vstack([scipy.sparse.csr_array(X),
                                    scipy.sparse.csr_array(Y)], format="csr")
    if any(isinstance(A, Bags) and A.weights is not None for A in (X, Y)):
        X, Y = check_sets(X, "X", weighted=True), check_sets(Y, "Y", weighted=True)
    if isinstance(X, Bags) and isinstance(Y, Bags):
        return concat_sets(X, Y)
    if isinstance(X, np.ndarray) and isinstance(Y, np.ndarray):
        if X.shape[1:] != Y.shape[1:]:
            raise ValueError(f"X and Y must hold objects of the same shape, "
                             f"got {X.shape[1:]} and {Y.shape[1:]}")
        return np.concatenate([X, Y])
    return list(X) + list(Y)


def check_precomputed(X):
    """The precomputed kernel matrix X (N, N), or matrices (L, N, N) for
    the tests over a grid, each checked by `check_kernel_matrix` (real,
    finite, square) and symmetric (to 1e-12 of its largest value: then made
    exactly symmetric); float64, shape (L, N, N)."""
    try:
        stacked = np.ndim(X) == 3
    except (TypeError, ValueError):
        stacked = False  # (ragged: check_kernel_matrix says what is wrong)
    mats = ([check_kernel_matrix(M, f"X[{i}]") for i, M in enumerate(X)]
            if stacked else [check_kernel_matrix(X, "X")])
    if len({M.shape for M in mats}) > 1:
        raise ValueError("X must hold kernel matrices of one shape (N, N)")
    K = np.stack(mats)
    top = np.abs(K).max()
    asym = np.abs(K - K.transpose(0, 2, 1)).max()
    if asym > 1e-12 * top:
        raise ValueError(asymmetry_message(asym, top))
    if asym > 0:
        K = (K + K.transpose(0, 2, 1)) / 2
    return K


def asymmetry_message(asym, top):
    """The message of a precomputed matrix X of asymmetry `asym` (largest
    value `top`) beyond 1e-12 of its largest value."""
    return (f"X (the precomputed kernel matrix) must be symmetric; its largest "
            f"asymmetry is {asym:.3g} (its largest value {top:.3g})")


# -- the registry -----------------------------------------------------------


# The spec class of each kernel name, and the kind of objects it takes,
# filled by `register` as the units are imported, in the order of
# `_KIND_ORDER` (and of registration within a kind), whatever the order of
# the imports: the order the tools' messages list the kernels in.
SPECS = {}
KINDS = {}
_KIND_ORDER = ("points", "sets", "rows", "gaussians")


# The kernels' public functions by kernel name (`kernel_function`).
FUNCTIONS = {}


def kernel_function(*names):
    """Decorate the public function of the kernels `names`: what their
    specs' `Spec.call` runs (registered here, as the functions import
    their specs)."""

    def add(function):
        FUNCTIONS.update(dict.fromkeys(names, function))
        return function

    return add


def register(*names):
    """Class decorator: the spec of the kernels `names`."""
    def add(cls):
        for name in names:
            SPECS[name] = cls
        ordered = sorted(SPECS.items(), key=lambda item: (
            _KIND_ORDER.index(item[1].kind) if item[1].kind in _KIND_ORDER
            else len(_KIND_ORDER)))
        SPECS.clear()
        SPECS.update(ordered)
        KINDS.clear()
        KINDS.update((name, spec.kind) for name, spec in ordered)
        return cls
    return add




def check_kernel_params(params, spec):
    """A tool's `kernel_params` as a dict of keyword arguments the kernel of
    `spec` takes (their values are the spec's to check)."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"kernel_params must be a dict, got {type(params).__name__}")
    if spec.takes is not None:
        unknown = sorted(set(params) - set(spec.takes))
        if unknown:
            allowed = ", ".join(spec.takes) or "none"
            raise ValueError(
                f"kernel_params has {unknown[0]!r}, which the {spec.name!r} "
                f"kernel does not take (it takes: {allowed})"
            )
    return dict(params)


def kernel_names(*kinds):
    """The names of the kernels of objects of `kinds` (none: every
    kernel), in the registry's order."""
    return tuple(name for name, kind in KINDS.items()
                 if not kinds or kind in kinds)


def spec_for(kernel, params=None):
    """The spec of a kernel name or callable, with its `params`."""
    if callable(kernel):
        return CallableSpec(kernel, params)
    return SPECS[kernel](kernel, params)


def object_kind(X):
    """"sets" where X looks like a collection of sets (a Bags, a 3-D array
    or a non-empty sequence of 2-D arrays), else None."""
    if isinstance(X, Bags):
        return "sets"
    if isinstance(X, np.ndarray):
        return "sets" if X.ndim == 3 else None
    if isinstance(X, (list, tuple)) and len(X) > 0 and np.ndim(X[0]) == 2:
        return "sets"
    return None
