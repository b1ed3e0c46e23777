"""Sliced-Wasserstein distances, kernel and quantile features against slow
NumPy references written here (the quantile functions merged in Python),
and against POT where it is installed."""

import itertools
import math
import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

import kernelmaps as km
from kernelmaps import (
    Bags,
    SlicedWassersteinFeatures,
    sliced_wasserstein,
    sliced_wasserstein_kernel,
)
from kernelmaps.sets._sliced import _check_projections

# -- references ---------------------------------------------------------------


def unit_rows(rng, L, d):
    P = rng.normal(size=(L, d))
    return P / np.linalg.norm(P, axis=1, keepdims=True)


def quantile_steps(values, weights):
    """The sorted values and their cumulative normalised weights (the
    last 1): the step quantile function t -> values[first k with cum[k] >=
    t]."""
    order = np.argsort(values, kind="stable")
    w = weights[order] / weights.max()
    cum = np.cumsum(w) / w.sum()
    cum[-1] = 1.0
    return values[order], cum


def quantile_at(values, cum, t):
    return values[np.minimum(np.searchsorted(cum, t, side="left"),
                             len(values) - 1)]


def wpp_1d(a, wa, b, wb, p):
    """W_p^p between two weighted 1-D samples: the integral of |F^-1 -
    G^-1|^p over the segments between the union of their breakpoints, each
    segment valued at its right end (float64)."""
    a, ca = quantile_steps(a, wa)
    b, cb = quantile_steps(b, wb)
    t = np.union1d(ca, cb)  # sorted, distinct
    lengths = np.diff(t, prepend=0.0)
    x, y = quantile_at(a, ca, t), quantile_at(b, cb, t)
    return float(np.sum(lengths * np.abs(x.astype(np.float64) - y) ** p))


def projected(X, Y, P, wx, wy, dtype):
    """Whether Y is None (then X), and the projections of the sets of X and
    Y along the rows of P computed in `dtype` (as float64), with their
    weights (None: 1 a point)."""
    symmetric = Y is None
    Y = X if Y is None else Y
    wx = [np.ones(len(a)) for a in X] if wx is None else wx
    wy = [np.ones(len(b)) for b in Y] if wy is None else wy
    Pt = P.T.astype(dtype)
    proj_x = [(np.asarray(a, dtype) @ Pt).astype(np.float64) for a in X]
    proj_y = [(np.asarray(b, dtype) @ Pt).astype(np.float64) for b in Y]
    return symmetric, proj_x, wx, proj_y, wy


def sw_reference(X, Y, P, p, wx=None, wy=None, dtype=np.float64):
    """SW_p between every pair of sets (lists of arrays), the projections
    computed in `dtype` (the package projects float32 points in float32);
    Y None: X, each unordered pair computed once."""
    symmetric, proj_x, wx, proj_y, wy = projected(X, Y, P, wx, wy, dtype)
    D = np.zeros((len(proj_x), len(proj_y)))
    for i, (a, u) in enumerate(zip(proj_x, wx, strict=True)):
        for j, (b, v) in enumerate(zip(proj_y, wy, strict=True)):
            if symmetric and j <= i:
                continue
            costs = [wpp_1d(a[:, k], u, b[:, k], v, p) for k in range(len(P))]
            D[i, j] = np.mean(costs) ** (1 / p)
    return D + D.T if symmetric else D


def cell_edges(Q):
    """The cells of the features: k = 0 .. Q at equal steps of the angle,
    sin(pi k / (2 Q))**2 (narrower in the tails)."""
    edges = np.sin(np.pi * np.arange(Q + 1) / (2 * Q)) ** 2
    edges[0], edges[-1] = 0.0, 1.0
    return edges


def cell_means_reference(a, w, Q):
    """The mean of the step quantile function of the weighted sample over
    each cell [edges[k], edges[k + 1]] (`cell_edges`), times the square
    root of the cell's width: the integral over the pieces between the
    breakpoints and the cell bounds."""
    a, c = quantile_steps(a, w)
    edges = cell_edges(Q)
    out = np.zeros(Q)
    for k in range(Q):
        lo, hi = edges[k], edges[k + 1]
        cuts = np.concatenate([[lo], c[(c > lo) & (c < hi)], [hi]])
        for t0, t1 in itertools.pairwise(cuts):
            out[k] += (t1 - t0) * quantile_at(a, c, t1)
    return out / np.sqrt(np.diff(edges))


def random_sets(rng, n, d, dtype, low=1, high=9, shift=0.0):
    sizes = rng.integers(low, high + 1, size=n)
    return [(rng.normal(size=(m, d)) * rng.uniform(0.5, 2) + shift
             + rng.normal(size=d)).astype(dtype) for m in sizes]


def random_weights(rng, sets):
    return [rng.uniform(0.0, 3.0, size=len(s)) + (np.arange(len(s)) == 0)
            for s in sets]


def tolerance(dtype):
    return 1e-12 if dtype == np.float64 else 2e-5


# -- the distances ------------------------------------------------------------


_REFERENCES = {}


@pytest.mark.parametrize("d", [1, 3, 7])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("L", [13, 37])
def test_against_reference(simd_path, d, dtype, weighted, L):
    # every code path of the merges (`simd_path`); L = 13 and 37: whole
    # vectors, a single vector and a scalar tail on every width
    rng = np.random.default_rng(d + 10 * weighted + L)
    X = random_sets(rng, 7, d, dtype)
    Y = random_sets(rng, 4, d, dtype, shift=0.5)
    Y.append(X[2].copy())  # equal sizes, a zero distance
    wx = random_weights(rng, X) if weighted else None
    wy = random_weights(rng, Y) if weighted else None
    if weighted:
        wy[-1] = wx[2].copy()
    bx = Bags.from_list(X, weights=wx) if weighted else X
    by = Bags.from_list(Y, weights=wy) if weighted else Y
    P = unit_rows(rng, L, d)
    # (p = 1.5 takes the scalar pow of every path: one L is enough)
    for p in (1, 2, 1.5) if L == 13 else (1, 2):
        # the references of this data, the same on every code path: once
        key = (d, np.dtype(dtype).str, weighted, L, p)
        if key not in _REFERENCES:
            _REFERENCES[key] = (sw_reference(X, None, P, p, wx, wx, dtype),
                                sw_reference(X, Y, P, p, wx, wy, dtype))
        R, RXY = _REFERENCES[key]
        for workers in (1, 2):
            D = sliced_wasserstein(bx, projections=P, p=p, workers=workers)
            assert D.dtype == dtype
            assert_allclose(D, R, rtol=tolerance(dtype),
                            atol=tolerance(dtype) * R.max())
            assert_array_equal(np.diag(D), 0)
            assert_array_equal(D, D.T)
            D = sliced_wasserstein(bx, by, projections=P, p=p, workers=workers)
            assert D.shape == (7, 5)
            assert_allclose(D, RXY, rtol=tolerance(dtype),
                            atol=tolerance(dtype) * RXY.max())
        assert D[2, -1] == 0


def wpp_mpmath(a, wa, b, wb, p):
    """W_p^p between two weighted 1-D samples in extended precision: the
    exact cumulative weights (mpmath, 60 digits), and the integral of |F^-1
    - G^-1|^p over the segments between the union of the breakpoints, each
    segment valued at its right end (the first value whose cumulative
    weight reaches it)."""
    mpmath = pytest.importorskip("mpmath")
    mpf = mpmath.mpf

    def steps(values, weights):
        order = np.argsort(values, kind="stable")
        w = [mpf(float(x)) for x in weights[order]]
        total = mpmath.fsum(w)
        cum = [mpmath.fsum(w[:k + 1]) / total for k in range(len(w))]
        return [mpf(float(x)) for x in values[order]], cum

    def quantile(values, cum, t):
        return values[next(k for k, c in enumerate(cum) if c >= t)]

    (va, ca), (vb, cb) = steps(a, wa), steps(b, wb)
    total, before = mpf(0), mpf(0)
    for t in sorted(set(ca) | set(cb)):
        total += (t - before) * abs(quantile(va, ca, t) - quantile(vb, cb, t)) ** p
        before = t
    return total


def sw_mpmath(X, Y, P, p, wx=None, wy=None, dtype=np.float64):
    """`sw_reference` with each direction's W_p^p, their mean and its 1/p
    power in extended precision (`wpp_mpmath`): the projections as the
    package computes them (in `dtype`), the rest exact."""
    mpmath = pytest.importorskip("mpmath")
    symmetric, proj_x, wx, proj_y, wy = projected(X, Y, P, wx, wy, dtype)
    D = np.zeros((len(proj_x), len(proj_y)))
    with mpmath.workdps(60):
        q = mpmath.mpf(p)
        for i, (a, u) in enumerate(zip(proj_x, wx, strict=True)):
            for j, (b, v) in enumerate(zip(proj_y, wy, strict=True)):
                if symmetric and j <= i:
                    continue
                mean = mpmath.fsum(wpp_mpmath(a[:, k], u, b[:, k], v, q)
                                   for k in range(len(P))) / len(P)
                D[i, j] = float(mean ** (1 / q))
    return D + D.T if symmetric else D


# p = 1 and 2 (the fast path) and any other: tiny (the geometric mean of
# the differences as p -> 0), large (their largest as p -> infinity)
ANY_P = (1e-17, 1e-9, 1e-3, 0.3, 1.0, 1.5, 2.0, 3.0, 37.5, 600.0, 1100.0, 1e4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_any_p_against_extended_precision(simd_path, dtype, weighted):
    # SW_p for p from 1e-17 to 1e4 within 1e-12 of the reference (float64):
    # no power underflows to 0 at large p, nor loses its digits to 1 at
    # tiny p. Sets with points in common (differences of 0 on part of the
    # merge) and an equal pair among them.
    rng = np.random.default_rng(31 + weighted)
    X = random_sets(rng, 6, 3, dtype, low=1, high=7)
    Y = random_sets(rng, 3, 3, dtype, low=2, high=7, shift=0.5)
    Y.append(X[1].copy())
    Y.append(np.concatenate([X[2], X[2][:1] + 1]).astype(dtype))  # shares points
    wx = random_weights(rng, X) if weighted else None
    wy = random_weights(rng, Y) if weighted else None
    if weighted:
        wy[-2] = wx[1].copy()
    bx = Bags.from_list(X, weights=wx) if weighted else X
    by = Bags.from_list(Y, weights=wy) if weighted else Y
    P = unit_rows(rng, 5, 3)
    P = _check_projections(P, 3)  # the directions as the package uses them
    # (float32 results: the reference rounded to float32, where the
    # smallest underflow: 1e-179 at p = 1e-3 for the pair with points in
    # common)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    atol = 0.0 if dtype == np.float64 else float(np.finfo(dtype).tiny)
    for p in ANY_P:
        key = ("any", np.dtype(dtype).str, weighted, p)
        if key not in _REFERENCES:
            _REFERENCES[key] = (sw_mpmath(X, None, P, p, wx, wx, dtype),
                                sw_mpmath(X, Y, P, p, wx, wy, dtype))
        R, RXY = (r.astype(dtype) for r in _REFERENCES[key])
        for workers in (1, 2):
            D = sliced_wasserstein(bx, projections=P, p=p, workers=workers)
            assert D.dtype == dtype
            assert_allclose(D, R, rtol=rtol, atol=atol, err_msg=f"p={p}")
            assert_array_equal(np.diag(D), 0)
            assert_array_equal(D, D.T)
            D = sliced_wasserstein(bx, by, projections=P, p=p, workers=workers)
            assert_allclose(D, RXY, rtol=rtol, atol=atol, err_msg=f"p={p}")
            assert D[1, -2] == 0
        # directions a block at a time (a budget of a few hundred bytes)
        with km.config_context(working_memory=2**-12):
            D = sliced_wasserstein(bx, by, projections=P, p=p)
        assert_allclose(D, RXY, rtol=rtol, atol=atol, err_msg=f"p={p}")


def test_any_p_the_issue_example():
    # [[0], [1]] against [[0.5], [3]] along [1]: differences 0.5 and 2, each
    # on half the levels; SW_p = (0.5^p / 2 + 2^p / 2)^(1/p), which tends
    # to the geometric mean 1 as p -> 0 and to 2 as p -> infinity (it was
    # 0 at p = 1100 and 4 at p = 1e-17)
    mpmath = pytest.importorskip("mpmath")
    sets = [np.array([[0.0], [1.0]]), np.array([[0.5], [3.0]])]
    with mpmath.workdps(60):
        for p in (1e-300, 1e-17, 1e-16, 1e-3, 0.5, 3.0, 1000.0, 1100.0, 1e4,
                  1e300):
            q = mpmath.mpf(p)
            exact = float((mpmath.mpf(0.5) ** q / 2 + mpmath.mpf(2) ** q / 2)
                          ** (1 / q))
            D = sliced_wasserstein(sets, projections=[[1.0]], p=p)
            assert_allclose(D[0, 1], exact, rtol=1e-14, err_msg=f"p={p}")
    # half the levels at difference 0: SW_p = 2 * 0.5^(1/p), below 2^-1000
    # at p = 1e-3 (the mean of t^p is 1/2: its own logarithm), 0 at 1e-17
    sets = [np.array([[0.0], [1.0]]), np.array([[0.0], [3.0]])]
    for p in (1e-17, 1e-3, 0.01, 0.7, 5.0, 1e4):
        D = sliced_wasserstein(sets, projections=[[1.0]], p=p)
        assert_allclose(D[0, 1], 2 * 0.5 ** (1 / p), rtol=1e-13, err_msg=f"p={p}")
    # three quarters at 0: the mean of t^p below 1/2
    sets = [np.array([[0.0], [0.0], [0.0], [1.0]]),
            np.array([[0.0], [0.0], [0.0], [3.0]])]
    for p in (1e-3, 0.01, 0.5):
        D = sliced_wasserstein(sets, projections=[[1.0]], p=p)
        assert_allclose(D[0, 1], 2 * 0.25 ** (1 / p), rtol=1e-13, err_msg=f"p={p}")


def test_any_p_large_on_random_sets():
    # random 3-D sets: at p = 600 some pairs were 0; SW_p grows with p
    # towards the largest difference of the projections
    rng = np.random.default_rng(33)
    X = random_sets(rng, 8, 3, np.float64, low=5, high=20)
    P = unit_rows(rng, 20, 3)
    off = ~np.eye(8, dtype=bool)
    previous = None
    for p in (2.0, 10.0, 600.0, 1e4, 1e8):
        D = sliced_wasserstein(X, projections=P, p=p)
        assert np.all(D[off] > 0)
        if previous is not None:
            assert np.all(D[off] >= previous[off] * (1 - 1e-13))
        previous = D


def test_mixed_weighted_and_unweighted():
    # an unweighted side weighs its points the same
    rng = np.random.default_rng(3)
    X = random_sets(rng, 5, 2, np.float64)
    Y = random_sets(rng, 4, 2, np.float64)
    wx = random_weights(rng, X)
    P = unit_rows(rng, 9, 2)
    D = sliced_wasserstein(Bags.from_list(X, weights=wx), Y, projections=P)
    assert_allclose(D, sw_reference(X, Y, P, 2, wx, None), rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("p", [1, 2])
def test_against_pot(weighted, p):
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(p)
    X = random_sets(rng, 6, 4, np.float64, low=3, high=30)
    w = random_weights(rng, X) if weighted else [np.ones(len(a)) for a in X]
    P = unit_rows(rng, 50, 4)
    D = sliced_wasserstein(Bags.from_list(X, weights=w) if weighted else X,
                           projections=P, p=p)
    R = np.array([[ot.sliced_wasserstein_distance(
        a, b, u / u.sum(), v / v.sum(), projections=P.T, p=p)
        for b, v in zip(X, w, strict=True)] for a, u in zip(X, w, strict=True)])
    assert_allclose(D, R, rtol=1e-12, atol=1e-14 * R.max())


def test_zero_weights_are_absent_points():
    # Points of weight 0 (first, last, several in a row) change nothing.
    rng = np.random.default_rng(16)
    X = random_sets(rng, 6, 2, np.float64, low=4, high=12)
    w = [rng.uniform(0.5, 2.0, size=len(a)) for a in X]
    for u in w:
        u[rng.random(len(u)) < 0.4] = 0.0
        u[rng.integers(len(u))] = 1.0  # a positive total
    kept = [a[u > 0] for a, u in zip(X, w, strict=True)]
    P = unit_rows(rng, 11, 2)
    # (a point of weight 0 far away does not set the largest difference of
    # the other p: its segment has length 0)
    X[0][np.flatnonzero(w[0] == 0)[:1]] = 16.0
    for p in (1, 2, 3, 1e4, 1e-17):
        D = sliced_wasserstein(Bags.from_list(X, weights=w), projections=P,
                               p=p)
        R = sliced_wasserstein(Bags.from_list(kept, weights=[
            u[u > 0] for u in w]), projections=P, p=p)
        assert_allclose(D, R, rtol=1e-12, atol=1e-14 * R.max())
        if p in (1, 2, 3):  # (float64 powers: `test_any_p_...` for the others)
            assert_allclose(D, sw_reference(X, None, P, p, w, w), rtol=1e-12,
                            atol=1e-14 * R.max())


def test_negligible_weights():
    # Weights below the rounding of the others: the cumulative weights
    # reach 1 before the last point (the merge must not step past a set's
    # end), and the distances are those of the sets without those points.
    rng = np.random.default_rng(17)
    X = random_sets(rng, 5, 2, np.float64, low=3, high=10)
    w = [rng.uniform(0.5, 2.0, size=len(a)) for a in X]
    for u in w:
        u[rng.random(len(u)) < 0.5] = 1e-30
        u[rng.integers(len(u))] = 1.0
    kept = [a[u > 1e-20] for a, u in zip(X, w, strict=True)]
    P = unit_rows(rng, 9, 2)
    for p in (1, 2, 1e4, 1e-17):
        D = sliced_wasserstein(Bags.from_list(X, weights=w), projections=P, p=p)
        R = sliced_wasserstein(Bags.from_list(kept, weights=[
            u[u > 1e-20] for u in w]), projections=P, p=p)
        assert_allclose(D, R, rtol=1e-12, atol=1e-14 * R.max())


def test_integer_weights_are_repeated_points():
    rng = np.random.default_rng(4)
    X = random_sets(rng, 6, 3, np.float64)
    counts = [rng.integers(1, 4, size=len(a)) for a in X]
    repeated = [np.repeat(a, c, axis=0) for a, c in zip(X, counts, strict=True)]
    P = unit_rows(rng, 20, 3)
    for p in (1, 2, 3):
        D = sliced_wasserstein(Bags.from_list(X, weights=counts), projections=P,
                               p=p)
        R = sliced_wasserstein(repeated, projections=P, p=p)
        assert_allclose(D, R, rtol=1e-12, atol=1e-14 * R.max())


def test_symmetric_and_y_given_agree():
    rng = np.random.default_rng(5)
    X = random_sets(rng, 9, 3, np.float64)
    D = sliced_wasserstein(X, rng=0)
    assert_allclose(sliced_wasserstein(X, X, rng=0), D, rtol=1e-14)
    # the same seed gives the same directions; another, others
    assert not np.allclose(sliced_wasserstein(X, rng=1), D)


def test_workers_and_blocks_do_not_change_the_result(simd_path):
    # on each code path: the same bits whatever the threads
    rng = np.random.default_rng(6)
    X = random_sets(rng, 40, 3, np.float64, low=20, high=60)
    w = random_weights(rng, X)
    for sets in (X, Bags.from_list(X, weights=w)):
        D1 = sliced_wasserstein(sets, rng=0, workers=1)
        assert_array_equal(sliced_wasserstein(sets, rng=0, workers=2), D1)
        # directions a few at a time (a budget of a few kB)
        with km.config_context(working_memory=2**-8):
            D = sliced_wasserstein(sets, rng=0, workers=2)
        assert_allclose(D, D1, rtol=1e-13)


def test_whole_matrix_passes_in_blocks(monkeypatch):
    # The passes over the whole result (its mirror, the mean, the power
    # 1/p and the scale, the quantile features' scale) and the projections
    # go in blocks of rows, between which Ctrl-C stops (test_interrupt.py):
    # tiny blocks here give the same bits for the passes, the projections
    # to rounding (BLAS rounds a block's rows its own way).
    from kernelmaps._engine import layout
    from kernelmaps._engine import sliced as engine

    rng = np.random.default_rng(26)
    upper = np.triu(rng.random((37, 37)), 1)
    want = upper + upper.T
    X = random_sets(rng, 23, 3, np.float64, low=2, high=12)
    w = random_weights(rng, X)
    results = {}
    for blocks in (False, True):
        with monkeypatch.context() as mp:
            if blocks:
                mp.setattr(layout, "COPY_BLOCK_BYTES", 64)
                mp.setattr(engine, "_MEAN_BLOCK", 5)
            results[blocks] = [
                engine.mirror(upper.copy()),
                *(sliced_wasserstein(sets, rng=0, p=p) for p in (1, 2, 0.5)
                  for sets in (X, Bags.from_list(X, weights=w))),
                SlicedWassersteinFeatures(4, 3, rng=0).fit_transform(X)]
    assert_array_equal(results[False][0], want)
    for a, b in zip(results[False], results[True], strict=True):
        assert_array_equal(a, b)
    with monkeypatch.context() as mp:
        mp.setattr(engine, "PROJECTION_WORK", 50.0)  # a few rows a block
        for sets, want in ((X, results[False][3]),  # (p = 2)
                           (Bags.from_list(X, weights=w), results[False][4])):
            assert_allclose(sliced_wasserstein(sets, rng=0), want, rtol=1e-13)


@pytest.mark.parametrize("scale", [1e-150, 1e150, 1e-300, 1e300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_extreme_scales(scale, dtype):
    if dtype == np.float32:
        scale = {1e-150: 1e-30, 1e150: 1e30, 1e-300: 1e-36, 1e300: 1e36}[scale]
    rng = np.random.default_rng(7)
    X = random_sets(rng, 6, 3, dtype)
    w = random_weights(rng, X)
    for sets, scaled in ((X, [a * dtype(scale) for a in X]),
                         (Bags.from_list(X, weights=w),
                          Bags.from_list([a * dtype(scale) for a in X],
                                         weights=w))):
        for p in (1, 2, 1e-3, 1e3):
            D = sliced_wasserstein(sets, rng=0, p=p, dtype=np.float64)
            S = sliced_wasserstein(scaled, rng=0, p=p, dtype=np.float64)
            assert_allclose(S / scale, D, rtol=1e-12 if dtype == np.float64
                            else 1e-5)
        K = sliced_wasserstein_kernel(sets, rng=0, dtype=np.float64)
        assert_allclose(sliced_wasserstein_kernel(scaled, rng=0,
                                                  dtype=np.float64), K,
                        rtol=1e-11 if dtype == np.float64 else 1e-4)
    swf = SlicedWassersteinFeatures(10, 8, rng=0).fit(X)
    scaled = [a * dtype(scale) for a in X]
    assert_allclose(swf.transform(scaled) / dtype(scale), swf.transform(X),
                    rtol=1e-12 if dtype == np.float64 else 1e-5,
                    atol=1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("edge", ["largest", "subnormal", "smallest"])
def test_float32_at_the_edges(edge):
    # float32 sets near the largest float32 (|x| >= 2**126) or subnormal:
    # every tool raised NumPy's "No loop matching ... ldexp" (the shared
    # power-of-two scaling, float64 to float32 beyond float32's exponents).
    # The results are those of the same points in float64 (float32
    # projections: 1e-5), rounded to float32 (subnormal results: to within
    # a few of the smallest float32).
    rng = np.random.default_rng(34)
    sizes = rng.integers(2, 9, size=6)
    if edge == "largest":  # up to 3e38 (the largest float32: 3.4e38)
        X = [np.clip(rng.normal(size=(m, 3)) * 1.5e38, -3e38, 3e38)
             for m in sizes]
    elif edge == "subnormal":  # below 1.2e-38 (about 1e-39 to 1e-40)
        X = [rng.normal(size=(m, 3)) * 2e-40 for m in sizes]
    else:  # multiples of the smallest, 1.4e-45
        X = [rng.integers(-6, 7, size=(m, 3)) * 2.0**-149 for m in sizes]
    X32 = [a.astype(np.float32) for a in X]
    X64 = [a.astype(np.float64) for a in X32]  # the same numbers
    w = [rng.uniform(0.5, 2.0, size=m) for m in sizes]
    tiny = 4 * 2.0**-149
    for A, B in ((X32, X64), (Bags.from_list(X32, weights=w),
                              Bags.from_list(X64, weights=w))):
        for p in (1, 2, 3):
            D = sliced_wasserstein(A, rng=0, p=p)
            assert D.dtype == np.float32
            R = sliced_wasserstein(B, rng=0, p=p)
            assert_allclose(D, R.astype(np.float32), rtol=1e-5, atol=tiny)
            assert np.all(D[~np.eye(6, dtype=bool)] > 0)
        K = sliced_wasserstein_kernel(A, rng=0)
        assert_allclose(K, sliced_wasserstein_kernel(B, rng=0), rtol=1e-4,
                        atol=1e-6)
        F = SlicedWassersteinFeatures(7, 4, rng=0).fit_transform(A)
        assert F.dtype == np.float32
        G = SlicedWassersteinFeatures(7, 4, rng=0).fit_transform(B)
        assert_allclose(F, G.astype(np.float32), rtol=1e-5,
                        atol=tiny + 1e-5 * np.abs(G).max())


def test_far_from_the_origin():
    # Translating every set alike changes nothing: the points are centred
    # first, so sets near 1e8 keep their digits (multiples of 1/64: exact
    # at 1e8 too).
    rng = np.random.default_rng(15)
    X = [np.round(a * 64) / 64 for a in random_sets(rng, 6, 3, np.float64)]
    D = sliced_wasserstein(X, rng=0)
    shifted = [a + 1e8 for a in X]
    assert_allclose(sliced_wasserstein(shifted, rng=0), D, rtol=1e-13,
                    atol=1e-13 * D.max())


def test_projections_are_normalised_and_draws():
    rng = np.random.default_rng(8)
    X = random_sets(rng, 4, 3, np.float64)
    P = unit_rows(rng, 5, 3)
    assert_allclose(sliced_wasserstein(X, projections=7.0 * P),
                    sliced_wasserstein(X, projections=P), rtol=1e-14)
    # a direction along which the sets are translated by 5
    A = np.array([[0.0, 0.0], [1.0, 0.0]])
    D = sliced_wasserstein([A, A + np.array([3.0, 4.0])],
                           projections=[[3.0, 4.0]])
    assert_allclose(D[0, 1], 5.0, rtol=1e-15)
    for draw in ("iid", "orthogonal", "qmc"):
        swf = SlicedWassersteinFeatures(7, 3, draw=draw, rng=0).fit(X)
        Pd = swf.projections_
        assert Pd.shape == (7, 3)
        assert_allclose(np.linalg.norm(Pd, axis=1), 1.0, rtol=1e-14)
        if draw == "orthogonal":  # blocks of d orthonormal directions
            assert_allclose(Pd[:3] @ Pd[:3].T, np.eye(3), atol=1e-14)
            assert_allclose(Pd[3:6] @ Pd[3:6].T, np.eye(3), atol=1e-14)


def test_directions_are_uniform_on_the_sphere():
    # The mean of theta theta^T over uniform directions is I / d: checked
    # at 20,000 directions to about 4 standard errors.
    for draw in ("iid", "orthogonal", "qmc"):
        swf = SlicedWassersteinFeatures(20000, 1, draw=draw, rng=1)
        P = swf.fit(np.zeros((1, 2, 3))).projections_
        assert_allclose(P.T @ P / len(P), np.eye(3) / 3, atol=0.01)
        assert np.abs(P.mean(axis=0)).max() < 0.025


# -- the kernel ---------------------------------------------------------------


def test_kernel_gamma_rule():
    rng = np.random.default_rng(9)
    X = random_sets(rng, 8, 2, np.float64)
    Y = random_sets(rng, 5, 2, np.float64, shift=1.0)
    P = unit_rows(rng, 30, 2)
    S = sliced_wasserstein(X, projections=P) ** 2
    off = S[~np.eye(len(S), dtype=bool)]
    K = sliced_wasserstein_kernel(X, projections=P)
    assert_allclose(K, np.exp(-S / np.median(off)), rtol=1e-12)
    # Y given: the median of the distances between the sets of Y
    SY = sliced_wasserstein(Y, projections=P) ** 2
    gamma = 1 / np.median(SY[~np.eye(len(SY), dtype=bool)])
    SXY = sliced_wasserstein(X, Y, projections=P) ** 2
    assert_allclose(sliced_wasserstein_kernel(X, Y, projections=P),
                    np.exp(-gamma * SXY), rtol=1e-12)
    assert_allclose(sliced_wasserstein_kernel(X, Y, projections=P, gamma=0.3),
                    np.exp(-0.3 * SXY), rtol=1e-12)
    # positive definite (Kolouri et al. 2016)
    assert np.linalg.eigvalsh(K).min() > -1e-12


# -- the features -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_features_against_reference(dtype, weighted):
    rng = np.random.default_rng(11)
    X = random_sets(rng, 7, 3, dtype, low=1, high=12)
    w = random_weights(rng, X) if weighted else [np.ones(len(a)) for a in X]
    sets = Bags.from_list(X, weights=w) if weighted else X
    L, Q = 6, 5
    for workers in (1, 2):
        swf = SlicedWassersteinFeatures(L, Q, rng=2).fit(sets)
        F = swf.transform(sets, workers=workers)
        assert F.dtype == dtype and F.shape == (7, L * Q)
        P = swf.projections_
        R = np.stack([np.concatenate([
            cell_means_reference((a @ P.T.astype(dtype)).astype(np.float64)[:, k],
                                 u, Q) for k in range(L)]) for a, u in
            zip(X, w, strict=True)]) / math.sqrt(L)
        assert_allclose(F, R, rtol=tolerance(dtype),
                        atol=tolerance(dtype) * np.abs(R).max())


def _feature_errors(sets, P, Q):
    """The squared distances of the features (Q cells) less SW_2^2, over
    the pairs, and the proven bound: the mean over the directions of (R_A
    + R_B)^2 / 4 times the widest cell, sin(pi / (2 Q)), R the spread of a
    set's projections."""
    F = SlicedWassersteinFeatures(projections=P, n_quantiles=Q).fit(
        sets).transform(sets)
    G = cdist(F, F, "sqeuclidean")  # (differences, not norms: no cancellation)
    SW2 = sliced_wasserstein(sets, projections=P) ** 2
    spreads = np.stack([np.ptp(b @ P.T, axis=0) for b in sets])
    widest = np.diff(cell_edges(Q)).max()
    assert widest <= math.sin(math.pi / (2 * Q)) * (1 + 1e-12)
    bound = ((spreads[:, None, :] + spreads[None, :, :]) ** 2).mean(-1) / 4 * widest
    iu = np.triu_indices(len(sets), 1)
    return (G - SW2)[iu], SW2[iu], bound[iu]


def test_feature_error_rate():
    # Weighted digit images: the error is never positive (Bessel), within
    # the proven bound, and falls as 1 / Q (it halves when Q doubles, to
    # within 15 %: the bound's rate, seen on every pair and on the sum).
    pytest.importorskip("sklearn")
    from kernelmaps._data import digit_clouds

    sets, _ = digit_clouds(25, seed=3)
    P = SlicedWassersteinFeatures(50, rng=0).fit(sets).projections_
    previous = None
    for Q in (25, 50, 100, 200):
        E, SW2, bound = _feature_errors(sets, P, Q)
        assert E.max() <= 1e-12 * SW2.max()
        assert np.all(bound >= -E)
        total = -E.sum()
        if previous is not None:
            assert 1.7 < previous / total < 2.3
        previous = total
    # The target: 1e-3 relative (Frobenius, pairs) at Q = 100
    E, SW2, _ = _feature_errors(sets, P, 100)
    assert np.linalg.norm(E) / np.linalg.norm(SW2) < 1e-3


def test_feature_error_on_gaussian_sets():
    # 120 Gaussian sets of 50 to 150 points, d = 16, random means: the
    # median relative error of the squared distances at Q = 100 is below
    # 1e-3 (8.6e-4; cells of equal width gave 1.3e-3), never positive,
    # within the bound
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(m, 16)) + rng.normal(size=16)
            for m in rng.integers(50, 151, size=120)]
    P = SlicedWassersteinFeatures(100, rng=0).fit(sets).projections_
    E, SW2, bound = _feature_errors(sets, P, 100)
    assert np.median(np.abs(E) / SW2) < 1e-3
    assert E.max() <= 1e-12 * SW2.max()
    assert np.all(bound >= -E)


def test_features_pickle_and_params():
    rng = np.random.default_rng(12)
    X = random_sets(rng, 5, 4, np.float64)
    swf = SlicedWassersteinFeatures(300, 20, rng=0).fit(X)
    blob = pickle.dumps(swf)
    assert len(blob) < 3000  # the draw's recipe, not its 300 x 4 directions
    again = pickle.loads(blob)
    assert_array_equal(again.projections_, swf.projections_)
    assert_array_equal(again.transform(X), swf.transform(X))
    assert again.get_params() == swf.get_params()
    assert swf.n_features_in_ == 4 and swf.n_features_out_ == 6000
    P = unit_rows(rng, 3, 4)
    given = SlicedWassersteinFeatures(projections=P, n_quantiles=2).fit(X)
    assert_allclose(given.projections_, P, rtol=1e-15)
    assert given.n_features_out_ == 6
    assert_array_equal(pickle.loads(pickle.dumps(given)).projections_,
                       given.projections_)
    with pytest.raises(ValueError, match="expecting 4 features"):
        swf.transform([np.zeros((3, 2))])


# -- bad input ----------------------------------------------------------------


@pytest.mark.parametrize("function", [sliced_wasserstein,
                                      sliced_wasserstein_kernel])
def test_bad_input(function):
    X = [np.zeros((3, 2)), np.ones((2, 2))]
    for projections, match in (
        (np.ones((3, 3)), "projections must have shape"),
        (np.ones(2), "projections must have shape"),
        (np.zeros((0, 2)), "projections must have shape"),
        ([[1.0, np.nan]], "projections contains NaN"),
        ([[1.0, 0.0], [0.0, 0.0]], r"projections\[1\] is zero"),
    ):
        with pytest.raises(ValueError, match=match):
            function(X, projections=projections)
    with pytest.raises(TypeError, match="projections"):
        function(X, projections=[["a", "b"]])
    for n in (0, -1, 10**20):  # (10**20: more memory than any machine)
        with pytest.raises(ValueError, match="n_projections"):
            function(X, n_projections=n)
    for n in (True, 1.5, None, "7"):
        with pytest.raises(TypeError, match="n_projections must be an int"):
            function(X, n_projections=n)
    with pytest.raises(ValueError, match="draw"):
        function(X, draw="sobol")
    if function is sliced_wasserstein:
        for p in (0, -1, np.nan, np.inf):
            with pytest.raises(ValueError, match="p must"):
                function(X, p=p)
    else:
        with pytest.raises(ValueError, match="gamma"):
            function(X, gamma=0)


def test_sliced_directions_bad_input():
    # dim -1 gave NumPy's "negative dimensions are not allowed", 0 an empty
    # direction, 2.5 and True a width of 2 and 1
    from kernelmaps.sets import sliced_directions

    for dim in (-1, 0):
        with pytest.raises(ValueError, match="dim must be >= 1"):
            sliced_directions(dim, 3, None, "iid", 0)
    with pytest.raises(ValueError, match="dim must be >= 1"):
        sliced_directions(-1, 3, [[1.0, 0.0]], "iid", 0)
    for dim in (2.5, True, None, "3", [2]):
        with pytest.raises(TypeError, match="dim must be an int"):
            sliced_directions(dim, 3, None, "iid", 0)
    for n in (0, -1, 10**20):
        with pytest.raises(ValueError, match="n_projections"):
            sliced_directions(2, n, None, "iid", 0)
    for n in (True, 1.5, None):
        with pytest.raises(TypeError, match="n_projections must be an int"):
            sliced_directions(2, n, None, "iid", 0)
    P, record = sliced_directions(np.int64(3), 4, None, "qmc", 0)
    assert P.shape == (4, 3) and record is not None
    assert_allclose(np.linalg.norm(P, axis=1), 1.0, rtol=1e-15)
    P, record = sliced_directions(2, 4, [[3.0, 4.0]], "iid", None)
    assert_allclose(P, [[0.6, 0.8]], rtol=1e-15)
    assert record is None


def test_features_bad_input():
    X = [np.zeros((3, 2)), np.ones((2, 2))]
    for Q in (0, -2):
        with pytest.raises(ValueError, match="n_quantiles"):
            SlicedWassersteinFeatures(n_quantiles=Q).fit(X)
    with pytest.raises(ValueError, match="n_projections"):
        SlicedWassersteinFeatures(0).fit(X)
    with pytest.raises(ValueError, match="projections"):
        SlicedWassersteinFeatures(projections=np.ones((2, 3))).fit(X)
    with pytest.raises(ValueError, match="not fitted"):
        SlicedWassersteinFeatures().transform(X)


# -- the tools over objects ---------------------------------------------------


def test_set_kernel_and_nystroem_take_the_kernel():
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    rng = np.random.default_rng(13)
    train = random_sets(rng, 12, 2, np.float64, low=5, high=15)
    test = random_sets(rng, 4, 2, np.float64, low=5, high=15)
    sk = SetKernel("sliced_wasserstein", n_projections=30, rng=0)
    K = sk.fit_transform(train)
    P = sk.projections_
    assert P.shape == (30, 2)
    assert_allclose(K, sliced_wasserstein_kernel(train, projections=P),
                    rtol=1e-12)
    assert_allclose(sk.transform(test), sliced_wasserstein_kernel(
        test, train, gamma=sk.gamma_, projections=P), rtol=1e-12)
    # the same seed draws the same directions
    assert_array_equal(SetKernel("sliced_wasserstein", n_projections=30,
                                 rng=0).fit(train).projections_, P)
    # Nystroem with every set a landmark: the exact kernel; gamma None is
    # 1 / median SW_2^2 between the landmarks
    nys = km.NystroemMap(12, kernel="sliced_wasserstein",
                         kernel_params={"n_projections": 30}, rng=1)
    F = nys.fit_transform(train)
    P = nys.params_["projections"]
    assert P.shape == (30, 2)
    assert_allclose(F @ F.T, sliced_wasserstein_kernel(train, projections=P),
                    atol=1e-10)
    G = nys.transform(test) @ F.T
    assert_allclose(G, sliced_wasserstein_kernel(
        test, train, gamma=nys.params_["gamma"], projections=P), atol=1e-10)
    assert_allclose(km.NystroemMap(12, kernel="sliced_wasserstein", gamma=0.5,
                                   landmarks="kmeans++", rng=2).fit_transform(
                                       train).shape, (12, 12))


def test_mmd_test_fixes_the_directions_once(monkeypatch):
    from kernelmaps._two_sample import blocks, resampling

    rng = np.random.default_rng(14)
    A = [rng.normal(size=(20, 2)) for _ in range(20)]
    B = [rng.normal(size=(20, 2)) * 1.5 + 0.3 for _ in range(20)]
    res = km.mmd_test(A, B, kernel="sliced_wasserstein", n_resamples=199, rng=0)
    assert res.pvalue < 0.05
    # blocks of the kernel (ranges of 7 sets) use the same directions as the
    # whole matrix: the same p-value
    with monkeypatch.context() as mp:
        calls = []
        run_blocks = blocks.run_blocks

        def spy(*args, **kwargs):
            calls.append(1)
            return run_blocks(*args, **kwargs)

        mp.setattr(resampling, "_in_memory_bytes", lambda *args: math.inf)
        mp.setattr(resampling, "MIN_BLOCK", 7)
        mp.setattr(resampling, "RESAMPLE_TASK_WORK", 1.0)
        mp.setattr(blocks, "run_blocks", spy)
        blocked = km.mmd_test(A, B, kernel="sliced_wasserstein",
                              n_resamples=199, rng=0)
    assert calls
    assert blocked.pvalue == res.pvalue
    assert_allclose(blocked.statistic, res.statistic, rtol=1e-12)
    # two samples of one distribution: no rejection at this seed
    C = [rng.normal(size=(20, 2)) for _ in range(20)]
    assert km.mmd_test(A, C, kernel="sliced_wasserstein", n_resamples=199,
                       rng=0).pvalue > 0.05


# -- weighted sets in the tools -------------------------------------------------


def integer_weighted(rng, n_sets, d):
    """Weighted sets with integer weights (some 0) and the same sets with
    each point repeated its weight times."""
    X = random_sets(rng, n_sets, d, np.float64, low=2, high=9)
    counts = [rng.integers(0, 4, len(a)).astype(np.float64) for a in X]
    for c in counts:
        c[0] = 1.0  # a positive total
    repeated = [np.repeat(a, c.astype(np.int64), axis=0)
                for a, c in zip(X, counts, strict=True)]
    return Bags.from_list(X, weights=counts), Bags.from_list(repeated)


def test_nystroem_weighted_is_repeated_points():
    rng = np.random.default_rng(21)
    W, R = integer_weighted(rng, 30, 3)
    landmarks = np.array([1, 4, 7, 12, 20, 28])
    for gamma in (0.4, None):  # None: 1 / median SW_2^2 of the landmarks
        a = km.NystroemMap(6, kernel="sliced_wasserstein", gamma=gamma,
                           landmarks=landmarks, rng=0).fit(W)
        b = km.NystroemMap(6, kernel="sliced_wasserstein", gamma=gamma,
                           landmarks=landmarks, rng=0).fit(R)
        assert a.components_.weights is not None
        assert_allclose(a.params_["gamma"], b.params_["gamma"], rtol=1e-12)
        assert_allclose(a.transform(W), b.transform(R), rtol=0, atol=1e-12)
        assert_allclose(a.transform(W[:3]), b.transform(R[:3]), rtol=0,
                        atol=1e-12)
    # k-means++ landmarks on the weighted quantile features: the same
    # landmarks as on the repeated points
    a = km.NystroemMap(6, kernel="sliced_wasserstein", gamma=0.4,
                       landmarks="kmeans++", rng=3).fit(W)
    b = km.NystroemMap(6, kernel="sliced_wasserstein", gamma=0.4,
                       landmarks="kmeans++", rng=3).fit(R)
    assert_allclose(a.transform(W), b.transform(R), rtol=0, atol=1e-12)


def test_set_kernel_weighted_is_repeated_points():
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    rng = np.random.default_rng(22)
    W, R = integer_weighted(rng, 12, 2)
    for gamma in (0.5, None):
        a = SetKernel("sliced_wasserstein", gamma=gamma, n_projections=30,
                      rng=0)
        b = SetKernel("sliced_wasserstein", gamma=gamma, n_projections=30,
                      rng=0)
        assert_allclose(a.fit_transform(W), b.fit_transform(R), rtol=0,
                        atol=1e-12)
        assert_allclose(a.gamma_, b.gamma_, rtol=1e-12)
        assert_allclose(a.transform(W[:5]), b.transform(R[:5]), rtol=0,
                        atol=1e-12)
    # the kernel of the weighted sets themselves
    assert_allclose(a.transform(W[:5]), sliced_wasserstein_kernel(
        W[:5], W, gamma=a.gamma_, projections=a.projections_), rtol=1e-12)


def test_mmd_test_weighted_is_repeated_points():
    rng = np.random.default_rng(23)
    WX, RX = integer_weighted(rng, 14, 2)
    WY, RY = integer_weighted(rng, 11, 2)
    for gamma in (1.0, None):
        a = km.mmd_test(WX, WY, kernel="sliced_wasserstein", gamma=gamma,
                        n_resamples=39, rng=0)
        b = km.mmd_test(RX, RY, kernel="sliced_wasserstein", gamma=gamma,
                        n_resamples=39, rng=0)
        assert_allclose(a.statistic, b.statistic, rtol=1e-12, atol=1e-12)
        assert a.pvalue == b.pvalue


def test_mmd_test_weighted_beside_lazy_sets_refused():
    # the lazy blocks hold points and offsets only: weighted sets there (a
    # weighted Bags of Dask points, or one in memory beside lazy sets) are
    # a TypeError naming them, not their weights dropped
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(24)
    X = Bags.from_list(random_sets(rng, 8, 2, np.float64, low=3))
    Y = Bags.from_list(random_sets(rng, 6, 2, np.float64, low=3))
    lazy = Bags(da.from_array(X.points, chunks=(10, 2)), X.offsets)
    W = X.with_weights(rng.uniform(0.5, 2.0, X.n_points))
    for kernel in ("sliced_wasserstein", "mean_map"):
        with pytest.raises(TypeError, match="X is a Bags of lazy Dask points"):
            km.mmd_test(lazy.with_weights(W.weights), Y, kernel=kernel,
                        n_resamples=19, rng=0)
        with pytest.raises(TypeError, match="Y is a weighted Bags"):
            km.mmd_test(lazy, W, kernel=kernel, n_resamples=19, rng=0)


def test_lazy_sets():
    # A Bags of Dask points: a lazy matrix, one task per pair of blocks of
    # sets, equal to the call in memory (each block centred and scaled on
    # its own: up to rounding), with the same directions.
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(25)
    X = Bags.from_list(random_sets(rng, 9, 3, np.float64, low=2, high=12))
    Y = Bags.from_list(random_sets(rng, 5, 3, np.float64, low=2, high=12,
                                   shift=100.0))
    lazy_x = Bags(da.from_array(X.points, chunks=(20, 3)), X.offsets)
    lazy_y = Bags(da.from_array(Y.points, chunks=(15, 3)), Y.offsets)
    for p in (1, 2):
        for A, B, a, b in [(X, None, lazy_x, None), (X, Y, lazy_x, lazy_y),
                           (X, Y, X, lazy_y)]:
            R = sliced_wasserstein(A, B, p=p, rng=3)
            D = sliced_wasserstein(a, b, p=p, rng=3)
            assert isinstance(D, da.Array) and D.shape == R.shape
            assert_allclose(D.compute(), R, rtol=1e-12, atol=1e-13 * R.max())
    K = sliced_wasserstein_kernel(lazy_x, lazy_y, gamma=0.01, rng=3)
    assert isinstance(K, da.Array)
    assert_allclose(K.compute(), sliced_wasserstein_kernel(X, Y, gamma=0.01, rng=3),
                    rtol=1e-12, atol=1e-300)
    K = sliced_wasserstein_kernel(lazy_x, gamma=0.5, rng=3).compute()
    assert_array_equal(np.diag(K), 1.0)
    assert_array_equal(K, K.T)
    with pytest.raises(ValueError, match="gamma=None needs the distances"):
        sliced_wasserstein_kernel(lazy_x, rng=3)
    # the values are checked in the tasks, with the in-memory errors
    bad = X.points.copy()
    bad[4, 1] = np.nan
    D = sliced_wasserstein(Bags(da.from_array(bad, chunks=(20, 3)), X.offsets))
    with pytest.raises(ValueError, match="NaN"):
        D.compute()
    # weighted lazy sets are refused, never their weights dropped
    with pytest.raises(TypeError, match="lazy Dask points"):
        sliced_wasserstein(lazy_x.with_weights(np.ones(X.n_points)))
