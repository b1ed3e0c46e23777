"""Data-driven scales of kernels: the default `gamma` of the kernels made
from divergences."""

import numpy as np

__all__ = ["median_gamma"]


def median_gamma(S, power):
    """``1 / median(off-diagonal S) ** power`` (the median of the positive
    entries if that is 0; 1 if none is positive): `divergence_kernel`'s
    default scale for the symmetrised divergences `S`."""
    off = S[~np.eye(len(S), dtype=bool)]
    scale = np.median(off) if off.size else 0.0
    if scale == 0 and np.any(off > 0):
        scale = np.median(off[off > 0])
    return 1.0 / scale**power if scale > 0 else 1.0
