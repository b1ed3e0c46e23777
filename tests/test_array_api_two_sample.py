"""`mmd_test` of points computed by the arrays' library (issue 52): the
permutation test, the wild bootstrap, the aggregated and fused tests of
PyTorch tensors that ask for a gradient and of array-api-strict arrays
(both computed by the library on this CPU machine) give the NumPy result:
the same p-value for the same rng, the statistics equal to rounding,
within any working memory."""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import kernelmaps as km
from kernelmaps import _array_api
from kernelmaps._two_sample import on_device

from ._helpers import NATIVE, assert_same_test, native_labels, two_samples
from ._helpers import import_strict as _strict
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


LIBRARIES = NATIVE  # (name: the library's array of a NumPy array)


# (method, sizes, unbiased): the wild bootstrap, of samples of equal size,
# has one statistic
CASES = [("permutation", sizes, unbiased) for sizes in ((40, 30), (35, 35))
         for unbiased in (True, False)] + [("wild_bootstrap", (35, 35), True)]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("gamma", [None, 0.3])
def test_result_is_numpys(gamma, case, dtype, library):
    method, sizes, unbiased = case
    X, Y = two_samples(*sizes, dtype=dtype)
    options = dict(method=method, gamma=gamma, unbiased=unbiased,
                   n_resamples=199, rng=4)
    expected = km.mmd_test(X, Y, **options)
    to_library = LIBRARIES[library]
    result = km.mmd_test(to_library(X), to_library(Y), **options)
    # float32 points: the NumPy path computes their kernel in float32, the
    # library in float64
    assert_same_test(result, expected,
                       rtol=1e-12 if dtype == np.float64 else 1e-5)


# (method, sizes): the aggregated test of samples of equal sizes resamples
# by the wild bootstrap, of unequal sizes by swaps of the paired points
GRID_CASES = [(method, sizes) for method in ("aggregated", "fuse")
              for sizes in ((30, 30), (34, 23), (21, 29))]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", GRID_CASES, ids=str)
@pytest.mark.parametrize("options", [{}, {"kernel": ("rbf", "energy")},
                                     {"gamma": [0.5, 2.0]}], ids=str)
def test_grids_of_kernels_are_numpys(options, case, dtype, library):
    """The aggregated and fused tests (their products in float32 by
    default, as NumPy's): the same p-values (also each kernel's), the
    statistics equal to rounding of the products' dtype."""
    method, sizes = case
    X, Y = two_samples(*sizes, seed=8)
    options = dict(options, method=method, dtype=dtype, rng=5,
                   n_resamples=(150, 150) if method == "aggregated" else 149)
    expected = km.mmd_test(X, Y, **options)
    to_library = LIBRARIES[library]
    result = km.mmd_test(to_library(X), to_library(Y), **options)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert_same_test(result, expected, rtol)
    for name in ("pvalues", "thresholds"):
        if getattr(expected, name, None) is not None:
            assert_allclose(getattr(result, name), getattr(expected, name),
                            rtol=rtol if name == "thresholds" else 1e-12)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", [("wild_bootstrap", (40, 40), 3),
                                  ("aggregated", (40, 40), 1),
                                  ("aggregated", (45, 31), 6),
                                  ("aggregated", (25, 33), 100)], ids=str)
def test_incomplete_is_numpys(case, library):
    """The incomplete U-statistics (MMDAggInc: the pairs of pairs within R
    of each other; of the min(n, m) pairs for samples of unequal sizes;
    every pair for a large R), a band of the pairs' blocks on the device."""
    method, sizes, R = case
    X, Y = two_samples(*sizes, seed=12)
    options = dict(method=method, incomplete=R, rng=4, dtype=np.float64,
                   n_resamples=(99, 99) if method == "aggregated" else 199)
    expected = km.mmd_test(X, Y, **options)
    for memory in (None, 0.05):  # (MiB: blocks of rows)
        result = km.mmd_test(LIBRARIES[library](X), LIBRARIES[library](Y),
                             working_memory=memory, **options)
        assert_same_test(result, expected)


@pytest.mark.parametrize("method", ["aggregated", "fuse"])
def test_grids_on_blocks(method):
    """A small working memory: blocks of rows (of the whole matrix too, for
    the swaps) and batches of resamples; NumPy's result in memory."""
    X, Y = two_samples(40, 27, seed=9)
    options = dict(method=method, dtype=np.float64, rng=1, n_resamples=(
        300, 300) if method == "aggregated" else 599)
    expected = km.mmd_test(X, Y, **options)
    strict = _strict()
    result = km.mmd_test(strict.asarray(X), strict.asarray(Y),
                         working_memory=0.05, **options)
    assert_same_test(result, expected)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("kernel", ["laplacian", "energy"])
@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap"])
def test_other_point_kernels(method, kernel, library):
    X, Y = two_samples(30, 30 if method == "wild_bootstrap" else 25, seed=1)
    options = dict(kernel=kernel, method=method, n_resamples=99, rng=2)
    to_library = LIBRARIES[library]
    assert_same_test(km.mmd_test(to_library(X), to_library(Y), **options),
                       km.mmd_test(X, Y, **options))


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap"])
def test_blocks_of_rows_and_batches_of_retwo_samples(method, monkeypatch):
    """A small working memory: several blocks of rows of the kernel and
    several batches of resamples (the kernel computed again for each), the
    same result as NumPy's in memory."""
    X, Y = two_samples(40, 40, seed=2)
    options = dict(method=method, n_resamples=600, rng=7)
    expected = km.mmd_test(X, Y, **options)
    calls = []
    blocks = on_device._Kernel.blocks
    monkeypatch.setattr(on_device._Kernel, "blocks",
                        lambda self, *a: calls.append(a) or blocks(self, *a))
    strict = _strict()
    for memory in (0.1, 4):  # (MiB: 3 batches of 256 resamples, or 1)
        calls.clear()
        result = km.mmd_test(strict.asarray(X), strict.asarray(Y),
                             working_memory=memory, **options)
        assert_same_test(result, expected)
        if memory < 1:
            assert len(calls) > 3 * (4 if method == "wild_bootstrap" else 1)
        with km.config_context(working_memory=memory):
            again = km.mmd_test(strict.asarray(X), strict.asarray(Y), **options)
        assert_same_test(again, expected)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_median_heuristic_of_more_than_its_sample(library):
    """More than `BANDWIDTH_SAMPLE` pooled points: gamma from the same
    sample of them (chosen on the device by their projections)."""
    X, Y = two_samples(600, 500, d=2, seed=3, shift=0.1)
    options = dict(n_resamples=19, rng=0)
    expected = km.mmd_test(X, Y, **options)
    to_library = LIBRARIES[library]
    result = km.mmd_test(to_library(X), to_library(Y), **options)
    assert result.gamma == expected.gamma
    assert_same_test(result, expected, rtol=1e-11)


@pytest.mark.parametrize("method", ["permutation", "cross"])
@pytest.mark.parametrize("case", [(1e200, "rbf", 1.0), (1e150, "rbf", None),
                                  (1e-200, "laplacian", None),
                                  (1e300, "energy", None),
                                  (1e-300, "energy", None),
                                  (1e154, "rbf", 1e-308),
                                  (5e307, "laplacian", 1e-308)], ids=str)
def test_points_at_extreme_scales(case, method):
    """The kernel of points far from 1 (scaled by powers of two, the scale
    folded into gamma): no overflow where NumPy's has none (rbf at gamma 1
    of points 1e200 apart: 0 between them, a warning; distances beyond
    float64 at a gamma that takes them near 1: before, the device took
    them as kernel 0, a p-value of 0.106 where NumPy's is 0.037)."""
    scale, kernel, gamma = case
    X, Y = two_samples(20, 20, seed=6)
    options = dict(kernel=kernel, gamma=gamma, rng=0, method=method,
                   n_resamples=49 if method == "permutation" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", km.DegenerateWarning)
        expected = km.mmd_test(X * scale, Y * scale, **options)
        strict = _strict()
        result = km.mmd_test(strict.asarray(X * scale),
                             strict.asarray(Y * scale), **options)
    assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-9)
    scale = (1.0 if method == "cross"
             else np.abs(expected.null_distribution).max())
    assert_allclose(result.statistic, expected.statistic, rtol=1e-9,
                    atol=1e-12 * scale)


@pytest.mark.parametrize("method", ["permutation", "aggregated", "cross"])
def test_energy_beyond_float64_is_refused(method):
    # NumPy's ValueError (before: Python's OverflowError of the power of
    # two that scales the points back; NumPy's cross test a NaN)
    X, Y = two_samples(20, 20, seed=6)
    strict = _strict()
    for given in [(X * 5e307, Y * 5e307),
                  (strict.asarray(X * 5e307), strict.asarray(Y * 5e307))]:
        with pytest.raises(ValueError, match=r"energy kernel values .* overflow"):
            km.mmd_test(*given, kernel="energy", method=method, rng=0)


@pytest.mark.parametrize("d", [3, 40])
@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_points_of_mixed_scales(scale, d):
    """X far from 1 beside Y near it (a regression found by the fuzz
    suite): the distances within Y kept, rbf's from the differences at any
    width (its products would lose them), as NumPy's."""
    X, Y = two_samples(12, 10, d=d, seed=11)
    options = dict(gamma=0.75, n_resamples=19, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", km.DegenerateWarning)
        expected = km.mmd_test(X * scale, Y, **options)
        result = km.mmd_test(_strict().asarray(X * scale), _strict().asarray(Y),
                             **options)
    assert_same_test(result, expected)


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap"])
def test_float32_products(method):
    X, Y = two_samples(35, 35, seed=4)
    options = dict(method=method, n_resamples=99, rng=1, dtype=np.float32)
    expected = km.mmd_test(X, Y, **options)
    torch = _torch()
    result = km.mmd_test(torch.asarray(X).requires_grad_(), torch.asarray(Y),
                         **options)
    assert_same_test(result, expected, rtol=1e-5)


def _warning_messages(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught
            if issubclass(w.category, km.DegenerateWarning)]


@pytest.mark.parametrize("case", ["zero", "one", "equal", "median_equal",
                                  "resamples", "grid", "grid_equal",
                                  "incomplete"])
def test_degenerate_warnings_are_numpys(case):
    X, Y = two_samples(20, 20, seed=5)
    options = dict(n_resamples=49, rng=0)
    if case == "incomplete":
        options.update(method="wild_bootstrap", incomplete=2, gamma=1e6)
    elif case.startswith("grid"):  # (one kernel of the aggregated test's)
        options.update(method="aggregated", n_resamples=(49, 49),
                       gamma=[1e-30, 0.5, 1e6])
        if case == "grid_equal":
            X, Y = np.ones_like(X), np.ones_like(Y)
            del options["gamma"]
    elif case == "zero":
        options["gamma"] = 1e6
    elif case == "one":
        options["gamma"] = 1e-30
    elif case == "resamples":
        options["n_resamples"] = 9
    else:
        X, Y = np.ones_like(X), np.ones_like(Y)
        if case == "equal":
            options["gamma"] = 0.5
    strict = _strict()
    expected = _warning_messages(lambda: km.mmd_test(X, Y, **options))
    assert expected
    assert _warning_messages(lambda: km.mmd_test(
        strict.asarray(X), strict.asarray(Y), **options)) == expected


def test_meta_tensors_are_refused():
    torch = _torch()
    X = torch.empty((10, 3), device="meta")
    with pytest.raises(ValueError, match="needs the values of X"):
        km.mmd_test(X, torch.empty((12, 3), device="meta"))


def test_which_calls_compute_on_the_device(monkeypatch):
    """Every method of points, and precomputed matrices, of a library that
    computes run on the device, so do the tests on features, the
    incomplete ones and those of objects, whatever their kernel: no sample
    is copied to the host; PyTorch on the CPU without a gradient and a
    callable kernel are tested on the host, on copies (NumPy input is not
    looked at here)."""
    copies = []
    numpy_objects = _array_api.numpy_objects
    monkeypatch.setattr(_array_api, "numpy_objects", lambda library, S: (
        copies.append(library.name), numpy_objects(library, S))[1])
    torch = _torch()
    X, Y = two_samples(12, 12)
    km.mmd_test(X, Y, n_resamples=9, alpha=0.2)
    assert copies == []
    grad = torch.asarray(X).requires_grad_(), torch.asarray(Y)
    Z = np.concatenate([X, Y])
    K = torch.asarray(np.exp(-((Z[:, None] - Z[None]) ** 2).sum(axis=-1)))
    labels = torch.asarray(np.repeat([0, 1], 12))
    for method in ("permutation", "wild_bootstrap", "aggregated", "fuse"):
        km.mmd_test(*grad, method=method, n_resamples=9, alpha=0.2)
        km.mmd_test(K.requires_grad_(), labels, kernel="precomputed",
                    method=method, n_resamples=9, alpha=0.2)
    km.mmd_test(*grad, method="cross")
    km.mmd_test(*grad, method="linear")
    km.mmd_test(*grad, feature_map=8, n_resamples=9, alpha=0.2, rng=0)
    km.mmd_test(*grad, incomplete=3, method="wild_bootstrap", n_resamples=9,
                alpha=0.2)
    assert copies == []
    # (sets: their kernel's function computes their blocks, which it takes
    # without a gradient: on the CPU through NumPy, views; so strict here)
    strict = _strict()
    for kernel in ("mean_map", "sliced_wasserstein"):
        km.mmd_test([strict.asarray(X[:4]), strict.asarray(X[4:8])],
                    [strict.asarray(Y[:4]), strict.asarray(Y[4:])],
                    kernel=kernel, n_resamples=9, alpha=0.5)
    assert copies == []
    km.mmd_test(torch.asarray(X), torch.asarray(Y), n_resamples=9, alpha=0.2)
    km.mmd_test([grad[0][:6], grad[0][6:]], [grad[1][:6], grad[1][6:]],
                kernel=lambda A, B: np.array([[np.sum(a * b) for b in B]
                                              for a in A]),
                n_resamples=9, alpha=0.5)
    assert copies == ["torch"] * 4


def _kernel_matrices(n, m, count=1, seed=10):
    """`count` rbf kernel matrices (count, n + m, n + m) of two samples of
    n and m points, their rows shuffled, and the rows' labels."""
    X, Y = two_samples(n, m, seed=seed)
    order = np.random.default_rng(seed).permutation(n + m)
    Z = np.concatenate([X, Y])[order]
    S = ((Z[:, None] - Z[None]) ** 2).sum(axis=-1)
    K = np.stack([np.exp(-g * S) for g in np.geomspace(0.1, 2, count)])
    return K if count > 1 else K[0], np.repeat([0, 1], [n, m])[order]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", [("permutation", 1, (30, 22)),
                                  ("wild_bootstrap", 1, (25, 25)),
                                  ("aggregated", 3, (25, 25)),
                                  ("aggregated", 2, (31, 20)),
                                  ("fuse", 3, (30, 22))], ids=str)
def test_precomputed_matrices_are_numpys(case, library):
    """Kernel matrices given (rows of both samples shuffled), computed on
    the device: NumPy's result (a float32 matrix too)."""
    method, count, sizes = case
    K, labels = _kernel_matrices(*sizes, count=count)
    options = dict(kernel="precomputed", method=method, rng=3, dtype=np.float64,
                   n_resamples=(99, 99) if method == "aggregated" else 99)
    to_library = LIBRARIES[library]
    for matrix in (K, K.astype(np.float32)):
        expected = km.mmd_test(matrix, labels, **options)
        result = km.mmd_test(to_library(matrix), native_labels(library, labels),
                             **options)
        assert_same_test(result, expected)


def test_precomputed_on_blocks_and_nearly_symmetric():
    """A matrix asymmetric by rounding (made symmetric, as NumPy's) in a
    small working memory (blocks of rows gathered from it)."""
    K, labels = _kernel_matrices(40, 33)
    K = K + np.triu(np.full(K.shape, 1e-15), 1)
    options = dict(kernel="precomputed", rng=2, n_resamples=600)
    expected = km.mmd_test(K, labels, **options)
    strict = _strict()
    result = km.mmd_test(strict.asarray(K), strict.asarray(labels),
                         working_memory=0.05, **options)
    assert result.pvalue == expected.pvalue
    assert_allclose(result.null_distribution, expected.null_distribution,
                    rtol=1e-12, atol=1e-12)


def _bad_matrix(case):
    K, labels = _kernel_matrices(6, 5)
    if case == "asymmetric":
        K[0, 1] += 0.1
    elif case == "nan":
        K[2, 3] = K[3, 2] = np.nan
    elif case == "not_square":
        K = K[:, :-1]
    elif case == "labels":
        labels = labels[:-1]
    elif case == "labels_values":
        labels = labels + 1
    elif case == "several":
        K = np.stack([K, K])
    return K, labels


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", [
    ("asymmetric", {}, "must be symmetric"),
    ("nan", {}, "NaN"),
    ("not_square", {}, "square"),
    ("labels", {}, "label"),
    ("labels_values", {}, "boolean or 0/1"),
    ("several", {}, "only method='aggregated' or 'fuse'"),
    ("none", {"gamma": 1.0}, "gamma is not used"),
    ("none", {"method": "wild_bootstrap"}, "equal size"),
    ("none", {"kernel_params": {"a": 1}}, "kernel_params"),
], ids=str)
def test_precomputed_bad_input_has_the_numpy_message(case, library):
    name, options, message = case
    K, labels = _bad_matrix(name)
    options = dict(kernel="precomputed", n_resamples=19, **options)
    with pytest.raises((ValueError, TypeError), match=message) as expected:
        km.mmd_test(K, labels, **options)
    with pytest.raises(expected.type, match=re.escape(str(expected.value))):
        km.mmd_test(LIBRARIES[library](K), native_labels(library, labels), **options)


BAD = [
    (lambda X, Y: (X[:1], Y), {}, ValueError, "X must hold at least 2 points"),
    (lambda X, Y: (X, Y[:, :2]), {}, ValueError, "same number of features"),
    (lambda X, Y: (np.where(X > 1, np.nan, X), Y), {}, ValueError,
     "X contains NaN"),
    (lambda X, Y: (X, np.where(Y > 1, np.inf, Y)), {}, ValueError,
     "Y contains NaN"),
    (lambda X, Y: (X[:0], Y), {}, ValueError, "X is empty"),
    (lambda X, Y: (X + 1j, Y), {}, TypeError, "real numbers"),
    (lambda X, Y: (X, Y), {"alpha": 1.5}, ValueError, "alpha"),
    (lambda X, Y: (X, Y), {"gamma": -1.0}, ValueError, "gamma"),
    (lambda X, Y: (X, Y), {"gamma": [0.5, 1.0]}, TypeError, "gamma"),
    (lambda X, Y: (X, Y), {"kernel": "energy", "gamma": 1.0}, ValueError,
     "no scale"),
    (lambda X, Y: (X, Y), {"kernel_params": {"degree": 3}}, ValueError,
     "kernel_params"),
    (lambda X, Y: (X, Y), {"n_resamples": 0}, ValueError, "n_resamples"),
    (lambda X, Y: (X, Y), {"unbiased": "yes"}, TypeError, "unbiased"),
    (lambda X, Y: (X, Y), {"dtype": "int8"}, ValueError, "dtype"),
    (lambda X, Y: (X, Y[:5]), {"method": "wild_bootstrap"}, ValueError,
     "equal size"),
    (lambda X, Y: (X, Y), {"method": "aggregated", "gamma": []}, ValueError,
     "gamma must hold"),
    (lambda X, Y: (X, Y), {"method": "fuse", "kernel": ("rbf", "rbf")},
     ValueError, "distinct kernels"),
    (lambda X, Y: (X, Y), {"incomplete": 3}, ValueError, "incomplete"),
    (lambda X, Y: (X, Y), {"method": "wild_bootstrap", "incomplete": 0},
     ValueError, "incomplete"),
    (lambda X, Y: (X, Y), {"working_memory": -1}, ValueError,
     "working_memory"),
]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_has_the_numpy_message(case, library):
    make, options, error, match = BAD[case]
    X, Y = make(*two_samples(8, 8))
    with pytest.raises(error, match=match) as expected:
        km.mmd_test(X, Y, rng=0, **options)
    to_library = LIBRARIES[library]
    with pytest.raises(error, match=match) as raised:
        km.mmd_test(to_library(X), to_library(Y), rng=0, **options)
    if not np.iscomplexobj(X):  # (the message names the library's dtype)
        assert str(raised.value) == str(expected.value)


def _few_objects(kind, n, m, dtype, seed):
    """Samples of n and m objects of `kind` ("points", "sets", "rows":
    histograms, or "precomputed": a kernel matrix and its labels) and the
    `mmd_test` options of their kernel: few objects, whose few splits give
    statistics equal in exact arithmetic."""
    rng = np.random.default_rng(seed)
    if kind == "sets":
        return ([rng.standard_normal((3, 2)).astype(dtype) for _ in range(n)],
                [rng.standard_normal((3, 2)).astype(dtype) for _ in range(m)],
                {})
    if kind == "rows":
        return (rng.random((n, 4)).astype(dtype),
                rng.random((m, 4)).astype(dtype), {"kernel": "chi2"})
    X, Y = (rng.standard_normal((k, 2)).astype(dtype) for k in (n, m))
    if kind == "points":
        return X, Y, {}
    Z = np.concatenate([X, Y]).astype(np.float64)
    K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(axis=-1)).astype(dtype)
    return K, np.repeat([0, 1], [n, m]), {"kernel": "precomputed"}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["points", "sets", "rows", "precomputed"])
def test_pvalues_of_few_objects_are_numpys(kind, dtype, library):
    # 2 to 4 objects a sample: 3 to 35 distinct splits, so that the 1,000
    # resamples tie with the observed sample (a split and its complement,
    # equal statistics) and differ from it by their rounding only, which
    # each library rounds its own way: counted as ties (result.tie_floor),
    # the p-values are NumPy's. (Counted exactly, 9 of these 16 tests
    # failed: 0.159 against 0.328, say.)
    make = LIBRARIES[library]
    methods = ["permutation", "wild_bootstrap"] + (
        ["aggregated", "fuse"] if kind != "precomputed" else [])
    compared = 0
    for seed in range(5):
        n = 2 + seed % 3
        m = n + (seed == 4)
        X, Y, options = _few_objects(kind, n, m, dtype, seed)
        if kind == "sets":
            Xd, Yd = [make(a) for a in X], [make(a) for a in Y]
        elif kind == "precomputed":
            Xd, Yd = make(X), native_labels(library, Y)
        else:
            Xd, Yd = make(X), make(Y)
        for method in methods:
            if method == "wild_bootstrap" and n != m:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (degenerate kernels)
                expected = km.mmd_test(X, Y, method=method, rng=seed, **options)
                result = km.mmd_test(Xd, Yd, method=method, rng=seed, **options)
            assert result.pvalue == expected.pvalue, (seed, method)
            assert result.reject == expected.reject
            compared += 1
    assert compared == (9 if kind == "precomputed" else 19)
