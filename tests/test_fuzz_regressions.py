"""Regressions from the full fuzz run (tests/fuzz): one test per class of
defect, each with the argument its error must name. Warnings are errors in
this suite (pyproject), so a RuntimeWarning escaping fails here too."""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km


def sets(seed=0, n_sets=3, d=2, scale=1.0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(rng.integers(3, 6)), d)) * scale
            for _ in range(n_sets)]


# ------------------------------------------------------ validation classes

SPARSE_POINTS = ["coo_matrix", "coo_array", "dia_matrix", "dia_array", "bsr_matrix",
                 "bsr_array", "csr_matrix", "csc_array", "lil_matrix", "dok_array"]


@pytest.mark.parametrize("fmt", SPARSE_POINTS)
def test_sparse_points_are_a_type_error_naming_the_argument(fmt):
    P = getattr(scipy.sparse, fmt)(np.arange(1.0, 13.0).reshape(6, 2))
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse .*X\.toarray\(\)"):
        km.median_heuristic(P)
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse"):
        km.EMKFeatures(2, n_iter=1, rng=0).fit(P)
    with pytest.raises(TypeError, match=r"^basis is a scipy\.sparse"):
        km.EMKFeatures(basis=P)
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse"):
        km.sum_match_kernel(P)  # a collection of sets
    with pytest.raises(TypeError, match=r"^points is a scipy\.sparse"):
        km.Bags(P, [0, 6])


def test_bags_index_must_be_an_integer():
    bags = km.Bags.from_list(sets())
    for index in ("0", b"0", 0.0, True, np.array([0])):
        with pytest.raises(TypeError, match="Bags indices must be integers"):
            bags[index]
    assert_array_equal(bags[np.int64(1)], bags[1])
    assert_array_equal(bags[np.array(2)], bags[-1])


@pytest.mark.parametrize("call", [
    lambda: km.RandomFourierFeatures(10**400, rng=0).fit(np.ones((3, 2))),
    lambda: km.RandomDistributionFeatures(10**400, rng=0).fit(sets()),
    lambda: km.DoublyRandomDistributionFeatures(8, 10**400, rng=0).fit(sets()),
    lambda: km.DoublyRandomDistributionFeatures(10**400, 8, rng=0).fit(sets()),
])
def test_huge_sizes_are_a_value_error_not_an_overflow_error(call):
    with pytest.raises(ValueError, match=r"about 10\*\*400 entries"):
        call()


def test_huge_k_is_refused_naming_k():
    X = sets(n_sets=2, d=1)
    for k in (2**31, 10**12, 10**400):
        with pytest.raises(ValueError, match=r"^k must be <= 2147483647"):
            km.renyi_divergence(X, k=k)
    sk = pytest.importorskip("kernelmaps.sklearn")
    with pytest.raises(ValueError, match=r"^k must be <= 2147483647"):
        sk.SetKernel("mean_map", k=2**63).fit(X)


@pytest.mark.parametrize("dtype", ["m8[s]", "M8[s]", "U8", "S8", "c16", "O"])
def test_kernel_matrices_refuse_non_real_dtypes(dtype):
    K = np.eye(3).astype("i8").astype(dtype)
    if dtype == "O":
        K[0, 0] = None
    for call, name in [(lambda: km.project_psd(K), "K"),
                       (lambda: km.PSDProjector().fit(K), "K_train"),
                       (lambda: km.divergence_kernel(K), "D"),
                       (lambda: km.level2_kernel(K, np.ones(3)), "K")]:
        with pytest.raises(TypeError, match=rf"^{name} must be a 2-D array of real"):
            call()


@pytest.mark.parametrize("rng", ["seed", -1, 1.5, True])
def test_median_heuristic_checks_rng_even_when_unused(rng):
    X = np.arange(8.0).reshape(4, 2)  # fewer points than sample: rng unused
    with pytest.raises((TypeError, ValueError), match=r"\brng\b"):
        km.median_heuristic(X, rng=rng)
    assert km.median_heuristic(X, sample=3, rng=np.array(5)) > 0


def test_ragged_points_name_x():
    fmap = km.RandomFourierFeatures(8, rng=0, gamma=1.0).fit(np.eye(2))
    with pytest.raises(ValueError, match=r"^X could not be made an array"):
        fmap.transform([[0.5, 0.25], [0.5]])


def test_documented_none_defaults():
    # RandomFourierFeatures: gamma=None is the median heuristic of the
    # training points; DRDF: gamma2=None is the median heuristic of the RDF
    # features of the training sets.
    X = np.random.default_rng(0).normal(size=(20, 4))
    assert km.RandomFourierFeatures(8, gamma=None, rng=0).fit(X).gamma == (
        km.median_heuristic(X))
    train = sets()
    drdf = km.DoublyRandomDistributionFeatures(8, 6, gamma2=None, rng=0).fit(train)
    assert drdf.gamma == km.median_heuristic(train)
    assert drdf.gamma2 == km.median_heuristic(drdf.rdf.transform(train))


def test_anchor_map_checks_a_callable_kernel():
    H = np.random.default_rng(0).random((6, 3))
    A = km.AnchorMap(np.minimum, 5).fit(H)
    assert A.n_features_out > 0
    for kernel in (lambda x, y: x * np.nan, lambda x, y: 1.0):
        with pytest.raises(ValueError, match=r"^kernel must be a vectorised callable"):
            km.AnchorMap(kernel, 5).fit(H)


# ----------------------------------------------------- messages naming args

@pytest.mark.parametrize("func", [km.sum_match_kernel, km.mmd, km.mmd_kernel])
def test_set_kernel_overflow_names_x_and_y(func):
    X, Y = sets(0), sets(1, n_sets=2)
    big = [x * 1e150 for x in X]
    with pytest.raises(ValueError, match="polynomial kernel values of X overflow"):
        func(big, kernel="polynomial", degree=3)
    with pytest.raises(ValueError, match="of X and Y overflow"):
        func(X, [y * 1e150 for y in Y], kernel="polynomial", degree=3)


def test_unbiased_mmd_overflow_is_an_error_without_warning():
    X, Y = sets(0), sets(1, n_sets=2)
    with pytest.raises(ValueError, match="linear kernel values of X and Y overflow"):
        km.mmd([x * 1e300 for x in X], Y, kernel="linear", squared=True,
               unbiased=True)


def test_gaussian_expected_kernel_overflow_names_covs():
    means = np.zeros((3, 2))
    covs = np.full((3, 2), 1e300)
    with pytest.raises(ValueError, match="of means and covs overflow"):
        km.gaussian_expected_kernel(means, covs, kernel="polynomial")
    with pytest.raises(ValueError, match="of means, covs, means2 and covs2 overflow"):
        km.gaussian_expected_kernel(means, covs, means, covs, kernel="polynomial")


def test_rf_pca_errors_name_the_map_and_the_chunks():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match=r"^feature_map cannot transform chunks "
                                         r"block 0 \(its X\): X contains negative"):
        km.rf_pca([X], km.Chi2ChebyshevMap(3), 2)
    with pytest.raises(ValueError, match=r"^feature_maps cannot transform chunks"):
        km.rf_ridge([X], [np.zeros(10)],
                    km.RandomFourierFeatures(4, rng=0, gamma=1.0).fit(np.eye(5)), 2)
    with pytest.raises(ValueError, match=r"features of chunks overflow"):
        km.rf_pca([X * 1e300], None, 2)


def test_rf_models_refuse_empty_input():
    X = np.random.default_rng(0).normal(size=(10, 3))
    pca = km.rf_pca([X], None, 2)
    ridge = km.rf_ridge([X], [X[:, 0]], None, None)
    for call in (pca.transform, ridge.predict):
        with pytest.raises(ValueError, match=r"^X is empty"):
            call(X[:0])
        with pytest.raises(ValueError, match=r"^X is empty"):
            call(scipy.sparse.csr_matrix(X[:0]))


def test_emk_kmeans_error_names_the_points():
    with pytest.raises(ValueError, match=r"n_basis=4 distinct centres in the points"):
        km.EMKFeatures(4, n_iter=1, init="kmeans", rng=0).fit(np.zeros((12, 2)))


# --------------------------------------------- no RuntimeWarning, right value

def test_exact_histogram_kernels_at_1e308_without_warning():
    rng = np.random.default_rng(0)
    H = rng.random((4, 5))
    big = H / H.sum(axis=1, keepdims=True) * 1e308
    # the row sums of 0.5 * 1e308-scale values overflow, the distances do not
    D = km.chi2_distance(big, H)
    assert np.isfinite(D).all()
    assert_allclose(D, km.chi2_distance(big / 2**60, H / 2**60) * 2**60, rtol=1e-12)
    assert_allclose(km.exp_chi2_kernel(big, H), 0.0)
    assert_allclose(km.exp_chi2_kernel(H, beta=1.7976931348623157e308),
                    np.eye(4))
    with pytest.raises(ValueError, match="rows of X overflow"):
        km.chi2_distance(np.vstack([np.full(5, 1e308), np.zeros(5)]))  # 2.5e308
    with pytest.raises(ValueError, match="overflow float64"):
        km.additive_chi2_kernel(np.full((2, 5), 1e308))


def test_huge_gamma2_gives_zero_without_warning():
    X = sets(0, d=1)
    K = km.mmd_kernel(X, kernel="laplacian", gamma2=1.7976931348623157e308)
    assert_array_equal(K, np.eye(3))
    rng = np.random.default_rng(0)
    F = rng.normal(size=(3, 2))
    G = F @ F.T
    L = km.level2_kernel(G, np.diag(G), kind="rbf", gamma2=1.7976931348623157e308)
    assert_array_equal(L, np.eye(3))


def test_median_heuristic_at_any_scale():
    X = np.random.default_rng(0).normal(size=(8, 2))
    g = km.median_heuristic(X)
    for scale in (2.0**-500, 2.0**-300, 2.0**500):
        assert km.median_heuristic(X * scale) == g / scale**2  # exact scaling
    for scale in (1e300, 1e-300):  # gamma 1e-600, 1e600: beyond float64
        with pytest.raises(ValueError, match="median distance of X"):
            km.median_heuristic(X * scale)


def test_renyi_of_subnormal_sets_against_normal_ones():
    # rho_k within the subnormal sets underflowed in squared distances at
    # the common scale (set by Y ~ 1): now at their own scale. Reference:
    # the estimator in logs, the subnormals as integers times 2**-1074.
    from scipy.special import gammaln

    rng = np.random.default_rng(0)
    units = [rng.choice(np.arange(-300, 300), size=7, replace=False)[:, None]
             for _ in range(3)]
    X = [np.ldexp(u.astype(float), -1074) for u in units]
    Y = sets(1, n_sets=2, d=1)
    k, alpha = 2, 1.5
    got = km.renyi_divergence(X, Y, k=k, alpha=alpha, clamp=False)
    log_b = 2 * gammaln(k) - gammaln(k - alpha + 1) - gammaln(k + alpha - 1)
    for i, u in enumerate(units):
        du = np.abs(u - u.T).astype(float)
        np.fill_diagonal(du, np.inf)
        log_rho = np.log(np.sort(du, axis=1)[:, k - 1]) - 1074 * math.log(2)
        log_floor = math.log(1e-3) + np.median(log_rho)  # an odd count here
        log_rho = np.maximum(log_rho, log_floor)
        for j, y in enumerate(Y):
            log_nu = np.log(np.sort(np.abs(X[i] - y.T), axis=1)[:, k - 1])
            u_t = (1 - alpha) * (log_rho - np.maximum(log_nu, log_floor))
            log_i = (log_b + (1 - alpha) * math.log((len(u) - 1) / len(y))
                     + np.logaddexp.reduce(u_t) - math.log(len(u)))
            assert got[i, j] == pytest.approx(log_i / (alpha - 1), rel=1e-12)


def test_divergence_kernel_of_subnormal_divergences():
    D = np.array([[0.0, 49, 59, 57], [49, 0, 64, 50], [59, 64, 0, 33],
                  [57, 50, 33, 0]]) * 5e-324
    K = km.divergence_kernel(D)
    assert_allclose(K, km.divergence_kernel(np.ldexp(D, 1074)), rtol=1e-14)
    K = km.divergence_kernel(D, gamma=1e290, power=0.9)
    want = km.divergence_kernel(D * 2.0**1000, gamma=1e290 * 2.0**-900, power=0.9)
    assert_allclose(K, want, rtol=1e-12)


def test_chi2_direct_map_with_parameters_spanning_the_float_range():
    X = np.random.default_rng(11).integers(0, 65, size=(4, 5)) / 64.0
    k = np.array([1e308, 0.1])
    Z = km.Chi2DirectMap(k=k).transform(X)
    # the exact series, term by term, in long double
    x = X.astype(np.longdouble)[..., None]
    kk = k.astype(np.longdouble)
    c0 = 2 * np.sqrt(kk[0]) * x[..., 0] / (x[..., 0] + kk[0])
    c1 = ((x[..., 0] - kk[0]) / (x[..., 0] + kk[0])
          * 2 * np.sqrt(kk[1]) * x[..., 0] / (x[..., 0] + kk[1]))
    want = np.stack([c0, c1], axis=-1).reshape(4, 10).astype(np.float64)
    assert_allclose(Z, want, rtol=1e-12, atol=0)


def test_expected_rbf_kernel_in_logs_where_the_formula_overflows():
    means = np.array([[1.5e308, 0.0], [-1.5e308, 0.0]])
    K = km.gaussian_expected_kernel(means, np.array([1e308, 1e308]), gamma=1.0)
    assert_allclose(K, np.eye(2) * 2.5e-309, rtol=1e-12, atol=0)


def test_emk_basis_far_from_the_origin():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(14, 2))
    fit = km.EMKFeatures(3, n_iter=3, rng=0).fit(P + 1e8)
    ref = km.EMKFeatures(3, n_iter=3, rng=0).fit(P)
    # translation-invariant kernel: the same basis, shifted
    assert_allclose(fit.basis - 1e8, ref.basis, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"gamma": 1.7976931348623157e308},
                                    {"learning_rate": 1.7976931348623157e308}])
def test_emk_fit_with_huge_parameters_without_warning(kwargs):
    P = np.random.default_rng(0).normal(size=(12, 2))
    fmap = km.EMKFeatures(4, n_iter=3, rng=0, kernel="laplacian", **kwargs).fit(P)
    assert np.isfinite(fmap.basis).all()


def test_sklearn_expected_kernel_at_1e308():
    sk = pytest.importorskip("kernelmaps.sklearn")
    rng = np.random.default_rng(0)
    X = np.hstack([rng.uniform(-1, 1, (4, 2)), rng.uniform(0, 1, (4, 2))]) * 1e308
    K = sk.ExpectedKernel(covariance="diag", gamma=1.0).fit_transform(X)
    assert np.isfinite(K).all() and (K >= 0).all()
    est = sk.ExpectedKernel(covariance="diag", gamma=1.0,
                            workers=np.array(2)).fit(X / 1e308)
    again = pickle.loads(pickle.dumps(est))
    assert_array_equal(again.transform(X / 1e308), est.transform(X / 1e308))


def test_project_psd_near_the_float_limit():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (5, 5))
    K = (A + A.T) / 2
    big = K / np.abs(K).max() * 1e308
    P = km.project_psd(big, method="clip")
    want = km.project_psd(K / np.abs(K).max(), method="clip") * 1e308
    assert_allclose(P, want, rtol=1e-10, atol=1e-12 * 1e308)
    assert math.isfinite(float(np.abs(P).max()))


@pytest.mark.parametrize("method", ["clip", "flip"])
def test_psd_projection_subtracts_at_the_unit_scale(method):
    # the flip correction 2 V l V^T alone exceeds float64 here; K minus it
    # does not (found with --seed 1)
    K = np.array([[80.3921568627451, 59.80392156862745, -3.92156862745098],
                  [59.80392156862745, 100.0, 57.84313725490197],
                  [-3.92156862745098, 57.84313725490197, -96.07843137254902]]) * 1e306
    P = km.project_psd(K, method=method)
    want = km.project_psd(K / 2.0**60, method=method) * 2.0**60
    assert_allclose(P, want, rtol=1e-12, atol=0)
    assert_allclose(km.PSDProjector(method).fit(K).transform(K), P, rtol=1e-12,
                    atol=1e-12 * 1e308)


def test_expected_rbf_kernel_huge_gamma_with_zero_variances():
    means = np.array([[0.0, 0.5], [0.25, 0.5]])
    covs = np.array([[0.0, 0.5], [0.0, 0.25]])  # a zero variance per row
    K = km.gaussian_expected_kernel(means, covs, gamma=1.7976931348623157e308)
    assert np.isfinite(K).all() and (K >= 0).all() and (K <= 1).all()


def test_anchor_map_fit_near_the_float_limit():
    rng = np.random.default_rng(7)
    H = rng.integers(0, 65, size=(6, 5)) / 64.0 * 1e308
    fmap = km.AnchorMap("intersection", 5, anchors="kmeans").fit(H)
    assert np.isfinite(fmap.transform(H)).all()
