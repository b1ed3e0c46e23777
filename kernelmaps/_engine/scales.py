"""Data-driven scales of kernels: the default scale of the kernels made
from divergences, and those kernels computed stably at any magnitude."""

import math

import numpy as np

from .layout import max_abs, power_of_two_exponent

__all__ = ["divergence_kernel_matrix", "divergence_kernel_values", "median_scale",
           "scale_gamma"]

_TINY = np.finfo(np.float64).tiny
_SMALLEST = math.ulp(0.0)  # the smallest positive (subnormal) float64


def median_scale(S):
    """The default scale of the kernel of divergences: the median of the
    off-diagonal entries of `S` (the median of the positive ones if that is
    0; 1.0 if none is positive). Its ``gamma`` is ``1 / scale ** power``."""
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


def scale_gamma(scale, power):
    """``1 / scale ** power`` as a float (``inf`` or ``0.0`` beyond the
    float range: the kernel then needs the scale, see
    `divergence_kernel_values`)."""
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return float(1.0 / np.float64(scale) ** power)


def divergence_kernel_matrix(D, D_reverse=None, *, power, gamma=None, scale=None):
    """The kernel ``exp(-gamma S ** power)`` of the symmetrised divergences
    ``S = max((D + D_reverse.T) / 2, 0)``, and its scale: the one function
    behind every kernel of divergences between sets.

    `D` (a, b) and `D_reverse` (b, a) are the divergences in both
    directions (`D_reverse` None: `D` is square and both); finite float64.
    The scale is `gamma` (positive, finite), or `scale` with ``gamma = 1 /
    scale ** power`` (positive, finite; its gamma may be beyond the float
    range), or, with both None, the median scale of `S` (`median_scale`).
    Returns ``(K, scale)``: the scale used, in the units of `D` (a
    subnormal median holds fewer digits there: 13 at 1e-310, 3 at
    1e-320), or None for a given gamma.

    Exact at any magnitude of `D`, `gamma` and `scale`: divergences in the
    subnormal range are first scaled up by a power of two (exact), so that
    halving ``D + D_reverse.T`` does not round them, and the scale with
    them; ``D + D_reverse.T`` that would overflow is halved first; the
    kernel values come from `divergence_kernel_values`. ``S == 0`` gives
    exactly 1, and the result is never NaN.
    """
    D_reverse = D if D_reverse is None else D_reverse
    top = max_abs(D, D_reverse)
    exponent = power_of_two_exponent(top) if top < 2.0**-900 else 0
    if exponent:
        D, D_reverse = np.ldexp(D, exponent), np.ldexp(D_reverse, exponent)
    with np.errstate(over="ignore"):
        S = (D / 2 + D_reverse.T / 2 if top > 2.0**1020
             else (D + D_reverse.T) / 2)
    np.maximum(S, 0.0, out=S)
    if gamma is None and scale is None:
        scaled = median_scale(S)
        # back in the units of D, never rounded to 0
        scale = max(math.ldexp(scaled, -exponent), _SMALLEST)
        return divergence_kernel_values(S, power, scale=scaled), scale
    if scale is not None:
        with np.errstate(over="ignore"):  # inf: every S / scale is 0
            scaled = float(np.ldexp(np.float64(scale), exponent))
        return divergence_kernel_values(S, power, scale=scaled), scale
    if exponent:
        return divergence_kernel_values(
            S, power, log_gamma=math.log(gamma) - exponent * power * math.log(2.0)
        ), None
    return divergence_kernel_values(S, power, gamma=gamma), None


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
