"""mmd_test on objects other than points: collections of sets, histograms,
Gaussians, a precomputed kernel matrix with sample labels, a callable.

The test of a kernel given by name is the test of its pooled matrix given
as "precomputed" (bit for bit, computed here by the unit's public
function); its default scales do not depend on which objects are in which
sample (the test's exactness needs it); its level holds and it finds clear
differences; bad input gets an error naming the argument."""

import warnings

import numpy as np
import pytest
import scipy.sparse
import scipy.stats
from numpy.testing import assert_array_equal

import kernelmaps as km

KERNEL_OBJECTS = {
    "mean_map": "sets", "mmd": "sets", "renyi": "sets",
    "chi2": "rows", "js": "rows", "exp_chi2": "rows", "intersection": "rows",
    "hellinger": "rows", "expected": "gaussians",
}
# The inner point kernel's gamma of the MMD kernel, fixed: the test below
# computes the same matrix with mmd_kernel.
PARAMS = {"mmd": {"gamma": 0.5}}


def objects(kind, n, rng, shift=0.0):
    """n objects of `kind`; `shift` moves their distribution."""
    if kind == "sets":
        return [rng.normal(size=(int(rng.integers(8, 16)), 2)) + shift
                for _ in range(n)]
    if kind == "rows":  # the shift tilts the bins' mean
        return rng.dirichlet(1.0 + shift * np.linspace(0, 4, 12), n)
    means = rng.normal(size=(n, 2)) + shift
    return means, np.full(n, 0.5)


def pool(kind, X, Y):
    if kind == "sets":
        return X + Y
    if kind == "rows":
        return np.concatenate([X, Y])
    return tuple(np.concatenate([a, b]) for a, b in zip(X, Y, strict=True))


def public_matrix(kernel, Z, gamma):
    """The pooled kernel matrix by the unit's public function."""
    if kernel == "mean_map":
        return km.sum_match_kernel(Z, gamma=gamma)
    if kernel == "mmd":
        return km.mmd_kernel(Z, gamma=PARAMS["mmd"]["gamma"], gamma2=gamma)
    if kernel == "renyi":
        D = km.renyi_divergence(Z)
        return km.divergence_kernel(D, gamma=gamma)
    if kernel == "exp_chi2":
        return km.exp_chi2_kernel(Z, beta=gamma)
    if kernel == "expected":
        return km.gaussian_expected_kernel(*Z, gamma=gamma)
    function = {"chi2": km.additive_chi2_kernel, "js": km.js_kernel,
                "intersection": km.intersection_kernel,
                "hellinger": km.hellinger_kernel}[kernel]
    return function(Z)


@pytest.mark.parametrize("kernel", sorted(KERNEL_OBJECTS))
@pytest.mark.parametrize("method, sizes", [
    ("permutation", (12, 17)), ("wild_bootstrap", (14, 14)),
    ("aggregated", (12, 17)), ("aggregated", (14, 14)), ("fuse", (12, 17)),
])
def test_a_kernel_by_name_is_its_matrix_precomputed(kernel, method, sizes):
    rng = np.random.default_rng(len(kernel) + sizes[1])
    kind = KERNEL_OBJECTS[kernel]
    X, Y = objects(kind, sizes[0], rng), objects(kind, sizes[1], rng, 0.3)
    named = km.mmd_test(X, Y, kernel=kernel, method=method, n_resamples=59,
                        kernel_params=PARAMS.get(kernel), rng=4)
    Z = pool(kind, X, Y)
    gammas = np.atleast_1d(named.gamma)
    if kernel == "renyi" and method not in ("aggregated", "fuse"):  # median
        K = km.divergence_kernel(km.renyi_divergence(Z))
    else:
        K = np.stack([public_matrix(kernel, Z, g) for g in gammas])
    labels = np.repeat([0, 1], sizes)
    grid = method in ("aggregated", "fuse")
    given = km.mmd_test(K if grid else K.reshape(K.shape[-2:]),
                        labels.astype(bool), kernel="precomputed", method=method,
                        n_resamples=59, rng=4)
    assert_array_equal(named.statistic, given.statistic)
    assert named.pvalue == given.pvalue
    assert_array_equal(named.null_distribution, given.null_distribution)
    if grid:
        assert named.kernel.tolist() == [kernel] * len(gammas)
    else:
        assert named.kernel == kernel


@pytest.mark.parametrize("kernel", ["mean_map", "mmd", "renyi", "exp_chi2",
                                    "expected"])
@pytest.mark.parametrize("method", ["permutation", "aggregated"])
def test_default_scales_do_not_depend_on_the_split(kernel, method):
    # the same pooled objects split otherwise (and in another order): the
    # same scales, as the test's exactness needs
    rng = np.random.default_rng(3)
    kind = KERNEL_OBJECTS[kernel]
    Z = pool(kind, objects(kind, 10, rng), objects(kind, 14, rng, 0.5))
    order = rng.permutation(24)
    if kind == "sets":
        X, Y, X2, Y2 = Z[:10], Z[10:], [Z[i] for i in order[:11]], \
            [Z[i] for i in order[11:]]
    elif kind == "rows":
        X, Y, X2, Y2 = Z[:10], Z[10:], Z[order[:11]], Z[order[11:]]
    else:
        X, Y = tuple(a[:10] for a in Z), tuple(a[10:] for a in Z)
        X2, Y2 = tuple(a[order[:11]] for a in Z), tuple(a[order[11:]] for a in Z)
    first, second = (km.mmd_test(A, B, kernel=kernel, method=method,
                                 n_resamples=19, rng=0) for A, B in
                     ((X, Y), (X2, Y2)))
    np.testing.assert_allclose(np.asarray(first.gamma, dtype=float),
                               np.asarray(second.gamma, dtype=float), rtol=1e-13)


def test_precomputed_labels_in_any_order_and_form():
    rng = np.random.default_rng(5)
    P = rng.normal(size=(30, 2))
    P[:12] += 0.4
    K = np.exp(-((P[:, None] - P[None]) ** 2).sum(-1) / 2)
    labels = np.repeat([0, 1], [12, 18])
    base = km.mmd_test(K, labels, kernel="precomputed", n_resamples=99, rng=0)
    # as booleans, or as floats 0.0/1.0: the same test
    for form in (labels.astype(bool), labels.astype(float)):
        again = km.mmd_test(K, form, kernel="precomputed", n_resamples=99, rng=0)
        assert again.pvalue == base.pvalue
    # rows shuffled with their labels: the same statistic
    order = rng.permutation(30)
    shuffled = km.mmd_test(K[order][:, order], labels[order],
                           kernel="precomputed", n_resamples=99, rng=0)
    assert shuffled.statistic == pytest.approx(base.statistic, rel=1e-12)
    # the points' own test: the same statistic as the rbf kernel's
    points = km.mmd_test(P[:12], P[12:], gamma=0.5, n_resamples=99, rng=0)
    assert points.statistic == pytest.approx(base.statistic, rel=1e-12)


def test_csr_and_dense_histograms_give_the_same_test():
    rng = np.random.default_rng(6)
    X, Y = objects("rows", 15, rng), objects("rows", 20, rng, 0.4)
    X[X < 0.05] = 0
    dense = km.mmd_test(X, Y, kernel="js", n_resamples=99, rng=1)
    sparse = km.mmd_test(scipy.sparse.csr_array(X), Y, kernel="js",
                         n_resamples=99, rng=1)
    assert sparse.statistic == pytest.approx(dense.statistic, rel=1e-12)


def test_a_callable_kernel_on_any_objects():
    rng = np.random.default_rng(7)
    words = ["".join(rng.choice(list("ab"), size=6)) for _ in range(40)]
    other = ["".join(rng.choice(list("abbb"), size=6)) for _ in range(30)]

    def common_letters(A, B):
        counts = np.array([[s.count("a"), s.count("b")] for s in A], float)
        counts_b = np.array([[s.count("a"), s.count("b")] for s in B], float)
        return np.exp(-((counts[:, None] - counts_b[None]) ** 2).sum(-1) / 4)

    res = km.mmd_test(words, other, kernel=common_letters, n_resamples=199,
                      rng=0)
    assert res.kernel == "common_letters" and res.gamma is None
    assert res.reject  # "b" is three times as frequent in the second
    same = km.mmd_test(words[:20], words[20:], kernel=common_letters,
                       n_resamples=199, rng=0)
    assert not same.reject


@pytest.mark.parametrize("kernel", sorted(KERNEL_OBJECTS))
def test_level_and_power(kernel):
    # 60 tests under the null (30 against 45 objects): their p-values are
    # uniform; a clear alternative is found every time
    kind = KERNEL_OBJECTS[kernel]
    rng = np.random.default_rng(8)
    pvalues = [km.mmd_test(objects(kind, 30, rng), objects(kind, 45, rng),
                           kernel=kernel, kernel_params=PARAMS.get(kernel),
                           n_resamples=39, rng=rep).pvalue for rep in range(60)]
    # discrete p-values k / 40: KS against the uniform on (0, 1] at 1e-3
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > 1e-3
    found = [km.mmd_test(objects(kind, 30, rng), objects(kind, 45, rng, 1.0),
                         kernel=kernel, kernel_params=PARAMS.get(kernel),
                         n_resamples=39, rng=rep).pvalue for rep in range(5)]
    assert max(found) <= 0.05


def test_linear_test_through_a_map_of_objects():
    rng = np.random.default_rng(9)
    X, Y = objects("sets", 60, rng), objects("sets", 70, rng, 0.6)
    fmap = km.RandomDistributionFeatures(20, gamma=0.5, rng=0)
    res = km.mmd_test(X, Y, method="linear", feature_map=fmap)
    assert res.reject and res.kernel == "RandomDistributionFeatures"
    assert not fmap.__sklearn_is_fitted__()  # fitted as a copy
    H1, H2 = objects("rows", 80, rng), objects("rows", 90, rng, 1.0)
    res = km.mmd_test(H1, H2, method="linear",
                      feature_map=km.Chi2DirectMap(3).fit(H1))
    assert res.reject


def test_bad_input_is_refused_naming_the_argument():
    rng = np.random.default_rng(10)
    S = objects("sets", 6, rng)
    H = objects("rows", 6, rng)
    K = np.eye(6)
    labels = np.repeat([0, 1], 3)
    cases = [
        # mixed kinds of objects
        (dict(X=S, Y=H, kernel="mean_map"), (TypeError, ValueError), "Y"),
        (dict(X=H, Y=S, kernel="chi2"), (TypeError, ValueError), "Y"),
        (dict(X=S, Y=S, kernel=["mean_map", "chi2"], method="aggregated"),
         ValueError, "one kind of object"),
        # precomputed: shape, symmetry, values, labels
        (dict(X=np.ones((6, 5)), Y=labels, kernel="precomputed"), ValueError,
         "square"),
        (dict(X=np.triu(np.ones((6, 6))), Y=labels, kernel="precomputed"),
         ValueError, "symmetric"),
        (dict(X=np.full((6, 6), np.nan), Y=labels, kernel="precomputed"),
         ValueError, "NaN"),
        (dict(X=K, Y=labels[:5], kernel="precomputed"), ValueError, "label"),
        (dict(X=K, Y=labels * 2, kernel="precomputed"), ValueError, "0/1"),
        (dict(X=K, Y=[0, 1, 1, 1, 1, 1], kernel="precomputed"), ValueError,
         "at least 2"),
        (dict(X=np.stack([K, K]), Y=labels, kernel="precomputed"), ValueError,
         "aggregated"),
        (dict(X=K, Y=labels, kernel="precomputed", gamma=1.0), ValueError,
         "gamma"),
        # a callable's value
        (dict(X=H, Y=H, kernel=lambda A, B: np.ones((2, 2))), ValueError,
         "shape"),
        (dict(X=H, Y=H, kernel=lambda A, B: np.full((len(A), len(B)), np.nan)),
         ValueError, "NaN"),
        # parameters
        (dict(X=S, Y=S, kernel="mean_map", kernel_params={"beta": 1}),
         ValueError, "kernel_params"),
        (dict(X=S, Y=S, kernel="mean_map", kernel_params={"gamma": 1}),
         ValueError, "give it as gamma"),
        (dict(X=H, Y=H, kernel="chi2", gamma=1.0), ValueError, "no scale"),
        (dict(X=S, Y=S[:1], kernel="mean_map"), ValueError, "at least 2"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            km.mmd_test(**kwargs, n_resamples=19)
    with pytest.raises(TypeError, match="feature_map"):
        km.mmd_test(S, S, method="linear")


@pytest.mark.parametrize("kernel", ["mean_map", "mmd"])
def test_sets_reach_the_compiled_loop_directly(kernel, monkeypatch):
    # mmd_test on sets validates each sample once and reaches the compiled
    # loop of the pair sums (`tile_sums`) through at most 6 calls of
    # kernelmaps' Python functions (it took 14, through the public
    # sum_match_kernel, which validated the sets again).
    import os
    import sys
    import types

    from kernelmaps._engine import pair_sums
    from kernelmaps.sets import _specs

    checks, depths = [], []

    def counted(*args, **kwargs):
        checks.append(kwargs.get("name", args[1] if len(args) > 1 else None))
        return check_sets(*args, **kwargs)

    # the package's own files (not every path with "kernelmaps" in it: a
    # clone in a folder named kernelmaps holds these tests too)
    package = os.path.dirname(os.path.abspath(km.__file__)) + os.sep

    def tile_sums(*args, **kwargs):
        frame, names = sys._getframe(1), []
        while frame is not None:
            if (os.path.abspath(frame.f_code.co_filename).startswith(package)
                    and frame.f_code.co_name != "hinted"):  # (_hints: names)
                names.append(frame.f_code.co_name)
            frame = frame.f_back
        depths.append(names[::-1])
        return impl.tile_sums(*args, **kwargs)

    check_sets, impl = _specs.check_sets, pair_sums._impl
    monkeypatch.setattr(_specs, "check_sets", counted)
    monkeypatch.setattr(pair_sums, "_impl", types.SimpleNamespace(
        **{**{k: getattr(impl, k) for k in dir(impl) if not k.startswith("__")},
           "tile_sums": tile_sums}))
    rng = np.random.default_rng(0)
    X, Y = (objects("sets", 300, rng) for _ in range(2))
    km.mmd_test(X, Y, kernel=kernel, n_resamples=19, rng=0, workers=1,
                **({"kernel_params": PARAMS[kernel]} if kernel in PARAMS else {}))
    assert sorted(checks) == ["X", "Y"]
    assert depths, "the pair sums did not run the tiles"
    for names in depths:
        assert names[0] == "mmd_test"
        assert len(names) - 1 <= 6, names


@pytest.mark.parametrize("method", ["aggregated", "fuse"])
def test_grid_of_histograms_far_beyond_1_is_refused_without_warnings(method):
    """Histograms near the float64 maximum: the distances' grid of scales
    overflows (found by the fuzz suite's PyTorch entries); a ValueError
    that says so, not a RuntimeWarning of the spacing's NaN first."""
    rng = np.random.default_rng(0)
    X, Y = rng.random((5, 5)), rng.random((4, 5)) * 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="beyond the float64 range"):
            km.mmd_test(X, Y, kernel="exp_chi2", method=method, rng=0,
                        n_resamples=(19, 19) if method == "aggregated" else 19)
