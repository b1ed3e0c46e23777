"""Distributions given by their parameters: expected kernels between
Gaussians (support measure machines), and kernels on mean embeddings from
their inner products."""

from ._expected import gaussian_expected_kernel, level2_kernel
from ._specs import ExpectedSpec

__all__ = ["ExpectedSpec", "gaussian_expected_kernel", "level2_kernel"]
