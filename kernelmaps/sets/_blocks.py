"""The exact set kernels on trusted input, a block at a time: what the
tools over objects (`mmd_test`, `NystroemMap`) and the lazy kernels call
after one validation of the whole input. Each function takes validated
`Bags` and checked parameters, and neither checks nor warns."""

import numpy as np

from .._engine import knn
from .._engine.pair_sums import pair_means, pair_sums, self_sums, set_sums
from ._divergence import _renyi

__all__ = ["mean_map_block", "mean_map_self", "renyi_block"]


def mean_map_block(X, Y, params, n_threads, progress=False, normalize=True):
    """The mean map kernel between the sets of X and Y (None: X, the
    symmetric block), float64: the means (sums, without `normalize`) of
    the point kernel of `params` (kernel, gamma, degree, coef0) over the
    pairs of points."""
    if params["kernel"] == "linear":
        sx = set_sums(X)
        with np.errstate(over="ignore", invalid="ignore"):
            K = sx @ (sx if Y is None else set_sums(Y)).T
        return pair_means(K, X, Y) if normalize else K
    return pair_sums(X, Y, kernel=params["kernel"], gamma=params["gamma"],
                     coef0=params["coef0"], degree=params["degree"],
                     n_threads=n_threads, progress=progress, normalize=normalize)


def mean_map_self(X, params, n_threads):
    """The mean map kernel of each set of X with itself, float64 (the
    diagonal of `mean_map_block` at a fraction of its cost)."""
    sizes = X.sizes.astype(np.float64)
    if params["kernel"] == "linear":
        with np.errstate(over="ignore"):
            return np.square(set_sums(X)).sum(axis=1) / sizes**2
    return self_sums(X, kernel=params["kernel"], gamma=params["gamma"],
                     coef0=params["coef0"], degree=params["degree"],
                     n_threads=n_threads) / sizes**2


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
