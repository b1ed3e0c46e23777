"""Properties of the exact kernels on generated inputs (hypothesis):
symmetry for Y=None, positive semi-definite mean map Gram matrices, MMD >= 0,
the chi2 kernel of a histogram with itself, and bit-identical results for
one and two threads."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import kernelmaps as km

# The inputs drawn include kernel scales far off the data's, where the point
# kernel is the identity or a constant: exact, and said by a
# DegenerateWarning, which these invariants do not test.
pytestmark = pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")

finite = st.floats(-8.0, 8.0, allow_nan=False, allow_infinity=False, width=64)
nonneg = st.floats(0.0, 8.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def set_collections(draw, max_sets=5, max_points=6):
    d = draw(st.integers(1, 4))
    n_sets = draw(st.integers(1, max_sets))
    return [
        draw(arrays(np.float64, (draw(st.integers(1, max_points)), d), elements=finite))
        for _ in range(n_sets)
    ]


@st.composite
def histograms(draw, max_rows=6, max_bins=8):
    n, d = draw(st.integers(1, max_rows)), draw(st.integers(1, max_bins))
    return draw(arrays(np.float64, (n, d), elements=nonneg))


kernels = st.sampled_from(["rbf", "laplacian", "linear", "polynomial"])
gammas = st.floats(1e-3, 4.0)
HIST_KERNELS = [
    km.additive_chi2_kernel,
    km.chi2_distance,
    km.exp_chi2_kernel,
    km.intersection_kernel,
    km.hellinger_kernel,
    km.js_kernel,
]


def _exactly_symmetric(K):
    np.testing.assert_array_equal(K, K.T)


@given(set_collections(), kernels, gammas)
def test_sum_match_kernel_is_symmetric(X, kernel, gamma):
    _exactly_symmetric(km.sum_match_kernel(X, kernel=kernel, gamma=gamma))


@given(set_collections(), st.sampled_from(["rbf", "laplacian"]), gammas)
def test_mmd_is_symmetric_and_non_negative(X, kernel, gamma):
    D = km.mmd(X, kernel=kernel, gamma=gamma)
    _exactly_symmetric(D)
    assert np.all(D >= 0)
    np.testing.assert_array_equal(np.diag(D), 0.0)
    D2 = km.mmd(X, kernel=kernel, gamma=gamma, squared=True)
    assert np.all(D2 >= 0)


@given(histograms(), st.sampled_from(HIST_KERNELS))
def test_histogram_kernels_are_symmetric(X, kernel):
    _exactly_symmetric(kernel(X))


@given(set_collections(max_sets=6), gammas)
def test_mean_map_gram_is_psd(X, gamma):
    K = km.sum_match_kernel(X, gamma=gamma)
    w = np.linalg.eigvalsh(K)
    assert w.min() >= -1e-10 * max(abs(w).max(), 1e-300)


@given(histograms())
def test_chi2_kernel_of_a_histogram_with_itself_is_its_sum(X):
    K = km.additive_chi2_kernel(X)
    np.testing.assert_allclose(np.diag(K), X.sum(axis=1), rtol=1e-12, atol=1e-300)


@given(set_collections(), kernels, gammas)
def test_set_kernels_bit_identical_for_one_and_two_threads(X, kernel, gamma):
    for f in (km.sum_match_kernel, km.mmd):
        a = f(X, kernel=kernel, gamma=gamma, workers=1)
        b = f(X, kernel=kernel, gamma=gamma, workers=2)
        np.testing.assert_array_equal(a, b)


@given(histograms(), histograms(), st.sampled_from(HIST_KERNELS))
def test_histogram_kernels_bit_identical_for_one_and_two_threads(X, Y, kernel):
    Y = Y[:, : X.shape[1]] if Y.shape[1] >= X.shape[1] else np.zeros((2, X.shape[1]))
    for y in (None, Y):
        np.testing.assert_array_equal(kernel(X, y, workers=1), kernel(X, y, workers=2))


@given(set_collections(max_points=12))
def test_renyi_divergence_bit_identical_for_one_and_two_threads(X):
    X = [np.vstack([s, s + 0.5, s - 0.25]) for s in X]  # at least 3 points per set
    a = km.renyi_divergence(X, k=2, workers=1)
    b = km.renyi_divergence(X, k=2, workers=2)
    np.testing.assert_array_equal(a, b)
