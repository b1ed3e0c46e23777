"""Kernel two-sample tests (issue 20, work in progress: not exported yet).

The permutation statistics are evaluated together, never recomputing the
kernel: with the pooled kernel matrix K (N = n + m points) with its diagonal
set to 0 (K0), and a permutation as the indicator s of the points it puts in
the first sample, the within and between sums of the MMD statistic are

    Sxx = s' K0 s,  Sxy = r' s - Sxx,  Syy = T - 2 r' s + Sxx,

with r = K0 1 and T = 1' K0 1. Only Sxx needs the matrix: for a block of
permutations S (N x b), the column sums of S * (K0 S), one GEMM. The
diagonal (k(x, x), 1 for the rbf and laplacian kernels) enters only the
biased statistic, as a constant.
"""

import numpy as np

__all__ = ["permutation_statistics"]

# Permutations per GEMM block: K0 @ S is (N, _BLOCK) float64.
_BLOCK = 256


def permutation_statistics(K, n, indicators, *, unbiased=True):
    """MMD^2 of the split of the pooled sample given by each column of
    `indicators` (N x B, 1 for the first sample's n points, 0 for the
    others), from the pooled kernel matrix `K` (N x N, symmetric).

    Returns an array of B statistics: the unbiased U-statistic (default),
    or the biased V-statistic.
    """
    N = K.shape[0]
    m = N - n
    diag = np.diag(K).copy()
    K0 = K.copy()
    np.fill_diagonal(K0, 0.0)
    r = K0.sum(axis=1)
    total = r.sum()
    B = indicators.shape[1]
    out = np.empty(B)
    for start in range(0, B, _BLOCK):
        S = np.asarray(indicators[:, start:start + _BLOCK], dtype=np.float64)
        sxx = np.einsum("ij,ij->j", S, K0 @ S)
        rs = r @ S
        sxy = rs - sxx
        syy = total - 2 * rs + sxx
        if unbiased:
            stat = sxx / (n * (n - 1)) + syy / (m * (m - 1)) - 2 * sxy / (n * m)
        else:
            dx = diag @ S
            dy = diag.sum() - dx
            stat = ((sxx + dx) / n**2 + (syy + dy) / m**2 - 2 * sxy / (n * m))
        out[start:start + S.shape[1]] = stat
    return out


def permutation_pvalue(observed, null):
    """``(1 + #{null >= observed}) / (1 + B)``: exact at every level (the
    observed split counts as one of the equally likely ones)."""
    return (1.0 + np.count_nonzero(null >= observed)) / (1.0 + null.size)
