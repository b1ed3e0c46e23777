"""The energy kernel, added as one spec (issue 51's proof of the plug-in
point): the distance-induced kernel ``(|x| + |y| - |x - y|) / 2`` of points
(Sejdinovic et al., 2013), whose squared MMD is half the energy distance
(Szekely and Rizzo), available in the set kernels, every method of
`mmd_test`, `NystroemMap` and on Dask, checked against a NumPy reference
written here (and against hyppo's `Energy` in studies/energy)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import kernelmaps as km

RNG = np.random.default_rng(3)
X = RNG.normal(size=(30, 3))
Y = RNG.normal(size=(40, 3)) + 0.3


def energy_u(x, y):
    """The energy distance's U-statistic: 2 E|X - Y| - E|X - X'| -
    E|Y - Y'|, the means over pairs of distinct points."""
    n, m = len(x), len(y)
    return (2 * cdist(x, y).mean() - cdist(x, x).sum() / (n * (n - 1))
            - cdist(y, y).sum() / (m * (m - 1)))


def energy_v(x, y):
    """Its V-statistic (every pair, a point with itself too)."""
    return 2 * cdist(x, y).mean() - cdist(x, x).mean() - cdist(y, y).mean()


def test_the_test_statistic_is_half_the_energy_distance():
    result = km.mmd_test(X, Y, kernel="energy", rng=0)
    assert_allclose(result.statistic, energy_u(X, Y) / 2, rtol=1e-12)
    # hyppo's Energy (bias=False) is this statistic times a factor of the
    # sample sizes (derived from its U-centred distance covariance, checked
    # against hyppo in studies/energy): 2.0567... for 30 and 40 points
    n, m = len(X), len(Y)
    N = n + m
    factor = 2 * N**3 * (n - 1) * (m - 1) / (n * m * (N - 1) * (N - 2) * (N - 3))
    assert factor == pytest.approx(2.056708147243323, rel=1e-15)


def test_the_set_kernels_take_it():
    sets = [RNG.normal(size=(int(s), 2)) for s in RNG.integers(3, 9, 6)]
    K = km.sum_match_kernel(sets, kernel="energy")
    norm = np.linalg.norm
    expected = np.array([[np.mean((norm(a, axis=1)[:, None] + norm(b, axis=1)
                                   - cdist(a, b)) / 2) for b in sets]
                         for a in sets])
    assert_allclose(K, expected, rtol=1e-12)
    D2 = km.mmd(sets, kernel="energy", squared=True)
    assert_allclose(D2, [[energy_v(a, b) / 2 for b in sets] for a in sets],
                    rtol=1e-10, atol=1e-13)
    U = km.mmd(sets, kernel="energy", squared=True, unbiased=True)
    assert_allclose(U[0, 1], energy_u(sets[0], sets[1]) / 2, rtol=1e-10)


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap",
                                    "aggregated", "fuse", "cross"])
def test_every_method_on_points(method):
    x, y = (X, Y) if method != "wild_bootstrap" else (X, Y[:30])
    result = km.mmd_test(x, y, kernel="energy", method=method, rng=0)
    assert 0 < result.pvalue <= 1
    # a clear shift is found, equal samples are not
    far = km.mmd_test(x, y + 2.0, kernel="energy", method=method, rng=0)
    assert far.pvalue < 0.05


def test_on_sets_nystroem_and_dask():
    sets = km.Bags.from_list([RNG.normal(size=(8, 2)) + 0.2 * (i % 2)
                              for i in range(40)])
    params = {"kernel": "energy"}
    result = km.mmd_test(sets[:20], sets[20:], kernel="mean_map",
                         kernel_params=params, n_resamples=99, rng=0)
    assert 0 < result.pvalue <= 1
    K = km.sum_match_kernel(sets, kernel="energy")
    F = km.NystroemMap(40, kernel="mean_map", kernel_params=params,
                       rng=0).fit_transform(sets)
    assert_allclose(F @ F.T, K, atol=1e-8 * np.abs(K).max())
    dask = pytest.importorskip("dask.array")
    lazy = km.Bags(dask.from_array(sets.points, chunks=64), sets.offsets)
    assert_allclose(km.sum_match_kernel(lazy, kernel="energy").compute(), K,
                    rtol=1e-12)


def test_it_has_no_scale():
    with pytest.raises(ValueError, match="has no scale"):
        km.mmd_test(X, Y, kernel="energy", gamma=1.0)


def test_the_linear_test_asks_for_a_feature_map():
    # the energy kernel has no random features of its own: the linear test
    # says so, and takes a map given
    with pytest.raises(TypeError, match="needs feature_map"):
        km.mmd_test(X, Y, kernel="energy", method="linear")
    fmap = km.RandomFourierFeatures(64, rng=0)
    result = km.mmd_test(X, Y + 2.0, kernel="energy", method="linear",
                         feature_map=fmap)
    assert result.pvalue < 0.05


def test_set_kernel_takes_it():
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    sets = km.Bags.from_list([RNG.normal(size=(6, 2)) for _ in range(8)])
    est = SetKernel(kernel_params={"kernel": "energy"})
    assert_allclose(est.fit_transform(sets),
                    km.sum_match_kernel(sets, kernel="energy"), rtol=1e-12)
    assert_allclose(est.transform(sets[:3]),
                    km.sum_match_kernel(sets[:3], sets, kernel="energy"),
                    rtol=1e-12)
