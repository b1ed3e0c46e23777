"""Histograms: exact additive kernels (chi2, intersection, Hellinger,
Jensen-Shannon, exp-chi2) and explicit feature maps for them."""

from ._exact import (
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)

__all__ = [
    "additive_chi2_kernel",
    "chi2_distance",
    "exp_chi2_kernel",
    "hellinger_kernel",
    "intersection_kernel",
    "js_kernel",
]
