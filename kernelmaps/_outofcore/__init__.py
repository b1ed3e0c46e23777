"""Out-of-core PCA and ridge regression on random features, one block of
rows at a time (`_models`), through the streaming moments of the blocks'
features (`_moments`)."""

from ._models import RandomFeaturePCA, RandomFeatureRidge, rf_pca, rf_ridge

__all__ = ["RandomFeaturePCA", "RandomFeatureRidge", "rf_pca", "rf_ridge"]
