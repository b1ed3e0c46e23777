"""mmd_test's permutation test and wild bootstrap on explicit features
(``feature_map=``): the exact test of the linear kernel of the features,
one pass over the samples in blocks of rows.

Checked against the kernel path on the features' linear kernel given as a
precomputed matrix (the observed statistic), against NumPy references of
the resamples (uniform subsets of n of the N objects, Rademacher signs),
for its level and power, threads, Dask input and bad input."""

import numpy as np
import pytest
import scipy.stats
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._engine.progress import NoBar
from kernelmaps._two_sample import features as feature_passes


def shifted(n, m, d, shift, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = rng.normal(size=(m, d))
    Y[:, 0] += shift
    return X, Y


def linear_mmd2(Fx, Fy, unbiased):
    """The MMD^2 of the linear kernel of the features, from the kernel
    matrices (the obviously correct way)."""
    n, m = len(Fx), len(Fy)
    Kxx, Kyy, Kxy = Fx @ Fx.T, Fy @ Fy.T, Fx @ Fy.T
    if unbiased:
        return ((Kxx.sum() - np.trace(Kxx)) / (n * (n - 1))
                + (Kyy.sum() - np.trace(Kyy)) / (m * (m - 1))
                - 2 * Kxy.mean())
    return Kxx.mean() + Kyy.mean() - 2 * Kxy.mean()


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("sizes", [(40, 57), (300, 2500)])
def test_permutation_statistic_is_the_linear_kernels(sizes, unbiased):
    n, m = sizes
    X, Y = shifted(n, m, 3, 0.5, seed=n)
    fmap = km.RandomFourierFeatures(64, gamma=0.5, rng=1).fit(X)
    res = km.mmd_test(X, Y, feature_map=fmap, n_resamples=99, rng=0,
                      unbiased=unbiased)
    want = linear_mmd2(fmap.transform(X), fmap.transform(Y), unbiased)
    assert_allclose(res.statistic, want, rtol=1e-10, atol=1e-14)
    # the kernel path on the features' linear kernel: the same statistic
    F = fmap.transform(np.concatenate([X, Y]))
    labels = np.repeat([0, 1], [n, m])
    exact = km.mmd_test(F @ F.T, labels, kernel="precomputed", n_resamples=99,
                        rng=0, unbiased=unbiased)
    assert_allclose(res.statistic, exact.statistic, rtol=1e-10, atol=1e-14)
    assert res.null_distribution.shape == (99,)
    assert res.method == "permutation" and res.kernel == "RandomFourierFeatures"
    assert res.gamma == 0.5


def test_wild_bootstrap_statistic_is_the_kernel_paths():
    X, Y = shifted(70, 70, 4, 0.3, seed=3)
    fmap = km.RandomFourierFeatures(40, gamma=0.3, rng=2).fit(X)
    res = km.mmd_test(X, Y, method="wild_bootstrap", feature_map=fmap,
                      n_resamples=199, rng=0)
    F = fmap.transform(np.concatenate([X, Y]))
    exact = km.mmd_test(F @ F.T, np.repeat([0, 1], 70), kernel="precomputed",
                        method="wild_bootstrap", n_resamples=199, rng=0)
    assert_allclose(res.statistic, exact.statistic, rtol=1e-10, atol=1e-14)
    # the null: e' H e / (n (n - 1)) of Rademacher signs, mean 0 and the
    # variance 2 sum_{i != j} H_ij^2 / (n (n - 1))^2
    D = fmap.transform(X) - fmap.transform(Y)
    H = D @ D.T
    np.fill_diagonal(H, 0.0)
    sd = np.sqrt(2 * (H**2).sum()) / (70 * 69)
    null = res.null_distribution
    assert abs(null.mean()) < 4 * sd / np.sqrt(199)
    assert 0.7 < null.std() / sd < 1.3


@pytest.mark.parametrize("sizes", [(5, 9), (2100, 1900), (4096, 1)])
def test_permutations_are_uniform_subsets(sizes):
    # With one-hot features (row i: e_i), the sums of each resample's
    # first part are its indicator vector: n distinct objects of the N,
    # each object in about n / N of them, across the draw blocks.
    n, m = sizes
    N, B = n + m, 400
    def features(sample, start, stop):
        F = np.zeros((stop - start, N))
        rows = np.arange(start, stop) + (n if sample else 0)
        F[np.arange(stop - start), rows] = 1.0
        return F
    sx, dx, total, norms, (s, d) = feature_passes.feature_pass(
        features, (n, m), B, "permutation", np.random.default_rng(0), 2,
        NoBar())
    assert_array_equal(np.unique(sx), [0.0, 1.0])
    assert_array_equal(sx.sum(axis=0), n)
    assert_array_equal(dx, n)
    assert_array_equal(total, 1.0)
    assert norms == N
    assert_array_equal(s, np.r_[np.ones(n), np.zeros(m)])
    assert d == n
    # each object is in a resample with probability n / N: binomial counts,
    # none beyond 1e-4 / N in either tail
    counts = sx.sum(axis=1)
    tails = np.minimum(scipy.stats.binom.sf(counts - 1, B, n / N),
                       scipy.stats.binom.cdf(counts, B, n / N))
    assert tails.min() > 1e-4 / N


def test_wild_signs_are_rademacher():
    n, B = 2500, 300
    def features(sample, start, stop):
        F = np.zeros((stop - start, n))
        if sample == 0:
            F[np.arange(stop - start), np.arange(start, stop)] = 1.0
        return F
    sd, dd, s = feature_passes.feature_pass(features, (n, n), B, "wild",
                                       np.random.default_rng(1), 1, NoBar())
    assert_array_equal(np.unique(sd), [-1.0, 1.0])
    assert dd == n
    assert_array_equal(s, 1.0)
    assert abs(sd.mean()) < 5 / np.sqrt(sd.size)


def test_split_statistic_of_any_split():
    rng = np.random.default_rng(4)
    F = rng.normal(size=(30, 5)) + 3.0
    for unbiased in (True, False):
        for _ in range(5):
            x = np.sort(rng.choice(30, 12, replace=False))
            y = np.setdiff1d(np.arange(30), x)
            got = feature_passes.split_mmd2(
                F[x].sum(axis=0)[:, None], np.array([(F[x] ** 2).sum()]),
                F.sum(axis=0), float((F**2).sum()), 12, 18, unbiased)
            assert_allclose(got[0], linear_mmd2(F[x], F[y], unbiased),
                            rtol=1e-12)


def test_level_and_power():
    # Under the null, P(p <= 0.1) is at most 0.1 (exact): 200 tests of
    # samples of 60 and 50 points reject at most ~0.1 + 3 standard errors.
    rejections = 0
    for seed in range(200):
        X, Y = shifted(60, 50, 2, 0.0, seed=seed)
        res = km.mmd_test(X, Y, feature_map=20, n_resamples=39, rng=seed,
                          gamma=0.5)
        rejections += res.pvalue <= 0.1
    assert rejections / 200 <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / 200)
    assert rejections > 0  # (it is a test: it does reject sometimes)
    X, Y = shifted(3000, 3000, 8, 0.2, seed=1)
    for method in ("permutation", "wild_bootstrap"):
        res = km.mmd_test(X, Y, method=method, feature_map=200, rng=0)
        assert res.pvalue <= 0.01, method


def test_threads_and_budget_do_not_change_the_result():
    X, Y = shifted(5000, 4000, 3, 0.1, seed=5)
    fmap = km.RandomFourierFeatures(30, gamma=1.0, rng=0).fit(X)
    one = km.mmd_test(X, Y, feature_map=fmap, n_resamples=59, rng=3, workers=1)
    two = km.mmd_test(X, Y, feature_map=fmap, n_resamples=59, rng=3, workers=2)
    assert one.statistic == two.statistic and one.pvalue == two.pvalue
    assert_array_equal(one.null_distribution, two.null_distribution)
    # a budget for one thread only: one thread
    two = km.mmd_test(X, Y, feature_map=fmap, n_resamples=59, rng=3, workers=2,
                      working_memory=8)
    assert one.statistic == two.statistic and one.pvalue == two.pvalue
    assert_array_equal(one.null_distribution, two.null_distribution)


def test_dask_input_gives_the_same_test():
    da = pytest.importorskip("dask.array")
    X, Y = shifted(3000, 2500, 3, 0.1, seed=6)
    fmap = km.RandomFourierFeatures(30, gamma=1.0, rng=0).fit(X)
    want = km.mmd_test(X, Y, feature_map=fmap, n_resamples=59, rng=3)
    got = km.mmd_test(da.from_array(X, chunks=700), da.from_array(Y, chunks=900),
                      feature_map=fmap, n_resamples=59, rng=3)
    assert got.pvalue == want.pvalue
    assert_array_equal(got.null_distribution, want.null_distribution)


def test_sets_through_their_features():
    rng = np.random.default_rng(7)
    A = [rng.normal(size=(int(rng.integers(5, 12)), 2)) for _ in range(40)]
    B = [1.5 * rng.normal(size=(int(rng.integers(5, 12)), 2)) for _ in range(35)]
    fmap = km.RandomDistributionFeatures(100, rng=0).fit(A + B)
    res = km.mmd_test(A, B, kernel="mean_map", feature_map=fmap, rng=0)
    want = linear_mmd2(fmap.transform(A), fmap.transform(B), True)
    assert_allclose(res.statistic, want, rtol=1e-10)
    assert res.pvalue <= 0.05 and res.kernel == "RandomDistributionFeatures"


def test_bad_input():
    X, Y = shifted(20, 30, 2, 0.0, seed=8)
    with pytest.raises(ValueError, match="feature_map is used by"):
        km.mmd_test(X, Y, method="aggregated", feature_map=10)
    with pytest.raises(ValueError, match="equal size"):
        km.mmd_test(X, Y, method="wild_bootstrap", feature_map=10)
    with pytest.raises(ValueError, match="feature_map"):
        km.mmd_test(X, Y, feature_map=0)
    sets = [np.ones((3, 2))] * 4
    with pytest.raises(TypeError, match="needs feature_map"):
        km.mmd_test(sets, sets, kernel="mean_map", feature_map=10)
    K = np.eye(6)
    with pytest.raises(ValueError, match="not a kernel matrix"):
        km.mmd_test(K, [0, 0, 0, 1, 1, 1], kernel="precomputed", feature_map=10)
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    before = Xnan.copy()
    with pytest.raises(ValueError, match="X"):
        km.mmd_test(Xnan, Y, feature_map=10)
    assert_array_equal(Xnan, before)
    with pytest.raises(ValueError, match="working memory"):
        km.mmd_test(X, Y, feature_map=10, n_resamples=2000,
                    working_memory=0.01)
