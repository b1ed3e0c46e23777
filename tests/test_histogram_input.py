"""Bad input to the histogram kernels and maps: a clear TypeError or
ValueError naming the argument."""

import numpy as np
import pytest
import scipy.sparse

from kernelmaps import (
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)

EXACT = [additive_chi2_kernel, chi2_distance, exp_chi2_kernel, hellinger_kernel,
         intersection_kernel, js_kernel]
GOOD = np.ones((3, 4))


def with_value(value, sparse=False):
    A = np.ones((3, 4))
    A[1, 2] = value
    return scipy.sparse.csr_matrix(A) if sparse else A


@pytest.mark.parametrize("f", EXACT)
@pytest.mark.parametrize(
    ("X", "error", "match"),
    [
        (with_value(-0.5), ValueError, "X contains negative values"),
        (with_value(-0.5, sparse=True), ValueError, "X contains negative values"),
        (with_value(np.nan), ValueError, "X contains NaN or infinity"),
        (with_value(np.inf, sparse=True), ValueError, "X contains NaN or infinity"),
        (np.ones(4), ValueError, "X must be a 2-D array"),
        (np.ones((2, 2, 2)), ValueError, "X must be a 2-D array"),
        (np.ones((0, 4)), ValueError, "X is empty"),
        (np.ones((3, 0)), ValueError, "X is empty"),
        (np.array([["a", "b"]]), TypeError, "X must hold real numbers"),
        (np.ones((2, 2)) * 1j, TypeError, "X must hold real numbers"),
        ([[1, 2], [3]], ValueError, "X could not be made an array"),
    ],
)
def test_exact_bad_x(f, X, error, match):
    with pytest.raises(error, match=match):
        f(X)


@pytest.mark.parametrize("f", EXACT)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(
    ("value", "match"),
    [(-1.0, "Y contains negative values"), (np.nan, "Y contains NaN or infinity")],
)
def test_exact_bad_y(f, sparse, value, match):
    with pytest.raises(ValueError, match=match):
        f(GOOD, with_value(value, sparse))


@pytest.mark.parametrize("f", EXACT)
def test_exact_dimension_mismatch(f):
    with pytest.raises(ValueError, match=r"Incompatible dimension.*X has 4.*Y has 5"):
        f(GOOD, np.ones((2, 5)))
    with pytest.raises(ValueError, match="workers"):
        f(GOOD, workers=0)


def test_exp_chi2_beta():
    with pytest.raises(ValueError, match="beta must be > 0"):
        exp_chi2_kernel(GOOD, beta=0.0)
    with pytest.raises(TypeError, match="beta must be a real number"):
        exp_chi2_kernel(GOOD, beta="1")
