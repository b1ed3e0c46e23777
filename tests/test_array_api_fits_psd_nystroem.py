"""`PSDProjector` and `NystroemMap` fitted on arrays of other libraries
(issue 52): where the library computes (a gradient asked, array-api-strict)
the fit runs there (`_array_fit`), copies to the host only the fitted
state, and gives NumPy's fitted attributes and features; elsewhere (PyTorch
and JAX on the CPU) it runs on a NumPy view, as before.

Skipped where array-api-compat or the library is missing."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._spec import spec_for

from ._helpers import LIBRARIES, TEST_DEVICE, host_copies, point_sets
from ._helpers import import_jnp as _jnp
from ._helpers import import_torch as _torch

array_api_compat = pytest.importorskip("array_api_compat")

METHODS = ["clip", "flip", "shift", "square"]


def _close(values, expected, rtol):
    assert values.dtype == expected.dtype
    assert_allclose(values, expected, rtol=rtol,
                    atol=rtol * max(np.abs(expected).max(initial=0.0), 1e-300))


def _same_type(A, like):
    """A is an array of the library and device of `like`."""
    assert type(A) is type(like)
    if hasattr(like, "device") and hasattr(like.device, "type"):  # (torch)
        assert A.device == like.device


# -- PSDProjector -------------------------------------------------------------

def indefinite(n=9, seed=0, negative=(-8.0, -5.5, -3.0, -1.5)):
    """A symmetric n x n matrix with the given negative eigenvalues, its
    positive ones 1 to 6 (all distinct, well apart)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    values = np.concatenate([negative, np.linspace(1.0, 6.0, n - len(negative))])
    return (Q * values) @ Q.T


def _assert_psd_fits_equal(fitted, expected):
    """The fitted attributes of two `PSDProjector` fits of one kernel: the
    eigenpairs to the eigen-solvers' rounding (the eigenvectors through the
    subspace they span: each has a sign)."""
    for name in ("n_train_", "n_features_in_", "n_features_out_", "_exponent"):
        assert getattr(fitted, name) == getattr(expected, name)
    for name in ("eigenvalues_", "_unit_eigenvalues"):
        _close(getattr(fitted, name), getattr(expected, name), 1e-12)
    assert_allclose(fitted.shift_, expected.shift_, rtol=1e-12)
    V, W = fitted.eigenvectors_, expected.eigenvectors_
    assert V.shape == W.shape and type(V) is np.ndarray
    assert_allclose(V @ V.T, W @ W.T, atol=1e-12)
    if expected._train is None:
        assert fitted._train is None
    else:
        assert_array_equal(fitted._train, expected._train)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_psd_projector_fits(dtype, method, library):
    to_library, to_numpy = LIBRARIES[library]
    K = indefinite().astype(dtype)
    rows = np.random.default_rng(1).standard_normal((3, 9)).astype(dtype)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    expected = km.PSDProjector(method).fit(K)
    converted = to_library(K)
    fitted = km.PSDProjector(method).fit(converted)
    _assert_psd_fits_equal(fitted, expected)
    T = fitted.transform(to_library(rows))
    _same_type(T, converted)
    _close(to_numpy(T), expected.transform(rows), rtol)
    again = km.PSDProjector(method)
    P = again.fit_transform(converted)
    _same_type(P, converted)
    _close(to_numpy(P), km.project_psd(K, method=method), rtol)
    _close(to_numpy(P), to_numpy(km.project_psd(converted, method=method)), rtol)
    _assert_psd_fits_equal(again, expected)


@pytest.mark.parametrize("method", ["clip", "flip", "shift"])
def test_psd_projector_copies_the_state_only(method):
    """A fit on the device copies the spectrum and the negative
    eigenvectors, never the training kernel; fit_transform gives the
    gradient of `project_psd`."""
    torch = _torch()
    K = indefinite(40, 2, negative=(-3.0, -2.0))
    tensor = torch.asarray(K, device=TEST_DEVICE).requires_grad_()
    with host_copies() as sizes:
        km.PSDProjector(method).fit(tensor)
    assert sizes and max(sizes) < K.size
    P = km.PSDProjector(method).fit_transform(tensor)
    (grad,) = torch.autograd.grad(P.sum(), tensor)
    (expected,) = torch.autograd.grad(km.project_psd(tensor, method=method).sum(),
                                      tensor)
    assert_allclose(grad.cpu().numpy(), expected.cpu().numpy(), atol=1e-12)


def test_psd_projector_under_jax_grad():
    """A JAX tracer (under ``jax.grad``) is fitted on the device: the
    gradient of fit_transform equals PyTorch's."""
    jnp, torch = _jnp(), _torch()
    import jax

    K = indefinite(6, 3, negative=(-2.0, -1.0))
    for method in METHODS:
        grad = jax.grad(lambda A, m=method: jnp.sum(
            km.PSDProjector(m).fit_transform(A) ** 2))(jnp.asarray(K))
        tensor = torch.asarray(K).requires_grad_()
        (expected,) = torch.autograd.grad(
            (km.PSDProjector(method).fit_transform(tensor) ** 2).sum(), tensor)
        assert_allclose(np.asarray(grad), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_psd_projector_on_meta_and_bad_input():
    torch = _torch()
    K = indefinite(6, 4, negative=(-1.0,))
    fitted = km.PSDProjector().fit(K)
    M = torch.empty(2, 6, device="meta", dtype=torch.float64)
    assert fitted.transform(M).device.type == "meta"
    with pytest.raises(ValueError, match="needs the values of K_train"):
        km.PSDProjector().fit(torch.empty(6, 6, device="meta", dtype=torch.float64))
    for bad, message in ((K[:3], "must be square"), (K[0], "must be 2-D"),
                         (np.where(K > 0.5, np.nan, K), "NaN")):
        with pytest.raises(ValueError, match=message):
            km.PSDProjector().fit(torch.asarray(bad).requires_grad_())
    with pytest.raises(ValueError, match="method"):
        km.PSDProjector("nearest").fit(torch.asarray(K).requires_grad_())


# -- NystroemMap --------------------------------------------------------------

def _objects(kind, dtype, seed=0, n=14):
    """NumPy objects of `kind` and a function of the library's array of a
    NumPy array that makes the same objects of the library."""
    rng = np.random.default_rng(seed)
    if kind == "sets":
        sizes = rng.integers(4, 9, size=n)
        X = point_sets(dtype, seed, tuple(int(s) for s in sizes))
        return X, lambda convert: [convert(s) for s in X]
    if kind == "bags":
        X = km.Bags.from_list(point_sets(dtype, seed, (5, 7, 4, 6) * (n // 4)),
                              weights=[rng.random(s) + 0.1
                                       for s in (5, 7, 4, 6) * (n // 4)])
        return X, lambda convert: km.Bags(convert(np.array(X.points)), X.offsets,
                                          X.weights)
    if kind == "histograms":
        X = rng.random((n, 6)).astype(dtype)
        return X, lambda convert: convert(X)
    G = np.abs(rng.standard_normal((n, 4))).astype(dtype)  # Gaussians
    X = (G[:, :2].copy(), G[:, 2:].copy())
    return X, lambda convert: tuple(convert(a) for a in X)


def _assert_nystroem_fits_equal(fitted, expected):
    """The fitted attributes of two `NystroemMap` fits of the same objects:
    the same landmarks, drawn and copied, hence the same kernel and
    normalisation."""
    L, M = fitted.components_, expected.components_
    if isinstance(M, km.Bags):
        assert isinstance(L, km.Bags)
        assert_array_equal(L.offsets, M.offsets)
        assert (L.weights is None) == (M.weights is None)
        if M.weights is not None:
            assert_array_equal(L.weights, M.weights)
        L, M = L.points, M.points
    for a, b in zip(L if isinstance(L, tuple) else (L,),
                    M if isinstance(M, tuple) else (M,), strict=True):
        assert type(a) is np.ndarray and a.dtype == b.dtype
        assert_array_equal(a, b)
    for name in ("component_indices_", "normalization_", "eigenvalues_"):
        assert_array_equal(getattr(fitted, name), getattr(expected, name))
    assert fitted.params_.keys() == expected.params_.keys()
    for name, value in expected.params_.items():
        assert_array_equal(fitted.params_[name], value)
    assert fitted.n_features_in_ == expected.n_features_in_
    assert fitted.n_features_out_ == expected.n_features_out_


CASES = [("mean_map", "sets", {}), ("mean_map", "bags", {}),
         ("chi2", "histograms", {}), ("exp_chi2", "histograms", {"beta": 0.7}),
         ("expected", "gaussians", {})]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("kernel, kind, params", CASES,
                         ids=[f"{k}-{kind}" for k, kind, _ in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nystroem_fits(dtype, kernel, kind, params, library):
    """gamma None: the median heuristic (of the sampled points alone where
    the library computes); uniform landmarks."""
    to_library, to_numpy = LIBRARIES[library]
    X, convert = _objects(kind, dtype)
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    expected = km.NystroemMap(5, kernel=kernel, kernel_params=params or None,
                              rng=3).fit(X)
    fitted = km.NystroemMap(5, kernel=kernel, kernel_params=params or None, rng=3)
    converted = convert(to_library)
    Z = fitted.fit_transform(converted)
    _assert_nystroem_fits_equal(fitted, expected)
    like = to_library(np.zeros(1))
    _same_type(Z, like)
    _close(to_numpy(Z), expected.transform(X), rtol)
    _close(to_numpy(fitted.transform(converted)), expected.transform(X), rtol)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_nystroem_landmarks_given_and_by_rule(library):
    """Indices given: fitted on the device; "kmeans++" and "leverage": on a
    copy (the same fit)."""
    to_library = LIBRARIES[library][0]
    X, convert = _objects("histograms", np.float64, 5, 20)
    for landmarks in (np.array([7, 2, 11, 0]), "kmeans++", "leverage"):
        options = {"kernel": "chi2", "landmarks": landmarks, "rng": 1}
        expected = km.NystroemMap(4, **options).fit(X)
        fitted = km.NystroemMap(4, **options).fit(convert(to_library))
        _assert_nystroem_fits_equal(fitted, expected)
    with pytest.raises(ValueError, match="distinct indices below 20"):
        km.NystroemMap(2, kernel="chi2", landmarks=[3, 20]).fit(convert(to_library))
    with pytest.warns(UserWarning, match="every object is a landmark"):
        km.NystroemMap(30, kernel="chi2").fit(convert(to_library))
    with pytest.raises(ValueError, match="negative values"):
        km.NystroemMap(2, kernel="chi2").fit(to_library(-X))


def _needs_array_check(kernel):
    if not hasattr(spec_for(kernel), "check_array"):
        pytest.skip(f"the {kernel!r} spec has no check_array yet: fitted on "
                    f"a copy")


@pytest.mark.parametrize("kernel, kind", [("chi2", "histograms"),
                                          ("mean_map", "sets"),
                                          ("mean_map", "bags"),
                                          ("expected", "gaussians")])
def test_nystroem_copies_the_state_only(kernel, kind):
    """What the fit copies to the host: the landmarks, and the median
    heuristic's sample (1000 points, of more), never the objects."""
    _needs_array_check(kernel)
    torch = _torch()
    X, convert = _objects(kind, np.float64, 6, 1200 if kind == "gaussians" else 240)
    converted = convert(lambda a: torch.asarray(a, device=TEST_DEVICE)
                        .requires_grad_())
    size = (X.points.size if kind == "bags" else X[0].size if kind == "gaussians"
            else sum(s.size for s in X) if kind == "sets" else X.size)
    with host_copies() as sizes:
        fitted = km.NystroemMap(6, kernel=kernel, rng=0).fit(converted)
    assert sizes and max(sizes) < size
    _assert_nystroem_fits_equal(fitted, km.NystroemMap(6, kernel=kernel,
                                                       rng=0).fit(X))
    if kind != "gaussians":  # (the features' gradient, to the objects)
        Z = fitted.transform(converted)
        leaves = converted.points if kind == "bags" else converted
        grads = torch.autograd.grad(Z.sum(), leaves)
        assert all(torch.all(torch.isfinite(g)) for g in
                   (grads if isinstance(grads, tuple) else (grads,)))


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
@pytest.mark.parametrize("kernel", ["mmd", "sliced_wasserstein", "renyi"])
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
def test_nystroem_fits_of_other_set_kernels(kernel, library):
    """Their scales fixed as on the host: the MMD kernel's point gamma by
    the median heuristic, the sliced-Wasserstein directions drawn from
    `rng` (and gamma on the landmarks), the Renyi kernel's scale on the
    landmarks."""
    to_library, to_numpy = LIBRARIES[library]
    X = point_sets(np.float64, 8, (9, 12, 10, 8, 11, 9, 10, 12))
    expected = km.NystroemMap(4, kernel=kernel, rng=2).fit(X)
    converted = [to_library(s) for s in X]
    fitted = km.NystroemMap(4, kernel=kernel, rng=2).fit(converted)
    _assert_nystroem_fits_equal(fitted, expected)
    _close(to_numpy(fitted.transform(converted)), expected.transform(X), 1e-10)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_nystroem_of_a_callable_fits_on_a_copy(library):
    to_library, to_numpy = LIBRARIES[library]
    X = np.random.default_rng(9).normal(size=(12, 3))

    def rbf(A, B, gamma=0.3):
        xp = array_api_compat.array_namespace(A, B)
        diff = A[:, None, :] - B[None, :, :]
        return xp.exp(-gamma * xp.sum(diff * diff, axis=-1))

    expected = km.NystroemMap(5, kernel=rbf, rng=0).fit(X)
    fitted = km.NystroemMap(5, kernel=rbf, rng=0).fit(to_library(X))
    _assert_nystroem_fits_equal(fitted, expected)
    _close(to_numpy(fitted.transform(to_library(X))), expected.transform(X), 1e-10)
