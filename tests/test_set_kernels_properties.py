"""Invariants of the set kernels, on inputs drawn by hypothesis."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose, assert_array_equal

from kernelmaps import mmd, mmd_kernel, sum_match_kernel

# The inputs drawn include kernel scales far off the data's, where the point
# kernel is the identity or a constant: exact, and said by a
# DegenerateWarning, which these invariants do not test.
pytestmark = pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")

KERNELS = st.sampled_from(["rbf", "laplacian", "linear", "polynomial"])
VALUES = st.floats(-50, 50, allow_nan=False, width=64)


@st.composite
def collections(draw, min_sets=1, max_sets=6):
    d = draw(st.integers(1, 4))
    n_sets = draw(st.integers(min_sets, max_sets))
    return [
        draw(arrays(np.float64, (draw(st.integers(1, 9)), d), elements=VALUES))
        for _ in range(n_sets)
    ]


def gamma_for(sets):
    """A gamma that keeps rbf values away from total underflow."""
    spread = max(np.ptp(np.vstack(sets)), 1.0)
    return 1.0 / spread**2


@given(collections(), KERNELS)
def test_symmetric_and_equal_to_explicit_y(X, kernel):
    gamma = gamma_for(X)
    K = sum_match_kernel(X, kernel=kernel, gamma=gamma)
    assert np.isfinite(K).all()
    assert_array_equal(K, K.T)
    scale = max(np.abs(K).max(), 1e-300)
    assert_allclose(sum_match_kernel(X, X, kernel=kernel, gamma=gamma), K,
                    rtol=0, atol=1e-12 * scale)


@given(collections(), KERNELS, st.randoms(use_true_random=False))
def test_invariant_to_point_order_and_permutes_with_sets(X, kernel, random):
    gamma = gamma_for(X)
    K = sum_match_kernel(X, kernel=kernel, gamma=gamma)
    shuffled = [x[random.sample(range(len(x)), len(x))] for x in X]
    order = random.sample(range(len(X)), len(X))
    K2 = sum_match_kernel([shuffled[i] for i in order], kernel=kernel, gamma=gamma)
    scale = max(np.abs(K).max(), 1e-300)
    assert_allclose(K2, K[np.ix_(order, order)], rtol=0, atol=1e-12 * scale)


@given(collections(min_sets=2), st.sampled_from(["rbf", "laplacian"]))
def test_mmd_is_a_pseudometric(X, kernel):
    gamma = gamma_for(X)
    D = mmd(X, kernel=kernel, gamma=gamma)
    assert np.isfinite(D).all()
    assert (D >= 0).all()
    assert_array_equal(np.diag(D), 0)
    assert_array_equal(D, D.T)
    # Triangle inequality, up to roundoff on a unit-bounded kernel.
    n = len(X)
    for k in range(n):
        assert (D[:, [k]] + D[[k], :] + 1e-7 >= D).all()


@given(collections(), collections(), KERNELS)
def test_mmd_kernel_bounded_with_unit_diagonal(X, Y, kernel):
    d = X[0].shape[1]
    Y = [y[:, :1].repeat(d, axis=1) for y in Y]
    gamma = gamma_for(X + Y)
    K = mmd_kernel(X, kernel=kernel, gamma=gamma)
    assert_array_equal(np.diag(K), 1.0)
    KXY = mmd_kernel(X, Y, kernel=kernel, gamma=gamma)
    assert ((KXY >= 0) & (KXY <= 1)).all()


@given(collections(), KERNELS)
def test_workers_give_identical_results(X, kernel):
    gamma = gamma_for(X)
    assert_array_equal(sum_match_kernel(X, kernel=kernel, gamma=gamma, workers=1),
                       sum_match_kernel(X, kernel=kernel, gamma=gamma, workers=2))
