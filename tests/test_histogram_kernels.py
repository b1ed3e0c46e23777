"""Exact histogram kernels against the NumPy references of _references.py,
and against scikit-learn's conventions (REFERENCES.md identities); the
Jensen-Shannon kernel's compiled paths against a long double reference."""

import functools
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)

from ._helpers import sets_and_histograms, sparse_histograms, strided_csr, with_value
from ._references import additive_kernel

KERNELS = {
    "chi2": additive_chi2_kernel,
    "intersection": intersection_kernel,
    "hellinger": hellinger_kernel,
    "js": js_kernel,
}


def as_format(A, fmt):
    return scipy.sparse.csr_matrix(A) if fmt == "csr" else A


def robust_pairs(monkeypatch):
    """A list to which each call of the one-by-one recomputation of pairs
    (the engine's ``additive._robust``) appends how many rows it took."""
    from kernelmaps._engine import additive

    taken = []
    original = additive._robust

    def counted(X, Y, kind, rows, cols, *args):
        taken.append(len(rows))
        return original(X, Y, kind, rows, cols, *args)

    monkeypatch.setattr(additive, "_robust", counted)
    return taken


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (13, 9, 37), (21, 30, 70)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("fx", "fy"), [("dense", "dense"), ("csr", "csr"),
                                        ("dense", "csr"), ("csr", "dense")])
def test_matches_double_loop(kind, shape, dtype, fx, fy):
    n, m, d = shape
    rng = np.random.default_rng(n + m + d)
    X = sparse_histograms(rng, n, d, dtype=dtype)
    Y = sparse_histograms(rng, m, d, dtype=dtype)
    f = KERNELS[kind]
    tol = 1e-13 if dtype == np.float64 else 2e-6 * d
    got = f(as_format(X, fx), as_format(Y, fy))
    assert got.dtype == dtype and got.shape == (n, m)  # float32 in, float32 out
    assert_allclose(got, additive_kernel(kind, X, Y), rtol=tol, atol=tol)
    if fx == fy:
        sym = f(as_format(X, fx))
        assert_array_equal(sym, sym.T)
        assert_allclose(sym, additive_kernel(kind, X, X), rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_simd_paths_and_workers(simd_path, kind, dtype):
    rng = np.random.default_rng(1)
    X = sparse_histograms(rng, 45, 131, dtype=dtype)
    Y = sparse_histograms(rng, 77, 131, dtype=dtype)
    f = KERNELS[kind]
    tol = 1e-13 if dtype == np.float64 else 1e-4
    one = f(X, Y, workers=1)
    assert_allclose(one, additive_kernel(kind, X, Y), rtol=tol, atol=tol)
    assert_array_equal(f(X, Y, workers=2), one)
    sym = f(X, workers=1)
    assert_array_equal(f(X, workers=2), sym)
    assert_allclose(sym, additive_kernel(kind, X, X), rtol=tol, atol=tol)


def test_distance_and_exp_chi2():
    rng = np.random.default_rng(2)
    X, Y = sparse_histograms(rng, 9, 12), sparse_histograms(rng, 6, 12)
    want = np.zeros((9, 6))
    for i in range(9):
        for j in range(6):
            s = X[i] + Y[j]
            nz = s > 0
            want[i, j] = 0.5 * np.sum((X[i] - Y[j])[nz] ** 2 / s[nz])
    assert_allclose(chi2_distance(X, Y), want, atol=1e-14)
    assert_allclose(chi2_distance(scipy.sparse.csr_matrix(X), Y), want, atol=1e-14)
    assert_allclose(exp_chi2_kernel(X, Y, beta=1.7), np.exp(-1.7 * want), rtol=1e-13)
    D = chi2_distance(X)
    assert_array_equal(np.diag(D), 0.0)
    assert (D >= 0).all()


def test_l1_normalised_identities():
    rng = np.random.default_rng(3)
    X = rng.random((5, 8))
    X /= X.sum(axis=1, keepdims=True)
    for f in KERNELS.values():
        assert_allclose(np.diag(f(X)), 1.0, rtol=1e-14)
    D = chi2_distance(X)
    assert ((D >= 0) & (D <= 1)).all()


def test_scikit_learn_conventions():
    pairwise = pytest.importorskip("sklearn.metrics.pairwise")
    rng = np.random.default_rng(4)
    X, Y = rng.random((10, 7)) + 0.01, rng.random((8, 7)) + 0.01
    K = additive_chi2_kernel(X, Y)
    # scikit-learn's additive_chi2_kernel is -sum (x-y)^2/(x+y) = -2 D.
    sk = pairwise.additive_chi2_kernel(X, Y)
    assert_allclose(sk, 2 * K - X.sum(1)[:, None] - Y.sum(1)[None, :], atol=1e-13)
    assert_allclose(sk, -2 * chi2_distance(X, Y), atol=1e-13)
    assert_allclose(pairwise.chi2_kernel(X, Y, gamma=0.3),
                    exp_chi2_kernel(X, Y, beta=0.6), rtol=1e-13)


def test_explicit_zeros_and_formats():
    rng = np.random.default_rng(5)
    X = sparse_histograms(rng, 6, 10)
    S = scipy.sparse.csr_matrix(X)
    # Store explicit zeros and duplicates: the values must not change.
    coo = S.tocoo()
    rows = np.concatenate([coo.row, [1, 2, 2]])
    cols = np.concatenate([coo.col, [0, 3, 3]])
    vals = np.concatenate([coo.data, [0.0, 0.25, 0.25]])
    T = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=X.shape)
    T.data[T.data == 0] = 0  # keep explicit zeros stored
    dense = T.toarray()
    for kind, f in KERNELS.items():
        assert_allclose(f(T), additive_kernel(kind, dense, dense), atol=1e-13)
        assert_allclose(f(T.tocsc(), scipy.sparse.coo_array(T)),
                        additive_kernel(kind, dense, dense), atol=1e-13)
    assert np.isfinite(additive_chi2_kernel(T)).all()


def test_extreme_values():
    X = np.array([[1e-300, 0.0, 1e300], [1e-300, 1e-310, 1e300]])
    for kind, f in KERNELS.items():
        # (rows equal but for 1e-310 beside 1e300: constant kernels, said)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", km.DegenerateWarning)
            K = f(X)
        assert np.isfinite(K).all()
        assert_allclose(K, additive_kernel(kind, X, X), rtol=1e-12)


ALL_KERNELS = [additive_chi2_kernel, chi2_distance, exp_chi2_kernel,
               intersection_kernel, hellinger_kernel, js_kernel]


@pytest.mark.parametrize("f", ALL_KERNELS)
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_progress_bar(capsys, f, fmt):
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(21)
    X = as_format(sparse_histograms(rng, 300, 40), fmt)
    Y = as_format(sparse_histograms(rng, 50, 40), fmt)
    K = f(X, progress=True)
    assert "100%" in capsys.readouterr().err
    assert_array_equal(K, f(X))
    assert_array_equal(f(X, Y, progress=True), f(X, Y))
    assert "100%" in capsys.readouterr().err


@pytest.mark.parametrize("f", ALL_KERNELS)
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_progress_moves_by_chunks(monkeypatch, f, fmt):
    # The bar moves after each chunk of the real work (several chunks for a
    # call of some hundred milliseconds), ends at its total and is closed;
    # the result is bit-identical to the call without a bar.
    from contextlib import contextmanager

    from kernelmaps._engine import schedule

    bars = []

    class Bar:
        def __init__(self, total):
            self.total, self.updates, self.closed = total, [], False

        def update(self, n=1):
            self.updates.append(n)

    @contextmanager
    def recorder(progress, total, desc):
        assert progress
        bar = Bar(total)
        bars.append(bar)
        yield bar
        bar.closed = True

    rng = np.random.default_rng(22)
    X = rng.random((1200, 64))
    X = as_format(X, fmt)
    # Two threads on any machine: a chunk holds at least 2 tasks per thread,
    # so on 16 cores one chunk could hold the whole call.
    want = f(X, workers=2)
    monkeypatch.setattr(schedule, "progress_bar", recorder)
    monkeypatch.setattr(schedule, "CHUNK_SECONDS", 0.002)  # many chunks
    got = f(X, progress=True, workers=2)
    assert_array_equal(got, want)
    assert len(bars) == 1
    bar = bars[0]
    assert bar.closed and len(bar.updates) >= 2  # moves during the call
    assert all(n > 0 for n in bar.updates)
    assert sum(bar.updates) == bar.total


def test_progress_without_tqdm_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)
    X = np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]])
    for f in ALL_KERNELS:
        with pytest.raises(ImportError, match=r"kernelmaps\[progress\]"):
            f(X, progress=True)
        assert_array_equal(f(X, progress=False), f(X))  # no bar, no tqdm


@pytest.mark.parametrize("f", ALL_KERNELS)
def test_progress_must_be_a_bool(f):
    with pytest.raises(TypeError, match="progress"):
        f(np.ones((2, 3)), progress="yes")


# -- bad input: a clear TypeError or ValueError naming the argument ----------


GOOD = np.ones((3, 4))


@pytest.mark.parametrize("f", ALL_KERNELS)
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


@pytest.mark.parametrize("f", ALL_KERNELS)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(
    ("value", "match"),
    [(-1.0, "Y contains negative values"), (np.nan, "Y contains NaN or infinity")],
)
def test_exact_bad_y(f, sparse, value, match):
    with pytest.raises(ValueError, match=match):
        f(GOOD, with_value(value, sparse))


@pytest.mark.parametrize("f", ALL_KERNELS)
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


# -- the ends of the float range ---------------------------------------------


HIST = sets_and_histograms()[1]


@pytest.mark.parametrize("name", ["additive_chi2_kernel", "intersection_kernel",
                                  "js_kernel", "hellinger_kernel"])
@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("sparse", [False, True])
def test_histogram_kernels_are_homogeneous(name, scale, sparse):
    """The kernels are homogeneous of degree 1: scaled inputs give scaled
    results, with no sum overflowing or underflowing on the way."""
    f = getattr(km, name)
    X = HIST * scale
    got = f(scipy.sparse.csr_matrix(X) if sparse else X)
    assert np.isfinite(got).all()
    assert_allclose(got, f(HIST) * scale, rtol=1e-12)


def test_histogram_kernel_overflow_raises():
    X = np.full((2, 3), 1.5e308)
    with pytest.raises(ValueError, match="overflow"):
        km.additive_chi2_kernel(X)


def test_exact_histogram_kernels_at_1e308_without_warning():
    # (no overflow warning; the kernels 0 everywhere, or the identity, say
    # so with a DegenerateWarning)
    rng = np.random.default_rng(0)
    H = rng.random((4, 5))
    big = H / H.sum(axis=1, keepdims=True) * 1e308
    # the row sums of 0.5 * 1e308-scale values overflow, the distances do not
    D = km.chi2_distance(big, H)
    assert np.isfinite(D).all()
    assert_allclose(D, km.chi2_distance(big / 2**60, H / 2**60) * 2**60, rtol=1e-12)
    with pytest.warns(km.DegenerateWarning, match="beta is far too large"):
        assert_allclose(km.exp_chi2_kernel(big, H), 0.0)
    with pytest.warns(km.DegenerateWarning, match="beta is far too large"):
        assert_allclose(km.exp_chi2_kernel(H, beta=1.7976931348623157e308),
                        np.eye(4))
    with pytest.raises(ValueError, match="rows of X overflow"):
        km.chi2_distance(np.vstack([np.full(5, 1e308), np.zeros(5)]))  # 2.5e308
    with pytest.raises(ValueError, match="overflow float64"):
        km.additive_chi2_kernel(np.full((2, 5), 1e308))

def chi2_reference(X, Y):
    """The additive chi2 kernel and the chi2 distance, pair by pair in
    float64 with no intermediate that overflows or underflows at any scale:
    x y / (x + y) as lo / (1 + lo / hi) (lo <= hi), (x - y)^2 / (2 (x + y))
    as h (h / (x / 2 + y / 2)) with h = (hi - lo) / 2."""
    x = np.asarray(X, dtype=np.float64)[:, None, :]
    y = np.asarray(Y, dtype=np.float64)[None, :, :]
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    diff = hi - lo
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kernel = np.where(hi > 0, lo / (1 + lo / hi), 0.0).sum(-1) * 2
        half = 0.5 * diff
        dist = np.where(hi > 0, half * (half / (0.5 * lo + 0.5 * hi)), 0.0).sum(-1)
    return kernel, dist


def test_chi2_issue_case_at_every_scale(simd_path):
    # Issue 40: a row of 1e305 beside the pair cost 4e-3 (a rescaling of
    # the whole call by its largest value), 3e-8 at 1e300, 2e-13 at 1e295.
    x = np.array([[0.3, 0.7]])
    for big in (1.0, 1e295, 1e300, 1e305, 1.7e308):
        Y = np.array([[0.6, 0.4], [big, big]])
        for A, B in ((x, Y), (scipy.sparse.csr_matrix(x), Y)):
            assert_allclose(additive_chi2_kernel(A, B)[0, 0],
                            2 * (0.18 / 0.9 + 0.28 / 1.1), rtol=1e-15)
            assert_allclose(chi2_distance(A, B)[0, 0],
                            0.5 * (0.09 / 0.9 + 0.09 / 1.1), rtol=1e-14)
            assert_allclose(exp_chi2_kernel(A, B, beta=3.0)[0, 0],
                            np.exp(-1.5 * (0.09 / 0.9 + 0.09 / 1.1)), rtol=1e-15)


@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")  # (as above)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_chi2_pairs_at_mixed_scales(simd_path, dtype, fmt):
    """Rows of every scale of the floating-point range mixed (float64
    1e-300 to 1e305, float32 1e-34 to 1e38, where float32 runs of 64 terms
    overflow; every value normal): each pair's kernel, distance and
    exp-chi2 value to 1e-12 (float32: 1e-5) of the reference, and the same
    bits as the pair alone."""
    rng = np.random.default_rng(40)
    if dtype == np.float64:
        scales = [1e-300, 1e-200, 1e-100, 1e-10, 1.0, 1e100, 1e200, 1e300, 1e305]
        rtol = 1e-12
    else:
        scales = [1e-34, 1e-20, 1e-5, 1.0, 1e5, 1e20, 1e36, 1e38]
        rtol = 1e-5
    d = 70  # two float32 runs

    def rows(count):
        base = rng.uniform(1e-3, 1.0, size=(count, d))
        base[rng.random((count, d)) < 0.3] = 0
        return (base * rng.permutation(np.resize(scales, count))[:, None]).astype(dtype)

    X, Y = rows(19), rows(11)
    A, B = as_format(X, fmt), as_format(Y, fmt)
    for P, Q, args in ((X, Y, (A, B)), (X, X, (A,))):
        want_k, want_d = chi2_reference(P, Q)
        sums = (P.astype(np.float64).sum(1)[:, None]
                + Q.astype(np.float64).sum(1)[None, :])
        K = additive_chi2_kernel(*args, dtype=np.float64)
        assert_allclose(K, want_k, rtol=rtol, atol=0)
        D = chi2_distance(*args, dtype=np.float64)
        # the distance is taken from the row sums: its error is relative to them
        assert (np.abs(D - want_d) <= rtol * (want_d + 0.1 * sums)).all()
        assert_allclose(exp_chi2_kernel(*args, dtype=np.float64), np.exp(-D),
                        rtol=1e-15, atol=0)
    f64 = {"dtype": np.float64}
    K, D = additive_chi2_kernel(A, B, **f64), chi2_distance(A, B, **f64)
    E = exp_chi2_kernel(A, B, beta=1e-3, **f64)
    for i in range(X.shape[0]):
        j = 7 * i % Y.shape[0]
        a, b = as_format(X[i:i + 1], fmt), as_format(Y[j:j + 1], fmt)
        assert_array_equal(additive_chi2_kernel(a, b, **f64)[0, 0], K[i, j])
        assert_array_equal(chi2_distance(a, b, **f64)[0, 0], D[i, j])
        assert_array_equal(exp_chi2_kernel(a, b, beta=1e-3, **f64)[0, 0], E[i, j])


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_chi2_distance_where_the_kernel_overflows(simd_path, fmt):
    # Rows near the top of float64: their sums and kernel overflow, not
    # their distance, which comes from the rows times 2**-e of the pair.
    R = np.zeros((3, 9))
    R[0, :3] = [1.5e308, 1.6e308, 1.7e308]
    R[1, :3] = [1.6e308, 1.5e308, 1.7e308]
    R[2, :4] = [1e308, 0.0, 0.0, 1e-300]
    _, want = chi2_reference(R, R)
    A = as_format(R, fmt)
    D = chi2_distance(A[:2])
    assert_array_equal(D, D.T)
    # the error of the distance is relative to the row sums (4.8e308)
    assert_allclose(D, want[:2, :2], rtol=0, atol=4.8e293)  # 1e-15 of them
    assert_allclose(chi2_distance(A[:2], A[2:]), want[:2, 2:], rtol=1e-14)
    assert_allclose(exp_chi2_kernel(A[:2], beta=1e-306),  # beta sums ~ 0.5
                    np.exp(-1e-306 * want[:2, :2]), rtol=1e-12)
    assert_array_equal(chi2_distance(A[:1], A[1:2]), D[:1, 1:])


# -- each pair at every magnitude, subnormal values included (issue 50) -----
# References in Python's decimal arithmetic (50 digits, an exponent range far
# beyond float64's, floats converted exactly), pair by pair, term by term.

SMALLEST = float(np.finfo(np.float64).smallest_subnormal)  # 4.9e-324


def _log1p(t):
    return (1 + t).ln() if t > Decimal("1e-20") else t - t * t / 2


def exact_pair(kind, x, y):
    """The kernel `kind` ("chi2", "intersection", "hellinger", "js",
    "distance": the chi2 distance) of the histograms `x` and `y`, to 50
    digits, rounded once to float64."""
    with localcontext() as ctx:
        ctx.prec, ctx.Emin, ctx.Emax = 50, -99999, 99999
        ln2 = Decimal(2).ln()
        total = Decimal(0)
        for a, b in zip(np.asarray(x, np.float64).tolist(),
                        np.asarray(y, np.float64).tolist(), strict=True):
            a, b = Decimal(a), Decimal(b)
            if kind == "distance":
                if a + b > 0:
                    total += (a - b) ** 2 / (a + b) / 2
                continue
            if not (a > 0 and b > 0):
                continue
            if kind == "chi2":
                total += 2 * a * b / (a + b)
            elif kind == "intersection":
                total += min(a, b)
            elif kind == "hellinger":
                total += (a * b).sqrt()
            else:
                total += (a * _log1p(b / a) + b * _log1p(a / b)) / (2 * ln2)
        return float(total)


def exact_matrix(kind, X, Y):
    return np.array([[exact_pair(kind, x, y) for y in Y] for x in X])


def rows_at_every_magnitude(dtype, count, seed):
    """Histograms of 70 bins (two float32 runs), each row at its own scale
    from the smallest subnormal number to near the top of `dtype` (float64:
    beyond 2**958, where the Jensen-Shannon tiles stop), a fourth of the
    bins 0; row 0 mixes subnormal and normal values."""
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    if dtype == np.float64:
        scales = [1e-320, 1e-310, 1e-300, 1e-150, 1.0, 1e150, 1e300, 1e306]
    else:
        scales = [1e-44, 1e-40, 1e-36, 1e-20, 1.0, 1e20, 1e30, 1e37]
    R = rng.uniform(0.1, 1.0, size=(count, 70))
    R[rng.random(R.shape) < 0.25] = 0
    R *= rng.permutation(np.resize(scales, count))[:, None]
    R[1] = np.round(R[1] / R[1].max() * 64) * float(info.smallest_subnormal)
    R[0, ::2] *= float(info.smallest_normal)  # subnormal beside normal values
    return R.astype(dtype)


@functools.cache
def magnitudes_case(kind, dtype):
    """X (11 rows), Y (9 rows) and the exact kernels X-Y and X-X."""
    X = rows_at_every_magnitude(np.dtype(dtype).type, 11, 50)
    Y = rows_at_every_magnitude(np.dtype(dtype).type, 9, 51)
    return X, Y, exact_matrix(kind, X, Y), exact_matrix(kind, X, X)


def assert_close_at_every_magnitude(got, want, rtol):
    """`got` within `rtol` of `want` pair by pair (each to its own size),
    and within 2 units of the subnormal spacing where `want` is below the
    normal range."""
    err = np.abs(got - want)
    bad = ~(err <= rtol * np.abs(want) + 2 * SMALLEST)
    assert not bad.any(), (
        f"{bad.sum()} pairs off, e.g. got {got[bad][:3]}, want {want[bad][:3]}")


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_pairs_at_every_magnitude(simd_path, kind, dtype, fmt):
    """Rows from the smallest subnormal number to the top of the range
    mixed in one call: each pair within 1e-13 (float32 tiles: 1e-6) of
    its exact value, or 2 units of the subnormal spacing below the normal
    range (the value rounded once), the same bits as the pair alone, on
    one thread and two."""
    X, Y, want_xy, want_xx = magnitudes_case(kind, dtype)
    f = KERNELS[kind]
    rtol = 1e-13 if dtype == "float64" else 1e-6
    A, B = as_format(X, fmt), as_format(Y, fmt)
    f64 = {"dtype": np.float64}
    K = f(A, B, workers=1, **f64)
    assert_close_at_every_magnitude(K, want_xy, rtol)
    assert_array_equal(f(A, B, workers=2, **f64), K)
    S = f(A, workers=2, **f64)
    assert_array_equal(S, S.T)
    assert_close_at_every_magnitude(S, want_xx, rtol)
    assert_array_equal(f(A, workers=1, **f64), S)
    for i in range(X.shape[0]):
        for j in (i % Y.shape[0], (5 * i + 3) % Y.shape[0]):
            alone = f(A[i:i + 1], B[j:j + 1], **f64)[0, 0]
            assert_array_equal(alone, K[i, j])


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.parametrize("dtype, small, big", [
    (np.float64, 1e-300, 1e300), (np.float32, 1e-36, 3e38)])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_issue_50_small_pair_beside_a_large_row(simd_path, kind, dtype, small,
                                                big, fmt):
    # [0.3, 0.7] * 1e-300 beside a row of 1e300 gave 0 for the small pair
    # (intersection, js, hellinger: the whole call was rescaled by one
    # power of two, the small values underflowed).
    x = (np.array([[0.3, 0.7]]) * small).astype(dtype)
    Y = (np.array([[0.6, 0.4], [1.0, 1.0]]) * np.array([[small], [big]])).astype(dtype)
    f = KERNELS[kind]
    rtol = 1e-13 if dtype == np.float64 else 1e-6
    for A, B in ((x, Y), (as_format(x, fmt), as_format(Y, fmt))):
        K = f(A, B, dtype=np.float64)
        assert_allclose(K, exact_matrix(kind, x, Y), rtol=rtol, atol=0)
        assert_array_equal(K[0, 0], f(A, B[:1], dtype=np.float64)[0, 0])


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_issue_50_subnormal_chi2(simd_path, fmt):
    # additive_chi2_kernel gave 0 here (2 / x overflowed: each term
    # dropped), chi2_distance 3.5e-310 (5x too large), CSR pairs of 5e-324
    # NaN (an overflow error); now the exact values, rounded.
    x, y = [3e-310, 1e-310], [1e-310, 2e-310]
    p, q = [Fraction(v) for v in x], [Fraction(v) for v in y]
    kernel = float(sum(2 * a * b / (a + b) for a, b in zip(p, q, strict=True)))
    distance = float(sum((a - b) ** 2 / (a + b) for a, b in zip(p, q, strict=True)) / 2)
    X = as_format(np.array([x]), fmt)
    assert_allclose(additive_chi2_kernel(X, [y]), [[kernel]], rtol=0, atol=SMALLEST)
    assert_allclose(chi2_distance(X, [y]), [[distance]], rtol=0, atol=SMALLEST)
    assert kernel == pytest.approx(2.8333333e-310)
    assert distance == pytest.approx(6.6666667e-311)
    z = as_format(np.array([[SMALLEST, 3 * SMALLEST]]), fmt)
    assert_array_equal(additive_chi2_kernel(z), [[4 * SMALLEST]])


# exponents k of c = 2**k: the inputs times c (multiples of 2**-11) are
# exact from the smallest subnormal number to near the top of the range
_POWERS = {np.float64: [-1063, -1060, -1040, -1023, -1000, -700, -300, 0, 300,
                        700, 958, 1000, 1015],
           np.float32: [-138, -135, -130, -126, -120, -60, 0, 60, 93, 100, 120,
                        126]}


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_homogeneous_across_the_float_range(simd_path, kind, dtype, fmt):
    """K(c X, c Y) = c K(X, Y) for c any power of two that keeps the
    inputs exact, subnormal ones included, up to the result's rounding
    (to the subnormal spacing below the normal range)."""
    rng = np.random.default_rng(7)
    X = np.round(rng.random((6, 70)) * 64) / 2**11  # row sums about 1
    Y = np.round(rng.random((5, 70)) * 64) / 2**11
    f = KERNELS[kind]
    f64 = {"dtype": np.float64}
    K = f(X.astype(dtype), Y.astype(dtype), **f64)
    S = f(X.astype(dtype), **f64)
    rtol = 1e-13 if dtype == np.float64 else 1e-6
    for k in _POWERS[dtype]:
        cX, cY = (as_format((A * 2.0**k).astype(dtype), fmt) for A in (X, Y))
        assert_close_at_every_magnitude(f(cX, cY, **f64), np.ldexp(K, k), rtol)
        assert_close_at_every_magnitude(f(cX, **f64), np.ldexp(S, k), rtol)


# (exp(-1e-3 D) of rows 1e300 apart is 0 everywhere: a DegenerateWarning
# that test_degenerate.py checks; here the values)
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_chi2_distance_at_every_magnitude(simd_path, dtype, fmt):
    """chi2_distance and exp_chi2_kernel of rows at every magnitude, mixed:
    each distance within its bound (relative to the row sums, or 2 units
    of the subnormal spacing), the same bits as the pair alone; the
    distance of two rows below the normal range homogeneous."""
    X, Y, _, _ = magnitudes_case("chi2", dtype)
    want = exact_matrix("distance", X, Y)
    A, B = as_format(X, fmt), as_format(Y, fmt)
    f64 = {"dtype": np.float64}
    D = chi2_distance(A, B, **f64)
    sums = X.astype(np.float64).sum(1)[:, None] + Y.astype(np.float64).sum(1)[None, :]
    u = 2.0**-53 if dtype == "float64" else 2.0**-24
    bound = 2 * X.shape[1] * u * sums + 2 * SMALLEST
    assert (np.abs(D - want) <= bound).all()
    E = exp_chi2_kernel(A, B, beta=1e-3, **f64)
    assert_allclose(E, np.exp(-1e-3 * D), rtol=1e-15, atol=0)
    for i in range(X.shape[0]):
        j = (5 * i + 3) % Y.shape[0]
        a, b = A[i:i + 1], B[j:j + 1]
        assert_array_equal(chi2_distance(a, b, **f64)[0, 0], D[i, j])
        assert_array_equal(exp_chi2_kernel(a, b, beta=1e-3, **f64)[0, 0], E[i, j])
    # row 1 (multiples of the smallest subnormal number) against itself
    # reversed, times powers of two: the same bound
    x, y = X[1:2], X[1:2, ::-1]
    want = exact_matrix("distance", x, y)
    bound = 4 * X.shape[1] * u * x.astype(np.float64).sum() + 2 * SMALLEST
    for k in (0, 30, 100, 600, 1000):
        c = np.asarray(2.0**k, dtype=dtype) if k < 100 or dtype == "float64" else None
        if c is None:
            continue  # beyond float32
        got = chi2_distance(as_format(x * c, fmt), y * c, **f64) / float(c)
        assert (np.abs(got - want) <= bound).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_chi2_distance_error_is_relative_to_the_row_sums(dtype, fmt):
    # The documented bound (chi2_distance's Notes): the error of D is at
    # most 2 d u (sum x + sum y), u = 2**-53 (float32 input: 2**-24), a
    # bound relative to the row sums, not to D: rows 1e-8 (float32: 1e-4)
    # apart, relative to their values, have D about 1e-17 (1e-9) of their
    # sums, far below the bound.
    rng = np.random.default_rng(12)
    d = 50
    X = rng.uniform(0.01, 1.0, size=(4, d))
    step = 1e-8 if dtype == np.float64 else 1e-4
    Y = X * (1 + step * rng.choice([-1.0, 1.0], size=X.shape))
    X, Y = X.astype(dtype), Y.astype(dtype)
    want = exact_matrix("distance", X, Y)
    sums = X.astype(np.float64).sum(1)[:, None] + Y.astype(np.float64).sum(1)[None, :]
    u = 2.0**-53 if dtype == np.float64 else 2.0**-24
    bound = 2 * d * u * sums
    assert (np.diag(want) < 0.01 * np.diag(bound)).all()  # the regime
    D = chi2_distance(as_format(X, fmt), as_format(Y, fmt), dtype=np.float64)
    assert (np.abs(D - want) <= bound).all()


@pytest.mark.parametrize("kind", ["chi2", "js", "hellinger"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_softmax_rows_with_subnormal_values_stay_on_the_fast_path(
        monkeypatch, kind, fmt):
    # Rows of normal values with a few below the normal range (a softmax of
    # far-apart scores): their pairs' values are far above the error such
    # values can cause (2**-1021 a bin; CSR Jensen-Shannon: ratios of
    # values 2**1040 apart), so the fast paths' values are kept; only pairs
    # whose value is small are taken one by one.
    taken = robust_pairs(monkeypatch)
    rng = np.random.default_rng(3)
    X = rng.dirichlet(np.ones(30), size=8)
    X[:, :3] = 1e-315
    f = KERNELS[kind]
    K = f(as_format(X, fmt))
    assert taken == []
    assert_allclose(K, exact_matrix(kind, X, X), rtol=1e-13, atol=0)
    Z = np.zeros((1, 30))
    Z[0, :3] = 1e-315  # the pairs with this row: values near 1e-315
    K = f(as_format(X, fmt), as_format(Z, fmt))
    assert taken == [8]
    assert_close_at_every_magnitude(K, exact_matrix(kind, X, Z), 1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_outside_the_band_are_found(simd_path, dtype):
    # The rows the tiles cannot take (a value v with 0 < v < low or v >=
    # high): vectors and their tails, at every width up to 19 and every
    # position; 0 and -0.0 count as in the band.
    from kernelmaps._engine import additive

    low, high = 2.0**-100, 2.0**100
    for d in range(1, 20):
        for k in range(d):
            for value, outside in ((2.0**-101, True), (low, False), (high, True),
                                   (2.0**99, False), (-0.0, False), (0.0, False)):
                A = np.full((3, d), 0.5, dtype=dtype)
                A[1, k] = value
                flags = additive._outside(A, (low, high), 1)
                assert flags.tolist() == [False, outside, False], (d, k, value)


def test_js_rows_beyond_the_tiles_through_common_non_zeros(monkeypatch):
    # Dense float64 rows with values beyond 2**958 (where the tiles' parts
    # overflow): their pairs through the common non-zeros, exact up to
    # about 2**1012 (one pair at a time, 34x slower, is not needed), the
    # others in the tiles; each pair the same bits as alone.
    taken = robust_pairs(monkeypatch)
    rng = np.random.default_rng(9)
    X = rng.uniform(0.1, 1.0, size=(7, 20))
    X[::2] *= 2.0**1000
    for A, B in ((X, None), (X[:4], X[4:]), (X[::2], None), (X[1:3], X[::2])):
        K = js_kernel(A, B)
        Bs = A if B is None else B
        assert_allclose(K, exact_matrix("js", A, Bs), rtol=1e-13, atol=0)
        for i in range(A.shape[0]):
            j = (3 * i + 1) % Bs.shape[0]
            assert_array_equal(js_kernel(A[i:i + 1], Bs[j:j + 1])[0, 0], K[i, j])
    assert taken == []


# ------------------------------------------------------------
# The Jensen-Shannon kernel's compiled paths (dense tiles: one logarithm
# per pair from per-value parts, no division; CSR: the same polynomial, the
# common non-zeros of a pair gathered and summed in vectors)
# against a term-by-term NumPy reference in long double, at every scale the
# kernel accepts, on every SIMD path, float32 and float64, 1 and 2 threads.


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
    with pytest.warns(km.DegenerateWarning, match="is 0 between all histograms"):
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


def test_csr_ratio_below_the_normal_range(simd_path):
    # Common non-zeros of normal values whose ratio lo / hi is below the
    # normal range (subnormal, few digits) or underflows to 0: log2(lo /
    # hi) from log2(lo) - log2(hi). It came from the ratio, floored at
    # 5e-324: 1e-300 against 1e22 was 1.6e-5 off, against 1e30 2e-2.
    X = np.array([[1e-300, 0.5, 3e-310], [1e-200, 1e-305, 1.0]])
    Y = np.array([[1e22, 0.5, 1e-2], [1e30, 1e10, 5e-324], [1e120, 1e300, 1.0]])
    C = scipy.sparse.csr_matrix
    for A, B in ((C(X), Y), (X, C(Y)), (C(X), C(Y))):
        assert_allclose(js_kernel(A, B), exact_matrix("js", X, Y), rtol=1e-13,
                        atol=0)


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
