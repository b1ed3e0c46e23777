"""Exact kernels between sets of vectors: sum-match (mean map) kernel, MMD,
MMD kernel, median heuristic."""

from ._mean_map import median_heuristic, mmd, mmd_kernel, sum_match_kernel

__all__ = ["median_heuristic", "mmd", "mmd_kernel", "sum_match_kernel"]
