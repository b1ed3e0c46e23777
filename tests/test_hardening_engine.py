"""Regression tests of the engine's hardening: thread counts, exact
set kernels at every scale, the Jensen-Shannon kernel without cancellation,
histogram kernels at the edges of the floating-point range."""

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._parallel import available_cpus, resolve_workers

from ._references import additive_kernel, sum_match

RNG = np.random.default_rng(42)
SETS = [RNG.normal(size=(n, 4)) for n in (3, 17, 9, 30)]
HIST = RNG.dirichlet(np.ones(12), size=7)

# Every entry point with a `workers` argument, on small data.
PARALLEL = {
    "sum_match_kernel": lambda w: km.sum_match_kernel(SETS, workers=w),
    "mmd": lambda w: km.mmd(SETS, SETS[:2], workers=w),
    "mmd_kernel": lambda w: km.mmd_kernel(SETS, workers=w),
    "renyi_divergence": lambda w: km.renyi_divergence(SETS, k=2, workers=w),
    "additive_chi2_kernel": lambda w: km.additive_chi2_kernel(HIST, workers=w),
    "chi2_distance": lambda w: km.chi2_distance(HIST, workers=w),
    "exp_chi2_kernel": lambda w: km.exp_chi2_kernel(HIST, workers=w),
    "intersection_kernel": lambda w: km.intersection_kernel(HIST, workers=w),
    "hellinger_kernel": lambda w: km.hellinger_kernel(HIST, workers=w),
    "js_kernel": lambda w: km.js_kernel(scipy.sparse.csr_matrix(HIST), HIST,
                                        workers=w),
    "gaussian_expected_kernel": lambda w: km.gaussian_expected_kernel(
        HIST[:, :3], np.tile(np.eye(3), (7, 1, 1)), workers=w),
    "RandomDistributionFeatures": lambda w: km.RandomDistributionFeatures(
        16, rng=0, gamma=1 / 4).fit(SETS).transform(SETS, workers=w),
    "Chi2DirectMap": lambda w: km.Chi2DirectMap().fit(HIST).transform(HIST,
                                                                    workers=w),
    "AnchorMap": lambda w: km.AnchorMap().fit(HIST).transform(HIST, workers=w),
    "ExpChi2Features": lambda w: km.ExpChi2Features(8, rng=0).fit(HIST).transform(
        HIST, workers=w),
}


@pytest.mark.parametrize("name", list(PARALLEL))
@pytest.mark.parametrize("workers", [100_000, 30_000, 2**31, 10**100])
def test_huge_workers_are_capped(name, workers):
    """Used to segfault (100_000), start 30,000 threads, or overflow."""
    assert_array_equal(PARALLEL[name](workers), PARALLEL[name](1))


def test_workers_resolve_to_the_cpus_of_this_process():
    cpus = available_cpus()
    assert 1 <= cpus <= (len(__import__("os").sched_getaffinity(0)))
    assert resolve_workers(10**6) == cpus
    assert resolve_workers(-1) == cpus
    assert resolve_workers(None) <= cpus
    assert resolve_workers(np.int64(1)) == 1


@pytest.mark.parametrize("workers", [3.5, "2", np.float64(2.0), True, [2]])
def test_workers_of_the_wrong_type(workers):
    with pytest.raises(TypeError, match="workers"):
        km.sum_match_kernel(SETS, workers=workers)


@pytest.mark.parametrize("workers", [0, -100])
def test_workers_out_of_range(workers):
    with pytest.raises(ValueError, match="workers"):
        km.additive_chi2_kernel(HIST, workers=workers)


# -- rbf and laplacian set kernels -----------------------------------------


# (gamma = 1e3 / scale**power makes the kernel the identity on these sets:
# exact all the same, with a DegenerateWarning)
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("dtype, scales, rtol, atol", [
    (np.float64, [1e-150, 1e-50, 1.0, 1e3, 1e50, 1e150], 1e-12, 0.0),
    # float32 kernel values below its range (about 1e-37) are 0
    (np.float32, [1e-30, 1e-10, 1.0, 1e3, 1e10, 1e30], 1e-5, 1e-37),
])
def test_set_kernels_exact_at_every_scale(simd_path, kernel, dtype, scales, rtol,
                                          atol):
    """Used to lose the self terms through |x|^2 + |y|^2 - 2 <x, y>: 8 % off
    for float32 points of spread 1e3 at gamma=1 (issue 17, defect 3)."""
    rng = np.random.default_rng(1)
    for scale in scales:
        # Far from the origin (offset 100 spreads) and spread `scale`.
        sets = [((rng.normal(size=(n, 3)) + 100) * scale).astype(dtype)
                for n in (20, 7, 13)]
        power = 2 if kernel == "rbf" else 1
        for gamma in (1e-3 / scale**power, 1.0 / scale**power,
                      1e3 / scale**power):
            K = km.sum_match_kernel(sets, kernel=kernel, gamma=gamma)
            ref = sum_match(sets, sets, kernel, gamma)
            assert_allclose(K, ref, rtol=rtol, atol=atol,
                            err_msg=f"scale={scale} gamma={gamma}")


def test_the_issue_example():
    rng = np.random.default_rng(0)
    X = [(rng.normal(size=(20, 3)) * 1e3).astype(np.float32) for _ in range(3)]
    # Every cross term underflows: the diagonal is the self terms, 1 / 20
    # (a kernel that is the identity, which a DegenerateWarning says).
    with pytest.warns(km.DegenerateWarning, match="is 0 between all points"):
        K = km.sum_match_kernel(X, gamma=1.0)
    assert_allclose(np.diag(K), 0.05, rtol=1e-7)
    with pytest.warns(km.DegenerateWarning, match="is 0 between all points"):
        D2 = km.mmd(X, gamma=1.0, unbiased=True, squared=True)
    assert_array_equal(D2, 0.0)


def test_a_pair_does_not_depend_on_the_other_sets():
    """Used to give 0.0 for mmd([A, 1e300 A], [B])[0, 0] (0.733 alone)."""
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(15, 2)), rng.normal(size=(11, 2)) + 0.5
    alone = km.mmd([A], [B])[0, 0]
    assert alone > 0.1
    for other in (1e300 * A, 1e-300 * A, A + 1e200):
        assert_allclose(km.mmd([A, other], [B])[0, 0], alone, rtol=1e-13)
        assert_allclose(km.sum_match_kernel([other, A], [B])[1, 0],
                        km.sum_match_kernel([A], [B])[0, 0], rtol=1e-13)


def test_huge_gamma_for_huge_points():
    # Computable: the points in bandwidth units stay finite.
    assert_array_equal(km.sum_match_kernel([np.array([[1e300, 0.0]])],
                                           gamma=1e300), [[1.0]])
    # Not computable in float64: gamma * |x|^2 is beyond its range.
    with pytest.raises(ValueError, match="gamma"):
        km.sum_match_kernel([np.array([[1.7e308, 0.0]])], gamma=1e308)


def test_degree_beyond_a_c_int():
    with pytest.raises(ValueError, match="degree"):
        km.sum_match_kernel(SETS, kernel="polynomial", degree=10**12)


# -- histograms -------------------------------------------------------------


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
@pytest.mark.parametrize("ratio", [1.0, 1e6, 1e12, 1e16, 1e-30])
@pytest.mark.parametrize("sparse", [False, True])
def test_js_kernel_without_cancellation(simd_path, dtype, rtol, ratio, sparse):
    """Dense float32 used to be 17 % off for rows summing to 1 against rows
    summing to 1e6, float64 at ratios 1e12-1e16 (issue 17, defect 4)."""
    rng = np.random.default_rng(5)
    X = rng.dirichlet(np.ones(21), size=5).astype(dtype)
    Y = (rng.dirichlet(np.ones(21), size=4) * ratio).astype(dtype)
    got = km.js_kernel(scipy.sparse.csr_matrix(X) if sparse else X, Y)
    assert_allclose(got, additive_kernel("js", X, Y), rtol=rtol, atol=0)


@pytest.mark.parametrize("name", ["additive_chi2_kernel", "intersection_kernel",
                                  "js_kernel", "hellinger_kernel"])
@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("sparse", [False, True])
def test_histogram_kernels_are_homogeneous(name, scale, sparse):
    """The kernels are homogeneous of degree 1: scaled inputs give scaled
    results, with no sum overflowing or underflowing on the way."""
    f = getattr(km, name)
    X = HIST * scale
    got = f(scipy.sparse.csr_matrix(X) if sparse else X)
    assert np.isfinite(got).all()
    assert_allclose(got, f(HIST) * scale, rtol=1e-12)


def test_histogram_kernel_overflow_raises():
    X = np.full((2, 3), 1.5e308)
    with pytest.raises(ValueError, match="overflow"):
        km.additive_chi2_kernel(X)


@pytest.mark.parametrize("kernel", ["chi2", "js", "intersection", "hellinger"])
@pytest.mark.parametrize("n_neighbors, weights", [(1, "uniform"), (3, "distance")])
def test_anchor_map_of_csr_without_stored_values(kernel, n_neighbors, weights):
    """An all-zero CSR matrix (no stored value) was read as dense input: out
    of bounds, heap corruption (found by the fuzz suite)."""
    f = km.AnchorMap(kernel, 6, n_neighbors=n_neighbors, weights=weights).fit(HIST)
    Z = f.transform(scipy.sparse.csr_matrix(np.zeros_like(HIST)))
    assert scipy.sparse.issparse(Z) and Z.nnz == 0
    assert Z.shape == (len(HIST), f.n_features_out)
