"""The exact set kernels on trusted input, a block at a time: what the
tools over objects (`mmd_test`, `NystroemMap`) call after one validation
of the whole input. Each function takes validated
`Bags` and checked parameters, and neither checks nor warns."""

import numpy as np

from .._engine import knn
from .._engine.pair_sums import pair_sums
from ._divergence import _renyi
from ._mean_map import mean_map_block, mean_map_self
from ._sliced import _mean_costs

__all__ = ["mean_map_block", "mean_map_self", "mmd_block", "renyi_block",
           "sliced_wasserstein_block"]


def mmd_block(X, Y, n_threads, **params):
    """The biased MMD^2 between the sets of X and Y (None: X, the symmetric
    block, its diagonal 0), float64, as `mmd` computes it (means of the
    point kernel of `params`: kernel, gamma, degree, coef0), 0 where
    rounding makes it negative."""
    K = pair_sums(X, Y, **params, n_threads=n_threads, normalize=True)
    with np.errstate(over="ignore", invalid="ignore"):
        if Y is None:
            ka = kb = np.diag(K).copy()
        else:
            ka, kb = (mean_map_self(A, params, n_threads) for A in (X, Y))
        D2 = np.add.outer(ka, kb)
        D2 -= 2 * K
    if Y is None:
        np.fill_diagonal(D2, 0.0)
    return np.maximum(D2, 0.0, out=D2)


def renyi_block(X, Y, alpha, k, min_dist, n_threads, progress=False):
    """The clamped kNN Renyi divergences of order `alpha` (one float):
    ``D(X, X)`` for Y None, else ``(D(X, Y), D(Y, X))`` from one search."""
    method = knn.choose_method(X, Y)
    alphas = np.array([alpha], dtype=np.float64)
    out = _renyi(X, Y, alphas, k, min_dist, method, n_threads, progress,
                 both=Y is not None)
    out = (out,) if Y is None else out
    for D in out:
        np.maximum(D, 0.0, out=D)
    return out[0][0] if Y is None else tuple(D[0] for D in out)


def sliced_wasserstein_block(X, Y, n_threads, *, projections):
    """SW_2^2 between the sets of X and Y (None: X, the symmetric block,
    its diagonal 0; weighted or not) along the unit rows of `projections`
    (L, d), float64, as `sliced_wasserstein` computes it squared."""
    S, e = _mean_costs(X, Y, projections, 2.0, n_threads)
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(S, -2 * e)
