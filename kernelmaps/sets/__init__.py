"""Exact kernels between sets of vectors: sum-match (mean map) kernel, MMD,
MMD kernel, median heuristic; kNN Renyi divergences and their kernels."""

from ._divergence import divergence_kernel, renyi_divergence
from ._mean_map import median_heuristic, mmd, mmd_kernel, sum_match_kernel

__all__ = [
    "divergence_kernel",
    "median_heuristic",
    "mmd",
    "mmd_kernel",
    "renyi_divergence",
    "sum_match_kernel",
]
