"""The wild bootstrap (samples of equal size n): with H = Kxx + Kyy - Kxy -
Kyx (n x n) with its diagonal set to 0 (`h_matrix`), the statistic of
Rademacher signs e is e' H e / (n (n - 1)) (`finish`). Flipping e_i swaps
x_i and y_i (it changes the sign of row and column i of H), so this is a
randomization test too, and exact. Its conclusion is the permutation
test's (`permutation.conclude`)."""

import numpy as np


def h_matrix(K0, n):
    """``H = Kxx + Kyy - Kxy - Kyx`` with a zero diagonal, from the pooled
    matrix (its diagonal 0) of 2n objects, in its first block (a view: K0
    is changed), in float64 (the terms cancel)."""
    H = K0[:n, :n]
    H += K0[n:, n:]
    H -= K0[:n, n:]
    H -= K0[n:, :n]
    np.fill_diagonal(H, 0.0)
    return H


def finish(pairs):
    """The wild bootstrap's statistic ``e' H e / (2 pairs)`` of each column
    of a block of signs, from its quadratic forms, for H of `pairs` pairs
    (a, b), a < b (n (n - 1) / 2 for the complete U-statistic of n pairs;
    R n - R (R + 1) / 2 for the incomplete one of R diagonals)."""
    return lambda E, quadratic: quadratic / (2.0 * pairs)
