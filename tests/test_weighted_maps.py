"""The feature maps of sets on weighted sets (RDF, DRDF, EMK): the weighted
mean of the point features, against NumPy references that average the
features of the points with the weights, on every path of the set-means
engine; integer weights as repeated points, zero weights as removed ones,
and the approximation of the weighted mean map kernel."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    Bags,
    DoublyRandomDistributionFeatures,
    EMKFeatures,
    RandomDistributionFeatures,
)
from kernelmaps._engine import set_means as set_means_module
from kernelmaps._engine.set_means import normalised_weights, set_means

from ._references import point_kernel

# f32 within 1e-5 and f64 within 1e-12 of the features' scale (their
# largest possible value).
TOL = {np.float32: 1e-5, np.float64: 1e-12}


def weighted_sets(sizes, d, dtype, seed, *, zeros=False):
    """Sets of the given sizes and positive weights (some 0 with `zeros`,
    never all of a set), as a list of arrays and a list of weight vectors."""
    rng = np.random.default_rng(seed)
    sets = [(0.6 * rng.normal(size=(n, d))).astype(dtype) for n in sizes]
    weights = [rng.uniform(0.1, 3.0, n) for n in sizes]
    if zeros:
        for w in weights:
            if len(w) > 1:
                w[rng.random(len(w)) < 0.4] = 0.0
                w[rng.integers(len(w))] = 1.5
    return sets, weights


def weighted_mean(features, w):
    """The weighted mean of the rows of `features`, in float64."""
    w = np.asarray(w, dtype=np.float64)
    return (w[:, None] * features).sum(0) / w.sum()


def rdf_reference(rdf, sets, weights):
    """The weighted means of sqrt(2/t) cos(x W + b) over each set, in float64
    from the fitted W and b in the dtype of the points."""
    dtype = sets[0].dtype
    W = rdf.weights_.astype(dtype).astype(np.float64)
    b = rdf.offsets_.astype(dtype).astype(np.float64)
    scale = math.sqrt(2.0 / rdf.n_features_out_)
    return np.array([
        weighted_mean(scale * np.cos(x.astype(np.float64) @ W + b), w)
        for x, w in zip(sets, weights, strict=True)])


def emk_reference(emk, sets, weights):
    """The weighted means of G k_Z(x) over each set."""
    return np.array([
        weighted_mean(point_kernel(x.astype(np.float64), emk.basis_, emk._kernel,
                                   emk.gamma_), w) @ emk.projection_.T
        for x, w in zip(sets, weights, strict=True)])


SIZES = {
    "ragged": [1, 2, 3, 5, 7, 1, 13, 4],
    "odd": [9, 1, 31, 3],
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize(("d", "t"), [(3, 37), (300, 64)])
@pytest.mark.parametrize("zeros", [False, True])
def test_rdf_weighted_means_against_reference(simd_path, dtype, sizes, d, t, zeros):
    # d >= 256 with sets of several points: the tiles at many features.
    sets, weights = weighted_sets(SIZES[sizes], d, dtype, seed=d + t, zeros=zeros)
    bags = Bags.from_list(sets, weights=weights)
    rdf = RandomDistributionFeatures(t, gamma=0.5 / d, rng=0).fit(bags)
    F1 = rdf.transform(bags, workers=1)
    F2 = rdf.transform(bags, workers=2)
    assert F1.dtype == dtype and F1.shape == (len(sets), t)
    assert_array_equal(F1, F2)
    scale = math.sqrt(2.0 / t)
    assert_allclose(F1, rdf_reference(rdf, sets, weights), rtol=0,
                    atol=TOL[dtype] * scale)
    # not the unweighted means
    with pytest.warns(UserWarning, match="X has no point weights"):
        assert np.abs(F1 - rdf.transform(sets)).max() > 1e-3 * scale


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rdf_weighted_singletons_blas_path(dtype):
    # Singleton sets with d >= 256 go through BLAS (_gemm_cos): a point's
    # weight over its set's total is 1, so weights change nothing there.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(11, 300)).astype(dtype)
    bags = Bags(X, np.arange(12), rng.uniform(0.5, 4.0, 11))
    rdf = RandomDistributionFeatures(50, gamma=1e-3, rng=0).fit(bags)
    F = rdf.transform(bags, workers=2)
    with pytest.warns(UserWarning, match="X has no point weights"):
        assert_array_equal(F, rdf.transform(bags.with_weights(None), workers=2))
    assert_allclose(F, rdf_reference(rdf, list(X[:, None]), np.ones((11, 1))),
                    rtol=0, atol=TOL[dtype] * math.sqrt(2 / 50))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["cos", "rbf", "laplacian"])
def test_set_means_pieces_of_large_weighted_sets(monkeypatch, dtype, kind):
    # Sets larger than a task's work are cut into pieces whose sums are
    # added afterwards: with weights, sums of weighted means. A small task
    # work makes the sets here "large".
    monkeypatch.setattr(set_means_module, "TASK_WORK", 1e4)
    sets, weights = weighted_sets([700, 3, 517, 1], 4, dtype, seed=3, zeros=True)
    bags = Bags.from_list(sets, weights=weights)
    rng = np.random.default_rng(4)
    centres = rng.normal(scale=0.5, size=(4, 29))
    phases = rng.uniform(0, 2 * np.pi, 29)
    out1 = set_means(bags, centres, phases, kind=kind, gamma=0.3, scale=0.7,
                     n_threads=1)
    out2 = set_means(bags, centres, phases, kind=kind, gamma=0.3, scale=0.7,
                     n_threads=2)
    assert_array_equal(out1, out2)
    C = centres.astype(dtype).astype(np.float64)
    expected = []
    for x, w in zip(sets, weights, strict=True):
        x = x.astype(np.float64)
        if kind == "cos":
            f = np.cos(x @ C + phases.astype(dtype))
        else:
            f = point_kernel(x, C.T, kind, 0.3)
        expected.append(0.7 * weighted_mean(f, w))
    assert_allclose(out1, np.array(expected), rtol=0, atol=TOL[dtype] * 2)


def test_normalised_weights_do_not_overflow():
    w = np.array([1e308, 1e308, 3.0, 1e-300, 0.0, 2e-300])
    shares = normalised_weights(w, np.array([0, 2, 3, 6]))
    assert_allclose(shares, [0.5, 0.5, 1.0, 1 / 3, 0.0, 2 / 3], rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", ["rdf", "drdf", "emk"])
def test_integer_weights_are_repeated_points(dtype, make):
    sets, _ = weighted_sets([5, 1, 8, 3], 3, dtype, seed=7)
    rng = np.random.default_rng(8)
    counts = [rng.integers(1, 5, len(s)) for s in sets]
    repeated = [np.repeat(s, c, axis=0) for s, c in zip(sets, counts, strict=True)]
    bags = Bags.from_list(sets, weights=counts)
    fmap = _fitted(make, repeated)
    expected = fmap.transform(repeated)
    # float32: within 1e-5 of the features' magnitude
    tol = 1e-12 if dtype == np.float64 else 1e-5 * np.abs(expected).max()
    assert_allclose(fmap.transform(bags), expected, rtol=0, atol=tol)


@pytest.mark.parametrize("make", ["rdf", "drdf", "emk"])
def test_zero_weights_are_removed_points(make):
    sets, weights = weighted_sets([6, 1, 9, 4], 2, np.float64, seed=9, zeros=True)
    kept = [s[w > 0] for s, w in zip(sets, weights, strict=True)]
    fmap = _fitted(make, kept)
    bags = Bags.from_list(sets, weights=weights)
    expected = fmap.transform(Bags.from_list(
        kept, weights=[w[w > 0] for w in weights]))
    assert_allclose(fmap.transform(bags), expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("factor", [1e-150, 3.0, 1e150])
@pytest.mark.parametrize("make", ["rdf", "drdf", "emk"])
def test_scaled_weights_change_nothing(make, factor):
    sets, weights = weighted_sets([6, 1, 9, 4], 2, np.float64, seed=10, zeros=True)
    fmap = _fitted(make, sets)
    bags = Bags.from_list(sets, weights=weights)
    scaled = bags.with_weights(bags.weights * factor)
    assert_allclose(fmap.transform(scaled), fmap.transform(bags), rtol=0,
                    atol=1e-13)


def _fitted(make, train):
    if make == "rdf":
        return RandomDistributionFeatures(40, gamma=0.4, rng=0).fit(train)
    if make == "drdf":
        return DoublyRandomDistributionFeatures(40, 30, gamma=0.4, gamma2=2.0,
                                                rng=0).fit(train)
    return EMKFeatures(n_basis=12, gamma=0.4, n_iter=5, rng=0).fit(train)


def _scale(fmap):
    """The largest possible magnitude of a feature of `fmap`: sqrt(2/t) for
    the Fourier maps, 1 for EMK (a point's feature is the projection of
    phi(x), of norm at most sqrt(k(x, x)) = 1)."""
    if isinstance(fmap, EMKFeatures):
        return 1.0
    return math.sqrt(2.0 / fmap.n_features_out_)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_drdf_weighted_against_reference(dtype):
    sets, weights = weighted_sets([4, 1, 11, 6, 2], 3, dtype, seed=11, zeros=True)
    bags = Bags.from_list(sets, weights=weights)
    drdf = DoublyRandomDistributionFeatures(48, 24, gamma=0.3, gamma2=None,
                                            rng=1).fit(bags)
    Phi = rdf_reference(drdf.rdf_, sets, weights)
    # gamma2=None: the median heuristic of the training sets' weighted RDF
    # features
    assert drdf.gamma2_ == km.median_heuristic(
        drdf.rdf_.transform(bags).astype(np.float64))
    W2 = drdf.rff_.weights_.astype(dtype).astype(np.float64)
    b2 = drdf.rff_.offsets_.astype(dtype).astype(np.float64)
    expected = math.sqrt(2 / 24) * np.cos(Phi @ W2 + b2)
    F1 = drdf.transform(bags, workers=1)
    assert F1.dtype == dtype
    assert_array_equal(F1, drdf.transform(bags, workers=2))
    # the second level amplifies the first level's error by |W2|
    tol = 1e-12 if dtype == np.float64 else 1e-5 * max(1, np.abs(W2).sum(0).max())
    assert_allclose(F1, expected, rtol=0, atol=tol * math.sqrt(2 / 24))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_emk_weighted_against_reference(dtype, kernel):
    sets, weights = weighted_sets([4, 1, 11, 6, 2], 3, dtype, seed=12, zeros=True)
    emk = EMKFeatures(n_basis=10, kernel=kernel, gamma=0.5, n_iter=5,
                      rng=0).fit(sets)
    bags = Bags.from_list(sets, weights=weights)
    F1 = emk.transform(bags, workers=1)
    assert F1.dtype == dtype
    assert_array_equal(F1, emk.transform(bags, workers=2))
    assert_allclose(F1, emk_reference(emk, sets, weights), rtol=0,
                    atol=TOL[dtype] * _scale(emk))


def emk_pyramid_reference(emk, sets, weights, positions, levels):
    """The documented pyramid, with weighted means in every cell (0 for a
    cell of no point of positive weight)."""
    D = emk.n_features_out_
    rows = []
    for x, w, p in zip(sets, weights, positions, strict=True):
        psi = point_kernel(x.astype(np.float64), emk.basis_, emk._kernel,
                           emk.gamma_) @ emk.projection_.T
        cells = []
        for level in range(levels + 1):
            side = 2**level
            rc = np.minimum((p * side).astype(np.int64), side - 1)
            factor = 1.0 / 2 ** (levels if level == 0 else levels - level + 1)
            for r in range(side):
                for c in range(side):
                    inside = (rc[:, 0] == r) & (rc[:, 1] == c) & (w > 0)
                    cells.append(factor * weighted_mean(psi[inside], w[inside])
                                 if inside.any() else np.zeros(D))
        rows.append(np.concatenate(cells))
    return np.array(rows)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emk_weighted_pyramid_against_reference(dtype):
    sets, weights = weighted_sets([14, 1, 23, 6], 2, dtype, seed=13, zeros=True)
    rng = np.random.default_rng(14)
    positions = [rng.random((len(s), 2)) for s in sets]
    emk = EMKFeatures(n_basis=6, gamma=0.5, n_iter=3, rng=0).fit(sets)
    bags = Bags.from_list(sets, weights=weights)
    F = emk.transform(bags, positions, levels=2)
    expected = emk_pyramid_reference(emk, sets, weights, positions, 2)
    assert_allclose(F, expected, rtol=0, atol=TOL[dtype] * _scale(emk))
    # huge weights: no cell total overflows
    huge = bags.with_weights(bags.weights * 1e306)
    assert_allclose(emk.transform(huge, positions, levels=2), F, rtol=0,
                    atol=1e-13 * _scale(emk))


@pytest.mark.parametrize("make", ["rdf", "drdf", "emk"])
@pytest.mark.parametrize("workers", [1, 2])
def test_progress_blocks_keep_the_weights(monkeypatch, make, workers):
    # progress=True transforms blocks of whole sets (tiny blocks here, so
    # there are several); each block keeps its sets' weights.
    pytest.importorskip("tqdm")
    import kernelmaps._transforms as transforms

    monkeypatch.setattr(transforms, "TRANSFORM_BLOCK_VALUES", 24)
    sets, weights = weighted_sets([5, 1, 8, 3, 9, 2, 4], 3, np.float64, seed=15,
                                  zeros=True)
    fmap = _fitted(make, sets)
    bags = Bags.from_list(sets, weights=weights)
    F = fmap.transform(bags, workers=workers, progress=True)
    assert_allclose(F, fmap.transform(bags, workers=workers), rtol=0,
                    atol=1e-13 * _scale(fmap))
    if make == "rdf":
        assert_allclose(F, rdf_reference(fmap, sets, weights), rtol=0,
                        atol=1e-12 * _scale(fmap))


def weighted_mean_map_kernel(sets, weights, gamma):
    """sum_xy w_x v_y k(x, y) / (sum w sum v) for every pair of sets (the
    Gaussian kernel), in float64."""
    n = len(sets)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            k = point_kernel(sets[i], sets[j], "rbf", gamma)
            K[i, j] = weights[i] @ k @ weights[j] / (weights[i].sum()
                                                     * weights[j].sum())
    return K


def test_weighted_rdf_converges_to_the_weighted_mean_map_kernel():
    # The rate of the unweighted test (test_random_features.py,
    # error_ratio): the RMS error of the Gram at t = 100 over that at
    # t = 10000, pooled over seeds, is 10 for O(t^(-1/2)); 5 to 20 rules
    # out t^(-1/4) (3.2) and t^(-1) (100).
    rng = np.random.default_rng(0)
    sets = [rng.normal(loc=rng.normal(scale=0.8, size=3), size=(40, 3))
            for _ in range(12)]
    weights = [rng.gamma(0.7, size=40) for _ in sets]
    bags = Bags.from_list(sets, weights=weights)
    gamma = 0.4
    K = weighted_mean_map_kernel(sets, weights, gamma)
    # the weights matter: not the unweighted kernel
    assert np.abs(K - km.sum_match_kernel(sets, gamma=gamma)).max() > 0.01
    errors = []
    for t in (100, 10_000):
        squared = []
        for seed in range(8):
            F = RandomDistributionFeatures(t, gamma=gamma, draw="iid",
                                           form="offset", rng=seed).fit_transform(bags)
            squared.append(((F @ F.T - K) ** 2).mean())
        errors.append(math.sqrt(np.mean(squared)))
    assert 5 < errors[0] / errors[1] < 20
    assert errors[1] < 0.01


def test_rdf_fit_on_weighted_sets():
    sets, weights = weighted_sets([6, 1, 9, 4], 2, np.float64, seed=16, zeros=True)
    bags = Bags.from_list(sets, weights=weights)
    rdf = RandomDistributionFeatures(20, rng=0).fit(bags)
    assert rdf.n_features_in_ == 2
    # gamma=None: the weighted median heuristic, median_heuristic's rule
    # on the weighted sets (not that of the points of positive weight)
    assert rdf.gamma_ == km.median_heuristic(bags)
    assert rdf.gamma_ != km.median_heuristic(bags.points[bags.weights > 0])
    for kernel in ("rbf", "laplacian"):
        a = RandomDistributionFeatures(20, kernel=kernel, rng=0).fit(bags)
        assert a.gamma_ == km.median_heuristic(bags, kernel=kernel)
    # and the first level of DRDF
    drdf = DoublyRandomDistributionFeatures(20, 10, rng=0).fit(bags)
    assert drdf.gamma_ == km.median_heuristic(bags)
    # (unweighted sets: the same rule, median_heuristic's value)
    plain = bags.with_weights(None)
    assert RandomDistributionFeatures(20, rng=0).fit(plain).gamma_ == \
        km.median_heuristic(plain)
    # given gamma: the same draw as on the unweighted sets
    a = RandomDistributionFeatures(20, gamma=0.3, rng=0).fit(bags)
    b = RandomDistributionFeatures(20, gamma=0.3, rng=0).fit(sets)
    assert_array_equal(a.weights_, b.weights_)


def test_emk_fit_on_weighted_sets():
    sets, weights = weighted_sets([6, 1, 9, 4], 2, np.float64, seed=17)
    bags = Bags.from_list(sets, weights=weights)
    with pytest.raises(ValueError, match=r"X is a Bags with point weights.*basis"):
        EMKFeatures(n_basis=4, rng=0).fit(bags)
    basis = np.random.default_rng(0).normal(size=(5, 2))
    emk = EMKFeatures(basis=basis, gamma=0.5).fit(bags)
    assert_array_equal(emk.basis_, basis)
    assert emk.transform(bags).shape == (4, 5)


def test_weighted_sets_are_refused_where_not_taken():
    sets, weights = weighted_sets([3, 2], 2, np.float64, seed=18)
    bags = Bags.from_list(sets, weights=weights)
    zero = bags.with_weights(np.r_[0.0, 0.0, 0.0, 1.0, 1.0])
    rdf = RandomDistributionFeatures(8, gamma=0.5, rng=0).fit(sets)
    message = r"X\[0\]: the weights of its points are all 0"
    with pytest.raises(ValueError, match=message):
        rdf.transform(zero)
    with pytest.raises(ValueError, match=message):
        rdf.transform(zero, progress=True)


def test_weighted_lazy_sets_are_refused():
    da = pytest.importorskip("dask.array")
    sets, weights = weighted_sets([5, 4, 6], 2, np.float64, seed=19)
    bags = Bags.from_list(sets, weights=weights)
    lazy = Bags(da.from_array(np.array(bags.points), chunks=6), bags.offsets,
                bags.weights)
    for fmap in (_fitted("rdf", sets), _fitted("drdf", sets), _fitted("emk", sets)):
        with pytest.raises(TypeError, match="lazy Dask points with weights"):
            fmap.transform(lazy)
