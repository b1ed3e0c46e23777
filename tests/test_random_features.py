"""Random Fourier features of points and sets (RFF, RDF, DRDF), and the
set-means engine under them, against NumPy references and the exact kernels
they approximate."""

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    Bags,
    DoublyRandomDistributionFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
    gaussian_expected_kernel,
    mmd,
    mmd_kernel,
    sum_match_kernel,
)
from kernelmaps._engine.set_means import set_means

from ._helpers import sets, sets_of_sizes
from ._references import point_kernel


def reference_means(sets, centres, phases, kind, gamma):
    """Mean over each set of f(x, column): cos(x . column + phase) or the
    point kernel of x and the column, in float64."""
    out = []
    for x in sets:
        x = x.astype(np.float64)
        if kind == "cos":
            f = np.cos(x @ centres + phases)
        else:
            f = point_kernel(x, centres.T, kind, gamma)
        out.append(f.mean(0))
    return np.array(out)


SIZES = {
    "singletons": [1] * 9,
    "ragged": [1, 2, 3, 4, 5, 7, 1, 13],
    "large": [700, 3, 260, 1],
}


@pytest.mark.parametrize("kind", ["cos", "rbf", "laplacian"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize(("d", "t"), [(1, 1), (3, 53), (30, 300)])
def test_set_means_against_reference(simd_path, kind, dtype, sizes, d, t):
    sets = sets_of_sizes(SIZES[sizes], d, dtype, seed=d + t)
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=0.5, size=(d, t))
    phases = rng.uniform(0, 2 * np.pi, t)
    gamma = 0.7 / d
    bags = Bags.from_list(sets)
    expected = reference_means(sets, centres.astype(dtype), phases.astype(dtype),
                               kind, gamma)
    out1 = set_means(bags, centres, phases, kind=kind, gamma=gamma, n_threads=1)
    out2 = set_means(bags, centres, phases, kind=kind, gamma=gamma, n_threads=2)
    assert out1.dtype == dtype and out1.shape == (len(sets), t)
    assert_array_equal(out1, out2)
    tol = 1e-13 if dtype == np.float64 else 3e-6
    assert_allclose(out1, expected, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("n", "t"), [(1, 1), (7, 3), (33, 301)])
def test_rows_with_many_features_go_through_blas(simd_path, dtype, n, t):
    # Rows (singleton sets) with d >= 256 features: BLAS GEMM, then the
    # phases, cosine and scale in place; t values that are not a multiple of
    # the vector width exercise the tail.
    d = 257
    rng = np.random.default_rng(n + t)
    X = rng.normal(size=(n, d)).astype(dtype)
    centres = rng.normal(scale=0.1, size=(d, t))
    phases = rng.uniform(0, 2 * np.pi, t)
    rows = Bags(X, np.arange(n + 1))
    out1 = set_means(rows, centres, phases, kind="cos", scale=0.5, n_threads=1)
    out2 = set_means(rows, centres, phases, kind="cos", scale=0.5, n_threads=2)
    expected = 0.5 * np.cos(X.astype(np.float64) @ centres.astype(dtype)
                            + phases.astype(dtype))
    assert out1.dtype == dtype and out1.shape == (n, t)
    assert_array_equal(out1, out2)
    tol = 1e-13 if dtype == np.float64 else 3e-5
    assert_allclose(out1, expected, rtol=0, atol=tol)


@pytest.mark.parametrize(("dtype", "tol"), [(np.float64, 4e-16), (np.float32, 2e-7)])
def test_cosine_accuracy(simd_path, dtype, tol):
    # The engine's cosine against NumPy's over a wide range of arguments,
    # including values next to the half-integer multiples of pi where the
    # quadrant rounds either way.
    rng = np.random.default_rng(0)
    v = np.concatenate([
        np.linspace(-1e4, 1e4, 200_001),
        (np.arange(-3000, 3000) + 0.5) * np.pi,
        rng.uniform(-50, 50, 10_000),
    ]).astype(dtype)
    bags = Bags(v[:, None], np.arange(v.size + 1))
    out = set_means(bags, np.ones((1, 1)), np.zeros(1), kind="cos")[:, 0]
    assert_allclose(out, np.cos(v.astype(np.float64)), rtol=0, atol=tol)
    huge = Bags(np.array([[1e300], [-3e18]]), np.arange(3))
    assert np.all(np.abs(set_means(huge, np.ones((1, 1)), np.zeros(1),
                                   kind="cos")) <= 1)


def error_ratio(make_features, K, ts=(100, 10_000), n_seeds=8):
    """RMS error of the Gram of the features at t = ts[0] over that at
    t = ts[1], pooled over seeds: sqrt(ts[1] / ts[0]) for an O(t^(-1/2))
    error (10 for the default; the bounds used below, 5 to 20, rule out
    t^(-1/4), 3.2, and t^(-1), 100)."""
    errors = [
        np.sqrt(np.mean([((Z @ Z.T - K) ** 2).mean()
                         for Z in (make_features(t, seed) for seed in range(n_seeds))]))
        for t in ts
    ]
    return errors[0] / errors[1]


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_rff_converges_at_rate_one_over_sqrt_t(kernel):
    X = np.random.default_rng(0).normal(size=(60, 4))
    gamma = 0.3
    K = point_kernel(X, X, kernel, gamma)
    # iid draws: the Monte Carlo rate (the other draws beat it, see
    # test_fourier_draws.py)
    ratio = error_ratio(lambda t, seed: RandomFourierFeatures(
        t, kernel=kernel, gamma=gamma, draw="iid", form="offset",
        rng=seed).fit_transform(X), K)
    assert 5 < ratio < 20


def test_rff_values():
    rff = RandomFourierFeatures(20, gamma=0.4, rng=5).fit(np.eye(3))
    X = np.random.default_rng(1).normal(size=(11, 3))
    expected = math.sqrt(2 / 20) * np.cos(X @ rff.weights_ + rff.offsets_)
    assert_allclose(rff.transform(X), expected, rtol=0, atol=1e-15)
    assert rff.weights_.shape == (3, 20) and rff.offsets_.shape == (20,)
    assert np.all((rff.offsets_ >= 0) & (rff.offsets_ < 2 * np.pi))


def test_rff_frequency_distributions():
    # Gaussian N(0, 2 gamma) and Cauchy of scale gamma (median |w| = gamma).
    gamma = 0.7
    w = RandomFourierFeatures(20_000, gamma=gamma, rng=0).fit(np.eye(5)).weights_
    assert abs(w.var() / (2 * gamma) - 1) < 0.02
    w = RandomFourierFeatures(20_000, kernel="laplacian", gamma=gamma,
                              rng=0).fit(np.eye(5)).weights_
    assert abs(np.median(np.abs(w)) / gamma - 1) < 0.02


def two_level_sets(n_sets, size, d, seed):
    """Sets drawn from Gaussians N(m_i, s_i^2 I): means, variances, sets."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=0.8, size=(n_sets, d))
    variances = rng.uniform(0.2, 0.6, n_sets)
    sets = [m + math.sqrt(v) * rng.normal(size=(size, d))
            for m, v in zip(means, variances, strict=True)]
    return means, variances, sets


def test_rdf_converges_to_the_sum_match_kernel():
    _, _, sets = two_level_sets(12, 40, 3, seed=0)
    gamma = 0.4
    K = sum_match_kernel(sets, gamma=gamma)
    ratio = error_ratio(lambda t, seed: RandomDistributionFeatures(
        t, gamma=gamma, draw="iid", form="offset", rng=seed).fit_transform(sets),
        K)
    assert 5 < ratio < 20


def test_rdf_distances_approximate_mmd():
    _, _, sets = two_level_sets(10, 50, 2, seed=1)
    gamma = 0.5
    D = mmd(sets, gamma=gamma)
    errors = {}
    for t in (100, 10_000):
        F = RandomDistributionFeatures(t, gamma=gamma, rng=3).fit_transform(sets)
        dist = np.sqrt(np.maximum(((F[:, None] - F[None]) ** 2).sum(-1), 0))
        errors[t] = np.abs(dist - D).mean()
    assert errors[10_000] < 0.02
    assert errors[10_000] < errors[100] / 4


def test_rdf_theorem_1_error_shrinks_with_set_and_feature_count():
    # Against the kernel of the distributions the sets are drawn from (the
    # expected kernel between the Gaussians), the error is
    # O(1/sqrt(n) + 1/sqrt(t)) (seed 000, Theorem 1): 16x more points per set
    # and 16x more features give about 4x less error. Were either term not
    # shrinking, the ratio would stay near 1-2.
    gamma, d = 0.5, 2
    errors = {}
    for size, t in ((25, 1000), (400, 16_000)):
        squared = []
        for seed in range(3):
            means, variances, sets = two_level_sets(16, size, d, seed=seed)
            K = gaussian_expected_kernel(means, variances, kernel="rbf",
                                         gamma=gamma)
            F = RandomDistributionFeatures(t, gamma=gamma, rng=seed).fit_transform(sets)
            squared.append(((F @ F.T - K) ** 2).mean())
        errors[size] = math.sqrt(np.mean(squared))
    assert 2.5 < errors[25] / errors[400] < 7, errors


def test_drdf_converges_to_the_mmd_kernel():
    _, _, sets = two_level_sets(12, 40, 3, seed=3)
    gamma, gamma2 = 0.4, 2.0
    K = mmd_kernel(sets, gamma=gamma, gamma2=gamma2)
    # Both levels with t features; t from 64 to 1600 (the second level's
    # frequencies are t x t): about 5x less error, while t^(-1/4) gives 2.2
    # and t^(-1) 25.
    ratio = error_ratio(lambda t, seed: DoublyRandomDistributionFeatures(
        t, t, gamma=gamma, gamma2=gamma2, rng=seed).fit_transform(sets), K,
        ts=(64, 1600))
    assert 3 < ratio < 9


def test_drdf_levels_compose():
    _, _, sets = two_level_sets(5, 10, 3, seed=4)
    drdf = DoublyRandomDistributionFeatures(30, 20, gamma=0.3, gamma2=1.5,
                                            rng=7).fit(sets)
    assert_array_equal(drdf.transform(sets),
                       drdf.rff_.transform(drdf.rdf_.transform(sets)))
    assert (drdf.gamma_, drdf.gamma2_) == (0.3, 1.5)
    assert (drdf.n_features_in_, drdf.n_features_out_) == (3, 20)


@pytest.mark.parametrize("make", [
    lambda rng: RandomFourierFeatures(50, gamma=0.2, rng=rng).fit(np.eye(3)),
    lambda rng: RandomDistributionFeatures(50, rng=rng, gamma=1 / 3).fit([np.eye(3)]),
    lambda rng: DoublyRandomDistributionFeatures(50, 40, rng=rng,
                                                 gamma=1 / 3).fit([np.eye(3)]),
])
def test_seed_and_workers_give_identical_features(make):
    sets = sets_of_sizes([1, 7, 300, 4, 2], 3, np.float64, seed=5)
    data = np.vstack(sets) if isinstance(make(0), RandomFourierFeatures) else sets
    a = make(11).transform(data, workers=1)
    b = make(11).transform(data, workers=2)
    c = make(np.random.default_rng(11)).transform(data)
    assert_array_equal(a, b)
    assert_array_equal(a, c)
    assert not np.array_equal(a, make(12).transform(data))


def test_float32_stays_float32():
    sets = sets_of_sizes([5, 9, 1], 4, np.float32, seed=6)
    rdf = RandomDistributionFeatures(64, gamma=0.5, rng=0).fit([np.eye(4)])
    F32 = rdf.transform(sets)
    F64 = rdf.transform([s.astype(np.float64) for s in sets])
    assert F32.dtype == np.float32 and F64.dtype == np.float64
    assert_allclose(F32, F64, rtol=0, atol=2e-6)
    rff = RandomFourierFeatures(8, rng=0, gamma=1.0)
    assert rff.fit_transform(sets[0]).dtype == np.float32


def test_rdf_accepts_bags_and_lists_alike():
    sets = sets_of_sizes([3, 5], 2, np.float64, seed=7)
    rdf = RandomDistributionFeatures(16, rng=0, gamma=1 / 2).fit([np.eye(2)])
    assert_array_equal(rdf.transform(sets), rdf.transform(Bags.from_list(sets)))
    assert rdf.gamma_ == 0.5  # None: 1 / dim


def test_picklable_refit_repr():
    for m in (RandomFourierFeatures(8, gamma=0.25, rng=0).fit(np.eye(3)),
              RandomDistributionFeatures(8, kernel="laplacian", rng=0,
                                         gamma=1 / 3).fit([np.eye(3)]),
              DoublyRandomDistributionFeatures(8, 6, rng=0,
                                               gamma=1 / 3).fit([np.eye(3)])):
        copy = pickle.loads(pickle.dumps(m))
        sets = sets_of_sizes([2, 3], 3, np.float64, seed=8)
        data = sets[0] if isinstance(m, RandomFourierFeatures) else sets
        train = np.eye(3) if isinstance(m, RandomFourierFeatures) else [np.eye(3)]
        assert_array_equal(copy.transform(data), m.transform(data))
        # refit with an int seed: the same draw; set_params then fit: the
        # new value
        assert_array_equal(m.fit(train).transform(data), copy.transform(data))
        m.set_params(gamma=2.0).fit(train)
        assert m.gamma_ == 2.0
        assert not np.array_equal(m.transform(data), copy.transform(data))
        assert type(m).__name__ in repr(m)
    assert repr(RandomFourierFeatures(8, gamma=0.25, rng=0).fit(np.eye(3))) == (
        "RandomFourierFeatures(n_components=8, gamma=0.25, rng=0)")


@pytest.mark.parametrize("rng", [0, np.random.Generator(np.random.MT19937(3)),
                                 np.random.Generator(np.random.Philox(4))])
def test_pickles_are_small_and_draw_the_same_features(rng):
    # A map pickles the generator state that drew it, not its arrays.
    m = RandomFourierFeatures(2000, rng=rng, gamma=1.0).fit(np.eye(500))
    data = pickle.dumps(m)
    assert len(data) < 8000 < m.weights_.nbytes
    copy = pickle.loads(data)
    assert_array_equal(copy.weights_, m.weights_)
    assert_array_equal(copy.offsets_, m.offsets_)
    assert copy.weights_.flags.writeable  # ordinary arrays
    # The state was taken before the draw: the caller's generator moved on.
    if not isinstance(rng, int):
        assert not np.array_equal(
            RandomFourierFeatures(2000, rng=rng, gamma=1.0).fit(np.eye(500)).weights_,
            m.weights_)


def test_unpickling_checks_the_draw():
    m = RandomFourierFeatures(8, rng=0, gamma=1.0).fit(np.eye(4))
    m._draw.crc ^= 1  # as if this NumPy drew a different stream
    with pytest.raises(RuntimeError, match="differ"):
        pickle.loads(pickle.dumps(m))


def _rff(dim):
    return RandomFourierFeatures(5, gamma=1.0).fit(np.eye(dim))


def _rdf(dim):
    return RandomDistributionFeatures(5, gamma=0.5).fit([np.eye(dim)])


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: RandomFourierFeatures(5).fit(np.zeros((3, 0))), ValueError,
     "no feature"),
    (lambda: RandomFourierFeatures(0).fit(np.eye(2)), ValueError, "n_components"),
    (lambda: RandomFourierFeatures(2.5).fit(np.eye(2)), TypeError, "n_components"),
    (lambda: RandomFourierFeatures(5, gamma=0.0).fit(np.eye(2)), ValueError, "gamma"),
    (lambda: RandomFourierFeatures(5, gamma=-1.0).fit(np.eye(2)),
     ValueError, "gamma"),
    (lambda: RandomFourierFeatures(5, kernel="cosine").fit(np.eye(2)),
     ValueError, "kernel"),
    (lambda: RandomDistributionFeatures(5, gamma=np.nan).fit([np.eye(2)]),
     ValueError, "gamma"),
    (lambda: DoublyRandomDistributionFeatures(5, 0).fit([np.eye(2)]),
     ValueError, "n_components"),
    (lambda: DoublyRandomDistributionFeatures(5, 5, gamma2=0).fit(
        [np.eye(2)]), ValueError, "gamma"),
    (lambda: _rff(3).transform(np.ones((4, 2))), ValueError,
     "X has 2 features, but RandomFourierFeatures is expecting 3 features "
     "as input"),
    (lambda: _rff(3).transform(np.ones(3)), ValueError, "2-D"),
    (lambda: _rff(1).transform([[np.nan]]), ValueError, "NaN"),
    (lambda: _rff(1).transform([["a"]]), TypeError, "X"),
    (lambda: _rdf(3).transform([np.ones((4, 2))]), ValueError, "X has 2 features"),
    (lambda: _rdf(2).transform([np.ones((0, 2))]), ValueError, "empty"),
    (lambda: _rdf(2).transform([np.ones((3, 2)) * np.inf]), ValueError,
     "NaN or infinity"),
    (lambda: DoublyRandomDistributionFeatures(5, 4, gamma=0.5).fit(
        [np.eye(2)]).transform([np.ones((3, 1))]), ValueError,
     "X has 1 features"),
    (lambda: _rdf(2).transform([np.ones((3, 2))], workers=0), ValueError, "workers"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- arguments named, huge values refused ------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"gamma2": -1}, ValueError, "gamma2 must be > 0"),
    ({"gamma2": 0.0}, ValueError, "gamma2 must be > 0"),
    ({"gamma2": np.inf}, ValueError, "gamma2 must be finite"),
    ({"gamma2": "1"}, TypeError, "gamma2 must be a real number"),
    ({"n_components2": 0}, ValueError, "n_components2 must be >= 1"),
    ({"n_components2": True}, TypeError, "n_components2 must be an int"),
    ({"n_components2": 2.5}, TypeError, "n_components2 must be an int"),
    ({"gamma": -1}, ValueError, r"^gamma must be > 0"),
    ({"n_components": 0}, ValueError, r"^n_components must be >= 1"),
    ({"rng": True}, TypeError, "rng must be None"),
    ({"rng": -1}, ValueError, "rng"),
    ({"rng": "seed"}, TypeError, "rng must be None"),
])
def test_drdf_names_its_parameters(kwargs, error, match):
    args = {"n_components": 5, "n_components2": 5, **kwargs}
    fmap = km.DoublyRandomDistributionFeatures(args.pop("n_components"),
                                               args.pop("n_components2"), **args)
    with pytest.raises(error, match=match):
        fmap.fit([np.eye(2)])


def test_ragged_points_name_x():
    fmap = km.RandomFourierFeatures(8, rng=0, gamma=1.0).fit(np.eye(2))
    with pytest.raises(ValueError, match=r"^X could not be made an array"):
        fmap.transform([[0.5, 0.25], [0.5]])


def test_documented_none_defaults():
    # RandomFourierFeatures: gamma=None is the median heuristic of the
    # training points; DRDF: gamma2=None is the median heuristic of the RDF
    # features of the training sets.
    X = np.random.default_rng(0).normal(size=(20, 4))
    assert km.RandomFourierFeatures(8, gamma=None, rng=0).fit(X).gamma_ == (
        km.median_heuristic(X))
    train = sets()
    drdf = km.DoublyRandomDistributionFeatures(8, 6, gamma2=None, rng=0).fit(train)
    assert drdf.gamma_ == km.median_heuristic(train)
    assert drdf.gamma2_ == km.median_heuristic(drdf.rdf_.transform(train))


def test_drdf_gamma2_none_is_the_median_heuristic_of_the_rdf_features():
    sets = [np.random.default_rng(i).normal(size=(6, 2)) for i in range(5)]
    drdf = km.DoublyRandomDistributionFeatures(8, 4, gamma2=None, rng=0).fit(sets)
    assert drdf.gamma2_ == km.median_heuristic(drdf.rdf_.transform(sets))
    # gamma2 given: kept
    drdf = km.DoublyRandomDistributionFeatures(8, 4, gamma2=1 / 8, rng=0).fit(sets)
    assert drdf.gamma2_ == 1 / 8


@pytest.mark.parametrize("call", [
    lambda: km.RandomFourierFeatures(10**400, rng=0).fit(np.ones((3, 2))),
    lambda: km.RandomDistributionFeatures(10**400, rng=0).fit(sets()),
    lambda: km.DoublyRandomDistributionFeatures(8, 10**400, rng=0).fit(sets()),
    lambda: km.DoublyRandomDistributionFeatures(10**400, 8, rng=0).fit(sets()),
])
def test_huge_sizes_are_a_value_error_not_an_overflow_error(call):
    with pytest.raises(ValueError, match=r"about 10\*\*400 entries"):
        call()


@pytest.mark.parametrize("call", [
    lambda: km.RandomFourierFeatures(10**7, rng=0).fit(np.ones((3, 2))),
    lambda: km.RandomDistributionFeatures(10**7, rng=0).fit(sets()),
    lambda: km.ExpChi2Features(10**7, rng=0).fit(np.full((3, 2), 0.5)),
    lambda: km.RandomFourierFeatures(100, rng=0).fit(np.ones((3, 2))).transform(
        np.ones((10**6, 2))),
    lambda: km.SlicedWassersteinFeatures(10**5, n_quantiles=10**3, rng=0).fit(
        sets()),
], ids=["RFF", "RDF", "ExpChi2", "RFF.transform", "SWF"])
def test_maps_check_memory_before_they_allocate(call, monkeypatch):
    # sizes beyond this process's memory (here a limit of 256 MiB) are a
    # ValueError naming them, before anything is allocated: the draw with
    # its temporaries, and the features transform would return
    from kernelmaps import _validation

    monkeypatch.setattr(_validation, "memory_limit",
                        lambda: (2**28, "this machine"))
    with pytest.raises(ValueError, match=r"entries \(.*\): .* GiB, more than "
                                         r"the 0.25 GiB of memory of this "
                                         "machine"):
        call()


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="an address-space limit (ulimit -v) is Linux's")
def test_a_process_memory_limit_is_the_limit():
    # RandomFourierFeatures(3 * 10**8) on 3 features: 7 GiB of frequencies,
    # 27 GiB with the draw's temporaries; under ulimit -v 4 GiB it was
    # NumPy's MemoryError, or the kernel's OOM killer without a limit
    code = (
        "import resource, numpy as np, kernelmaps as km\n"
        "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
        "try:\n"
        "    km.RandomFourierFeatures(3 * 10**8).fit(np.ones((5, 3)))\n"
        "except ValueError as err:\n"
        "    print(err)\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "GiB of memory of this process (its address-space limit" in out.stdout


def test_random_frequencies_that_overflow_are_refused():
    for kernel in ("rbf", "laplacian"):
        with pytest.raises(ValueError, match=r"gamma=.* is too large"):
            km.RandomFourierFeatures(8, kernel=kernel, gamma=1.7e308, rng=0).fit(
                np.eye(3))
    with pytest.raises(ValueError, match=r"gamma2=.* is too large"):
        km.DoublyRandomDistributionFeatures(4, 4, gamma2=1.7e308, rng=0).fit(
            [np.eye(2)])
    H = np.random.default_rng(0).random((4, 3))
    # frequencies of scale sqrt(beta): finite, and so are the features
    fmap = km.ExpChi2Features(8, beta=1.7e308, rng=0).fit(H)
    assert np.isfinite(fmap.transform(H)).all()


def test_fourier_arguments_that_overflow_are_refused():
    # x W beyond the float range: the engine's cosine of inf was garbage
    rff = km.RandomFourierFeatures(4, gamma=1e300, rng=0).fit(np.eye(3))
    P = np.random.default_rng(0).normal(size=(5, 3))
    assert np.isfinite(rff.transform(P)).all()
    with pytest.raises(ValueError, match="X has values too large"):
        rff.transform(P * 1e300)
    rdf = km.RandomDistributionFeatures(4, gamma=1.0, rng=0).fit([np.eye(3)])
    with pytest.raises(ValueError, match="X has values too large"):
        rdf.transform([np.full((2, 3), 1e308)])
    with pytest.raises(ValueError, match="X has values too large"):
        rdf.transform([np.full((2, 3), 3e38, dtype=np.float32)])
    H = np.random.default_rng(0).random((4, 3))
    fmap = km.ExpChi2Features(8, beta=1e306, rng=0,
                              chi2_map=km.HomogeneousKernelMap()).fit(H)
    with pytest.raises(ValueError, match="X has values too large"):
        fmap.transform(H * 1.7e308)  # features ~ sqrt(x), frequencies ~ 1e153
    # pickled and back, the check still runs
    back = pickle.loads(pickle.dumps(rff))
    with pytest.raises(ValueError, match="X has values too large"):
        back.transform(P * 1e300)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rff_blas_path_does_not_depend_on_the_chunks(monkeypatch, dtype):
    # From d = 256 the products go through BLAS, whose values may depend on
    # the rows of one call: the calls are fixed blocks of rows, whatever
    # the time-sized chunks and the threads.
    from kernelmaps._engine import schedule

    X = np.random.default_rng(0).normal(size=(1500, 256)).astype(dtype)
    rff = RandomFourierFeatures(256, gamma=0.01, rng=0).fit(X)
    monkeypatch.setattr(schedule, "FIRST_CHUNK_WORK", 1.0)
    monkeypatch.setattr(schedule, "CHUNK_SECONDS", 1e-6)  # one task a chunk
    small = rff.transform(X, workers=2)
    monkeypatch.setattr(schedule, "FIRST_CHUNK_WORK", 1e12)  # one chunk
    for workers in (1, 2):
        assert_array_equal(rff.transform(X, workers=workers), small)
