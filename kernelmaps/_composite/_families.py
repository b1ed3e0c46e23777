"""The kernels a two-sample test resamples (`mmd_test`): for each kernel,
its scale values and the kernel matrix of the pooled sample at each.

A `Family` is one kernel on the pooled objects (the n objects of X, then
the m of Y) with the values of its scale the test uses: one for a single
test, a grid for the aggregated one, ``[None]`` for a kernel without a
scale. What the scale is, per kernel:

==============================  ===========  ==================================
kernel                          objects      scale (``gamma`` of `mmd_test`)
==============================  ===========  ==================================
"rbf", "laplacian"              points       the point kernel's gamma
"mean_map", "expected"          sets,        the point kernel's gamma
                                Gaussians
"mmd"                           sets         gamma2 of `mmd_kernel`
"exp_chi2"                      histograms   beta of `exp_chi2_kernel`
"renyi"                         sets         gamma of `divergence_kernel`
"chi2", "intersection",         histograms   none
"hellinger", "js"
"precomputed", a callable       any          none
==============================  ===========  ==================================

Every default depends on the values of the pooled objects only, never on
which sample an object is in, so that the test stays exact: a point
kernel's gamma is the median heuristic on a sample of the pooled points
chosen by their values (`value_sample`); the scale of a kernel ``exp(-gamma
S)`` of a distance S between objects (MMD^2, chi2) is ``1 / median`` of S
over the pairs of pooled objects, and the divergence kernel's is its own
median rule (`divergence_kernel`). The aggregated test's grid is MMDAgg's
rule applied to the kernel's distance: 10 bandwidths spaced geometrically
from half the 5 % quantile of the (positive) distances to twice the
largest (Schrab et al., 2023).

For the kernels of a distance (mmd, exp_chi2, renyi) the distances are
computed once and every scale of the grid is one exponential of them; each
matrix is the one the unit's public function gives for the same
parameters, bit for bit, so that a kernel given by name and the same
matrix given as ``"precomputed"`` give the same test.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse

from .._bags import Bags
from .._engine.pair_sums import pair_sums
from .._engine.scales import divergence_kernel_matrix, median_scale
from .._gamma import point_median_gamma, scaled_distances, unscaled_gammas
from .._validation import (
    check_kernel_matrix,
    check_scalar,
    check_size,
    full_covariances,
)
from .._warnings import degenerate
from ..histograms import chi2_distance
from ..sets import mmd, renyi_divergence
from ._kernels import KERNELS, Callable

__all__ = ["POINT_KERNELS", "Family", "families", "value_sample"]

POINT_KERNELS = ("rbf", "laplacian")
# Points from which the default bandwidths are computed.
BANDWIDTH_SAMPLE = 1000
# Scale values of each kernel in the aggregated test.
N_BANDWIDTHS = 10


@dataclass
class Family:
    """One kernel of the test.

    `name` is the kernel as the result reports it; `gammas` its scale
    values; ``matrix(gamma)`` the pooled kernel matrix (float64, N x N);
    `scaled`: whether it has a scale (then it is tested for degeneracy);
    `between` what its degenerate warning names. `fast`, where set, is
    ``fast(n, mode, dtype)``, a generator of `matrices` that shares work
    between the scales (mode "permutation", "wild", or "swap": the
    two-sample module's forms); `report`, where set, gives the scale to
    report for a gamma of None (found when the matrix was computed).
    """

    name: str
    gammas: list
    matrix: object
    scaled: bool = True
    between: str = "distinct points of X and Y"
    fast: object = field(default=None, repr=False)
    report: object = field(default=None, repr=False)

    def matrices(self, n, wild, dtype):
        """(gamma, M, how the kernel is degenerate) for each scale: M is
        H (n x n, see `h_matrix`) for the wild bootstrap, else the pooled
        matrix in `dtype`; the kind is None unless the kernel has a scale
        and is 0 between all distinct objects or 1 between all."""
        if self.fast is not None:
            yield from self.fast(n, "wild" if wild else "permutation", dtype)
            return
        for g in self.gammas:
            # C order, as every matrix of the engine: a product's rounding
            # depends on the layout, and the same matrix given otherwise
            # ("precomputed") must give the same test
            K = np.ascontiguousarray(self.matrix(g), dtype=np.float64)
            kind = degenerate(K, symmetric=True) if self.scaled else None
            yield g, (h_matrix(K, n, dtype) if wild else
                      K.astype(dtype, copy=False)), kind


def h_matrix(K, n, dtype):
    """``H = Kxx + Kyy - Kxy - Kyx`` with a zero diagonal, from the pooled
    matrix of 2n points."""
    H = np.add(K[:n, :n], K[n:, n:], dtype=dtype)
    H -= K[:n, n:]
    H -= K[n:, :n]
    np.fill_diagonal(H, 0.0)
    return H


def value_sample(Z, size):
    """At most `size` of the points of Z chosen by their values only: those
    at evenly spaced ranks along a fixed random direction. The same points
    for every order of the pooled sample, so that the kernel the test
    chooses does not depend on which points were in which sample (the
    test's exactness requires it)."""
    if len(Z) <= size:
        return Z
    direction = np.random.default_rng(0).normal(size=Z.shape[1])
    top = np.abs(Z).max()
    scaled = Z / top if top > 0 else Z  # no overflow in the projection
    order = np.argsort(scaled @ direction, kind="stable")
    return Z[order[np.linspace(0, len(Z) - 1, size).astype(np.int64)]]


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
    authors' code takes the sorted distances at ``floor(0.05 len)`` and
    ``floor(0.95 len)``)."""
    distances = distances[distances > 0]
    if distances.size == 0:
        return None
    if rule == "fuse":
        ordered = np.sort(distances)
        low = ordered[int(0.05 * ordered.size)] / 2
        high = ordered[int(0.95 * ordered.size)] * 2
        return np.linspace(low, high, count)
    low = np.quantile(distances, 0.05) / 2
    high = distances.max() * 2
    return np.geomspace(high, low, count) if high > low else np.full(count, high)


def _distance_grid(T, rule):
    """Gammas of ``exp(-gamma T^2)`` for the distances T between objects,
    ascending: ``1 / b^2`` (MMDAgg), ``1 / (2 b^2)`` (MMD-FUSE)."""
    b = _bandwidths(T, N_BANDWIDTHS, rule)
    if b is None:
        return np.ones(N_BANDWIDTHS)
    with np.errstate(over="ignore"):
        return np.sort((1.0 if rule == "mmdagg" else 0.5) * b**-2.0)


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


# -- the kernels of objects --------------------------------------------------


def _distance_family(name, S, gamma, grid, matrix, between):
    """A kernel ``exp(-gamma S)`` of a distance-like matrix S (MMD^2 between
    sets, chi2 distances): default ``1 / median`` of S over the pairs (the
    divergence kernels' rule, `median_scale`), grid
    MMDAgg's on ``sqrt(S)`` (S is a squared distance: bandwidth b, gamma
    ``1 / b^2``)."""
    off = S[~np.eye(len(S), dtype=bool)]

    def default():  # the median rule of the divergence kernels
        with np.errstate(over="ignore"):  # a subnormal median: gamma inf
            return _finite_scales(np.array([1.0 / median_scale(S)]), name)[0]

    return Family(name, given_gammas(
        gamma, default, lambda: _finite_scales(_distance_grid(np.sqrt(off), grid),
                                               name), grid), matrix,
        between=between)


def _finite_scales(gammas, name):
    """`gammas`, or a ValueError where one is beyond the float64 range (the
    distances between the objects are subnormal)."""
    if not np.all(np.isfinite(gammas)):
        raise ValueError(f"the {name} kernel's scale for the distances between "
                         f"the objects of X and Y is beyond the float64 range: "
                         f"scale X and Y to magnitudes nearer 1")
    return gammas


def _exp_minus(gamma, S):
    """``exp(-gamma S)`` as the unit's kernels compute it (bit for bit for
    a finite gamma), with ``gamma S`` of 0 where S is 0 (an infinite gamma:
    the identity, not NaN) and ``exp(-inf) = 0`` where it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(-np.where(S > 0, gamma * S, 0.0))


def _set_points(Z):
    """The pooled points of the pooled sets (for the point kernels'
    defaults)."""
    return Z.points.astype(np.float64, copy=False)


def _object_family(spec, Z, gamma, params, grid, n_threads):
    """The `Family` of the package's kernel `spec` on the pooled objects."""
    name = spec.name
    between = "distinct objects of X and Y"
    point = params.get("kernel", "rbf")
    if name in ("mean_map", "expected"):
        reference = _set_points(Z) if name == "mean_map" else Z[0]
        rest = {k: v for k, v in params.items() if k != "gamma"}
        if point not in POINT_KERNELS:  # linear, polynomial: no median rule
            gammas = given_gammas(gamma, lambda: None, lambda: [None], grid)
            return Family(name, gammas, lambda g: _as64(spec.block(
                Z, None, {**rest, "gamma": g}, n_threads)), scaled=False)
        gammas = given_gammas(gamma, lambda: point_gamma(None, reference, point),
                              lambda: point_grid(reference, point, N_BANDWIDTHS,
                                                 grid), grid)
        return Family(name, gammas, lambda g: _as64(spec.block(
            Z, None, {**rest, "gamma": g}, n_threads)), between=between)
    if name == "mmd":
        inner = params.get("gamma")
        if inner is None and point in POINT_KERNELS:
            inner = point_gamma(None, _set_points(Z), point)
        rest = {k: v for k, v in params.items() if k not in ("gamma", "gamma2")}
        D2 = _as64(mmd(Z, **rest, gamma=inner, squared=True, workers=n_threads))

        def matrix(g2):  # as mmd_kernel
            return _exp_minus(g2, D2)

        return _distance_family(name, D2, gamma, grid, matrix, between)
    if name == "exp_chi2":
        S = _as64(chi2_distance(Z, workers=n_threads))

        def matrix(beta):  # as exp_chi2_kernel
            return _exp_minus(beta, S)

        return _distance_family(name, S, gamma, grid, matrix, between)
    if name == "renyi":
        return _renyi_family(Z, gamma, params, grid, n_threads, between)
    # chi2, intersection, hellinger, js: no scale
    return Family(name, [None], lambda g: _as64(spec.block(Z, None, params,
                                                           n_threads)),
                  scaled=False)


def _renyi_family(Z, gamma, params, grid, n_threads, between):
    """`divergence_kernel` of the kNN Renyi divergences of the pooled sets,
    computed once: its default scale is its median rule; the grid is
    MMDAgg's on ``S ** (power / 2)``, S the symmetrised divergences."""
    divergence = {k: params[k] for k in ("alpha", "k", "min_dist", "clamp")
                  if k in params}
    if "alpha" in divergence:
        divergence["alpha"] = check_scalar(divergence["alpha"], "alpha")
    power = check_scalar(params.get("power", 2), "power", low=0.0,
                         low_inclusive=False)
    D = renyi_divergence(Z, **divergence, workers=n_threads, dtype=np.float64)
    scales = {}

    def matrix(g):
        K, scale = divergence_kernel_matrix(D, power=power, gamma=g)
        if g is None:
            scales["median"] = scale
        return K

    if gamma is None and not grid:
        return Family("renyi", [None], matrix, between=between,
                      report=lambda: scales["median"] ** -power)

    def grid_gammas():
        S = np.maximum((D + D.T) / 2, 0.0)
        with np.errstate(over="ignore", under="ignore"):
            T = S[~np.eye(len(S), dtype=bool)] ** (power / 2)
        return _distance_grid(T[np.isfinite(T)], grid)

    return Family("renyi", given_gammas(gamma, None, grid_gammas, grid), matrix,
                  between=between)


def _as64(K):
    return np.asarray(K, dtype=np.float64)


# -- pooling -----------------------------------------------------------------


def pooled(kind, X, Y):
    """The objects of X then those of Y, checked, as one collection of
    `kind` ("sets", "rows", "gaussians" or "any")."""
    if kind == "sets":
        if X.dim != Y.dim:
            raise ValueError(f"X and Y must hold sets of points of the same "
                             f"dimension, got {X.dim} and {Y.dim}")
        dtype = np.result_type(X.points.dtype, Y.points.dtype)
        return Bags(np.concatenate([X.points, Y.points]).astype(dtype, copy=False),
                    np.concatenate([X.offsets, X.offsets[-1] + Y.offsets[1:]]))
    if kind == "gaussians":
        (mx, cx), (my, cy) = X, Y
        if mx.shape[1] != my.shape[1]:
            raise ValueError(f"X and Y must hold Gaussians of the same "
                             f"dimension, got {mx.shape[1]} and {my.shape[1]}")
        if cx.ndim != cy.ndim:  # one covariance form for both
            cx, cy = full_covariances(cx, mx.shape[1]), full_covariances(
                cy, my.shape[1])
        return np.concatenate([mx, my]), np.concatenate([cx, cy])
    if kind == "rows" and X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must hold histograms of the same number of "
                         f"bins, got {X.shape[1]} and {Y.shape[1]}")
    if scipy.sparse.issparse(X) or scipy.sparse.issparse(Y):
        return scipy.sparse.vstack([scipy.sparse.csr_array(X),
                                    scipy.sparse.csr_array(Y)], format="csr")
    if isinstance(X, Bags) and isinstance(Y, Bags):
        return pooled("sets", X, Y)
    if isinstance(X, np.ndarray) and isinstance(Y, np.ndarray):
        if X.shape[1:] != Y.shape[1:]:
            raise ValueError(f"X and Y must hold objects of the same shape, "
                             f"got {X.shape[1:]} and {Y.shape[1:]}")
        return np.concatenate([X, Y])
    return list(X) + list(Y)


def families(spec_names, Z, gamma, params, grid, n_threads):
    """The families of the kernels `spec_names` (names of the package's
    kernels on objects, or one callable) on the pooled objects Z."""
    out = []
    for name in spec_names:
        if callable(name):
            spec = Callable(name)
            out.append(Family(spec.name, [None], lambda g, s=spec: s.block(
                Z, None, params, n_threads), scaled=False))
        else:
            out.append(_object_family(KERNELS[name], Z, gamma, params, grid,
                                      n_threads))
    return out


def point_family(Z, kernel, gamma, grid, n_threads, fast):
    """The family of the point kernel `kernel` on the pooled points Z."""
    gammas = given_gammas(gamma, lambda: point_gamma(None, Z, kernel),
                          lambda: point_grid(Z, kernel, N_BANDWIDTHS, grid), grid)
    return Family(kernel, gammas,
                  lambda g: pooled_point_kernel(Z, kernel, g, n_threads),
                  fast=fast)


def pooled_point_kernel(Z, kernel, gamma, n_threads, progress=False):
    """k(z_i, z_j) of all pooled points (the exact engine, on one-point
    sets), float64."""
    check_size(pooled_rows=len(Z), pooled_columns=len(Z))
    bags = Bags(Z, np.arange(len(Z) + 1))
    return pair_sums(bags, kernel=kernel, gamma=gamma, n_threads=n_threads,
                     progress=progress, desc="pooled kernel")


def precomputed_families(K):
    """One family per kernel matrix of the checked K (L, N, N)."""
    return [Family("precomputed", [None], lambda g, M=M: M, scaled=False)
            for M in K]


def labels_order(labels, N):
    """The order that puts the rows labelled 0 (or False: the first
    sample) first, then those labelled 1 (True), and n, the size of the
    first sample; ValueError unless `labels` is a 1-D array of N such
    values, at least 2 of each."""
    try:
        y = np.asarray(labels)
    except (TypeError, ValueError):
        raise TypeError("Y must be the sample label (0 or 1) of each row of "
                        "the precomputed matrix X") from None
    if y.ndim != 1 or y.shape[0] != N:
        raise ValueError(f"Y must hold the label (0 or 1) of each of the {N} "
                         f"rows of the precomputed matrix X, got shape "
                         f"{y.shape}")
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all():
        raise ValueError("Y (the labels of the precomputed matrix's rows) "
                         "must be boolean or 0/1")
    first = np.flatnonzero(y == 0)
    second = np.flatnonzero(y == 1)
    if len(first) < 2 or len(second) < 2:
        raise ValueError(f"Y must label at least 2 rows of each sample, got "
                         f"{len(first)} and {len(second)}")
    return np.concatenate([first, second]), len(first)


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
        raise ValueError(f"X (the precomputed kernel matrix) must be symmetric; "
                         f"its largest asymmetry is {asym:.3g} (its largest "
                         f"value {top:.3g})")
    if asym > 0:
        K = (K + K.transpose(0, 2, 1)) / 2
    return K


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


def scale_report(family, g):
    """The scale the result reports for `g` (the renyi kernel's median
    rule, found when its matrix was computed)."""
    return family.report() if (g is None and family.report) else g
