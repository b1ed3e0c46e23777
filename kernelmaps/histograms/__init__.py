"""Histograms: exact additive kernels (chi2, intersection, Hellinger,
Jensen-Shannon, exp-chi2) and explicit feature maps for them."""

from ._anchors import AnchorMap
from ._exact import (
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)
from ._exp_chi2 import ExpChi2Features
from ._homogeneous import HomogeneousKernelMap
from ._maps import Chi2ChebyshevMap, Chi2DirectMap
from ._specs import AdditiveSpec, ExpChi2Spec

__all__ = [
    "AdditiveSpec",
    "AnchorMap",
    "Chi2ChebyshevMap",
    "Chi2DirectMap",
    "ExpChi2Features",
    "ExpChi2Spec",
    "HomogeneousKernelMap",
    "additive_chi2_kernel",
    "chi2_distance",
    "exp_chi2_kernel",
    "hellinger_kernel",
    "intersection_kernel",
    "js_kernel",
]
