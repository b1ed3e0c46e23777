"""`mmd_test` of sets, histograms and Gaussians computed by the arrays'
library (issue 52, `on_device_objects`): the resampling tests of PyTorch
tensors that ask for a gradient and of array-api-strict arrays give the
NumPy result (the same p-value for the same rng, the statistics equal to
rounding) for every kernel of objects, their scales from the same sampled
objects (copied: never the whole samples), and bad samples the NumPy
message."""

import warnings

import numpy as np
import pytest

import kernelmaps as km
from kernelmaps import _array_api
from kernelmaps._two_sample import on_device_objects

from ._helpers import NATIVE, assert_same_test, host_copies, point_sets

pytest.importorskip("array_api_compat")

DEFAULTS = dict(kernel=None, gamma=None, method="permutation",
                n_resamples=None, alpha=0.05, unbiased=True, kernel_params=None,
                dtype=None, rng=None, workers=None, progress=False,
                working_memory=None)


def on_device(X, Y, **options):
    """`on_device_objects.test` of X and Y, which it must take."""
    options = {**DEFAULTS, **options}
    library = _array_api.library_of_objects(X=X, Y=Y)
    assert on_device_objects.takes(
        library, X, Y, options["kernel"], options["gamma"], options["method"],
        None, None, options["kernel_params"])
    return on_device_objects.test(library, X, Y, **options)


def in_library(library, S):
    """The sets (a list, a 3-D array or a Bags), histograms or Gaussians (a
    pair) S in `library`."""
    make = NATIVE[library]
    if isinstance(S, km.Bags):
        return km.Bags(make(np.array(S.points)), S.offsets, S.weights)
    if isinstance(S, tuple):
        return tuple(make(a) for a in S)
    return [make(a) for a in S] if isinstance(S, list) else make(S)


def set_samples(shape, dtype=np.float64, seed=0):
    """Two samples of sets: lists of sets of unequal sizes ("list"), of
    equal sizes ("equal"), or 3-D arrays ("3d"; "3d_uneven": of sets of
    other sizes in Y than in X)."""
    if shape == "list":
        return (point_sets(dtype, seed, sizes=(4, 7, 5, 6, 3, 5)),
                point_sets(dtype, seed + 1, sizes=(5, 2, 6, 4, 8), shift=0.4))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6, 5, 3)).astype(dtype)
    Y = (rng.standard_normal((6 if shape == "equal" else 7,
                              4 if shape == "3d_uneven" else 5, 3))
         + 0.4).astype(dtype)
    return (X, Y) if shape.startswith("3d") else (list(X), list(Y))


METHODS = ("permutation", "wild_bootstrap", "aggregated", "fuse")
SET_CASES = [("list", "permutation", "rbf", None),
             ("list", "aggregated", "rbf", None),
             ("list", "fuse", "laplacian", None),
             ("list", "permutation", "laplacian", 0.4),
             ("list", "permutation", "linear", None),
             ("list", "permutation", "polynomial", None),
             ("equal", "wild_bootstrap", "rbf", None),
             ("equal", "aggregated", "rbf", [0.2, 1.0]),
             ("3d", "permutation", "rbf", None),
             ("3d", "aggregated", "laplacian", None),
             ("3d", "fuse", "rbf", None),
             ("3d_uneven", "permutation", "rbf", None)]


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", SET_CASES, ids=str)
def test_sets_are_numpys(case, library):
    shape, method, point, gamma = case
    X, Y = set_samples(shape)
    options = dict(method=method, gamma=gamma, n_resamples=99, rng=3,
                   kernel_params={"kernel": point})
    if method in ("aggregated", "fuse"):  # (float64 products: to 1e-12)
        options["dtype"] = np.float64
    if method == "aggregated":
        options["n_resamples"] = (50, 50)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("method", ["permutation", "fuse"])
def test_float32_sets_are_numpys(method, library):
    """float32 sets (and the fused test's float32 products): to rounding
    of float32."""
    X, Y = set_samples("list", np.float32)
    options = dict(method=method, n_resamples=99, rng=5, kernel="mean_map")
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected, rtol=1e-5)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e-20), (np.float32, 1e30),
                                          (np.float64, 1e150)])
@pytest.mark.parametrize("kernel", ["sliced_wasserstein", "mean_map"])
def test_sets_at_extreme_scales_are_numpys(kernel, dtype, scale, library):
    """Sets far from 1 in magnitude (float32 ones whose squared distances
    leave float32's range: a statistic of 0 and a p-value of 1 were
    computed by the sliced-Wasserstein kernel): NumPy's test."""
    X, Y = ([(s / 8 * scale).astype(dtype) for s in S]
            for S in set_samples("list", np.float64))
    options = dict(method="permutation", n_resamples=99, rng=5, kernel=kernel)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y), **options)
    assert expected.statistic > 0
    assert_same_test(result, expected, rtol=1e-5 if dtype == np.float32 else 1e-10)


def histograms(n, m, d=6, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.dirichlet(np.ones(d), size=n)
    X[X < 0.05] = 0.0
    Y = rng.dirichlet(np.linspace(0.5, 2.0, d), size=m)
    return X.astype(dtype), Y.astype(dtype)


HISTOGRAM_CASES = [(kernel, "permutation", None) for kernel in
                   ("chi2", "intersection", "hellinger", "js")] + [
    ("exp_chi2", "permutation", 2.0), ("chi2", "wild_bootstrap", None),
    ("exp_chi2", "aggregated", [0.5, 2.0]), ("exp_chi2", "fuse", [1.0, 3.0])]


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", HISTOGRAM_CASES, ids=str)
def test_histograms_are_numpys(case, library):
    kernel, method, gamma = case
    X, Y = histograms(12, 12 if method == "wild_bootstrap" else 15)
    options = dict(kernel=kernel, method=method, gamma=gamma, n_resamples=99,
                   rng=2, dtype=np.float64)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected)


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_float32_histograms_are_numpys(library):
    X, Y = histograms(12, 14, dtype=np.float32)
    options = dict(kernel="js", n_resamples=99, rng=2)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected, rtol=1e-5)


def _with(S, i, value, at=(1, 0)):
    S = [a.copy() for a in S] if isinstance(S, list) else S.copy()
    S[i][at] = value
    return S


BAD = [  # (kernel, X, Y from the good samples)
    (None, lambda X, Y: (X, _with(Y, 2, np.nan))),
    (None, lambda X, Y: (_with(X, 3, np.inf), Y)),
    (None, lambda X, Y: (X, [Y[0], Y[1][:, :2], *Y[2:]])),
    (None, lambda X, Y: (X, [y[:, :2] for y in Y])),
    (None, lambda X, Y: (X, [Y[0][:0], *Y[1:]])),
    (None, lambda X, Y: (X, Y[:1])),
    ("3d", lambda X, Y: (X, _with(Y, 4, np.nan, (0, 2)))),
    ("chi2", lambda X, Y: (X, _with(Y, 3, -0.1, 2))),
    ("chi2", lambda X, Y: (_with(X, 1, np.nan, 0), Y)),
    ("chi2", lambda X, Y: (X, Y[:, :4])),
    ("exp_chi2", lambda X, Y: (X, Y[:1])),
]


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_has_the_numpy_message(case, library):
    kernel, make = BAD[case]
    if kernel in (None, "3d"):
        X, Y = make(*set_samples("list" if kernel is None else "3d"))
        options = {}
    else:
        X, Y = make(*histograms(6, 7))
        options = dict(kernel=kernel, gamma=1.0 if kernel == "exp_chi2" else None)
    with pytest.raises(ValueError) as expected:
        km.mmd_test(X, Y, rng=0, **options)
    with pytest.raises(ValueError) as raised:
        on_device(in_library(library, X), in_library(library, Y), rng=0,
                  **options)
    assert str(raised.value) == str(expected.value)


def test_takes():
    torch = pytest.importorskip("torch")
    library = _array_api.library_of(X=torch.zeros(2, requires_grad=True))
    plain = _array_api.library_of(X=torch.zeros(2))
    X, Y = set_samples("list")
    grad = [torch.asarray(a).requires_grad_() for a in X]
    sets = [torch.asarray(a) for a in Y]
    H = torch.rand(5, 4, requires_grad=True)
    A = torch.rand(3, 4, 2)
    bags = km.Bags(torch.cat(grad), np.cumsum([0, *(len(a) for a in grad)]))
    gaussians = (torch.rand(5, 2), torch.rand(5))

    def takes(X, Y, kernel=None, gamma=None, method="permutation",
              feature_map=None, incomplete=None, kernel_params=None,
              library=library):
        return on_device_objects.takes(library, X, Y, kernel, gamma, method,
                                       feature_map, incomplete, kernel_params)

    assert takes(grad, sets)
    assert takes(grad, sets, "mean_map", 0.5, "fuse",
                 kernel_params={"kernel": "linear"})
    assert takes(A, A, method="wild_bootstrap")
    assert takes(H, H, "chi2") and takes(H, H, "exp_chi2", 1.0)
    for kernel in ("mmd", "renyi", "sliced_wasserstein"):
        assert takes(grad, sets, kernel)
    assert takes(grad, sets, kernel_params={"kernel": "energy"})
    assert takes(grad, A) and takes(bags, sets)  # (any collections of sets)
    assert takes(H, H, "exp_chi2")  # (its scale's rule: on a copied sample)
    assert takes(H, H, ["chi2", "js"], method="aggregated")
    assert takes(gaussians, gaussians, "expected")
    assert not takes(grad, sets, library=plain)  # (the host's, zero-copy)
    assert not takes(grad, sets, method="linear")
    assert not takes(grad, sets, feature_map=8)
    assert not takes(grad, sets, incomplete=3, method="wild_bootstrap")
    assert not takes([], sets)
    assert not takes(H, H)  # (points)
    assert not takes(A, A, "chi2")
    assert not takes(H, H, ["chi2", "rbf"], method="aggregated")
    assert not takes(grad, sets, lambda A, B: A)  # (a callable's: any objects)
    assert not takes(km.Bags.from_list([a.detach().numpy() for a in grad]),
                     sets)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("method", METHODS)
def test_blocks_within_the_working_memory(method, library):
    """A small working memory: the kernel's rows in blocks, the resamples
    in batches; the same result."""
    for X, Y, kernel in ((*set_samples("equal"), None),
                         (*set_samples("equal", seed=2), "mmd"),
                         (*histograms(12, 12), "js")):
        options = dict(kernel=kernel, method=method, n_resamples=39, rng=1,
                       dtype=np.float64, alpha=0.1)
        expected = km.mmd_test(X, Y, **options)
        result = on_device(in_library(library, X), in_library(library, Y),
                           working_memory=0.0005, **options)
        assert_same_test(result, expected)


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_mixed_dtypes_are_numpys(library):
    """float32 sets beside float64 ones (in a sample, and between the
    samples): in float64, as NumPy's."""
    X, Y = set_samples("list")
    X32 = [a.astype(np.float32) for a in X]
    for A, B in ((X32, Y), ([X32[0], *X[1:]], Y)):
        expected = km.mmd_test(A, B, n_resamples=99, rng=1)
        result = on_device(in_library(library, A), in_library(library, B),
                           n_resamples=99, rng=1)
        assert_same_test(result, expected)


def _warnings_of(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, sorted(str(w.message) for w in caught)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", ["zero", "equal", "mmd", "constant"])
def test_degenerate_warnings_are_numpys(case, library):
    X, Y = set_samples("list")
    options = dict(n_resamples=19, rng=0, alpha=0.1)
    if case == "zero":
        options["gamma"] = 1e6
    elif case in ("equal", "mmd"):  # (mmd: its scale's rule on equal sets)
        X, Y = [np.ones((3, 3))] * 4, [np.ones((2, 3))] * 3
        options["kernel"] = None if case == "equal" else "mmd"
    else:
        X, Y = np.ones((5, 4)) / 4, np.ones((6, 4)) / 4
        options["kernel"] = "chi2"
    expected, messages = _warnings_of(lambda: km.mmd_test(X, Y, **options))
    result, found = _warnings_of(lambda: on_device(
        in_library(library, X), in_library(library, Y), **options))
    assert found == messages and messages
    assert result.pvalue == expected.pvalue


# -- the other kernels of objects ------------------------------------------


def weighted_sets(seed=0):
    """Two samples of sets as Bags, the first with point weights (one 0)."""
    X, Y = set_samples("list", seed=seed)
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(0.1, 2.0, len(a)) for a in X]
    weights[0][0] = 0.0
    return km.Bags.from_list(X, weights=weights), km.Bags.from_list(Y)


def renyi_sets():
    return (point_sets(np.float64, 0, sizes=(6, 7, 8, 6, 9, 7)),
            point_sets(np.float64, 1, sizes=(8, 7, 6, 9, 8), shift=0.4))


OBJECT_CASES = [  # (samples, kernel, method, gamma, kernel_params)
    ("list", "mmd", "permutation", None, None),
    ("list", "mmd", "aggregated", None, None),
    ("3d", "mmd", "fuse", None, {"kernel": "laplacian", "gamma": 0.5}),
    ("equal", "mmd", "wild_bootstrap", 2.0, {"kernel": "polynomial"}),
    ("list", "sliced_wasserstein", "permutation", None, None),
    ("list", "sliced_wasserstein", "aggregated", None, {"n_projections": 20}),
    ("3d", "sliced_wasserstein", "permutation", 0.3, {"draw": "orthogonal"}),
    ("renyi", "renyi", "permutation", None, {"k": 2}),
    ("renyi", "renyi", "fuse", None, {"k": 2}),
    ("list", "mean_map", "permutation", None, {"kernel": "energy"}),
    ("weighted", None, "permutation", None, None),
    ("weighted", None, "aggregated", None, None),
    ("weighted", "mmd", "permutation", None, None),
    ("weighted", "sliced_wasserstein", "permutation", None, None),
    ("mixed", "mmd", "permutation", None, None),
    ("histograms", "exp_chi2", "permutation", None, None),
    ("histograms", "exp_chi2", "aggregated", None, None),
    ("histograms", ["exp_chi2", "js"], "fuse", None, None),
]


def object_samples(shape):
    if shape == "weighted":
        return weighted_sets()
    if shape == "mixed":  # (a Bags beside a list)
        return weighted_sets()[0], set_samples("list", seed=3)[1]
    if shape == "renyi":
        return renyi_sets()
    if shape == "histograms":
        return histograms(12, 15)
    return set_samples(shape)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", OBJECT_CASES, ids=str)
def test_other_kernels_are_numpys(case, library):
    """The kernels of sets and histograms whose scale (or the point
    kernel's under MMD) comes from the data, and sliced_wasserstein's
    directions from the generator: the NumPy result."""
    shape, kernel, method, gamma, params = case
    X, Y = object_samples(shape)
    options = dict(kernel=kernel, method=method, gamma=gamma,
                   kernel_params=params, n_resamples=39, rng=3,
                   dtype=np.float64)
    if method == "aggregated":
        options["n_resamples"] = (30, 30)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected)


def gaussian_samples(seed=0):
    """Two samples of Gaussians: diagonal covariances, and full ones."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((7, 2, 2))
    return ((rng.standard_normal((6, 2)), rng.uniform(0.1, 1.0, (6, 2))),
            (rng.standard_normal((7, 2)) + 0.3,
             A @ A.transpose(0, 2, 1) / 2 + 0.1 * np.eye(2)))


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("method", ["permutation", "aggregated"])
def test_gaussians_are_numpys(method, library):
    X, Y = gaussian_samples()
    options = dict(kernel="expected", method=method, rng=2, dtype=np.float64,
                   n_resamples=(30, 30) if method == "aggregated" else 39)
    expected = km.mmd_test(X, Y, **options)
    result = on_device(in_library(library, X), in_library(library, Y),
                       **options)
    assert_same_test(result, expected)


def test_only_the_sampled_objects_are_copied():
    """More than `BANDWIDTH_SAMPLE` objects in each sample: the scales
    from those chosen on the device (their projections come back), each
    copy to the host smaller than either sample; the NumPy result. (The
    copies of the library that computes: the kernel's function computes
    the values, without a gradient, on the CPU through NumPy views.)"""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    sets = (rng.standard_normal((1100, 3, 4)),
            rng.standard_normal((1050, 3, 4)) + 0.1)
    cases = [(sets, "mmd"), (sets, "sliced_wasserstein"),
             (sets, None), (histograms(1100, 1050, d=8), "exp_chi2")]
    with host_copies(native_only=True) as copied:
        for (X, Y), kernel in cases:
            options = dict(kernel=kernel, n_resamples=19, rng=1)
            expected = km.mmd_test(X, Y, **options)
            copied.clear()
            result = on_device(torch.asarray(X).requires_grad_(),
                               torch.asarray(Y).requires_grad_(), **options)
            assert copied and max(copied) < min(X.size, Y.size)
            # (kernel values near 1 between 2150 objects: their sums' rounding
            # beyond 1e-12 of the resampled statistics' spread)
            assert_same_test(result, expected, rtol=1e-9)


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_a_given_generator_is_left_as_numpy_leaves_it(library):
    """sliced_wasserstein's directions drawn from the call's generator after
    the resamples' seeds: the same directions, and the generator left in
    the same state."""
    X, Y = set_samples("list")
    generators = np.random.default_rng(5), np.random.default_rng(5)
    expected = km.mmd_test(X, Y, kernel="sliced_wasserstein", n_resamples=19,
                           rng=generators[0])
    result = on_device(in_library(library, X), in_library(library, Y),
                       kernel="sliced_wasserstein", n_resamples=19,
                       rng=generators[1])
    assert_same_test(result, expected)
    assert generators[0].random() == generators[1].random()


def _y_points(change):
    """The weighted samples, the points of Y (a copy) changed by
    `change`."""
    X, Y = weighted_sets()
    return X, km.Bags(change(np.array(Y.points)), Y.offsets)


def _nan_point(P):
    P[4, 1] = np.nan
    return P


def _negative_variances():
    (means, covs), Y = gaussian_samples()
    return (means, -covs), Y


OTHER_BAD = [  # (kernel, kernel_params, the samples)
    ("mmd", None, lambda: _y_points(_nan_point)),
    ("mmd", None, lambda: _y_points(lambda P: P[:, :2])),
    ("sliced_wasserstein", None, lambda: _y_points(lambda P: P[:, :2])),
    ("sliced_wasserstein", None, lambda: (weighted_sets()[0][[0]],
                                          weighted_sets()[1])),
    ("renyi", {"k": 2}, weighted_sets),  # (weights)
    ("renyi", {"k": 6}, renyi_sets),  # (a set of 6 points)
    ("exp_chi2", None, lambda: (histograms(6, 7)[0],
                                _with(histograms(6, 7)[1], 2, np.inf, 3))),
    ("expected", None, _negative_variances),
]


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("case", range(len(OTHER_BAD)))
def test_other_bad_input_has_the_numpy_message(case, library):
    kernel, params, make = OTHER_BAD[case]
    X, Y = make()
    options = dict(kernel=kernel, kernel_params=params, rng=0)
    with pytest.raises(ValueError) as expected:
        km.mmd_test(X, Y, **options)
    with pytest.raises(ValueError) as raised:
        on_device(in_library(library, X), in_library(library, Y), **options)
    assert str(raised.value) == str(expected.value)


def test_mixed_libraries_are_refused():
    torch = pytest.importorskip("torch")
    strict = pytest.importorskip("array_api_strict")
    X, Y = weighted_sets()
    torch_sets = km.Bags(torch.asarray(np.array(X.points)).requires_grad_(),
                         X.offsets, X.weights)
    for other in ([strict.asarray(a) for a in Y],
                  [np.array(a) for a in Y]):
        with pytest.raises(TypeError, match="give every array in one library"):
            km.mmd_test(torch_sets, other, kernel="mmd", rng=0)
