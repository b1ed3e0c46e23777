"""The cross test and the linear test of points computed by the arrays'
library (issue 52, `_two_sample.on_device_direct`): PyTorch tensors that
ask for a gradient and array-api-strict arrays (both computed by the
library on this CPU machine) give the NumPy result, the statistic and the
p-value equal to rounding, within any working memory."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import kernelmaps as km
from kernelmaps._array_api import library_of_objects
from kernelmaps._two_sample import features, linear, on_device, on_device_direct

from ._helpers import NATIVE, assert_same_test, two_samples
from ._helpers import import_strict as _strict
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


LIBRARIES = NATIVE  # (name: the library's array of a NumPy array)


def direct(X, Y, method, kernel=None, gamma=None, n_resamples=None,
           alpha=0.05, dtype=None, rng=None, working_memory=None,
           feature_map=None, taken=True):
    """`mmd_test` of the arrays X and Y by `on_device_direct` (as
    `mmd_test` calls it where `takes` says so: asserted unless `taken`
    is None)."""
    library = library_of_objects(X=X, Y=Y)
    if taken is not None:
        assert on_device_direct.takes(library, X, Y, kernel, method,
                                      feature_map, None) is taken
    test = on_device_direct.TESTS[method]
    return test(library, X, Y, kernel, gamma, method, n_resamples, alpha, True,
                None, dtype, rng, None, False, working_memory,
                feature_map=feature_map)


def assert_same_result(result, expected, rtol=1e-12):
    assert type(result) is type(expected)
    assert (result.method, result.kernel, result.alpha, result.gamma) == (
        expected.method, expected.kernel, expected.alpha, expected.gamma)
    assert result.null_distribution is expected.null_distribution is None
    assert isinstance(result.statistic, float)
    assert isinstance(result.pvalue, float)
    assert_allclose(result.statistic, expected.statistic, rtol=rtol)
    assert_allclose(result.pvalue, expected.pvalue, rtol=rtol)
    assert result.reject == expected.reject


def tolerance(dtype):
    # float32 points: the NumPy path computes their kernel (and the
    # features) in float32, the library the kernel in float64
    return 1e-12 if dtype == np.float64 else 1e-5


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", [(40, 30), (33, 33)], ids=str)
@pytest.mark.parametrize("kernel, gamma", [("rbf", None), ("rbf", 0.3),
                                           ("laplacian", None),
                                           ("laplacian", 0.3),
                                           ("energy", None)])
def test_cross_is_numpys(kernel, gamma, sizes, dtype, library):
    X, Y = two_samples(*sizes, dtype=dtype)
    expected = km.mmd_test(X, Y, method="cross", kernel=kernel, gamma=gamma)
    to_library = LIBRARIES[library]
    result = direct(to_library(X), to_library(Y), "cross", kernel=kernel,
                    gamma=gamma)
    assert_same_result(result, expected, tolerance(dtype))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", [None, "laplacian"])
@pytest.mark.parametrize("gamma", [None, 0.5])
def test_linear_is_numpys(gamma, kernel, dtype, library):
    X, Y = two_samples(45, 36, dtype=dtype, seed=1)
    options = dict(method="linear", kernel=kernel, gamma=gamma, rng=3)
    expected = km.mmd_test(X, Y, **options)
    to_library = LIBRARIES[library]
    result = direct(to_library(X), to_library(Y), **options)
    assert_same_result(result, expected, tolerance(dtype))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_linear_of_a_feature_map(library):
    """The features of `feature_map`: their number, or a fitted map (the
    result names it)."""
    X, Y = two_samples(30, 44, seed=2)
    to_library = LIBRARIES[library]
    fitted = km.RandomFourierFeatures(60, gamma=0.4, rng=0).fit(X)
    for feature_map in (25, fitted):
        options = dict(method="linear", feature_map=feature_map, rng=5)
        expected = km.mmd_test(X, Y, **options)
        assert_same_result(direct(to_library(X), to_library(Y), **options),
                           expected)
    assert expected.kernel == "RandomFourierFeatures"


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("method", ["cross", "linear"])
def test_median_heuristic_of_more_than_its_sample(method, library):
    """More than `BANDWIDTH_SAMPLE` pooled points: gamma from the same
    sample of them (chosen on the device by their projections)."""
    X, Y = two_samples(600, 500, d=2, seed=3, shift=0.1)
    expected = km.mmd_test(X, Y, method=method, rng=0)
    to_library = LIBRARIES[library]
    result = direct(to_library(X), to_library(Y), method, rng=0)
    assert result.gamma == expected.gamma
    assert_same_result(result, expected, rtol=1e-11)


@pytest.mark.parametrize("method", ["cross", "linear"])
def test_blocks_of_rows(method, monkeypatch):
    """A small working memory: several blocks of rows of the kernel, or of
    features (the covariance's rows ending within a block); the result of
    NumPy's in memory."""
    if method == "linear":
        for module in (linear, on_device_direct):
            monkeypatch.setattr(module, "LINEAR_COVARIANCE_ROWS", 13)
    X, Y = two_samples(40, 31, seed=4)
    expected = km.mmd_test(X, Y, method=method, rng=7)
    calls = []
    if method == "cross":
        block = on_device._Kernel.block
        monkeypatch.setattr(on_device._Kernel, "block",
                            lambda self, *a: calls.append(a) or block(self, *a))
    else:
        add = on_device_direct.add_moments
        monkeypatch.setattr(on_device_direct, "add_moments",
                            lambda *a: calls.append(a) or add(*a))
    strict = _strict()
    for memory in (0.01, 4):  # (MiB)
        calls.clear()
        result = direct(strict.asarray(X), strict.asarray(Y), method, rng=7,
                        working_memory=memory)
        assert_same_result(result, expected)
        assert (len(calls) > 4) is (memory < 1)  # (2 in one block)


@pytest.mark.parametrize("case", [(1e150, "rbf", None), (1e-200, "laplacian", None),
                                  (1e100, "energy", None), (1e-300, "energy", None),
                                  (1e200, "rbf", 1.0)], ids=str)
def test_cross_at_extreme_scales(case):
    """The kernel of points far from 1: no overflow where NumPy's has none
    (rbf at gamma 1 of points 1e200 apart: 0 between them, g constant)."""
    scale, kernel, gamma = case
    X, Y = two_samples(20, 20, seed=6)
    expected = km.mmd_test(X * scale, Y * scale, method="cross", kernel=kernel,
                           gamma=gamma)
    strict = _strict()
    result = direct(strict.asarray(X * scale), strict.asarray(Y * scale),
                    "cross", kernel=kernel, gamma=gamma)
    assert_same_result(result, expected)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", [("permutation", (40, 27), 30),
                                  ("permutation", (35, 35), "fitted"),
                                  ("wild_bootstrap", (35, 35), 30),
                                  ("wild_bootstrap", (30, 30), "fitted")],
                         ids=str)
def test_resampling_on_features_is_numpys(case, library, monkeypatch):
    """The permutation test and the wild bootstrap on features, a block of
    rows at a time (of 16 rows here): the NumPy path's draws, its p-value
    and statistics to rounding."""
    method, sizes, feature_map = case
    monkeypatch.setattr(features, "FEATURE_TEST_ROWS", 16)
    X, Y = two_samples(*sizes, seed=3)
    if feature_map == "fitted":
        feature_map = km.RandomFourierFeatures(25, gamma=0.4, rng=1).fit(X)
    options = dict(method=method, feature_map=feature_map, n_resamples=199,
                   rng=5)
    expected = km.mmd_test(X, Y, **options)
    to_library = LIBRARIES[library]
    result = km.mmd_test(to_library(X), to_library(Y), **options)
    assert_same_test(result, expected)


def test_takes():
    torch = _torch()
    X, Y = (torch.asarray(A).requires_grad_() for A in two_samples(10, 10))
    library = library_of_objects(X=X, Y=Y)
    takes = on_device_direct.takes
    fitted = km.RandomFourierFeatures(10, rng=0).fit(two_samples(10, 10)[0])
    for kernel, method, feature_map, incomplete in [
            (None, "cross", None, None), ("energy", "cross", None, None),
            ("laplacian", "linear", None, None), (None, "linear", 20, None),
            (None, "linear", np.int64(20), None), ("energy", "linear", fitted, None),
            (None, "permutation", 20, None), ("laplacian", "wild_bootstrap",
                                              fitted, None)]:
        assert takes(library, X, Y, kernel, method, feature_map, incomplete)
    for kernel, method, feature_map, incomplete in [
            (None, "permutation", None, None), ("chi2", "cross", None, None),
            ("energy", "linear", None, None), (None, "cross", 20, None),
            (None, "linear", True, None), (None, "cross", None, 3),
            (("rbf",), "cross", None, None),
            (None, "linear", km.RandomFourierFeatures(10), None),
            (None, "aggregated", 20, None), (None, "wild_bootstrap", 20, 3)]:
        assert not takes(library, X, Y, kernel, method, feature_map, incomplete)
    plain = X.detach(), Y.detach()  # (exchanged: computed on the host)
    assert not takes(library_of_objects(X=plain[0], Y=plain[1]), *plain, None,
                     "cross", None, None)
    assert not takes(library, X[0], Y, None, "cross", None, None)


BAD = [  # (samples, method, options, error, message)
    (lambda X, Y: (X[:3], Y), "cross", {}, ValueError, "at least 4 objects"),
    (lambda X, Y: (X[:1], Y), "linear", {}, ValueError,
     "X must hold at least 2 points"),
    (lambda X, Y: (X, Y[:, :2]), "cross", {}, ValueError,
     "same number of features"),
    (lambda X, Y: (np.where(X > 1, np.nan, X), Y), "linear", {}, ValueError,
     "X contains NaN"),
    (lambda X, Y: (X[:0], Y), "cross", {}, ValueError, "X is empty"),
    (lambda X, Y: (X, Y), "linear", {"alpha": 1.5}, ValueError, "alpha"),
    (lambda X, Y: (X, Y), "cross", {"gamma": -1.0}, ValueError, "gamma"),
    (lambda X, Y: (X, Y), "linear", {"gamma": -1.0}, ValueError, "gamma"),
    (lambda X, Y: (X, Y), "cross", {"kernel": "energy", "gamma": 1.0},
     ValueError, "no scale"),
    (lambda X, Y: (X, Y), "cross", {"n_resamples": 9}, ValueError,
     "n_resamples"),
    (lambda X, Y: (X, Y), "linear", {"n_resamples": 9}, ValueError,
     "n_resamples"),
    (lambda X, Y: (X, Y), "linear", {"feature_map": 0}, ValueError,
     "feature_map"),
    (lambda X, Y: (X, Y), "cross", {"feature_map": 10}, ValueError,
     "feature_map"),
    (lambda X, Y: (X, Y), "linear", {"kernel": "energy"}, TypeError,
     "needs feature_map"),
    (lambda X, Y: (np.where(X > 1, np.inf, X), Y), "permutation",
     {"feature_map": 10}, ValueError, "X contains NaN"),
    (lambda X, Y: (X, Y[:5]), "wild_bootstrap", {"feature_map": 10},
     ValueError, "equal size"),
    (lambda X, Y: (X, Y), "permutation",
     {"feature_map": 500, "n_resamples": 5000, "working_memory": 1},
     ValueError, "working_memory"),
]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_has_the_numpy_message(case, library):
    make, method, options, error, match = BAD[case]
    X, Y = make(*two_samples(8, 8))
    with pytest.raises(error, match=match) as expected:
        km.mmd_test(X, Y, method=method, rng=0, **options)
    to_library = LIBRARIES[library]
    with pytest.raises(error, match=match) as raised:
        direct(to_library(X), to_library(Y), method, rng=0, taken=None,
               **options)
    assert str(raised.value) == str(expected.value)
