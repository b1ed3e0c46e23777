"""The spec of the expected kernels between Gaussians
(`kernelmaps._spec`), as the tools over objects (`mmd_test`,
`NystroemMap`, `ExpectedKernel`) compute them, on Gaussians checked once,
a block at a time."""

import numpy as np

from .._spec import N_BANDWIDTHS, Spec, given_gammas, point_gamma, point_grid, register
from .._validation import check_gaussians, full_covariances
from .._warnings import warn_uninformative
from ._expected import _all_equal, _expected, expected_params

__all__ = ["ExpectedSpec"]


@register("expected")
class ExpectedSpec(Spec):
    """`gaussian_expected_kernel` of Gaussians ``(means, covs)``; its scale
    is the point kernel's gamma."""

    kind = "gaussians"
    takes = ("kernel", "gamma", "degree", "coef0")
    scale = "gamma"

    def check_params(self, params):
        checked = expected_params(**{name: params[name] for name in self.takes
                                     if name in params})
        return {**params, **{name: checked[name] for name in self.takes
                             if name in params}}

    def points_of(self, X):
        return X[0]

    def check(self, X, name="X"):
        if not (isinstance(X, tuple) and len(X) == 2):
            raise TypeError(
                f"{name} must be a pair (means, covs) of Gaussians for the "
                f"expected kernel, got {type(X).__name__}")
        means, covs, _ = check_gaussians(X[0], X[1], f"{name}[0] (means)",
                                         f"{name}[1] (covs)")
        return means, covs

    def count(self, X):
        return X[0].shape[0]

    def pool(self, X, Y):
        (mx, cx), (my, cy) = X, Y
        if mx.shape[1] != my.shape[1]:
            raise ValueError(f"X and Y must hold Gaussians of the same "
                             f"dimension, got {mx.shape[1]} and {my.shape[1]}")
        if cx.ndim != cy.ndim:  # one covariance form for both
            cx, cy = (full_covariances(cx, mx.shape[1]),
                      full_covariances(cy, my.shape[1]))
        return np.concatenate([mx, my]), np.concatenate([cx, cy])

    def embedding(self, X, params, rng):
        """The means and standard deviations (the 2-Wasserstein distance of
        diagonal Gaussians)."""
        means, covs = X
        if covs.ndim == 3:
            covs = np.diagonal(covs, axis1=1, axis2=2)
        spread = np.sqrt(covs if covs.ndim == 2 else covs[:, None])
        return np.hstack([means, spread])

    def take(self, Z, index):
        return tuple(a[index] for a in Z)

    def value_keys(self, Z):
        means, covs = Z
        return np.hstack([means, covs.reshape(len(covs), -1)])

    @property
    def degenerate_scale(self):
        return self.params.get("kernel", "rbf") == "rbf"

    def scales(self, Z, gamma, grid, n_threads):
        point = self.params.get("kernel", "rbf")
        if point != "rbf":
            default = (1.0 / Z[0].shape[1]) if point == "polynomial" else None
            return given_gammas(gamma, lambda: default, lambda: [default], grid)
        return given_gammas(gamma, lambda: point_gamma(None, Z[0], point),
                            lambda: point_grid(Z[0], point, N_BANDWIDTHS, grid),
                            grid)

    def fitted_gamma(self, params):
        """gamma, or None for the linear kernel, which has none."""
        return None if params.get("kernel") == "linear" else params.get("gamma")

    def function_gram(self, A, params, n_threads, between):
        """As `Spec`'s, with the function's warning: of the rbf kernel, at
        its gamma, where it is 0 or constant between distinct Gaussians."""
        K = self.function_block(A, None, params, n_threads)
        if between is not None:
            rbf = self.degenerate_scale
            warn_uninformative(K, True, f"{params.get('kernel', 'rbf')} expected",
                               between, params.get("gamma") if rbf else None,
                               (lambda: _all_equal(A[:1], A[1:])) if rbf else None)
        return K, params

    def blocks(self, A, B, scales, n_threads):
        params = self.point_params()
        symmetric = B is None
        (m1, c1), (m2, c2) = A, (A if symmetric else B)
        for g in scales:
            with np.errstate(over="ignore", invalid="ignore"):
                K = _expected(m1, c1, m2, c2, params["kernel"], g,
                              params["degree"], params["coef0"], symmetric,
                              n_threads, False)
            yield K
