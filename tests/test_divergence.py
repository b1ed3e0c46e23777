"""kNN Renyi divergences and divergence kernels against slow NumPy
references written here (brute-force distances, full sorts)."""

import contextlib
import functools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import gammaln

import kernelmaps as km
from kernelmaps import Bags, DegenerateWarning, divergence_kernel, renyi_divergence
from kernelmaps._engine import knn
from kernelmaps.sets import renyi_divergence_both

from ._helpers import random_sets, sets


@pytest.fixture(params=["blocks", "kdtree"])
def method(request, monkeypatch):
    """Run a test with each neighbour search, whatever the data's shape."""
    monkeypatch.setattr(knn, "choose_method", lambda X, Y: request.param)
    return request.param


def ref_renyi(X, Y, alpha, k, min_dist):
    """D[i, j] straight from the formula of Poczos et al.: sorted distances,
    the mean of the ratios in plain arithmetic, I floored at epsilon."""
    symmetric = Y is None
    Y = X if symmetric else Y
    D = np.empty((len(X), len(Y)))
    for i, a in enumerate(X):
        a = np.asarray(a, dtype=np.float64)
        n, d = a.shape
        within = np.sqrt(((a[:, None] - a[None]) ** 2).sum(-1))
        np.fill_diagonal(within, np.inf)
        rho = np.maximum(np.sort(within, axis=1)[:, k - 1], min_dist)
        for j, b in enumerate(Y):
            b = np.asarray(b, dtype=np.float64)
            m = len(b)
            across = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
            nu = np.maximum(np.sort(across, axis=1)[:, k - 1], min_dist)
            B = np.exp(2 * gammaln(k) - gammaln(k - alpha + 1) - gammaln(k + alpha - 1))
            mean_ratio = np.mean((rho / nu) ** (d * (1 - alpha)))
            value = B * ((n - 1) / m) ** (1 - alpha) * mean_ratio
            D[i, j] = np.log(max(value, np.finfo(float).eps)) / (alpha - 1)
    if symmetric:
        np.fill_diagonal(D, 0.0)
    return D


# Sets of 6..39 points.
ragged_sets = functools.partial(random_sets, low=6, high=39)


def test_hand_checked_values(method):
    # REFERENCES.md: checked against skl-groups, no floor, no clamp.
    X = np.array([[0.0], [1.0], [3.0]])
    Y = np.array([[0.2], [1.2], [3.2], [7.2]])
    D = renyi_divergence([X, Y], alpha=[0.99, 0.5], k=2, min_dist=0, clamp=False)
    assert_allclose(D[:, 0, 1], [-0.0817217, 0.2308948], atol=5e-8)
    assert_allclose(D[:, 1, 0], [-0.5222789, -0.2646050], atol=5e-8)
    assert_array_equal(D[:, [0, 1], [0, 1]], 0.0)


@pytest.mark.parametrize("d", [1, 3, 8, 30])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("workers", [1, 2])
def test_matches_reference(method, d, dtype, k, workers):
    rng = np.random.default_rng(d * 10 + k)
    X = ragged_sets(rng, 7, d, dtype)
    Y = ragged_sets(rng, 4, d, dtype, low=k, shift=0.5)
    alphas = [0.3, 0.99, 1.8]
    # Distances from |x|^2 + |y|^2 - 2 <x, y> lose digits for close
    # neighbours (relative error ~ eps |x|^2 / |x - y|^2).
    atol = 1e-8 if dtype == np.float64 else 2e-4
    # A floor far below every distance: the reference needs none.
    got = renyi_divergence(X, alpha=alphas, k=k, min_dist=1e-9, clamp=False,
                           workers=workers)
    cross = renyi_divergence(X, Y, alpha=alphas, k=k, min_dist=1e-9, clamp=False,
                             workers=workers)
    for a, alpha in enumerate(alphas):
        assert_allclose(got[a], ref_renyi(X, None, alpha, k, 1e-9), rtol=atol,
                        atol=atol)
        assert_allclose(cross[a], ref_renyi(X, Y, alpha, k, 1e-9), rtol=atol,
                        atol=atol)


@pytest.mark.parametrize("k", [1, 2, 5, 8, 9, 13])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_selection_paths(simd_path, k, dtype):
    # k <= 8 keeps the lists in registers, larger k in memory; each on the
    # AVX2 and the baseline path; set sizes around the vector widths.
    rng = np.random.default_rng(k)
    X = [rng.normal(size=(n, 6)).astype(dtype) for n in (k + 1, 17, 33, k + 8)]
    Y = [rng.normal(size=(n, 6)).astype(dtype) for n in (k, 9 + k, 40)]
    atol = 1e-10 if dtype == np.float64 else 2e-4
    want = ref_renyi(X, None, 0.7, k, 1e-9)
    got = renyi_divergence(X, alpha=0.7, k=k, min_dist=1e-9, clamp=False)
    assert_allclose(got, want, rtol=atol, atol=atol)
    want = ref_renyi(X, Y, 1.3, k, 1e-9)
    got = renyi_divergence(X, Y, alpha=1.3, k=k, min_dist=1e-9, clamp=False)
    assert_allclose(got, want, rtol=atol, atol=atol)


@pytest.mark.parametrize("k", [1, 5, 9])
@pytest.mark.parametrize(("dtype", "d"), [(np.float64, 2), (np.float32, 2),
                                          (np.float32, 7), (np.float64, 8),
                                          (np.float64, 12)])
def test_blocks_on_the_fly(simd_path, monkeypatch, k, dtype, d):
    # Pairs of small sets (low d) compute their blocks on the fly, once
    # transposed (one list per point, km_knn_block); with _flip_points 0,
    # from tiles and lane lists. The same arithmetic, so the same bits (the
    # build turns floating-point contraction off: with GCC 13's
    # -ffp-contract=fast the two were 1 ulp apart), at every scale, for X
    # against itself, X against Y and both directions at once; sizes around
    # the vector widths and the threshold (128), 1 and 2 threads.
    rng = np.random.default_rng(k + d)
    sizes = (k + 1, 16, 17, 33, 63, 64, 65, 127, 128, 129)
    X = [rng.normal(size=(n, d)).astype(dtype) for n in sizes]
    Y = [rng.normal(size=(n, d)).astype(dtype) + 0.5 for n in (k + 1, 9 + k, 40)]
    got = renyi_divergence(X, alpha=[0.5, 1.5], k=k, min_dist=1e-9, clamp=False)
    cross = renyi_divergence(X, Y, alpha=[0.5, 1.5], k=k, min_dist=1e-9,
                             clamp=False)
    atol = 1e-10 if dtype == np.float64 else 2e-4
    for a, alpha in enumerate([0.5, 1.5]):
        assert_allclose(got[a], ref_renyi(X, None, alpha, k, 1e-9), rtol=atol,
                        atol=atol)
        assert_allclose(cross[a], ref_renyi(X, Y, alpha, k, 1e-9), rtol=atol,
                        atol=atol)
    # float32 at its own extremes (1e150 is beyond its range).
    extreme = 1e150 if dtype == np.float64 else 1e30
    for scale in (1.0, 1 / extreme, extreme):
        sets = [x * dtype(scale) for x in X]
        others = [y * dtype(scale) for y in Y]
        for workers in (1, 2):
            fly = [renyi_divergence(sets, k=k, workers=workers),
                   renyi_divergence(sets, others, k=k, workers=workers),
                   *renyi_divergence_both(sets, others, k=k, workers=workers)]
            with monkeypatch.context() as m:
                m.setattr(knn, "_flip_points", lambda dim: 0)
                lanes = [renyi_divergence(sets, k=k, workers=workers),
                         renyi_divergence(sets, others, k=k, workers=workers),
                         renyi_divergence(others, sets, k=k, workers=workers)]
            for f, ln in zip(fly, [lanes[0], lanes[1], lanes[1], lanes[2]],
                             strict=True):
                assert_array_equal(f, ln)
                assert np.isfinite(f).all()


@pytest.mark.parametrize("d", [2, 6, 20])
def test_both_directions_match_two_calls(method, d):
    # renyi_divergence_both (SetKernel("renyi").transform): one search for
    # both directions, as two calls up to rounding; 1, 2 and 4 threads, with
    # small sets (blocks on the fly), larger ones (tiles with both lists)
    # and, with 4 threads, one pair too large to share a block (two
    # searches).
    rng = np.random.default_rng(d)
    for sx, sy in (((7, 20, 33), (9, 16, 40)), ((150, 90), (120, 200, 8)),
                   ((700, 650), (600, 6))):
        X = [rng.normal(size=(n, d)) for n in sx]
        Y = [rng.normal(size=(n, d)) + 0.3 for n in sy]
        for workers in (1, 2, 4):
            ab, ba = renyi_divergence_both(X, Y, alpha=[0.5, 1.5], k=5,
                                           workers=workers)
            assert_allclose(ab, renyi_divergence(X, Y, alpha=[0.5, 1.5], k=5,
                                                 workers=workers),
                            rtol=1e-12, atol=1e-12)
            assert_allclose(ba, renyi_divergence(Y, X, alpha=[0.5, 1.5], k=5,
                                                 workers=workers),
                            rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="Y must be given"):
        renyi_divergence_both(X, None)
    with pytest.raises(ValueError, match=r"Y\[1\] has 6 point"):
        renyi_divergence_both(X, [rng.normal(size=(9, d)), rng.normal(size=(6, d))],
                              k=6)


def test_few_large_sets_split_rows(method):
    # One dominant pair: with 4 threads (not 1) the blocks engine switches
    # to ordered pairs with split rows.
    rng = np.random.default_rng(3)
    X = [rng.normal(size=(300, 6)), rng.normal(size=(250, 6)) + 0.3,
         rng.normal(size=(12, 6))]
    want = ref_renyi(X, None, 0.99, 5, 1e-9)
    for workers in (1, 4):
        got = renyi_divergence(X, min_dist=1e-9, clamp=False, workers=workers)
        assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bit_identical_across_workers(method, dtype):
    rng = np.random.default_rng(4)
    X = ragged_sets(rng, 9, 5, dtype)
    Y = ragged_sets(rng, 3, 5, dtype)
    for args in ((X,), (X, Y)):
        one = renyi_divergence(*args, alpha=[0.5, 1.5], workers=1)
        assert_array_equal(renyi_divergence(*args, alpha=[0.5, 1.5], workers=2), one)
        assert_array_equal(renyi_divergence(*args, alpha=[0.5, 1.5], workers=3), one)


def test_chunks_of_pairs(monkeypatch):
    # The pairs run in chunks of row sets: any chunk size, same bits.
    rng = np.random.default_rng(14)
    X = ragged_sets(rng, 9, 5, np.float64)
    Y = ragged_sets(rng, 4, 5, np.float64)
    # With 4 threads, one pair of `big` outweighs half a thread's share:
    # ordered pairs with split rows.
    big = [rng.normal(size=(300, 5)), rng.normal(size=(200, 5)), X[0]]
    cases = ((X,), (X, Y), (big,))
    want = [renyi_divergence(*args, alpha=[0.5, 2.0], workers=4) for args in cases]
    for per_call in (1, 5, 7):
        monkeypatch.setattr(knn, "KNN_PAIRS_PER_CALL", per_call)
        for args, w in zip(cases, want, strict=True):
            got = renyi_divergence(*args, alpha=[0.5, 2.0], workers=4)
            assert_array_equal(got, w)


def test_alpha_sequence_matches_single_calls():
    rng = np.random.default_rng(5)
    X = ragged_sets(rng, 5, 4, np.float64)
    stacked = renyi_divergence(X, alpha=(0.5, 0.99, 3.0), k=3)
    assert stacked.shape == (3, 5, 5)
    for a, alpha in enumerate((0.5, 0.99, 3.0)):
        assert_array_equal(stacked[a], renyi_divergence(X, alpha=alpha, k=3))


def test_duplicates_give_finite_values(method):
    rng = np.random.default_rng(6)
    base = rng.normal(size=(30, 3))
    X = [
        np.repeat(base[:10], 3, axis=0),  # every point three times
        base,
        base.copy(),  # identical to the previous set
        np.zeros((8, 3)),  # a point mass
    ]
    for min_dist in (None, 0.0, 1e-3):
        D = renyi_divergence(X, alpha=[0.5, 0.99, 2.0], k=2, min_dist=min_dist,
                             clamp=False)
        assert np.isfinite(D).all()
        assert_array_equal(D[:, [0, 1, 2, 3], [0, 1, 2, 3]], 0.0)


def test_default_floor_is_scale_invariant(method):
    rng = np.random.default_rng(7)
    X = ragged_sets(rng, 4, 3, np.float64)
    X[0] = np.vstack([X[0], X[0][:3]])  # duplicates, so the floor matters
    D = renyi_divergence(X)
    # A power of two scales every distance exactly.
    assert_array_equal(renyi_divergence([2.0**-30 * x for x in X]), D)
    assert_allclose(renyi_divergence([1e5 * x for x in X]), D, rtol=1e-9, atol=1e-12)
    # An absolute floor is not invariant: at scale 1e-4 it floors everything.
    small = [1e-4 * x for x in X]
    assert not np.allclose(renyi_divergence(small, min_dist=1e-3), D)


def test_default_floor_value(method):
    # 1e-3 times the median positive rho of the row set: with a floor far
    # above every distance, all ratios are 1 and D depends on n and m only.
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(40, 2)), rng.normal(size=(30, 2))]
    # Equal to the reference with that floor for the pairs (X[0], .):
    a = X[0]
    within = np.sqrt(((a[:, None] - a[None]) ** 2).sum(-1))
    np.fill_diagonal(within, np.inf)
    floor = 1e-3 * np.median(np.sort(within, axis=1)[:, 4])
    want = ref_renyi(X, None, 0.99, 5, floor)[0, 1]
    assert_allclose(renyi_divergence(X, clamp=False)[0, 1], want, rtol=1e-12)


def test_entries_depend_on_their_two_sets_only():
    rng = np.random.default_rng(9)
    X = ragged_sets(rng, 6, 4, np.float64)
    Y = ragged_sets(rng, 3, 4, np.float64)
    full = renyi_divergence(X, Y, clamp=False)
    part = renyi_divergence(X[2:4], Y[1:], clamp=False)
    assert_allclose(part, full[2:4, 1:], rtol=1e-10, atol=1e-12)


def test_clamp():
    rng = np.random.default_rng(10)
    X = [rng.normal(size=(50, 2)) for _ in range(6)]  # same distribution
    raw = renyi_divergence(X, clamp=False)
    assert (raw < 0).any()
    assert_array_equal(renyi_divergence(X), np.maximum(raw, 0))


def gaussian_renyi(alpha, m1, S1, m2, S2):
    """Closed form D_alpha(N(m1, S1) || N(m2, S2)) (REFERENCES.md)."""
    Sa = alpha * S2 + (1 - alpha) * S1
    dm = m1 - m2
    logdet = [np.linalg.slogdet(S)[1] for S in (Sa, S1, S2)]
    return alpha / 2 * dm @ np.linalg.solve(Sa, dm) - (
        logdet[0] - (1 - alpha) * logdet[1] - alpha * logdet[2]
    ) / (2 * (alpha - 1))


def test_converges_to_gaussian_closed_form(method):
    rng = np.random.default_rng(0)
    m1, S1 = np.zeros(2), np.eye(2)
    m2, S2 = np.array([0.8, 0.0]), np.array([[1.3, 0.3], [0.3, 0.8]])
    X = [rng.multivariate_normal(m1, S1, 6000) for _ in range(3)]
    Y = [rng.multivariate_normal(m2, S2, 6000) for _ in range(3)]
    alphas = (0.5, 0.99)
    D = renyi_divergence(X, Y, alpha=alphas, k=5)
    for a, alpha in enumerate(alphas):
        truth = gaussian_renyi(alpha, m1, S1, m2, S2)
        assert abs(D[a].mean() / truth - 1) < 0.10
    # Sets from the same distribution: near 0, far below the divergence.
    assert renyi_divergence(X, alpha=0.99).max() < 0.3 * gaussian_renyi(
        0.99, m1, S1, m2, S2)


def test_single_set_and_bags_input():
    rng = np.random.default_rng(11)
    X = Bags.from_list([rng.normal(size=(20, 3))])
    assert_array_equal(renyi_divergence(X), [[0.0]])
    assert renyi_divergence(X, X, clamp=False).shape == (1, 1)


def test_progress_bar(capsys):
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(12)
    X = ragged_sets(rng, 30, 5, np.float64)
    assert_array_equal(renyi_divergence(X, progress=True), renyi_divergence(X))


def test_divergence_kernel_formula():
    rng = np.random.default_rng(13)
    D = rng.uniform(-0.2, 3.0, size=(6, 6))
    np.fill_diagonal(D, 0)
    S = np.maximum((D + D.T) / 2, 0)
    assert_allclose(divergence_kernel(D, gamma=0.7, power=1.5),
                    np.exp(-0.7 * S**1.5), rtol=1e-15)
    off = S[~np.eye(6, dtype=bool)]
    assert_allclose(divergence_kernel(D), np.exp(-S**2 / np.median(off) ** 2),
                    rtol=1e-15)
    K = divergence_kernel(D)
    assert_array_equal(K, K.T)
    assert_array_equal(np.diag(K), 1.0)


def test_divergence_kernel_median_of_zeros():
    D = np.zeros((4, 4))
    D[0, 1] = D[1, 0] = 2.0
    # More than half the off-diagonal entries are 0: the positive median.
    assert_allclose(divergence_kernel(D, power=1)[0, 1], np.exp(-1.0))
    with pytest.warns(DegenerateWarning, match="is 1 between all objects of D: "
                      "they are equal .*gamma, from the median of distances "
                      "that are all 0, is arbitrary"):
        assert_array_equal(divergence_kernel(np.zeros((3, 3))), 1.0)


@pytest.mark.parametrize("min_dist", [None, 0.0])
def test_tiny_sets_beside_large_ones(simd_path, min_dist):
    # Sets 1e-160 in magnitude beside one of magnitude 1: their squared
    # distances to each other are subnormal at the common scale (the log of
    # the sums takes them scaled by 2**64); the estimates between them are
    # those of the same sets scaled up alone.
    rng = np.random.default_rng(5)
    X = [rng.normal(size=(20, 2)), rng.normal(size=(30, 2)) * 1e-160,
         rng.normal(size=(25, 2)) * 1e-160 + 1e-161]
    D = renyi_divergence(X, alpha=[0.5, 1.5], min_dist=min_dist, clamp=False)
    alone = renyi_divergence([x * 1e160 for x in X[1:]], alpha=[0.5, 1.5],
                             min_dist=min_dist, clamp=False)
    assert np.isfinite(D).all()
    assert_allclose(D[:, 1:, 1:], alone, rtol=1e-10, atol=1e-10)


# -- one kernel of the divergences, for every entry point --------------------


def kernel_of_divergences(ab, ba, scale):
    """exp(-(S / scale)^2) of S = max((ab + ba.T) / 2, 0), in float64 of
    divergences in the normal range (the reference)."""
    S = np.maximum((ab + ba.T) / 2, 0.0)
    return np.exp(-((S / scale) ** 2))


@pytest.mark.parametrize("top", [1e-310, 1e-300, 1e300, 1.5e308])
def test_one_renyi_kernel_at_the_ends_of_the_float_range(monkeypatch, top):
    """divergence_kernel, NystroemMap("renyi") and SetKernel("renyi") make
    one kernel of the same divergences, through one function: divergences
    scaled so that the largest is `top` (subnormal ones at 1e-310, sums
    beyond the float range at 1.5e308) give the kernel of the same values
    brought back near 1 by a power of two (exact), whose median scale
    follows them. (The two others used to symmetrise them on their own:
    rounded subnormals, an infinite S.)"""
    import kernelmaps as km

    rng = np.random.default_rng(21)
    train = [rng.normal(loc=i % 3, size=(20 + i % 5, 2)) for i in range(24)]
    test = [rng.normal(loc=i % 3, size=(18, 2)) for i in range(5)]
    factor = top / max(renyi_divergence(train).max(),
                       *(R.max() for R in renyi_divergence_both(test, train)))

    def scaled(*args, **kwargs):
        return factor * renyi_divergence(*args, **kwargs)

    def scaled_both(*args, **kwargs):
        return tuple(factor * R for R in renyi_divergence_both(*args, **kwargs))

    # The reference: the same values times 2**e, near 1, in plain float64.
    e = -np.frexp(top)[1]
    D, ab, ba = scaled(train), *scaled_both(test, train)
    Dn, abn, ban = (np.ldexp(R, e) for R in (D, ab, ba))
    off = np.maximum((Dn + Dn.T) / 2, 0)[~np.eye(len(D), dtype=bool)]
    scale = np.ldexp(np.median(off), -e)
    K = kernel_of_divergences(Dn, Dn, np.median(off))
    K_test = kernel_of_divergences(abn, ban, np.median(off))

    assert_allclose(divergence_kernel(D), K, rtol=1e-12, atol=1e-300)

    # The others compute the divergences by the spec: scaled here.
    from kernelmaps.sets import RenyiSpec

    def divergences(self, A, B, n_threads):  # the spec's (steps: none), scaled
        yield from ()
        return scaled(A) if B is None else scaled_both(A, B)

    monkeypatch.setattr(RenyiSpec, "divergences", divergences)
    nys = km.NystroemMap(len(train), kernel="renyi",
                         landmarks=np.arange(len(train))).fit(train)
    assert nys.params_["scale"] == pytest.approx(scale, rel=1e-12)
    assert_allclose(nys.eigenvalues_, np.linalg.eigvalsh(K), atol=1e-10)
    # U Lambda^-1/2 U^T of the landmarks, applied to their kernel rows
    assert_allclose(nys.transform(test), K_test @ nys.normalization_, atol=1e-10)

    try:
        import kernelmaps.sklearn as adapters
    except ImportError:  # scikit-learn: its part runs where it is installed
        return
    # (SetKernel computes on the spec too: its divergences are scaled)
    est = adapters.SetKernel("renyi", psd="flip")
    projector = km.PSDProjector("flip").fit(K)
    assert_allclose(est.fit_transform(train), projector.transform(K), atol=1e-10)
    assert est.scale_ == pytest.approx(scale, rel=1e-12)
    assert_allclose(est.transform(test), projector.transform(K_test), atol=1e-10)


@pytest.fixture
def products_from(monkeypatch):
    """The kNN products path from `d` features on (the blocks method)."""
    monkeypatch.setattr(knn, "choose_method", lambda X, Y: "blocks")

    def set_to(d):
        monkeypatch.setattr(knn, "KNN_GEMM_DIM",
                            dict.fromkeys(map(np.dtype, ("float32", "float64")), d))

    return set_to


@pytest.mark.parametrize("d", [3, 30, 200, 512])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_path_matches_reference(simd_path, products_from, d, dtype):
    # Squared distances from BLAS products of the centred points, every list
    # checked against the rounding bound; sets against themselves, against
    # others, and a pair large enough to split its rows.
    products_from(1)
    rng = np.random.default_rng(d)
    X = ragged_sets(rng, 6, d, dtype, shift=2.0)
    Y = ragged_sets(rng, 3, d, dtype, low=4, shift=2.5)
    atol = 1e-8 if dtype == np.float64 else 2e-4
    for A, B in ((X, None), (X, Y)):
        got = renyi_divergence(A, B, alpha=[0.5, 0.99], k=4, min_dist=1e-9,
                               clamp=False, workers=2)
        for a, alpha in enumerate((0.5, 0.99)):
            assert_allclose(got[a], ref_renyi(A, B, alpha, 4, 1e-9), rtol=atol,
                            atol=atol * d)
        assert_array_equal(got, renyi_divergence(A, B, alpha=[0.5, 0.99], k=4,
                                                 min_dist=1e-9, clamp=False,
                                                 workers=1))
    big = [rng.normal(size=(300, d)).astype(dtype),
           rng.normal(size=(260, d)).astype(dtype) + 0.3]
    got = renyi_divergence(big, min_dist=1e-9, clamp=False, workers=4)
    assert_allclose(got, ref_renyi(big, None, 0.99, 5, 1e-9), rtol=atol,
                    atol=atol * d)


def test_products_path_recomputes_what_it_cannot_certify(products_from):
    # Two clusters of points 1e-3 apart, 1e3 from the centre of all: the
    # expansion cannot resolve the distances within a cluster (it would
    # lose about 12 digits), so those lists are computed again by the
    # tiles: the entries of two sets of one cluster are the tiles' own, bit
    # for bit; across clusters the products are certified.
    rng = np.random.default_rng(9)
    far = np.full(150, 1e3)
    X = [rng.normal(size=(40, 150)) * 1e-3 + (far if i % 2 else -far)
         for i in range(4)]
    products_from(10**9)
    tiles = renyi_divergence(X, min_dist=1e-12, clamp=False)
    products_from(1)
    got = renyi_divergence(X, min_dist=1e-12, clamp=False)
    same = np.equal.outer(np.arange(4) % 2, np.arange(4) % 2)
    assert_array_equal(got[same], tiles[same])
    assert_allclose(got[~same], tiles[~same], rtol=1e-12)


# -- bad input: a clear TypeError or ValueError naming the argument ----------


rng = np.random.default_rng(0)
SETS = [rng.normal(size=(8, 3)), rng.normal(size=(6, 3))]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"k": 6}, ValueError, r"X\[1\] has 6 point\(s\).*more than k=6"),
        ({"k": 0}, ValueError, "k must be >= 1"),
        ({"k": 2.5}, TypeError, "k must be an int"),
        ({"alpha": 1.0}, ValueError, "alpha must not be 1"),
        ({"alpha": 0.0}, ValueError, "alpha must be > 0"),
        ({"alpha": -0.5}, ValueError, "alpha must be > 0"),
        ({"alpha": np.nan}, ValueError, "alpha must be finite"),
        ({"alpha": [0.5, 1.0]}, ValueError, "alpha must not be 1"),
        ({"alpha": []}, ValueError, "alpha must not be empty"),
        ({"alpha": "0.5"}, TypeError, "alpha must be a real number"),
        ({"alpha": 7.0, "k": 5}, ValueError, r"\|alpha - 1\| < k=5.*k - alpha \+ 1"),
        ({"alpha": 2.0, "k": 1}, ValueError, r"\|alpha - 1\| < k=1"),
        ({"min_dist": -1.0}, ValueError, "min_dist must be >= 0"),
        ({"min_dist": np.inf}, ValueError, "min_dist must be finite"),
        ({"clamp": 1}, TypeError, "clamp must be True or False"),
        ({"workers": 0}, ValueError, "workers"),
    ],
)
def test_renyi_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        renyi_divergence(SETS, **kwargs)


def test_renyi_bad_sets():
    with pytest.raises(ValueError, match=r"Y\[0\] has 2 point\(s\).*at least k=3"):
        renyi_divergence(SETS, [np.ones((2, 3))], k=3)
    # k neighbours in Y are enough: m_j = k is fine.
    assert renyi_divergence(SETS, [rng.normal(size=(3, 3))], k=3).shape == (2, 1)
    with pytest.raises(ValueError, match="Incompatible dimension"):
        renyi_divergence(SETS, [np.ones((9, 2))])
    bad = rng.normal(size=(8, 3))
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"X\[1\] contains NaN"):
        renyi_divergence([SETS[0], bad])


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


def test_huge_k_is_refused_naming_k():
    X = sets(n_sets=2, d=1)
    for k in (2**31, 10**12, 10**400):
        with pytest.raises(ValueError, match=r"^k must be <= 2147483647"):
            km.renyi_divergence(X, k=k)
    sk = pytest.importorskip("kernelmaps.sklearn")
    with pytest.raises(ValueError, match=r"^k must be <= 2147483647"):
        sk.SetKernel("mean_map", k=2**63).fit(X)


@pytest.mark.parametrize(
    ("D", "kwargs", "error", "match"),
    [
        (np.ones((2, 3)), {}, ValueError, "D must be square"),
        (np.ones(3), {}, ValueError, "D must be 2-D"),
        (np.ones((0, 0)), {}, ValueError, "D is empty"),
        (np.array([[0, np.nan], [1, 0]]), {}, ValueError, "D contains NaN"),
        (np.array([["a"]]), {}, TypeError, "D must be a 2-D array of real"),
        (np.eye(2) * 1j, {}, TypeError, "D must be a 2-D array of real"),
        (np.eye(2), {"gamma": 0.0}, ValueError, "gamma must be > 0"),
        (np.eye(2), {"gamma": "1"}, TypeError, "gamma must be a real number"),
        (np.eye(2), {"power": -1}, ValueError, "power must be > 0"),
    ],
)
def test_divergence_kernel_bad_input(D, kwargs, error, match):
    with pytest.raises(error, match=match):
        divergence_kernel(D, **kwargs)


# -- the ends of the float range ---------------------------------------------


def test_renyi_of_subnormal_sets_against_normal_ones():
    # rho_k within the subnormal sets underflowed in squared distances at
    # the common scale (set by Y ~ 1): now at their own scale. Reference:
    # the estimator in logs, the subnormals as integers times 2**-1074.
    rng = np.random.default_rng(0)
    units = [rng.choice(np.arange(-300, 300), size=7, replace=False)[:, None]
             for _ in range(3)]
    X = [np.ldexp(u.astype(float), -1074) for u in units]
    Y = sets(1, n_sets=2, d=1)
    k, alpha = 2, 1.5
    got = km.renyi_divergence(X, Y, k=k, alpha=alpha, clamp=False)
    log_b = 2 * gammaln(k) - gammaln(k - alpha + 1) - gammaln(k + alpha - 1)
    for i, u in enumerate(units):
        du = np.abs(u - u.T).astype(float)
        np.fill_diagonal(du, np.inf)
        log_rho = np.log(np.sort(du, axis=1)[:, k - 1]) - 1074 * math.log(2)
        log_floor = math.log(1e-3) + np.median(log_rho)  # an odd count here
        log_rho = np.maximum(log_rho, log_floor)
        for j, y in enumerate(Y):
            log_nu = np.log(np.sort(np.abs(X[i] - y.T), axis=1)[:, k - 1])
            u_t = (1 - alpha) * (log_rho - np.maximum(log_nu, log_floor))
            log_i = (log_b + (1 - alpha) * math.log((len(u) - 1) / len(y))
                     + np.logaddexp.reduce(u_t) - math.log(len(u)))
            assert got[i, j] == pytest.approx(log_i / (alpha - 1), rel=1e-12)


def divergences(n=6, seed=0):
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.1, 3.0, size=(n, n))
    np.fill_diagonal(D, 0.0)
    return D


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 2.0**-600, 1e160, 1e300,
                                   1.7e308 / 3])
@pytest.mark.parametrize("power", [1, 2, 0.5, 3.5])
def test_divergence_kernel_default_scale_at_any_magnitude(scale, power):
    # The default gamma makes the kernel invariant to the scale of D.
    D = divergences()
    K = km.divergence_kernel(D * scale, power=power)
    assert np.isfinite(K).all()
    assert_allclose(K, km.divergence_kernel(D, power=power), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize(("scale", "gamma"), [(1e160, 1e-320), (1e160, 1e-300),
                                              (1e-170, 1e300), (1e-300, 1e-10),
                                              (1e300, 1e-300), (1.0, 1e-320)])
def test_divergence_kernel_given_gamma_at_any_magnitude(scale, gamma):
    D = divergences()
    S = (D + D.T) / 2
    # exact value, in logs: gamma (scale S)^2
    want = np.exp(-np.exp(np.log(gamma) + 2 * (np.log(scale) + np.log(S + (S == 0)))))
    want[S == 0] = 1.0
    # (1 everywhere, or 0 off the diagonal: a DegenerateWarning says so)
    degenerate = (np.all(want == 1) and "is 1 between all objects of D: gamma is "
                  "far too small") or (np.array_equal(want, np.eye(len(S))) and
                                       "is 0 between all objects of D: gamma is "
                                       "far too large")
    with (pytest.warns(DegenerateWarning, match=degenerate) if degenerate
          else contextlib.nullcontext()):
        K = km.divergence_kernel(D * scale, gamma=gamma, power=2)
    assert np.isfinite(K).all()
    assert_allclose(K, want, rtol=1e-12, atol=1e-300)


def test_divergence_kernel_plain_formula_unchanged_at_ordinary_scales():
    D = divergences()
    S = (D + D.T) / 2
    assert_array_equal(km.divergence_kernel(D, gamma=0.7, power=1.5),
                       np.exp(-0.7 * S**1.5))
    off = S[~np.eye(len(S), dtype=bool)]
    assert_array_equal(km.divergence_kernel(D),
                       np.exp(-(1.0 / np.median(off) ** 2) * S**2))


def test_divergence_kernel_of_subnormal_divergences():
    D = np.array([[0.0, 49, 59, 57], [49, 0, 64, 50], [59, 64, 0, 33],
                  [57, 50, 33, 0]]) * 5e-324
    K = km.divergence_kernel(D)
    assert_allclose(K, km.divergence_kernel(np.ldexp(D, 1074)), rtol=1e-14)
    K = km.divergence_kernel(D, gamma=1e290, power=0.9)
    want = km.divergence_kernel(D * 2.0**1000, gamma=1e290 * 2.0**-900, power=0.9)
    assert_allclose(K, want, rtol=1e-12)
