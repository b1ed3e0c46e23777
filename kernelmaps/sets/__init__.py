"""Sets of vectors: exact kernels between sets (sum-match / mean map kernel,
MMD, MMD kernel, median heuristic; kNN Renyi divergences and their kernels;
sliced-Wasserstein distances and their kernel) and explicit feature maps of
sets (random Fourier features of their points, RDF, DRDF, EMK,
sliced-Wasserstein quantile features). The two-sample tests, on sets and
every other kind of object, are in ``kernelmaps._two_sample``."""

from ._divergence import (
    divergence_kernel,
    renyi_divergence,
    renyi_divergence_both,
)
from ._emk import EMKFeatures
from ._mean_map import median_heuristic, mmd, mmd_kernel, sum_match_kernel
from ._random_features import (
    DoublyRandomDistributionFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
)
from ._sliced import (
    SlicedWassersteinFeatures,
    sliced_directions,
    sliced_wasserstein,
    sliced_wasserstein_kernel,
)
from ._specs import (
    EnergySpec,
    FourierSpec,
    MeanMapSpec,
    MMDSpec,
    RenyiSpec,
    SlicedWassersteinSpec,
)

__all__ = [
    "DoublyRandomDistributionFeatures",
    "EMKFeatures",
    "EnergySpec",
    "FourierSpec",
    "MMDSpec",
    "MeanMapSpec",
    "RandomDistributionFeatures",
    "RandomFourierFeatures",
    "RenyiSpec",
    "SlicedWassersteinFeatures",
    "SlicedWassersteinSpec",
    "divergence_kernel",
    "median_heuristic",
    "mmd",
    "mmd_kernel",
    "renyi_divergence",
    "renyi_divergence_both",
    "sliced_directions",
    "sliced_wasserstein",
    "sliced_wasserstein_kernel",
    "sum_match_kernel",
]
