"""MMD-FUSE: the MMD^2 of several kernels and scales on the same
permutations, each normalised, fused by a log-sum-exp (`conclude`)."""

import math

import numpy as np
import scipy.special

from .result import finite_statistics, pvalue, result, warn_degenerates


def conclude(iv, stats, names, gammas, kinds, norms):
    """MMD-FUSE: the unbiased MMD^2 of every kernel on the same B + 1
    permutations (the observed sample first: `stats`, with the `norms` of
    the pooled matrices, see `resampling.resampled_test`), each
    normalised, fused by a log-sum-exp with weights 1/L, as in the authors'
    code (Biggs, Schrab and Gretton, 2023; the function mmdfuse of
    github.com/antoninschrab/mmdfuse): with p = min(n, m), kernel l's
    statistic is ``p (p - 1) sqrt(p (p - 1)) MMD^2_l / ||K0_l||_F``, K0_l
    the pooled matrix with its diagonal set to 0, and the fused one ``log((1
    / L) sum_l exp(statistic_l))`` (their lambda_multiplier of 1). No
    multiplicity correction: the p-value is the permutation test's of the
    fused statistic. Reads the `Checked` call's specs, sizes n and N and
    alpha."""
    warn_degenerates(iv.specs, names, gammas, kinds, "fused")
    p = min(iv.n, iv.N - iv.n)
    scale = p * (p - 1) * math.sqrt(p * (p - 1))
    # (a kernel 0 between all distinct points: no information; a norm
    # beyond float64: kernel values near the top of its range, no scale)
    usable = (norms > 0) & np.isfinite(norms)
    factors = np.where(usable, scale / np.where(usable, norms, 1.0), 0.0)
    stats = finite_statistics(stats, names) * factors[:, None]
    fused = scipy.special.logsumexp(stats, axis=0, b=1.0 / len(stats))
    observed, null = float(fused[0]), fused[1:]
    return result(observed, pvalue(observed, null, iv.resolution), null,
                  iv.alpha, "fuse", names, gammas)
