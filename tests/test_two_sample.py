"""The two-sample tests (issue 20, in progress): the permutation statistics
against the MMD of each split computed directly, and the p-value."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import kernelmaps as km
from kernelmaps.sets._two_sample import permutation_pvalue, permutation_statistics


def _rbf(Z, gamma):
    sq = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    return np.exp(-gamma * sq)


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("n, m", [(2, 3), (7, 9), (40, 25)])
def test_statistics_of_every_split_are_the_mmd(unbiased, n, m):
    rng = np.random.default_rng(n * 100 + m)
    Z = rng.normal(size=(n + m, 3))
    gamma = 0.3
    S = np.zeros((n + m, 300))  # more than one block of permutations
    S[:n, 0] = 1
    for j in range(1, S.shape[1]):
        S[rng.permutation(n + m)[:n], j] = 1
    got = permutation_statistics(_rbf(Z, gamma), n, S, unbiased=unbiased)
    for j in (0, 1, 257, 299):
        a = S[:, j].astype(bool)
        want = km.mmd([Z[a]], [Z[~a]], gamma=gamma, squared=True,
                      unbiased=unbiased)[0, 0]
        assert_allclose(got[j], want, rtol=1e-12, atol=1e-14)


def test_pvalue_counts_the_observed_split():
    null = np.array([0.1, 0.5, 0.5, 0.9])
    assert permutation_pvalue(0.5, null) == (1 + 3) / 5
    assert permutation_pvalue(1.0, null) == 1 / 5
