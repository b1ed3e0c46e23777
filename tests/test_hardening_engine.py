"""Regression tests of the engine's hardening: thread counts (the workers
argument of every entry point). The tests of one function's values at the
edges of the floating-point range are in that function's test module."""

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_array_equal

import kernelmaps as km
from kernelmaps._parallel import available_cpus, resolve_workers

from ._helpers import sets_and_histograms

SETS, HIST = sets_and_histograms()

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
