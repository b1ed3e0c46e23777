"""PSD projection against NumPy eigh references written here."""

import math

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import PSDProjector, project_psd

METHODS = ["clip", "flip", "shift", "square"]


def indefinite(n, seed, n_negative=3):
    """A symmetric matrix with a few negative eigenvalues, slightly
    unsymmetric as computed kernels are."""
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = rng.uniform(0.1, 5, size=n)
    w[:n_negative] = -rng.uniform(0.01, 1, size=n_negative)
    K = (V * w) @ V.T
    return K + 1e-13 * rng.normal(size=(n, n))


def reference(K, method):
    """The projections from a full eigendecomposition."""
    K = (K + K.T) / 2
    w, V = np.linalg.eigh(K)
    if method == "clip":
        return (V * np.maximum(w, 0)) @ V.T
    if method == "flip":
        return (V * np.abs(w)) @ V.T
    if method == "shift":
        return K + max(-w.min(), 0) * np.eye(len(K))
    return K @ K.T


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [1, 2, 7, 60])
def test_matches_eigh_reference(method, n):
    K = indefinite(n, n, n_negative=min(3, n))
    P = project_psd(K, method=method)
    assert P.dtype == np.float64
    assert_array_equal(P, P.T)
    scale = np.linalg.norm(K)
    assert np.linalg.eigvalsh(P).min() >= -1e-10 * scale
    assert_allclose(P, reference(K, method), atol=1e-10 * scale)


def test_clip_is_nearest_in_frobenius_norm():
    rng = np.random.default_rng(1)
    K = indefinite(30, 1)
    P = project_psd(K)
    best = np.linalg.norm(K - P)
    for _ in range(20):  # other PSD matrices near P are farther from K
        A = rng.normal(size=(30, 30)) * 1e-2
        other = P + A @ A.T
        assert np.linalg.norm(K - other) > best


def test_psd_input_unchanged():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(20, 25))
    K = A @ A.T
    K = (K + K.T) / 2
    assert_array_equal(project_psd(K), K)
    assert_array_equal(project_psd(K, method="flip"), K)
    assert_array_equal(project_psd(K, method="shift"), K)


def test_float32_and_integer_input():
    K = indefinite(10, 3)
    assert_allclose(project_psd(K.astype(np.float32)),
                    reference(K.astype(np.float32).astype(np.float64), "clip"),
                    atol=1e-10)
    assert_array_equal(project_psd(np.eye(3, dtype=int)), np.eye(3))


@pytest.mark.parametrize("method", METHODS)
def test_projector_on_training_kernel(method):
    K = indefinite(40, 4)
    projector = PSDProjector(method)
    assert_array_equal(projector.fit_transform(K), project_psd(K, method=method))
    if method != "shift":  # the shift only touches the training diagonal
        assert_allclose(projector.transform(K), project_psd(K, method=method),
                        atol=1e-10 * np.linalg.norm(K))


@pytest.mark.parametrize("method", METHODS)
def test_projector_test_rows(method):
    K = indefinite(30, 5)
    rng = np.random.default_rng(5)
    K_test = rng.normal(size=(7, 30))
    got = PSDProjector(method).fit(K).transform(K_test)
    Ks = (K + K.T) / 2
    w, V = np.linalg.eigh(Ks)
    # Chen et al. (2009): the same linear map as on the training kernel.
    want = {
        "clip": K_test @ (V * (w >= 0)) @ V.T,
        "flip": K_test @ (V * np.sign(w)) @ V.T,
        "shift": K_test,
        "square": K_test @ Ks,
    }[method]
    assert got.shape == (7, 30)
    assert_allclose(got, want, atol=1e-10 * np.linalg.norm(K_test) * np.abs(w).max())


def test_projector_attributes():
    K = indefinite(25, 6, n_negative=4)
    w = np.linalg.eigvalsh((K + K.T) / 2)
    clip = PSDProjector().fit(K)
    assert clip.n_train_ == 25
    assert_allclose(np.sort(clip.eigenvalues_), w[:4], atol=1e-12)
    assert clip.eigenvectors_.shape == (25, 4)
    assert_allclose(clip.shift_, -w[0], atol=1e-12)
    shift = PSDProjector("shift").fit(K)
    assert_allclose(shift.shift_, -w[0], atol=1e-12)


@pytest.mark.parametrize("n_negative", [0, 1, 5, 20, 39])
def test_inertia_count(n_negative):
    from kernelmaps.psd import _count_negative

    K = indefinite(40, 7, n_negative=n_negative)
    K = (K + K.T) / 2
    assert _count_negative(K) == np.count_nonzero(np.linalg.eigvalsh(K) < 0)
    # Zero diagonal: Bunch-Kaufman must pivot with 2 x 2 blocks.
    A = np.array([[0.0, 2.0, 0.0], [2.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    assert _count_negative(A) == 1
    assert _count_negative(-np.eye(3)) == 3


def test_many_negative_eigenvalues():
    # Past 1/8 of the spectrum, all eigenpairs are computed (another path).
    K = indefinite(48, 8, n_negative=30)
    atol = 1e-10 * np.linalg.norm(K)
    assert_allclose(project_psd(K), reference(K, "clip"), atol=atol)
    assert_allclose(project_psd(K, method="flip"), reference(K, "flip"), atol=atol)


# -- bad input: a clear TypeError or ValueError naming the argument ----------


@pytest.mark.parametrize(
    ("K", "error", "match"),
    [
        (np.ones((2, 3)), ValueError, "{} must be square"),
        (np.ones((2, 2, 2)), ValueError, "{} must be 2-D"),
        (np.array([[1.0, np.inf], [0, 1]]), ValueError, "{} contains NaN"),
        ([[1, "x"], [0, 1]], TypeError, "{} must be a 2-D array of real"),
    ],
)
def test_psd_bad_matrix(K, error, match):
    """The errors name the argument: K of project_psd, K_train of fit."""
    with pytest.raises(error, match=match.format("K")):
        project_psd(K)
    with pytest.raises(error, match=match.format("K_train")):
        PSDProjector().fit(K)


def test_psd_bad_method_and_test_rows():
    with pytest.raises(ValueError, match="method must be one of 'clip'"):
        project_psd(np.eye(3), method="nearest")
    with pytest.raises(ValueError, match="method must be one of"):
        PSDProjector(method=None).fit(np.eye(3))
    with pytest.raises(ValueError, match="not fitted"):
        PSDProjector().transform(np.eye(3))
    projector = PSDProjector().fit(np.eye(3))
    with pytest.raises(ValueError, match="is expecting 3 features"):
        projector.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="K_test_train contains NaN"):
        projector.transform(np.full((1, 3), np.nan))


# -- the ends of the float range ---------------------------------------------


def indefinite_matrix(n=7, seed=0, n_negative=2):
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = rng.uniform(0.1, 2.0, size=n)
    w[:n_negative] *= -1
    return (V * w) @ V.T


PSD_SCALES = [1e-300, 1e-200, 1e-170, 1e-100, 1.0, 1e100, 1e170, 1e200, 1e300]


@pytest.mark.parametrize("method", ["clip", "flip", "shift", "square"])
@pytest.mark.parametrize("scale", PSD_SCALES)
@pytest.mark.parametrize("K", [np.array([[0.0, 1.0], [1.0, 0.0]]),
                               indefinite_matrix()], ids=["2x2", "7x7"])
def test_project_psd_at_any_scale(K, scale, method):
    if method == "square" and not 1e-150 < scale < 1e150:
        with pytest.raises(ValueError, match=r"'square' projection of K "
                                             r"(overflows|underflows) float64"):
            km.project_psd(K * scale, method=method)
        return
    P = km.project_psd(K * scale, method=method)
    assert np.isfinite(P).all()
    assert_array_equal(P, P.T)
    unit = P / np.abs(P).max()
    assert np.linalg.eigvalsh(unit).min() > -1e-12  # PSD
    want = km.project_psd(K, method=method) * (scale if method != "square"
                                               else scale**2)
    assert_allclose(P, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("method", ["clip", "flip", "shift", "square"])
@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e-100, 1e100, 1e170, 1e300])
def test_psd_projector_at_any_scale(scale, method):
    K = indefinite_matrix(9, seed=1, n_negative=3)
    K_test = np.random.default_rng(2).normal(size=(4, 9))
    ref = km.PSDProjector(method).fit(K)
    proj = km.PSDProjector(method)
    if method == "square" and not 1e-150 < scale < 1e150:
        with pytest.raises(ValueError, match=r"overflows|underflows"):
            proj.fit_transform(K * scale)
        return
    proj.fit(K * scale)
    assert_allclose(proj.eigenvalues_, ref.eigenvalues_ * scale, rtol=1e-10)
    assert_allclose(proj.shift_, ref.shift_ * scale, rtol=1e-10)
    factor = scale**2 if method == "square" else scale
    got = proj.transform(K_test * scale)
    assert np.isfinite(got).all()
    assert_allclose(got, ref.transform(K_test) * factor, rtol=1e-10,
                    atol=1e-12 * factor)


def test_project_psd_of_the_reproducer_is_psd():
    # the inertia count underflowed: the indefinite input came back unchanged
    P = km.project_psd(np.array([[0.0, 1.0], [1.0, 0.0]]) * 1e-170)
    assert_allclose(P, np.full((2, 2), 0.5e-170), rtol=1e-12)


def test_project_psd_near_the_largest_float():
    K = np.array([[1.0, -1.0], [-1.0, 1.0]]) * 1.5e308  # PSD: unchanged
    assert_array_equal(km.project_psd(K), K)
    K = np.array([[0.0, 1.0], [1.0, 0.0]]) * 1.7e308
    assert_allclose(km.project_psd(K), np.full((2, 2), 0.85e308), rtol=1e-12)
    K = np.full((3, 3), 1e308)
    np.fill_diagonal(K, -1e308)  # eigenvalues -2e308 (twice) and 1e308
    with pytest.raises(ValueError, match="overflows float64"):
        km.project_psd(K, method="flip")


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


def test_sparse_kernel_matrices_are_refused_naming_sparse():
    # before: "K must be a 2-D array of real numbers, got dtype object"
    # (NumPy's object array of one sparse matrix)
    for K in (scipy.sparse.csr_matrix(np.eye(3)), scipy.sparse.csr_array(np.eye(3))):
        with pytest.raises(TypeError, match=r"^K must be a dense .* sparse kernel "
                                            r"matrices are not supported"):
            project_psd(K)
        with pytest.raises(TypeError, match=r"^K_train must be a dense"):
            PSDProjector().fit(K)


@pytest.mark.parametrize("method", METHODS)
def test_projector_is_an_estimator(method):
    # the estimator protocol of the maps: parameters from the constructor,
    # fit returns self and sets attributes ending in _, a refit replaces
    # them, clone gives an unfitted twin, pickles keep the fit
    import pickle

    sklearn_base = pytest.importorskip("sklearn.base")
    K, K2 = indefinite(12, seed=1), indefinite(9, seed=2, n_negative=1)
    rows = np.random.default_rng(3).normal(size=(4, 12))
    projector = PSDProjector(method)
    assert projector.get_params() == {"method": method}
    assert not vars(projector).keys() - {"method"}
    assert projector.fit(K) is projector
    assert projector.n_train_ == projector.n_features_in_ == 12
    assert projector.n_features_out_ == 12
    want = projector.transform(rows)
    assert_array_equal(projector.transform(rows, workers=1), want)
    twin = sklearn_base.clone(projector)
    assert repr(twin) == repr(projector) == (
        "PSDProjector()" if method == "clip" else f"PSDProjector(method={method!r})")
    assert not twin.__sklearn_is_fitted__()
    back = pickle.loads(pickle.dumps(projector))
    assert_array_equal(back.transform(rows), want)
    refit = PSDProjector("flip").set_params(method=method).fit(K2).fit(K)
    assert_array_equal(refit.transform(rows), want)
    for name, value in vars(projector).items():
        if isinstance(value, np.ndarray):
            assert_array_equal(vars(refit)[name], value)


def test_projector_in_a_pipeline_on_precomputed_kernels():
    # tagged pairwise: scikit-learn's cross-validation slices the rows and
    # the columns of the training kernel (a test fold: its rows against
    # the training columns), which the projector fits and transforms
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    X = rng.normal(size=(60, 3)) + 3.0 * y[:, None]
    K = np.tanh(X @ X.T / 3 - 1)  # the sigmoid kernel: indefinite
    assert np.linalg.eigvalsh(K[:45, :45]).min() < 0
    search = GridSearchCV(make_pipeline(PSDProjector(), SVC(kernel="precomputed")),
                          {"psdprojector__method": METHODS}, cv=3)
    search.fit(K[:45, :45], y[:45])
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_estimator_[0].n_train_ == 45
    assert search.score(K[45:, :45], y[45:]) > 0.9
