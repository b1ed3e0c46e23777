"""The exact set kernels on trusted input, a block at a time: what the
tools over objects (`mmd_test`, `NystroemMap`) call after one validation
of the whole input. Each function takes validated
`Bags` and checked parameters, and neither checks nor warns."""

import numpy as np

from .._engine import knn
from ._divergence import _renyi
from ._mean_map import _pair_kernel_sums, _self_kernel_sums

__all__ = ["mean_map_block", "mean_map_self", "renyi_block"]


def mean_map_block(X, Y, params, n_threads, progress=False, normalize=True):
    """The mean map kernel between the sets of X and Y (None: X, the
    symmetric block), float64: the means (sums, without `normalize`) of
    the point kernel of `params` (kernel, gamma, degree, coef0) over the
    pairs of points."""
    return _pair_kernel_sums(X, Y, params, n_threads, progress,
                             normalize=normalize, warn=False)


def mean_map_self(X, params, n_threads):
    """The mean map kernel of each set of X with itself, float64 (the
    diagonal of `mean_map_block` at a fraction of its cost)."""
    with np.errstate(over="ignore"):
        return (_self_kernel_sums(X, params, n_threads)
                / X.sizes.astype(np.float64)**2)


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
