"""PSD projection against NumPy eigh references written here."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

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
