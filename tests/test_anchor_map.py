"""Additive nearest-neighbour feature maps (AnchorMap) against references
written here: the factorisation, the lookup, the error against the exact
kernels, the compact codes."""

import pickle

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    AnchorMap,
    additive_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)

from ._helpers import digits_like, sets_and_histograms
from ._references import additive_terms

EXACT = {"chi2": additive_chi2_kernel, "js": js_kernel,
         "intersection": intersection_kernel, "hellinger": hellinger_kernel}


def block(annfm, j):
    """Anchor features of dimension j, (n_anchors, rank[j])."""
    start, n = annfm.table_offsets_[j], annfm.anchors_.shape[1]
    return annfm.table_[start : start + n * annfm.rank_[j]].reshape(n, -1)


@pytest.mark.parametrize("kernel", list(EXACT))
@pytest.mark.parametrize("anchors", ["uniform", "kmeans"])
def test_exact_factorisation_at_full_energy(kernel, anchors):
    X = digits_like(100, seed=1)[:, :6]
    annfm = AnchorMap(kernel, n_anchors=12, anchors=anchors, energy=1.0).fit(X)
    for j in range(6):
        a = annfm.anchors_[j]
        assert a[0] == 0 and (np.diff(a) > 0).all()
        Q = block(annfm, j)
        assert_allclose(Q @ Q.T, additive_terms(kernel, a[:, None], a), atol=1e-12)
    # An anchor value gets its exact features.
    values = annfm.anchors_[:, 5][None, :]
    Z = annfm.transform(values)
    want = np.concatenate([block(annfm, j)[5] for j in range(6)])
    assert_allclose(Z[0], want, atol=1e-15)


def test_uniform_anchors_and_kmeans_optimality():
    X = digits_like(300, seed=2)
    uniform = AnchorMap("chi2", n_anchors=9).fit(X)
    top = X.max(axis=0)
    assert_allclose(uniform.anchors_, top[:, None] * np.linspace(0, 1, 9), rtol=1e-15)
    # 1-D k-means by dynamic programming: no assignment of 4 clusters to the
    # sorted distinct values does better (brute force over the splits).
    from itertools import combinations

    from kernelmaps._engine._anchors import kmeans_1d

    rng = np.random.default_rng(3)
    v = np.sort(rng.random(12))
    w = rng.integers(1, 5, 12).astype(float)
    centres = kmeans_1d(v, w, 4)
    best = np.inf
    for cuts in combinations(range(1, 12), 3):
        groups = np.split(np.arange(12), cuts)
        cost = sum((w[g] * (v[g] - np.average(v[g], weights=w[g])) ** 2).sum()
                   for g in groups)
        best = min(best, cost)
    assign = np.argmin(np.abs(v[:, None] - centres[None, :]), axis=1)
    ours = sum((w[assign == c] * (v[assign == c] - centres[c]) ** 2).sum()
               for c in range(4))
    assert ours == pytest.approx(best, rel=1e-12)


def reference_transform(annfm, X):
    """Nearest anchor (or linear interpolation), per value, in Python."""
    out = []
    for row in X:
        feats = []
        for j, x in enumerate(row):
            a, Q = annfm.anchors_[j], block(annfm, j)
            if x == 0:
                feats.append(Q[0])
                continue
            x = min(max(x, a[0]), a[-1])
            if annfm.n_neighbors == 1:
                feats.append(Q[np.argmin(np.abs(a - x))])
            else:
                i = min(np.searchsorted(a, x, side="right") - 1, len(a) - 2)
                t = (x - a[i]) / (a[i + 1] - a[i])
                feats.append((1 - t) * Q[i] + t * Q[i + 1])
        out.append(np.concatenate(feats))
    return np.array(out)


@pytest.mark.parametrize("anchors", ["uniform", "kmeans"])
@pytest.mark.parametrize("n_neighbors", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lookup_matches_reference(anchors, n_neighbors, dtype):
    X = digits_like(40, seed=4)[:, :10]
    annfm = AnchorMap("chi2", 7, anchors=anchors, n_neighbors=n_neighbors,
                      weights="distance").fit(X)
    Y = digits_like(15, seed=5)[:, :10] * 1.3  # some beyond the fitted range
    Y = Y.astype(dtype)
    tol = 1e-13 if dtype == np.float64 else 1e-5
    want = reference_transform(annfm, Y.astype(np.float64))
    Z = annfm.transform(Y)
    assert Z.dtype == dtype
    assert_allclose(Z, want, atol=tol)
    S = annfm.transform(scipy.sparse.csr_matrix(Y))
    assert scipy.sparse.issparse(S) and S.dtype == dtype
    assert_allclose(S.toarray(), want, atol=tol)
    assert_array_equal(annfm.transform(Y, workers=1), annfm.transform(Y, workers=2))


def test_error_against_exact_kernels():
    X = digits_like(600, seed=6)
    K = additive_chi2_kernel(X)
    nearest = AnchorMap("chi2", 50, energy=0.99).fit(X)
    linear = AnchorMap("chi2", 50, energy=0.99, n_neighbors=2,
                       weights="distance").fit(X)
    errors = [np.abs(Z @ Z.T - K).mean()
              for Z in (nearest.transform(X), linear.transform(X))]
    assert errors[0] <= 3e-3
    assert errors[1] < 0.6 * errors[0]
    # More anchors, smaller error: O(eps) nearest, O(eps^2) interpolated.
    sweep = {}
    for weights, k in (("uniform", 1), ("distance", 2)):
        sweep[k] = [
            np.abs(Z @ Z.T - K).mean()
            for Z in (AnchorMap("chi2", n, energy=1.0, n_neighbors=k,
                                weights=weights).fit_transform(X)
                      for n in (10, 20, 40, 80))
        ]
        assert all(b < a for a, b in zip(sweep[k], sweep[k][1:], strict=False))
    # Doubling the anchors: about /2 for the nearest anchor, /4 interpolated.
    ratio_1 = sweep[1][0] / sweep[1][-1]
    ratio_2 = sweep[2][0] / sweep[2][-1]
    assert ratio_2 > 2 * ratio_1
    for kernel in ("js", "intersection", "hellinger"):
        Z = AnchorMap(kernel, 50).fit(X).transform(X)
        assert np.abs(Z @ Z.T - EXACT[kernel](X)).mean() < 5e-3


def test_zeros_stay_exact_and_sparse():
    X = digits_like(50, seed=7)
    annfm = AnchorMap("chi2", 20, n_neighbors=2, weights="uniform").fit(X)
    S = scipy.sparse.csr_matrix(X)
    Z = annfm.transform(S)
    # Each non-zero value gives rank features; zeros give none.
    assert Z.nnz == annfm.rank_[S.indices].sum()
    dense = annfm.transform(X)
    assert_array_equal(Z.toarray(), dense)
    first = dense[:, annfm.feature_offsets_[0] : annfm.feature_offsets_[1]]
    assert_array_equal(first[X[:, 0] == 0], 0.0)


def test_callable_kernel():
    X = digits_like(80, seed=8)[:, :5]
    annfm = AnchorMap(lambda x, y: np.minimum(x, y), 30).fit(X)
    named = AnchorMap("intersection", 30).fit(X)
    assert_allclose(annfm.transform(X), named.transform(X), atol=1e-12)
    assert repr(annfm).startswith("AnchorMap(kernel=<function ")


def test_codes_round_trip():
    X = digits_like(30, seed=9)
    one = AnchorMap("chi2", 50).fit(X)
    codes = one.codes(X)
    assert codes.dtype == np.uint8 and codes.shape == X.shape
    assert_array_equal(one.decode(codes), one.transform(X))
    assert_array_equal(one.codes(scipy.sparse.csr_matrix(X)), codes)
    # 1/8 of the memory of float32 features or less.
    assert codes.nbytes * 8 <= one.transform(X.astype(np.float32)).nbytes
    two = AnchorMap("chi2", 300, n_neighbors=2, weights="distance").fit(X)
    indices, weights = two.codes(X)
    assert indices.dtype == np.uint16 and weights.dtype == np.float32
    assert indices.shape == weights.shape == (30, 64, 2)
    assert_allclose(two.decode((indices, weights)), two.transform(X), atol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        one.decode(np.full((2, 64), 60))
    with pytest.raises(ValueError, match="codes must come from"):
        one.decode(np.zeros((2, 5), dtype=np.uint8))


def test_picklable_and_refit():
    X = digits_like(20, seed=10)
    annfm = AnchorMap("js", 10).fit(X)
    copy = pickle.loads(pickle.dumps(annfm))
    assert_array_equal(copy.transform(X), annfm.transform(X))
    assert repr(annfm) == "AnchorMap(kernel='js', n_anchors=10)"
    # fit again replaces the fitted arrays; set_params takes effect at fit
    annfm.fit(X[:, :7])
    assert annfm.anchors_.shape == (7, 10) and annfm.n_features_in_ == 7
    annfm.set_params(n_anchors=12).fit(X)
    assert annfm.anchors_.shape == (64, 12)
    assert_array_equal(annfm.set_params(n_anchors=10).fit(X).transform(X),
                       copy.transform(X))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kernel": "rbf"}, ValueError, "kernel must be one of"),
        ({"n_anchors": 1}, ValueError, "n_anchors must be >= 2"),
        ({"energy": 0.0}, ValueError, "energy must be > 0"),
        ({"energy": 1.5}, ValueError, "energy must be <= 1"),
        ({"n_neighbors": 11, "n_anchors": 10}, ValueError, "n_neighbors must be <= 10"),
        ({"n_neighbors": 0}, ValueError, "n_neighbors must be >= 1"),
        ({"anchors": "random"}, ValueError, "anchors must be one of"),
        ({"weights": "gaussian"}, ValueError, "weights must be one of"),
        ({"kernel": lambda x, y: 1.0}, ValueError, "vectorised callable"),
    ],
)
def test_bad_parameters(kwargs, error, match):
    X = digits_like(10, seed=11)
    with pytest.raises(error, match=match):
        AnchorMap(**kwargs).fit(X)


@pytest.mark.parametrize("kernel", ["chi2", "js", "hellinger", "intersection"])
def test_bad_input(kernel):
    X = digits_like(10, seed=12)
    with pytest.raises(ValueError, match="X contains negative values"):
        AnchorMap(kernel).fit(X - 0.01)
    annfm = AnchorMap(kernel, 10).fit(X)
    with pytest.raises(ValueError, match="X contains negative values"):
        annfm.transform(X - 0.01)
    with pytest.raises(ValueError, match="X has 10 features, but AnchorMap is "
                       "expecting 64 features as input"):
        annfm.transform(X[:, :10])


# -- input: parameters, callables, training data, codes, empty CSR -----------


@pytest.fixture(scope="module")
def anchor_fit():
    H = np.random.default_rng(0).random((20, 4))
    return H, km.AnchorMap(n_anchors=8, n_neighbors=2).fit(H)


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"kernel": "rbf"}, ValueError, "kernel must be one of"),
    ({"kernel": None}, ValueError, "kernel must be one of"),
    ({"n_anchors": 1}, ValueError, "n_anchors must be >= 2"),
    ({"n_anchors": 2.5}, TypeError, "n_anchors must be an int"),
    ({"anchors": "random"}, ValueError, "anchors must be one of"),
    ({"energy": 0.0}, ValueError, "energy must be > 0"),
    ({"energy": 1.5}, ValueError, "energy must be <= 1"),
    ({"n_neighbors": 9}, ValueError, "n_neighbors must be <= 8"),
    ({"n_neighbors": True}, TypeError, "n_neighbors must be an int"),
    ({"weights": "foo"}, ValueError, "weights must be one of"),
])
def test_anchor_map_fit_validates_every_parameter(anchor_fit, change, error,
                                                  match):
    args = {"kernel": "chi2", "n_anchors": 8, "n_neighbors": 2, **change}
    fmap = km.AnchorMap(**args)  # stored as given
    with pytest.raises(error, match=match):
        fmap.fit(anchor_fit[0])


def test_anchor_map_checks_a_callable_kernel():
    H = np.random.default_rng(0).random((6, 3))
    A = km.AnchorMap(np.minimum, 5).fit(H)
    assert A.n_features_out_ > 0
    for kernel in (lambda x, y: x * np.nan, lambda x, y: 1.0):
        with pytest.raises(ValueError, match=r"^kernel must be a vectorised callable"):
            km.AnchorMap(kernel, 5).fit(H)


def test_anchor_map_callable_kernel(anchor_fit):
    H, _ = anchor_fit
    B = km.AnchorMap(np.minimum, 8).fit(H)
    assert B.kernel is np.minimum
    assert np.isfinite(B.transform(H)).all()


def test_anchor_map_fit_never_freezes_the_training_data(anchor_fit):
    H, A = anchor_fit
    H = H.copy()
    B = km.AnchorMap(n_anchors=8, n_neighbors=2).fit(H)
    assert H.flags.writeable
    want = B.transform(H)
    assert_array_equal(want, A.transform(H))
    H[:] = np.nan  # the map keeps its own arrays
    assert np.isfinite(B.table_).all() and np.isfinite(B.anchors_).all()
    # lists and float32 work as training data
    C = km.AnchorMap(n_anchors=8, n_neighbors=2).fit(A.anchors_.T.tolist())
    assert C.n_features_in_ == 4


def test_anchor_decode_validates_codes(anchor_fit):
    H, A = anchor_fit
    one = km.AnchorMap(n_anchors=8).fit(H)
    codes = one.codes(H)
    Z = one.transform(H)
    for dtype in (np.uint8, np.int8, np.uint64, np.int64):
        assert_array_equal(one.decode(codes.astype(dtype)), Z)
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(codes.astype(float))
    nan_codes = codes.astype(float)
    nan_codes[0, 0] = np.nan
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(nan_codes)  # NaN indices read out of bounds before
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(codes > 0)
    with pytest.raises(ValueError, match="codes must come from"):
        one.decode(codes[0])  # 1-D: an IndexError before
    with pytest.raises(ValueError, match="codes must come from"):
        one.decode(codes[:, :, None, None])
    # codes from another map with more anchors
    other = km.AnchorMap(n_anchors=200).fit(H * 2)
    with pytest.raises(ValueError, match="out of range"):
        one.decode(other.codes(H * 2))
    indices, weights = A.codes(H)
    assert_allclose(A.decode((indices, weights)), A.transform(H), atol=1e-6)
    bad = weights.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="weights contain NaN"):
        A.decode((indices, bad))
    with pytest.raises(TypeError, match="codes weights must hold real"):
        A.decode((indices, weights.astype(str)))
    with pytest.raises(ValueError, match="codes must come from"):
        A.decode((indices, weights, weights))
    with pytest.raises(ValueError, match="codes must come from"):
        A.decode((indices, weights[:, :, :1]))


HIST = sets_and_histograms()[1]


@pytest.mark.parametrize("kernel", ["chi2", "js", "intersection", "hellinger"])
@pytest.mark.parametrize("n_neighbors, weights", [(1, "uniform"), (3, "distance")])
def test_anchor_map_of_csr_without_stored_values(kernel, n_neighbors, weights):
    """An all-zero CSR matrix (no stored value) was read as dense input: out
    of bounds, heap corruption (found by the fuzz suite)."""
    f = km.AnchorMap(kernel, 6, n_neighbors=n_neighbors, weights=weights).fit(HIST)
    Z = f.transform(scipy.sparse.csr_matrix(np.zeros_like(HIST)))
    assert scipy.sparse.issparse(Z) and Z.nnz == 0
    assert Z.shape == (len(HIST), f.n_features_out_)


# -- the ends of the float range ---------------------------------------------


@pytest.mark.parametrize("kernel", ["chi2", "js", "intersection", "hellinger"])
@pytest.mark.parametrize("anchors", ["uniform", "kmeans"])
@pytest.mark.parametrize("scale", [2.0**-600, 1e-300, 1e300, 1.7e308 / 4])
def test_anchor_map_fit_at_any_scale(kernel, anchors, scale):
    # Homogeneous kernels: the features of s x are sqrt(s) times those of x.
    H = np.random.default_rng(1).random((30, 3))
    H[:, 0] *= 4  # dimensions of different ranges
    ref = km.AnchorMap(kernel, 10, anchors=anchors).fit(H)
    big = km.AnchorMap(kernel, 10, anchors=anchors).fit(H * scale)
    Z = big.transform(H * scale)
    assert np.isfinite(Z).all()
    assert_allclose(Z / np.sqrt(scale), ref.transform(H), rtol=1e-9, atol=1e-12)
    assert_allclose(big.anchors_ / scale, ref.anchors_, rtol=1e-12)


def test_anchor_map_fit_refuses_values_too_small_for_distinct_anchors():
    with pytest.raises(ValueError, match="distinct anchors"):
        km.AnchorMap(n_anchors=10).fit(np.full((3, 2), 5e-324))


def test_anchor_map_float32_input_with_features_beyond_float32(anchor_fit):
    H, _ = anchor_fit
    # A (Mercer) kernel whose anchor features are about 1e150.
    B = km.AnchorMap(lambda x, y: 1e300 * np.minimum(x, y), 8).fit(H)
    assert np.abs(B.table_).max() > 1e100
    assert np.isfinite(B.transform(H)).all()
    with pytest.raises(ValueError, match="float32 range"):
        B.transform(H.astype(np.float32))


def test_anchor_map_fit_near_the_float_limit():
    rng = np.random.default_rng(7)
    H = rng.integers(0, 65, size=(6, 5)) / 64.0 * 1e308
    fmap = km.AnchorMap("intersection", 5, anchors="kmeans").fit(H)
    assert np.isfinite(fmap.transform(H)).all()
