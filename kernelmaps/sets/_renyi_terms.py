"""The kNN Renyi estimator's constants and terms, shared by its compiled
path (`_divergence`) and its path in other array libraries
(`_array_divergence`)."""

import math

import numpy as np
from scipy.special import gammaln

__all__ = ["LOG_EPS", "LOG_TINY", "RELATIVE_FLOOR", "estimate_terms"]

# min_dist=None floors both kNN distances of the pairs (X_i, .) at this
# fraction of the median positive rho_k of X_i.
RELATIVE_FLOOR = 1e-3
# The floor for min_dist=0: the smallest normal float64, so log stays finite.
LOG_TINY = math.log(np.finfo(np.float64).tiny)
# The floor of the argument of the log of the estimator (skl-groups').
LOG_EPS = math.log(np.finfo(np.float64).eps)


def estimate_terms(sizes_x, sizes_y, alphas, k):
    """The terms of the estimate (`_divergence._estimate`) beside L, for
    each alpha: of the rows, log B + (1 - alpha) log(n - 1) - log n, and of
    the columns, (1 - alpha) log m (lists of float64 arrays)."""
    log_b = (2 * gammaln(k) - gammaln(k - alphas + 1) - gammaln(k + alphas - 1))
    log_nx = np.log(sizes_x.astype(np.float64))
    log_nx1 = np.log(sizes_x.astype(np.float64) - 1)
    log_my = np.log(sizes_y.astype(np.float64))
    return ([log_b[a] + (1 - alpha) * log_nx1 - log_nx
             for a, alpha in enumerate(alphas)],
            [(1 - alpha) * log_my for alpha in alphas])
