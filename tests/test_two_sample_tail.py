"""The linear test's null tail, P(sum_j w_j chi2_1 > q)
(`_two_sample.chi2_tail.weighted_chi2_sf`): against the chi-square for equal
weights, against Monte Carlo (10^6 draws) over equal, geometric,
one-dominant and Exp(1) weights, against the closed form of paired weights
(a sum of exponentials, in mpmath) and two weights (an integral of
positive terms) far in the tail (relative accuracy),
and on its edges: zero, tiny and one weight, q <= 0, scale."""

import math

import mpmath
import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from numpy.testing import assert_allclose

from kernelmaps._two_sample.chi2_tail import weighted_chi2_sf

PROFILES = {
    "equal": np.full(10, 0.5),
    "geometric": 0.7 ** np.arange(20),
    "one-dominant": np.r_[1.0, np.full(20, 0.1)],
    "exp": np.random.default_rng(7).exponential(size=50),
}


def _monte_carlo(weights, draws, seed, chunk=100_000):
    """`draws` values of sum_j w_j Z_j^2, a chunk of draws at a time (in
    float32: rounding far below the Monte Carlo error)."""
    rng = np.random.default_rng(seed)
    out = np.empty(draws)
    w = weights.astype(np.float32)
    for start in range(0, draws, chunk):
        Z = rng.standard_normal((min(chunk, draws - start), len(w)),
                                dtype=np.float32)
        out[start:start + chunk] = (Z * Z) @ w
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 10, 100])
@pytest.mark.parametrize("scale", [1e-150, 0.3, 7.0, 1e150])
def test_equal_weights_are_a_chi_square(k, scale):
    # exactly (the chi-square's own tail), and by the integral for weights
    # equal to 1e-12 (the answer moves by about 1e-12 of it)
    want_q = scipy.stats.chi2.isf([0.9, 0.5, 0.05, 1e-3, 1e-8, 1e-30], k)
    for q, want in zip(want_q, [0.9, 0.5, 0.05, 1e-3, 1e-8, 1e-30], strict=True):
        w = np.full(k, scale)
        assert_allclose(weighted_chi2_sf(q * scale, w),
                        scipy.stats.chi2.sf(q, k), rtol=1e-10)
        assert_allclose(weighted_chi2_sf(q * scale, w), want, rtol=1e-8)
        if k > 1:
            w[1:] *= 1 - 1e-12 * np.arange(1, k) / k
            assert_allclose(weighted_chi2_sf(q * scale, w),
                            scipy.stats.chi2.sf(q, k), rtol=1e-9)


@pytest.mark.parametrize("draws", [
    200_000, pytest.param(10**6, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(PROFILES))
def test_tail_within_monte_carlo_error(name, draws):
    # at q of tail p from 0.5 to 1e-3 the answer is within 4 standard
    # errors of the Monte Carlo fraction (the four-cumulant chi-square used
    # before is not: one-dominant 0.0608 at p 0.049, Exp(1) 0.0723 at 0.05)
    weights = PROFILES[name]
    sim = _monte_carlo(weights, draws, seed=list(PROFILES).index(name))
    for level in (0.5, 0.2, 0.05, 0.01, 0.001):
        q = float(np.quantile(sim, 1 - level))
        fraction = np.mean(sim > q)
        se = math.sqrt(fraction * (1 - fraction) / draws)
        got = weighted_chi2_sf(q, weights)
        assert abs(got - fraction) < 4 * se, (name, level, got, fraction, se)


def _paired_tail(x, lam):
    """P(sum_j lam_j chi2_2 > x) for distinct lam: a sum of exponentials
    of rates 1 / (2 lam_j), in 60 digits."""
    with mpmath.workdps(60):
        rates = [1 / (2 * mpmath.mpf(v)) for v in lam]
        total = mpmath.fsum(
            mpmath.fprod([rates[i] / (rates[i] - rates[j])
                          for i in range(len(lam)) if i != j])
            * mpmath.exp(-rates[j] * x) for j in range(len(lam)))
        return float(total)


def _two_weights_tail(x, w1, w2):
    """P(w1 Z1^2 + w2 Z2^2 > x) as the integral over z2 of the chi-square
    tail of the rest, 2 int_0^inf chi2_1.sf((x - w2 z^2) / w1) phi(z) dz:
    positive terms only, so relatively accurate far in the tail."""
    edge = math.sqrt(x / w2)  # beyond: the tail is 1, the integral Phi's

    def f(z):
        return scipy.stats.chi2.sf((x - w2 * z * z) / w1, 1) * scipy.stats.norm.pdf(z)

    inner = scipy.integrate.quad(f, 0.0, edge, epsabs=0.0, epsrel=1e-13,
                                 limit=200)[0]
    return 2.0 * inner + scipy.stats.chi2.sf(x / w2, 1)


@pytest.mark.parametrize("x", [2.0, 10.0, 40.0, 150.0, 600.0, 1300.0])
def test_relative_accuracy_far_in_the_tail(x):
    # p from 0.9 down to 1e-280 (where Imhof's integral, 1/2 plus an
    # integral, keeps no digit below 1e-16): each weight twice (a closed
    # form), and two weights (an integral of positive terms)
    lam = [1.0, 0.6, 0.3, 0.1]
    want = _paired_tail(x, lam)
    assert_allclose(weighted_chi2_sf(x, np.repeat(lam, 2)), want, rtol=1e-9)
    want = _two_weights_tail(x, 1.0, 0.37)
    assert 0 < want < 1
    assert_allclose(weighted_chi2_sf(x, [0.37, 1.0]), want, rtol=1e-9)


def test_edges():
    w = PROFILES["exp"]
    p = weighted_chi2_sf(60.0, w)
    # zero and negative weights left out; the order of the weights and the
    # scale do not matter; weights below 1e-300 of the largest change nothing
    assert weighted_chi2_sf(60.0, np.r_[0.0, w, 0.0, -1.0]) == p
    assert_allclose(weighted_chi2_sf(60.0, w[::-1]), p, rtol=1e-12)
    for scale in (1e-200, 1e200):
        assert_allclose(weighted_chi2_sf(60.0 * scale, w * scale), p,
                        rtol=1e-10)
    assert_allclose(weighted_chi2_sf(3.0, [2.0, 1e-300, 1e-320]),
                    scipy.stats.chi2.sf(1.5, 1), rtol=1e-10)
    # one weight; q <= 0; an infinite q; no weight at all
    assert_allclose(weighted_chi2_sf(5.0, [2.5]), scipy.stats.chi2.sf(2.0, 1),
                    rtol=1e-12)
    assert weighted_chi2_sf(0.0, w) == 1.0 and weighted_chi2_sf(-3.0, w) == 1.0
    assert weighted_chi2_sf(1e-40, w) == 1.0
    assert weighted_chi2_sf(math.inf, w) == 0.0
    assert weighted_chi2_sf(1e6, w) == 0.0
    assert weighted_chi2_sf(1.0, []) == 0.0 and weighted_chi2_sf(-1.0, [0.0]) == 1.0
    assert math.isnan(weighted_chi2_sf(math.nan, w))


def test_decreasing_and_many_weights():
    # decreasing in q over the whole range, for thousands of weights too
    # (one far above the rest: the integrand's slowest decay)
    rng = np.random.default_rng(3)
    for w in (rng.exponential(size=3000), np.r_[1.0, rng.uniform(0, 1e-3, 999)],
              0.9 ** np.arange(300)):
        mean, sd = w.sum(), math.sqrt(2 * w @ w)
        q = mean + sd * np.linspace(-3, 30, 12)
        p = np.array([weighted_chi2_sf(v, w) for v in q])
        assert np.all((p >= 0) & (p <= 1)) and np.all(np.diff(p) <= 1e-15)
        assert p[-1] < 1e-8
