"""The Jensen-Shannon kernel's compiled paths (dense tiles: one logarithm
per pair from per-value parts, no division; CSR: the same polynomial, the
common non-zeros of a pair gathered and summed in vectors)
against a term-by-term NumPy reference in long double, at every scale the
kernel accepts, on every SIMD path, float32 and float64, 1 and 2 threads."""

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import js_kernel

from ._references import additive_kernel


def reference(X, Y):
    """The Jensen-Shannon kernel in long double, rounded to float64."""
    return additive_kernel("js", X, Y, dtype=np.longdouble).astype(np.float64)


def histograms(rng, n, d, spread):
    """Non-negative rows, a third of the bins zero, values spread over
    `spread` decades (log-uniform) so that pairs of very different and of
    nearly equal values both occur."""
    X = 10.0 ** rng.uniform(-spread, 0, size=(n, d))
    X[rng.random((n, d)) < 1 / 3] = 0
    X[:, -1] = 0.5  # equal values in a bin of every pair of rows
    return X


# float32 at the scales within its range
@pytest.mark.parametrize("dtype, rtol, scale", [
    *((np.float64, 1e-13, s) for s in (1e-150, 1e-30, 1.0, 1e30, 1e150)),
    *((np.float32, 2e-6, s) for s in (1e-30, 1.0, 1e30)),
])
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 9, 3), (13, 7, 67), (6, 17, 130)])
def test_matches_reference(simd_path, dtype, rtol, scale, shape):
    n, m, d = shape
    rng = np.random.default_rng(n * m * d)
    spread = 12 if dtype == np.float64 else 6
    X = (histograms(rng, n, d, spread) * scale).astype(dtype)
    Y = (histograms(rng, m, d, spread) * scale).astype(dtype)
    want = reference(X, Y)
    csr = scipy.sparse.csr_matrix
    for A, B in ((X, Y), (csr(X), Y), (X, csr(Y)), (csr(X), csr(Y))):
        got = js_kernel(A, B, workers=1)
        assert_allclose(got, want, rtol=rtol, atol=0)
    sym = js_kernel(X, workers=1)
    assert_array_equal(sym, sym.T)
    assert_allclose(sym, reference(X, X), rtol=rtol, atol=0)
    assert_array_equal(js_kernel(X, workers=2), sym)
    assert_array_equal(js_kernel(X, Y, workers=2), js_kernel(X, Y, workers=1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_subnormal_and_far_apart_values(simd_path, dtype):
    """Values next to the smallest subnormal, pairs of subnormals, and
    pairs 1e-300 apart (a / b underflows): each pair's terms to within the
    tolerance of its own size (rows of such values only)."""
    tiny = np.finfo(dtype).smallest_subnormal
    normal = np.finfo(dtype).tiny
    X = np.array([[tiny, 3 * tiny, 7 * tiny, normal, 0.0],
                  [5 * tiny, tiny, 0.0, 2 * normal, normal / 3]], dtype=dtype)
    want = reference(X, X)
    # subnormal inputs carry few digits: relative to the values' own ulp
    got = js_kernel(X)
    assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13,
                    atol=float(tiny) * 8)
    if dtype == np.float64:
        F = np.array([[1e-300, 0.5], [1.0, 1e-290]])
        assert_allclose(js_kernel(F), reference(F, F), rtol=1e-13, atol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_identities(dtype):
    """JS(x, x) = sum x; 0 rows give 0; the kernel is symmetric in x and y
    bin by bin, also where the smaller value is in X or in Y."""
    rng = np.random.default_rng(3)
    X = histograms(rng, 9, 41, 8).astype(dtype)
    assert_allclose(np.diag(js_kernel(X)), X.astype(np.float64).sum(1),
                    rtol=1e-14 if dtype == np.float64 else 1e-6)
    Z = np.zeros((2, 41), dtype=dtype)
    assert_array_equal(js_kernel(Z, X), 0.0)
    assert_allclose(js_kernel(X[:4], X[4:]), js_kernel(X[4:], X[:4]).T,
                    rtol=1e-15 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_negative_zeros_are_zeros(simd_path, dtype):
    # A fuzz case: -0.0 bins (valid histograms) gave an overflow error.
    X = np.array([[0.90625, -0.0, 1.0, 0.84375, -0.0],
                  [0.703125, 0.71875, 0.484375, 0.734375, 0.0625],
                  [1.0, -0.0, 0.765625, -0.0, 0.625]], dtype=dtype)
    assert_array_equal(js_kernel(X), js_kernel(np.abs(X)))
    A = np.abs(X)
    assert_array_equal(js_kernel(X, A[:2]), js_kernel(A, A[:2]))  # in rows
    assert_array_equal(js_kernel(A, X[:2]), js_kernel(A, A[:2]))  # in columns


def test_csr_every_count_of_common_non_zeros(simd_path):
    """CSR pairs with 0 to 40 common non-zeros: every tail of the groups of
    8 in which their terms are summed."""
    rng = np.random.default_rng(7)
    d = 64
    X = np.zeros((41, d))
    for i in range(41):
        X[i, rng.choice(d, size=i, replace=False)] = 10.0 ** rng.uniform(-8, 0, i)
    Y = np.where(rng.random((5, d)) < 0.8, 10.0 ** rng.uniform(-8, 0, (5, d)), 0)
    Y[0] = 10.0 ** rng.uniform(-8, 0, d)  # every bin: i common non-zeros
    got = js_kernel(scipy.sparse.csr_matrix(X), scipy.sparse.csr_matrix(Y))
    assert_allclose(got, reference(X, Y), rtol=1e-13, atol=0)
    assert_array_equal(got[0], 0.0)  # X[0] is empty: no common non-zero


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
@pytest.mark.parametrize("density", [0.05, 0.25, 0.6])
def test_dense_rows_with_few_non_zeros(
        simd_path, monkeypatch, dtype, rtol, density):
    # A term is 0 where either value is: dense float64 rows with few
    # non-zeros (bags of words) go through the common non-zeros, the others
    # the tiles (which skip the features that are 0 in all their rows); the
    # same values either way.
    from kernelmaps._engine import additive

    taken = []
    for name in ("_dense", "_sparse"):
        original = getattr(additive, name)

        def counted(*args, _original=original, _name=name):
            taken.append(_name)
            return _original(*args)

        monkeypatch.setattr(additive, name, counted)
    rng = np.random.default_rng(int(density * 100))
    X = rng.random((40, 70)) * (rng.random((40, 70)) < density)
    X[:, 0] += 0.1  # no empty row
    X = (X / X.sum(axis=1, keepdims=True)).astype(dtype)
    Y = X[:9] * 0.5
    for A, B in ((X, None), (X, Y)):
        taken.clear()
        K = js_kernel(A, B, workers=2)
        assert_allclose(K, reference(A, A if B is None else B), rtol=rtol,
                        atol=0)
        sparse = density < 0.3 and dtype == np.float64
        assert taken == ["_sparse" if sparse else "_dense"]
        assert_array_equal(K, js_kernel(A, B, workers=1))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_every_ratio_of_a_pair(simd_path, dtype, rtol):
    # One feature: each value is a single term, whose ratio r = min / max
    # sweeps (0, 1] (the range of the polynomial for g(r)) densely, both
    # ends and both orders included; no sum to average its error away.
    r = np.concatenate([np.linspace(0, 1, 4001)[1:], 10.0 ** -np.arange(1, 30)])
    X = np.array([[1.0], [0.25]], dtype=dtype)
    Y = np.concatenate([r, 1 / r[r > 1e-5]])[:, None].astype(dtype)
    assert_allclose(js_kernel(X, Y), reference(X, Y), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_features_zero_in_a_whole_tile_of_rows(simd_path, dtype, rtol):
    # The tiles skip a feature that is 0 in all the rows they hold: the
    # features zero in the first 8 rows (whole tiles) but not in the others
    # nor in Y, and a feature zero in all but one row of a tile.
    rng = np.random.default_rng(7)
    X = rng.random((19, 41)) + 0.01
    X[:8, ::3] = 0
    X[:8, 1] = 0
    X[5, 1] = 0.3
    Y = rng.random((11, 41)) + 0.01
    X, Y = X.astype(dtype), Y.astype(dtype)
    for B in (None, Y):
        expected = reference(X, X if B is None else B)
        assert_allclose(js_kernel(X, B, workers=2), expected, rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
@pytest.mark.parametrize("ratio", [1.0, 1e6, 1e12, 1e16, 1e-30])
@pytest.mark.parametrize("sparse", [False, True])
def test_js_kernel_without_cancellation(simd_path, dtype, rtol, ratio, sparse):
    """Dense float32 used to be 17 % off for rows summing to 1 against rows
    summing to 1e6, float64 at ratios 1e12-1e16 (issue 17, defect 4)."""
    rng = np.random.default_rng(5)
    X = rng.dirichlet(np.ones(21), size=5).astype(dtype)
    Y = (rng.dirichlet(np.ones(21), size=4) * ratio).astype(dtype)
    got = km.js_kernel(scipy.sparse.csr_matrix(X) if sparse else X, Y)
    assert_allclose(got, additive_kernel("js", X, Y), rtol=rtol, atol=0)
