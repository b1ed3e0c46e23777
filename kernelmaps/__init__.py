"""kernelmaps: exact kernels and explicit feature maps for sets of vectors,
distributions and histograms.

Sets of vectors
---------------
Bags                 packed collection of sets
sum_match_kernel     sum-match / mean map kernel
mmd                  maximum mean discrepancy
mmd_kernel           Gaussian kernel on mean embeddings
median_heuristic     Gaussian kernel parameter from the median distance
"""

from ._bags import Bags
from .sets import median_heuristic, mmd, mmd_kernel, sum_match_kernel

__version__ = "0.1.0.dev0"

__all__ = [
    "Bags",
    "median_heuristic",
    "mmd",
    "mmd_kernel",
    "sum_match_kernel",
]
