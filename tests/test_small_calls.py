"""The fast paths of small calls: sets of plain arrays gathered in one pass
(`_engine._gather.gather_plain`), one group pair computed without planning
(`_engine._pair_sums.one_group`), and the diagonal group pairs of a set
kernel computed for t >= s only. Each must give the bits of the general
path."""

import numpy as np
import pytest
from kernelmaps._engine._gather import gather_plain

import kernelmaps
from kernelmaps import Bags
from kernelmaps._engine import pair_sums as pair_sums_module
from kernelmaps._validation import check_sets

from ._helpers import random_sets
from ._references import sum_match

KERNELS = ("rbf", "laplacian", "polynomial")


def _sets(seed, n_sets, high, d, dtype):
    return random_sets(np.random.default_rng(seed), n_sets, d, dtype, high=high)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (10, 10, 3), (7, 33, 5), (20, 9, 17)])
def test_one_group_gives_the_bits_of_the_planned_path(simd_path, monkeypatch,
                                                      shape, kernel, dtype):
    n_sets, high, d = shape
    X = Bags.from_list(_sets(0, n_sets, high, d, dtype))
    Y = Bags.from_list(_sets(1, n_sets + 2, high, d, dtype))
    for args in ((X, None), (X, Y)):
        fast = pair_sums_module.pair_sums(*args, kernel=kernel, gamma=0.3)
        with monkeypatch.context() as m:
            m.setattr(pair_sums_module, "_one_group", lambda bags, max_points: False)
            planned = pair_sums_module.pair_sums(*args, kernel=kernel, gamma=0.3)
        np.testing.assert_array_equal(fast, planned)
        # Against an independent reference too, not only the engine itself.
        Ys = X if args[1] is None else args[1]
        ref = sum_match(X, Ys, kernel, 0.3, normalize=False)
        rtol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(fast, ref, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", [(10, 10, 3), (300, 12, 4), (40, 200, 30)])
def test_symmetric_call_gives_the_bits_of_the_full_one(simd_path, shape, kernel,
                                                       dtype):
    # X against itself computes the columns t >= s of its diagonal group
    # pairs only; X against a copy of X computes them all.
    n_sets, high, d = shape
    X = _sets(2, n_sets, high, d, dtype)
    sym = kernelmaps.sum_match_kernel(X, kernel=kernel, gamma=0.1, workers=2)
    full = kernelmaps.sum_match_kernel(X, [x.copy() for x in X], kernel=kernel,
                                       gamma=0.1, workers=2)
    upper = np.triu_indices(n_sets)
    np.testing.assert_array_equal(sym[upper], full[upper])
    np.testing.assert_array_equal(sym, sym.T)


# (the kernel of these sets is the identity: a DegenerateWarning says so)
@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
def test_float32_points_computed_in_float64_are_scaled_in_float64():
    # gamma far beyond float32 with points near 1e30: the points are packed
    # times 2**e in float64 (in float32 they overflowed, and every kernel
    # value came out 0).
    X = [np.array([[1e30, 0.0], [1e30, 1.0]], np.float32),
         np.array([[0.0, 1e30]], np.float32)]
    X64 = [x.astype(np.float64) for x in X]
    for big in (False, True):  # one group, and the planned path
        sets = [np.repeat(x, 700, axis=0) for x in X] if big else X
        sets64 = [np.repeat(x, 700, axis=0) for x in X64] if big else X64
        K = kernelmaps.sum_match_kernel(sets, gamma=1e90)
        K64 = kernelmaps.sum_match_kernel(sets64, gamma=1e90)
        np.testing.assert_array_equal(K, K64)
        np.testing.assert_allclose(K, [[0.5, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gather_plain_packs_plain_finite_sets(dtype):
    sets = _sets(3, 9, 7, 4, dtype)
    for given in (sets, tuple(sets)):
        points, offsets = gather_plain(given, 1 << 24)
        assert points.dtype == dtype
        np.testing.assert_array_equal(points, np.concatenate(sets))
        np.testing.assert_array_equal(offsets, np.cumsum([0] + [len(s) for s in sets]))
    cube = np.arange(24, dtype=dtype).reshape(2, 3, 4)
    points, offsets = gather_plain(cube, 1 << 24)
    np.testing.assert_array_equal(points, cube.reshape(6, 4))
    np.testing.assert_array_equal(offsets, [0, 3, 6])
    assert not np.shares_memory(points, cube)


def _declined():
    a = np.ones((3, 2))
    nan, inf = a.copy(), a.copy()
    nan[1, 1], inf[2, 0] = np.nan, -np.inf
    return {
        "mixed dtypes": [a, a.astype(np.float32)],
        "ints": [np.ones((3, 2), dtype=np.int64)],
        "not C-contiguous": [a, np.ones((2, 3)).T],
        "an empty set": [a, np.ones((0, 2))],
        "no feature": [np.ones((3, 0))],
        "other widths": [a, np.ones((3, 3))],
        "one set, 2-D": a,
        "a 1-D set": [np.ones(3)],
        "NaN": [a, nan],
        "inf": [inf],
        "big-endian": [a.astype(">f8")],
        "a subclass": [np.ma.masked_array(a)],
        "lists": [[[0.0, 1.0]]],
        "no set": [],
        "a Bags": Bags.from_list([a]),
        "too large": [np.ones((1000, 2))],
        "a cube with NaN": np.stack([a, nan]),
    }


@pytest.mark.parametrize("case", sorted(_declined()))
def test_gather_plain_declines_everything_else(case):
    given = _declined()[case]
    listed = isinstance(given, list)
    before = [np.array(g, copy=True) for g in given] if listed else None
    assert gather_plain(given, 8000) is None
    if before is not None:  # inputs are never changed
        for g, b in zip(given, before, strict=True):
            np.testing.assert_array_equal(np.asarray(g), b)


def test_check_sets_gives_the_same_bags_on_both_paths():
    sets = _sets(4, 12, 9, 3, np.float64)
    fast = check_sets(sets)
    slow = check_sets([s.tolist() for s in sets])  # nested lists: the full path
    np.testing.assert_array_equal(fast.points, slow.points)
    np.testing.assert_array_equal(fast.offsets, slow.offsets)
    assert not fast.points.flags.writeable and not fast.offsets.flags.writeable
    with pytest.raises(ValueError, match=r"X\[1\] has 1 point"):
        check_sets([np.ones((2, 2)), np.ones((1, 2))], min_size=2)


def test_strided_sets_are_packed_in_c_order():
    # np.concatenate of broadcast rows gives a Fortran-ordered block: the
    # packed points must still be C-contiguous (a fuzz case).
    X = _sets(5, 3, 4, 3, np.float64)
    Y = [np.broadcast_to(np.arange(3.0), (4, 3)),
         np.broadcast_to(-np.arange(3.0), (2, 3))]
    bags = check_sets(Y)
    assert bags.points.flags.c_contiguous
    for f in (kernelmaps.sum_match_kernel, kernelmaps.mmd):
        np.testing.assert_array_equal(f(X, Y), f(X, [np.array(y) for y in Y]))


# ------------------------------------------------- rbf sums from dot products


@pytest.mark.parametrize(("d", "scale"), [(40, 1.0), (64, 1e-150), (97, 1e150)])
def test_rbf_from_products_is_exact_enough(simd_path, monkeypatch, d, scale):
    # Sets larger and smaller than a block of BLAS products, against
    # themselves and against others; any scale (points in units of the
    # bandwidth first).
    _products_from(monkeypatch, 32)  # whatever tuned
    calls = _count_product_blocks(monkeypatch)
    rng = np.random.default_rng(d)
    X = [rng.normal(size=(n, d)) * scale for n in (1, 600, 3, 90)]
    Y = [(rng.normal(size=(n, d)) + 0.5) * scale for n in (40, 1, 513)]
    gamma = 1.0 / (d * scale**2)
    for A, B in ((X, None), (X, Y)):
        K = kernelmaps.sum_match_kernel(A, B, gamma=gamma, workers=2)
        R = sum_match(A, A if B is None else B, "rbf", gamma)
        np.testing.assert_allclose(K, R, rtol=1e-12, atol=0)
        K1 = kernelmaps.sum_match_kernel(A, B, gamma=gamma, workers=1)
        np.testing.assert_array_equal(K, K1)  # any number of threads
    assert calls  # the products ran


def _products_from(monkeypatch, d):
    """The products path from `d` features on, in float32 and float64."""
    monkeypatch.setattr(pair_sums_module, "PAIR_GEMM_DIM",
                        dict.fromkeys(map(np.dtype, ("float32", "float64")), d))


def _count_product_blocks(monkeypatch):
    """A list that grows by one for every group pair summed from products
    (not by the difference tiles)."""
    calls = []
    impl = pair_sums_module._impl
    original = impl.product_sums

    def counted(*args):
        items = args[12][args[-3]:args[-2]]  # the items start to stop
        calls.extend([1] * int(np.count_nonzero(items[:, 2] != impl.EXACT)))
        return original(*args)

    monkeypatch.setattr(impl, "product_sums", counted)
    return calls


def test_rbf_from_products_declines_points_far_from_their_centre(monkeypatch):
    # Two clusters 1e4 bandwidths apart: the expansion would lose the small
    # distances within each (error ~1e-7); the difference tiles run instead,
    # bit for bit as with the products switched off.
    rng = np.random.default_rng(7)
    X = [rng.normal(size=(30, 70)) + (1e4 if i % 2 else -1e4) / np.sqrt(70)
         for i in range(6)]
    with monkeypatch.context() as m:
        _products_from(m, 32)
        calls = _count_product_blocks(m)
        K = kernelmaps.sum_match_kernel(X, gamma=1.0)
    assert not calls
    _products_from(monkeypatch, 10**9)
    np.testing.assert_array_equal(K, kernelmaps.sum_match_kernel(X, gamma=1.0))
    np.testing.assert_allclose(K, sum_match(X, X, "rbf", 1.0), rtol=1e-12,
                               atol=1e-300)
