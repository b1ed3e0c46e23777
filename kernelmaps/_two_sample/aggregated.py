"""The aggregated test, MMDAgg: the tests of several kernels and scales on
the same resamples, their levels corrected together (`level_correction`,
`conclude`). For samples of unequal sizes it resamples by swaps of the
paired objects (`swap_form`, `swap_finish`): the same group of
permutations as the wild bootstrap, over the min(n, m) pairs (x_i, y_i),
the objects beyond them staying in their sample; the unbiased MMD^2 of
each swapped split is a constant, a linear form and the quadratic form of
the pairs' H in the signs, so unequal sizes cost what equal ones do, not
the (n + m)^2 products of permutations."""

import math

import numpy as np

from .._engine.schedule import thread_map
from .draws import draw_projections
from .features import split_statistic
from .result import finite_statistics, result, tie_floor, warn_degenerates


def conclude(iv, stats, names, gammas, kinds, norms):
    """MMDAgg with uniform weights: the statistics of every kernel on the
    same B1 + B2 resamples and the observed sample (`stats`, see
    `resampling.resampled_test`), then the level correction. Reads the
    `Checked` call's specs, resamples B and alpha."""
    B1 = iv.B[0]
    warn_degenerates(iv.specs, names, gammas, kinds, "aggregated")
    observed = finite_statistics(stats, names)[:, 0]
    M1, M2 = stats[:, 1:1 + B1], stats[:, 1 + B1:]
    pvalues, p, thresholds = level_correction(observed, M1, M2, iv.alpha,
                                              iv.resolution)
    return result(observed, p, M1, iv.alpha, "aggregated", names, gammas,
                  pvalues=pvalues, thresholds=thresholds)


def level_correction(observed, M1, M2, alpha, resolution):
    """MMDAgg's level correction with uniform weights 1/L.

    Each statistic's single p-value is ``(1 + #{M1 >= t}) / (1 + B1)``
    (the observed and the B2 resamples alike, against the B1; ties within
    the rounding of the statistics, of relative `resolution`, counted as
    `result.tie_floor` counts them). The
    aggregated statistic is ``s = L min p``; its p-value is ``(1 + #{s_b <=
    s}) / (1 + B2)`` over the B2 resamples, exact since the observed sample
    and the B2 are exchangeable given the B1. The corrected single level is
    u w = u / L for the level correction u (below); each threshold is the
    statistic value beyond which the single p-value is below it. Returns
    (single p-values, p-value, thresholds)."""
    L, B1 = M1.shape
    desc = -np.sort(-M1, axis=1)  # descending
    ascending = desc[:, ::-1]

    def single(t):
        # #{M1 >= t} for each row (ties within rounding), t of shape (L, k)
        floor = tie_floor(t, M1, resolution)
        return np.stack([B1 - np.searchsorted(ascending[i], floor[i], "left")
                         for i in range(L)])

    p_obs = (1.0 + single(observed[:, None])[:, 0]) / (1.0 + B1)
    p_null = (1.0 + single(M2)) / (1.0 + B1)
    s_obs = L * p_obs.min()
    s_null = np.sort(L * p_null.min(axis=0))
    B2 = s_null.size
    pvalue = float((1.0 + np.searchsorted(s_null, s_obs, "right")) / (1.0 + B2))
    # The level correction u is the supremum of the u whose p-value
    # (1 + #{s_b <= u}) / (1 + B2) is at most alpha: just below s*, the
    # smallest s_b whose p-value is not. The test rejects when s < s*, and
    # single test l when its p-value is below s* / L: #{M1 >= t} <= k
    # with k = s* (1 + B1) / L - 2 (s* / L is one of the p-values
    # (1 + c) / (1 + B1)), that is when t > desc[k], the (k+1)-th largest.
    # (The last s_b is always over: its p-value is 1. With 1 / (1 + B2) >
    # alpha nothing can reject.)
    over = (1.0 + np.searchsorted(s_null, s_null, "right")) / (1.0 + B2) > alpha
    k = -1 if alpha < 1.0 / (1.0 + B2) else round(
        s_null[over.argmax()] * (1.0 + B1) / L) - 2  # at most B1 - 1
    thresholds = desc[:, k].copy() if k >= 0 else np.full(L, np.inf)
    return p_obs, pvalue, thresholds


def swap_form(rows_of, n, m, dtype, n_threads):
    """The unbiased MMD^2 under swaps of paired points, for samples of
    unequal sizes, as a quadratic form ``(H, finish)`` of p x p, p = min(n,
    m): a randomization over a group of permutations, exact as the
    permutation test, at the cost of the wild bootstrap.

    The pooled points are X (n) then Y (m); x_i and y_i (i < p) form pair
    i, and a sign e_i = -1 swaps them; the |n - m| points of the larger
    sample beyond the pairs stay in it. With s the indicator of the first
    sample, ``s = c + P e / 2`` (c: 1/2 on the paired points, 1 or 0 on the
    others; column i of P: +1 at x_i, -1 at y_i), so that for the pooled K0
    (its diagonal 0) ``s' K0 s = c' K0 c + w' e + (e' H e + tr D) / 4``
    with ``w = P' K0 c``, H the wild bootstrap's matrix of the pairs and tr
    D = -2 sum k(x_i, y_i), and ``r' s = r' c + (P' r)' e / 2`` for r = K0
    1: the sums of the statistic (see `permutation`'s docstring) cost one
    quadratic form of p x p and two dot products of p per resample
    (`swap_finish`). ``rows_of(rows)`` gives the rows of K0 (float64);
    they are read once, a block at a time (on `n_threads` threads)."""
    N, p = n + m, min(n, m)
    c = np.full(N, 0.5)
    if n > m:
        c[p:n] = 1.0
    else:
        c[n + p:] = 0.0
    H = np.empty((p, p), dtype=dtype)
    w, q = np.empty(p), np.empty(p)

    def pair_rows(block):
        """The pairs' rows of the block: H's rows, w, q and their shares
        of T = 1' K0 1, c' K0 c, r' c and tr D."""
        a = rows_of(block)
        b = rows_of(slice(n + block.start, n + block.stop))
        ra, rb = a.sum(axis=1), b.sum(axis=1)
        ac, bc = a @ c, b @ c
        g = a - b
        H[block] = g[:, :p] - g[:, n:n + p]
        w[block], q[block] = ac - bc, ra - rb
        i = np.arange(block.stop - block.start)
        return (ra.sum() + rb.sum(), 0.5 * (ac.sum() + bc.sum()),
                0.5 * (ra.sum() + rb.sum()),
                -2.0 * a[i, n + block.start + i].sum())

    def other_rows(block):
        """The shares of the unpaired points' rows (weight c: 1 or 0)."""
        e = rows_of(block)
        r = e.sum(axis=1)
        return r.sum(), c[block] @ (e @ c), c[block] @ r, 0.0

    extra = slice(p, n) if n > m else slice(n + p, N)
    blocks = [(pair_rows, b) for b in _row_blocks(p)] + [
        (other_rows, slice(extra.start + b.start, extra.start + b.stop))
        for b in _row_blocks(extra.stop - extra.start)]
    shares = list(thread_map(lambda job: job[0](job[1]), blocks,
                             min(n_threads, len(blocks))))
    constants = tuple(math.fsum(v) for v in zip(*shares, strict=True))
    np.fill_diagonal(H, 0.0)
    return H, swap_finish(w, q, constants, n, m)


def swap_finish(w, q, constants, n, m):
    """``finish(E, quadratic)``: the unbiased MMD^2 of each swapped split of
    a block of signs E (p x b) from ``e' H e``, with the vectors w and q
    and the constants (T, c' K0 c, r' c, tr D) of `swap_form`."""
    T, cKc, rc, trD = constants

    def finish(E, quadratic):
        with np.errstate(over="ignore", invalid="ignore"):  # (refused after)
            we, qe = draw_projections(np.stack([w, q]), E)
            sxx = cKc + we + (quadratic + trD) / 4
            return split_statistic(sxx, rc + 0.5 * qe, None, T, None, n, m,
                                   True)

    return finish


def _row_blocks(n):
    """Slices of `TEST_MATRIX_ROWS` rows covering ``0 .. n``."""
    return [slice(i, min(i + TEST_MATRIX_ROWS, n))
            for i in range(0, n, TEST_MATRIX_ROWS)]


# Rows of a kernel matrix per task of the tests' preparation (exponentials
# of its logarithm, row sums of the pairs): a few milliseconds each.
TEST_MATRIX_ROWS = 256
