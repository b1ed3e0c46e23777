"""The energy kernel of the pair-sums engine (`pair_sums`, `self_sums`
with ``kernel="energy"``): the distance-induced kernel
``k(x, y) = (|x| + |y| - |x - y|) / 2`` of Sejdinovic et al. (2013), whose
MMD^2 is half the energy distance, against a NumPy reference written here
(`scipy.spatial.distance.cdist`), on every code path.

Tolerances. Every kernel value is at least 0 and at most the norms' part
``(|x| + |y|) / 2``; the sums are compared with ``M``, the sum of the
norms' parts over the pairs (weighted as the sums are), not with the sums
themselves: ``|x| + |y| - |x - y|`` cancels for points on opposite sides
of 0, in the reference as in the engine. float64: the norms and the
distance are sums of d squares (rounding error at most (d / 2 + 2) u
relative after the square root), the two additions add 2 u, and the sums
over the pairs at most L u with L the longest run of additions (the runs
of the tiles: below 3,000 here), so at most (d + 6 + L) u M < 4e-13 M for
the shapes here (d <= 131), and the reference's error is of the same
size: ``1e-12 M``. float32 (the reference computes in float64 from the
same float32 points): the differences, the FMA sums of the squares and the
square root err by at most (d / 2 + 2) u32 relative, the norms rounded to
float32, the two additions, the row weights and the float32 sums of the
KM_MR rows of a strip add 8 u32 more (the float64 sums nothing that
counts): ``(d + 20) u32 M``.
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy.spatial.distance import cdist

from kernelmaps import Bags
from kernelmaps._engine import pair_sums as engine
from kernelmaps._engine.pair_sums import pair_sums, self_sums

# (sets, smallest and largest set, d): "small" one group (`one_group`),
# "tiles" several groups, "segments" sets cut into pieces (larger than a
# group), "d1" one feature, "wide" many (the rbf kernel would take BLAS
# products there; the energy kernel always the difference tiles).
SHAPES = {
    "small": (7, 1, 9, 3),
    "tiles": (45, 1, 61, 5),
    "segments": (3, 300, 1300, 2),
    "d1": (30, 1, 40, 1),
    "wide": (9, 2, 30, 131),
}


def energy_matrix(x, y):
    """k(x, y) between the rows of x and y in float64."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    norms = np.linalg.norm(x, axis=1)[:, None] + np.linalg.norm(y, axis=1)[None]
    return (norms - cdist(x, y)) / 2, norms / 2


def reference(X, Y, wX=None, wY=None, normalize=False):
    """(sums, M): the sums of w_x w_y k(x, y) over each pair of sets (divided
    by the total weights with `normalize`) and those of the norms' parts,
    a pair of sets at a time; unweighted sets weigh 1 a point."""
    wX = [np.ones(len(x)) for x in X] if wX is None else wX
    wY = [np.ones(len(y)) for y in Y] if wY is None else wY
    S, M = np.empty((len(X), len(Y))), np.empty((len(X), len(Y)))
    for i, (x, wx) in enumerate(zip(X, wX, strict=True)):
        for j, (y, wy) in enumerate(zip(Y, wY, strict=True)):
            K, N = energy_matrix(x, y)
            total = wx.sum() * wy.sum() if normalize else 1.0
            S[i, j], M[i, j] = wx @ K @ wy / total, wx @ N @ wy / total
    return S, M


def rtol(dtype, d):
    """The bounds of the module docstring, relative to M."""
    return 1e-12 if dtype == np.float64 else (d + 20) * 2.0**-24


def assert_close(S, R, M, dtype, d):
    assert S.shape == R.shape and S.dtype == np.float64
    err = np.abs(S - R)
    bound = rtol(dtype, d) * M
    assert (err <= bound).all(), (err / np.maximum(M, 1e-300)).max()


def random_sets(rng, shape, dtype, shift=0.0):
    n_sets, low, high, d = SHAPES[shape] if isinstance(shape, str) else shape
    return [(rng.normal(size=(int(rng.integers(low, high + 1)), d)) + shift)
            .astype(dtype) for _ in range(n_sets)]


def random_weights(rng, sets):
    """Non-negative weights, some 0 (never all of a set's)."""
    weights = []
    for s in sets:
        w = rng.uniform(0.05, 3.0, len(s))
        if len(s) > 1:
            w[rng.random(len(s)) < 0.2] = 0.0
            w[rng.integers(len(s))] = rng.uniform(0.5, 2.0)
        weights.append(w)
    return weights


_REFERENCES = {}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_pair_sums_against_the_reference(simd_path, shape, dtype, weighted):
    rng = np.random.default_rng(len(shape) + 7 * weighted)
    X = random_sets(rng, shape, dtype)
    Y = random_sets(rng, shape, dtype, shift=0.3)[:max(2, SHAPES[shape][0] // 2)]
    wX, wY = (random_weights(rng, X), random_weights(rng, Y)) if weighted else (
        None, None)
    BX, BY = Bags.from_list(X, weights=wX), Bags.from_list(Y, weights=wY)
    d = SHAPES[shape][3]
    for normalize in (False, True):
        key = (shape, np.dtype(dtype).str, weighted, normalize)
        if key not in _REFERENCES:  # the same on every code path: once
            _REFERENCES[key] = (reference(X, Y, wX, wY, normalize),
                                reference(X, X, wX, wX, normalize))
        (R, M), (RXX, MXX) = _REFERENCES[key]
        for workers in (1, 2):
            S = pair_sums(BX, BY, kernel="energy", n_threads=workers,
                          normalize=normalize)
            assert_close(S, R, M, dtype, d)
            T = pair_sums(BY, BX, kernel="energy", n_threads=workers,
                          normalize=normalize)
            assert_close(T, R.T, M.T, dtype, d)
            K = pair_sums(BX, kernel="energy", n_threads=workers,
                          normalize=normalize)
            assert_close(K, RXX, MXX, dtype, d)
            if shape != "segments":  # (sets in pieces: folded in another
                # order for K[i, j] and K[j, i])
                assert_array_equal(K, K.T)
            s = self_sums(BX, kernel="energy", n_threads=workers,
                          normalize=normalize and weighted)
            if normalize and not weighted:  # (self_sums divides weighted
                # sets only)
                s = s / BX.sizes.astype(np.float64) ** 2
            assert_close(s, np.diag(RXX), np.diag(MXX), dtype, d)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", ["small", "d1", (10, 1, 10, 3), (20, 1, 9, 17)])
def test_one_group_gives_the_bits_of_the_planned_path(simd_path, monkeypatch,
                                                      shape, dtype):
    # The small calls' path computes the norms itself (`_norms`), the
    # planned path from the packed arrays (`packed_norms`): the same bits.
    rng = np.random.default_rng(5)
    X = Bags.from_list(random_sets(rng, shape, dtype))
    Y = Bags.from_list(random_sets(rng, shape, dtype, shift=-0.2))
    w = random_weights(rng, [np.empty(n) for n in X.sizes])
    XW = Bags.from_list([X[i] for i in range(len(X))], weights=w)
    for args in ((X, None), (X, Y), (XW, Y), (XW, None)):
        for normalize in (False, True):
            fast = pair_sums(*args, kernel="energy", normalize=normalize)
            with monkeypatch.context() as m:
                m.setattr(engine, "_one_group", lambda bags, max_points: False)
                planned = pair_sums(*args, kernel="energy", normalize=normalize)
            assert_array_equal(fast, planned)


# Power-of-two scales (the points keep every bit, and the reference scales
# exactly): about 1e-301, 6e-151, 1.6e150 and 6.7e299 in float64; about
# 8e-31, 1.3e30 and 2e37 in float32.
SCALES = {np.float64: [-1000, -499, 499, 995], np.float32: [-100, 100, 124]}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", ["small", "tiles", "d1", "wide"])
def test_extreme_scales(shape, dtype):
    # k is homogeneous of degree 1: the sums of the points times 2**p are
    # 2**p times the sums, where squares of the points would overflow or
    # underflow; and bit for bit, since the points are packed at the same
    # scale (`squares_exponent`).
    rng = np.random.default_rng(9)
    X = random_sets(rng, shape, dtype)
    Y = random_sets(rng, shape, dtype, shift=0.5)[:5]
    wX, wY = random_weights(rng, X), random_weights(rng, Y)
    d = SHAPES[shape][3]
    for normalize in (False, True):
        R, M = reference(X, Y, wX, wY, normalize)
        BX, BY = Bags.from_list(X, weights=wX), Bags.from_list(Y, weights=wY)
        base = pair_sums(BX, BY, kernel="energy", normalize=normalize)
        assert_close(base, R, M, dtype, d)
        for p in SCALES[dtype]:
            sx = Bags.from_list([np.ldexp(x, p) for x in X], weights=wX)
            sy = Bags.from_list([np.ldexp(y, p) for y in Y], weights=wY)
            S = pair_sums(sx, sy, kernel="energy", normalize=normalize,
                          n_threads=2)
            assert_array_equal(S, np.ldexp(base, p), err_msg=f"2**{p}")
            assert_close(S, np.ldexp(R, p), np.ldexp(M, p), dtype, d)
            s = self_sums(sx, kernel="energy")
            assert_array_equal(s, np.ldexp(self_sums(BX, kernel="energy"), p))


def test_mixed_magnitudes_in_one_call():
    # Sets near 1e-150 beside sets near 1e150: each pair of small sets is
    # exact relative to its own magnitude (the squares of their differences,
    # at the common scale, stay normal numbers).
    rng = np.random.default_rng(4)
    X = random_sets(rng, (6, 1, 12, 4), np.float64)
    X = [x * (1e-150 if i % 2 else 1e150) for i, x in enumerate(X)]
    R, M = reference(X, X)
    assert M.min() < 1e-140 and M.max() > 1e140
    for workers in (1, 2):
        assert_close(pair_sums(Bags.from_list(X), kernel="energy",
                               n_threads=workers), R, M, np.float64, 4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_subnormal_points(dtype):
    # Points that are integers times the smallest subnormal number: exact,
    # and their reference that of the integers times it. The sums, of the
    # order of the points, are float64: subnormal in float64 too, so
    # compared after scaling up, within half their last unit.
    rng = np.random.default_rng(2)
    tiny = -1074 if dtype == np.float64 else -149
    ints = [rng.integers(-1000, 1001, size=(n, 3)).astype(dtype)
            for n in (1, 5, 8, 3)]
    R, M = reference(ints, ints)
    points = Bags.from_list([np.ldexp(a, tiny) for a in ints])
    assert np.abs(points.points).max() < np.finfo(dtype).tiny
    S = pair_sums(points, kernel="energy")
    err = np.abs(np.ldexp(S, -tiny) - R)
    assert (err <= rtol(dtype, 3) * M + 0.5).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_coincident_points_give_the_norms_part(simd_path, dtype, d):
    # Points with exact norms (|(3, 4)| = 5, |(2, 3, 6)| = 7, |(-9)| = 9),
    # repeated: between copies of them |x - y| is exactly 0 (differences,
    # not |x|^2 + |y|^2 - 2 <x, y>) and every k(x, y) exactly |x|.
    point = {1: [-9.0], 2: [3.0, 4.0], 3: [2.0, 3.0, 6.0]}[d]
    norm = {1: 9.0, 2: 5.0, 3: 7.0}[d]
    for p in (0, -600, 600) if dtype == np.float64 else (0, -60, 60):
        x = np.ldexp(np.array(point, dtype=dtype), p)
        sizes = (1, 3, 7, 40, 700)  # one group; and a set cut into pieces
        X = Bags.from_list([np.tile(x, (n, 1)) for n in sizes])
        expected = np.ldexp(np.outer(sizes, sizes) * norm, p)
        assert_array_equal(pair_sums(X, kernel="energy"), expected)
        assert_array_equal(pair_sums(X, X, kernel="energy", n_threads=2),
                           expected)
        assert_array_equal(self_sums(X, kernel="energy"), np.diag(expected))
        assert_array_equal(pair_sums(X, kernel="energy", normalize=True),
                           np.full(expected.shape, math.ldexp(norm, p)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_are_never_negative(dtype):
    # x and -x: |x| + |-x| - |2x| is 0, and rounding never takes it below.
    rng = np.random.default_rng(8)
    x = rng.normal(size=(300, 7)).astype(dtype)
    S = pair_sums(Bags.from_list(list(x[:, None])), Bags.from_list(
        list(-x[:, None])), kernel="energy")
    assert (S >= 0).all()
    assert (np.diag(S) <= rtol(dtype, 7) * np.linalg.norm(x, axis=1)).all()


def test_parameters_of_other_kernels_are_unused():
    rng = np.random.default_rng(6)
    X = Bags.from_list(random_sets(rng, "tiles", np.float64))
    Y = Bags.from_list(random_sets(rng, (7, 1, 9, 5), np.float64))
    for args in ((X, None), (X, Y), (Y, None), (Y, X)):
        plain = pair_sums(*args, kernel="energy")
        for params in ({"gamma": 123.0, "coef0": -5.0, "degree": 7},
                       {"gamma": None, "coef0": None, "degree": None},
                       {"gamma": -1.0, "coef0": math.inf, "degree": 0}):
            assert_array_equal(pair_sums(*args, kernel="energy", **params), plain)
    s = self_sums(X, kernel="energy")
    assert_array_equal(self_sums(X, kernel="energy", gamma=None, degree=None,
                                 coef0=None), s)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mmd_is_half_the_energy_distance(dtype):
    # MMD^2 of k (biased: the means over all pairs) is
    # E|X - Y| - (E|X - X'| + E|Y - Y'|) / 2, half Szekely and Rizzo's
    # energy distance: the norms' parts cancel.
    rng = np.random.default_rng(10)
    x = rng.normal(size=(30, 3)).astype(dtype)
    y = (rng.normal(size=(40, 3)) + 0.4).astype(dtype)
    B = Bags.from_list([x, y])
    K = pair_sums(B, kernel="energy", normalize=True)
    mmd2 = K[0, 0] + K[1, 1] - 2 * K[0, 1]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    half_energy = (cdist(x64, y64).mean()
                   - (cdist(x64, x64).mean() + cdist(y64, y64).mean()) / 2)
    scale = np.linalg.norm(np.concatenate([x64, y64]), axis=1).mean()
    assert abs(mmd2 - half_energy) <= 4 * rtol(dtype, 3) * scale
    assert half_energy > 0.05


def test_packed_norms_of_rows_and_columns_agree():
    # The row norms and the column norms (the phases) of the tiles, from
    # the two layouts of the same points: the same bits.
    from kernelmaps._engine.layout import pack_cols, pack_rows

    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        p = rng.normal(size=(37, 11)).astype(dtype)
        rows = engine._impl.packed_norms(pack_rows(p), False)
        cols = engine._impl.packed_norms(pack_cols(p), True)
        assert rows.dtype == cols.dtype == dtype
        assert_array_equal(rows[:37], cols[:37])
        assert not rows[37:].any() and not cols[37:].any()
        ref = np.linalg.norm(p.astype(np.float64), axis=1)
        np.testing.assert_allclose(rows[:37], ref,
                                   rtol=4e-16 if dtype == np.float64 else 6e-8)
