"""Distributions given by their parameters: expected kernels between
Gaussians (support measure machines), and kernels on mean embeddings from
their inner products."""

from ._expected import (  # noqa: F401 (_check_gaussians: private)
    _check_gaussians,
    gaussian_expected_kernel,
    level2_kernel,
)

__all__ = ["gaussian_expected_kernel", "level2_kernel"]
