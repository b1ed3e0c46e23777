"""Histograms: exact additive kernels (chi2, intersection, Hellinger,
Jensen-Shannon, exp-chi2) and explicit feature maps for them."""

from ._anchors import AnchorMap
from ._exact import (
    additive_block,
    additive_chi2_kernel,
    chi2_distance,
    chi2_distance_block,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)
from ._maps import (
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
)

__all__ = [
    "AnchorMap",
    "Chi2ChebyshevMap",
    "Chi2DirectMap",
    "ExpChi2Features",
    "HomogeneousKernelMap",
    "additive_block",
    "additive_chi2_kernel",
    "chi2_distance",
    "chi2_distance_block",
    "exp_chi2_kernel",
    "hellinger_kernel",
    "intersection_kernel",
    "js_kernel",
]
