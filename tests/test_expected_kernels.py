"""Expected kernels between Gaussians against Monte Carlo (10^5+ samples,
within 4 standard errors), and level-2 kernels against their definitions."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kernelmaps import gaussian_expected_kernel, level2_kernel, sum_match_kernel

FORMS = ["full", "diagonal", "isotropic"]


def gaussians(n, d, form, seed):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=0.7, size=(n, d))
    if form == "full":
        A = rng.normal(scale=0.4, size=(n, d, d))
        covs = A @ A.transpose(0, 2, 1)
    elif form == "diagonal":
        covs = rng.uniform(0.05, 0.5, size=(n, d))
    else:
        covs = rng.uniform(0.05, 0.5, size=n)
    return means, covs


def full(covs, d):
    if covs.ndim == 3:
        return covs
    if covs.ndim == 2:
        return np.array([np.diag(c) for c in covs])
    return covs[:, None, None] * np.eye(d)


def point_kernel(x, y, kernel, gamma, degree, coef0):
    if kernel == "rbf":
        return np.exp(-gamma * ((x - y) ** 2).sum(-1))
    dot = (x * y).sum(-1)
    return dot if kernel == "linear" else (gamma * dot + coef0) ** degree


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("kernel", "degree"), [("rbf", 2), ("linear", 2),
                                                ("polynomial", 2), ("polynomial", 3)])
def test_against_monte_carlo(form, kernel, degree):
    d, n_samples = 3, 200_000
    m1, c1 = gaussians(2, d, form, seed=1)
    m2, c2 = gaussians(2, d, form, seed=2)
    gamma, coef0 = 0.4, 0.5
    K = gaussian_expected_kernel(m1, c1, m2, c2, kernel=kernel, gamma=gamma,
                                 degree=degree, coef0=coef0)
    rng = np.random.default_rng(3)
    F1, F2 = full(c1, d), full(c2, d)
    for i in range(2):
        for j in range(2):
            x = rng.multivariate_normal(m1[i], F1[i], n_samples)
            y = rng.multivariate_normal(m2[j], F2[j], n_samples)
            values = point_kernel(x, y, kernel, gamma, degree, coef0)
            se = values.std() / np.sqrt(n_samples)
            assert abs(K[i, j] - values.mean()) < 4 * se + 1e-12


@pytest.mark.parametrize("kernel", ["rbf", "linear", "polynomial"])
@pytest.mark.parametrize("degree", [2, 3])
def test_zero_covariance_is_the_plain_kernel(kernel, degree):
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    want = point_kernel(X[:, None], Y[None], kernel, 0.3, degree, 1.5)
    for zeros in (np.zeros((5, 4, 4)), np.zeros((5, 4)), np.zeros(5)):
        zeros2 = zeros[:3]
        got = gaussian_expected_kernel(X, zeros, Y, zeros2, kernel=kernel,
                                       gamma=0.3, degree=degree, coef0=1.5)
        assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_forms_agree_and_symmetry():
    m, c = gaussians(6, 3, "diagonal", seed=5)
    for kernel in ("rbf", "polynomial"):
        a = gaussian_expected_kernel(m, c, kernel=kernel, degree=3)
        b = gaussian_expected_kernel(m, full(c, 3), kernel=kernel, degree=3)
        assert_allclose(a, b, rtol=1e-12)
        assert_allclose(a, a.T, rtol=1e-12)


def test_level2_against_definitions():
    rng = np.random.default_rng(6)
    sets = [rng.normal(size=(rng.integers(5, 15), 3)) for _ in range(6)]
    K = sum_match_kernel(sets, gamma=0.5)
    d = np.diag(K)
    # Embedding distances from their definition via the kernel trick.
    dist2 = d[:, None] + d[None, :] - 2 * K
    assert_allclose(level2_kernel(K, d, kind="rbf", gamma2=0.7),
                    np.exp(-0.7 * np.maximum(dist2, 0)), rtol=1e-14)
    assert_allclose(level2_kernel(K, d, kind="linear"), K)
    assert_allclose(level2_kernel(K, d, kind="polynomial", gamma2=0.5, degree=3,
                                  coef0=2.0), (0.5 * K + 2.0) ** 3)
    cos = K / np.sqrt(np.outer(d, d))
    assert_allclose(level2_kernel(K, d, kind="nrbf", gamma2=1.3),
                    np.exp(-1.3 * (2 - 2 * cos)), rtol=1e-13)
    R = level2_kernel(K[:2], d[:2], d, kind="rbf")
    assert R.shape == (2, 6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), -np.ones(2)),
         ValueError, "covs must be >= 0"),
        (lambda: gaussian_expected_kernel(
            np.zeros((1, 2)), np.array([[[1.0, 2.0], [2.0, 1.0]]])),
         ValueError, r"covs\[0\] is not positive semi-definite"),
        (lambda: gaussian_expected_kernel(
            np.zeros((1, 2)), np.array([[[1.0, 0.5], [0.0, 1.0]]])),
         ValueError, "symmetric"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones((3, 2))),
         ValueError, "covs must have shape"),
        (lambda: gaussian_expected_kernel(np.zeros(2), np.ones(2)),
         ValueError, "means must be a non-empty 2-D array"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2),
                                          np.zeros((2, 3)), np.ones(2)),
         ValueError, "Incompatible dimension"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2),
                                          np.zeros((2, 2))),
         ValueError, "given together"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2), gamma=0),
         ValueError, "gamma must be > 0"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2),
                                          kernel="polynomial", degree=4),
         ValueError, "degree must be 2 or 3"),
        (lambda: gaussian_expected_kernel(np.full((2, 2), np.nan), np.ones(2)),
         ValueError, "must be finite"),
        (lambda: level2_kernel(np.eye(2), np.ones(3)), ValueError,
         "diag_X and diag_Y must have shapes"),
        (lambda: level2_kernel(np.eye(2), np.zeros(2), kind="nrbf"), ValueError,
         "must be > 0"),
        (lambda: level2_kernel(np.eye(2), np.ones(2), kind="cosine"), ValueError,
         "kind must be one of"),
        (lambda: level2_kernel(np.eye(2), np.ones(2), gamma2=-1), ValueError,
         "gamma2 must be > 0"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
