"""mmd_test: every statistic and resampled statistic against the slow NumPy
references of _references.py, the p-values and the aggregated test's level
correction against a direct implementation of MMDAgg, the linear test
against Hotelling's T^2 computed directly; exactness under the null,
invariances, float32, threads, extreme scales and bad input; its level and
power on fixed seeds."""

import contextlib
import dataclasses
import functools
import math

import numpy as np
import pytest
import scipy.special
import scipy.stats
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import _spec as fam
from kernelmaps._two_sample import aggregated, blocks, draws, resampling, result

from ._references import kernel_values, mmd2_samples, point_kernel


def _h_stat(X, Y, kernel, gamma, signs):
    """U-statistic of h with Rademacher `signs`: sum over i != j."""
    H = (point_kernel(X, X, kernel, gamma) + point_kernel(Y, Y, kernel, gamma)
         - point_kernel(X, Y, kernel, gamma) - point_kernel(Y, X, kernel, gamma))
    np.fill_diagonal(H, 0)
    n = len(X)
    return signs @ H @ signs / (n * (n - 1))


def _draws(seed_rng, total, n, N, method):
    """The resamples mmd_test draws for `rng=seed_rng` (its blocks)."""
    seeds = draws.block_seeds(np.random.default_rng(seed_rng), total)
    return np.concatenate([draws.draw_block(s, b, i == 0, n, N, method,
                                          np.float64)
                           for i, (s, b) in enumerate(seeds)], axis=1)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("n, m", [(2, 3), (7, 9), (40, 25)])
def test_permutation_statistics_are_the_mmd_of_each_split(kernel, unbiased,
                                                          n, m):
    rng = np.random.default_rng(n * 100 + m)
    X, Y = rng.normal(size=(n, 3)), rng.normal(size=(m, 3)) + 0.3
    B = 300  # more than one block of resamples
    res = km.mmd_test(X, Y, kernel=kernel, gamma=0.3, n_resamples=B,
                      unbiased=unbiased, rng=5)
    Z = np.concatenate([X, Y])
    assert_allclose(res.statistic, mmd2_samples(X, Y, kernel, 0.3, unbiased=unbiased),
                    rtol=1e-12, atol=1e-15)
    S = _draws(5, B + 1, n, n + m, "permutation").astype(bool)
    assert S.sum(axis=0).tolist() == [n] * (B + 1)
    assert res.null_distribution.shape == (B,)
    for j in (1, 2, 257, 300):
        want = mmd2_samples(Z[S[:, j]], Z[~S[:, j]], kernel, 0.3,
                            unbiased=unbiased)
        assert_allclose(res.null_distribution[j - 1], want, rtol=1e-11,
                        atol=1e-14)
    want_p = (1 + np.sum(res.null_distribution >= res.statistic)) / (B + 1)
    assert res.pvalue == want_p
    assert res.reject == (res.pvalue <= 0.05)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("n", [2, 5, 33])
def test_wild_bootstrap_statistics(kernel, n):
    rng = np.random.default_rng(n)
    X, Y = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)) * 1.2
    res = km.mmd_test(X, Y, kernel=kernel, gamma=0.2,
                      method="wild_bootstrap", n_resamples=260, rng=1)
    E = _draws(1, 261, n, 2 * n, "wild_bootstrap")
    assert_array_equal(np.abs(E), 1)
    assert_allclose(res.statistic, _h_stat(X, Y, kernel, 0.2, np.ones(n)),
                    rtol=1e-12, atol=1e-15)
    for j in (1, 100, 260):
        assert_allclose(res.null_distribution[j - 1],
                        _h_stat(X, Y, kernel, 0.2, E[:, j]), rtol=1e-11,
                        atol=1e-14)
    # A sign flip of e_i is the statistic of the samples with x_i and y_i
    # swapped: the wild bootstrap is a randomization test.
    flip = E[:, 7] < 0
    Xs, Ys = np.where(flip[:, None], Y, X), np.where(flip[:, None], X, Y)
    assert_allclose(_h_stat(Xs, Ys, kernel, 0.2, np.ones(n)),
                    res.null_distribution[6], rtol=1e-11, atol=1e-14)


def _swapped(X, Y, signs):
    """X and Y with x_i and y_i exchanged where signs[i] < 0 (i < min(n,
    m)); the points beyond the pairs stay where they are."""
    X, Y = X.copy(), Y.copy()
    swap = np.flatnonzero(signs < 0)
    X[swap], Y[swap] = Y[swap], X[swap].copy()
    return X, Y


def _mmdagg_reference(X, Y, kernels, gammas, B1, B2, alpha, seed):
    """MMDAgg (uniform weights) written directly from the paper: every
    statistic from its own kernel matrix, single p-values against the B1
    resamples, and the level correction by bisection over u. Samples of
    equal size: the wild bootstrap; unequal: swaps of the pairs (x_i, y_i),
    each statistic the unbiased MMD^2 of the resampled split, computed
    anew."""
    n, m = len(X), len(Y)
    wild = n == m
    draws = _draws(seed, 1 + B1 + B2, min(n, m), n + m, "wild_bootstrap")
    stats = []
    for kernel in kernels:
        for g in gammas[kernel]:
            row = []
            for j in range(draws.shape[1]):
                if wild:
                    row.append(_h_stat(X, Y, kernel, g, draws[:, j]))
                else:
                    row.append(mmd2_samples(*_swapped(X, Y, draws[:, j]), kernel, g,
                                            unbiased=True))
            stats.append(row)
    stats = np.array(stats)
    L = len(stats)
    obs, M1, M2 = stats[:, 0], stats[:, 1:1 + B1], stats[:, 1 + B1:]

    def single(t):
        return (1 + (t[:, None] <= M1).sum(1)) / (1 + B1)

    p_obs = single(obs)
    s_null = np.array([L * single(M2[:, b]).min() for b in range(B2)])
    s_obs = L * p_obs.min()
    pvalue = (1 + np.sum(s_null <= s_obs)) / (1 + B2)
    lo, hi = 0.0, float(L)
    for _ in range(60):  # the largest u with a p-value of u at most alpha
        u = (lo + hi) / 2
        if (1 + np.sum(s_null <= u)) / (1 + B2) <= alpha:
            lo = u
        else:
            hi = u
    reject_single = p_obs <= lo / L
    return stats, p_obs, pvalue, reject_single


@pytest.mark.parametrize("n, m", [(12, 12), (10, 14), (15, 9)])
def test_aggregated_against_a_direct_mmdagg(n, m):
    # unequal sizes: swaps of paired points
    rng = np.random.default_rng(n + m)
    X = rng.normal(size=(n, 2))
    Y = rng.laplace(size=(m, 2)) / np.sqrt(2) + [0.6, 0]
    B1, B2 = 150, 120
    res = km.mmd_test(X, Y, method="aggregated", n_resamples=(B1, B2),
                      rng=3, alpha=0.1, dtype=np.float64)
    gammas = {k: res.gamma[res.kernel == k] for k in ("laplacian", "rbf")}
    assert [len(g) for g in gammas.values()] == [10, 10]
    stats, p_obs, pvalue, reject_single = _mmdagg_reference(
        X, Y, ("laplacian", "rbf"), gammas, B1, B2, 0.1, 3)
    assert_allclose(res.statistic, stats[:, 0], rtol=1e-11, atol=1e-14)
    assert_allclose(res.null_distribution, stats[:, 1:1 + B1], rtol=1e-10,
                    atol=1e-13)
    assert_allclose(res.pvalues, p_obs)
    assert res.pvalue == pytest.approx(pvalue, rel=1e-12)
    assert_array_equal(res.statistic > res.thresholds, reject_single)
    assert res.reject == (res.pvalue <= 0.1) == reject_single.any()


def test_aggregated_default_bandwidths_follow_the_distances():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    res = km.mmd_test(X, Y, method="aggregated", n_resamples=20, rng=0)
    Z = np.concatenate([X, Y])
    l1 = np.abs(Z[:, None] - Z[None]).sum(-1)[np.triu_indices(60, 1)]
    l2 = np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))[np.triu_indices(60, 1)]
    for kernel, dist, power in (("laplacian", l1, 1), ("rbf", l2, 2)):
        bw = np.geomspace(2 * dist.max(), np.quantile(dist, 0.05) / 2, 10)
        assert_allclose(res.gamma[res.kernel == kernel], bw**-power,
                        rtol=1e-12)
    # gammas given: the same for each kernel, sorted
    res = km.mmd_test(X, Y, method="aggregated", gamma=[2.0, 0.5],
                      kernel="rbf", n_resamples=20, rng=0)
    assert_array_equal(res.gamma, [0.5, 2.0])
    assert_array_equal(res.kernel, ["rbf", "rbf"])


def test_default_gamma_does_not_depend_on_the_labels():
    """The kernel chosen from the pooled sample is a function of the pooled
    points only (also beyond the 1000 sampled points): the permutation test
    stays exact."""
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(2500, 3))
    order = rng.permutation(len(Z))
    for kernel in ("rbf", "laplacian"):
        assert (fam.point_gamma(None, Z, kernel)
                == fam.point_gamma(None, Z[order], kernel))
        assert_array_equal(fam.point_grid(Z, kernel, 10),
                           fam.point_grid(Z[order], kernel, 10))
    # small samples: the median heuristic over every pair
    small = Z[:40]
    sq = ((small[:, None] - small[None]) ** 2).sum(-1)[np.triu_indices(40, 1)]
    assert fam.point_gamma(None, small, "rbf") == pytest.approx(
        1 / np.median(sq), rel=1e-14)


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap",
                                    "aggregated"])
def test_exact_level_at_tiny_sizes(method):
    """P(p <= a) <= a at every level a, for 3 + 3 points (no asymptotics):
    over 400 null draws, the count at a = 0.1 is at most the binomial
    bound."""
    rng = np.random.default_rng(7)
    pvalues = [km.mmd_test(rng.normal(size=(3, 2)), rng.normal(size=(3, 2)),
                           method=method, n_resamples=19, rng=i).pvalue
               for i in range(400)]
    pvalues = np.array(pvalues)
    for a in (0.1, 0.25, 0.5):
        bound = scipy.stats.binom.ppf(0.999, 400, a)
        assert np.sum(pvalues <= a) <= bound


def _mean_distance(F1, F2):
    """The linear test's statistic, and the weights of its null: the
    eigenvalues of the pooled covariance of the features."""
    n, m = len(F1), len(F2)
    S = ((n - 1) * np.cov(F1, rowvar=False) + (m - 1) * np.cov(F2, rowvar=False)
         ) / (n + m - 2)
    d = F1.mean(0) - F2.mean(0)
    return d @ d, np.linalg.eigvalsh(S)


def test_linear_test_is_the_mean_feature_distance():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(300, 5)), rng.normal(size=(250, 5)) + 0.1
    res = km.mmd_test(X, Y, method="linear", gamma=0.1, feature_map=7, rng=4)
    # the same draw as the test's (its generator's first use)
    fmap = km.RandomFourierFeatures(7, gamma=0.1, rng=4).fit(X)
    stat, weights = _mean_distance(fmap.transform(X), fmap.transform(Y))
    assert_allclose(res.statistic, stat, rtol=1e-9)
    # the p-value: P(sum w_j chi2_1 > n m / N stat), here by Monte Carlo
    q = 300 * 250 / 550 * stat
    sim = (np.random.default_rng(0).chisquare(1, size=(200_000, 7))
           * weights).sum(axis=1)
    p = np.mean(sim > q)
    assert abs(res.pvalue - p) < 4 * np.sqrt(p * (1 - p) / 200_000)
    assert res.null_distribution is None
    # any map of the package, fitted here (a copy) or already
    chi2 = km.Chi2DirectMap(n_terms=2)
    H1, H2 = rng.random((80, 4)), rng.random((90, 4)) ** 2
    res = km.mmd_test(H1, H2, method="linear", feature_map=chi2)
    assert not chi2.__sklearn_is_fitted__()
    fitted = km.Chi2DirectMap(n_terms=2).fit(np.concatenate([H1, H2]))
    stat, _ = _mean_distance(fitted.transform(H1), fitted.transform(H2))
    assert_allclose(res.statistic, stat, rtol=1e-9)
    assert res.kernel == "Chi2DirectMap" and res.pvalue < 1e-6


def test_linear_test_level_and_default_width():
    # asymptotic level: 300 tests of 400 + 300 points at 0.1 reject within
    # a few standard errors of 0.1; the default width grows with N
    from kernelmaps._two_sample.features import linear_width

    p = np.array([km.mmd_test(*np.random.default_rng(s).normal(size=(2, 350, 3)),
                              method="linear", rng=s).pvalue for s in range(300)])
    assert abs(np.mean(p <= 0.1) - 0.1) < 4 * np.sqrt(0.1 * 0.9 / 300)
    assert linear_width(200, 3) == 100 and linear_width(5000, 3) == 500
    assert linear_width(10**6, 3) == 1000 and linear_width(200, 64) == 256


def test_linear_test_on_dask_arrays_is_the_same():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(3000, 4)), rng.normal(size=(2000, 4))
    want = km.mmd_test(X, Y, method="linear", rng=1)
    got = km.mmd_test(da.from_array(X, chunks=700), da.from_array(Y, chunks=900),
                      method="linear", rng=1)
    assert_allclose([got.statistic, got.pvalue], [want.statistic, want.pvalue],
                    rtol=1e-9)
    assert got.gamma == want.gamma


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap",
                                    "aggregated", "linear"])
def test_threads_float32_scales_and_inputs_kept(method):
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 0.4
    X0, Y0 = X.copy(), Y.copy()
    kw = dict(method=method, rng=2)
    if method != "linear":
        kw["n_resamples"] = 50
    ref = km.mmd_test(X, Y, workers=1, **kw)
    assert_array_equal(X, X0)
    assert_array_equal(Y, Y0)
    two = km.mmd_test(X, Y, workers=2, **kw)
    assert two.pvalue == ref.pvalue
    assert_allclose(two.statistic, ref.statistic, rtol=1e-12)
    # the same test at every scale (gamma from the data); float32 input
    for scale in (1e-150, 1e150):
        res = km.mmd_test(X * scale, Y * scale, **kw)
        assert res.pvalue == pytest.approx(ref.pvalue, abs=0.03 if
                                           method == "aggregated" else 1e-9)
        assert np.all(np.isfinite(res.statistic))
    res = km.mmd_test(X.astype(np.float32), Y.astype(np.float32), **kw)
    assert abs(res.pvalue - ref.pvalue) <= 0.05
    if method != "linear":
        res = km.mmd_test(X, Y, dtype=np.float32, **kw)
        assert_allclose(res.statistic, ref.statistic, rtol=1e-5, atol=1e-7)
        assert abs(res.pvalue - ref.pvalue) <= 0.05


def test_identical_and_constant_samples():
    X = np.ones((5, 2))
    for method in ("permutation", "wild_bootstrap", "aggregated", "linear"):
        kw = {} if method == "linear" else {"n_resamples": 20}
        # one point: the kernel is 1 between all points, which are equal
        # (not a gamma far too small: the linear test has no kernel matrix)
        with (contextlib.nullcontext() if method == "linear" else
              pytest.warns(km.DegenerateWarning, match="kernel is the same "
                           "between all distinct points of X and Y: they are "
                           "equal")):
            res = km.mmd_test(X, X.copy(), method=method, rng=0, **kw)
        assert res.pvalue == 1.0 and not res.reject
        assert np.all(np.isfinite(res.statistic))


def test_result_repr_and_fields():
    rng = np.random.default_rng(5)
    res = km.mmd_test(rng.normal(size=(10, 2)), rng.normal(size=(12, 2)),
                      n_resamples=19, rng=0)
    assert isinstance(res, km.MMDTestResult)
    assert "pvalue=" in repr(res) and "method='permutation'" in repr(res)
    assert res.pvalues is None
    # determinism
    again = km.mmd_test(rng.normal(size=(10, 2)), rng.normal(size=(12, 2)),
                        n_resamples=19, rng=0)
    assert again.method == res.method


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(Y=np.zeros((5, 4))), ValueError, "same number of features"),
    (dict(X=np.zeros((1, 3))), ValueError, "X must hold at least 2"),
    (dict(Y=np.zeros((1, 3))), ValueError, "Y must hold at least 2"),
    (dict(X=np.full((4, 3), np.nan)), ValueError, "NaN"),
    (dict(alpha=0.0), ValueError, "alpha"),
    (dict(alpha=1.0), ValueError, "alpha"),
    (dict(alpha=np.nan), ValueError, "alpha"),
    (dict(n_resamples=0), ValueError, "n_resamples"),
    (dict(n_resamples=2.5), TypeError, "n_resamples"),
    (dict(method="bootstrap"), ValueError, "method"),
    (dict(kernel="poly"), ValueError, "kernel"),
    (dict(gamma=-1.0), ValueError, "gamma"),
    (dict(method="wild_bootstrap", Y=np.zeros((5, 3))), ValueError,
     "equal size"),
    (dict(method="aggregated", n_resamples=(1, 2, 3)), ValueError,
     "n_resamples"),
    (dict(method="aggregated", kernel=["rbf", "rbf"]), ValueError, "kernel"),
    (dict(method="linear", n_resamples=10), ValueError, "n_resamples"),
    (dict(method="linear", feature_map=0), ValueError, "feature_map"),
    (dict(method="linear", feature_map=km.RandomFourierFeatures), TypeError,
     "feature_map"),
    (dict(method="aggregated", feature_map=5), ValueError, "feature_map"),
    (dict(feature_map=km.RandomFourierFeatures), TypeError, "feature_map"),
    (dict(dtype=np.int32), ValueError, "dtype"),
    (dict(rng="a"), (TypeError, ValueError), "rng"),
    (dict(X=np.zeros((4, 3), dtype=complex)), TypeError, "X"),
])
def test_bad_input(kwargs, error, match):
    args = dict(X=np.arange(12.0).reshape(4, 3),
                Y=np.arange(12.0).reshape(4, 3) ** 0.5)
    args.update(kwargs)
    X, Y = args.pop("X"), args.pop("Y")
    with pytest.raises(error, match=match):
        km.mmd_test(X, Y, **args)


def test_level_correction_edge_cases():
    # one kernel, B2 resamples all below: the aggregated p-value is the
    # single test's
    M1 = np.arange(1.0, 100.0)[None, :]
    obs = np.array([200.0])
    p, pvalue, thr = aggregated.level_correction(obs, M1, M1[:, :19], 0.05, 0.0)
    assert p[0] == 1 / 100
    assert pvalue <= 0.05 and obs[0] > thr[0]
    # nothing can reach the level: no rejection, infinite thresholds
    p, pvalue, thr = aggregated.level_correction(obs, M1[:, :5], M1[:, :5], 0.05,
                                                   0.0)
    assert pvalue > 0.05 and np.all(thr == np.inf)
    assert math.isclose(p[0], 1 / 6)


def test_ties_within_rounding():
    # a resample within 100 roundings of the largest statistic below the
    # observed one ties with it; one 1,000 roundings below does not
    eps = np.finfo(np.float64).eps
    observed, top = -0.004, 0.05
    null = np.array([top, observed, observed - 10 * eps * top,
                     observed - 99 * eps * top, observed - 1000 * eps * top,
                     -top])
    assert result.pvalue(observed, null, eps) == 5 / 7
    assert result.pvalue(observed, null, 0.0) == 3 / 7
    assert result.pvalue(observed, null, np.finfo(np.float32).eps) == 6 / 7
    # an infinite statistic: the others compared exactly
    assert result.pvalue(observed, np.append(null, np.inf), eps) == 4 / 8
    # the aggregated test's single p-values alike, each kernel's row at
    # the scale of its own statistics
    M1 = np.stack([null, 1e-6 * null])
    singles, _, _ = aggregated.level_correction(
        np.array([observed, 1e-6 * observed]), M1, M1, 0.05, eps)
    assert_allclose(singles, [5 / 7, 5 / 7])


def test_huge_or_empty_arguments_are_refused():
    X = np.arange(12.0).reshape(4, 3)
    with pytest.raises(ValueError, match="n_resamples"):
        km.mmd_test(X, X + 1, n_resamples=10**12)
    with pytest.raises(ValueError, match="n_resamples"):
        km.mmd_test(X, X + 1, method="aggregated", n_resamples=(10, 10**12))
    with pytest.raises(ValueError, match="gamma"):
        km.mmd_test(X, X + 1, method="aggregated", gamma=[])
    with pytest.raises(TypeError, match="kernel"):
        km.mmd_test(X, X + 1, method="aggregated", kernel=1)
    with pytest.raises(ValueError, match="gamma"):
        km.mmd_test(X * 1e300, X + 1)  # distances beyond float64


def test_each_method_from_the_tables_on_a_frozen_call():
    # the methods the checks accept are the keys of mmd_test's tables (of
    # the kernel's tests, and on features), and the checked call is frozen
    from kernelmaps import _two_sample
    from kernelmaps._two_sample import checks

    assert tuple(_two_sample.METHODS) == checks.METHODS
    assert sorted(_two_sample.ON_FEATURES) == sorted(checks.ON_FEATURES)
    X = np.random.default_rng(0).normal(size=(6, 2))
    call = checks.check_input(X, X + 1, None, None, "aggregated", None, None,
                              0.05, True, None, None, None, 0, 1, False, None)
    assert (call.n, call.N, call.mode, call.total) == (6, 12, "wild", 4001)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.n = 7


@pytest.mark.parametrize("n, m", [(12, 12), (10, 14)])
def test_aggregated_draws_kept_or_drawn_again_alike(n, m, monkeypatch):
    """The aggregated test keeps its resamples for all kernels when they are
    small, else draws them again for each kernel: the same test."""
    rng = np.random.default_rng(n * m)
    X, Y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) + 0.5
    kept = km.mmd_test(X, Y, method="aggregated", n_resamples=300, rng=4)
    monkeypatch.setattr(draws, "RESAMPLE_DRAWS_KEPT", 0)
    again = km.mmd_test(X, Y, method="aggregated", n_resamples=300, rng=4)
    assert_array_equal(again.statistic, kept.statistic)
    assert_array_equal(again.null_distribution, kept.null_distribution)
    assert again.pvalue == kept.pvalue


# -- tests that carry no information: DegenerateWarning ------------------------


def test_a_degenerate_kernel_is_said():
    """gamma = 1e10 on N(0, 1) points: the pooled kernel is the identity,
    and a shift of three standard deviations gives statistic 0 and p = 1,
    the exact values of that kernel, with a DegenerateWarning; 1e-20 makes
    it a constant."""
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + 3
    for method in ("permutation", "wild_bootstrap"):
        with pytest.warns(km.DegenerateWarning,
                          match="is 0 between all distinct points of X and Y"):
            res = km.mmd_test(X, Y, gamma=1e10, method=method, rng=0)
        assert res.statistic == 0 and res.pvalue == 1
        with pytest.warns(km.DegenerateWarning, match="is 1 between all points"):
            km.mmd_test(X, Y, gamma=1e-20, method=method, rng=0)
    km.mmd_test(X, Y, rng=0)  # the default kernel: no warning
    # The aggregated test names the kernels that carry nothing, for samples
    # of equal size (wild bootstrap, from one log-kernel) and not.
    for Y_ in (Y, Y[:30]):
        with pytest.warns(km.DegenerateWarning,
                          match=r"2 of the 3 kernels of the aggregated test.*"
                                r"gamma=1e-20 is 1 between all.*gamma=1e\+10 is "
                                r"0 between all distinct points"):
            res = km.mmd_test(X, Y_, method="aggregated", kernel="rbf",
                              gamma=[1e-20, 0.5, 1e10], n_resamples=50, rng=0)
        assert res.reject  # the informative kernel still finds the shift


@pytest.mark.parametrize(("method", "n_resamples", "alpha", "warns"), [
    ("permutation", 9, 0.01, True),
    ("permutation", 99, 0.01, False),
    ("permutation", 18, 0.05, True),
    ("permutation", 19, 0.05, False),
    ("wild_bootstrap", 9, 0.05, True),
    ("aggregated", 1, 0.05, True),
    ("aggregated", (500, 10), 0.05, True),
    ("aggregated", (10, 19), 0.05, False),
    ("permutation", 19, 5e-324, True),  # 1 / alpha is infinite
])
def test_a_test_that_can_never_reject_is_said(method, n_resamples, alpha, warns):
    """The smallest p-value of B resamples is 1 / (B + 1) (B2 for the
    aggregated test): above alpha the test can never reject."""
    rng = np.random.default_rng(10)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 5
    call = functools.partial(km.mmd_test, X, Y, method=method, alpha=alpha,
                             n_resamples=n_resamples, rng=0)
    if not warns:  # (warnings are errors in this suite)
        res = call()
        assert res.pvalue <= alpha or method == "aggregated"
        return
    advice = ("no number of resamples reaches it" if alpha < 1e-300 else
              f"use at least {math.ceil(1 / alpha) - 1} resamples")
    with pytest.warns(km.DegenerateWarning, match=f"can never reject; {advice}"):
        res = call()
    assert not res.reject and res.pvalue > alpha


def test_collections_of_sets_and_point_kernels():
    rng = np.random.default_rng(11)
    A = [rng.normal(size=(n, 2)) for n in (5, 6, 7)]
    B = [rng.normal(size=(n, 2)) for n in (4, 8)]
    # a point kernel given for sets: told to use a kernel between sets
    for X, Y, name in ((A, B, "X"), (A[0], B, "Y"), (km.Bags.from_list(A), B[0],
                                                        "X"),
                       (np.stack([A[0][:4], B[0]]), B[1], "X")):
        with pytest.raises(TypeError, match=rf"{name} is a collection of \d "
                           rf"sets, and the kernel is a kernel between points"
                           rf".*kernel='mean_map'"):
            km.mmd_test(X, Y, kernel="rbf")
    # sets against points: the kernel between sets refuses Y
    with pytest.raises((TypeError, ValueError), match="Y"):
        km.mmd_test(A, B[0])
    # by default, collections of sets are compared by the mean map kernel
    res = km.mmd_test(A, B, n_resamples=19, rng=0)
    assert res.kernel == "mean_map" and 0 < res.pvalue <= 1
    # and their points pooled: a test of points
    res = km.mmd_test(np.concatenate(A), np.concatenate(B), rng=0)
    assert 0 < res.pvalue <= 1 and res.kernel == "rbf"


def test_the_wild_bootstrap_statistic_leaves_out_the_paired_terms():
    """As documented: the wild bootstrap's MMD^2 is the permutation test's
    unbiased one without the n terms k(x_i, y_i) in the cross sum."""
    rng = np.random.default_rng(12)
    X, Y = rng.normal(size=(15, 2)), rng.normal(size=(15, 2)) + 0.3
    gamma, n = 0.7, 15
    wild = km.mmd_test(X, Y, gamma=gamma, method="wild_bootstrap",
                       n_resamples=19, rng=0).statistic
    perm = km.mmd_test(X, Y, gamma=gamma, n_resamples=19, rng=0).statistic
    paired = kernel_values(X, Y, "rbf", gamma).sum()
    cross = point_kernel(X, Y, "rbf", gamma).sum()
    # perm's cross term is -2 cross / n^2; wild's -2 (cross - paired) / (n (n-1))
    assert wild != pytest.approx(perm, rel=1e-3)
    assert wild - perm == pytest.approx(
        2 * cross / n**2 - 2 * (cross - paired) / (n * (n - 1)), rel=1e-10)
    assert "leaves out the n terms ``k(x_i, y_i)``" in km.mmd_test.__doc__


def test_default_bandwidths_are_split_invariant_not_the_authors_rule():
    """As documented: the default bandwidths of the aggregated test depend
    on the pooled points only (the same for X and Y swapped or their
    points exchanged); the authors' rule (distances between the first 500
    points of X and of Y) does not."""
    rng = np.random.default_rng(13)
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(40, 2)) * 3
    Z = np.concatenate([X, Y])
    swapped = Z[rng.permutation(70)]

    def gammas(A, B):
        return km.mmd_test(A, B, method="aggregated", n_resamples=20,
                           rng=0).gamma

    assert_allclose(gammas(X, Y), gammas(swapped[:30], swapped[30:]), rtol=1e-14)

    def authors_widest(A, B):  # twice the largest distance of X and Y
        d = np.sqrt(((A[:, None] - B[None]) ** 2).sum(-1))
        return 2 * d.max()

    assert authors_widest(X, Y) != pytest.approx(
        authors_widest(swapped[:30], swapped[30:]), rel=1e-3)
    assert "split-invariant" in km.mmd_test.__doc__
    assert "not the rule of the authors' code" in km.mmd_test.__doc__


def test_aggregated_wild_bootstrap_over_a_wide_range_of_gammas():
    """The kernel at c gamma from the log-kernel at gamma, for c up to 1e4
    only: at gamma = 1e-12 the kernel is 1 - O(1e-12) and its log holds
    four digits; the statistic at 1.0 is computed anew (it was off by
    about 1e-4 when taken from it)."""
    rng = np.random.default_rng(14)
    X, Y = rng.normal(size=(25, 2)), rng.normal(size=(25, 2)) + 0.5
    agg = km.mmd_test(X, Y, method="aggregated", kernel="rbf",
                      gamma=[1e-12, 1e-9, 1.0], n_resamples=20, rng=0,
                      dtype=np.float64)
    for g, stat in zip(agg.gamma, agg.statistic):
        single = km.mmd_test(X, Y, method="wild_bootstrap", gamma=g,
                             n_resamples=19, rng=0).statistic
        assert stat == pytest.approx(single, rel=1e-9, abs=1e-12)  # k ~ 1


@pytest.mark.parametrize("n, m", [(9, 13), (13, 9)])
def test_swaps_of_a_precomputed_stack_match_the_points(n, m):
    # the swaps' form from whole kernel matrices (objects, precomputed) and
    # from the log of the pooled matrix (points) agree
    rng = np.random.default_rng(n * m)
    X, Y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) + 0.4
    res = km.mmd_test(X, Y, method="aggregated", kernel="rbf",
                      n_resamples=(99, 99), rng=1)
    Z = np.concatenate([X, Y])
    sq = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-g * sq) for g in res.gamma])
    given = km.mmd_test(K, np.repeat([0, 1], [n, m]), kernel="precomputed",
                        method="aggregated", n_resamples=(99, 99), rng=1)
    assert_allclose(given.statistic, res.statistic, rtol=1e-12, atol=1e-15)
    assert_allclose(given.null_distribution, res.null_distribution,
                    rtol=1e-10, atol=1e-14)
    assert given.pvalue == res.pvalue


def _fuse_reference(X, Y, kernels, gammas, B, seed):
    """MMD-FUSE written from the authors' code: per kernel the unbiased
    MMD^2 of each permuted split times p (p - 1) sqrt(p (p - 1)) over the
    Frobenius norm of the pooled matrix with a zero diagonal (p = min(n,
    m)), a log-sum-exp over the kernels with weights 1/L, the observed
    statistic among the B + 1."""
    n, m = len(X), len(Y)
    Z = np.concatenate([X, Y])
    draws = _draws(seed, 1 + B, n, n + m, "permutation").astype(bool)
    p = min(n, m)
    rows = []
    for kernel in kernels:
        for g in gammas[kernel]:
            K0 = point_kernel(Z, Z, kernel, g)
            np.fill_diagonal(K0, 0.0)
            norm = np.sqrt((K0**2).sum())
            rows.append([mmd2_samples(Z[s], Z[~s], kernel, g, unbiased=True)
                         * p * (p - 1)
                         * np.sqrt(p * (p - 1)) / norm for s in draws.T])
    fused = scipy.special.logsumexp(np.array(rows), axis=0,
                                    b=1.0 / len(rows))
    pvalue = (1 + np.sum(fused[1:] >= fused[0])) / (1 + B)
    return fused, pvalue


@pytest.mark.parametrize("n, m", [(11, 11), (9, 14)])
def test_fuse_against_the_authors_formula(n, m):
    rng = np.random.default_rng(n * m)
    X = rng.normal(size=(n, 2))
    Y = rng.laplace(size=(m, 2)) / np.sqrt(2) + [0.5, 0]
    res = km.mmd_test(X, Y, method="fuse", n_resamples=300, rng=5,
                      dtype=np.float64)
    gammas = {k: res.gamma[res.kernel == k] for k in ("laplacian", "rbf")}
    assert [len(g) for g in gammas.values()] == [10, 10]
    fused, pvalue = _fuse_reference(X, Y, ("laplacian", "rbf"), gammas, 300, 5)
    assert res.statistic == pytest.approx(fused[0], rel=1e-10)
    assert_allclose(res.null_distribution, fused[1:], rtol=1e-9, atol=1e-12)
    assert res.pvalue == pytest.approx(pvalue, rel=1e-12)
    assert res.method == "fuse" and res.pvalues is None


@pytest.mark.parametrize("path", ["memory", "blocks"])
@pytest.mark.parametrize("gamma", [None, [1e-12, 1e-6, 1.0, 1e3]])
@pytest.mark.parametrize("n, m", [(40, 40), (31, 45)])
@pytest.mark.parametrize("method", ["aggregated", "fuse"])
def test_float32_products_by_default(monkeypatch, n, m, method, gamma, path):
    """The aggregated and fused tests multiply in float32 by default (the
    centred draws, the matrix less its mean: the digits that vary kept,
    also for kernels near 1 or 0 everywhere): the statistics of float64
    to about 1e-7 of their spread, so the same p-values but where two
    statistics are that close (the p-values may then differ by a step of
    1 / (B + 1): at gamma = 1e3 the kernel is about 0 between all points,
    and the statistics of many resamples are all but tied). Statistics
    within float32's rounding of the observed one count as ties in float32
    (`result.tie_floor`): at gamma = 1e3, where the statistics of many
    resamples differ by less, its p-value is the larger."""
    if path == "blocks":  # (ranges of 16 objects)
        monkeypatch.setattr(resampling, "_in_memory_bytes", lambda *args: np.inf)
        monkeypatch.setattr(resampling, "MIN_BLOCK", 16)
        monkeypatch.setattr(resampling, "RESAMPLE_TASK_WORK", 1.0)
    rng = np.random.default_rng(n + m)
    X = rng.normal(size=(n, 3))
    Y = rng.normal(size=(m, 3)) + np.array([0.4, 0, 0])
    kwargs = dict(method=method, n_resamples=(200, 200) if method == "aggregated"
                  else 400, rng=2, kernel=["rbf"] if gamma else None,
                  gamma=gamma)
    low = km.mmd_test(X, Y, **kwargs)
    corrected = []  # (the float64 statistics of the level correction)
    correct = aggregated.level_correction
    monkeypatch.setattr(aggregated, "level_correction", lambda *args: (
        corrected.append(args), correct(*args))[1])
    high = km.mmd_test(X, Y, dtype=np.float64, **kwargs)
    step = 1.0 / (1 + (200 if method == "aggregated" else 400))
    if method == "aggregated" and gamma:
        # the kernels but the last (gamma = 1e3) alike; the float64
        # statistics with float32's ties give float32's p-values
        assert_allclose(low.pvalues[:3], high.pvalues[:3], atol=2.5 * step)
        singles, pvalue, _ = correct(*corrected[0][:-1],
                                     np.finfo(np.float32).eps)
        assert_allclose(low.pvalues, singles, atol=2.5 * step)
        assert low.pvalue == pytest.approx(pvalue, abs=2.5 * step)
    else:
        assert low.pvalue == pytest.approx(high.pvalue, abs=2.5 * step)
    if method == "aggregated":
        # each kernel's statistics against the spread of its own
        spread = np.ptp(high.null_distribution, axis=1)[:, None]
        assert (spread > 0).all()
        assert (np.abs(low.null_distribution - high.null_distribution)
                <= 1e-5 * spread).all()
        assert (np.abs(low.statistic - high.statistic)
                <= 1e-5 * spread[:, 0]).all()
        # the single p-values differ only by the resamples tied with the
        # observed statistic to within float32's reach
        ties = (np.abs(high.null_distribution - high.statistic[:, None])
                <= 1e-6 * spread).sum(axis=1)
        assert (np.abs(low.pvalues - high.pvalues) / step <= ties + 1e-9).all()
    else:
        spread = np.ptp(high.null_distribution)
        assert_allclose(low.null_distribution, high.null_distribution,
                        atol=1e-5 * spread, rtol=0)
        assert low.statistic == pytest.approx(high.statistic, abs=1e-5 * spread)


def test_fuse_bandwidths_are_the_authors():
    # linearly spaced from half the 5 % to twice the 95 % order statistic of
    # the pooled distances; gaussian exp(-d^2 / (2 b^2)), laplace
    # exp(-sqrt(2) d_1 / b)
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(25, 3)), rng.normal(size=(30, 3))
    res = km.mmd_test(X, Y, method="fuse", n_resamples=19, rng=0)
    Z = np.concatenate([X, Y])
    iu = np.triu_indices(55, 1)
    for kernel, dist in (
            ("laplacian", np.abs(Z[:, None] - Z[None]).sum(-1)[iu]),
            ("rbf", np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))[iu])):
        dd = np.sort(dist)
        bw = np.linspace(dd[int(0.05 * dd.size)] / 2, dd[int(0.95 * dd.size)] * 2,
                         10)
        want = 1 / (2 * bw**2) if kernel == "rbf" else np.sqrt(2) / bw
        assert_allclose(res.gamma[res.kernel == kernel], np.sort(want),
                        rtol=1e-12)


def test_fuse_level():
    rng = np.random.default_rng(2)
    pvalues = [km.mmd_test(rng.normal(size=(15, 2)), rng.normal(size=(20, 2)),
                           method="fuse", n_resamples=39, rng=r).pvalue
               for r in range(150)]
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > 1e-3
    assert np.mean(np.array(pvalues) <= 0.05) <= 0.05 + 3 * np.sqrt(
        0.05 * 0.95 / 150)

# ------------------------------------------------------------
# mmd_test as a statistical test, on fixed seeds: under the null its
# rejection rate at alpha = 0.05 lies within the 99.9 % binomial bound and its
# p-values lie on the grid 1 / (1 + B) and are uniform; a clear alternative is
# rejected. (The full calibration and power study, at 500 repetitions and
# sizes to 2000, is studies/two_sample/study.py.)


ALPHA = 0.05
REPS = 300

# (method, n, m, n_resamples): every method at n = 20 (the linear test at
# 300), and the tests that
# use permutations at unequal sizes too (there the aggregated test
# permutes instead of its wild bootstrap).
NULL_CASES = [
    ("permutation", 20, 20, 199),
    ("permutation", 20, 30, 199),
    ("wild_bootstrap", 20, 20, 199),
    ("aggregated", 20, 20, (100, 100)),
    ("aggregated", 20, 30, (100, 100)),
    # (its level is asymptotic: at 20 + 20 heavy-tailed points its p-values
    # are not uniform; at some hundreds they are)
    ("linear", 300, 300, None),
]


def _null_pvalues(method, n, m, n_resamples, seed):
    """p-values and decisions of REPS tests between two samples of the same
    distribution (a Student t with 3 degrees of freedom in d = 3: heavy
    tails, where a normal approximation of the null would show)."""
    pvalues, rejects = [], []
    for rep in range(REPS):
        rng = np.random.default_rng([seed, rep])
        X = rng.standard_t(3, size=(n, 3))
        Y = rng.standard_t(3, size=(m, 3))
        res = km.mmd_test(X, Y, method=method, n_resamples=n_resamples,
                          rng=rng, workers=1)
        pvalues.append(res.pvalue)
        rejects.append(res.reject)
    return np.array(pvalues), np.array(rejects)


def _assert_decisions(pvalues, rejects):
    """`reject` is ``pvalue <= alpha``, repetition by repetition."""
    np.testing.assert_array_equal(rejects, pvalues <= ALPHA)


@pytest.mark.parametrize("method, n, m, n_resamples", NULL_CASES)
def test_null_rejection_rate_and_uniform_pvalues(method, n, m, n_resamples):
    pvalues, rejects = _null_pvalues(method, n, m, n_resamples, seed=2020)
    _assert_decisions(pvalues, rejects)
    low, high = scipy.stats.binom.interval(0.999, REPS, ALPHA)
    assert low <= rejects.sum() <= high, (method, rejects.mean())
    # Uniform under the null: the discreteness of the resampling p-values
    # (steps of 1 / 101 at least) is far below what the KS test at 300
    # p-values can see (its 0.1 % critical distance is about 0.11).
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > 1e-3, method
    if n_resamples is not None:
        # The resampling p-values are (1 + k) / (1 + B), k in 0..B.
        B = n_resamples if np.isscalar(n_resamples) else n_resamples[1]
        steps = pvalues * (1 + B)
        assert np.allclose(steps, np.round(steps), rtol=0, atol=1e-9)
        assert steps.min() >= 1 - 1e-9 and steps.max() <= B + 1 + 1e-9


@pytest.mark.parametrize("B", [19, 99])
def test_permutation_pvalue_exact_at_small_B(B):
    """With B resamples the permutation p-value is uniform on the grid
    {1, ..., B + 1} / (1 + B) exactly (the observed sample counts as one of
    B + 1 exchangeable ones): P(p <= alpha) = floor(alpha (1 + B)) / (1 +
    B); a p-value of k / B would put mass on 0 and break the grid."""
    pvalues = []
    for rep in range(REPS):
        rng = np.random.default_rng([7, B, rep])
        X, Y = rng.normal(size=(15, 2)), rng.normal(size=(25, 2))
        pvalues.append(km.mmd_test(X, Y, n_resamples=B, rng=rng,
                                   workers=1).pvalue)
    k = np.round(np.array(pvalues) * (1 + B)).astype(int)
    assert k.min() >= 1 and k.max() <= B + 1
    # Chi-squared test of the B + 1 equally likely grid values (in 5 bins
    # of (B + 1) / 5 values, at least 60 expected counts each).
    counts = np.bincount((k - 1) * 5 // (B + 1), minlength=5)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3, counts


@pytest.mark.parametrize("method, n, n_resamples", [
    ("permutation", 50, 199),
    ("wild_bootstrap", 50, 199),
    ("aggregated", 50, (500, 500)),
    ("linear", 200, None),
])
def test_power_on_a_clear_alternative(method, n, n_resamples):
    """A mean shift of 1.5 in one of 5 coordinates is rejected in more than
    90 % of 40 repetitions."""
    rejects = []
    for rep in range(40):
        rng = np.random.default_rng([11, rep])
        X, Y = rng.normal(size=(n, 5)), rng.normal(size=(n, 5))
        Y[:, 0] += 1.5
        rejects.append(km.mmd_test(X, Y, method=method,
                                   n_resamples=n_resamples, rng=rng,
                                   workers=1).reject)
    assert np.mean(rejects) > 0.9, (method, np.mean(rejects))


# ------------------------------------------------------------
# The block path: the statistics from blocks of the kernel, where the pooled
# matrices do not fit the working memory. Forced here by a plan that never
# fits in memory, with small ranges (several of them, not dividing the
# sample) and small batches of resamples: the same draws, so the same
# p-values, and the statistics to rounding.


@pytest.fixture
def on_blocks(monkeypatch):
    """Every test below on the block path, with ranges of at most 7 objects
    (tasks of a few multiply-adds); yields the list of the block passes'
    calls (one per kernel and batch)."""
    calls = []
    run_blocks = blocks.run_blocks

    def spy(*args, **kwargs):
        calls.append(args[3].size)
        return run_blocks(*args, **kwargs)

    monkeypatch.setattr(resampling, "_in_memory_bytes", lambda *args: math.inf)
    monkeypatch.setattr(resampling, "MIN_BLOCK", 7)
    monkeypatch.setattr(resampling, "RESAMPLE_TASK_WORK", 1.0)
    monkeypatch.setattr(blocks, "run_blocks", spy)
    return calls


def _sets(rng, count, shift=0.0):
    return [rng.normal(size=(rng.integers(6, 12), 2)) + shift
            for _ in range(count)]


_BLOCK_CASES = {
    "points": lambda rng: (rng.normal(size=(23, 3)),
                           rng.normal(size=(17, 3)) + np.array([0.4, 0, 0]), {}),
    "mean_map": lambda rng: (_sets(rng, 11), _sets(rng, 9, 0.3),
                             {"kernel": "mean_map"}),
    "mmd": lambda rng: (_sets(rng, 11), _sets(rng, 9, 0.3), {"kernel": "mmd"}),
    "renyi": lambda rng: (_sets(rng, 10), _sets(rng, 9, 0.3),
                          {"kernel": "renyi", "kernel_params": {"k": 3}}),
    "chi2": lambda rng: (rng.dirichlet(np.ones(5), 13),
                         rng.dirichlet(np.ones(5) * 2, 10), {"kernel": "chi2"}),
    "exp_chi2": lambda rng: (rng.dirichlet(np.ones(5), 13),
                             rng.dirichlet(np.ones(5) * 2, 10),
                             {"kernel": "exp_chi2"}),
    "expected": lambda rng: ((rng.normal(size=(12, 2)), np.full(12, 0.5)),
                             (rng.normal(size=(9, 2)) + 0.5, np.full(9, 0.3)),
                             {"kernel": "expected"}),
}


@pytest.mark.parametrize("case", list(_BLOCK_CASES))
@pytest.mark.parametrize("method", ["permutation", "aggregated", "fuse"])
def test_block_path_gives_the_same_pvalues(on_blocks, monkeypatch, case,
                                           method):
    rng = np.random.default_rng(sorted(_BLOCK_CASES).index(case))
    X, Y, kwargs = _BLOCK_CASES[case](rng)
    if method != "permutation" and case not in ("points", "mean_map"):
        kwargs = {**kwargs, "kernel": [kwargs["kernel"]]}
    n_resamples = (300, 300) if method == "aggregated" else 300
    call = functools.partial(km.mmd_test, X, Y, method=method,
                             n_resamples=n_resamples, rng=3, dtype=np.float64,
                             **kwargs)
    blocks = call()
    assert on_blocks and max(on_blocks) == 7
    with monkeypatch.context() as m:
        m.setattr(resampling, "_in_memory_bytes", lambda *args: 0.0)
        whole = call()
    assert blocks.pvalue == whole.pvalue
    top = np.abs(whole.null_distribution).max()
    assert_allclose(blocks.statistic, whole.statistic, rtol=1e-12,
                    atol=1e-12 * top)
    assert_allclose(blocks.null_distribution, whole.null_distribution,
                    rtol=1e-12, atol=1e-12 * top)
    assert_array_equal(np.asarray(blocks.gamma, dtype=float),
                       np.asarray(whole.gamma, dtype=float))


@pytest.mark.parametrize("n, m", [(13, 13), (13, 20), (20, 13)])
@pytest.mark.parametrize("method", ["wild_bootstrap", "aggregated"])
def test_block_path_of_pairs_and_swaps(on_blocks, monkeypatch, n, m, method):
    """The wild bootstrap, and the aggregated test's swaps of paired points
    at unequal sizes (the unpaired points in ranges of their own)."""
    if method == "wild_bootstrap" and n != m:
        return
    rng = np.random.default_rng(n * m)
    X, Y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) * 1.3
    n_resamples = (260, 260) if method == "aggregated" else 260
    call = functools.partial(km.mmd_test, X, Y, method=method,
                             n_resamples=n_resamples, rng=4, gamma=None,
                             dtype=np.float64)
    blocks = call()
    assert on_blocks
    with monkeypatch.context() as mp:
        mp.setattr(resampling, "_in_memory_bytes", lambda *args: 0.0)
        whole = call()
    assert blocks.pvalue == whole.pvalue
    top = np.abs(whole.null_distribution).max()
    assert_allclose(blocks.null_distribution, whole.null_distribution,
                    rtol=1e-12, atol=1e-12 * top)
    if method == "aggregated":
        assert_array_equal(blocks.pvalues, whole.pvalues)
        assert_allclose(blocks.thresholds, whole.thresholds, rtol=1e-12)


@pytest.mark.parametrize("unbiased", [True, False])
def test_block_path_in_batches_of_resamples(on_blocks, monkeypatch, unbiased):
    """A budget that holds the draws of one block of 256 resamples only:
    the kernel is computed again for each batch, the statistics are those
    of one batch."""
    rng = np.random.default_rng(21)
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(26, 2)) + 0.2
    call = functools.partial(km.mmd_test, X, Y, n_resamples=700, rng=8,
                             unbiased=unbiased)
    monkeypatch.setattr(draws, "RESAMPLE_BLOCK", 256)
    monkeypatch.setattr(draws, "CAST_ROWS", 8)
    budget = (56 * 512 + 8 * 10 * 512 + 2 * 9 * 8 * 1000) / 2**20
    blocks = call(working_memory=budget)
    assert len(on_blocks) > 1
    with monkeypatch.context() as mp:
        mp.setattr(resampling, "_in_memory_bytes", lambda *args: 0.0)
        whole = call()
    assert blocks.pvalue == whole.pvalue
    assert_allclose(blocks.null_distribution, whole.null_distribution,
                    rtol=1e-12, atol=1e-15)


@pytest.mark.slow  # (the block path gives the in-memory statistics: tested above)
@pytest.mark.parametrize("method, n, m, n_resamples", NULL_CASES[:-1])
def test_null_rejection_rate_on_the_block_path(on_blocks, method, n, m,
                                               n_resamples):
    """The level tests above, on the block path."""
    pvalues, rejects = _null_pvalues(method, n, m, n_resamples, seed=2020)
    _assert_decisions(pvalues, rejects)
    low, high = scipy.stats.binom.interval(0.999, REPS, ALPHA)
    assert low <= rejects.sum() <= high, (method, rejects.mean())
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > 1e-3, method


def test_a_budget_too_small_is_said_in_the_users_terms():
    rng = np.random.default_rng(22)
    X, Y = rng.normal(size=(300, 2)), rng.normal(size=(200, 2))
    with pytest.raises(ValueError, match=r"mmd_test needs about .* GiB of "
                       r"working memory for X and Y of n=300 and m=200 objects "
                       r"with method='permutation'.*budget of 0\.01 MiB.*"
                       r"working_memory=.*method='linear' with feature_map.*"
                       r"subsample"):
        km.mmd_test(X, Y, working_memory=0.01)
    with pytest.raises(ValueError, match="working_memory must be a positive"):
        km.mmd_test(X, Y, working_memory=-1)
    with pytest.raises(TypeError, match="working_memory must be a number"):
        km.mmd_test(X, Y, working_memory="1GB")


def test_the_budget_is_a_package_setting():
    rng = np.random.default_rng(23)
    X, Y = rng.normal(size=(300, 2)), rng.normal(size=(200, 2))
    with km.config_context(working_memory=0.01):
        with pytest.raises(ValueError, match=r"budget of 0\.01 MiB"):
            km.mmd_test(X, Y)
        assert km.get_config()["working_memory"] == 0.01
        # the call's argument wins
        km.mmd_test(X, Y, working_memory=64, n_resamples=19, rng=0)
    assert km.get_config()["working_memory"] == 1024


def _band_stat(X, Y, kernel, gamma, signs, R):
    """The incomplete U-statistic of h over the pairs 0 < |i - j| <= R,
    with Rademacher `signs`, written directly."""
    H = (point_kernel(X, X, kernel, gamma) + point_kernel(Y, Y, kernel, gamma)
         - point_kernel(X, Y, kernel, gamma) - point_kernel(Y, X, kernel, gamma))
    i, j = np.indices(H.shape)
    H[(np.abs(i - j) > R) | (i == j)] = 0
    pairs = int(((i < j) & (j - i <= R)).sum())
    return signs @ H @ signs / (2 * pairs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, m, band", [(70, 70, 1), (70, 70, 9), (45, 61, 13),
                                     (61, 45, 40), (50, 50, 49)])
def test_incomplete_wild_bootstrap_against_a_direct_statistic(n, m, band, dtype):
    """MMDAggInc's statistic: the pairs within R diagonals only, the
    objects beyond the min(n, m) pairs left out; R >= p - 1 is the
    complete statistic."""
    rng = np.random.default_rng(n + m + band)
    X, Y = rng.normal(size=(n, 3)), rng.normal(size=(m, 3)) * 1.3
    p = min(n, m)
    res = km.mmd_test(X, Y, method="aggregated", kernel="laplacian",
                      gamma=[0.3], incomplete=band, n_resamples=(150, 99), rng=2,
                      dtype=dtype)
    E = _draws(2, 250, p, 2 * p, "wild_bootstrap")
    stats = np.array([_band_stat(X[:p], Y[:p], "laplacian", 0.3, E[:, j], band)
                      for j in range(151)])
    spread = np.ptp(stats[1:])
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(
        rtol=0, atol=1e-6 * spread)
    assert_allclose(res.statistic, stats[:1], **tol)
    assert_allclose(res.null_distribution[0], stats[1:], **tol)
    if band >= p - 1:
        whole = km.mmd_test(X[:p], Y[:p], method="aggregated",
                            kernel="laplacian", gamma=[0.3],
                            n_resamples=(150, 99), rng=2, dtype=dtype)
        assert whole.pvalue == res.pvalue
        assert_allclose(whole.null_distribution, res.null_distribution,
                        rtol=1e-6)


def test_incomplete_is_a_randomization_test():
    """A sign flip of e_i is the incomplete statistic of the samples with
    x_i and y_i swapped; the wild bootstrap's own method takes it too, and
    its p-value is that of the aggregated test of one kernel."""
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(80, 2)), rng.normal(size=(80, 2)) + 0.3
    res = km.mmd_test(X, Y, method="wild_bootstrap", gamma=0.5, incomplete=6,
                      n_resamples=149, rng=3, dtype=np.float64)
    E = _draws(3, 150, 80, 160, "wild_bootstrap")
    flip = E[:, 11] < 0
    Xs, Ys = np.where(flip[:, None], Y, X), np.where(flip[:, None], X, Y)
    assert_allclose(_band_stat(Xs, Ys, "rbf", 0.5, np.ones(80), 6),
                    res.null_distribution[10], rtol=1e-11)
    agg = km.mmd_test(X, Y, method="aggregated", kernel="rbf", gamma=[0.5],
                      incomplete=6, n_resamples=(99, 50), rng=3,
                      dtype=np.float64)
    assert_allclose(agg.null_distribution[0], res.null_distribution[:99],
                    rtol=1e-12)


def test_incomplete_level():
    """Exact: the rejection rate under the null within the binomial
    interval, over 200 samples of a heavy-tailed distribution."""
    rejects = 0
    for rep in range(200):
        rng = np.random.default_rng([77, rep])
        X, Y = rng.standard_t(3, size=(60, 2)), rng.standard_t(3, size=(60, 2))
        rejects += km.mmd_test(X, Y, method="aggregated", incomplete=5,
                               n_resamples=(60, 40), rng=rep, workers=1).reject
    low, high = scipy.stats.binom.interval(0.999, 200, 0.05)
    assert low <= rejects <= high


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "permutation", "incomplete": 5}, "not method='permutation'"),
    ({"method": "fuse", "incomplete": 5}, "not method='fuse'"),
    ({"method": "aggregated", "incomplete": 0}, "incomplete"),
    ({"method": "aggregated", "incomplete": 2.5}, "incomplete"),
    ({"method": "wild_bootstrap", "incomplete": 3, "feature_map": 10},
     "feature_map"),
])
def test_incomplete_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    with pytest.raises((ValueError, TypeError), match=match):
        km.mmd_test(X, Y, **kwargs)


@pytest.mark.parametrize("method", ["aggregated", "fuse"])
@pytest.mark.parametrize("n, m", [(30, 30), (25, 36)])
def test_float32_products_fall_back_beyond_its_range(method, n, m):
    """Kernel values beyond float32's reach (here a precomputed matrix
    times 1e30) are multiplied in float64: the statistics are 1e30 times
    those of the matrix, the p-values the same."""
    rng = np.random.default_rng(n * m)
    Z = np.concatenate([rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) + 0.5])
    K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1))
    labels = np.repeat([0, 1], [n, m])
    kwargs = dict(kernel="precomputed", method=method, rng=1,
                  n_resamples=(99, 99) if method == "aggregated" else 199)
    small = km.mmd_test(K, labels, dtype=np.float64, **kwargs)
    huge = km.mmd_test(K * 1e30, labels, **kwargs)
    assert huge.pvalue == small.pvalue
    if method == "aggregated":
        assert_allclose(huge.null_distribution, 1e30 * small.null_distribution,
                        rtol=1e-10)
