"""Exact kernels between sets of vectors.

.. autosummary::
   :toctree: generated/

   sum_match_kernel
   mmd
   mmd_kernel
   median_heuristic
"""

from ._mean_map import median_heuristic, mmd, mmd_kernel, sum_match_kernel

__all__ = ["median_heuristic", "mmd", "mmd_kernel", "sum_match_kernel"]
