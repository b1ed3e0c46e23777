"""The spec of the expected kernels between Gaussians
(`kernelmaps._spec`), on Gaussians checked once, a block at a time:
`gaussian_expected_kernel` runs it, and the tools over objects
(`mmd_test`, `NystroemMap`, `ExpectedKernel`) iterate it."""

import numpy as np

from .. import _array_api
from .._engine.expected import rbf_diagonal, rbf_full
from .._spec import N_BANDWIDTHS, Spec, given_gammas, point_gamma, point_grid, register
from .._validation import check_choice, check_gaussians, check_scalar, full_covariances
from .._warnings import warn_uninformative
from . import _array_expected

__all__ = ["ExpectedSpec"]

# The engine takes the degree as a C int; larger degrees are refused.
MAX_DEGREE = 2**31 - 1
# Bytes of a block of rows of the polynomial kernel's cross terms.
EXPECTED_BLOCK_BYTES = 1 << 26


@register("expected")
class ExpectedSpec(Spec):
    """`gaussian_expected_kernel` of Gaussians ``(means, covs)``; its scale
    is the point kernel's gamma."""

    kind = "gaussians"
    takes = ("kernel", "gamma", "degree", "coef0")
    scale = "gamma"

    def call(self, A, B, params):
        """`Spec.call` of the Gaussians A and B, each a (means, covs) pair."""
        return self.public_function(*A, *(B or (None, None)), **{
            k: v for k, v in params.items() if k in self.takes})

    def check_params(self, params):
        """The point kernel's parameters given, checked as
        `gaussian_expected_kernel` checks them (gamma None: its default,
        fixed on the data)."""
        p = {"kernel": "rbf", "gamma": None, "degree": 2, "coef0": 1.0, **params}
        kernel = check_choice(p["kernel"], "kernel", ("rbf", "linear", "polynomial"))
        gamma = p["gamma"]
        if gamma is not None:
            gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
        coef0 = check_scalar(p["coef0"], "coef0")
        degree = check_scalar(p["degree"], "degree", kind="int", low=1,
                              high=MAX_DEGREE)
        if kernel == "polynomial" and degree not in (2, 3):
            raise ValueError(
                f"degree must be 2 or 3 for the polynomial kernel, got {degree}"
            )
        checked = {"kernel": kernel, "gamma": gamma, "degree": degree,
                   "coef0": coef0}
        return {**params, **{name: checked[name] for name in self.takes
                             if name in params}}

    def points_of(self, X):
        return X[0]

    def check(self, X, name="X"):
        _check_pair(X, name)
        means, covs, _ = check_gaussians(X[0], X[1], f"{name}[0] (means)",
                                         f"{name}[1] (covs)")
        return means, covs

    def check_array(self, library, X, name="X"):
        """`check` for Gaussians of another library (`_array_api`), on
        their device, as float64 (as the engine takes them)."""
        _check_pair(X, name)
        xp = library.xp
        means, covs, _ = _array_expected.check_gaussians(
            library, X[0], X[1], f"{name}[0] (means)", f"{name}[1] (covs)")
        return xp.astype(means, xp.float64), xp.astype(covs, xp.float64)

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

    def array_warning(self, K, A, params, between):
        """`function_gram`'s, the Gaussians compared on their device."""
        library = _array_api.library_of(K=K)
        rbf = self.degenerate_scale
        _array_api.warn_uninformative(
            library, K, True, f"{params.get('kernel', 'rbf')} expected", between,
            params.get("gamma") if rbf else None,
            (lambda: _array_expected.all_equal(library, A[:1], A[1:])) if rbf else None)

    def blocks(self, A, B, scales, n_threads, progress=False):
        """The expected kernel between the Gaussians A and B (None: A, its
        upper triangle computed and mirrored, exactly symmetric) at each
        gamma, float64, unchecked (not finite where a value overflows):
        what `gaussian_expected_kernel` returns."""
        params = self.point_params()
        for g in scales:
            with np.errstate(over="ignore", invalid="ignore"):
                K = _expected(A, B, params["kernel"], g, params["degree"],
                              params["coef0"], n_threads, progress)
            yield K


def _all_equal(means, covs):
    """Whether the Gaussians given by the arrays of `means` and those of
    `covs` (one or more collections) are all the same: each group holds
    one row, repeated, the covariances compared as full matrices where
    their forms differ."""
    if len({c.ndim for c in covs}) > 1:
        covs = [full_covariances(c, means[0].shape[1]) for c in covs]
    return all(np.all(np.concatenate(group) == group[0][:1])
               for group in (means, covs))


def _expected(A, B, kernel, gamma, degree, coef0, n_threads, progress):
    """The expected kernel of checked Gaussians A and B (None: A) for the
    point kernel `kernel` at `gamma`, float64, unchecked."""
    symmetric = B is None
    (m1, c1), (m2, c2) = A, (A if symmetric else B)
    d = m1.shape[1]
    if kernel == "rbf":
        if c1.ndim < 3 and c2.ndim < 3:
            # Diagonal S: det and solve per coordinate.
            v1 = c1 if c1.ndim == 2 else c1[:, None] * np.ones(d)
            v2 = c2 if c2.ndim == 2 else c2[:, None] * np.ones(d)
            return rbf_diagonal(m1, v1, m2, v2, gamma, symmetric, n_threads,
                                progress)
        return rbf_full(m1, full_covariances(c1, d), m2, full_covariances(c2, d),
                        gamma, symmetric, n_threads, progress)
    dot = m1 @ m2.T
    if kernel == "linear":
        return dot
    F1, F2 = full_covariances(c1, d), full_covariances(c2, d)
    # Traces of products of d x d matrices are inner products of their
    # flattened forms: matrix products of (n, d^2) arrays.
    A1 = (F1 + m1[:, :, None] * m1[:, None, :]).reshape(len(m1), d * d)
    A2 = (F2 + m2[:, :, None] * m2[:, None, :]).reshape(len(m2), d * d)
    second = A1 @ A2.T  # tr(A1 A2), the covariances being symmetric
    # NumPy scalars: their powers overflow to inf (reported by the caller)
    # where Python floats raise OverflowError
    gamma, coef0 = np.float64(gamma), np.float64(coef0)
    if degree == 2:
        return gamma**2 * second + 2 * gamma * coef0 * dot + coef0**2
    f1, f2 = F1.reshape(len(m1), d * d), F2.reshape(len(m2), d * d)
    o1 = (m1[:, :, None] * m1[:, None, :]).reshape(len(m1), d * d)
    o2 = (m2[:, :, None] * m2[:, None, :]).reshape(len(m2), d * d)
    # m1^T S2 S1 m2 = (S2 m1) . (S1 m2), over blocks of rows.
    cross = np.empty_like(dot)
    block = max(1, EXPECTED_BLOCK_BYTES // (8 * len(m2) * d))
    for start in range(0, len(m1), block):
        rows = slice(start, start + block)
        left = np.einsum("jab,ib->ija", F2, m1[rows])
        right = np.einsum("iab,jb->ija", F1[rows], m2)
        cross[rows] = np.einsum("ija,ija->ij", left, right)
    third = dot**3 + 3 * dot * (o1 @ f2.T + f1 @ o2.T + f1 @ f2.T) + 6 * cross
    return (gamma**3 * third + 3 * gamma**2 * coef0 * second
            + 3 * gamma * coef0**2 * dot + coef0**3)


def _check_pair(X, name):
    if not (isinstance(X, tuple) and len(X) == 2):
        raise TypeError(
            f"{name} must be a pair (means, covs) of Gaussians for the "
            f"expected kernel, got {type(X).__name__}")
