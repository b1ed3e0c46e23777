"""EMKFeatures (EMK-CKSVD): the analytic gradient, the optimisation, the
kernel approximation against random Fourier features and an unlearned basis,
set features against the exact sum-match kernel, the spatial pyramid against
explicit loops, dtypes, threads, pickling and input validation."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import Bags, EMKFeatures, median_heuristic, sum_match_kernel
from kernelmaps.sets._cksvd import objective_and_gradient

from ._references import point_kernel


def clustered(n, d, seed, n_clusters=8):
    """Points around 8 random centres (spread 3, unit noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(n_clusters, d))
    return centres[rng.integers(0, n_clusters, n)] + rng.normal(size=(n, d))


def singletons(X):
    """Each row of X as a set of one point."""
    return X[:, None, :]


@pytest.fixture(scope="module")
def fitted():
    X = clustered(3000, 5, seed=0)
    return X, EMKFeatures(40, gamma=0.3, n_iter=200, rng=0).fit(X)


# ---------------------------------------------------------------- gradient


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_gradient_matches_central_differences(kernel):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 4))
    Z = rng.normal(size=(7, 4))
    gamma = 0.4
    value, grad = objective_and_gradient(X, Z, kernel, gamma)
    # the objective itself: mean residual 1 - k_Z(x)^T K_ZZ^{-1} k_Z(x)
    A = point_kernel(X, Z, kernel, gamma)
    K = point_kernel(Z, Z, kernel, gamma)
    residual = 1 - np.einsum("ij,ij->i", A, np.linalg.solve(K, A.T).T)
    assert_allclose(value, residual.mean(), rtol=1e-7)
    h = 1e-6
    numeric = np.zeros_like(Z)
    for j in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            step = np.zeros_like(Z)
            step[j, k] = h
            plus = objective_and_gradient(X, Z + step, kernel, gamma)[0]
            minus = objective_and_gradient(X, Z - step, kernel, gamma)[0]
            numeric[j, k] = (plus - minus) / (2 * h)
    assert np.abs(grad).max() > 1e-3  # not trivially zero
    assert_allclose(grad, numeric, rtol=0, atol=1e-8)


# ------------------------------------------------------------ optimisation


def test_objective_decreases(fitted):
    X, emk = fitted
    obj = emk.objective_
    assert obj.shape == (200 // 10 + 1,)  # start, then every 10 iterations
    # the monitor objective never increases (the fit rolls back and halves
    # the step when a check finds an increase) ...
    assert np.all(np.diff(obj) <= 0)
    # ... and ends well below its start
    assert obj[-1] < obj[0] - 0.05
    # the start is the objective of the initial basis (same seed) ...
    start = EMKFeatures(40, gamma=0.3, n_iter=0, rng=0).fit(X)
    assert_allclose(obj[0], start.objective_[0], rtol=1e-12)
    # ... and the end that of the returned basis on all the points (the
    # monitor sample for n <= 8192), recomputed from the features:
    # 1 - |psi(x)|^2 is the residual of the projection.
    F = emk.transform(singletons(X))
    assert_allclose(obj[-1], np.mean(1 - np.sum(F * F, axis=1)), rtol=1e-5)


def test_features_reproduce_kernel_on_the_basis(fitted):
    _, emk = fitted
    F = emk.transform(singletons(emk.basis_))
    K = point_kernel(emk.basis_, emk.basis_, "rbf", emk.gamma_)
    assert_allclose(F @ F.T, K, atol=1e-6)


def test_projection_inverts_basis_kernel():
    Z = np.random.default_rng(2).normal(size=(15, 3))
    emk = EMKFeatures(basis=Z, gamma=0.5).fit(Z)  # fit: the projection, kept
    K = point_kernel(Z, Z, "rbf", 0.5)
    G = emk.projection_
    assert_allclose(G.T @ G @ K, np.eye(15), atol=1e-8)
    assert emk.objective_.shape == (0,)


def test_projection_drops_tiny_eigenvalues():
    # a repeated basis vector makes K_ZZ singular: G stays finite and the
    # features still reproduce the kernel
    Z = np.random.default_rng(3).normal(size=(6, 3))
    Z = np.vstack([Z, Z[:1]])
    emk = EMKFeatures(basis=Z, gamma=0.5).fit(Z)
    assert np.isfinite(emk.projection_).all()
    assert np.sum(np.all(emk.projection_ == 0, axis=1)) == 1
    F = emk.transform(singletons(Z))
    assert_allclose(F @ F.T, point_kernel(Z, Z, "rbf", 0.5), atol=1e-6)


def test_fit_deterministic_and_float32_points():
    X = clustered(600, 3, seed=4)
    a = EMKFeatures(10, n_iter=30, rng=5).fit(X)
    b = EMKFeatures(10, n_iter=30, rng=np.random.default_rng(5)).fit(X)
    assert_array_equal(a.basis_, b.basis_)
    assert_array_equal(a.objective_, b.objective_)
    c = EMKFeatures(10, n_iter=30, rng=5).fit(X.astype(np.float32))
    d = EMKFeatures(10, n_iter=30, rng=5).fit(X.astype(np.float32).astype(np.float64))
    assert c.basis_.dtype == np.float64
    assert_array_equal(c.basis_, d.basis_)
    # gamma=None: the median heuristic of the training points.
    assert a.gamma_ == median_heuristic(X) and a.gamma is None


def test_fit_from_sets_and_kmeans_init():
    X = clustered(900, 4, seed=6)
    sets = [X[i:i + 90] for i in range(0, 900, 90)]
    a = EMKFeatures(12, gamma=0.3, n_iter=20, rng=1).fit(sets)
    b = EMKFeatures(12, gamma=0.3, n_iter=20, rng=1).fit(X)
    assert_array_equal(a.basis_, b.basis_)
    km = EMKFeatures(12, gamma=0.3, n_iter=0, init="kmeans", rng=1).fit(X)
    sample = EMKFeatures(12, gamma=0.3, n_iter=0, rng=1).fit(X)
    assert km.objective_[0] < sample.objective_[0]


# -------------------------------------------------- kernel approximation


def rff_gram(X, gamma, t, seed):
    """Random Fourier features of exp(-gamma |x-y|^2), written out."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=np.sqrt(2 * gamma), size=(X.shape[1], t))
    b = rng.uniform(0, 2 * np.pi, size=t)
    Z = np.sqrt(2 / t) * np.cos(X @ W + b)
    return Z @ Z.T


def test_learned_basis_beats_random_features_and_random_basis():
    X = clustered(3300, 10, seed=7)
    test, train = X[:300], X[300:]
    gamma = 0.1
    K = point_kernel(test, test, "rbf", gamma)

    def error(emk):
        F = emk.transform(singletons(test))
        return np.abs(F @ F.T - K).mean()

    learned = error(EMKFeatures(50, gamma=gamma, rng=0).fit(train))
    rff = np.mean([np.abs(rff_gram(test, gamma, 50, s) - K).mean()
                   for s in range(5)])
    unlearned = [error(EMKFeatures(50, gamma=gamma, n_iter=0, rng=s).fit(train))
                 for s in range(3)]
    # Fig. 1 of Bo & Sminchisescu: at 50 dimensions the learned basis is far
    # better than random Fourier features, and learning beats the random
    # sample it started from (rng=0) and the other samples
    assert learned < 0.2 * rff
    assert learned < 0.85 * min(unlearned)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_set_features_approximate_sum_match(kernel):
    pool, train = np.split(clustered(8000, 4, seed=8), 2)
    rng = np.random.default_rng(9)
    sets = [pool[rng.choice(4000, rng.integers(5, 40))] for _ in range(12)]
    others = [pool[rng.choice(4000, rng.integers(5, 40))] for _ in range(7)]
    gamma = 0.3 if kernel == "rbf" else 0.4
    K = sum_match_kernel(sets, others, kernel=kernel, gamma=gamma)
    errors = []
    for n_basis in (10, 40, 160):
        emk = EMKFeatures(n_basis, kernel=kernel, gamma=gamma, n_iter=100,
                          rng=0).fit(train)
        F, H = emk.transform(sets), emk.transform(others)
        assert F.shape == (12, n_basis)
        errors.append(np.abs(F @ H.T - K).max())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03


# -------------------------------------------------------------- pyramid


def pyramid_by_loops(emk, sets, positions, levels):
    """Weighted per-cell set features, by explicit loops over sets, levels
    and cells (row = first coordinate; the last cell closed at 1)."""
    rows = []
    for points, pos in zip(sets, positions):
        parts = []
        for level in range(levels + 1):
            side = 2**level
            weight = 1 / 2**levels if level == 0 else 1 / 2 ** (levels - level + 1)
            for r in range(side):
                for c in range(side):
                    lo_r, hi_r = r / side, (r + 1) / side
                    lo_c, hi_c = c / side, (c + 1) / side
                    mask = ((pos[:, 0] >= lo_r)
                            & ((pos[:, 0] < hi_r) | (r == side - 1))
                            & (pos[:, 1] >= lo_c)
                            & ((pos[:, 1] < hi_c) | (c == side - 1)))
                    if mask.any():
                        cell = emk.transform([points[mask]])[0]
                    else:
                        cell = np.zeros(emk.n_features_out_)
                    parts.append(weight * cell)
        rows.append(np.concatenate(parts))
    return np.array(rows)


@pytest.fixture(scope="module")
def pyramid_data(fitted):
    rng = np.random.default_rng(10)
    X, _ = fitted
    sizes = [1, 5, 17, 30, 9]
    sets = [X[rng.choice(len(X), n)] for n in sizes]
    positions = [rng.random((n, 2)) for n in sizes]
    positions[1][:] = rng.random((5, 2)) * 0.5  # only the top-left quarter
    positions[3][:3] = [[1.0, 1.0], [0.0, 1.0], [0.5, 0.25]]  # edges
    return sets, positions


@pytest.mark.parametrize("levels", [1, 2])
def test_pyramid_equals_loops(fitted, pyramid_data, levels):
    _, emk = fitted
    sets, positions = pyramid_data
    P = emk.transform(sets, positions, levels=levels)
    n_cells = sum(4**level for level in range(levels + 1))
    assert P.shape == (len(sets), n_cells * emk.n_features_out_)
    expected = pyramid_by_loops(emk, sets, positions, levels)
    assert_allclose(P, expected, rtol=1e-10, atol=1e-12)
    # the set in one quarter has empty cells, which give zeros
    assert np.sum(np.all(expected[1].reshape(n_cells, -1) == 0, axis=1)) >= 3
    # positions as one (total, 2) array or as Bags: the same
    packed = np.vstack(positions)
    assert_array_equal(emk.transform(sets, packed, levels=levels), P)
    assert_array_equal(emk.transform(Bags.from_list(sets),
                                     Bags.from_list(positions), levels=levels), P)


def test_pyramid_level0_is_plain_transform(fitted, pyramid_data):
    _, emk = fitted
    sets, positions = pyramid_data
    plain = emk.transform(sets)
    assert_array_equal(emk.transform(sets, positions, levels=0), plain)
    # level 0 of a pyramid is the plain feature times 1 / 2**L
    P = emk.transform(sets, positions, levels=2)
    assert_allclose(P[:, :emk.n_features_out_], plain / 4, rtol=1e-12,
                    atol=1e-14)


# ------------------------------------------------- dtypes, threads, pickling


def test_float32_and_workers(fitted, pyramid_data):
    _, emk = fitted
    sets, positions = pyramid_data
    sets32 = [s.astype(np.float32) for s in sets]
    for levels in (0, 2):
        F64 = emk.transform(sets, positions, levels=levels)
        F32 = emk.transform(sets32, positions, levels=levels)
        assert F64.dtype == np.float64
        assert F32.dtype == np.float32
        assert_allclose(F32, F64, rtol=0, atol=1e-5)
        one = emk.transform(sets32, positions, levels=levels, workers=1)
        two = emk.transform(sets32, positions, levels=levels, workers=2)
        assert_array_equal(one, two)
        assert_array_equal(emk.transform(sets, positions, levels=levels,
                                         workers=1),
                           emk.transform(sets, positions, levels=levels,
                                         workers=2))


def test_pickle_refit_repr(fitted, pyramid_data):
    X, emk = fitted
    sets, positions = pyramid_data
    clone = pickle.loads(pickle.dumps(emk))
    assert repr(clone) == repr(emk)
    assert repr(emk) == "EMKFeatures(n_basis=40, gamma=0.3, n_iter=200, rng=0)"
    assert_array_equal(clone.transform(sets, positions, levels=1),
                       emk.transform(sets, positions, levels=1))
    assert_array_equal(clone.objective_, emk.objective_)
    assert emk.n_features_in_ == 5 and emk.n_features_out_ == 40
    assert emk.kernel == "rbf" and emk.gamma_ == 0.3
    # fit again with an int seed: the same basis; set_params then fit: the
    # new value
    clone.fit(X)
    assert_array_equal(clone.basis_, emk.basis_)
    assert_array_equal(clone.objective_, emk.objective_)
    assert clone.set_params(n_basis=7, n_iter=3).fit(X).basis_.shape == (7, 5)
    given = EMKFeatures(basis=emk.basis_, gamma=0.3).fit(X)  # learns no basis
    assert_array_equal(given.transform(sets), emk.transform(sets))


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"gamma": 0.0}, ValueError, "gamma"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"gamma": np.nan}, ValueError, "gamma"),
        ({"n_basis": 0}, ValueError, "n_basis"),
        ({"n_basis": 51}, ValueError, "n_basis=51 exceeds"),
        ({"n_basis": 2.5}, TypeError, "n_basis"),
        ({"kernel": "cosine"}, ValueError, "kernel"),
        ({"init": "random"}, ValueError, "init"),
        ({"n_iter": -1}, ValueError, "n_iter"),
        ({"learning_rate": 0.0}, ValueError, "learning_rate"),
    ],
)
def test_fit_bad_parameters(kwargs, error, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    args = {"n_basis": 5, "n_iter": 2, **kwargs}
    n_basis = args.pop("n_basis")
    with pytest.raises(error, match=match):
        EMKFeatures(n_basis, **args).fit(X)


def test_fit_bad_points():
    X = np.random.default_rng(0).normal(size=(50, 3))
    X[7, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        EMKFeatures(5).fit(X)
    with pytest.raises(ValueError, match="distinct"):
        EMKFeatures(5).fit(np.ones((50, 3)))
    # a map given its basis checks its parameters at fit
    for kwargs, match in (({"gamma": -2.0}, "gamma"),
                          ({"kernel": "polynomial"}, "kernel")):
        fmap = EMKFeatures(basis=np.ones((4, 3)), **kwargs)
        with pytest.raises(ValueError, match=match):
            fmap.fit(X)


def test_transform_bad_input(fitted):
    _, emk = fitted
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(4, 5)), rng.normal(size=(3, 5))]
    positions = [rng.random((4, 2)), rng.random((3, 2))]
    with pytest.raises(ValueError, match="sets has 3 features, but EMKFeatures is "
                       "expecting 5 features as input"):
        emk.transform([rng.normal(size=(4, 3))])
    bad = [s.copy() for s in sets]
    bad[1][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"sets\[1\] contains NaN"):
        emk.transform(bad)
    with pytest.raises(ValueError, match="levels"):
        emk.transform(sets, positions, levels=-1)
    with pytest.raises(ValueError, match="needs the positions"):
        emk.transform(sets, levels=1)
    with pytest.raises(ValueError, match="2 columns"):
        emk.transform(sets, [rng.random((4, 3)), rng.random((3, 3))], levels=1)
    with pytest.raises(ValueError, match="one position per point"):
        emk.transform(sets, [rng.random((4, 2)), rng.random((2, 2))], levels=1)
    with pytest.raises(ValueError, match="6 rows"):
        emk.transform(sets, rng.random((6, 2)), levels=1)
    with pytest.raises(ValueError, match=r"\[0, 1\]\^2"):
        emk.transform(sets, [p * 1.5 for p in positions], levels=1)
    with pytest.raises(ValueError, match=r"\[0, 1\]\^2"):
        emk.transform(sets, [p - 0.5 for p in positions], levels=2)
    with pytest.raises(ValueError, match="positions contains NaN"):
        emk.transform(sets, np.full((7, 2), np.nan), levels=1)
    with pytest.raises(TypeError, match="levels"):
        emk.transform(sets, positions, levels=1.5)


def test_emk_kmeans_error_names_the_points():
    with pytest.raises(ValueError, match=r"n_basis=4 distinct centres in the points"):
        km.EMKFeatures(4, n_iter=1, init="kmeans", rng=0).fit(np.zeros((12, 2)))


def test_emk_objective_is_set_by_fit_only():
    # objective= of the old constructor is gone: fit sets objective_
    basis = np.eye(3)
    assert km.EMKFeatures(basis=basis).fit(basis).objective_.shape == (0,)
    with pytest.raises(TypeError, match="objective"):
        km.EMKFeatures(basis=basis, objective=[2.0, 1.0])


# ---------------------------------------------- extreme scales and parameters


@pytest.fixture(scope="module")
def emk_points():
    return np.random.default_rng(0).normal(size=(300, 3))


@pytest.mark.parametrize("scale", [2.0**-500, 1e-150, 2.0**500, 1e150])
def test_emk_fit_is_scale_equivariant(emk_points, scale):
    # gamma scaled with the data: the same kernel values, the same basis
    P = emk_points
    ref = km.EMKFeatures(5, gamma=0.3, n_iter=20, rng=0).fit(P)
    emk = km.EMKFeatures(5, gamma=0.3 / scale**2, n_iter=20, rng=0).fit(P * scale)
    assert_allclose(emk.basis_ / scale, ref.basis_, rtol=1e-8, atol=1e-8)
    assert_allclose(emk.objective_, ref.objective_, rtol=1e-8)
    sets = [P[:5], P[5:40]]
    F = emk.transform([s * scale for s in sets])
    assert_allclose(F, ref.transform(sets), atol=1e-8)
    assert_allclose(emk.projection_, ref.projection_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e160, 1e300])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_emk_default_gamma_at_extreme_scales_is_finite(emk_points, scale, kernel):
    # the reproducer: points * 1e160 gave NaN features (with gamma = 1 / d,
    # the default then)
    P = emk_points * scale
    emk = km.EMKFeatures(5, kernel=kernel, gamma=1 / P.shape[1], n_iter=20,
                         rng=0).fit(P)
    assert np.isfinite(emk.basis_).all() and np.isfinite(emk.projection_).all()
    assert np.isfinite(emk.objective_).all()
    F = emk.transform([P[:5], P[5:40], emk.basis_[:1]])
    assert np.isfinite(F).all()
    positions = [np.random.default_rng(1).random((len(s), 2))
                 for s in (P[:5], P[5:40], emk.basis_[:1])]
    F = emk.transform([P[:5], P[5:40], emk.basis_[:1]], positions, levels=2)
    assert np.isfinite(F).all()
    # gamma=None: the median heuristic, where it is within float64's range
    # (1 / median L1 distance), else a ValueError saying so (1 / median
    # squared distance)
    default = km.EMKFeatures(5, kernel=kernel, n_iter=0, rng=0)
    if kernel == "laplacian":
        assert default.fit(P).gamma_ == km.median_heuristic(P, kernel=kernel)
    else:
        with pytest.raises(ValueError, match="beyond the float64 range"):
            default.fit(P)


@pytest.mark.parametrize("scale", [1e-40, 1e-25, 1e25, 1e35])
def test_emk_float32_points_at_extreme_scales(emk_points, scale):
    P = emk_points
    ref = km.EMKFeatures(5, gamma=0.3, n_iter=5, rng=0).fit(P)
    emk = km.EMKFeatures(basis=ref.basis_ * scale, gamma=0.3 / scale**2)
    sets = [(P[:5] * scale).astype(np.float32), (P[5:9] * scale).astype(np.float32)]
    F = emk.fit(sets).transform(sets)
    assert F.dtype == np.float32 and np.isfinite(F).all()
    want = ref.transform([P[:5].astype(np.float32), P[5:9].astype(np.float32)])
    assert_allclose(F, want, atol=1e-5 if scale > 1e-39 else 1e-3)


def test_emk_basis_beyond_float32_with_float32_points(emk_points):
    emk = km.EMKFeatures(basis=emk_points[:4] * 1e100, gamma=1e-200)
    F = emk.fit(emk_points[:3]).transform([emk_points[:3].astype(np.float32)])
    assert F.dtype == np.float32 and np.isfinite(F).all()


def test_emk_levels_are_bounded(emk_points):
    emk = km.EMKFeatures(4, n_iter=1, rng=0).fit(emk_points)
    sets = [emk_points[:5]]
    positions = [np.full((5, 2), 0.5)]
    with pytest.raises(ValueError, match="levels must be <= 16"):
        emk.transform(sets, positions, levels=10**12)  # hung before
    with pytest.raises(ValueError, match="output entries"):
        emk.transform(sets, positions, levels=15)
    with pytest.raises(TypeError, match="levels must be an int"):
        emk.transform(sets, positions, levels=True)
    assert emk.transform(sets, positions, levels=np.int64(1)).shape == (1, 20)


def test_emk_fit_survives_absurd_learning_rates():
    P = np.random.default_rng(0).normal(size=(50, 3))
    for lr in (1e30, 1e300):  # LinAlgError from the broken kernel matrix before
        emk = km.EMKFeatures(4, n_iter=25, learning_rate=lr, rng=0).fit(P)
        assert np.isfinite(emk.basis_).all()
        assert np.all(np.diff(emk.objective_) <= 0)
        assert len(emk.objective_) == 4  # start, after 10, 20 and 25


def test_emk_basis_far_from_the_origin():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(14, 2))
    fit = km.EMKFeatures(3, n_iter=3, rng=0).fit(P + 1e8)
    ref = km.EMKFeatures(3, n_iter=3, rng=0).fit(P)
    # translation-invariant kernel: the same basis, shifted
    assert_allclose(fit.basis_ - 1e8, ref.basis_, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"gamma": 1.7976931348623157e308},
                                    {"learning_rate": 1.7976931348623157e308}])
def test_emk_fit_with_huge_parameters_without_warning(kwargs):
    P = np.random.default_rng(0).normal(size=(12, 2))
    fmap = km.EMKFeatures(4, n_iter=3, rng=0, kernel="laplacian", **kwargs).fit(P)
    assert np.isfinite(fmap.basis_).all()
