"""Distributions: feature maps of sets seen as samples of distributions
(random Fourier features, RDF, DRDF, EMK), kernels between distributions
given by their parameters (expected kernels of support measure machines) and
kernels on mean embeddings."""

from ._emk import EMKFeatures
from ._expected import gaussian_expected_kernel, level2_kernel
from ._random_features import (
    DoublyRandomDistributionFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
)

__all__ = [
    "DoublyRandomDistributionFeatures",
    "EMKFeatures",
    "RandomDistributionFeatures",
    "RandomFourierFeatures",
    "gaussian_expected_kernel",
    "level2_kernel",
]
