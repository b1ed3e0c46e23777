"""kernelmaps: exact kernels and explicit feature maps for sets of vectors,
distributions and histograms.

Sets of vectors
---------------
Bags                 packed collection of sets
sum_match_kernel     sum-match / mean map kernel
mmd                  maximum mean discrepancy
mmd_kernel           Gaussian kernel on mean embeddings
mmd_test             kernel two-sample tests (permutation, wild bootstrap,
                     MMDAgg, linear-time)
MMDTestResult        the result of mmd_test
median_heuristic     Gaussian kernel parameter from the median distance
renyi_divergence     kNN estimate of the Renyi divergence between sets
divergence_kernel    kernel from a divergence matrix
RandomFourierFeatures random Fourier features of points (RBF, Laplacian)
RandomDistributionFeatures  random distribution features of sets (RDF)
DoublyRandomDistributionFeatures  RDF of the MMD kernel (DRDF)
EMKFeatures          efficient match kernel features, learned basis (EMK-CKSVD)
sliced_wasserstein   sliced-Wasserstein distances between sets
sliced_wasserstein_kernel  Gaussian kernel of the sliced-Wasserstein distance
SlicedWassersteinFeatures  quantile features whose distances approximate it

Histograms
----------
additive_chi2_kernel sum of 2xy/(x+y)
chi2_distance        half the sum of (x-y)^2/(x+y)
exp_chi2_kernel      exp(-beta chi2_distance)
intersection_kernel  sum of min(x, y)
hellinger_kernel     sum of sqrt(xy)
js_kernel            Jensen-Shannon kernel
Chi2DirectMap        chi2 features with geometric convergence
Chi2ChebyshevMap     chi2 features from the Chebyshev series
HomogeneousKernelMap Vedaldi-Zisserman features (chi2, JS, intersection)
ExpChi2Features      random features of the exp-chi2 kernel
AnchorMap            additive nearest-neighbour feature maps (ANNFM)

Distributions
-------------
gaussian_expected_kernel  expected kernels between Gaussians (SMM)
level2_kernel        kernels on mean embeddings from their inner products

Out of core
-----------
rf_pca               PCA of random features, one block of rows at a time
rf_ridge             ridge regression on them (several maps: two passes)
RandomFeaturePCA     the result of rf_pca
RandomFeatureRidge   the result of rf_ridge

Any kernel of the package
-------------------------
NystroemMap          Nystroem features of any exact kernel (or a callable)

Kernel matrices
---------------
project_psd          nearest positive semi-definite matrix
PSDProjector         the same projection, applied to test rows too

Settings
--------
set_config           the working-memory budget (MiB) of the tools over objects
get_config           the settings
config_context       settings changed within a with block

Warnings
--------
DegenerateWarning    an exact result that carries no information (a kernel
                     that is the identity or a constant on the data, a test
                     that cannot reject)
CostWarning          a call whose estimated time is beyond 10 minutes, said
                     before it starts, with what is faster
"""

from ._bags import Bags
from ._config import config_context, get_config, set_config
from ._nystroem import NystroemMap
from ._outofcore import RandomFeaturePCA, RandomFeatureRidge, rf_pca, rf_ridge
from ._two_sample import MMDTestResult, mmd_test
from ._version import __version__  # noqa: F401  (written by meson)
from ._warnings import CostWarning, DegenerateWarning
from .distributions import gaussian_expected_kernel, level2_kernel
from .histograms import (
    AnchorMap,
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)
from .psd import PSDProjector, project_psd
from .sets import (
    DoublyRandomDistributionFeatures,
    EMKFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
    SlicedWassersteinFeatures,
    divergence_kernel,
    median_heuristic,
    mmd,
    mmd_kernel,
    renyi_divergence,
    sliced_wasserstein,
    sliced_wasserstein_kernel,
    sum_match_kernel,
)

__all__ = [
    "AnchorMap",
    "Bags",
    "Chi2ChebyshevMap",
    "Chi2DirectMap",
    "CostWarning",
    "DegenerateWarning",
    "DoublyRandomDistributionFeatures",
    "EMKFeatures",
    "ExpChi2Features",
    "HomogeneousKernelMap",
    "MMDTestResult",
    "NystroemMap",
    "PSDProjector",
    "RandomDistributionFeatures",
    "RandomFeaturePCA",
    "RandomFeatureRidge",
    "RandomFourierFeatures",
    "SlicedWassersteinFeatures",
    "additive_chi2_kernel",
    "chi2_distance",
    "config_context",
    "divergence_kernel",
    "exp_chi2_kernel",
    "gaussian_expected_kernel",
    "get_config",
    "hellinger_kernel",
    "intersection_kernel",
    "js_kernel",
    "level2_kernel",
    "median_heuristic",
    "mmd",
    "mmd_kernel",
    "mmd_test",
    "project_psd",
    "renyi_divergence",
    "rf_pca",
    "rf_ridge",
    "set_config",
    "sliced_wasserstein",
    "sliced_wasserstein_kernel",
    "sum_match_kernel",
]
