"""The resampling tests of objects (sets, histograms, Gaussians) computed
by the arrays' own library, on their device (`mmd_test` of objects that
`ArrayLibrary.native` says the library computes): `on_device`'s tests,
the kernel matrix's blocks computed by the kernel's public function
(`Spec.call`, `_Gram`) in place of its point kernels.

Every kernel of objects whose function runs there: of sets (lists of 2-D
arrays, 3-D arrays, `Bags` of the library's points, weighted or not; any
mix), "mean_map" (any point kernel), "mmd", "renyi" and
"sliced_wasserstein" (its directions drawn from the call's generator past
the resamples' seeds, as on the host); of histograms (2-D arrays), the
additive kernels and "exp_chi2"; of Gaussians (pairs ``(means, covs)``),
"expected". On the host stay the callables (their objects are sequences
of anything, which their function takes as it is given them).

The samples are checked on the device with the NumPy path's messages
(only booleans come back), the options by the NumPy path's `check_input`
on host stand-ins of the samples' sizes. The scales the NumPy path
derives from the data come from the same objects, chosen by their values
(`on_device.sample_rows`: their projections come back, one or two floats
each) and copied, at most `BANDWIDTH_SAMPLE` of them: the points of
a point kernel's median heuristic and grid (the mean map's, MMD's point
kernel's, the expected kernel's means), the objects of the rules on a
distance between them (MMD^2, SW_2^2, chi2, the Renyi divergences); the
spec's own `scales` then runs on those, on the host. The same p-value as
the same NumPy input.
"""

import copy
import math
import warnings

import numpy as np

from .. import _array_api
from .._bags import Bags
from .._spec import (
    BANDWIDTH_SAMPLE,
    KINDS,
    sample_direction,
    spec_for,
)
from .._warnings import DegenerateWarning
from . import draws, on_device
from .checks import check_input

# Objects of a block of the diagonal of the kernel matrix (`_Gram`).
DIAGONAL_BLOCK = 256


def takes(library, X, Y, kernel, gamma, method, feature_map, incomplete,
          kernel_params):
    """Whether `mmd_test` runs on the device: a library that computes
    (`native`), a resampling test (`on_device.CONCLUDE`) without
    `feature_map` or `incomplete`, of two samples of the library's objects
    of the kernels' kind (`_kind`): collections of sets, 2-D arrays of
    histograms, or pairs of arrays (Gaussians)."""
    if not (library.native and feature_map is None and incomplete is None
            and isinstance(method, str) and method in on_device.CONCLUDE):
        return False
    kind = _kind(kernel, X)[0]
    if kind == "sets":
        return all(_are_sets(S) for S in (X, Y))
    if kind == "rows":
        return all(_is_array(S, 2) for S in (X, Y))
    return kind == "gaussians" and all(
        isinstance(S, tuple) and len(S) == 2
        and all(_array_api.is_foreign(a) for a in S) for S in (X, Y))


def _kind(kernel, X):
    """The kind of objects of the kernel names `kernel` (None: "mean_map"
    where X is a collection of sets) and the names; None where it is not
    one kind of objects (points, a callable, a kernel matrix, kernels of
    several kinds)."""
    if kernel is None:
        names = ("mean_map",) if _are_sets(X) else ()
    else:
        names = (kernel,) if isinstance(kernel, str) else (
            tuple(kernel) if isinstance(kernel, (list, tuple)) else ())
    kinds = {KINDS.get(name) if isinstance(name, str) else None
             for name in names}
    kind = kinds.pop() if len(kinds) == 1 else None
    return (kind if kind in ("sets", "rows", "gaussians") else None), names


def _are_sets(S):
    """Whether S is a collection of sets of another library: a non-empty
    list of 2-D arrays, a 3-D array or a Bags of its points."""
    if isinstance(S, Bags):
        return _array_api.is_foreign(S.points)
    if isinstance(S, (list, tuple)):
        return len(S) > 0 and all(_is_array(a, 2) for a in S)
    return _is_array(S, 3)


def _is_array(S, ndim):
    return _array_api.is_foreign(S) and getattr(S, "ndim", None) == ndim


def test(library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
         kernel_params, dtype, rng, workers, progress, working_memory):
    """`mmd_test` of the objects X and Y of `library` (`takes`) on their
    device: the `MMDTestResult` of the same NumPy input."""
    options = (method, n_resamples, None, alpha, unbiased, None,
               kernel_params, dtype, rng, workers, progress, working_memory)
    kind, names = _kind(kernel, X)
    spec = spec_for(names[0])  # (its checks of objects; the call's: check_input)
    check = {"sets": _sets, "rows": _rows, "gaussians": _gaussians}[kind]
    (X, stand_x), (Y, stand_y) = (check(library, spec, S, name)
                                  for S, name in ((X, "X"), (Y, "Y")))
    spec.pool(_empty(X), _empty(Y))  # (raises where their widths differ)
    iv = check_input(stand_x, stand_y, kernel, gamma, *options)
    Z = _pooled(library, iv, X, Y)
    # what a kernel draws (sliced_wasserstein's directions): from the
    # generator past the resamples' seeds, which `_resampled` draws first,
    # as on the host
    ahead = copy.deepcopy(iv.generator)
    draws.block_seeds(ahead, iv.total)
    kernels = []
    for spec in iv.specs:
        spec.rng = ahead
        scales = _scales(library, iv, spec, Z)
        kernels.append((spec, scales, _Gram(library, spec, scales, Z)))
    xp = library.xp
    # whether the pooled objects are all equal: of histograms only (the
    # host compares arrays)
    result = on_device._resampled(
        library, iv, on_device._budget(library, iv.budget, working_memory),
        kernels, lambda: kind == "rows" and library.holds(xp.all(Z[:1, :] == Z)))
    iv.generator.bit_generator.state = ahead.bit_generator.state  # (as the
    # host leaves it)
    return result


def _sets(library, spec, S, name):
    """The sets S (argument `name`: a list of 2-D arrays, a 3-D array or a
    Bags of `library`'s points) checked as `spec.check` checks them
    (`SetSpec.check_bags`), as a Bags of their points without a gradient,
    and its host stand-in (zeros of its sizes, one column, with its
    weights) for `check_input`."""
    bags, stand_in = spec.check_bags(library, S, name)
    points = on_device._values(library, bags.points, name, rows=False)
    return Bags(points, bags.offsets, bags.weights), stand_in


def _rows(library, spec, A, name):
    """The histograms A (argument `name`), checked by `spec.check_array`,
    without a gradient, and their host stand-in."""
    A = spec.check_array(library, on_device._values(library, A, name,
                                                    rows=False), name)
    return A, on_device._stand_in(library, A)


def _gaussians(library, spec, G, name):
    """The Gaussians G = (means, covs) (argument `name`), checked by
    `spec.check_array`, without a gradient, and their host stand-in (means
    of one feature, covariances of their form)."""
    means, covs = spec.check_array(library, tuple(
        on_device._values(library, a, f"{name}[{i}]", rows=False)
        for i, a in enumerate(G)), name)
    n = means.shape[0]
    return (means, covs), (np.zeros((n, 1)), np.zeros((n, 1, 1)[:covs.ndim]))


def _empty(S):
    """No object of the width of the checked objects S, on the host (what
    `Spec.pool` reads of them)."""
    if isinstance(S, Bags):
        return Bags(np.zeros((0, S.dim)), np.zeros(1, dtype=np.int64))
    if isinstance(S, tuple):
        return np.zeros((0, S[0].shape[1])), np.zeros(0)
    return np.zeros((0, S.shape[1]))


def _pooled(library, iv, X, Y):
    """The checked objects of X, then those of Y, as the NumPy path pools
    them (`Spec.pool`: the pooled stand-in `iv.Z` gives the sets' offsets
    and weights, the Gaussians' covariance form): sets as a Bags, float64
    where their dtypes differ; histograms likewise; Gaussians (float64,
    from their check) of one covariance form."""
    xp = library.xp
    if isinstance(X, tuple):
        d, form = X[0].shape[1], iv.Z[1].ndim
        return (xp.concat([X[0], Y[0]]),
                xp.concat([_covariances(library, S[1], d, form) for S in (X, Y)]))
    points = [S.points if isinstance(S, Bags) else S for S in (X, Y)]
    if points[0].dtype != points[1].dtype:
        points = [xp.astype(P, xp.float64) for P in points]
    pooled = xp.concat(points)
    return Bags(pooled, iv.Z.offsets, iv.Z.weights) if isinstance(X, Bags) \
        else pooled


def _covariances(library, c, d, form):
    """Covariances c of any form as those of `form` (`full_covariances`
    where the pooled form is full, c as it is otherwise)."""
    if c.ndim == form:
        return c
    xp = library.xp
    return (xp.reshape(c, (*c.shape, *(1,) * (3 - c.ndim)))
            * xp.eye(d, dtype=c.dtype, device=library.device))


def _take(Z, index):
    """The pooled objects `index` (a slice) of Z."""
    if isinstance(Z, tuple):
        return tuple(a[index, ...] for a in Z)
    return Z[index] if isinstance(Z, Bags) else Z[index, ...]


def _dim(Z):
    """The number of features of the pooled objects Z."""
    if isinstance(Z, tuple):
        return Z[0].shape[1]
    return Z.dim if isinstance(Z, Bags) else Z.shape[1]


def _scales(library, iv, spec, Z):
    """The scale values of `spec` on the pooled objects Z, its own `scales`
    (as the host's) run on what its rules read of them, copied: the
    `_point_sample` where the scale is a point kernel's gamma (the mean
    map, the expected kernel), MMD's point kernel's gamma fixed on it
    first; else the `_object_sample` where gamma is None (the rules on a
    distance between the objects). The directions of a kernel that draws
    them (sliced_wasserstein) drawn first, from `spec.rng`."""
    if hasattr(spec, "directions"):
        spec.directions(_dim(Z))
    if "kernel" in spec.takes:  # (a point kernel under the kernel)
        median = spec.params.get("kernel", "rbf") in ("rbf", "laplacian")
        if spec.scale == "gamma":
            sample = _point_sample(library, Z, median and iv.gamma is None)
            return spec.scales(sample, iv.gamma, iv.grid, iv.n_threads)
        spec.params = {**spec.params, **spec.resolved_point(_point_sample(
            library, Z, median and spec.params.get("gamma") is None))}
    sample = (_object_sample(library, spec, Z)
              if iv.gamma is None and spec.scale is not None else None)
    return spec.scales(sample, iv.gamma, iv.grid, iv.n_threads)


def _point_sample(library, Z, needed):
    """What a point kernel's rules read of the pooled objects Z (sets, or
    Gaussians: their means), on the host: `needed`, the `value_sample` of
    the points in float64 (of positive weight, a Bags of one set with
    their weights, as `SetSpec.point_median` takes them), else a point of
    their features."""
    gaussians = isinstance(Z, tuple)
    if not needed:
        point = np.zeros((1, _dim(Z)))
        return (point, None) if gaussians else Bags(point, np.array([0, 1]))
    xp = library.xp
    points = xp.astype(Z[0] if gaussians else Z.points, xp.float64)
    weights = None if gaussians else Z.weights
    if weights is not None:
        points = xp.take(points, library.from_numpy(np.flatnonzero(weights > 0)),
                         axis=0)
        weights = weights[weights > 0]
    rows = on_device.sample_rows(library, points,
                        sample_direction(points.shape[1])[:, None])
    sample = library.to_numpy(xp.take(points, library.from_numpy(rows), axis=0))
    if gaussians:
        return sample, None
    return Bags(sample, np.array([0, len(rows)]),
                None if weights is None else weights[rows])


def _object_sample(library, spec, Z):
    """`_spec.object_sample` of the pooled sets or histograms Z, copied:
    at most `BANDWIDTH_SAMPLE` of them, chosen by their `value_keys`
    (`_set_keys` of sets, histograms their own) on the device."""
    if spec.count(Z) > BANDWIDTH_SAMPLE:
        keys = _set_keys(library, Z) if isinstance(Z, Bags) else Z
        # (the directions of `_spec._value_ranks`)
        directions = np.random.default_rng(0).normal(size=(keys.shape[1], 2))
        rows = on_device.sample_rows(library, keys, directions, sort=True)
        Z = (Z[rows] if isinstance(Z, Bags)
             else library.xp.take(Z, library.from_numpy(rows), axis=0))
    if isinstance(Z, Bags):
        return Bags(library.to_numpy(Z.points), Z.offsets, Z.weights)
    return library.to_numpy(Z)


def _set_keys(library, Z):
    """`SetSpec.value_keys` of the sets Z (a Bags of `library`'s points) on
    their device: each set's mean and mean square of its points over
    their largest magnitude (weighted), and its total weight over the
    largest, float64; the sums of the sets a block of them at a time."""
    xp = library.xp
    points = xp.astype(Z.points, xp.float64)
    top = xp.max(xp.abs(points))
    unit = points / top if library.scalar(top) > 0 else points
    values = xp.concat([unit, unit * unit], axis=1)
    if Z.weights is not None:
        values = values * library.from_numpy(Z.weights[:, None])
    sizes, width = Z.sizes, values.shape[1]
    n_max = int(sizes.max())
    sums = []
    for a, b in _array_api.row_blocks(len(Z), 16.0 * n_max * width, library):
        inside = np.arange(n_max) < sizes[a:b, None]
        rows = np.where(inside, Z.offsets[a:b, None] + np.arange(n_max), 0)
        block = xp.reshape(xp.take(values, library.from_numpy(rows.reshape(-1)),
                                   axis=0), (b - a, n_max, width))
        sums.append(xp.sum(xp.where(library.from_numpy(inside[..., None]),
                                    block, 0.0), axis=1))
    total = Z.set_weights()
    return xp.concat([xp.concat(sums) / library.from_numpy(total[:, None]),
                      library.from_numpy((total / total.max())[:, None])],
                     axis=1)


class _Gram:
    """The kernel of `spec` at its `scales` between the pooled objects Z of
    `library` (`_pooled`; histograms in float64, as their functions
    compute them), computed on their device by the kernel's function
    (`Spec.call`, its values in float64), an `on_device` kernel object."""

    def __init__(self, library, spec, scales, Z):
        xp = library.xp
        if not isinstance(Z, (Bags, tuple)):
            Z = xp.astype(Z, xp.float64, copy=False)
        self.library, self.spec, self.Z = library, spec, Z
        self.params = [self._params(scale) for scale in scales]
        self.diagonals = None
        self.N = spec.count(Z)

    def _params(self, scale):
        """The keyword arguments of the function at `scale`."""
        spec = self.spec
        params = dict(spec.params)
        if "kernel" in spec.takes:
            params.update(spec.point_params())
        if spec.scale is not None:  # (a Python float: NumPy's scalars
            # take arrays of other libraries into NumPy, as left operands)
            params[spec.scale] = (scale if scale is None or isinstance(
                scale, tuple) else float(scale))
        return {k: v for k, v in params.items() if k in spec.takes}

    def blocks(self, rows, cols):
        """k(Z[rows], Z[cols]) at each scale, for slices `rows` and
        `cols` (the same: the symmetric block, as the host's matrix)."""
        return self._kernel(_take(self.Z, rows),
                            None if rows == cols else _take(self.Z, cols))

    def _kernel(self, A, B):
        """k(A, B) (B None: the symmetric k(A, A)) at each scale, float64,
        by the function (its warnings left to the test's)."""
        xp = self.library.xp
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateWarning)
            part = self.spec.array_part(A, B)  # (once for every scale)
            return [xp.astype(self.spec.call(A, B, params) if part is None
                              else self.spec.array_values(part, params),
                              xp.float64, copy=False) for params in self.params]

    def diagonal(self, library, index):
        """k(z, z) of the pooled objects at scale `index`, on the host: the
        diagonals of the symmetric blocks of `DIAGONAL_BLOCK` objects (as
        the host takes it, from the symmetric matrix)."""
        if self.diagonals is None:
            xp, parts = library.xp, []
            for a in range(0, self.N, DIAGONAL_BLOCK):
                b = min(a + DIAGONAL_BLOCK, self.N)
                eye = xp.eye(b - a, dtype=xp.bool, device=library.device)
                parts.append([xp.sum(xp.where(eye, K, 0.0), axis=1) for K in
                              self._kernel(_take(self.Z, slice(a, b)), None)])
            self.diagonals = [library.to_numpy(xp.concat(list(values)))
                              for values in zip(*parts, strict=True)]
        return self.diagonals[index]

    def shift(self, library, spec, index, N):
        """`permutation.shifts` of scale `index` (`on_device.head_shift`)."""
        return on_device.head_shift(library, self, index, N)

    def reach(self, library, index):
        """The largest magnitude of the kernel's values: the largest of
        its diagonal (a kernel of positive type: ``|k(x, y)|^2 <= k(x, x)
        k(y, y)``), else unbounded (float64 products)."""
        params = self.params[index]
        if params.get("kernel") == "polynomial" and params.get("coef0", 1.0) < 0:
            return math.inf
        return float(np.max(np.abs(self.diagonal(library, index))))
