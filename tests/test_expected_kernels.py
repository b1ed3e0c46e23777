"""Expected kernels between Gaussians against Monte Carlo (10^5+ samples,
within 4 standard errors), and level-2 kernels against their definitions."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    DegenerateWarning,
    gaussian_expected_kernel,
    level2_kernel,
    sum_match_kernel,
)

from ._references import (
    full_covariances,
    gaussian_expected,
    kernel_values,
    point_kernel,
)

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
    F1, F2 = full_covariances(c1, d), full_covariances(c2, d)
    for i in range(2):
        for j in range(2):
            x = rng.multivariate_normal(m1[i], F1[i], n_samples)
            y = rng.multivariate_normal(m2[j], F2[j], n_samples)
            values = kernel_values(x, y, kernel, gamma, degree, coef0)
            se = values.std() / np.sqrt(n_samples)
            assert abs(K[i, j] - values.mean()) < 4 * se + 1e-12


@pytest.mark.parametrize("kernel", ["rbf", "linear", "polynomial"])
@pytest.mark.parametrize("degree", [2, 3])
def test_zero_covariance_is_the_plain_kernel(kernel, degree):
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    want = point_kernel(X, Y, kernel, 0.3, degree, 1.5)
    for zeros in (np.zeros((5, 4, 4)), np.zeros((5, 4)), np.zeros(5)):
        zeros2 = zeros[:3]
        got = gaussian_expected_kernel(X, zeros, Y, zeros2, kernel=kernel,
                                       gamma=0.3, degree=degree, coef0=1.5)
        assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_forms_agree_and_symmetry():
    m, c = gaussians(6, 3, "diagonal", seed=5)
    for kernel in ("rbf", "polynomial"):
        a = gaussian_expected_kernel(m, c, kernel=kernel, degree=3)
        b = gaussian_expected_kernel(m, full_covariances(c, 3), kernel=kernel,
                                       degree=3)
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


def random_psd(n, d, rng, rank=None):
    """Random covariances, of rank `rank` (default full), with spread-out
    scales."""
    A = rng.normal(size=(n, d, rank or d)) * rng.uniform(0.05, 1.0, (n, 1, 1))
    return A @ A.transpose(0, 2, 1)


@pytest.mark.parametrize("d", [1, 3, 16])
@pytest.mark.parametrize(("n", "m"), [(1, 1), (7, 33), (33, 7), (1, 7)])
def test_full_rbf_against_reference(n, m, d):
    rng = np.random.default_rng(10 * n + m + d)
    m1, c1 = rng.normal(size=(n, d)), random_psd(n, d, rng)
    m2, c2 = rng.normal(size=(m, d)), random_psd(m, d, rng, rank=max(1, d // 2))
    gamma = 0.7 / d
    runs = [gaussian_expected_kernel(m1, c1, m2, c2, gamma=gamma, workers=w)
            for w in (1, 2)]
    assert_allclose(runs[0], gaussian_expected(m1, c1, m2, c2, gamma=gamma),
                    rtol=1e-11, atol=1e-300)
    assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("d", [1, 3, 16])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_full_rbf_symmetric(n, d):
    rng = np.random.default_rng(n + d)
    means, covs = rng.normal(size=(n, d)), random_psd(n, d, rng)
    gamma = 0.7 / d
    runs = [gaussian_expected_kernel(means, covs, gamma=gamma, workers=w)
            for w in (1, 2)]
    K = runs[0]
    assert_allclose(K, gaussian_expected(means, covs, gamma=gamma),
                    rtol=1e-11, atol=1e-300)
    assert_array_equal(K, K.T)
    assert_array_equal(K, runs[1])
    # The upper triangle is the same computation as with the second
    # collection given.
    cross = gaussian_expected_kernel(means, covs, means, covs, gamma=gamma)
    assert_array_equal(np.triu(K), np.triu(cross))


def test_full_rbf_mixed_forms_and_progress():
    # Full covariances on one side, diagonal or isotropic on the other, go
    # through the same engine; progress=True changes nothing.
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(11)
    m1, c1 = rng.normal(size=(40, 3)), random_psd(40, 3, rng)
    m2, v2 = rng.normal(size=(9, 3)), rng.uniform(0.1, 1.0, size=(9, 3))
    K = gaussian_expected_kernel(m1, c1, m2, v2, gamma=0.4, progress=True)
    assert_allclose(K, gaussian_expected(m1, c1, m2, v2, gamma=0.4), rtol=1e-11)
    S = gaussian_expected_kernel(m1, c1, gamma=0.4, workers=2, progress=True)
    assert_array_equal(S, gaussian_expected_kernel(m1, c1, gamma=0.4, workers=1))


def test_full_rbf_extreme_scales():
    # Large gamma * covariance: det(A) beyond the float64 range (> 1e308),
    # values far below 1 but representable; no overflow, no NaN.
    rng = np.random.default_rng(12)
    d = 16
    means, covs = rng.normal(size=(5, d)) * 1e10, random_psd(5, d, rng) * 1e20
    K = gaussian_expected_kernel(means, covs, gamma=1.0)
    assert (K > 0).all() and (K < 1e-100).all()
    want = np.empty((5, 5))
    for i in range(5):
        for j in range(5):
            A = np.eye(d) + 2 * (covs[i] + covs[j])
            dm = means[i] - means[j]
            want[i, j] = -0.5 * np.linalg.slogdet(A)[1] - dm @ np.linalg.solve(A, dm)
    assert_allclose(np.log(K), want, rtol=1e-10)


def test_full_rbf_not_positive_definite():
    # A covariance barely indefinite (within the PSD tolerance) and a huge
    # gamma make I + 2 gamma (S_i + S_j) indefinite for the pairs with S_1:
    # a clear error naming the first, no NaN.
    covs = np.zeros((3, 2, 2))
    covs[1] = [[1.0, 0.0], [0.0, -1e-11]]
    with pytest.raises(ValueError, match=r"not numerically positive definite "
                                         r"for the pair \(0, 1\) \(3 pair"):
        gaussian_expected_kernel(np.zeros((3, 2)), covs, gamma=1e12)


def diagonal_reference(m1, v1, m2, v2, gamma, dtype=np.float64):
    """The diagonal expected RBF kernel from its formula, a product over the
    coordinates, for every pair at once; with dtype np.longdouble (the x87
    80-bit format where available) beyond the float64 range."""
    m1, v1, m2, v2 = (np.asarray(a, dtype) for a in (m1, v1, m2, v2))
    t = 1 + 2 * dtype(gamma) * (v1[:, None, :] + v2[None, :, :])
    dm2 = (m1[:, None, :] - m2[None, :, :]) ** 2
    return np.exp(-0.5 * np.log(t).sum(-1) - dtype(gamma) * (dm2 / t).sum(-1))


@pytest.mark.parametrize("d", [1, 3, 16, 17, 40])
@pytest.mark.parametrize(("n", "m"), [(1, 1), (7, 33), (33, 7), (1, 9), (20, 20)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_diagonal_rbf_against_reference(n, m, d, dtype):
    # d beyond 16 (the factors per logarithm of the engine), m not a
    # multiple of its batches, zero variances among the others.
    rng = np.random.default_rng(100 * n + 10 * m + d)
    m1, m2 = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    v1, v2 = rng.uniform(0, 2, size=(n, d)), rng.uniform(0, 2, size=(m, d))
    v1[:, ::3] = 0.0
    m1, v1, m2, v2 = (a.astype(dtype) for a in (m1, v1, m2, v2))
    gamma = 0.7 / d
    # dtype=np.float64: the float64 arithmetic, also of float32 input
    runs = [gaussian_expected_kernel(m1, v1, m2, v2, gamma=gamma, workers=w,
                                     dtype=np.float64)
            for w in (1, 2)]
    assert_array_equal(runs[0], runs[1])
    assert_allclose(runs[0], diagonal_reference(m1, v1, m2, v2, gamma), rtol=1e-12,
                    atol=0)
    # isotropic variances on one side
    K = gaussian_expected_kernel(m1, v1[:, 0], m2, v2, gamma=gamma, workers=2,
                                 dtype=np.float64)
    want = diagonal_reference(m1, np.repeat(v1[:, :1], d, axis=1), m2, v2, gamma)
    assert_allclose(K, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("n", [1, 9, 30])
def test_diagonal_rbf_symmetric(n):
    rng = np.random.default_rng(n)
    means, variances = rng.normal(size=(n, 5)), rng.uniform(0, 1, size=(n, 5))
    runs = [gaussian_expected_kernel(means, variances, gamma=0.3, workers=w)
            for w in (1, 2)]
    assert_array_equal(runs[0], runs[1])
    assert_array_equal(runs[0], runs[0].T)
    # the upper triangle mirrored: the values of the two-collection call
    assert_array_equal(runs[0], gaussian_expected_kernel(
        means, variances, means, variances, gamma=0.3, workers=2))
    assert_allclose(runs[0], diagonal_reference(means, variances, means, variances,
                                                0.3), rtol=1e-12, atol=0)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_diagonal_rbf_scale_invariance(scale):
    # means times s, variances times s^2 and gamma over s^2: the same values
    rng = np.random.default_rng(7)
    means, variances = rng.normal(size=(11, 6)), rng.uniform(0, 1, size=(11, 6))
    K = gaussian_expected_kernel(means * scale, variances * scale**2,
                                 gamma=0.4 / scale**2, workers=2)
    assert_allclose(K, gaussian_expected_kernel(means, variances, gamma=0.4),
                    rtol=1e-12, atol=0)


@pytest.mark.skipif(np.finfo(np.longdouble).maxexp < 16384,
                    reason="needs an extended long double")
def test_diagonal_rbf_beyond_the_float64_range():
    # Pairs whose product of t (2e25 in each of 16 coordinates), t itself
    # (variances of 1e308, gamma up to 1e300) or (m1 - m2)^2 overflow
    # float64, beside ordinary ones in the same batches: each value as in
    # extended precision, none an error.
    rng = np.random.default_rng(8)
    n, d = 12, 16
    means = rng.normal(size=(n, d))
    variances = rng.uniform(0.1, 1, size=(n, d))
    variances[1] = 1e25
    variances[2] = variances[3] = 0.0
    means[2:4] = 0.0
    means[3, 0] = 1e200
    variances[4, :2] = 1e308
    means[5, 5] = -1.5e308
    means[6, 5] = 1.5e308
    for gamma in (1e-300, 1.0, 1e300):
        K = gaussian_expected_kernel(means, variances, gamma=gamma, workers=2)
        want = diagonal_reference(means, variances, means, variances, gamma,
                                  np.longdouble)
        assert_allclose(K, want.astype(np.float64), rtol=1e-12, atol=1e-320)
    K = gaussian_expected_kernel(means, variances, gamma=1.0)
    assert 0 < K[1, 1] < 1e-180


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
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2), workers=0),
         ValueError, "workers must be a positive int"),
        (lambda: gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2),
                                          workers=1.5),
         TypeError, "workers must be an int or None"),
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


# -- arguments named, overflow named, the ends of the float range ------------


@pytest.mark.parametrize("bad", ["means", "covs", "means2", "covs2"])
@pytest.mark.parametrize("kind", ["complex", "str"])
def test_gaussian_expected_kernel_refuses_complex_and_strings(bad, kind):
    args = {"means": np.zeros((2, 2)), "covs": np.ones(2),
            "means2": np.zeros((3, 2)), "covs2": np.ones(3)}
    args[bad] = (args[bad] + 1j) if kind == "complex" else args[bad].astype(str)
    with pytest.raises(TypeError, match=f"{bad} must hold real numbers"):
        km.gaussian_expected_kernel(**args)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "polynomial"])
@pytest.mark.parametrize(("degree", "error"), [
    (10**12, ValueError), (2**31, ValueError), (10**30, ValueError),
    (0, ValueError), (-2, ValueError), (True, TypeError), (2.5, TypeError),
    ("2", TypeError)])
def test_degree_is_bounded_and_named(kernel, degree, error):
    with pytest.raises(error, match="degree"):
        km.gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2), kernel=kernel,
                                    degree=degree)
    kind = "rbf" if kernel == "linear" else kernel
    with pytest.raises(error, match="degree"):
        km.level2_kernel(np.eye(2), np.ones(2), kind=kind, degree=degree)


def test_degree_as_numpy_int_and_0d_array():
    m, c = np.array([[1.0, 1.0], [0.5, 2.0]]), np.ones(2)
    want = km.gaussian_expected_kernel(m, c, kernel="polynomial", degree=3)
    for degree in (np.int64(3), np.array(3), 3.0):
        assert_array_equal(km.gaussian_expected_kernel(
            m, c, kernel="polynomial", degree=degree), want)


@pytest.mark.parametrize("kind", ["gamma", "coef0"])
def test_gaussian_polynomial_huge_parameters_are_a_value_error(kind):
    kwargs = {"gamma": 1.0, "coef0": 1.0, kind: 1e308}
    with pytest.raises(ValueError, match="polynomial expected kernel values of "
                                         "means and covs overflow"):
        km.gaussian_expected_kernel(np.ones((2, 2)), np.ones(2), kernel="polynomial",
                                    **kwargs)


@pytest.mark.parametrize("kernel", ["linear", "polynomial", "rbf"])
def test_gaussian_expected_kernel_overflow_is_a_clear_error(kernel):
    means = np.array([[1e200, 0.0], [0.0, 1e200]])
    if kernel == "rbf":  # bounded: a value where the formula allows one
        with pytest.warns(DegenerateWarning, match="gamma is far too large"):
            K = km.gaussian_expected_kernel(means, np.ones(2), gamma=1.0)
        assert_allclose(K, np.eye(2) / 5, rtol=1e-15)  # det(I + 4 I)^(-1/2)
        # inf / inf in the plain formula: taken in logs, the value (in [0, 1])
        # is computed, never NaN: det(I + 4e308 I)^(-1/2) on the diagonal,
        # exp(-2.25e308) = 0 off it
        means = np.array([[1.5e308, 0.0], [-1.5e308, 0.0]])
        with pytest.warns(DegenerateWarning, match="gamma is far too large"):
            K = km.gaussian_expected_kernel(means, np.array([1e308, 1e308]),
                                            gamma=1.0)
        assert_allclose(K, np.eye(2) * 2.5e-309, rtol=1e-12, atol=0)
        return
    with pytest.raises(ValueError, match=rf"{kernel} expected kernel values of "
                                         r"means and covs overflow"):
        km.gaussian_expected_kernel(means, np.ones(2), kernel=kernel)


def test_gaussian_expected_kernel_overflow_names_covs():
    means = np.zeros((3, 2))
    covs = np.full((3, 2), 1e300)
    with pytest.raises(ValueError, match="of means and covs overflow"):
        km.gaussian_expected_kernel(means, covs, kernel="polynomial")
    with pytest.raises(ValueError, match="of means, covs, means2 and covs2 overflow"):
        km.gaussian_expected_kernel(means, covs, means, covs, kernel="polynomial")


def test_expected_rbf_kernel_in_logs_where_the_formula_overflows():
    means = np.array([[1.5e308, 0.0], [-1.5e308, 0.0]])
    with pytest.warns(DegenerateWarning, match="rbf expected kernel with gamma=1 "
                                               "is 0 between all Gaussians"):
        K = km.gaussian_expected_kernel(means, np.array([1e308, 1e308]), gamma=1.0)
    assert_allclose(K, np.eye(2) * 2.5e-309, rtol=1e-12, atol=0)


def test_expected_rbf_kernel_huge_gamma_with_zero_variances():
    means = np.array([[0.0, 0.5], [0.25, 0.5]])
    covs = np.array([[0.0, 0.5], [0.0, 0.25]])  # a zero variance per row
    with pytest.warns(DegenerateWarning, match="gamma is far too large"):
        K = km.gaussian_expected_kernel(means, covs, gamma=1.7976931348623157e308)
    assert np.isfinite(K).all() and (K >= 0).all() and (K <= 1).all()


@pytest.mark.parametrize("kind", ["polynomial"])
def test_level2_polynomial_overflow_is_a_clear_error(kind):
    K = np.array([[1e200, 1.0], [1.0, 1e200]])
    with pytest.raises(ValueError, match=r"polynomial.*overflow"):
        km.level2_kernel(K, np.diag(K), kind=kind)
    with pytest.raises(ValueError, match=r"polynomial.*overflow"):
        km.level2_kernel(np.full((2, 2), 10.0), np.ones(2), kind=kind, degree=400)
    # large degrees are fine where the base is at most 1 in absolute value
    K = np.array([[0.5, -0.25], [-0.25, 0.5]])
    with pytest.warns(DegenerateWarning, match="is 0 between all embeddings of K "
                                               r"\(its values are all 0 or below"):
        out = km.level2_kernel(K, np.diag(K), kind=kind, coef0=0.0,
                               degree=2**31 - 1)
    assert np.isfinite(out).all()


def test_level2_rbf_and_nrbf_at_extreme_scales():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(4, 3))
    K = F @ F.T
    d = np.diag(K)
    for scale in (1e-300, 1e-170, 1e170, 1e300, 1.7e308 / np.abs(K).max() / 4):
        R = km.level2_kernel(K * scale, d * scale, kind="rbf", gamma2=1.0 / scale)
        assert_allclose(R, km.level2_kernel(K, d, kind="rbf"), rtol=1e-10)
        N = km.level2_kernel(K * scale, d * scale, kind="nrbf")
        assert_allclose(N, km.level2_kernel(K, d, kind="nrbf"), rtol=1e-10)
    with pytest.raises(TypeError, match="diag_X must hold real numbers"):
        km.level2_kernel(K, d.astype(complex))
    with pytest.raises(TypeError, match="diag_Y must hold real numbers"):
        km.level2_kernel(K, d, ["1", "2", "3", "4"])


def test_constant_kernel_of_covariances_of_two_forms():
    """Equal means, covariances of X and Y given in different forms (a
    constant kernel): the DegenerateWarning, its remark on gamma where the
    Gaussians are the same (diagonal ones against the same isotropic ones),
    not a NumPy error of the check that compares them (found by review)."""
    m = np.zeros((3, 2))
    same = np.ones(3), np.stack([np.eye(2)] * 3)
    for covs2 in same:
        with pytest.warns(DegenerateWarning, match="gamma, from the median"):
            km.gaussian_expected_kernel(m, np.ones((3, 2)), m, covs2)
    with pytest.warns(DegenerateWarning, match="carries no information$"):
        km.gaussian_expected_kernel(m, np.ones((3, 2)), m, 2 * np.ones(3))
