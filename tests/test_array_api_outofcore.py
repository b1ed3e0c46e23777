"""The out-of-core models (`rf_pca`, `rf_ridge` and their estimators) on
arrays of other libraries (issue 52): one array of PyTorch, JAX or
array-api-strict rows (or a `Bags` of its points) is one data set, split
into blocks of rows mapped in that library, the moments reduced there
(where the library computes; else on the host, from each block's
features), copied once; `transform` and `predict` compute in the
input's library (differentiably where it computes), and return there.
Before, such an array was iterated as blocks of one row each."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import _array_api
from kernelmaps._outofcore import _passes

from ._helpers import LIBRARIES, native_labels, point_sets
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


def data(dtype=np.float64, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)).astype(dtype)
    y = np.c_[X[:, 0] ** 2, X[:, 1]].astype(np.float64)
    return X, y


def assert_close(value, expected, library, exact):
    """Equal to NumPy's: bit for bit where NumPy's engine computes
    (PyTorch and JAX on the CPU without a gradient, `exact`)."""
    if exact and library in ("torch", "jax"):
        assert_array_equal(value, expected)
    else:
        scale = np.abs(expected).max()
        assert_allclose(value, expected, rtol=1e-12, atol=1e-12 * scale)


@pytest.fixture(params=[False, True], ids=["one block", "blocks"])
def blocks(request, monkeypatch):
    """Blocks of 64 rows (several per data set) or the default."""
    if request.param:
        monkeypatch.setattr(_passes, "OUTOFCORE_BLOCK_ROWS", 64)
    return request.param


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_ridge_and_pca_equal_numpy(library, blocks):
    to_library, to_numpy = LIBRARIES[library]
    X, y = data()
    fmap = km.RandomFourierFeatures(n_components=32, rng=0).fit(X)
    ridge, pca = km.rf_ridge(X, y, fmap, 8), km.rf_pca(X, fmap, 5)
    given = to_library(X)
    r = km.rf_ridge(given, to_library(y), fmap, 8)
    p = km.rf_pca(given, fmap, 5)
    # the fits: NumPy's, from the same features
    assert r.n_samples_ == p.n_samples_ == len(X)
    assert_close(r.coef_, ridge.coef_, library, not blocks)
    assert_close(p.components_, pca.components_, library, not blocks)
    # the predictions: in the input's library, on its device
    for out, expected in [(r.predict(given), ridge.predict(X)),
                          (p.transform(given), pca.transform(X))]:
        assert type(out) is type(given)
        assert_close(to_numpy(out), expected, library, True)


@pytest.mark.parametrize("targets", ["numpy", "library", "library 1-D int"])
@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_no_features_come_to_the_host(library, targets, blocks, monkeypatch):
    """Where the library computes, each block's moments are reduced on its
    device (`DeviceMoments`): no block of features, nor of targets of the
    library, is copied to the host, only the p x p moments at the end;
    the fits are NumPy's to rounding, the PCA pass of a joint ridge
    (n_components=) among them."""
    to_library, _ = LIBRARIES[library]
    X, y = data()
    if targets.endswith("int"):
        y = np.round(10 * y[:, 0]).astype(np.int64)
    fmaps = [km.RandomFourierFeatures(n_components=24, rng=s).fit(X) for s in (0, 1)]
    expected = km.rf_ridge(X, y, fmaps, [6, 4], alpha=0.5)
    copied = []

    def host_features(Z):
        if _array_api.is_foreign(Z):
            copied.append(tuple(Z.shape))
        return Z

    monkeypatch.setattr(_passes, "host_features", host_features)
    given = y if targets == "numpy" else native_labels(library, y)
    ridge = km.rf_ridge(to_library(X), given, fmaps, [6, 4], alpha=0.5)
    assert copied == []
    scale = np.abs(expected.coef_).max()
    assert_allclose(ridge.coef_, expected.coef_, rtol=1e-10, atol=1e-10 * scale)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_features_as_data_and_float32(library):
    """No map: the library's rows are the features, checked there; float32
    features give float32 coordinates, as NumPy's."""
    to_library, to_numpy = LIBRARIES[library]
    X, y = data(np.float32)
    F = km.RandomFourierFeatures(n_components=16, rng=0).fit(X).transform(X)
    ridge, pca = km.rf_ridge(F, y, None, 6), km.rf_pca(F, None, 4)
    r = km.rf_ridge(to_library(F), y, None, 6)
    p = km.rf_pca(to_library(F), None, 4)
    assert_allclose(r.coef_, ridge.coef_, rtol=1e-5, atol=1e-6)
    Z = p.transform(to_library(F))
    assert to_numpy(Z).dtype == np.float32
    assert_allclose(to_numpy(Z), pca.transform(F), rtol=1e-4, atol=1e-5)
    bad = F.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match="contains NaN") as wanted:
        km.rf_pca(bad, None, 4)
    with pytest.raises(ValueError, match="contains NaN") as given:
        km.rf_pca(to_library(bad), None, 4)
    assert str(given.value) == str(wanted.value)


def test_sets_of_another_library():
    """A `Bags` of PyTorch points is one data set of sets, split by sets."""
    torch = _torch()
    sets = point_sets(np.float64, 4, [5 + i % 4 for i in range(40)])
    y = np.arange(40.0)
    fmap = km.RandomDistributionFeatures(n_components=24, rng=0).fit(sets)
    expected = km.rf_ridge(km.Bags.from_list(sets), y, fmap, 6)
    bags = km.Bags.from_list(sets)
    given = km.Bags(torch.asarray(np.array(bags.points)).requires_grad_(),
                    bags.offsets)
    r = km.rf_ridge(given, torch.asarray(y), fmap, 6)
    assert_allclose(r.coef_, expected.coef_, rtol=1e-12, atol=1e-12)
    out = r.predict(given)
    assert isinstance(out, torch.Tensor)
    assert_allclose(out.detach().numpy(), expected.predict(bags), rtol=1e-11)


def test_predict_is_differentiable():
    """`predict` and `transform` of tensors that ask for a gradient:
    gradcheck through the map and the fitted model."""
    torch = _torch()
    X, y = data(n=80)
    fmap = km.RandomFourierFeatures(n_components=16, rng=0).fit(X)
    ridge, pca = km.rf_ridge(X, y, fmap, 6), km.rf_pca(X, fmap, 3)
    x = torch.asarray(X[:4]).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: ridge.predict(a), (x,))
    assert torch.autograd.gradcheck(lambda a: pca.transform(a), (x,))


def test_the_meta_device():
    """The output's library and device are the input's."""
    torch = _torch()
    X, y = data(n=50)
    fmap = km.RandomFourierFeatures(n_components=8, rng=0).fit(X)
    ridge = km.rf_ridge(X, y, fmap, 4)
    out = ridge.predict(torch.empty(7, 3, dtype=torch.float64, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (7, 2)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_bad_targets_of_the_library(library):
    """Targets of the library, checked on its device: NumPy's errors and
    messages for the same values; targets on another device refused,
    naming both arguments."""
    to_library, _ = LIBRARIES[library]
    X, y = data()
    fmap = km.RandomFourierFeatures(n_components=8, rng=0).fit(X)
    nan = y.copy()
    nan[7, 1] = np.nan
    for bad in (nan, y[:-1], y[:, :, None], np.array(2.0), y.astype(complex)):
        with pytest.raises((ValueError, TypeError)) as wanted:
            km.rf_ridge(X, bad, fmap, 4)
        with pytest.raises(wanted.type) as got:
            km.rf_ridge(to_library(X), native_labels(library, bad), fmap, 4)
        message = str(wanted.value)
        assert str(got.value) == message.replace(
            "dtype complex128", f"dtype {native_labels(library, bad).dtype}")
    if library == "torch_grad":
        torch = _torch()
        with pytest.raises(ValueError,
                           match=r"chunks is on device .* y_chunks on device meta"):
            km.rf_ridge(to_library(X), torch.asarray(y, device="meta"), fmap, 4)
