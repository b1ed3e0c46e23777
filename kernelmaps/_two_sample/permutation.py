"""The permutation test: the MMD^2 of each split of the pooled sample from
the quadratic form of its indicators (`finish`), the constants the
products subtract from the pooled matrix (`shifts`), and the test of one
kernel's statistic against its resamples (`conclude`, also the wild
bootstrap's).

With the pooled kernel matrix K (N = n + m objects) with its diagonal set
to 0 (K0), and a permutation given as the indicator s of the objects it
puts in the first sample, the within and between sums of the MMD
statistic are

    Sxx = s' K0 s,  Sxy = r' s - Sxx,  Syy = T - 2 r' s + Sxx,

with r = K0 1 and T = 1' K0 1. Only Sxx needs the matrix: for a block of
permutations S (N x b), the column sums of S * (K0 S), one GEMM. The
diagonal (k(x, x)) enters only the biased statistic.
"""

import math

import numpy as np

from .._spec import computed
from .._warnings import degenerate_message, warn_degenerate
from .draws import draw_projections
from .features import split_statistic
from .result import finite_statistics, pvalue, result


def conclude(iv, values, names, gammas, kinds, norms):
    """The test of one kernel (the permutation test, the wild bootstrap):
    its observed statistic against its resamples' (`values`, see
    `resampling.resampled_test`). Reads the `Checked` call's specs, method
    and alpha."""
    if kinds[0] is not None:
        warn_degenerate(degenerate_message(kinds[0], names[0], gammas[0],
                                           iv.specs[0].between))
    observed, null = finite_statistics(values, names)[0, 0], values[0, 1:]
    g = gammas[0]
    return result(float(observed), pvalue(observed, null, iv.resolution),
                  null, iv.alpha, iv.method, str(names[0]),
                  None if g is None else float(g))


def finish(r, diag, n, m, unbiased):
    """``finish(S, q)``: the permutation test's MMD^2 of each split of a
    block of indicators S (N x b, float or int8) from the quadratic forms
    ``q = diag(T' K0 T)`` of the centred indicators ``T = N S - n``
    (`blocks.product_draws`), K0 the pooled matrix with its diagonal 0, r = K0 1
    its row sums and `diag` the diagonal of the pooled matrix: ``Sxx = s'
    K0 s = (q + 2 n N r' s - n^2 T) / N^2``, ``Sxy = r' s - Sxx`` and ``Syy
    = T - 2 r' s + Sxx`` with T = 1' K0 1."""
    total, diag_total = _fsum(r), _fsum(diag)
    N = n + m

    def finish(S, q):
        with np.errstate(over="ignore", invalid="ignore"):  # (refused after)
            rs, dx = draw_projections(np.stack([r, diag]), S)
            sxx = (q + (2.0 * n * N) * rs - (float(n) * n) * total) / (
                float(N) * N)
            return split_statistic(sxx, rs, dx, total, diag_total, n, m,
                                   unbiased)

    return finish


def _fsum(values):
    """`math.fsum`, or infinity where the exact sum overflows float64 (the
    statistics are then refused: `result.finite_statistics`)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def shifts(spec, Z, N, scales):
    """The constant of each scale the permutations' products subtract from
    the pooled matrix (see `blocks`' docstring): the mean of the kernel
    between distinct objects of the first `SHIFT_OBJECTS` pooled ones (0
    where it is not finite)."""
    k = min(N, SHIFT_OBJECTS)
    head = computed(spec.take(Z, slice(0, k)))
    shifts = []
    for K in spec.blocks(head, None, scales, 1):
        K = np.asarray(K, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            c = (K.sum() - np.trace(K)) / (k * (k - 1))
        shifts.append(float(c) if np.isfinite(c) else 0.0)
    return shifts


# Pooled objects whose kernel sets the permutations' shifts (`shifts`).
SHIFT_OBJECTS = 16
