"""Arrays of other libraries (issue 52) in the tools over objects and the
containers: a `Bags` of a library's points (weighted too), `project_psd`
and `PSDProjector`, `NystroemMap` and `SetKernel` on them: the NumPy
output in the input's library, computed there where the library computes
(a gradient asked, array-api-strict), differentiably.

Skipped where array-api-compat or the library is missing (see
``test_array_api.py``)."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps.sklearn import ExpectedKernel, SetKernel

from ._helpers import LIBRARIES, point_sets
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


def _values(K, to_numpy, expected, library):
    """The values of K (of `library`), checked equal to `expected`: bit for
    bit through the compiled engine, to 1e-12 where the library computes."""
    values = to_numpy(K)
    assert values.dtype == expected.dtype
    if library in ("torch", "jax"):
        assert_array_equal(values, expected)
    else:
        assert_allclose(values, expected, rtol=1e-12,
                        atol=1e-12 * np.abs(expected).max())
    return values


def weighted_bags(seed=0, sizes=(4, 7, 5, 6)):
    rng = np.random.default_rng(seed)
    sets = point_sets(np.float64, seed, sizes)
    return km.Bags.from_list(sets, weights=[rng.random(n) + 0.1 for n in sizes])


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("function, options", [
    (km.sum_match_kernel, {}), (km.sum_match_kernel, {"normalize": False}),
    (km.mmd, {}), (km.mmd_kernel, {"gamma2": 0.3}),
    (km.mmd, {"gamma": None}),  # the (weighted) median heuristic
], ids=["sum_match", "sums", "mmd", "mmd_kernel", "median"])
def test_bags_of_library_points(function, options, weighted, library):
    to_library, to_numpy = LIBRARIES[library]
    B = weighted_bags()
    B = B if weighted else B.with_weights(None)
    C = weighted_bags(1, (3, 5)).with_weights(None)
    options = {"gamma": 0.4, **options}
    for X, Y in ((B, None), (B, C)):
        expected = function(X, Y, **options)
        bags = [None if S is None else km.Bags(to_library(np.array(S.points)),
                                               S.offsets, S.weights)
                for S in (X, Y)]
        K = function(*bags, **options)
        assert type(K) is type(bags[0].points)
        _values(K, to_numpy, expected, library)


def test_bags_hold_the_library_array():
    torch = _torch()
    sets = point_sets(np.float32, 2, (3, 5, 4))
    tensors = [torch.asarray(s).requires_grad_() for s in sets]
    bags = km.Bags.from_list(tensors)
    assert type(bags.points) is torch.Tensor and bags.points.dtype == torch.float32
    assert bags.points.requires_grad  # (the gradient flows to the sets)
    assert_array_equal(bags.offsets, [0, 3, 8, 12])
    assert_array_equal(bags[1].detach().numpy(), sets[1])
    assert type(bags[1:]) is km.Bags and len(bags[1:]) == 2
    assert_array_equal(bags[[2, 0]].points.detach().numpy(),
                       np.concatenate([sets[2], sets[0]]))
    km.sum_match_kernel(bags, gamma=0.5).sum().backward()
    assert all(t.grad is not None and torch.all(torch.isfinite(t.grad))
               for t in tensors)
    again = pickle.loads(pickle.dumps(km.Bags.from_list([t.detach() for t in tensors])))
    assert type(again.points) is torch.Tensor
    with pytest.raises(TypeError, match=r"sets\[0\] is a torch\.Tensor and sets\[1\] a "
                                        r"numpy\.ndarray"):
        km.Bags.from_list([tensors[0], sets[1]])
    with pytest.raises(ValueError, match="points must be 2-D"):
        km.Bags(torch.zeros(4), [0, 4])
    with pytest.raises(TypeError, match="real numbers"):
        km.Bags(torch.zeros((4, 2), dtype=torch.complex64), [0, 4])


def test_weighted_bags_of_the_sliced_wasserstein_functions():
    """Weighted sets: refused where the NumPy path refuses them (the
    unbiased MMD), NumPy's values computed by PyTorch with a gradient, and
    on the CPU without one by the compiled engine, bit for bit."""
    torch = _torch()
    B = weighted_bags()
    bags = km.Bags(torch.asarray(np.array(B.points)).requires_grad_(), B.offsets,
                   B.weights)
    with pytest.raises(ValueError, match="point weights"):
        km.mmd(bags, squared=True, unbiased=True)
    for f in (km.sliced_wasserstein, km.sliced_wasserstein_kernel):
        assert_allclose(f(bags, rng=0).detach().numpy(), f(B, rng=0),
                        rtol=1e-12, atol=1e-15)
        assert_array_equal(f(km.Bags(bags.points.detach(), B.offsets, B.weights),
                             rng=0).numpy(), f(B, rng=0))


def test_bags_gradcheck():
    torch = _torch()
    B = weighted_bags(3, (3, 2, 4))
    points = torch.asarray(np.array(B.points)).requires_grad_()

    def call(P):
        return km.mmd_kernel(km.Bags(P, B.offsets, B.weights), gamma=0.5)

    assert torch.autograd.gradcheck(call, (points,))


# -- project_psd and PSDProjector -------------------------------------------

def indefinite(n=7, seed=0):
    A = np.random.default_rng(seed).standard_normal((n, n))
    return A + A.T


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("method", ["clip", "flip", "shift", "square"])
def test_project_psd(method, library):
    to_library, to_numpy = LIBRARIES[library]
    K, rows = indefinite(), np.random.default_rng(1).standard_normal((3, 7))
    expected = km.project_psd(K, method=method)
    P = km.project_psd(to_library(K), method=method)
    assert type(P) is type(to_library(K))
    assert_allclose(to_numpy(P), expected, rtol=1e-12, atol=1e-13)
    projector = km.PSDProjector(method).fit(K)
    T = projector.transform(to_library(rows))
    _values(T, to_numpy, projector.transform(rows), library)
    fitted = km.PSDProjector(method)
    assert_allclose(to_numpy(fitted.fit_transform(to_library(K))), expected,
                    rtol=1e-12, atol=1e-13)
    # (computed by the library where it computes: its eigen-solver's rounding)
    assert_allclose(fitted.eigenvalues_, projector.eigenvalues_, rtol=1e-12)


def test_project_psd_float32_scales_and_errors():
    torch = _torch()
    K = indefinite(5, 2)
    for scale in (1e-150, 1e150):
        P = km.project_psd(torch.asarray(K * scale).requires_grad_())
        assert_allclose(P.detach().numpy(), km.project_psd(K * scale), rtol=1e-12,
                        atol=1e-13 * scale)
    P = km.project_psd(torch.asarray(K.astype(np.float32)).requires_grad_())
    assert P.dtype == torch.float32
    assert_allclose(P.detach().numpy(), km.project_psd(K.astype(np.float32)),
                    rtol=1e-5, atol=1e-5)
    for bad, message in ((K[:3], "must be square"), (K[0], "must be 2-D"),
                         (np.where(K > 1, np.nan, K), "NaN")):
        with pytest.raises(ValueError, match=message):
            km.project_psd(torch.asarray(bad).requires_grad_())
    with pytest.raises(ValueError, match="method"):
        km.project_psd(torch.asarray(K).requires_grad_(), method="nearest")
    with pytest.raises(ValueError, match="overflows"):
        km.project_psd(torch.asarray(K * 1e300).requires_grad_(), method="square")
    M = torch.empty(6, 6, device="meta", dtype=torch.float64)
    assert km.project_psd(M).device.type == "meta"


def test_project_psd_gradcheck():
    """The eigendecomposition's gradient, where the eigenvalues are
    distinct."""
    torch = _torch()
    K = torch.asarray(indefinite(5, 3)).requires_grad_()
    for method in ("clip", "flip", "shift", "square"):
        assert torch.autograd.gradcheck(lambda A, m=method: km.project_psd(A, method=m),
                                        (K,))


# -- NystroemMap and SetKernel ----------------------------------------------

@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("kernel", ["mean_map", "mmd", "sliced_wasserstein", "renyi",
                                    "chi2", "js", "exp_chi2"])
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
def test_nystroem_and_set_kernel(kernel, library):
    to_library, to_numpy = LIBRARIES[library]
    if kernel in ("chi2", "js", "exp_chi2"):
        X = np.random.default_rng(4).random((9, 5))
        converted = to_library(X)
    else:
        X = point_sets(np.float64, 5, (8, 9, 10, 8, 11, 9, 10))
        converted = [to_library(s) for s in X]
    nystroem = km.NystroemMap(4, kernel=kernel, rng=0).fit(X)
    Z = nystroem.transform(converted)
    assert type(Z) is type(to_library(np.zeros(1)))
    _values(Z, to_numpy, nystroem.transform(X), library)
    if kernel in ("chi2", "js", "exp_chi2"):
        return
    estimator = SetKernel(kernel=kernel, rng=0).fit(X)
    _values(estimator.transform(converted), to_numpy, estimator.transform(X), library)
    K = SetKernel(kernel=kernel, rng=0).fit_transform(converted)
    assert type(K) is type(to_library(np.zeros(1)))
    assert_allclose(to_numpy(K), estimator.transform(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_expected_kernel_and_nystroem_of_gaussians(library):
    to_library, to_numpy = LIBRARIES[library]
    G = np.abs(np.random.default_rng(9).standard_normal((6, 4)))
    estimator = ExpectedKernel().fit(G)
    _values(estimator.transform(to_library(G)), to_numpy, estimator.transform(G),
            library)
    means, covs = G[:, :2], G[:, 2:]
    nystroem = km.NystroemMap(3, kernel="expected", rng=0).fit((means, covs))
    Z = nystroem.transform((to_library(means), to_library(covs)))
    _values(Z, to_numpy, nystroem.transform((means, covs)), library)


def test_nystroem_gradient():
    torch = _torch()
    sets = point_sets(np.float64, 6, (3, 4, 3, 5))
    nystroem = km.NystroemMap(3, kernel="mmd", gamma=0.5, rng=0).fit(sets)
    tensors = [torch.asarray(s).requires_grad_() for s in sets[:2]]
    assert torch.autograd.gradcheck(lambda *s: nystroem.transform(list(s)),
                                    tuple(tensors))


# -- a bandwidth given as a 0-D array ---------------------------------------

@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "polynomial"])
def test_bandwidth_as_a_tensor(kernel):
    """gamma and gamma2 as 0-D tensors: the values of the floats, and
    gradients to them (gradcheck; jax.grad the same)."""
    torch = _torch()
    sets = point_sets(np.float64, 7, (3, 4, 5))
    X = [torch.asarray(s).requires_grad_() for s in sets]
    g, g2 = (torch.tensor(v, dtype=torch.float64, requires_grad=True)
             for v in (0.4, 0.7))
    K = km.mmd_kernel(X, kernel=kernel, gamma=g, gamma2=g2)
    assert_allclose(K.detach().numpy(), km.mmd_kernel(sets, kernel=kernel, gamma=0.4,
                                                      gamma2=0.7), rtol=1e-12)
    assert torch.autograd.gradcheck(
        lambda a, b: km.mmd_kernel(X, kernel=kernel, gamma=a, gamma2=b), (g, g2))
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(a):
        return km.mmd([jnp.asarray(s) for s in sets], kernel=kernel, gamma=a).sum()

    km.mmd(X, kernel=kernel, gamma=g).sum().backward()
    assert_allclose(float(jax.grad(loss)(jnp.asarray(0.4))), float(g.grad),
                    rtol=1e-12)


def test_bandwidth_tensor_refused_clearly():
    torch = _torch()
    sets = point_sets(np.float64, 8, (3, 4))
    X = [torch.asarray(s).requires_grad_() for s in sets]
    with pytest.raises(ValueError, match="gamma must be > 0"):
        km.mmd(X, gamma=torch.tensor(-1.0, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"gamma must be a real number .*shape \(2,\)"):
        km.mmd(X, gamma=torch.tensor([0.5, 1.0]))
    with pytest.raises(TypeError, match=r"gamma is a torch\.Tensor on cpu: give it as "
                                        r"a Python float"):
        km.mmd(sets, gamma=torch.tensor(0.5))
    with pytest.raises(ValueError, match="gamma2 must be finite"):
        km.mmd_kernel(X, gamma2=torch.tensor(float("inf")))
    # PyTorch on the CPU without a gradient (the compiled engine): its value
    D = km.mmd([s.detach() for s in X], gamma=torch.tensor(0.5, dtype=torch.float64))
    assert_array_equal(D.numpy(), km.mmd(sets, gamma=0.5))


@pytest.mark.parametrize("gamma", [1e6, 1e-20])
@pytest.mark.parametrize("function", [km.sum_match_kernel, km.mmd, km.mmd_kernel],
                         ids=lambda f: f.__name__)
def test_the_degenerate_warning_is_numpys(function, gamma):
    """Computed by the library: the point kernel 0 between all points of
    different sets (gamma far too large), or 1 between all points (far too
    small), says so as for NumPy input."""
    torch = _torch()
    sets = point_sets(np.float64, 12, (4, 3, 5))
    with pytest.warns(km.DegenerateWarning) as expected:
        function(sets, gamma=gamma)
    with pytest.warns(km.DegenerateWarning) as given:
        function([torch.asarray(s).requires_grad_() for s in sets], gamma=gamma)
    assert [str(w.message) for w in given] == [str(w.message) for w in expected]


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
@pytest.mark.parametrize("case", ["equal rows", "beta far too large",
                                  "beta far too small", "gamma2 far too small",
                                  "sliced-Wasserstein", "equal sets",
                                  "divergence", "expected"])
def test_the_uninformative_kernel_warning_is_numpys(case, library):
    """The warnings of a constant kernel matrix or one that is 0 between
    distinct objects, read on the device: NumPy's, word for word."""
    to_library = LIBRARIES[library][0]
    H = np.random.default_rng(13).random((5, 4))
    function, X, options = {
        "equal rows": (km.additive_chi2_kernel, np.tile(H[:1], (5, 1)), {}),
        "beta far too large": (km.exp_chi2_kernel, H, {"beta": 1e6}),
        "beta far too small": (km.exp_chi2_kernel, H, {"beta": 1e-20}),
        "gamma2 far too small": (km.mmd_kernel, point_sets(np.float64, 14, (3, 4)),
                                 {"gamma": 0.5, "gamma2": 1e-20}),
        "sliced-Wasserstein": (km.sliced_wasserstein_kernel,
                               point_sets(np.float64, 15, (6, 6, 5)),
                               {"gamma": 1e8, "rng": 0}),
        "equal sets": (km.sliced_wasserstein_kernel, [np.ones((4, 3))] * 3,
                       {"rng": 0}),
        "divergence": (km.divergence_kernel, km.renyi_divergence(
            point_sets(np.float64, 16, (7, 8, 9))), {"gamma": 1e-30}),
        "expected": (km.gaussian_expected_kernel, (H[:, :2], H[:, 2:]),
                     {"gamma": 1e-30}),
    }[case]
    with pytest.warns(km.DegenerateWarning) as expected:
        function(*X, **options) if isinstance(X, tuple) else function(X, **options)
    if isinstance(X, tuple):
        with pytest.warns(km.DegenerateWarning) as warned:
            function(*map(to_library, X), **options)
    else:
        given = [to_library(x) for x in X] if isinstance(X, list) else to_library(X)
        with pytest.warns(km.DegenerateWarning) as warned:
            function(given, **options)
    assert [str(w.message) for w in warned] == [str(w.message) for w in expected]


# -- a callable kernel -------------------------------------------------------

def _rbf(A, B, gamma=0.5):
    """An RBF kernel of rows in any library (the user's callable)."""
    import array_api_compat

    xp = array_api_compat.array_namespace(A, B)
    diff = A[:, None, :] - B[None, :, :]
    return xp.exp(-gamma * xp.sum(diff * diff, axis=-1))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nystroem_of_a_callable(dtype, library):
    """The user's function called on the library's arrays (where the
    library computes), its value checked there: NumPy's features."""
    to_library, to_numpy = LIBRARIES[library]
    X = np.random.default_rng(40).normal(size=(12, 3)).astype(dtype)
    nystroem = km.NystroemMap(5, kernel=_rbf, gamma=0.3, rng=0).fit(X)
    Z = nystroem.transform(to_library(X[:7]))
    expected = nystroem.transform(X[:7])
    assert type(Z) is type(to_library(X))
    values = to_numpy(Z)
    assert values.dtype == expected.dtype
    assert_allclose(values, expected, rtol=1e-12 if dtype == np.float64 else 1e-5,
                    atol=1e-12 if dtype == np.float64 else 1e-5)


def test_nystroem_of_a_callable_gradcheck():
    torch = _torch()
    X = np.random.default_rng(41).normal(size=(10, 2))
    nystroem = km.NystroemMap(4, kernel=_rbf, rng=0).fit(X)
    assert torch.autograd.gradcheck(nystroem.transform,
                                    (torch.asarray(X[:3]).requires_grad_(),))


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_bad_values_of_a_callable_are_refused(library):
    """The messages of the NumPy path's checks of the user's value."""
    to_library = LIBRARIES[library][0]
    X = np.random.default_rng(42).normal(size=(8, 2))
    for value, error, message in (
            (lambda K: np.ones((3, 4)), TypeError,
             r"must return a real array of shape \(3, 4\), got ndarray"),
            (lambda K: K[:2, :], ValueError, r"returned shape \(2, 4\) for 3 x 4"),
            (lambda K: K * float("nan"), ValueError, "NaN or infinite values"),
            (lambda K: K * 1j, TypeError, "must return a real array")):
        def kernel(A, B, value=value):  # (bad for the 3 objects transformed)
            K = _rbf(A, B)
            return value(K) if A.shape[0] == 3 else K

        nystroem = km.NystroemMap(4, kernel=kernel, rng=0).fit(X)
        if error is ValueError or "ndarray" not in message:  # (NumPy's too)
            with pytest.raises(error, match=message):
                nystroem.transform(X[:3])
        with pytest.raises(error, match=message):
            nystroem.transform(to_library(X[:3]))
