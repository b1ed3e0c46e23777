"""The exact histogram kernels on trusted input, a block at a time: what
the tools over objects (`mmd_test`, `NystroemMap`) and the lazy kernels
call after one validation of the whole input. Each function takes checked
histograms (dense or CSR, of one dtype) and neither checks nor warns."""

import numpy as np

from .._engine.additive import additive_sums
from ._exact import _scaled_chi2_distance, _sqrt

__all__ = ["additive_block", "chi2_distance_block"]


def additive_block(X, Y, name, n_threads, progress=False):
    """The additive kernel `name` ("chi2", "intersection", "hellinger",
    "js") between the rows of X and Y (None: X, the symmetric block),
    float64, as the ``*_kernel`` function of the name computes it."""
    if name == "hellinger":
        X, Y = _sqrt(X), None if Y is None else _sqrt(Y)
        return additive_sums(X, Y, "product", n_threads, progress,
                             "hellinger kernel")
    K = additive_sums(X, Y, name, n_threads, progress, f"{name} kernel")
    if name == "chi2":
        with np.errstate(over="ignore"):
            K *= 2.0
    return K


def chi2_distance_block(X, Y, n_threads, progress=False):
    """The chi2 distances between the rows of X and Y (None: X), float64
    (``inf`` where they overflow float64)."""
    D, exponent = _scaled_chi2_distance(X, Y, n_threads, progress)
    with np.errstate(over="ignore"):
        return np.ldexp(D, exponent)
