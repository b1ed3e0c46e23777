"""mmd_test as a statistical test, on fixed seeds: under the null its
rejection rate at alpha = 0.05 lies within the 99.9 % binomial bound and its
p-values lie on the grid 1 / (1 + B) and are uniform; a clear alternative is
rejected. (The full calibration and power study, at 500 repetitions and
sizes to 2000, is studies/two_sample/study.py.)"""

import numpy as np
import pytest
import scipy.stats

import kernelmaps as km

ALPHA = 0.05
REPS = 300

# (method, n, m, n_resamples): every method at n = 20, and the tests that
# use permutations at unequal sizes too (there the aggregated test
# permutes instead of its wild bootstrap).
NULL_CASES = [
    ("permutation", 20, 20, 199),
    ("permutation", 20, 30, 199),
    ("wild_bootstrap", 20, 20, 199),
    ("aggregated", 20, 20, (100, 100)),
    ("aggregated", 20, 30, (100, 100)),
    ("linear", 20, 20, None),
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
