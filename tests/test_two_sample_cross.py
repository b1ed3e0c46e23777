"""mmd_test(method="cross"): the cross-MMD test of Shekhar, Kim and Ramdas
(NeurIPS 2022), against a NumPy reference of its statistic, for its level
(asymptotic) and power, on objects and a precomputed matrix, threads and
bad input."""

import numpy as np
import pytest
import scipy.stats
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import kernelmaps as km


def reference(K, n, m):
    """The studentised cross MMD^2 and its p-value from the pooled kernel
    matrix K of n + m objects (X first), halves in the order given."""
    n1, m1 = n // 2, m // 2
    rows = np.r_[0:n1, n:n + m1]
    x2, y2 = np.arange(n1, n), np.arange(n + m1, n + m)
    g = K[np.ix_(rows, x2)].mean(axis=1) - K[np.ix_(rows, y2)].mean(axis=1)
    gx, gy = g[:n1], g[n1:]
    t = (gx.mean() - gy.mean()) / np.sqrt(gx.var(ddof=1) / n1
                                          + gy.var(ddof=1) / m1)
    return t, scipy.stats.norm.sf(t)


def rbf(Z, gamma):
    return np.exp(-gamma * cdist(Z, Z, "sqeuclidean"))


@pytest.mark.parametrize("sizes", [(4, 5), (61, 40), (700, 3000)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_statistic_is_the_reference(sizes, dtype):
    n, m = sizes
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3)).astype(dtype)
    Y = rng.normal(size=(m, 3))
    Y[:, 0] += 0.3
    Y = Y.astype(dtype)
    res = km.mmd_test(X, Y, method="cross", gamma=0.4)
    t, p = reference(rbf(np.concatenate([X, Y]).astype(np.float64), 0.4), n, m)
    # (float32 points: the kernel in float32, the sums in float64)
    tol = 1e-9 if dtype == np.float64 else 1e-5
    assert_allclose(res.statistic, t, rtol=tol)
    assert_allclose(res.pvalue, p, rtol=100 * tol, atol=1e-300)
    assert res.null_distribution is None and res.method == "cross"
    assert res.reject == (res.pvalue <= 0.05) and res.gamma == 0.4


@pytest.mark.parametrize("scale", [1e-200, 1e-100, 1e100, 1e160, 1e200])
def test_energy_statistic_at_any_scale(scale):
    # the energy kernel is homogeneous: the studentised statistic of the
    # points times any scale is the reference's of the points (before, its
    # variance overflowed or vanished beyond 1e154 and below 1e-154: a
    # statistic of 0)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    Y = rng.normal(size=(23, 3)) + 0.7
    Z = np.concatenate([X, Y])
    norms = np.linalg.norm(Z, axis=1)
    K = (norms[:, None] + norms[None, :] - cdist(Z, Z)) / 2
    t, p = reference(K, 20, 23)
    res = km.mmd_test(X * scale, Y * scale, method="cross", kernel="energy")
    assert_allclose(res.statistic, t, rtol=1e-9)
    assert_allclose(res.pvalue, p, rtol=1e-7)
    # points whose kernel values overflow float64: refused (a NaN before)
    with pytest.raises(ValueError, match=r"energy kernel values .* overflow"):
        km.mmd_test(X * 5e307, Y * 5e307, method="cross", kernel="energy")


def test_blocks_threads_and_budget_do_not_change_it(monkeypatch):
    from kernelmaps._two_sample import cross

    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(900, 4)), rng.normal(size=(800, 4))
    want = km.mmd_test(X, Y, method="cross", workers=1)
    monkeypatch.setattr(cross, "CROSS_BLOCK", 100)  # many blocks
    got = km.mmd_test(X, Y, method="cross", workers=2, working_memory=1)
    assert_allclose(got.statistic, want.statistic, rtol=1e-12)
    assert got.gamma == want.gamma


def test_level_and_power():
    # the level is asymptotic: at 150 + 150 points, 300 tests at 0.1 reject
    # within a few standard errors of 0.1
    p = np.array([km.mmd_test(*np.random.default_rng(s).normal(size=(2, 150, 2)),
                              method="cross", gamma=0.5).pvalue
                  for s in range(300)])
    se = np.sqrt(0.1 * 0.9 / 300)
    assert abs(np.mean(p <= 0.1) - 0.1) < 4 * se
    assert scipy.stats.kstest(p, "uniform").pvalue > 1e-3
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(2000, 8)), rng.normal(size=(2000, 8))
    Y[:, 0] += 0.2
    assert km.mmd_test(X, Y, method="cross").pvalue < 0.01


def test_sets_and_precomputed():
    rng = np.random.default_rng(3)
    A = [rng.normal(size=(int(rng.integers(4, 9)), 2)) for _ in range(30)]
    B = [1.4 * rng.normal(size=(int(rng.integers(4, 9)), 2)) for _ in range(26)]
    res = km.mmd_test(A, B, kernel="mean_map", method="cross", gamma=0.5)
    K = km.sum_match_kernel(A + B, gamma=0.5)
    t, p = reference(K, 30, 26)
    assert_allclose(res.statistic, t, rtol=1e-9)
    labels = np.repeat([0, 1], [30, 26])
    pre = km.mmd_test(K, labels, kernel="precomputed", method="cross")
    assert_allclose(pre.statistic, t, rtol=1e-12)
    assert_allclose(pre.pvalue, p, rtol=1e-9)


def test_bad_input():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(3, 2))
    with pytest.raises(ValueError, match="at least 4 objects"):
        km.mmd_test(X, Y, method="cross")
    with pytest.raises(ValueError, match="n_resamples"):
        km.mmd_test(X, X, method="cross", n_resamples=99)
    constant = np.ones((10, 2))
    res = km.mmd_test(constant, constant, method="cross", gamma=1.0)
    assert res.pvalue == 1.0 and res.statistic == 0.0


def test_dask_input_gives_the_same_test(monkeypatch):
    da = pytest.importorskip("dask.array")
    from kernelmaps._two_sample import cross

    monkeypatch.setattr(cross, "CROSS_BLOCK", 100)  # tasks of blocks
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(900, 4)), rng.normal(size=(800, 4))
    Y[:, 0] += 0.2
    want = km.mmd_test(X, Y, method="cross")
    got = km.mmd_test(da.from_array(X, chunks=250), da.from_array(Y, chunks=300),
                      method="cross")
    assert got.statistic == want.statistic and got.pvalue == want.pvalue
    sets = [rng.normal(size=(int(rng.integers(3, 7)), 2)) for _ in range(50)]
    bags = km.Bags.from_list(sets[:24])
    lazy = km.Bags(da.from_array(bags.points, chunks=40), bags.offsets)
    want = km.mmd_test(sets[:24], sets[24:], kernel="mean_map", method="cross",
                       gamma=0.5)
    got = km.mmd_test(lazy, sets[24:], kernel="mean_map", method="cross",
                      gamma=0.5)
    assert got.statistic == want.statistic
