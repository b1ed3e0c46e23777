"""Expected RBF kernels between Gaussians with full covariances."""
