"""Distributions: kernels between probability distributions given by their
parameters (expected kernels of support measure machines) and kernels on
mean embeddings."""

from ._expected import gaussian_expected_kernel, level2_kernel

__all__ = ["gaussian_expected_kernel", "level2_kernel"]
