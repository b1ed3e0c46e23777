"""Data-driven scales of kernels: the default scale of the kernels made
from divergences, and those kernels computed stably at any magnitude."""

import math

import numpy as np

__all__ = ["divergence_kernel_values", "median_gamma", "median_scale"]

_TINY = np.finfo(np.float64).tiny


def _median_scale(S):
    """The median of the off-diagonal entries of `S` (the median of the
    positive ones if that is 0; 1.0 if none is positive)."""
    off = S[~np.eye(len(S), dtype=bool)]
    scale = _median(off) if off.size else 0.0
    if scale == 0 and np.any(off > 0):
        scale = _median(off[off > 0])
    return scale if scale > 0 else 1.0


def _median(values):
    """np.median, also where the mean of the two middle values overflows."""
    with np.errstate(over="ignore"):
        median = float(np.median(values))
    return median if np.isfinite(median) else 2 * float(np.median(values / 2))


def median_log_gamma(S, power):
    """log of `divergence_kernel`'s default scale ``1 / median(off-diagonal
    S) ** power`` (the median of the positive entries if that is 0; 1 if
    none is positive), finite for any finite non-negative `S`."""
    return -power * math.log(_median_scale(S))


def median_scale(S):
    """`divergence_kernel`'s default scale: the median of the off-diagonal
    entries of `S` (the median of the positive ones if that is 0; 1.0 if
    none is positive). Its ``gamma`` is ``1 / scale ** power``."""
    return _median_scale(S)


def median_gamma(S, power):
    """``1 / median_scale(S) ** power`` as a float (``inf`` or ``0.0``
    beyond the float range: the kernel then needs the scale, see
    `divergence_kernel_values`)."""
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return float(1.0 / np.float64(_median_scale(S)) ** power)


def divergence_kernel_values(S, power, *, gamma=None, scale=None,
                             log_gamma=None):
    """``exp(-gamma * S ** power)`` for finite non-negative `S` and positive
    finite `power`, given a positive finite `gamma`, or a positive finite
    `scale` with ``gamma = 1 / scale ** power`` (which may be beyond the
    float range), or the finite ``log_gamma`` of a gamma that may be beyond
    it.

    Correct at any magnitude of `S`, `gamma` and `scale`: the entries where
    the plain formula is exact (``S ** power`` normal and ``gamma * S **
    power`` finite: the usual case) take it, bit for bit; the others
    (overflow, underflow to subnormals or 0) are ``exp(-(S / scale) **
    power)`` for a scale, ``exp(-exp(log(gamma) + power * log(S)))`` for a
    gamma (every entry, for `log_gamma`). ``S == 0`` gives exactly 1; the
    result is never NaN.
    """
    S = np.asarray(S, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", divide="ignore",
                     invalid="ignore"):
        if log_gamma is not None:
            A = np.zeros_like(S)
            positive = S > 0
            A[positive] = np.exp(log_gamma + power * np.log(S[positive]))
            return np.exp(-A)
        if gamma is None:
            gamma = 1.0 / np.float64(scale) ** power
        P = S**power
        if _TINY <= gamma < math.inf:
            A = gamma * P
            bad = (S > 0) & ~((P >= _TINY) & np.isfinite(A))
        else:
            A = np.zeros_like(S)
            bad = S > 0
        if bad.any():
            if scale is not None:
                A[bad] = (S[bad] / scale) ** power
            else:
                A[bad] = np.exp(math.log(gamma) + power * np.log(S[bad]))
        return np.exp(-A)
