"""The resampling tests of sets and of histograms computed by the arrays'
own library, on their device (`mmd_test` of sets or histograms that
`ArrayLibrary.native` says the library computes): `on_device`'s tests,
the kernel matrix's blocks computed by the kernel's public function
(`_Gram`) in place of its point kernels.

The samples are checked on the device with the NumPy path's messages
(only booleans come back), the options by the NumPy path's `check_input`
on host stand-ins of the samples' sizes; the mean map's default scale
(the median heuristic, the grids of the aggregated and fused tests) comes
from at most `BANDWIDTH_SAMPLE` of the pooled points, copied, as on the
host. The same p-value as the same NumPy input.
"""

import math
import warnings

import numpy as np

from .. import _array_api
from .._bags import Bags, concat_sets, pack_sets
from .._spec import spec_for
from .._validation import check_sets, not_finite_message
from .._warnings import DegenerateWarning
from . import on_device
from .checks import check_input

# The histogram kernels computed here ("exp_chi2" with its scale given),
# and the point kernels under the mean map.
HISTOGRAM_KERNELS = ("chi2", "intersection", "hellinger", "js", "exp_chi2")
POINT_KERNELS = ("rbf", "laplacian", "linear", "polynomial")
# Objects of a block of the diagonal of the kernel matrix (`_Gram`).
DIAGONAL_BLOCK = 256


def takes(library, X, Y, kernel, gamma, method, feature_map, incomplete,
          kernel_params):
    """Whether `mmd_test` runs on the device: a library that computes
    (`native`), a resampling test (`on_device.CONCLUDE`) without
    `feature_map` or `incomplete`, of two collections of sets of the
    library (non-empty lists of 2-D arrays, or 3-D arrays) with the mean
    map of a point kernel (`POINT_KERNELS`), or of two 2-D arrays of
    histograms with a kernel of `HISTOGRAM_KERNELS` ("exp_chi2": with
    `gamma` given)."""
    if not (library.native and feature_map is None and incomplete is None
            and isinstance(method, str) and method in on_device.CONCLUDE):
        return False
    if kernel is None or (isinstance(kernel, str) and kernel == "mean_map"):
        params = {} if kernel_params is None else kernel_params
        return (isinstance(params, dict)
                and params.get("kernel", "rbf") in POINT_KERNELS
                and (all(_is_list(S) for S in (X, Y))
                     or all(_is_array(S, 3) for S in (X, Y))))
    return (isinstance(kernel, str) and kernel in HISTOGRAM_KERNELS
            and (kernel != "exp_chi2" or gamma is not None)
            and all(_is_array(S, 2) for S in (X, Y)))


def _is_list(S):
    return (isinstance(S, (list, tuple)) and len(S) > 0
            and all(_is_array(a, 2) for a in S))


def _is_array(S, ndim):
    return _array_api.is_foreign(S) and getattr(S, "ndim", None) == ndim


def test(library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
         kernel_params, dtype, rng, workers, progress, working_memory):
    """`mmd_test` of the sets or histograms X and Y of `library` (`takes`)
    on their device: the `MMDTestResult` of the same NumPy input."""
    options = (method, n_resamples, None, alpha, unbiased, None,
               kernel_params, dtype, rng, workers, progress, working_memory)
    if kernel is None or kernel == "mean_map":
        (X, stand_x), (Y, stand_y) = (_sets(library, S, name)
                                      for S, name in ((X, "X"), (Y, "Y")))
        dims = [_dim(S) for S in (X, Y)]
        concat_sets(*(Bags(np.zeros((0, d)), np.zeros(1, dtype=np.int64))
                      for d in dims))  # (raises where they differ)
        iv = check_input(stand_x, stand_y, kernel, gamma, *options)
        Z = _pooled_sets(library, X, Y)
        sample = _point_sample(library, iv, Z, dims[0])
    else:
        spec = spec_for(kernel)  # (its checks; the call's: `check_input`)
        X, Y = (spec.check_array(library, on_device._values(library, S, name,
                                                            rows=False), name)
                for S, name in ((X, "X"), (Y, "Y")))
        spec.pool(np.zeros((0, X.shape[1])), np.zeros((0, Y.shape[1])))
        iv = check_input(on_device._stand_in(library, X),
                         on_device._stand_in(library, Y), kernel, gamma,
                         *options)
        xp = library.xp
        if X.dtype != Y.dtype:  # (NumPy's result type of float32 and float64)
            X, Y = xp.astype(X, xp.float64), xp.astype(Y, xp.float64)
        Z, sample = xp.concat([X, Y]), None
    budget = on_device._budget(library, iv.budget, working_memory)
    spec = iv.specs[0]
    scales = spec.scales(sample, iv.gamma, iv.grid, iv.n_threads)
    # whether the pooled objects are all equal: of sets, never (as on the
    # host, which compares arrays only)
    return on_device._resampled(
        library, iv, budget, [(spec, scales, _Gram(library, spec, scales, Z))],
        lambda: sample is None and library.holds(library.xp.all(Z[:1, :] == Z)))


def _sets(library, S, name):
    """The sets S (argument `name`: a list of 2-D arrays or a 3-D array of
    `library`) checked as `check_sets` checks them (their widths, sizes
    and values; float32 where every set is, else float64), without a
    gradient, and their host stand-in (zeros of their sizes, one column;
    none where they have no feature) for `check_input`."""
    xp = library.xp
    if isinstance(S, (list, tuple)):
        pack_sets([np.zeros((0, a.shape[1])) for a in S], name)  # (widths)
        sets = [_array_api.as_float(library, on_device._values(
            library, a, f"{name}[{i}]", rows=False), f"{name}[{i}]")
            for i, a in enumerate(S)]
        float32 = all(a.dtype == xp.float32 for a in sets)
        sets = [a if float32 else xp.astype(a, xp.float64, copy=False)
                for a in sets]
        d = sets[0].shape[1]
        stand_in = [np.zeros((a.shape[0], min(d, 1)),
                             dtype=np.float32 if float32 else np.float64)
                    for a in sets]
    else:
        sets = _array_api.as_float(library, on_device._values(
            library, S, name, rows=False), name)
        float32 = sets.dtype == xp.float32
        stand_in = np.zeros((*sets.shape[:2], min(sets.shape[2], 1)),
                            dtype=np.float32 if float32 else np.float64)
    check_sets(stand_in, name)  # (no feature, no set, an empty set)
    finite = (xp.stack([xp.all(xp.isfinite(a)) for a in sets])
              if isinstance(sets, list) else
              xp.all(xp.isfinite(sets), axis=(1, 2)))
    if not library.holds(xp.all(finite)):
        bad = np.flatnonzero(~library.to_numpy(finite))[0]
        raise ValueError(not_finite_message(f"{name}[{bad}]"))
    return sets, stand_in


def _dim(S):
    return S[0].shape[1] if isinstance(S, list) else S.shape[2]


def _dtype(S):
    return S[0].dtype if isinstance(S, list) else S.dtype


def _pooled_sets(library, X, Y):
    """The checked sets of X, then those of Y: a 3-D array where both are
    of one shape of sets, else a list of 2-D arrays; float64 both where
    their dtypes differ."""
    xp = library.xp
    if _dtype(X) != _dtype(Y):
        X, Y = ([xp.astype(a, xp.float64) for a in S] if isinstance(S, list)
                else xp.astype(S, xp.float64) for S in (X, Y))
    if not isinstance(X, list) and X.shape[1] == Y.shape[1]:
        return xp.concat([X, Y])
    return [*_listed(X), *_listed(Y)]


def _listed(S):
    return S if isinstance(S, list) else [S[i, ...] for i in range(S.shape[0])]


def _point_sample(library, iv, Z, d):
    """What the mean map's `scales` read of the pooled sets Z: a `Bags` of
    one set, the `_value_sample` of their points in float64 (as the host's
    rule takes them) where the scale is the rule's (gamma None, a point
    kernel with a median), else a point of their `d` features."""
    xp = library.xp
    point = iv.specs[0].params.get("kernel", "rbf")
    if iv.gamma is not None or point not in ("rbf", "laplacian"):
        return Bags(np.zeros((1, d)), np.array([0, 1]))
    points = (xp.concat(Z) if isinstance(Z, list)
              else xp.reshape(Z, (Z.shape[0] * Z.shape[1], d)))
    sample = on_device._value_sample(library, xp.astype(points, xp.float64))
    return Bags(sample, np.array([0, sample.shape[0]]))


class _Gram:
    """The kernel of `spec` at its `scales` between the pooled objects Z of
    `library` (sets: a list of 2-D arrays or a 3-D array; histograms: a
    2-D array), computed on their device by the kernel's public function
    (`Spec.call`'s, in float64), an `on_device` kernel object."""

    def __init__(self, library, spec, scales, Z):
        self.library, self.spec, self.Z = library, spec, Z
        self.params = [self._params(scale) for scale in scales]
        self.diagonals = None
        self.N = len(Z) if isinstance(Z, list) else Z.shape[0]

    def _params(self, scale):
        """The keyword arguments of the public function at `scale`."""
        spec = self.spec
        params = dict(spec.params)
        if "kernel" in spec.takes:
            params.update(spec.point_params())
        if spec.scale is not None:
            params[spec.scale] = scale
        return {k: v for k, v in params.items() if k in spec.takes}

    def _objects(self, index):
        Z = self.Z
        return Z[index] if isinstance(Z, list) else Z[index, ...]

    def blocks(self, rows, cols):
        """k(Z[rows], Z[cols]) at each scale, for slices `rows` and
        `cols`."""
        return self._kernel(self._objects(rows), self._objects(cols))

    def _kernel(self, A, B):
        """k(A, B) (B None: the symmetric k(A, A)) at each scale, float64,
        by the public function (its warnings left to the test's)."""
        xp = self.library.xp
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateWarning)
            return [xp.astype(self.spec.public_function(A, B, dtype=np.float64,
                                                        **params),
                              xp.float64, copy=False)
                    for params in self.params]

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
                              self._kernel(self._objects(slice(a, b)), None)])
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
