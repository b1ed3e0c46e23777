"""Arrays of other libraries (issue 52): PyTorch, JAX and array-api-strict
input gives the NumPy output in the input's library and on its device,
computed by the compiled engine (PyTorch and JAX on the CPU without a
gradient) or by the library (a gradient asked, another device,
array-api-strict); gradients through the kernels; mixed inputs refused.

Skipped where array-api-compat or the library is missing: ``.ci/run``
installs them (the README's test command does not)."""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km

from ._helpers import LIBRARIES, point_sets
from ._helpers import import_jnp as _jnp
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")

HISTOGRAM_FUNCTIONS = [km.additive_chi2_kernel, km.intersection_kernel,
                       km.hellinger_kernel, km.js_kernel, km.exp_chi2_kernel,
                       km.chi2_distance]


def histograms(dtype, shape=(9, 6), seed=0):
    """Histograms with zeros (where x + y = 0 for some pairs)."""
    rng = np.random.default_rng(seed)
    H = rng.random(shape).astype(dtype)
    H[0, :2] = 0
    H[-1, 1:3] = 0
    return H


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("function", HISTOGRAM_FUNCTIONS,
                         ids=lambda f: f.__name__)
def test_histogram_kernels_equal_numpy(function, pair, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    X = histograms(dtype)
    Y = histograms(dtype, (5, 6), seed=1) if pair else None
    expected = function(X, Y)
    K = function(to_library(X), None if Y is None else to_library(Y))
    assert type(K) is type(to_library(X))
    values = to_numpy(K)
    assert values.dtype == expected.dtype
    if library in ("torch", "jax"):  # the compiled engine: NumPy's bits
        assert_array_equal(values, expected)
    else:
        assert_allclose(values, expected, rtol=1e-12 if dtype == np.float64 else 1e-5,
                        atol=1e-300 if dtype == np.float64 else 1e-30)
    if not pair:
        assert_array_equal(values, values.T)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("function", [*HISTOGRAM_FUNCTIONS[:4], km.chi2_distance],
                         ids=lambda f: f.__name__)
def test_histogram_kernels_at_extreme_scales(function, scale):
    """Computed by the library: the homogeneous kernels at 1e-150 and
    1e150, where products of two values leave float64."""
    torch = _torch()
    X, Y = histograms(np.float64) * scale, histograms(np.float64, (4, 6), 1) * scale
    K = function(torch.asarray(X).requires_grad_(), torch.asarray(Y))
    assert_allclose(K.detach().numpy(), function(X, Y), rtol=1e-12)


def test_the_dtype_argument():
    torch = _torch()
    X = histograms(np.float32)
    for tensor in (torch.asarray(X), torch.asarray(X).requires_grad_()):
        assert km.additive_chi2_kernel(tensor).dtype == torch.float32
        assert km.additive_chi2_kernel(tensor, dtype=np.float64).dtype == torch.float64
        K = km.additive_chi2_kernel(tensor, dtype=torch.float64)
        assert K.dtype == torch.float64
        with pytest.raises(ValueError, match="dtype must be"):
            km.additive_chi2_kernel(tensor, dtype="int8")


def test_bad_input_has_the_numpy_message():
    torch = _torch()
    X = histograms(np.float64)
    bad = X.copy()
    bad[2, 3] = -1.0
    for values, message in ((bad, "X contains negative values"),
                            (np.where(bad < 0, np.nan, X), "X contains NaN"),
                            (X[0], "X must be a 2-D array"),
                            (X[:0], "X is empty")):
        for tensor in (torch.asarray(values), torch.asarray(values).requires_grad_()):
            with pytest.raises(ValueError, match=message):
                km.additive_chi2_kernel(tensor)
    with pytest.raises(TypeError, match="real numbers"):
        km.additive_chi2_kernel(torch.asarray(X + 1j))
    with pytest.raises(ValueError, match="Incompatible dimension"):
        km.additive_chi2_kernel(torch.asarray(X).requires_grad_(),
                                torch.asarray(X[:, :3]))
    with pytest.raises(ValueError, match="beta"):
        km.exp_chi2_kernel(torch.asarray(X).requires_grad_(), beta=-1.0)


def test_mixed_libraries_and_devices_refused():
    torch = _torch()
    X = histograms(np.float64)
    with pytest.raises(TypeError, match=r"X is a torch\.Tensor and Y a numpy\.ndarray"):
        km.additive_chi2_kernel(torch.asarray(X), X)
    with pytest.raises(TypeError, match="one library"):
        km.js_kernel(X, torch.asarray(X))
    with pytest.raises(ValueError, match="X is on device cpu and Y on device meta"):
        km.additive_chi2_kernel(torch.asarray(X), torch.empty(3, 6, device="meta",
                                                              dtype=torch.float64))


def test_the_output_stays_on_the_input_device():
    """PyTorch's ``meta`` device (no GPU here): computed by the library
    there, its values unread (their checks skipped)."""
    torch = _torch()
    X = torch.empty(9, 6, device="meta", dtype=torch.float64)
    Y = torch.empty(4, 6, device="meta", dtype=torch.float64)
    for function in HISTOGRAM_FUNCTIONS:
        K = function(X, Y)
        assert K.device.type == "meta" and tuple(K.shape) == (9, 4)
        assert K.dtype == torch.float64


def test_blocks_within_the_working_memory():
    """A budget smaller than one (n, m, d) temporary: the library's values
    in blocks of rows are the same."""
    torch = _torch()
    X = torch.asarray(histograms(np.float64, (50, 8))).requires_grad_()
    whole = km.additive_chi2_kernel(X)
    with km.config_context(working_memory=0.01):  # 10 KiB: blocks of 3 rows
        blocked = km.additive_chi2_kernel(X)
    assert_array_equal(blocked.detach().numpy(), whole.detach().numpy())


@pytest.mark.parametrize("function", [km.additive_chi2_kernel, km.chi2_distance,
                                      km.exp_chi2_kernel, km.intersection_kernel,
                                      km.js_kernel, km.hellinger_kernel],
                         ids=lambda f: f.__name__)
def test_gradcheck(function):
    """``torch.autograd.gradcheck`` in float64, with respect to X and Y
    (histograms away from 0, where each term is smooth)."""
    torch = _torch()
    X = torch.asarray(histograms(np.float64, (4, 5)) + 0.1).requires_grad_()
    Y = torch.asarray(histograms(np.float64, (3, 5), seed=1) + 0.1).requires_grad_()
    assert torch.autograd.gradcheck(function, (X, Y))
    assert torch.autograd.gradcheck(lambda A: function(A), (X,))


@pytest.mark.parametrize("function", [km.additive_chi2_kernel, km.exp_chi2_kernel,
                                      km.js_kernel], ids=lambda f: f.__name__)
def test_jax_grad_equals_torch(function):
    torch, jnp = _torch(), _jnp()
    import jax

    X = histograms(np.float64, (4, 5)) + 0.1
    Y = histograms(np.float64, (3, 5), seed=1)  # with zeros: gradient 0, not NaN
    weights = np.random.default_rng(2).standard_normal((4, 3))

    def loss(A, B):
        return (function(A, B) * jnp.asarray(weights)).sum()

    gx, gy = jax.grad(loss, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(Y))
    A, B = (torch.asarray(v).requires_grad_() for v in (X, Y))
    (function(A, B) * torch.asarray(weights)).sum().backward()
    for g, t in ((gx, A.grad), (gy, B.grad)):
        assert np.all(np.isfinite(np.asarray(g)))
        assert_allclose(np.asarray(g), t.numpy(), rtol=1e-12, atol=1e-15)


def test_the_input_is_not_changed():
    torch = _torch()
    X = histograms(np.float64)
    for tensor in (torch.asarray(X.copy()), torch.asarray(X.copy()).requires_grad_()):
        km.exp_chi2_kernel(tensor)
        assert_array_equal(tensor.detach().numpy(), X)


# -- sets -------------------------------------------------------------------

SET_FUNCTIONS = {
    "sum_match_kernel": (km.sum_match_kernel, {}),
    "sums": (km.sum_match_kernel, {"normalize": False}),
    "mmd": (km.mmd, {}),
    "mmd_unbiased": (km.mmd, {"squared": True, "unbiased": True}),
    "mmd_kernel": (km.mmd_kernel, {"gamma2": 0.7}),
}
POINT_KERNELS = ["rbf", "laplacian", "linear", "polynomial", "energy"]


def as_library(sets, to_library):
    if sets is None:
        return None
    if isinstance(sets, list):
        return [to_library(s) for s in sets]
    return to_library(sets)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("layout", ["list", "list_pair", "3d", "3d_pair"])
@pytest.mark.parametrize("kernel", POINT_KERNELS)
@pytest.mark.parametrize("function", sorted(SET_FUNCTIONS))
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
def test_set_kernels_equal_numpy(function, kernel, layout, library):
    f, options = SET_FUNCTIONS[function]
    to_library, to_numpy = LIBRARIES[library]
    X = point_sets(np.float64)
    Y = point_sets(np.float64, 1, (3, 8, 5), 0.3) if layout.endswith("pair") else None
    if layout.startswith("3d"):
        X = np.stack([s[:4] for s in X])
        Y = None if Y is None else np.stack([s[:3] for s in Y])
    expected = f(X, Y, kernel=kernel, **options)
    K = f(as_library(X, to_library), as_library(Y, to_library), kernel=kernel,
          **options)
    assert type(K) is type(to_library(X[0]))
    values = to_numpy(K)
    if library in ("torch", "jax"):
        assert_array_equal(values, expected)
    else:
        assert_allclose(values, expected, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("function", ["sum_match_kernel", "mmd", "mmd_kernel"])
def test_set_kernels_float32(function):
    torch = _torch()
    f, options = SET_FUNCTIONS[function]
    X = point_sets(np.float32)
    K = f([torch.asarray(s).requires_grad_() for s in X], gamma=0.5, **options)
    assert K.dtype == torch.float32
    assert_allclose(K.detach().numpy(), f(X, gamma=0.5, **options), rtol=1e-5,
                    atol=1e-6)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "energy"])
def test_set_kernels_at_extreme_scales(kernel, scale):
    """Computed by PyTorch: the median heuristic's gamma (rbf, laplacian)
    and the energy kernel's power-of-two scale keep the values in range."""
    torch = _torch()
    X = [s * scale for s in point_sets(np.float64)]
    D = km.mmd([torch.asarray(s).requires_grad_() for s in X], kernel=kernel)
    assert_allclose(D.detach().numpy(), km.mmd(X, kernel=kernel), rtol=1e-10,
                    atol=1e-12 * (scale if kernel == "energy" else 1))


@pytest.mark.parametrize("scale", [1e-30, 1e30, 3e38])
@pytest.mark.parametrize("function, kernel", [
    *((f, k) for f in ("sum_match_kernel", "mmd", "mmd_kernel")
      for k in ("rbf", "laplacian")),
    ("sum_match_kernel", "energy"), ("mmd", "energy")])
def test_set_kernels_float32_at_extreme_scales(function, kernel, scale):
    """float32 points whose squares leave float32 are computed in float64,
    as the engine sums them: NumPy's values (an MMD of 0 here was one that
    overflowed). (The energy kernel has no scale: its MMD kernel at gamma2
    is constant at these scales.)"""
    torch = _torch()
    f, options = SET_FUNCTIONS[function]
    X = [(s / np.abs(s).max() * scale).astype(np.float32)
         for s in point_sets(np.float64)]
    K = f([torch.asarray(s).requires_grad_() for s in X], kernel=kernel, **options)
    assert K.dtype == torch.float32
    expected = f(X, kernel=kernel, **options)
    assert_allclose(K.detach().numpy(), expected, rtol=1e-5,
                    atol=1e-6 * (scale if kernel == "energy" else 1))
    assert np.any(expected[~np.eye(len(X), dtype=bool)] != 0)


@pytest.mark.parametrize("library", ["strict", "torch_grad"])
def test_float32_results_beyond_float32_are_refused(library):
    """float32 sets whose linear kernel values leave float32's range
    (computed in float64): NumPy's ValueError, not infinities."""
    to_library, _ = LIBRARIES[library]
    X = [(s * 1e20).astype(np.float32) for s in point_sets(np.float64)]
    with pytest.raises(ValueError) as numpy_error:
        km.sum_match_kernel(X, kernel="linear")
    with pytest.raises(ValueError, match=re.escape(str(numpy_error.value))):
        km.sum_match_kernel([to_library(s) for s in X], kernel="linear")


@pytest.mark.parametrize("library", ["strict", "torch_grad"])
@pytest.mark.parametrize("dtype, scale, gamma", [
    *((np.float64, s, None) for s in (1e-310, 1e300, 1.7e308)),
    *((np.float64, s, "fitted") for s in (1e-150, 1e150)),
    *((np.float32, s, g) for s in (1e-38, 3e38) for g in (None, "fitted"))])
def test_sliced_wasserstein_kernel_at_extreme_scales(gamma, dtype, scale, library):
    """The kernel of the distances between points near 1, its scale folded
    into gamma: NumPy's values at subnormal and near-largest magnitudes
    (a NaN diagonal and zeros were computed at 1e-310)."""
    to_library, to_numpy = LIBRARIES[library]
    X = [(s / np.abs(s).max() * scale).astype(dtype)
         for s in point_sets(np.float64, 5, (4, 6, 5, 3))]
    options = {"n_projections": 6, "rng": 0}
    if gamma == "fitted":  # (the median heuristic's, given)
        D = km.sliced_wasserstein(X, **options).astype(np.float64)
        gamma = float(1 / np.median(D[~np.eye(len(X), dtype=bool)] ** 2))
    with warnings.catch_warnings():  # (beyond the float64 range: refused alike)
        warnings.simplefilter("ignore")
        try:
            expected = km.sliced_wasserstein_kernel(X, gamma=gamma, **options)
        except ValueError as error:
            with pytest.raises(ValueError, match=re.escape(str(error))):
                km.sliced_wasserstein_kernel([to_library(s) for s in X],
                                             gamma=gamma, **options)
            return
        K = to_numpy(km.sliced_wasserstein_kernel([to_library(s) for s in X],
                                                  gamma=gamma, **options))
    assert K.dtype == expected.dtype
    assert_allclose(K, expected, rtol=1e-5 if dtype == np.float32 else 1e-9,
                    atol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("kernel", POINT_KERNELS)
@pytest.mark.parametrize("function", ["sum_match_kernel", "mmd", "mmd_kernel"])
def test_set_kernels_gradcheck(function, kernel):
    """``torch.autograd.gradcheck`` (float64) with respect to the points of
    every set, X and Y (the MMD away from 0, where its square root is
    smooth)."""
    torch = _torch()
    f = SET_FUNCTIONS[function][0]
    X = [torch.asarray(s).requires_grad_() for s in point_sets(np.float64, 0, (3, 4))]
    Y = [torch.asarray(s).requires_grad_()
         for s in point_sets(np.float64, 1, (2, 3), 0.5)]

    def call(*points):
        return f(list(points[:2]), list(points[2:]), kernel=kernel, gamma=0.3)

    assert torch.autograd.gradcheck(call, (*X, *Y))


def test_set_kernels_gradcheck_3d_and_symmetric():
    torch = _torch()
    X = torch.asarray(np.stack(point_sets(np.float64, 0, (3, 3, 3)))).requires_grad_()
    assert torch.autograd.gradcheck(lambda A: km.mmd_kernel(A, gamma=0.5), (X,))
    assert torch.autograd.gradcheck(lambda A: km.sum_match_kernel(A, gamma=0.5), (X,))
    # the MMD's diagonal is 0: its gradient there is 0, not NaN
    km.mmd(X, gamma=0.5).sum().backward()
    assert torch.all(torch.isfinite(X.grad))


@pytest.mark.parametrize("kernel", POINT_KERNELS)
def test_set_kernels_jax_grad_equals_torch(kernel):
    torch, jnp = _torch(), _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 0, (4, 4, 4)))
    Y = np.stack(point_sets(np.float64, 1, (4, 4), 0.5))

    def loss(A, B):
        return (km.mmd(A, B, kernel=kernel, gamma=0.4) ** 2).sum()

    gx, gy = jax.grad(loss, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(Y))
    A, B = (torch.asarray(v).requires_grad_() for v in (X, Y))
    loss(A, B).backward()
    assert_allclose(np.asarray(gx), A.grad.numpy(), rtol=1e-10, atol=1e-13)
    assert_allclose(np.asarray(gy), B.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_set_kernels_on_the_meta_device():
    torch = _torch()
    X = [torch.empty(n, 3, device="meta", dtype=torch.float64) for n in (3, 5)]
    Y = torch.empty(4, 6, 3, device="meta", dtype=torch.float64)
    for f in (km.sum_match_kernel, km.mmd, km.mmd_kernel):
        K = f(X, [Y[0], Y[1]], gamma=1.0)
        assert K.device.type == "meta" and tuple(K.shape) == (2, 2)
        K = f(Y, gamma=1.0, kernel="energy")
        assert K.device.type == "meta" and tuple(K.shape) == (4, 4)


def test_set_input_refused_clearly():
    torch = _torch()
    X = point_sets(np.float64)
    bad = [s.copy() for s in X]
    bad[2][1, 0] = np.nan
    for grad in (False, True):
        def tensors(sets, grad=grad):
            return [torch.asarray(s).requires_grad_(grad) for s in sets]

        with pytest.raises(ValueError, match=r"X\[2\] contains NaN"):
            km.mmd(tensors(bad))
        with pytest.raises(ValueError, match="Incompatible dimension"):
            km.mmd(tensors(X), tensors([s[:, :2] for s in X]))
        with pytest.raises(ValueError, match=r"X\[1\] has 1 point"):
            km.mmd(tensors([X[0], X[1][:1]]), squared=True, unbiased=True)
    with pytest.raises(TypeError, match=r"X\[0\] is a torch\.Tensor and X\[1\] a "
                                        r"numpy\.ndarray"):
        km.mmd([torch.asarray(X[0]), X[1]])
    with pytest.raises(TypeError, match="one library"):
        km.sum_match_kernel(X, [torch.asarray(s) for s in X])


def test_median_heuristic_gamma_is_numpys():
    """gamma=None: the median heuristic of the same sampled points."""
    torch = _torch()
    X = point_sets(np.float64, 3, (40, 30, 50))
    K = km.sum_match_kernel([torch.asarray(s).requires_grad_() for s in X])
    assert_allclose(K.detach().numpy(), km.sum_match_kernel(X), rtol=1e-12)


def test_under_jit_and_grad():
    """JAX under ``jit`` (values unread: their checks skipped; gamma=None
    refused clearly) and ``grad`` of a loss with gamma=None."""
    jnp = _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 0, (4, 4, 4)))
    K = jax.jit(lambda A: km.mmd_kernel(A, gamma=0.5))(jnp.asarray(X))
    assert_allclose(np.asarray(K), km.mmd_kernel(X, gamma=0.5), rtol=1e-12)
    with pytest.raises(ValueError, match="give gamma"):
        jax.jit(lambda A: km.mmd(A))(jnp.asarray(X))
    g = jax.grad(lambda A: km.mmd(A[:2], A[2:]).sum())(jnp.asarray(X))
    assert np.all(np.isfinite(np.asarray(g)))
    H = histograms(np.float64)
    K = jax.jit(km.additive_chi2_kernel)(jnp.asarray(H))
    assert_allclose(np.asarray(K), km.additive_chi2_kernel(H), rtol=1e-12)


def test_median_heuristic():
    torch = _torch()
    X = point_sets(np.float64, 4, (30, 20))
    expected = km.median_heuristic(X)
    for grad in (False, True):
        sets = [torch.asarray(s).requires_grad_(grad) for s in X]
        assert km.median_heuristic(sets) == expected
        assert km.median_heuristic(torch.asarray(X[0]).requires_grad_(grad),
                                   kernel="laplacian") == km.median_heuristic(
            X[0], kernel="laplacian")


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap", "aggregated",
                                    "fuse", "cross", "linear"])
def test_mmd_test_result_is_numpys(method):
    """The same result, p-value included, for the same rng (points, and
    sets with the mean map kernel, tested on the host)."""
    torch = _torch()
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((60, 3)), rng.standard_normal((60, 3)) + 0.4
    options = {"method": method, "rng": 1}
    if method not in ("cross", "linear"):
        options["n_resamples"] = 99
    expected = km.mmd_test(X, Y, **options)
    for grad in (False, True):
        result = km.mmd_test(torch.asarray(X).requires_grad_(grad),
                             torch.asarray(Y).requires_grad_(grad), **options)
        # (with a gradient asked, the tests of points run in the library:
        # equal to rounding, of float32 products in the aggregated and fused
        # tests; the p-values of the resampling tests, counts, equal)
        if method in ("cross", "linear"):
            assert_allclose(result.pvalue, expected.pvalue, rtol=1e-12)
        else:
            assert result.pvalue == expected.pvalue
        assert_allclose(result.statistic, expected.statistic, rtol=1e-5 if
                        method in ("aggregated", "fuse") else 1e-12)
        if not grad:
            assert_array_equal(result.statistic, expected.statistic)
    if method == "linear":  # (on sets, it needs a feature map)
        return
    A, B = point_sets(np.float64, 6, (5,) * 12), point_sets(np.float64, 7, (6,) * 12)
    expected = km.mmd_test(A, B, kernel="mean_map", **options)
    result = km.mmd_test([torch.asarray(s) for s in A], [torch.asarray(s) for s in B],
                         kernel="mean_map", **options)
    assert result.pvalue == expected.pvalue


# -- maps -------------------------------------------------------------------

@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_fourier_maps_equal_numpy(kernel, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    rng = np.random.default_rng(8)
    X = rng.standard_normal((21, 3)).astype(dtype)
    sets = [s.astype(dtype) for s in point_sets(np.float64, 9, (4, 6, 5))]
    rff = km.RandomFourierFeatures(51, kernel=kernel, gamma=0.5, rng=0).fit(X)
    rdf = km.RandomDistributionFeatures(51, kernel=kernel, gamma=0.5, rng=0).fit(sets)
    for Z, expected in ((rff.transform(to_library(X)), rff.transform(X)),
                        (rdf.transform([to_library(s) for s in sets]),
                         rdf.transform(sets))):
        assert type(Z) is type(to_library(X))
        values = to_numpy(Z)
        assert values.dtype == expected.dtype
        if library in ("torch", "jax"):
            assert_array_equal(values, expected)
        else:
            assert_allclose(values, expected,
                            atol=1e-14 if dtype == np.float64 else 1e-6)


def test_fourier_maps_gradcheck():
    torch = _torch()
    rng = np.random.default_rng(10)
    X = torch.asarray(rng.standard_normal((5, 3))).requires_grad_()
    sets = [torch.asarray(s).requires_grad_()
            for s in point_sets(np.float64, 11, (3, 4))]
    rff = km.RandomFourierFeatures(7, gamma=0.5, rng=0).fit(X)
    rdf = km.RandomDistributionFeatures(7, gamma=0.5, rng=0).fit(sets)
    assert torch.autograd.gradcheck(rff.transform, (X,))
    assert torch.autograd.gradcheck(lambda *s: rdf.transform(list(s)), tuple(sets))


def test_fourier_maps_jax_grad_equals_torch():
    torch, jnp = _torch(), _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 12, (4, 4, 4)))
    rdf = km.RandomDistributionFeatures(9, gamma=0.5, rng=0).fit(X)
    g = jax.grad(lambda A: (rdf.transform(A) ** 3).sum())(jnp.asarray(X))
    A = torch.asarray(X).requires_grad_()
    (rdf.transform(A) ** 3).sum().backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_maps_fit_on_arrays():
    """fit on a library's arrays fits on their values (on the host), and
    transform computes in the library."""
    torch = _torch()
    H = histograms(np.float64, (30, 6))
    fmap = km.Chi2DirectMap(3).fit(torch.asarray(H).requires_grad_())
    expected = km.Chi2DirectMap(3).fit(H)
    assert_array_equal(fmap.transform(torch.asarray(H)).numpy(), expected.transform(H))
    Z = km.RandomFourierFeatures(8, rng=0).fit_transform(torch.asarray(H))
    assert_array_equal(Z.numpy(), km.RandomFourierFeatures(8, rng=0).fit_transform(H))
    rff = km.RandomFourierFeatures(8, rng=0).fit(H)
    with pytest.raises(ValueError, match="X has 5 features"):
        rff.transform(torch.asarray(H[:, :5]).requires_grad_())
    with pytest.raises(ValueError, match="not fitted"):
        km.RandomFourierFeatures(8).transform(torch.asarray(H).requires_grad_())


# -- sliced Wasserstein, and the other functions -----------------------------

@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0])
@pytest.mark.parametrize("layout", ["list", "list_pair", "3d"])
def test_sliced_wasserstein_equals_numpy(layout, p, library):
    to_library, to_numpy = LIBRARIES[library]
    X = point_sets(np.float64, 13, (4, 7, 5, 4, 6))
    Y = point_sets(np.float64, 14, (3, 8, 5), 0.3) if layout == "list_pair" else None
    if layout == "3d":
        X = np.stack([s[:4] for s in X])
    expected = km.sliced_wasserstein(X, Y, p=p, n_projections=20, rng=0)
    D = km.sliced_wasserstein(as_library(X, to_library), as_library(Y, to_library),
                              p=p, n_projections=20, rng=0)
    assert type(D) is type(to_library(X[0]))
    if library in ("torch", "jax"):
        assert_array_equal(to_numpy(D), expected)
    else:
        assert_allclose(to_numpy(D), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("library", ["strict", "torch_grad"])
@pytest.mark.parametrize("p", [5e-324, 1e-150, 1e-8, 0.3])
def test_sliced_wasserstein_at_small_p(p, library):
    """Below p = 1, computed in logarithms: the digits kept as p falls to 0
    (the library's ``M ** (1 / p)`` gave 0 from p = 1e-20)."""
    to_library, to_numpy = LIBRARIES[library]
    X = point_sets(np.float64, 19, (4, 3, 4))
    Y = point_sets(np.float64, 20, (3, 2), 0.3)
    expected = km.sliced_wasserstein(X, Y, p=p, n_projections=7, rng=0)
    D = km.sliced_wasserstein(as_library(X, to_library), as_library(Y, to_library),
                              p=p, n_projections=7, rng=0)
    assert np.all(expected > 0.1)
    assert_allclose(to_numpy(D), expected, rtol=1e-12)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5])
def test_sliced_wasserstein_gradcheck(p):
    torch = _torch()
    X = [torch.asarray(s).requires_grad_() for s in point_sets(np.float64, 15, (3, 4))]
    Y = [torch.asarray(s).requires_grad_()
         for s in point_sets(np.float64, 16, (2, 5), 0.5)]

    def call(*points):
        return km.sliced_wasserstein(list(points[:2]), list(points[2:]), p=p,
                                     n_projections=5, rng=0)

    assert torch.autograd.gradcheck(call, (*X, *Y))
    # the zero diagonal of X with itself: gradient 0 there, not NaN
    km.sliced_wasserstein(X, n_projections=5, rng=0).sum().backward()
    assert all(torch.all(torch.isfinite(s.grad)) for s in X)


def test_sliced_wasserstein_jax_grad_equals_torch():
    torch, jnp = _torch(), _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 17, (5, 5, 5)))
    Y = np.stack(point_sets(np.float64, 18, (5, 5), 0.4))

    def loss(A, B):
        return (km.sliced_wasserstein(A, B, n_projections=7, rng=0) ** 2).sum()

    g = jax.grad(loss)(jnp.asarray(X), jnp.asarray(Y))
    A = torch.asarray(X).requires_grad_()
    loss(A, torch.asarray(Y)).backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_the_other_functions_exchange():
    """PyTorch on the CPU without a gradient: the compiled engine's values,
    bit for bit (their computations in the library: the tests of
    test_array_api_distributions.py, _set_maps.py and _tools.py)."""
    torch = _torch()
    sets = point_sets(np.float64, 19, (8, 9, 10))
    tensors = [torch.asarray(s) for s in sets]
    for f, options in ((km.renyi_divergence, {}),
                       (km.sliced_wasserstein_kernel, {"gamma": 1.0, "rng": 0})):
        result = f(tensors, **options)
        assert type(result) is torch.Tensor
        assert_array_equal(result.numpy(), f(sets, **options))
    K = km.sum_match_kernel(sets, gamma=1.0)
    assert_array_equal(km.project_psd(torch.asarray(K)).numpy(), km.project_psd(K))
    D = km.renyi_divergence(sets)
    assert_array_equal(km.divergence_kernel(torch.asarray(D)).numpy(),
                       km.divergence_kernel(D))


def test_numpy_calls_with_type_arguments_stay_numpy():
    """A type among the arguments (``dtype=numpy.float32``, whose class has
    ``__dlpack__``) is not an array of another library."""
    sets = point_sets(np.float32, 20, (3, 4))
    K = km.renyi_divergence(point_sets(np.float64, 21, (8, 9)), dtype=np.float32)
    assert type(K) is np.ndarray and K.dtype == np.float32
    assert type(km.mmd(sets, dtype=np.float64)) is np.ndarray
