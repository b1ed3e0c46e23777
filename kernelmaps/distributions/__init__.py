"""Distributions given by their parameters: expected kernels between
Gaussians (support measure machines), and kernels on mean embeddings from
their inner products."""

from ._blocks import expected_block
from ._expected import gaussian_expected_kernel, level2_kernel

__all__ = ["expected_block", "gaussian_expected_kernel", "level2_kernel"]
