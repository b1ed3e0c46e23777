"""`SetKernel` and `ExpectedKernel` fitted on arrays of other libraries
(issue 52): PyTorch, JAX and array-api-strict objects give the fitted
attributes and kernels of the same NumPy objects, fitted by the library on
their device where it computes (a gradient asked, array-api-strict),
differentiably, with no host copy of the training objects (only the median
heuristic's sample, the distances between the training sets for a
kernel's own scale)."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps.sklearn import ExpectedKernel, SetKernel

from ._helpers import LIBRARIES, NATIVE, host_copies, point_sets
from ._helpers import import_jnp as _jnp
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")

pytestmark = pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")


def weighted_bags(seed=0, sizes=(4, 7, 5, 6, 5)):
    rng = np.random.default_rng(seed)
    return km.Bags.from_list(point_sets(np.float64, seed, sizes),
                             weights=[rng.random(n) + 0.1 for n in sizes])


def as_library(sets, to_library):
    if isinstance(sets, km.Bags):
        return km.Bags(to_library(np.array(sets.points)), sets.offsets, sets.weights)
    return [to_library(s) for s in sets]


def assert_values(K, to_numpy, expected, library, rtol=1e-12):
    """K (of `library`) equal to the NumPy `expected`: bit for bit through
    the compiled engine (PyTorch and JAX on the CPU without a gradient)."""
    values = to_numpy(K)
    assert values.dtype == expected.dtype
    if library in ("torch", "jax"):
        assert_array_equal(values, expected)
    else:
        assert_allclose(values, expected, rtol=rtol,
                        atol=rtol * np.abs(expected).max())


def assert_same_fit(estimator, expected, rtol=1e-12):
    """The fitted attributes of a fit on a library equal those of NumPy's."""
    for name in ("n_features_in_", "n_features_out_"):
        assert getattr(estimator, name) == getattr(expected, name)
    for name in ("gamma_", "scale_"):
        value, wanted = getattr(estimator, name, None), getattr(expected, name, None)
        assert (value is None) == (wanted is None)
        if wanted is not None:
            assert_allclose(value, wanted, rtol=rtol)
    assert estimator.params_.keys() == expected.params_.keys()
    if hasattr(expected, "projections_"):
        assert_array_equal(estimator.projections_, expected.projections_)


# -- SetKernel ------------------------------------------------------------------

SET_CASES = {
    "mean_map": ("mean_map", {}),  # the median heuristic
    "mean_map_gamma": ("mean_map", {"gamma": 0.4}),
    "mean_map_laplacian": ("mean_map", {"kernel_params": {"kernel": "laplacian"}}),
    "mmd": ("mmd", {"gamma2": 0.5}),
    "sliced": ("sliced_wasserstein", {"n_projections": 8}),  # its own median
    "sliced_gamma": ("sliced_wasserstein", {"n_projections": 8, "gamma": 0.3}),
    "renyi": ("renyi", {"k": 2}),  # the PSD projection
}
TRAIN = point_sets(np.float64, 3, (6, 5, 7, 4, 6))
TEST = point_sets(np.float64, 4, (5, 3, 6), 0.3)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", sorted(SET_CASES))
def test_set_kernel_fit_equals_numpy(case, library):
    to_library, to_numpy = LIBRARIES[library]
    kernel, options = SET_CASES[case]
    rtol = 1e-10 if kernel == "renyi" else 1e-12  # (kNN estimates)
    expected = SetKernel(kernel, rng=0, **options)
    K_numpy = expected.fit_transform(TRAIN)
    estimator = SetKernel(kernel, rng=0, **options)
    K = estimator.fit_transform(as_library(TRAIN, to_library))
    assert type(K) is type(to_library(np.zeros(1)))
    assert_values(K, to_numpy, K_numpy, library, rtol)
    assert_same_fit(estimator, expected, rtol)
    # transform after the fit: of the library's sets, and of NumPy's
    assert_values(estimator.transform(as_library(TEST, to_library)), to_numpy,
                  expected.transform(TEST), library, rtol)
    assert_allclose(estimator.transform(TEST), expected.transform(TEST), rtol=rtol,
                    atol=rtol)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("kernel", ["mean_map", "mmd", "sliced_wasserstein"])
@pytest.mark.parametrize("gamma", [None, 0.5])
def test_set_kernel_weighted_and_3d(gamma, kernel, library):
    to_library, to_numpy = LIBRARIES[library]
    B = weighted_bags()
    expected = SetKernel(kernel, gamma=gamma, n_projections=6, rng=1)
    estimator = SetKernel(kernel, gamma=gamma, n_projections=6, rng=1)
    assert_allclose(to_numpy(estimator.fit_transform(as_library(B, to_library))),
                    expected.fit_transform(B), rtol=1e-12, atol=1e-14)
    assert_same_fit(estimator, expected)
    assert estimator._fit_weighted
    C = weighted_bags(2, (3, 5))
    assert_allclose(to_numpy(estimator.transform(as_library(C, to_library))),
                    expected.transform(C), rtol=1e-12, atol=1e-14)
    # a 3-D array, float32: float64 kernels at float32's precision
    X = np.stack([s[:4] for s in TRAIN]).astype(np.float32)
    expected = SetKernel(kernel, gamma=gamma, n_projections=6, rng=1)
    estimator = SetKernel(kernel, gamma=gamma, n_projections=6, rng=1)
    K = to_numpy(estimator.fit_transform(to_library(X)))
    assert K.dtype == np.float64
    assert_allclose(K, expected.fit_transform(X), rtol=1e-5, atol=1e-6)
    assert_allclose(estimator.gamma_, expected.gamma_, rtol=1e-5)


def test_set_kernel_train_stays_on_the_device():
    """``train_`` is the sets in the library (with their gradient), used as
    they are; NumPy, another library and the exchange convert them."""
    torch, xps = _torch(), pytest.importorskip("array_api_strict")
    tensors = [torch.asarray(s).requires_grad_() for s in TRAIN]
    estimator = SetKernel(gamma=0.4).fit(tensors)
    assert isinstance(estimator.train_, km.Bags)
    assert isinstance(estimator.train_.points, torch.Tensor)
    assert estimator.train_.points.requires_grad
    expected = SetKernel(gamma=0.4).fit(TRAIN).transform(TEST)
    K = estimator.transform([torch.asarray(s) for s in TEST])  # (the exchange)
    assert_allclose(K.numpy(), expected, rtol=1e-12)
    K = estimator.transform([xps.asarray(s) for s in TEST])  # (another library)
    assert_allclose(np.asarray(K), expected, rtol=1e-12)
    # a gradient to the training sets through a transform that the library
    # computes (of sets that ask for one)
    estimator.transform([torch.asarray(TEST[0]).requires_grad_()]).sum().backward()
    assert all(t.grad is not None and torch.all(torch.isfinite(t.grad))
               for t in tensors)


def test_set_kernel_pickle_and_pipeline():
    """A SetKernel fitted on tensors that ask for a gradient pickles (its
    sets with it) and predicts NumPy sets in a Pipeline. (scikit-learn's
    SVC takes no such tensor: fitting the Pipeline on them is the user's
    to avoid.)"""
    torch = _torch()
    pytest.importorskip("sklearn")
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    sets = [rng.normal(loc=c, size=(15, 2)) for c in (0, 0, 3, 3, 0, 3)]
    y = np.array([0, 0, 1, 1, 0, 1])
    estimator = SetKernel(kernel="sliced_wasserstein", n_projections=10, rng=0)
    K = estimator.fit_transform([torch.asarray(s).requires_grad_() for s in sets])
    restored = pickle.loads(pickle.dumps(estimator))
    assert isinstance(restored.train_.points, torch.Tensor)
    assert_array_equal(restored.projections_, estimator.projections_)
    assert_allclose(restored.transform(sets), K.detach().numpy(), rtol=1e-12)
    model = make_pipeline(restored, SVC(kernel="precomputed").fit(
        K.detach().numpy(), y))
    assert_array_equal(model.predict(sets), y)


def test_set_kernel_gradients():
    torch = _torch()
    tensors = tuple(torch.asarray(s).requires_grad_()
                    for s in point_sets(np.float64, 5, (3, 4, 3)))
    for kernel in ("mean_map", "mmd"):
        assert torch.autograd.gradcheck(
            lambda *s, k=kernel: SetKernel(k, gamma=0.5).fit_transform(list(s)),
            tensors)
    # the default scales: constants of the gradient, which stays finite
    for kernel in ("mean_map", "sliced_wasserstein"):
        SetKernel(kernel, n_projections=5, rng=0).fit_transform(
            list(tensors)).sum().backward()
    assert all(torch.all(torch.isfinite(t.grad)) for t in tensors)


def test_set_kernel_jax_grad():
    """jax.grad of fit_transform equals PyTorch's gradient; the fitted sets
    are the values (a tracer does not outlive jax.grad)."""
    torch, jnp = _torch(), _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 6, (4, 4, 4)))
    estimator = SetKernel("mmd", gamma=0.5)

    def loss(A):
        return (estimator.fit_transform(A) ** 2).sum()

    g = jax.grad(loss)(jnp.asarray(X))
    A = torch.asarray(X).requires_grad_()
    loss(A).backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)
    jax.grad(loss)(jnp.asarray(X))
    assert not isinstance(estimator.train_.points, jax.core.Tracer)
    assert_allclose(np.asarray(estimator.transform(jnp.asarray(X))),
                    SetKernel("mmd", gamma=0.5).fit(X).transform(X), rtol=1e-12)


def test_set_kernel_on_the_meta_device():
    torch = _torch()
    X = [torch.empty(n, 3, device="meta", dtype=torch.float64) for n in (3, 5, 4)]
    K = SetKernel(gamma=0.5).fit_transform(X)
    assert K.device.type == "meta" and tuple(K.shape) == (3, 3)
    with pytest.raises(ValueError, match="give gamma"):
        SetKernel().fit(X)


def _message(call):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    return info.type, str(info.value)


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_set_kernel_bad_sets(library):
    """The NumPy fit's errors and messages."""
    to_library = LIBRARIES[library][0]
    nan = [s.copy() for s in TRAIN]
    nan[2][1, 0] = np.nan
    for kernel, sets in [("mean_map", nan), ("mean_map", [TRAIN[0], TRAIN[1][:0]]),
                         ("mean_map", TRAIN[0]),  # one set, not in a list
                         ("mean_map", [TRAIN[0], TRAIN[1][:, :2]]),  # two widths
                         ("mean_map", [TRAIN[0], TRAIN[1][:, 0]]),  # a 1-D set
                         ("renyi", weighted_bags()),
                         ("renyi", TRAIN)]:  # sets of at most k = 5 points
        wanted = _message(lambda k=kernel, s=sets: SetKernel(k).fit(s))
        given = (as_library(sets, to_library) if isinstance(sets, (list, km.Bags))
                 else to_library(sets))
        assert _message(lambda k=kernel, s=given: SetKernel(k).fit(s)) == wanted


# The warnings of a fit on degenerate sets: (kernel's options, sets).
_SETS = np.random.default_rng(3).normal(size=(5, 8, 2))
DEGENERATE = [
    ({"kernel": "mean_map"}, np.ones((4, 3, 2))),  # equal sets
    ({"kernel": "mean_map", "gamma": 1e-300}, _SETS),
    ({"kernel": "mmd", "gamma2": 1e-300}, _SETS),  # far too small
    ({"kernel": "mmd", "gamma2": 1e300}, _SETS),  # far too large: 0
    ({"kernel": "renyi", "gamma": 1e-300}, _SETS),
    ({"kernel": "renyi", "k": 3}, np.ones((4, 8, 2)) + np.arange(8)[:, None]),
    ({"kernel": "sliced_wasserstein"}, np.ones((4, 3, 2))),
    ({"kernel": "sliced_wasserstein", "gamma": 1e300}, _SETS),
]


def _warnings(call):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", range(len(DEGENERATE)))
def test_set_kernel_degenerate_warnings(case, library):
    """A fit computed on the device warns as the NumPy fit does (the
    `DegenerateWarning` of the kernel's function, `Spec.array_gram`'s)."""
    options, sets = DEGENERATE[case]
    wanted = _warnings(lambda: SetKernel(**options, rng=0).fit(sets))
    assert wanted and all(w[0] is km.DegenerateWarning for w in wanted)
    given = LIBRARIES[library][0](sets)
    assert _warnings(lambda: SetKernel(**options, rng=0).fit(given)) == wanted


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_bad_sets_messages_everywhere(library):
    """Sets of another library checked where they are computed (their
    layout from their shapes by NumPy's `check_sets`, their values on the
    device) give the NumPy path's error and message, in the tools as in
    the functions."""
    to_library = LIBRARIES[library][0]
    sets = point_sets(np.float64, 1, (7, 7, 7, 7))
    cases = [[*sets[:3], sets[3][:, :1]], [*sets[:3], sets[3][:, 0]],
             [*sets[:3], sets[3][:0]], [], [s[:, :0] for s in sets],
             [*sets[:2], np.full((7, 2), np.inf)], np.full((4, 7, 2), np.nan),
             np.zeros((3, 0, 2)), np.zeros((0, 3, 2)), np.zeros((3, 2, 2, 2)),
             sets[0]]
    calls = [lambda X: SetKernel("mmd").fit(X),
             lambda X: SetKernel("renyi", k=3).fit(X),
             lambda X: km.mmd_test(X, X, kernel="mmd", n_resamples=9, rng=0),
             lambda X: km.sum_match_kernel(X, normalize=True),
             lambda X: km.sliced_wasserstein(X, rng=0)]
    for X in cases:
        given = [to_library(a) for a in X] if isinstance(X, list) else to_library(X)
        for call in calls:
            assert (_message(lambda c=call, a=given: c(a))
                    == _message(lambda c=call, a=X: c(a)))


# -- ExpectedKernel -------------------------------------------------------------

def gaussians(covariance, n=7, d=2, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((n, d))
    if covariance == "full":
        A = rng.standard_normal((n, d, d))
        covs = (A @ A.transpose(0, 2, 1)).reshape(n, d * d)
    else:
        covs = rng.random((n, d if covariance == "diag" else 1))
    return np.hstack([means, covs])


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("covariance", ["full", "diag", "iso"])
@pytest.mark.parametrize("options", [{}, {"gamma": 0.7}, {"kernel": "polynomial"}],
                         ids=["median", "gamma", "polynomial"])
def test_expected_kernel_fit_equals_numpy(options, covariance, library):
    to_library, to_numpy = LIBRARIES[library]
    G, H = gaussians(covariance), gaussians(covariance, 4, seed=1)
    expected = ExpectedKernel(covariance, **options)
    K_numpy = expected.fit_transform(G)
    estimator = ExpectedKernel(covariance, **options)
    K = estimator.fit_transform(to_library(G))
    assert type(K) is type(to_library(np.zeros(1)))
    assert_values(K, to_numpy, K_numpy, library)
    assert_same_fit(estimator, expected)
    assert_values(estimator.transform(to_library(H)), to_numpy,
                  expected.transform(H), library)
    assert_allclose(estimator.transform(H), expected.transform(H), rtol=1e-12)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("options, X", [
    ({"gamma": 1e-300}, np.abs(np.random.default_rng(1).normal(size=(6, 4)))),
    ({}, np.ones((4, 4))),  # equal Gaussians
], ids=["small gamma", "equal"])
def test_expected_kernel_degenerate_warnings(options, X, library):
    """A fit on the device warns as the NumPy fit does."""
    wanted = _warnings(lambda: ExpectedKernel(**options).fit(X))
    assert wanted and all(w[0] is km.DegenerateWarning for w in wanted)
    given = LIBRARIES[library][0](X)
    assert _warnings(lambda: ExpectedKernel(**options).fit(given)) == wanted


def test_expected_kernel_gradient_and_errors():
    torch = _torch()
    G = torch.asarray(gaussians("diag", 4)).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda A: ExpectedKernel(gamma=0.5).fit_transform(A), (G,))
    F = gaussians("full", 3).astype(np.float32)
    K = ExpectedKernel("full").fit_transform(torch.asarray(F).requires_grad_())
    assert K.dtype == torch.float64  # (as NumPy's: float64)
    assert_allclose(K.detach().numpy(), ExpectedKernel("full").fit_transform(F),
                    rtol=1e-12)
    negative = gaussians("diag", 4)
    negative[1, 3] = -1.0
    for X in (negative, gaussians("diag", 4)[:, :3]):
        wanted = _message(lambda X=X: ExpectedKernel().fit(X))
        given = torch.asarray(X).requires_grad_()
        assert _message(lambda X=given: ExpectedKernel().fit(X)) == wanted


# -- no host copy of the training objects ------------------------------------------

def test_no_host_copy():
    """A fit on tensors that ask for a gradient copies to the host only
    what its state holds: the median heuristic's sample (at most
    MEDIAN_SAMPLE points), the distances between the sets for the kernel's
    own scale; never the training objects."""
    torch = _torch()
    with host_copies() as copied:
        sets = point_sets(np.float64, 8, (300, 400, 350, 250))
        size = sum(s.size for s in sets)
        for kernel in ("mean_map", "mmd", "sliced_wasserstein", "renyi"):
            copied.clear()
            X = [torch.asarray(s).requires_grad_() for s in sets]
            estimator = SetKernel(kernel, n_projections=5, rng=0)
            K = estimator.fit_transform(X)
            assert copied and max(copied) < size, kernel
            expected = SetKernel(kernel, n_projections=5, rng=0)
            assert_allclose(K.detach().numpy(), expected.fit_transform(sets),
                            rtol=1e-10, atol=1e-10)
            assert_same_fit(estimator, expected, 1e-10)
        G = gaussians("diag", 1200)
        copied.clear()
        estimator = ExpectedKernel().fit(torch.asarray(G).requires_grad_())
        assert copied and max(copied) < G.size
        assert_same_fit(estimator, ExpectedKernel().fit(G))
