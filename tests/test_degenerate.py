"""Every kernel matrix that carries no information says so: a constant one
(objects that are equal as the kernel sees them, or a scale far too small
for their distances), or, for a kernel exp(-gamma d), the identity (a scale
far too large), with a DegenerateWarning whose message gives the cause; and
never a warning whose cause is false (warnings are errors in this suite)."""

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose

import kernelmaps as km
from kernelmaps import DegenerateWarning

RNG = np.random.default_rng(0)
ONE = RNG.normal(size=(5, 2))
SAME = [ONE.copy() for _ in range(4)]           # equal sets
SETS = [RNG.normal(size=(5, 2)) for _ in range(4)]
EQUAL = "between all {}: they are equal as far as the kernel sees"
SMALL = "with gamma=1e-300 is 1 between all {}: gamma is far too small"
LARGE = "with gamma=1e\\+300 is 0 between all {}: gamma is far too large"
ARBITRARY = "gamma, from the median of distances that are all 0, is arbitrary"


def set_kernel(*args, **kwargs):
    return pytest.importorskip("kernelmaps.sklearn").SetKernel(*args, **kwargs)


CASES = {
    "sum_match_kernel, equal sets": (
        lambda: km.sum_match_kernel(SAME), "mean map kernel is 0.50.* " +
        EQUAL.format("sets of X")),
    "sum_match_kernel, equal points": (
        lambda: km.sum_match_kernel([np.ones((3, 2))] * 3),
        "rbf kernel is 1 between all points: the points are all equal"),
    "mmd_kernel, equal sets": (
        lambda: km.mmd_kernel(SAME), "MMD kernel is 1 " + EQUAL.format("sets of X")),
    "mmd_kernel, gamma2 tiny": (
        lambda: km.mmd_kernel(SETS, gamma2=1e-300), "MMD kernel " +
        SMALL.format("sets of X")),
    "mmd_kernel, gamma2 huge": (
        lambda: km.mmd_kernel(SETS, gamma2=1e300), "MMD kernel " +
        LARGE.format("sets of X")),
    "divergence_kernel, zero divergences": (
        lambda: km.divergence_kernel(np.zeros((3, 3))), ARBITRARY),
    "divergence_kernel, gamma tiny": (
        lambda: km.divergence_kernel(1 - np.eye(3), gamma=1e-300),
        "divergence kernel " + SMALL.format("objects of D")),
    "divergence_kernel of Renyi divergences, equal sets": (
        lambda: km.divergence_kernel(km.renyi_divergence(SAME, k=2)),
        "divergence kernel is 1 " + EQUAL.format("objects of D")),
    "sliced_wasserstein_kernel, equal sets": (
        lambda: km.sliced_wasserstein_kernel(SAME, rng=0), ARBITRARY),
    "sliced_wasserstein_kernel, equal weighted sets": (
        lambda: km.sliced_wasserstein_kernel(km.Bags.from_list(
            SAME, weights=[np.arange(5.0)] * 4), rng=0), ARBITRARY),
    "sliced_wasserstein_kernel, gamma tiny": (
        lambda: km.sliced_wasserstein_kernel(SETS, gamma=1e-300, rng=0),
        "sliced-Wasserstein kernel " + SMALL.format("sets of X")),
    "sliced_wasserstein_kernel, gamma huge": (
        lambda: km.sliced_wasserstein_kernel(SETS, gamma=1e300, rng=0),
        "sliced-Wasserstein kernel " + LARGE.format("sets of X")),
    "sliced_wasserstein_kernel, X and Y equal": (
        lambda: km.sliced_wasserstein_kernel(SAME[:2], SAME[2:], gamma=1.0,
                                             rng=0),
        "is 1 " + EQUAL.format("sets of X and Y")),
    "gaussian_expected_kernel, equal Gaussians": (
        lambda: km.gaussian_expected_kernel(np.zeros((3, 2)), np.ones(3)),
        "rbf expected kernel is 0.2 " + EQUAL.format("Gaussians of means and covs")),
    "gaussian_expected_kernel, gamma tiny": (
        lambda: km.gaussian_expected_kernel(RNG.normal(size=(3, 2)), np.zeros(3),
                                            gamma=1e-300),
        "rbf expected kernel " + SMALL.format("Gaussians of means and covs")),
    "level2_kernel, equal embeddings": (
        lambda: km.level2_kernel(np.ones((3, 3)), np.ones(3)),
        "level-2 rbf kernel is 1 " + EQUAL.format("embeddings of K")),
    "SetKernel sliced_wasserstein, equal sets": (
        lambda: set_kernel("sliced_wasserstein", rng=0).fit_transform(SAME),
        ARBITRARY),
    "SetKernel mean_map, equal sets": (
        lambda: set_kernel().fit_transform(SAME), EQUAL.format("sets of X")),
    "SetKernel renyi, equal sets": (
        lambda: set_kernel("renyi", k=2).fit_transform(SAME), ARBITRARY),
    "NystroemMap, equal sets": (
        lambda: km.NystroemMap(3, kernel="sliced_wasserstein", rng=0).fit(SAME),
        "sliced-Wasserstein kernel is 1 " + EQUAL.format("landmarks of X")
        + ".*" + ARBITRARY),
    "additive_chi2_kernel, equal histograms": (
        lambda: km.additive_chi2_kernel(np.tile([0.25, 0.75], (3, 1))),
        "additive chi2 kernel is 1 " + EQUAL.format("histograms of X")),
    "js_kernel of CSR, equal histograms": (
        lambda: km.js_kernel(scipy.sparse.csr_matrix(np.tile([0, 0.25, 0.75],
                                                             (3, 1)))),
        "js kernel is 1 " + EQUAL.format("histograms of X")),
    "intersection_kernel, zero histograms": (
        lambda: km.intersection_kernel(np.zeros((2, 3)), np.eye(3)),
        "intersection kernel is 0 between all histograms of X and Y \\(its "
        "values are all 0"),
    "exp_chi2_kernel, equal histograms": (
        lambda: km.exp_chi2_kernel(np.tile([0.25, 0.75], (3, 1))),
        "exp chi2 kernel is 1 " + EQUAL.format("histograms of X")),
    "exp_chi2_kernel, beta tiny": (
        lambda: km.exp_chi2_kernel(np.eye(3), beta=1e-300),
        "exp chi2 kernel with beta=1e-300 is 1 between all histograms of X: "
        "beta is far too small"),
    "exp_chi2_kernel, beta huge": (
        lambda: km.exp_chi2_kernel(np.eye(3), beta=1e300),
        "exp chi2 kernel with beta=1e\\+300 is 0 between all histograms of X: "
        "beta is far too large"),
    "mmd_test, equal points": (
        lambda: km.mmd_test(np.zeros((10, 2)), np.zeros((10, 2)), rng=0),
        "rbf kernel is the same between all distinct points of X and Y: they "
        "are equal"),
    "mmd_test, equal sets": (
        lambda: km.mmd_test(SAME, SAME, kernel="sliced_wasserstein", rng=0),
        "sliced_wasserstein kernel is the same between all distinct objects"),
    "mmd_test, mean map of equal sets": (
        lambda: km.mmd_test(SAME, SAME, kernel="mean_map", rng=0),
        "mean_map kernel is the same between all distinct objects"),
}


@pytest.mark.parametrize("name", CASES)
def test_every_uninformative_kernel_warns(name):
    call, match = CASES[name]
    with pytest.warns(DegenerateWarning, match=match) as caught:
        call()
    assert len(caught) == 1  # one warning, at the user's line
    assert caught[0].filename == __file__


def test_constant_kernel_values_are_still_exact():
    with pytest.warns(DegenerateWarning):
        K = km.sliced_wasserstein_kernel(SAME, rng=0)
    assert_allclose(K, 1.0, rtol=0, atol=0)
    with pytest.warns(DegenerateWarning):
        est = set_kernel("sliced_wasserstein", rng=0).fit(SAME)
    assert est.gamma_ == 1.0


def test_no_warning_without_a_cause():
    # (warnings are errors here) distinct sets, one set, a cross kernel of
    # one row, nearly equal sets that a kernel still tells apart
    km.sliced_wasserstein_kernel(SETS, rng=0)
    km.sliced_wasserstein_kernel(SAME[:1], rng=0)
    km.sliced_wasserstein_kernel(SAME[:1], SAME, gamma=1.0, rng=0)
    near = [ONE + 1e-6 * i for i in range(4)]
    km.sum_match_kernel(near)
    km.mmd_kernel(near)
    km.divergence_kernel(np.full((3, 3), 1e-300) - 1e-300 * np.eye(3))


@pytest.mark.parametrize("normalize", [False, True])
def test_underflowing_weights_are_not_a_tiny_gamma(normalize):
    # weights of 1e-300: the products of two weights underflow to 0, and so
    # do the unnormalised sums; that is not a point kernel 1 between all
    # points (the false "gamma is far too small" it gave before)
    bags = km.Bags.from_list(SETS, weights=[np.full(5, 1e-300)] * 4)
    K = km.sum_match_kernel(bags, normalize=normalize)
    if normalize:
        assert_allclose(K, km.sum_match_kernel(SETS), rtol=1e-12)
    else:
        assert not K.any()
