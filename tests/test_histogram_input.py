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


from kernelmaps import (  # noqa: E402
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: Chi2DirectMap(k=[0.5, -1.0]), ValueError, "k must hold positive"),
        (lambda: Chi2DirectMap(k=[0.5, np.nan]), ValueError, "k must hold positive"),
        (lambda: Chi2DirectMap(k=[]), ValueError, "k must be a non-empty array"),
        (lambda: Chi2DirectMap(k=np.ones((2, 2, 2))), ValueError, "k must be a non"),
        (lambda: Chi2DirectMap(n_terms=0).fit(GOOD), ValueError, "n_terms must be"),
        (lambda: Chi2DirectMap(n_bins=0).fit(GOOD), ValueError, "n_bins must be >= 1"),
        (lambda: Chi2DirectMap(per_dimension=1).fit(GOOD), TypeError, "per_dimension"),
        (lambda: Chi2DirectMap().fit(np.zeros((3, 4))), ValueError,
         "no non-zero value"),
        (lambda: Chi2DirectMap().fit(-GOOD), ValueError, "X contains negative"),
        (lambda: Chi2ChebyshevMap(0), ValueError, "n_terms must be >= 1"),
        (lambda: Chi2ChebyshevMap(3, scale=0), ValueError, "scale must be > 0"),
        (lambda: Chi2ChebyshevMap(scale="median").fit(np.zeros((2, 2))), ValueError,
         "no non-zero"),
        (lambda: HomogeneousKernelMap("rbf"), ValueError, "kernel must be one of"),
        (lambda: HomogeneousKernelMap("chi2", -1), ValueError, "order must be >= 0"),
        (lambda: HomogeneousKernelMap("chi2", 1.5), TypeError, "order must be an int"),
        (lambda: HomogeneousKernelMap("chi2", period=-2.0), ValueError,
         "period must be > 0"),
        (lambda: ExpChi2Features(0).fit(GOOD), ValueError, "n_components must be >= 1"),
        (lambda: ExpChi2Features(8, beta=0).fit(GOOD), ValueError, "beta must be > 0"),
        (lambda: ExpChi2Features(8, chi2_map="direct").fit(GOOD), TypeError,
         "chi2_map must be"),
    ],
)
def test_map_bad_parameters(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_map_bad_transform_input():
    for obj in (Chi2DirectMap(k=[0.1, 1.0]), Chi2ChebyshevMap(3),
                HomogeneousKernelMap("js"), ExpChi2Features(8, rng=0).fit(GOOD)):
        with pytest.raises(ValueError, match="X contains negative values"):
            obj.transform(with_value(-1.0))
        with pytest.raises(ValueError, match="X contains NaN"):
            obj.transform(with_value(np.nan, sparse=True))
    with pytest.raises(ValueError, match="fitted on data with 4 features"):
        ExpChi2Features(8, rng=0).fit(GOOD).transform(np.ones((2, 5)))
