"""Exact set kernels against the slow NumPy references of _references.py."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    Bags,
    DegenerateWarning,
    median_heuristic,
    mmd,
    mmd_kernel,
    sum_match_kernel,
)

from ._helpers import random_sets, sets, sets_and_histograms
from ._references import mmd2, point_kernel, sum_match

KERNELS = ["rbf", "laplacian", "linear", "polynomial"]


def tolerance(dtype, reference):
    """Absolute tolerance: float64 to roundoff, float32 to its precision."""
    scale = np.abs(reference).max()
    return (1e-12 if dtype == np.float64 else 5e-6) * scale


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("d", [1, 3, 17])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_match_kernel_against_reference(simd_path, kernel, d, dtype):
    rng = np.random.default_rng(d)
    X = random_sets(rng, 11, d, dtype)
    Y = random_sets(rng, 6, d, dtype, shift=0.5)
    params = {"kernel": kernel, "gamma": 0.7 / d, "degree": 3, "coef0": 0.5}
    for workers in (1, 2):
        for normalize in (True, False):
            R = sum_match(X, X, normalize=normalize, **params)
            K = sum_match_kernel(X, normalize=normalize, workers=workers, **params)
            assert K.dtype == dtype  # float32 in, float32 out
            assert_allclose(K, R, rtol=0, atol=tolerance(dtype, R))
            R = sum_match(X, Y, normalize=normalize, **params)
            K = sum_match_kernel(X, Y, normalize=normalize, workers=workers, **params)
            assert K.shape == (11, 6)
            assert_allclose(K, R, rtol=0, atol=tolerance(dtype, R))


@pytest.mark.parametrize("kernel", KERNELS)
def test_default_gamma(kernel):
    # gamma=None: the median heuristic of the points (rbf, laplacian), 1 / d
    # for the polynomial kernel (the linear kernel has no gamma).
    rng = np.random.default_rng(0)
    X = random_sets(rng, 4, 5, np.float64)
    gamma = (median_heuristic(X, kernel=kernel) if kernel in ("rbf", "laplacian")
             else 0.2)
    assert_allclose(
        sum_match_kernel(X, kernel=kernel),
        sum_match_kernel(X, kernel=kernel, gamma=gamma),
        rtol=1e-14,
    )


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "polynomial"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_sets_are_split_across_tasks(kernel, dtype):
    # Sets larger than a group (1024 points here) are cut into pieces and
    # many one-point sets fill several groups: both must add up right.
    rng = np.random.default_rng(1)
    X = [rng.normal(size=(2500, 2)), rng.normal(size=(3, 2))]
    X += [rng.normal(size=(1, 2)) for _ in range(300)]
    X = [x.astype(dtype) for x in X]
    Y = [rng.normal(size=(1100, 2)).astype(dtype), X[5]]
    params = {"kernel": kernel, "gamma": 0.3}
    R = sum_match(X, Y, **params)
    for workers in (1, 2):
        atol = tolerance(dtype, R)
        assert_allclose(sum_match_kernel(X, Y, workers=workers, **params), R, atol=atol)
        KT = sum_match_kernel(Y, X, workers=workers, **params)
        assert_allclose(KT, R.T, atol=atol)
    R = sum_match(X[:4], X[:4], **params)
    assert_allclose(sum_match_kernel(X[:4], **params), R, atol=tolerance(dtype, R))
    D = mmd(X[:4], Y, squared=True, **params)
    assert_allclose(D, mmd2(X[:4], Y, **params), atol=10 * tolerance(dtype, R))


@pytest.mark.parametrize("kernel", KERNELS)
def test_results_do_not_depend_on_workers(kernel):
    rng = np.random.default_rng(2)
    X = random_sets(rng, 40, 7, np.float64, high=80)
    Y = random_sets(rng, 9, 7, np.float64)
    for args in [(X,), (X, Y), (Y, X)]:
        one = sum_match_kernel(*args, kernel=kernel, workers=1)
        assert_array_equal(sum_match_kernel(*args, kernel=kernel, workers=2), one)
        assert_array_equal(sum_match_kernel(*args, kernel=kernel, workers=-1), one)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_symmetric_and_positive_semidefinite(kernel, dtype):
    rng = np.random.default_rng(3)
    X = random_sets(rng, 30, 4, dtype)
    K = sum_match_kernel(X, kernel=kernel)
    assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() >= -1e-6 * np.abs(K).max()
    # Explicit Y = X computes both triangles: same values up to roundoff.
    assert_allclose(sum_match_kernel(X, X, kernel=kernel), K, atol=tolerance(dtype, K))
    G = mmd_kernel(X, kernel=kernel, gamma2=0.5)
    assert np.linalg.eigvalsh(G).min() >= -1e-10


def test_bags_and_lists_agree():
    rng = np.random.default_rng(4)
    X = random_sets(rng, 8, 3, np.float64)
    assert_array_equal(sum_match_kernel(Bags.from_list(X)), sum_match_kernel(X))
    stacked = rng.normal(size=(5, 7, 3))
    assert_allclose(sum_match_kernel(stacked), sum_match_kernel(list(stacked)))


def test_mixed_dtypes_compute_in_float64():
    rng = np.random.default_rng(5)
    X = random_sets(rng, 5, 3, np.float32)
    Y = random_sets(rng, 4, 3, np.float64)
    R = sum_match(X, Y, kernel="rbf", gamma=1 / 3)
    assert_allclose(sum_match_kernel(X, Y, gamma=1 / 3), R, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mmd_against_reference(kernel, dtype):
    rng = np.random.default_rng(6)
    X = random_sets(rng, 9, 3, dtype)
    Y = random_sets(rng, 5, 3, dtype, shift=0.3)
    params = {"kernel": kernel, "gamma": 0.4, "degree": 2, "coef0": 1.0}
    R = mmd2(X, Y, **params)
    atol = 10 * tolerance(dtype, R)
    for workers in (1, 2):
        assert_allclose(mmd(X, Y, squared=True, workers=workers, **params),
                        np.maximum(R, 0), atol=atol)
        D = mmd(X, Y, workers=workers, **params)
        assert_allclose(D**2, np.maximum(R, 0), atol=atol)
    RX = mmd2(X, X, **params)
    D2 = mmd(X, squared=True, **params)
    assert_allclose(D2, np.maximum(RX, 0), atol=atol)
    assert_array_equal(np.diag(D2), 0)
    assert_array_equal(D2, D2.T)
    assert (D2 >= 0).all()


@pytest.mark.parametrize("kernel", KERNELS)
def test_mmd_is_kernel_identity(kernel):
    rng = np.random.default_rng(7)
    X = random_sets(rng, 12, 2, np.float64)
    Y = random_sets(rng, 5, 2, np.float64)
    # One gamma for all the calls (gamma=None would take each call's Y).
    params = {"kernel": kernel, "gamma": 0.5}
    K = sum_match_kernel(X, **params)
    identity = np.diag(K)[:, None] + np.diag(K)[None, :] - 2 * K
    np.fill_diagonal(identity, 0)
    assert_allclose(mmd(X, **params, squared=True), np.maximum(identity, 0),
                    atol=1e-12 * np.abs(K).max())
    kxx = np.diag(sum_match_kernel(X, **params))
    kyy = np.diag(sum_match_kernel(Y, **params))
    kxy = sum_match_kernel(X, Y, **params)
    identity = kxx[:, None] + kyy[None, :] - 2 * kxy
    assert_allclose(mmd(X, Y, **params, squared=True), np.maximum(identity, 0),
                    atol=1e-12 * np.abs(K).max())


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unbiased_mmd_against_u_statistic(kernel, dtype):
    rng = np.random.default_rng(8)
    X = random_sets(rng, 7, 3, dtype, low=2, high=30)
    Y = random_sets(rng, 4, 3, dtype, low=2, high=30)
    params = {"kernel": kernel, "gamma": 0.5, "degree": 3, "coef0": 1.0}
    R = mmd2(X, Y, unbiased=True, **params)
    D = mmd(X, Y, squared=True, unbiased=True, **params)
    scale = max(np.abs(point_kernel(s, s, **params)).max() for s in X + Y)
    atol = (1e-12 if dtype == np.float64 else 2e-5) * scale
    assert_allclose(D, R, atol=atol)
    assert (D < 0).any() or kernel != "rbf"  # the U-statistic can be negative
    R = mmd2(X, X, unbiased=True, **params)
    np.fill_diagonal(R, 0)
    assert_allclose(mmd(X, squared=True, unbiased=True, **params), R, atol=atol)


def test_mmd_separates_distributions():
    rng = np.random.default_rng(9)
    same = [rng.normal(size=(400, 2)) for _ in range(4)]
    other = [rng.uniform(-3, 3, size=(400, 2)) for _ in range(4)]
    D = mmd(same + other, gamma=median_heuristic(same + other, rng=0))
    within = D[:4, :4][np.triu_indices(4, 1)]
    between = D[:4, 4:]
    assert within.max() < between.min()


def test_mmd_kernel_values():
    rng = np.random.default_rng(10)
    X = random_sets(rng, 10, 3, np.float64)
    Y = random_sets(rng, 3, 3, np.float64)
    D2 = mmd2(X, Y, kernel="rbf", gamma=0.25)
    assert_allclose(mmd_kernel(X, Y, gamma=0.25, gamma2=2.0),
                    np.exp(-2.0 * np.maximum(D2, 0)), rtol=1e-12)
    K = mmd_kernel(X)
    assert_array_equal(np.diag(K), 1.0)
    assert ((K > 0) & (K <= 1)).all()


def degenerate():
    """The warning of a point kernel that is 0 between all points of
    different sets."""
    return pytest.warns(DegenerateWarning, match="is 0 between all")


def test_huge_values_stay_finite():
    rng = np.random.default_rng(11)
    X = random_sets(rng, 6, 3, np.float64)
    for kernel, power in [("rbf", 2), ("laplacian", 1)]:
        K = sum_match_kernel(X, kernel=kernel, gamma=0.5)
        for scale, dtype in [(1e150, np.float64), (1e30, np.float32),
                             (1e-150, np.float64)]:
            big = [(x * scale).astype(dtype) for x in X]
            Kbig = sum_match_kernel(big, kernel=kernel, gamma=0.5 / scale**power)
            assert_allclose(Kbig, K, atol=1e-5 if dtype == np.float32 else 1e-12)
    # gamma = 1 / d (the median heuristic of such points is below float64's
    # range, a ValueError saying so).
    # (the kernel is then 0 between all points: a DegenerateWarning says so)
    big = [x * 1e200 for x in X]
    for f in (sum_match_kernel, mmd, mmd_kernel):
        with degenerate():
            assert np.isfinite(f(big, gamma=1 / 3)).all()
        with degenerate():
            assert np.isfinite(f(big, [x + 1e300 for x in big], gamma=1 / 3)).all()
        with pytest.raises(ValueError, match="beyond the float64 range"):
            f(big)
    with degenerate():
        assert_array_equal(np.diag(mmd(big, gamma=1 / 3)), 0)
    with degenerate():
        assert_allclose(sum_match_kernel(big, gamma=1.0)[0, 1], 0)
    far = [np.array([[1e308]]), np.array([[-1e308]])]
    with degenerate():
        assert sum_match_kernel(far, gamma=1.0)[0, 1] == 0


@pytest.mark.parametrize("kernel", ["linear", "polynomial"])
def test_overflow_raises_instead_of_nan(kernel):
    X = [np.full((2, 3), 1e200), np.full((1, 3), -1e200)]
    with pytest.raises(ValueError, match="overflow"):
        sum_match_kernel(X, kernel=kernel)
    with pytest.raises(ValueError, match="overflow"):
        mmd(X, kernel=kernel)


def test_non_contiguous_and_read_only_input():
    rng = np.random.default_rng(12)
    base = [rng.normal(size=(n, 6)) for n in (5, 8, 3)]
    X = [np.asfortranarray(b) for b in base[:2]] + [base[2]]
    X[2].setflags(write=False)
    strided = [b[::2, ::2] for b in base]
    R = sum_match(X, X, kernel="rbf", gamma=1 / 6)
    assert_allclose(sum_match_kernel(X, gamma=1 / 6), R, atol=1e-12)
    R = sum_match(strided, strided, kernel="rbf", gamma=1 / 3)
    assert_allclose(sum_match_kernel(strided, gamma=1 / 3), R, atol=1e-12)
    frozen = Bags.from_list(X)
    assert_allclose(mmd(frozen), mmd(X), atol=1e-14)


def test_object_arrays():
    numbers = [np.array([[1, 2], [3, 4]], dtype=object), np.array([[0.5, 1.0]])]
    assert_allclose(sum_match_kernel(numbers),
                    sum_match_kernel([np.array(a, dtype=float) for a in numbers]))
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.ones((3, 2)), np.zeros((1, 2))
    assert sum_match_kernel(ragged).shape == (2, 2)


def test_progress_bar(capsys):
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(13)
    X = random_sets(rng, 300, 2, np.float64, high=5)
    K = sum_match_kernel(X, progress=True)
    assert "100%" in capsys.readouterr().err
    assert_array_equal(K, sum_match_kernel(X))
    assert_array_equal(mmd(X, progress=True), mmd(X))


def test_progress_without_tqdm_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)
    X = [np.ones((2, 2))]
    for f in (sum_match_kernel, mmd, mmd_kernel):
        with pytest.raises(ImportError, match=r"kernelmaps\[progress\]"):
            f(X, progress=True)


def test_median_heuristic():
    rng = np.random.default_rng(14)
    pts = rng.normal(size=(300, 4))
    d2 = ((pts[:, None] - pts[None]) ** 2).sum(-1)[np.triu_indices(300, 1)]
    assert median_heuristic(pts) == pytest.approx(1 / np.median(d2), rel=1e-12)
    sets = [pts[:100], pts[100:]]
    assert median_heuristic(sets) == median_heuristic(pts)
    assert median_heuristic(Bags.from_list(sets)) == median_heuristic(pts)
    # Sampling: reproducible for a seed, close to the full value.
    sampled = median_heuristic(pts, sample=100, rng=1)
    assert sampled == median_heuristic(pts, sample=100, rng=np.random.default_rng(1))
    assert sampled == pytest.approx(median_heuristic(pts), rel=0.2)
    assert median_heuristic(pts.astype(np.float32)) == pytest.approx(
        median_heuristic(pts), rel=1e-5)


@pytest.mark.parametrize(
    ("X", "kwargs", "error", "match"),
    [
        (np.ones((1, 2)), {}, ValueError, "at least 2 points"),
        (np.zeros((5, 2)), {}, ValueError, "median distance"),
        (np.ones((5, 2)), {"sample": 1}, ValueError, "sample must be >= 2"),
        (np.ones((5, 2)), {"sample": 2.5}, TypeError, "sample must be an int"),
        (np.array([[np.nan, 1.0], [0.0, 1.0]]), {}, ValueError, "NaN"),
        (np.array([["a"], ["b"]]), {}, TypeError, "real numbers"),
        ([np.ones((2, 2)), np.ones((2, 3))], {}, ValueError, "same number"),
    ],
)
def test_median_heuristic_bad_input(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        median_heuristic(X, **kwargs)


@pytest.mark.parametrize("rng", ["seed", -1, 1.5, True])
def test_median_heuristic_checks_rng_even_when_unused(rng):
    X = np.arange(8.0).reshape(4, 2)  # fewer points than sample: rng unused
    with pytest.raises((TypeError, ValueError), match=r"\brng\b"):
        km.median_heuristic(X, rng=rng)
    assert km.median_heuristic(X, sample=3, rng=np.array(5)) > 0


def test_median_heuristic_at_any_scale():
    X = np.random.default_rng(0).normal(size=(8, 2))
    g = km.median_heuristic(X)
    for scale in (2.0**-500, 2.0**-300, 2.0**500):
        assert km.median_heuristic(X * scale) == g / scale**2  # exact scaling
    for scale in (1e300, 1e-300):  # gamma 1e-600, 1e600: beyond float64
        with pytest.raises(ValueError, match="median distance of X"):
            km.median_heuristic(X * scale)


# -- a point kernel that is the identity or a constant: DegenerateWarning -----


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_degenerate_point_kernels_warn(kernel, dtype):
    """A gamma so large that the point kernel underflows between all points
    of different sets (exactly 0 off the diagonal, 1 / n_i on it) or so
    small that it rounds to 1 everywhere gives the exact values with a
    DegenerateWarning that says so, pointing at the caller's line; a
    sensible gamma, a single set, and kernels with some information left
    give none (warnings are errors in this suite)."""
    rng = np.random.default_rng(4)
    sets = [rng.normal(size=(n, 3)).astype(dtype) for n in (5, 8, 3)]
    for f in (sum_match_kernel, mmd, mmd_kernel):
        with pytest.warns(DegenerateWarning, match="is 0 between all points of "
                          "different sets: gamma is far too large") as caught:
            f(sets, kernel=kernel, gamma=1e10)
        assert caught[0].filename == __file__
        with pytest.warns(DegenerateWarning, match="is 0 between all points"):
            f(sets[:1], sets[1:], kernel=kernel, gamma=1e10)
        with pytest.warns(DegenerateWarning, match="is 1 between all points: "
                          "gamma is far too small"):
            f(sets, kernel=kernel, gamma=1e-20)
        f(sets, kernel=kernel)  # the median heuristic: no warning
        f(sets[:1], kernel=kernel, gamma=1e10)  # nothing off the diagonal
    with pytest.warns(DegenerateWarning):
        K = sum_match_kernel(sets, kernel=kernel, gamma=1e10)
    assert_allclose(K, np.diag([1 / 5, 1 / 8, 1 / 3]), rtol=1e-6)
    with pytest.warns(DegenerateWarning):
        assert_array_equal(sum_match_kernel(sets, kernel=kernel, gamma=1e-20,
                                            normalize=False),
                           np.multiply.outer([5, 8, 3], [5, 8, 3]))
    # Two points of different sets closer than the others: not degenerate.
    close = [*sets, sets[0][:1] + 1e-12]
    K = sum_match_kernel(close, kernel=kernel, gamma=1e10)
    assert K[0, 3] > 0


# ------------------------------- descriptors: d = 512 and 2048, from products


def descriptor_sets(rng, d, dtype, sizes, offset=0.0):
    """Sets of N(offset, 1) points."""
    return [(rng.standard_normal((n, d)) + offset).astype(dtype) for n in sizes]


@pytest.fixture
def small_groups(monkeypatch):
    """Groups of 48 points for the products: small sets split across
    groups, as large ones are."""
    from kernelmaps._engine import pair_sums

    monkeypatch.setattr(pair_sums, "PAIR_GEMM_BLOCK", 48)


@pytest.mark.parametrize("d", [512, 2048])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("offset", [0.0, 4.0])  # centred, or far from 0
def test_high_dimensional_rbf_against_long_double(simd_path, small_groups, d,
                                                  dtype, offset):
    # The descriptors users bring (SIFT: 128, deep features: 512 to 2048):
    # the products path, sets against themselves and against others, sets
    # split across groups; float64 to 1e-12, float32 to 1e-5; any threads.
    rng = np.random.default_rng(d)
    X = descriptor_sets(rng, d, dtype, (1, 70, 7, 40), offset)
    Y = descriptor_sets(rng, d, dtype, (3, 60), offset)
    gamma = 1.0 / (2 * d)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    for A, B in ((X, None), (X, Y)):
        R = sum_match(A, A if B is None else B, "rbf", gamma, dtype=np.longdouble)
        K = sum_match_kernel(A, B, gamma=gamma, workers=2)
        assert_allclose(K, R, rtol=rtol, atol=0)
        assert_array_equal(K, sum_match_kernel(A, B, gamma=gamma, workers=1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_high_dimensional_polynomial_against_long_double(small_groups, dtype):
    rng = np.random.default_rng(5)
    X = descriptor_sets(rng, 512, dtype, (4, 60, 9))
    gamma = 1.0 / 512
    R = sum_match(X, X, "polynomial", gamma, degree=3, coef0=1.0,
                  dtype=np.longdouble)
    K = sum_match_kernel(X, kernel="polynomial", gamma=gamma, degree=3,
                         coef0=1.0, workers=2)
    assert_allclose(K, R, rtol=1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_high_dimensional_rbf_at_extreme_scales(small_groups, dtype, scale):
    # float64 points at 1e+-150 (float32: at 1e+-30), in units of the
    # bandwidth before the products.
    scale = scale if dtype == np.float64 else scale ** 0.2
    rng = np.random.default_rng(1)
    X = [s * scale for s in descriptor_sets(rng, 512, np.float64, (5, 70, 30))]
    gamma = 1.0 / (1024 * scale**2)
    R = sum_match([x / scale for x in X], [x / scale for x in X], "rbf",
                  1.0 / 1024, dtype=np.longdouble)
    K = sum_match_kernel([x.astype(dtype) for x in X], gamma=gamma)
    assert_allclose(K, R, rtol=1e-12 if dtype == np.float64 else 1e-5)


def test_high_dimensional_clusters_take_the_exact_form_where_needed(
        small_groups, monkeypatch):
    # A set far (1e3 bandwidths) from the others: the group pairs that hold
    # it cannot certify their products, uncentred or centred, and take the
    # difference tiles, the others the products; every value stays exact.
    from kernelmaps._engine import pair_sums

    calls = []
    original = pair_sums._impl.product_sums

    def counted(*args):
        calls.append(args[12][args[-3]:args[-2], 2].copy())  # the items
        return original(*args)

    monkeypatch.setattr(pair_sums._impl, "product_sums", counted)
    rng = np.random.default_rng(2)
    d = 256
    X = [rng.standard_normal((40, d)) + (1e3 if i == 5 else 0.0) / np.sqrt(d)
         for i in range(6)]
    R = sum_match(X, X, "rbf", 1.0 / d, dtype=np.longdouble)
    assert_allclose(sum_match_kernel(X, gamma=1.0 / d), R, rtol=1e-12,
                    atol=1e-300)
    forms = np.concatenate(calls)
    assert set(forms) == {pair_sums._impl.PRODUCTS, pair_sums._impl.EXACT}


def test_high_dimensional_mmd_and_mmd_kernel(small_groups):
    rng = np.random.default_rng(3)
    X = descriptor_sets(rng, 512, np.float64, (20, 54, 33))
    gamma = 1.0 / 1024
    K = sum_match(X, X, "rbf", gamma, dtype=np.longdouble)
    d = np.diag(K)
    M2 = np.maximum(d[:, None] + d[None, :] - 2 * K, 0)
    assert_allclose(mmd(X, gamma=gamma) ** 2, M2, rtol=1e-9, atol=1e-15)
    assert_allclose(mmd_kernel(X, gamma=gamma, gamma2=2.0), np.exp(-2.0 * M2),
                    rtol=1e-9)


# -- bad input: a clear TypeError or ValueError naming the argument ----------


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


SETS = sets_and_histograms()[0]


def test_degree_beyond_a_c_int():
    with pytest.raises(ValueError, match="degree"):
        km.sum_match_kernel(SETS, kernel="polynomial", degree=10**12)


# -- every scale, overflow named, no RuntimeWarning --------------------------


# (gamma = 1e3 / scale**power makes the kernel the identity on these sets:
# exact all the same, with a DegenerateWarning)
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("dtype, scales, rtol, atol", [
    (np.float64, [1e-150, 1e-50, 1.0, 1e3, 1e50, 1e150], 1e-12, 0.0),
    # float32 kernel values below its range (about 1e-37) are 0
    (np.float32, [1e-30, 1e-10, 1.0, 1e3, 1e10, 1e30], 1e-5, 1e-37),
])
def test_set_kernels_exact_at_every_scale(simd_path, kernel, dtype, scales, rtol,
                                          atol):
    """Used to lose the self terms through |x|^2 + |y|^2 - 2 <x, y>: 8 % off
    for float32 points of spread 1e3 at gamma=1 (issue 17, defect 3)."""
    rng = np.random.default_rng(1)
    for scale in scales:
        # Far from the origin (offset 100 spreads) and spread `scale`.
        sets = [((rng.normal(size=(n, 3)) + 100) * scale).astype(dtype)
                for n in (20, 7, 13)]
        power = 2 if kernel == "rbf" else 1
        for gamma in (1e-3 / scale**power, 1.0 / scale**power,
                      1e3 / scale**power):
            K = km.sum_match_kernel(sets, kernel=kernel, gamma=gamma)
            ref = sum_match(sets, sets, kernel, gamma)
            assert_allclose(K, ref, rtol=rtol, atol=atol,
                            err_msg=f"scale={scale} gamma={gamma}")


def test_the_issue_example():
    rng = np.random.default_rng(0)
    X = [(rng.normal(size=(20, 3)) * 1e3).astype(np.float32) for _ in range(3)]
    # Every cross term underflows: the diagonal is the self terms, 1 / 20
    # (a kernel that is the identity, which a DegenerateWarning says).
    with pytest.warns(km.DegenerateWarning, match="is 0 between all points"):
        K = km.sum_match_kernel(X, gamma=1.0)
    assert_allclose(np.diag(K), 0.05, rtol=1e-7)
    with pytest.warns(km.DegenerateWarning, match="is 0 between all points"):
        D2 = km.mmd(X, gamma=1.0, unbiased=True, squared=True)
    assert_array_equal(D2, 0.0)


def test_a_pair_does_not_depend_on_the_other_sets():
    """Used to give 0.0 for mmd([A, 1e300 A], [B])[0, 0] (0.733 alone)."""
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(15, 2)), rng.normal(size=(11, 2)) + 0.5
    alone = km.mmd([A], [B])[0, 0]
    assert alone > 0.1
    for other in (1e300 * A, 1e-300 * A, A + 1e200):
        assert_allclose(km.mmd([A, other], [B])[0, 0], alone, rtol=1e-13)
        assert_allclose(km.sum_match_kernel([other, A], [B])[1, 0],
                        km.sum_match_kernel([A], [B])[0, 0], rtol=1e-13)


def test_huge_gamma_for_huge_points():
    # Computable: the points in bandwidth units stay finite.
    assert_array_equal(km.sum_match_kernel([np.array([[1e300, 0.0]])],
                                           gamma=1e300), [[1.0]])
    # Not computable in float64: gamma * |x|^2 is beyond its range.
    with pytest.raises(ValueError, match="gamma"):
        km.sum_match_kernel([np.array([[1.7e308, 0.0]])], gamma=1e308)


@pytest.mark.parametrize("func", [km.sum_match_kernel, km.mmd, km.mmd_kernel])
def test_set_kernel_overflow_names_x_and_y(func):
    X, Y = sets(0), sets(1, n_sets=2)
    big = [x * 1e150 for x in X]
    with pytest.raises(ValueError, match="polynomial kernel values of X overflow"):
        func(big, kernel="polynomial", degree=3)
    with pytest.raises(ValueError, match="of X and Y overflow"):
        func(X, [y * 1e150 for y in Y], kernel="polynomial", degree=3)


def test_unbiased_mmd_overflow_is_an_error_without_warning():
    X, Y = sets(0), sets(1, n_sets=2)
    with pytest.raises(ValueError, match="linear kernel values of X and Y overflow"):
        km.mmd([x * 1e300 for x in X], Y, kernel="linear", squared=True,
               unbiased=True)


def test_huge_gamma2_gives_the_identity_with_a_warning():
    # (no overflow warning from gamma2 * D2: the identity, and a
    # DegenerateWarning that says why)
    X = sets(0, d=1)
    with pytest.warns(DegenerateWarning, match="the MMD kernel with gamma=1.8e"
                                               r"\+308 is 0 between all sets of X"):
        K = km.mmd_kernel(X, kernel="laplacian", gamma2=1.7976931348623157e308)
    assert_array_equal(K, np.eye(3))
    rng = np.random.default_rng(0)
    F = rng.normal(size=(3, 2))
    G = F @ F.T
    with pytest.warns(DegenerateWarning, match="the level-2 rbf kernel with "
                                               "gamma=1.8e"):
        L = km.level2_kernel(G, np.diag(G), kind="rbf",
                             gamma2=1.7976931348623157e308)
    assert_array_equal(L, np.eye(3))
