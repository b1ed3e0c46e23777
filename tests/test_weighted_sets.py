"""Weighted sets (a `Bags` with point weights) in the exact set kernels:
sum_match_kernel, mmd, mmd_kernel, median_heuristic, and the kernels of
objects over them (NystroemMap, SetKernel, mmd_test), against NumPy
references written here."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    Bags,
    NystroemMap,
    median_heuristic,
    mmd,
    mmd_kernel,
    renyi_divergence,
    sum_match_kernel,
)
from kernelmaps._engine import pair_sums as engine

KERNELS = ["rbf", "laplacian", "linear", "polynomial"]
PARAMS = {"degree": 3, "coef0": 0.5}

# (sets, smallest and largest set, d, which engine path): "small" one
# group (`one_group`), "tiles" several groups, "segments" a set cut into
# pieces (larger than a group), "products" the BLAS path (d >= 128).
SHAPES = {
    "small": (7, 1, 9, 3),
    "tiles": (45, 1, 61, 5),
    "segments": (3, 300, 1300, 2),
    "products": (23, 5, 25, 131),
}


def point_kernel(x, y, kernel, gamma, degree=3, coef0=0.5):
    """k(x, y) between the rows of x and y, float64, by broadcasting."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if kernel == "rbf":
        return np.exp(-gamma * ((x[:, None] - y[None]) ** 2).sum(-1))
    if kernel == "laplacian":
        return np.exp(-gamma * np.abs(x[:, None] - y[None]).sum(-1))
    products = x @ y.T
    if kernel == "linear":
        return products
    return (gamma * products + coef0) ** degree


def reference(X, wX, Y, wY, kernel, gamma, normalize=True, **params):
    """The weighted sum-match kernel: ``sum_x sum_y w_x w_y k(x, y)``,
    divided by the total weights with `normalize`, a pair of sets at a
    time."""
    K = np.empty((len(X), len(Y)))
    for i, (x, wx) in enumerate(zip(X, wX, strict=True)):
        for j, (y, wy) in enumerate(zip(Y, wY, strict=True)):
            value = wx @ point_kernel(x, y, kernel, gamma, **params) @ wy
            K[i, j] = value / (wx.sum() * wy.sum()) if normalize else value
    return K


def reference_mmd2(X, wX, Y, wY, kernel, gamma, **params):
    """Biased MMD^2 of the weighted mean embeddings, at least 0."""
    K = reference(X, wX, Y, wY, kernel, gamma, **params)
    kx = [reference([x], [w], [x], [w], kernel, gamma, **params)[0, 0]
          for x, w in zip(X, wX, strict=True)]
    ky = [reference([y], [w], [y], [w], kernel, gamma, **params)[0, 0]
          for y, w in zip(Y, wY, strict=True)]
    return np.maximum(np.add.outer(kx, ky) - 2 * K, 0.0)


def random_sets(rng, shape, dtype, shift=0.0):
    n_sets, low, high, d = SHAPES[shape] if isinstance(shape, str) else shape
    return [(rng.normal(size=(int(rng.integers(low, high + 1)), d)) + shift)
            .astype(dtype) for _ in range(n_sets)]


def random_weights(rng, sets, zeros=True):
    """Non-negative weights, some 0 (never all of a set's)."""
    weights = []
    for s in sets:
        w = rng.uniform(0.05, 3.0, len(s))
        if zeros and len(s) > 1:
            w[rng.random(len(s)) < 0.2] = 0.0
            w[rng.integers(len(s))] = rng.uniform(0.5, 2.0)
        weights.append(w)
    return weights


def tolerance(dtype, R):
    return (1e-12 if dtype == np.float64 else 1e-5) * max(np.abs(R).max(), 1e-300)


def gamma_for(kernel, d):
    return {"rbf": 0.4 / d, "laplacian": 0.3 / d, "polynomial": 0.5 / d,
            "linear": None}[kernel]


@pytest.fixture
def paths(monkeypatch):
    """The engine paths a call takes: "small", "products", "tiles"."""
    taken = set()

    def spy(name, fn):
        def wrapped(*args, **kwargs):
            taken.add(name)
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(engine._impl, "one_group",
                        spy("small", engine._impl.one_group))
    monkeypatch.setattr(engine._impl, "product_sums",
                        spy("products", engine._impl.product_sums))
    monkeypatch.setattr(engine._impl, "tile_sums",
                        spy("tiles", engine._impl.tile_sums))
    return taken


_REFERENCES = {}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_match_kernel_weighted(simd_path, paths, shape, kernel, dtype):
    rng = np.random.default_rng(len(shape) + len(kernel))
    X = random_sets(rng, shape, dtype)
    Y = random_sets(rng, shape, dtype, shift=0.3)[: max(2, SHAPES[shape][0] // 2)]
    wX, wY = random_weights(rng, X), random_weights(rng, Y)
    BX, BY = Bags.from_list(X, weights=wX), Bags.from_list(Y, weights=wY)
    gamma = gamma_for(kernel, X[0].shape[1])
    params = {"kernel": kernel, "gamma": gamma, **PARAMS}
    ref_gamma = 1.0 if gamma is None else gamma
    for normalize in (True, False):
        # the references of this data, the same on every code path: once
        key = (shape, kernel, np.dtype(dtype).str)
        if key not in _REFERENCES:
            _REFERENCES[key] = (
                reference(X, wX, Y, wY, kernel, ref_gamma, False, **PARAMS),
                reference(X, wX, X, wX, kernel, ref_gamma, False, **PARAMS))
        RXY, RXX = _REFERENCES[key]
        if normalize:
            RXY = RXY / np.outer([w.sum() for w in wX], [w.sum() for w in wY])
            RXX = RXX / np.outer(*[[w.sum() for w in wX]] * 2)
        for workers in (1, 2):
            K = sum_match_kernel(BX, BY, normalize=normalize, workers=workers,
                                 **params)
            assert K.dtype == dtype and K.shape == RXY.shape
            assert_allclose(K, RXY, rtol=0, atol=tolerance(dtype, RXY))
            K = sum_match_kernel(BX, normalize=normalize, workers=workers,
                                 **params)
            assert_allclose(K, RXX, rtol=0, atol=tolerance(dtype, RXX))
            if shape != "segments":  # (sets in pieces: their sums are
                # folded in another order for K[i, j] and K[j, i], with
                # weights or not)
                assert_array_equal(K, K.T)
    expected = {"small": {"small"}, "tiles": {"tiles"}, "segments": {"tiles"},
                "products": ({"products"} if kernel in ("rbf", "polynomial")
                             else {"tiles"})}[shape]
    assert kernel == "linear" or paths == expected


@pytest.mark.parametrize("shape", ["small", "tiles", "products"])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales(shape, kernel, scale):
    # rbf and laplacian of points times s with gamma / s^2 (/ s): the same
    # kernel values.
    rng = np.random.default_rng(3)
    X = random_sets(rng, shape, np.float64)
    Y = random_sets(rng, shape, np.float64, shift=0.5)[:5]
    wX, wY = random_weights(rng, X), random_weights(rng, Y)
    gamma = gamma_for(kernel, X[0].shape[1])
    power = 2 if kernel == "rbf" else 1
    BX = Bags.from_list([x * scale for x in X], weights=wX)
    BY = Bags.from_list([y * scale for y in Y], weights=wY)
    for normalize in (True, False):
        R = reference(X, wX, Y, wY, kernel, gamma, normalize)
        K = sum_match_kernel(BX, BY, kernel=kernel, gamma=gamma / scale**power,
                             normalize=normalize, workers=2)
        assert_allclose(K, R, rtol=0, atol=tolerance(np.float64, R))
    R = np.sqrt(reference_mmd2(X, wX, Y, wY, kernel, gamma))
    D = mmd(BX, BY, kernel=kernel, gamma=gamma / scale**power)
    assert_allclose(D, R, rtol=0, atol=1e-7 * R.max())


@pytest.mark.parametrize("shape", ["small", "tiles", "products"])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mmd_weighted(shape, kernel, dtype):
    rng = np.random.default_rng(11)
    X = random_sets(rng, shape, dtype)
    Y = random_sets(rng, shape, dtype, shift=0.4)[:6]
    wX, wY = random_weights(rng, X), random_weights(rng, Y)
    BX, BY = Bags.from_list(X, weights=wX), Bags.from_list(Y, weights=wY)
    gamma = gamma_for(kernel, X[0].shape[1])
    ref_gamma = 1.0 if gamma is None else gamma
    params = {"kernel": kernel, "gamma": gamma, **PARAMS}
    R2 = reference_mmd2(X, wX, Y, wY, kernel, ref_gamma, **PARAMS)
    R2XX = reference_mmd2(X, wX, X, wX, kernel, ref_gamma, **PARAMS)
    np.fill_diagonal(R2XX, 0.0)
    # MMD^2 is a difference of mean kernel values: its error is relative
    # to those.
    scale = np.abs(reference(X, wX, X, wX, kernel, ref_gamma, **PARAMS)).max()
    atol = (1e-12 if dtype == np.float64 else 1e-5) * scale
    for workers in (1, 2):
        D2 = mmd(BX, BY, squared=True, workers=workers, **params)
        assert D2.dtype == dtype
        assert_allclose(D2, R2, rtol=0, atol=atol)
        D2 = mmd(BX, squared=True, workers=workers, **params)
        assert_allclose(D2, R2XX, rtol=0, atol=atol)
        D = mmd(BX, BY, workers=workers, **params)
        assert_allclose(D**2, R2, rtol=0, atol=2 * atol)
        K = mmd_kernel(BX, BY, gamma2=0.7, workers=workers, **params)
        assert_allclose(K, np.exp(-0.7 * R2), rtol=0, atol=atol)
        K = mmd_kernel(BX, gamma2=0.7, workers=workers, **params)
        assert_allclose(K, np.exp(-0.7 * R2XX), rtol=0, atol=atol)
        assert_array_equal(np.diag(K), 1.0)


def repeated(sets, counts):
    """The sets with each point repeated its count (an integer) times."""
    return [np.repeat(s, c.astype(np.int64), axis=0) for s, c in
            zip(sets, counts, strict=True)]


@pytest.mark.parametrize("shape", ["small", "tiles", "products"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_integer_weights_are_repeated_points(shape, kernel):
    rng = np.random.default_rng(5)
    X = random_sets(rng, shape, np.float64)
    Y = random_sets(rng, shape, np.float64, shift=0.2)[:5]
    counts = [rng.integers(0, 4, len(s)).astype(np.float64) for s in X + Y]
    for c in counts:
        c[rng.integers(len(c))] = 2.0  # a positive total
    cX, cY = counts[:len(X)], counts[len(X):]
    BX, BY = Bags.from_list(X, weights=cX), Bags.from_list(Y, weights=cY)
    RX, RY = repeated(X, cX), repeated(Y, cY)
    params = {"kernel": kernel, "gamma": gamma_for(kernel, X[0].shape[1]),
              **PARAMS}
    for normalize in (True, False):
        R = sum_match_kernel(RX, RY, normalize=normalize, **params)
        K = sum_match_kernel(BX, BY, normalize=normalize, **params)
        assert_allclose(K, R, rtol=1e-12, atol=1e-12 * np.abs(R).max())
        R = sum_match_kernel(RX, normalize=normalize, **params)
        K = sum_match_kernel(BX, normalize=normalize, **params)
        assert_allclose(K, R, rtol=1e-12, atol=1e-12 * np.abs(R).max())
    scale = np.abs(sum_match_kernel(RX, **params)).max()
    for squared in (True, False):
        R = mmd(RX, RY, squared=squared, **params)
        D = mmd(BX, BY, squared=squared, **params)
        # (MMD: the square root of a difference of kernel means)
        assert_allclose(D**2 if not squared else D, R**2 if not squared else R,
                        rtol=0, atol=1e-12 * scale)
    assert_allclose(mmd_kernel(BX, BY, **params), mmd_kernel(RX, RY, **params),
                    rtol=0, atol=1e-12 * scale)
    assert_allclose(mmd_kernel(BX, **params), mmd_kernel(RX, **params),
                    rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("kernel", KERNELS)
def test_zero_weights_are_removed_points(kernel):
    rng = np.random.default_rng(8)
    X = random_sets(rng, "tiles", np.float64)
    wX = random_weights(rng, X)
    kept = [x[w > 0] for x, w in zip(X, wX, strict=True)]
    kept_w = [w[w > 0] for w in wX]
    params = {"kernel": kernel, "gamma": gamma_for(kernel, 5), **PARAMS}
    A = Bags.from_list(X, weights=wX)
    B = Bags.from_list(kept, weights=kept_w)
    for normalize in (True, False):
        R = sum_match_kernel(B, normalize=normalize, **params)
        assert_allclose(sum_match_kernel(A, normalize=normalize, **params), R,
                        rtol=0, atol=1e-12 * np.abs(R).max())
    scale = np.abs(sum_match_kernel(B, **params)).max()
    assert_allclose(mmd(A, squared=True, **params), mmd(B, squared=True, **params),
                    rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scaled_weights(kernel, dtype):
    # A constant factor on the weights: nothing changes where they are
    # normalised; the plain sums scale by its square.
    rng = np.random.default_rng(9)
    X = random_sets(rng, "tiles", dtype)
    wX = random_weights(rng, X)
    params = {"kernel": kernel, "gamma": gamma_for(kernel, 5), **PARAMS}
    A = Bags.from_list(X, weights=wX)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for c in (3.7, 1e-100, 1e100):
        B = Bags.from_list(X, weights=[w * c for w in wX])
        R = sum_match_kernel(A, **params)
        assert_allclose(sum_match_kernel(B, **params), R, rtol=0,
                        atol=tol * np.abs(R).max())
        assert_allclose(mmd(B, squared=True, **params), mmd(A, squared=True, **params),
                        rtol=0, atol=tol * np.abs(R).max())
        assert_allclose(mmd_kernel(B, **params), mmd_kernel(A, **params),
                        rtol=0, atol=tol)
        if dtype == np.float32 and c != 3.7:
            continue  # (the plain sums beyond float32's range)
        R = sum_match_kernel(A, normalize=False, **params).astype(np.float64)
        assert_allclose(sum_match_kernel(B, normalize=False, **params) / c**2, R,
                        rtol=0, atol=tol * np.abs(R).max())


def test_equal_weights_are_unweighted():
    rng = np.random.default_rng(1)
    X = random_sets(rng, "tiles", np.float64)
    A = Bags.from_list(X)
    B = A.with_weights(np.ones(A.n_points))
    for kernel in KERNELS:
        R = sum_match_kernel(A, kernel=kernel)
        assert_allclose(sum_match_kernel(B, kernel=kernel), R, rtol=0,
                        atol=1e-12 * np.abs(R).max())
    assert median_heuristic(B) == median_heuristic(A)
    assert median_heuristic(B.with_weights(np.full(A.n_points, 0.25))) == \
        median_heuristic(A)


def test_mixed_weighted_and_unweighted():
    # An unweighted Y beside a weighted X weighs 1 a point.
    rng = np.random.default_rng(2)
    X = random_sets(rng, "small", np.float64)
    Y = random_sets(rng, "small", np.float64)
    wX = random_weights(rng, X)
    K = sum_match_kernel(Bags.from_list(X, weights=wX), Y, gamma=0.3)
    R = reference(X, wX, Y, [np.ones(len(y)) for y in Y], "rbf", 0.3)
    assert_allclose(K, R, rtol=0, atol=1e-12)


def test_weighted_set_errors():
    rng = np.random.default_rng(0)
    X = random_sets(rng, "small", np.float64)
    weights = random_weights(rng, X)
    weights[2] = np.zeros(len(X[2]))
    with pytest.raises(ValueError, match=r"X\[2\].*weights.*all 0"):
        sum_match_kernel(Bags.from_list(X, weights=weights))
    B = Bags.from_list(X, weights=random_weights(rng, X))
    with pytest.raises(ValueError, match="unbiased"):
        mmd(B, squared=True, unbiased=True)
    with pytest.raises(ValueError, match="unbiased"):
        mmd(X, B, squared=True, unbiased=True)
    # The kNN divergences refuse weights.
    with pytest.raises(ValueError, match="weights"):
        renyi_divergence(B, k=1)
    with pytest.raises(ValueError, match="weights"):
        km.sets.renyi_divergence_both(X, B, k=1)
    with pytest.raises(ValueError, match="weights"):
        NystroemMap(2, kernel="renyi", kernel_params={"k": 1}).fit(B)
    with pytest.raises(ValueError, match="weights"):
        km.mmd_test(B, B, kernel="renyi", kernel_params={"k": 1})


def test_set_kernel_refuses_weights_for_renyi():
    SetKernel = set_kernel_class()
    rng = np.random.default_rng(0)
    X = random_sets(rng, "small", np.float64)
    B = Bags.from_list(X, weights=random_weights(rng, X))
    with pytest.raises(ValueError, match="weights"):
        SetKernel(kernel="renyi", k=1).fit(B)


def set_kernel_class():
    """kernelmaps.sklearn.SetKernel, or a skip without scikit-learn."""
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    return SetKernel


def weighted_median_reference(values, weights):
    """The rule of `median_heuristic`, by a loop."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    total = sum(weights)
    running = 0.0
    for rank, i in enumerate(order):
        running += weights[i]
        if running >= total / 2:
            if running == total / 2:
                return (values[i] + values[order[rank + 1]]) / 2
            return values[i]
    raise AssertionError


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_median_heuristic_weighted(kernel):
    rng = np.random.default_rng(4)
    X = random_sets(rng, (4, 3, 20, 3), np.float64)
    wX = random_weights(rng, X)
    B = Bags.from_list(X, weights=wX)
    points, w = B.points[B.weights > 0], B.weights[B.weights > 0]
    distances, pair_weights = [], []
    for a in range(len(points)):
        for b in range(a + 1, len(points)):
            diff = points[a] - points[b]
            distances.append((diff**2).sum() if kernel == "rbf" else np.abs(diff).sum())
            pair_weights.append(w[a] * w[b])
    expected = 1.0 / weighted_median_reference(distances, pair_weights)
    assert_allclose(median_heuristic(B, kernel=kernel), expected, rtol=1e-13)
    # Zero weights: the points removed; a power of two on the weights: the
    # same value.
    kept = Bags(points, np.array([0, len(points)]), w)
    assert median_heuristic(kept, kernel=kernel) == median_heuristic(B, kernel=kernel)
    assert median_heuristic(B.with_weights(B.weights * 2.0**-40), kernel=kernel) \
        == median_heuristic(B, kernel=kernel)
    # gamma=None of the kernels on weighted sets: this rule on Y (X).
    gamma = median_heuristic(B, kernel=kernel)
    assert_array_equal(sum_match_kernel(B, kernel=kernel),
                       sum_match_kernel(B, kernel=kernel, gamma=gamma))
    assert_array_equal(mmd(X, B, kernel=kernel),
                       mmd(X, B, kernel=kernel, gamma=gamma))
    assert_array_equal(mmd_kernel(B, kernel=kernel),
                       mmd_kernel(B, kernel=kernel, gamma=gamma))


def test_median_heuristic_weighted_sample():
    # More points than the sample: the same draw as without weights among
    # the points of positive weight, then the weighted median.
    rng = np.random.default_rng(6)
    points = rng.normal(size=(300, 2))
    w = rng.uniform(0.1, 2.0, 300)
    B = Bags(points, np.array([0, 300]), w)
    rows = np.sort(np.random.default_rng(3).choice(300, 40, replace=False))
    p, pw = points[rows], w[rows]
    distances, pair_weights = [], []
    for a in range(40):
        for b in range(a + 1, 40):
            distances.append(((p[a] - p[b]) ** 2).sum())
            pair_weights.append(pw[a] * pw[b])
    expected = 1.0 / weighted_median_reference(distances, pair_weights)
    assert_allclose(median_heuristic(B, sample=40, rng=3), expected, rtol=1e-13)


def test_median_heuristic_weighted_example():
    # Three points of weights 3, 1, 3: the pair of the two heavy ones (0, 3)
    # outweighs the other two pairs.
    B = Bags.from_list([np.array([[0.0], [1.0], [3.0]])], weights=[[3.0, 1.0, 3.0]])
    assert median_heuristic(B) == 1 / 9
    # Weights 2, 1, 2: cumulative weights 2, 4 of 8 at the distances 1, 4:
    # exactly half at 4, the mean of 4 and 9.
    B = B.with_weights([2.0, 1.0, 2.0])
    assert median_heuristic(B) == 1 / 6.5


def integer_pair(rng, n_sets, d):
    X = random_sets(rng, (n_sets, 2, 9, d), np.float64)
    counts = [rng.integers(0, 4, len(s)).astype(np.float64) for s in X]
    for c in counts:
        c[0] = 1.0
    return Bags.from_list(X, weights=counts), Bags.from_list(repeated(X, counts))


@pytest.mark.parametrize("kernel", ["mean_map", "mmd"])
def test_nystroem_integer_weights(kernel):
    rng = np.random.default_rng(12)
    W, R = integer_pair(rng, 30, 3)
    landmarks = np.array([1, 4, 7, 12, 20, 28])
    a = NystroemMap(6, kernel=kernel, gamma=0.4, landmarks=landmarks).fit(W)
    b = NystroemMap(6, kernel=kernel, gamma=0.4, landmarks=landmarks).fit(R)
    assert a.components_.weights is not None
    assert_allclose(a.transform(W), b.transform(R), rtol=0, atol=1e-10)
    # gamma=None: the weighted median heuristic of the training sets.
    c = NystroemMap(6, kernel=kernel, landmarks=landmarks).fit(W)
    assert c.params_["gamma"] == median_heuristic(W)


def test_set_kernel_weighted():
    SetKernel = set_kernel_class()
    rng = np.random.default_rng(13)
    W, R = integer_pair(rng, 12, 2)
    for kernel in ("mean_map", "mmd"):
        a = SetKernel(kernel=kernel, gamma=0.5)
        b = SetKernel(kernel=kernel, gamma=0.5)
        assert_allclose(a.fit_transform(W), b.fit_transform(R), rtol=0,
                        atol=1e-12)
        assert_allclose(a.transform(W[:5]), b.transform(R[:5]), rtol=0,
                        atol=1e-12)


@pytest.mark.parametrize("kernel", ["mean_map", "mmd"])
def test_mmd_test_integer_weights(kernel):
    rng = np.random.default_rng(14)
    WX, RX = integer_pair(rng, 14, 2)
    WY, RY = integer_pair(rng, 11, 2)
    params = ({"gamma": 0.5} if kernel == "mean_map"
              else {"gamma": 1.0, "kernel_params": {"gamma": 0.5}})
    a = km.mmd_test(WX, WY, kernel=kernel, n_resamples=39, rng=0, **params)
    b = km.mmd_test(RX, RY, kernel=kernel, n_resamples=39, rng=0, **params)
    assert_allclose(a.statistic, b.statistic, rtol=1e-10, atol=1e-12)
    assert a.pvalue == b.pvalue
    # The default scales on weighted sets (the weighted point median).
    km.mmd_test(WX, WY, kernel=kernel, n_resamples=19, rng=0)


def test_unweighted_unchanged():
    # The unweighted engine path never sees weights: the same calls give
    # the same bits as a weighted Bags without weights (None).
    rng = np.random.default_rng(15)
    X = random_sets(rng, "tiles", np.float32)
    A = Bags.from_list(X)
    assert A.weights is None
    K = sum_match_kernel(A, gamma=0.3)
    assert_array_equal(K, sum_match_kernel(A.with_weights(None), gamma=0.3))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_product_forms_weighted(monkeypatch, dtype):
    # The BLAS path's three forms of a group pair: the products of the
    # points, of the points centred (far from 0), and the difference tiles
    # (the bound of the products not met), each with weights.
    forms = set()
    product_sums = engine._impl.product_sums

    def spy(*args):
        forms.update(np.asarray(args[12])[:, 2].tolist())
        return product_sums(*args)

    monkeypatch.setattr(engine._impl, "product_sums", spy)
    rng = np.random.default_rng(21)
    for shift, gamma in ((0.0, 0.002), (40.0, 0.002), (0.0, 0.5)):
        X = random_sets(rng, "products", dtype, shift=shift)
        wX = random_weights(rng, X)
        B = Bags.from_list(X, weights=wX)
        for normalize in (True, False):
            R = reference(X, wX, X, wX, "rbf", gamma, normalize)
            K = sum_match_kernel(B, gamma=gamma, normalize=normalize, workers=2)
            assert_allclose(K, R, rtol=0, atol=tolerance(dtype, R))
            R = reference(X[:9], wX[:9], X[9:], wX[9:], "rbf", gamma, normalize)
            K = sum_match_kernel(B[:9], B[9:], gamma=gamma, normalize=normalize)
            assert_allclose(K, R, rtol=0, atol=tolerance(dtype, R))
    assert forms == {engine._impl.PRODUCTS, engine._impl.CENTRED,
                     engine._impl.EXACT}


def test_extreme_weights():
    # Weights near the float64 maximum (their totals overflow) and
    # subnormal ones: the normalised kernels as with unit weights; the
    # plain sums that overflow are a ValueError.
    rng = np.random.default_rng(22)
    X = random_sets(rng, "small", np.float64)
    wX = random_weights(rng, X)
    A = Bags.from_list(X, weights=wX)
    for c in (2.0**1020 / 3.0, 5e-324 * 7):
        B = Bags.from_list(X, weights=[np.round(w * 10) * c for w in wX])
        R = reference(X, [np.round(w * 10) for w in wX], X,
                      [np.round(w * 10) for w in wX], "rbf", 0.3)
        assert_allclose(sum_match_kernel(B, gamma=0.3), R, rtol=0, atol=1e-12)
        assert_allclose(mmd_kernel(B, gamma=0.3),
                        mmd_kernel(B.with_weights(np.round(A.weights * 10)),
                                   gamma=0.3), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="weights"):
        sum_match_kernel(A.with_weights(A.weights * 1e300), gamma=0.3,
                         normalize=False)


def test_set_specs_carry_weights():
    # pool, take, as_float64 and value_keys of the set kernels' specs keep
    # the point weights (unweighted beside weighted: weight 1 a point).
    from kernelmaps._spec import SPECS

    rng = np.random.default_rng(23)
    X = random_sets(rng, "small", np.float32)
    wX = random_weights(rng, X)
    A = Bags.from_list(X, weights=wX)
    B = Bags.from_list(random_sets(rng, (3, 2, 5, 3), np.float32))
    for name in ("mean_map", "mmd"):
        spec = SPECS[name](name)
        assert spec.check(A).weights is not None
        Z = spec.pool(A, B)
        assert_array_equal(Z.weights, np.concatenate([A.weights,
                                                      np.ones(B.n_points)]))
        assert_array_equal(spec.as_float64(A).weights, A.weights)
        index = np.array([1, 4, 8])
        T = spec.take(Z, index)
        for k, i in enumerate(index):
            assert_array_equal(T.weights[T.offsets[k]:T.offsets[k + 1]],
                               Z.weights[Z.offsets[i]:Z.offsets[i + 1]])
        assert_array_equal(spec.take(Z, slice(2, 5)).weights,
                           Z.weights[Z.offsets[2]:Z.offsets[5]])
        keys = spec.value_keys(A)
        top = np.abs(A.points).max()
        means = np.array([w @ (x.astype(np.float64) / float(top)) / w.sum()
                          for x, w in zip(X, wX, strict=True)])
        assert_allclose(keys[:, :3], means, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="weights"):
        SPECS["renyi"]("renyi").check(A)


def test_weighted_beside_lazy_sets_refused():
    # Weighted sets are computed in memory only: beside lazy Dask sets (the
    # lazy path would drop their weights), a TypeError naming them.
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(24)
    X = Bags.from_list(random_sets(rng, "small", np.float64))
    lazy = Bags(da.from_array(X.points, chunks=(10, 3)), X.offsets)
    W = X.with_weights(rng.uniform(0.5, 1.0, X.n_points))
    for f in (sum_match_kernel, mmd, mmd_kernel):
        with pytest.raises(TypeError, match="Y is a weighted Bags"):
            f(lazy, W, gamma=0.5)
        with pytest.raises(TypeError, match="weighted"):
            f(lazy.with_weights(W.weights), gamma=0.5)


# -- the block paths on weighted sets ----------------------------------------


def fit_for(spec_name, W, **params):
    """A NystroemMap of the kernel `spec_name` fitted on the weighted sets W
    where its kernel takes them, else on their points without weights."""
    from kernelmaps._spec import SPECS

    landmarks = np.array([1, 4, 7, 12, 20, 28])
    takes = SPECS[spec_name].weighted
    fmap = NystroemMap(6, kernel=spec_name, landmarks=landmarks, rng=0, **params)
    return fmap.fit(W if takes else W.with_weights(None)), takes


@pytest.mark.parametrize("kernel", ["mean_map", "mmd", "sliced_wasserstein",
                                    "renyi"])
def test_nystroem_progress_on_weighted_sets(monkeypatch, kernel):
    # transform(progress=True) runs on blocks of whole sets (tiny blocks
    # here, so that there are several); each keeps its weights where the
    # kernel's spec takes weights, and is refused as without blocks where
    # it does not.
    pytest.importorskip("tqdm")
    import kernelmaps._transforms as transforms

    monkeypatch.setattr(transforms, "TRANSFORM_BLOCK_VALUES", 24)
    rng = np.random.default_rng(31)
    W, R = integer_pair(rng, 30, 3)
    params = {"kernel_params": {"k": 1}} if kernel == "renyi" else {}
    fmap, takes = fit_for(kernel, W, **params)
    if not takes:
        with pytest.raises(ValueError, match="X is a Bags with point weights"):
            fmap.transform(W)
        with pytest.raises(ValueError, match="X is a Bags with point weights"):
            fmap.transform(W, progress=True)
        return
    Z = fmap.transform(W)
    for workers in (1, 2):
        assert_allclose(fmap.transform(W, progress=True, workers=workers), Z,
                        rtol=0, atol=1e-12)
    with given_without_weights():
        assert_allclose(fmap.transform(R, progress=True), Z, rtol=0, atol=1e-10)


def given_without_weights():
    """The warning of a tool fitted on weighted sets and given sets without
    weights (here the repeated points, which are the same sets)."""
    return pytest.warns(UserWarning, match="X has no point weights, but .* was "
                                           "fitted on weighted sets")


@pytest.mark.parametrize("landmarks", ["leverage", "kmeans++"])
@pytest.mark.parametrize("kernel", ["mean_map", "mmd"])
def test_nystroem_fit_weighted_landmark_rules(kernel, landmarks):
    # The landmark rules on weighted sets: integer weights give the
    # landmarks and features of the repeated points (the leverage scores
    # from the weighted kernel blocks, k-means++ on weighted RDF means).
    rng = np.random.default_rng(32)
    W, R = integer_pair(rng, 30, 3)
    a = NystroemMap(6, kernel=kernel, gamma=0.4, landmarks=landmarks,
                    rng=5).fit(W)
    b = NystroemMap(6, kernel=kernel, gamma=0.4, landmarks=landmarks,
                    rng=5).fit(R)
    assert_array_equal(a.component_indices_, b.component_indices_)
    assert a.components_.weights is not None
    assert_allclose(a.transform(W), b.transform(R), rtol=0, atol=1e-10)


def test_set_kernel_weighted_test_sets():
    # Weighted test sets against unweighted training sets, and the other
    # way: as the repeated points.
    SetKernel = set_kernel_class()
    rng = np.random.default_rng(33)
    W, R = integer_pair(rng, 12, 2)
    for kernel in ("mean_map", "mmd"):
        a = SetKernel(kernel=kernel, gamma=0.5).fit(R[:6])
        assert_allclose(a.transform(W[6:]), a.transform(R[6:]), rtol=0,
                        atol=1e-12)
        b = SetKernel(kernel=kernel, gamma=0.5).fit(W[:6])
        with given_without_weights():
            assert_allclose(b.transform(R[6:]), a.transform(R[6:]), rtol=0,
                            atol=1e-12)
    # gamma=None: the weighted median heuristic of the training sets
    c = SetKernel().fit(W)
    assert c.gamma_ == median_heuristic(W)


@pytest.fixture
def on_blocks(monkeypatch):
    """The objects per block of the calls of mmd_test that take its block
    path (kernel blocks within the working memory)."""
    from kernelmaps._two_sample import resampling

    sizes = []
    plan = resampling.make_plan

    def spy(*args, **kwargs):
        out = plan(*args, **kwargs)
        if out.blocks:
            sizes.append(out.size)
        return out

    monkeypatch.setattr(resampling, "make_plan", spy)
    return sizes


@pytest.mark.parametrize("method", ["permutation", "wild_bootstrap",
                                    "aggregated", "fuse"])
@pytest.mark.parametrize("kernel", ["mean_map", "mmd"])
def test_mmd_test_weighted_in_blocks(monkeypatch, on_blocks, kernel, method):
    # A working memory that holds blocks of the kernel only (blocks of
    # fewer objects than the package's least, for several of them): the
    # statistics of weighted sets from blocks are those of the whole
    # matrices, and integer weights those of the repeated points.
    from kernelmaps._two_sample import resampling

    monkeypatch.setattr(resampling, "MIN_BLOCK", 8)
    rng = np.random.default_rng(34)
    WX, RX = integer_pair(rng, 40, 2)
    WY, RY = integer_pair(rng, 40 if method == "wild_bootstrap" else 36, 2)
    grid = method in ("aggregated", "fuse")
    params = {"kernel": kernel, "method": method, "rng": 3, "workers": 1,
              "gamma": [0.5, 1.0] if grid else 0.5,
              "n_resamples": (199, 199) if method == "aggregated" else 199}
    if kernel == "mmd":
        params["kernel_params"] = {"gamma": 0.5}
    whole = km.mmd_test(WX, WY, **params)
    assert not on_blocks
    with km.config_context(working_memory=0.25):
        blocks = km.mmd_test(WX, WY, progress=True, **params)
    assert on_blocks and max(on_blocks) < 30  # several blocks
    repeated_points = km.mmd_test(RX, RY, **params)
    # (the aggregated tests' products in float32)
    rtol = 1e-5 if grid else 1e-12
    for other in (blocks, repeated_points):
        assert_allclose(other.statistic, whole.statistic, rtol=rtol, atol=1e-12)
        assert_array_equal(other.pvalue, whole.pvalue)


@pytest.mark.parametrize("method", ["linear", "permutation", "wild_bootstrap"])
@pytest.mark.parametrize("fmap", ["rdf", "nystroem"])
def test_mmd_test_on_features_weighted(fmap, method):
    # The tests through a feature map (the linear one, and the resampling
    # tests on the features' linear kernel): weighted sets (and a weighted
    # X beside a list of arrays for Y, pooled with its weights to fit the
    # map) as the repeated points.
    from kernelmaps._spec import pool_any

    rng = np.random.default_rng(35)
    WX, RX = integer_pair(rng, 40, 2)
    WY, RY = integer_pair(rng, 40, 2)

    def make():
        if fmap == "rdf":
            return km.RandomDistributionFeatures(64, gamma=0.5, rng=0)
        return NystroemMap(8, gamma=0.5, landmarks=np.arange(0, 64, 8))

    params = {"method": method}
    if method != "linear":
        params.update(n_resamples=99, rng=0)
    b = km.mmd_test(RX, RY, feature_map=make(), **params)
    for X, Y in ((WX, WY), (WX, list(RY))):
        a = km.mmd_test(X, Y, feature_map=make(), **params)
        assert_allclose(a.statistic, b.statistic, rtol=1e-10, atol=1e-15)
        assert_allclose(a.pvalue, b.pvalue, rtol=1e-8)
    Z = pool_any(WX, list(RY))
    assert_array_equal(Z.weights, np.concatenate([WX.weights,
                                                  np.ones(RY.n_points)]))


def test_weighted_beside_lazy_sets_refused_everywhere():
    # Weighted sets in memory beside lazy ones, and lazy weighted sets, are
    # refused before a path rebuilds blocks of sets from points and offsets
    # (which would drop the weights).
    da = pytest.importorskip("dask.array")
    from kernelmaps._spec import computed

    rng = np.random.default_rng(36)
    X = Bags.from_list(random_sets(rng, (8, 2, 6, 3), np.float64))
    lazy = Bags(da.from_array(X.points, chunks=(10, 3)), X.offsets)
    W = X.with_weights(rng.uniform(0.5, 1.0, X.n_points))
    for f in (sum_match_kernel, mmd, mmd_kernel):  # (the lazy Gram blocks)
        with pytest.raises(TypeError, match="X is a weighted Bags"):
            f(W, lazy, gamma=0.5)
    for kernel in ("mean_map", "mmd"):
        with pytest.raises(TypeError, match="X is a weighted Bags"):
            km.mmd_test(W, lazy, kernel=kernel, gamma=0.5, n_resamples=9)
        with pytest.raises(TypeError, match="Y is a weighted Bags"):
            km.mmd_test(lazy, W, kernel=kernel, gamma=0.5, n_resamples=9)
        with pytest.raises(TypeError, match="weights"):
            km.mmd_test(lazy.with_weights(W.weights), lazy, kernel=kernel,
                        gamma=0.5, n_resamples=9)
    with pytest.raises(ValueError, match="weights"):
        km.mmd_test(lazy, lazy.with_weights(W.weights), kernel="renyi",
                    kernel_params={"k": 1}, n_resamples=9)
    fmap = NystroemMap(4, gamma=0.5, rng=0).fit(W)
    with pytest.raises(TypeError, match="weights"):
        fmap.transform(lazy.with_weights(W.weights))
    # computed() keeps weights (the lazy paths never give it any)
    Z = computed(lazy.with_weights(W.weights))
    assert_array_equal(Z.weights, W.weights)
    assert_array_equal(Z.points, W.points)


def test_sliced_features_progress_on_weighted_sets(monkeypatch):
    # SlicedWassersteinFeatures.transform(progress=True) runs on blocks of
    # whole sets, each with its weights: the same features as in one call,
    # and as the repeated points.
    pytest.importorskip("tqdm")
    import kernelmaps._transforms as transforms

    monkeypatch.setattr(transforms, "TRANSFORM_BLOCK_VALUES", 24)
    W, R = integer_pair(np.random.default_rng(32), 30, 3)
    fmap = km.SlicedWassersteinFeatures(n_projections=7, n_quantiles=5, rng=0).fit(W)
    Z = fmap.transform(W)
    assert_allclose(fmap.transform(W, progress=True), Z, rtol=0, atol=1e-12)
    with given_without_weights():
        assert_allclose(fmap.transform(R, progress=True), Z, rtol=0, atol=1e-12)
