"""Input validation and numerical robustness of the Python API layer:
regressions from the fuzzing campaign (bad input gets a clear ValueError or
TypeError naming the argument; no crash, hang, NaN/inf output or changed
input; valid input at any scale accepted)."""

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._validation import check_histograms, check_points, check_scalar


def dense(Z):
    return Z.toarray() if scipy.sparse.issparse(Z) else np.asarray(Z)


# ------------------------------------------------------------ scalar checks


@pytest.mark.parametrize("value", [np.array(0.5), np.float32(0.5), np.float64(0.5),
                                   0.5, np.array(0.5, dtype=np.float32)])
def test_check_scalar_takes_numpy_scalars_and_0d_arrays(value):
    out = check_scalar(value, "a")
    assert type(out) is float and out == 0.5


@pytest.mark.parametrize("value", [np.array(3), np.int8(3), np.uint64(3), 3, 3.0,
                                   np.array(3.0)])
def test_check_scalar_int_takes_numpy_scalars_and_0d_arrays(value):
    out = check_scalar(value, "n", kind="int")
    assert type(out) is int and out == 3


@pytest.mark.parametrize("kind", ["real", "int"])
@pytest.mark.parametrize("value", [True, np.bool_(False), np.array(True), "1",
                                   None, 1j, np.array([1.0]), [1.0]])
def test_check_scalar_refuses_non_numbers(kind, value):
    with pytest.raises(TypeError, match=r"^a must be"):
        check_scalar(value, "a", kind=kind)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, np.array(np.nan),
                                   10**400, -(10**400)],
                         ids=["nan", "inf", "-inf", "0d-nan", "1e400", "-1e400"])
def test_check_scalar_refuses_non_finite(value):
    with pytest.raises(ValueError, match="a must be finite"):
        check_scalar(value, "a")


def test_check_scalar_int_refuses_non_finite_and_fractions():
    for value in (np.nan, np.inf, 1e400, 0.5):
        with pytest.raises(TypeError, match="n must be an int"):
            check_scalar(value, "n", kind="int")


def test_alpha_as_0d_array_and_numpy_scalar():
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(3)]
    want = km.renyi_divergence(sets, alpha=0.5)
    assert_array_equal(km.renyi_divergence(sets, alpha=np.array(0.5)), want)
    assert_array_equal(km.renyi_divergence(sets, alpha=np.float32(0.5)), want)
    assert_array_equal(km.renyi_divergence(sets, alpha=0.5, k=np.array(5)), want)
    with pytest.raises(TypeError, match="alpha"):
        km.renyi_divergence(sets, alpha=np.bool_(True))
    with pytest.raises(TypeError, match="k must be an int"):
        km.renyi_divergence(sets, k=np.array(True))


# ------------------------------------------------------------ points


def test_nested_list_of_numbers_is_points():
    rows = [[0.0, 1.0], [1.0, 3.0], [3.0, 0.0], [2.0, 2.0]]
    want = np.array(rows)
    assert_array_equal(check_points(rows), want)
    assert_array_equal(check_points(tuple(map(tuple, rows))), want)
    assert_array_equal(check_points([np.array(r) for r in rows]), want)
    assert km.median_heuristic(rows) == km.median_heuristic(want)
    assert km.median_heuristic([[0.0], [1.0], [3.0]]) == 0.25
    # integers too
    assert_array_equal(check_points([[0, 1], [2, 3]]), [[0.0, 1.0], [2.0, 3.0]])
    # a list of 2-D arrays stays a list of sets (pooled)
    sets = [want[:3], want[3:]]
    assert_array_equal(check_points(sets), want)
    assert_array_equal(check_points([want]), want)
    emk = km.EMKFeatures.fit(rows, 2, n_iter=2, rng=0)
    same = km.EMKFeatures.fit(want, 2, n_iter=2, rng=0)
    assert_array_equal(emk.basis, same.basis)


@pytest.mark.parametrize(("X", "error", "match"), [
    ([[0.0, 1.0], [1.0]], ValueError, "rows of equal length"),
    ([[0.0, 1.0], np.ones((2, 2))], ValueError, "rows of equal length"),
    ([["a", "b"]], TypeError, "must hold real numbers"),
    ([[0.0, np.nan]], ValueError, "NaN or infinity"),
    ([[], []], ValueError, "no feature"),
    (np.zeros((3, 0)), ValueError, "no feature"),
    ([[1 + 1j, 0.0]], TypeError, "must hold real numbers"),
])
def test_bad_points(X, error, match):
    with pytest.raises(error, match=match):
        check_points(X, "X")


def test_python_ints_beyond_float_range_are_a_value_error():
    with pytest.raises(ValueError, match="X holds a number too large"):
        check_points([[10**400, 0]], "X")
    with pytest.raises(ValueError, match="X holds a number too large"):
        km.additive_chi2_kernel(np.array([[10**400, 1]], dtype=object))


def test_dask_points_are_refused_not_computed():
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="lazy Dask"):
        check_points(da.ones((4, 2), chunks=2), "points")


# ------------------------------------------------------------ histograms


def strided_csr():
    data2 = np.arange(1.0, 13.0)
    indices = np.array([0, 1, 2, 0, 2, 3])
    indptr = np.array([0, 3, 6])
    M = scipy.sparse.csr_matrix((data2[::2], indices, indptr), shape=(2, 4))
    assert not M.data.flags.c_contiguous
    return M


@pytest.mark.parametrize("f", [km.additive_chi2_kernel, km.chi2_distance,
                               km.exp_chi2_kernel, km.intersection_kernel,
                               km.hellinger_kernel, km.js_kernel])
def test_strided_csr_data_is_accepted_by_the_exact_kernels(f):
    M = strided_csr()
    before = M.data.copy()
    assert_allclose(f(M), f(M.toarray()), rtol=1e-12)
    assert_allclose(f(M, M), f(M.toarray()), rtol=1e-12)
    assert_array_equal(M.data, before)
    assert not M.data.flags.c_contiguous  # the caller's matrix is untouched


@pytest.mark.parametrize("make", [
    lambda X: km.Chi2DirectMap.fit(X),
    lambda X: km.Chi2ChebyshevMap.fit(X),
    lambda X: km.HomogeneousKernelMap(),
    lambda X: km.AnchorMap.fit(X, n_anchors=5),
    lambda X: km.ExpChi2Features.fit(X, 8, rng=0),
])
def test_strided_csr_data_is_accepted_by_the_maps(make):
    M = strided_csr()
    fmap = make(M)
    assert_allclose(dense(fmap.transform(M)), dense(fmap.transform(M.toarray())),
                    rtol=1e-12)


def test_check_histograms_copies_only_when_needed():
    M = scipy.sparse.csr_matrix(np.eye(4))
    out = check_histograms(M)
    assert np.shares_memory(out.data, M.data)
    out = check_histograms(strided_csr())
    assert all(a.flags.c_contiguous for a in (out.data, out.indices, out.indptr))


# ------------------------------------------------------------ Bags


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_bags_offsets_are_copied(dtype):
    points = np.arange(12.0).reshape(6, 2)
    offsets = np.array([0, 2, 6], dtype=dtype)
    bags = km.Bags(points, offsets)
    offsets[1] = 5  # the caller edits its array: the Bags keeps its sets
    assert_array_equal(bags.offsets, [0, 2, 6])
    assert not np.shares_memory(bags.offsets, offsets)
    assert not bags.offsets.flags.writeable
    assert offsets.flags.writeable  # the caller's array is not frozen
    assert_array_equal(bags.sizes, [2, 4])


def test_bags_points_are_a_documented_read_only_view():
    # Notes of the Bags docstring: C-contiguous float points are not copied;
    # the caller's array stays writeable and the Bags sees its changes.
    points = np.arange(12.0).reshape(6, 2)
    bags = km.Bags(points, [0, 2, 6])
    assert np.shares_memory(bags.points, points)
    assert points.flags.writeable and not bags.points.flags.writeable
    points[0, 0] = -1.0
    assert bags[0][0, 0] == -1.0
    assert "copy the points first" in km.Bags.__doc__
