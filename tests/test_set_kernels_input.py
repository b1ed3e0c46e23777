"""Bad input to the set kernels: a clear TypeError/ValueError naming the
argument, never a crash, a hang or NaN in the output."""

import numpy as np
import pytest

from kernelmaps import mmd, mmd_kernel, sum_match_kernel

FUNCTIONS = [sum_match_kernel, mmd, mmd_kernel]
GOOD = [np.ones((3, 2)), np.zeros((2, 2))]


def with_nan():
    a = np.ones((3, 2))
    a[1, 0] = np.nan
    return a


def with_inf(dtype=np.float64):
    a = np.ones((3, 2), dtype=dtype)
    a[2, 1] = -np.inf
    return a


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize(
    ("X", "error", "match"),
    [
        ([np.ones((2, 2)), with_nan()], ValueError, r"X\[1\] contains NaN"),
        ([with_inf()], ValueError, r"X\[0\] contains NaN or infinity"),
        ([with_inf(np.float32)], ValueError, r"X\[0\] contains NaN or infinity"),
        ([np.ones((2, 2)), np.ones((0, 2))], ValueError, r"X\[1\] is empty"),
        ([np.ones((2, 2)), np.ones((2, 3))], ValueError, "same number of features"),
        ([np.ones(3)], ValueError, r"X\[0\] must be a 2-D array"),
        ([np.ones((2, 2, 2))], ValueError, r"X\[0\] must be a 2-D array"),
        (np.ones((4, 2)), ValueError, "wrap it in a list"),
        (np.ones((2, 2, 2, 2)), ValueError, "shape"),
        ([], ValueError, "X must contain at least one set"),
        ([np.ones((2, 0))], ValueError, "no feature"),
        ([np.array([["a", "b"]], dtype=object)], TypeError, r"X\[0\] must hold real"),
        ([np.array([[None, 1.0]], dtype=object)], TypeError, r"X\[0\] must hold real"),
        ([np.ones((2, 2), dtype=complex)], TypeError, r"X\[0\] must hold real"),
        ([[[1.0, 2.0], [3.0]]], ValueError, r"X\[0\] could not be made an array"),
        (3.0, TypeError, "X must be a sequence of 2-D arrays"),
        ("sets", TypeError, "X must be a sequence of 2-D arrays"),
    ],
)
def test_bad_sets(f, X, error, match):
    with pytest.raises(error, match=match):
        f(X)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_bad_y(f):
    with pytest.raises(ValueError, match=r"Y\[0\] contains NaN"):
        f(GOOD, [with_nan()])
    with pytest.raises(ValueError, match="Incompatible dimension for X and Y"):
        f(GOOD, [np.ones((2, 3))])
    with pytest.raises(ValueError, match=r"Y\[0\] is empty"):
        f(GOOD, [np.ones((0, 2))])


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kernel": "gaussian"}, ValueError, "kernel must be one of 'rbf'"),
        ({"kernel": None}, ValueError, "kernel must be one of"),
        ({"gamma": 0.0}, ValueError, "gamma must be > 0"),
        ({"gamma": -1.0}, ValueError, "gamma must be > 0"),
        ({"gamma": np.nan}, ValueError, "gamma must be finite"),
        ({"gamma": np.inf}, ValueError, "gamma must be finite"),
        ({"gamma": "1"}, TypeError, "gamma must be a real number"),
        ({"gamma": [1.0]}, TypeError, "gamma must be a real number"),
        ({"degree": 0}, ValueError, "degree must be >= 1"),
        ({"degree": 1.5}, TypeError, "degree must be an int"),
        ({"coef0": np.nan}, ValueError, "coef0 must be finite"),
        ({"workers": 0}, ValueError, "workers must be a positive int"),
        ({"workers": 1.5}, TypeError, "workers must be an int or None"),
        ({"workers": -1000}, ValueError, "leaves no thread"),
        ({"progress": "yes"}, TypeError, "progress must be True or False"),
    ],
)
def test_bad_parameters(f, kwargs, error, match):
    with pytest.raises(error, match=match):
        f(GOOD, **kwargs)


@pytest.mark.parametrize(
    ("f", "kwargs", "error", "match"),
    [
        (sum_match_kernel, {"normalize": "yes"}, TypeError, "normalize must be"),
        (mmd, {"squared": 1}, TypeError, "squared must be"),
        (mmd, {"unbiased": None}, TypeError, "unbiased must be"),
        (mmd, {"unbiased": True}, ValueError, "pass squared=True"),
        (mmd_kernel, {"gamma2": 0.0}, ValueError, "gamma2 must be > 0"),
        (mmd_kernel, {"gamma2": np.inf}, ValueError, "gamma2 must be finite"),
    ],
)
def test_bad_function_options(f, kwargs, error, match):
    with pytest.raises(error, match=match):
        f([np.ones((3, 2)), np.zeros((2, 2))], **kwargs)


def test_unbiased_needs_two_points_per_set():
    with pytest.raises(ValueError, match=r"X\[1\] has 1 point\(s\); at least 2"):
        mmd([np.ones((3, 2)), np.zeros((1, 2))], squared=True, unbiased=True)
    with pytest.raises(ValueError, match=r"Y\[0\] has 1 point"):
        mmd([np.ones((3, 2))], [np.zeros((1, 2))], squared=True, unbiased=True)


def test_integer_degree_given_as_float_is_accepted():
    a = sum_match_kernel(GOOD, kernel="polynomial", degree=3)
    b = sum_match_kernel(GOOD, kernel="polynomial", degree=3.0)
    np.testing.assert_array_equal(a, b)


class _Table:
    """What the sets functions see of a pandas DataFrame: a 2-D shape,
    columns, and iteration over the column names."""

    def __init__(self, values, columns):
        self.values, self.columns = np.asarray(values), list(columns)
        self.shape = self.values.shape

    def __iter__(self):
        return iter(self.columns)

    def to_numpy(self):
        return self.values


@pytest.mark.parametrize("f", FUNCTIONS)
def test_a_table_is_told_how_to_make_sets(f):
    """A long-format table of points used to give "X[0] must hold real
    numbers, got an array of dtype <U1" (its column names)."""
    table = _Table([[0, 1.0, 2.0], [0, 1.5, 2.5], [1, 3.0, 4.0]], "sxy")
    pattern = (r"X is a _Table of 3 rows, not a collection of sets: .*"
               r"\[X.to_numpy\(\)\].*groupby")
    with pytest.raises(TypeError, match=pattern):
        f(table)
    with pytest.raises(TypeError, match=pattern.replace("X", "Y")):
        f(GOOD, table)
    pandas = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="X is a DataFrame of 3 rows"):
        f(pandas.DataFrame(table.values, columns=table.columns))
