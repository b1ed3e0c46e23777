"""NystroemMap: Nystroem features of every exact kernel of the package,
against a NumPy Nystroem of NumPy kernels, the kernels it approximates, and
the clip projection of indefinite ones."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import Bags, NystroemMap

from ._helpers import random_sets, sets_of_sizes
from ._references import additive_kernel, sum_match

# -- NumPy references --------------------------------------------------------


def floored(K):
    """Eigenvectors of K kept by the map, and K with only their spectrum:
    positive eigenvalues above a quarter of the largest negative one's
    magnitude (and above rounding)."""
    w, U = np.linalg.eigh((K + K.T) / 2)
    cut = max(w.max() * len(w) * np.finfo(float).eps, 0.25 * max(-w.min(), 0))
    keep = w > cut
    return U[:, keep], (U[:, keep] * w[keep]) @ U[:, keep].T


def nystroem_reference(K_nm, K_mm):
    """K_nm K_mm^+ K_mn with K_mm's negative eigenvalues clipped."""
    w, U = np.linalg.eigh((K_mm + K_mm.T) / 2)
    keep = w > w.max() * len(w) * np.finfo(float).eps
    P = (U[:, keep] / w[keep]) @ U[:, keep].T
    return K_nm @ P @ K_nm.T


def histograms(n, d, seed, dtype=np.float64):
    H = np.random.default_rng(seed).random((n, d)) ** 3
    return (H / H.sum(1, keepdims=True)).astype(dtype)


def renyi_kernel(A, B, nys):
    """The map's Renyi divergence kernel between A and B, unprojected."""
    if B is None:
        D = km.renyi_divergence(A)
        S = (D + D.T) / 2
    else:
        S = (km.renyi_divergence(A, B) + km.renyi_divergence(B, A).T) / 2
    return np.exp(-(np.maximum(S, 0) / nys.params_["scale"]) ** 2)


# -- against the references ------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("workers", [1, 2])
def test_mean_map_features_are_the_numpy_nystroem(dtype, workers):
    sets = sets_of_sizes([3, 7, 1, 12, 5, 9, 4, 11, 2, 6, 13], 3, dtype, seed=1)
    index = np.array([1, 4, 6, 9])
    nys = NystroemMap(4, kernel="mean_map", kernel_params={"gamma": 0.3},
                      landmarks=index).fit(sets, workers=workers)
    Z = nys.transform(sets, workers=workers)
    assert Z.dtype == dtype and Z.shape == (11, 4)
    K = sum_match(sets, [sets[i] for i in index], "rbf", 0.3)
    expected = nystroem_reference(K, K[index])
    tol = 1e-10 if dtype == np.float64 else 1e-4
    assert_allclose(Z.astype(np.float64) @ Z.T.astype(np.float64), expected,
                    atol=tol)
    assert_array_equal(nys.component_indices_, index)
    assert nys.kernel == "mean_map"
    assert repr(nys) == ("NystroemMap(n_components=4, kernel_params={'gamma': 0.3}, "
                         "landmarks=array([1, 4, 6, 9]))")


@pytest.mark.parametrize("sparse", [False, True])
def test_chi2_features_are_the_numpy_nystroem(sparse):
    H = histograms(23, 7, seed=2)
    H[3, :4] = 0
    X = scipy.sparse.csr_matrix(H) if sparse else H
    nys = NystroemMap(9, kernel="chi2", rng=0).fit(X)
    index = nys.component_indices_
    assert len(np.unique(index)) == 9
    Z = nys.transform(X)
    K = additive_kernel("chi2", H, H[index])
    assert_allclose(Z @ Z.T, nystroem_reference(K, K[index]), atol=1e-12)


KERNELS = ["mean_map", "mmd", "renyi", "chi2", "intersection", "hellinger",
           "js", "exp_chi2", "expected"]


def data_for(kernel, n, seed):
    rng = np.random.default_rng(seed)
    if kernel in ("mean_map", "mmd", "renyi"):
        return [rng.normal(loc=i % 3, scale=1 + i % 2, size=(15 + i % 4, 2))
                for i in range(n)]
    if kernel == "expected":
        return rng.normal(size=(n, 3)), rng.random((n, 3))
    return histograms(n, 6, seed)


def exact(kernel, X, nys):
    """The exact (for "renyi": projected) training kernel of `kernel`."""
    p = nys.params_
    if kernel == "mean_map":
        return km.sum_match_kernel(X, gamma=p["gamma"])
    if kernel == "mmd":
        return km.mmd_kernel(X, gamma=p["gamma"])
    if kernel == "renyi":
        return floored(renyi_kernel(X, None, nys))[1]
    if kernel == "expected":
        return km.gaussian_expected_kernel(*X, gamma=p["gamma"])
    name = {"chi2": "additive_chi2_kernel"}.get(kernel, kernel + "_kernel")
    return getattr(km, name)(X)


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_object_a_landmark_reproduces_the_training_kernel(kernel):
    X = data_for(kernel, 31, seed=3)
    nys = NystroemMap(31, kernel=kernel, rng=0).fit(X)
    Z = nys.transform(X)
    assert_allclose(Z @ Z.T, exact(kernel, X, nys), atol=1e-10)


def test_renyi_test_rows_go_through_the_landmarks_eigenvectors():
    train, test = data_for("renyi", 40, seed=4), data_for("renyi", 9, seed=5)
    nys = NystroemMap(40, kernel="renyi", rng=0).fit(train)
    assert nys.eigenvalues_[0] < 0  # indefinite: the projection matters
    K_LL = renyi_kernel(train, None, nys)
    K_tL = renyi_kernel(test, train, nys)
    U = floored(K_LL)[0]
    assert_allclose(nys.transform(test) @ nys.transform(train).T,
                    K_tL @ U @ U.T, atol=1e-10)
    # The floor keeps the features of held-out sets at the kernel's size.
    assert (nys.transform(test) ** 2).sum(axis=1).max() < 1.5


def test_renyi_params_can_be_given_again():
    sets = data_for("renyi", 20, seed=20)
    a = NystroemMap(8, kernel="renyi", rng=0).fit(sets)
    assert a.params_["gamma"] is None and a.params_["scale"] > 0
    b = NystroemMap(8, kernel="renyi", kernel_params=a.params_, rng=1).fit(sets)
    assert b.params_ == a.params_
    gamma = 1 / a.params_["scale"] ** 2
    c = NystroemMap(8, kernel="renyi", kernel_params={"gamma": gamma},
                    rng=1).fit(sets)
    assert_allclose(c.transform(sets), b.transform(sets), atol=1e-12)


def test_gaussians_full_diagonal_and_isotropic():
    rng = np.random.default_rng(6)
    means = rng.normal(size=(12, 2))
    variances = rng.random((12, 2))
    full = np.stack([np.diag(v) for v in variances])
    features = [NystroemMap(12, kernel="expected", kernel_params={"gamma": 0.7},
                            rng=0).fit_transform((means, c))
                for c in (variances, full)]
    assert_allclose(features[0], features[1], atol=1e-12)
    iso = NystroemMap(12, kernel="expected").fit((means, variances[:, 0]))
    Z = iso.transform((means, variances[:, 0]))
    assert_allclose(Z @ Z.T, km.gaussian_expected_kernel(
        means, variances[:, 0], gamma=iso.params_["gamma"]), atol=1e-10)


def test_a_callable_kernel_on_objects_of_any_kind():
    words = ["kernel", "kernels", "colonel", "maps", "map", "mop", "nystroem",
             "nystrom", "sets"]

    def bigrams(a, b):
        """Inner products of bigram counts: a positive definite kernel."""
        def counts(w):
            c = {}
            for i in range(len(w) - 1):
                c[w[i:i + 2]] = c.get(w[i:i + 2], 0) + 1
            return c
        ca, cb = [counts(w) for w in a], [counts(w) for w in b]
        return np.array([[sum(x[g] * y.get(g, 0) for g in x) for y in cb]
                         for x in ca], dtype=float)

    nys = NystroemMap(len(words), kernel=bigrams, landmarks="leverage",
                      rng=0).fit(words)
    Z = nys.transform(words)
    assert_allclose(Z @ Z.T, bigrams(words, words), atol=1e-10)
    assert nys.transform(["mapsets"]).shape == (1, len(words))


# -- what the map promises --------------------------------------------------


def mean_error(kernel, X, m, landmarks, seed):
    nys = NystroemMap(m, kernel=kernel, landmarks=landmarks, rng=seed).fit(X)
    Z = nys.transform(X)
    return np.abs(Z @ Z.T - exact(kernel, X, nys)).mean()


@pytest.mark.parametrize("kernel", ["mean_map", "renyi", "chi2"])
def test_error_falls_with_the_number_of_landmarks(kernel):
    X = data_for(kernel, 120, seed=7)
    errors = [np.mean([mean_error(kernel, X, m, "uniform", s) for s in range(3)])
              for m in (5, 20, 80)]
    assert errors[0] > 1.5 * errors[1] > 2.25 * errors[2], errors


def clustered_histograms(seed):
    """Histograms around 3 centres, 90 % of them around the first."""
    rng = np.random.default_rng(seed)
    centres = rng.random((3, 8)) ** 4
    which = np.r_[np.zeros(108, int), np.ones(6, int), np.full(6, 2)]
    H = centres[which] + 0.02 * rng.random((120, 8))
    return H / H.sum(1, keepdims=True)


@pytest.mark.parametrize("landmarks", ["kmeans++", "leverage"])
def test_landmark_rules_beat_uniform_on_clustered_data(landmarks):
    H = clustered_histograms(8)
    uniform = [mean_error("chi2", H, 10, "uniform", s) for s in range(8)]
    other = [mean_error("chi2", H, 10, landmarks, s) for s in range(8)]
    assert np.mean(other) < 0.5 * np.mean(uniform), (other, uniform)


def test_kmeans_plus_plus_takes_every_cluster_of_sparse_histograms():
    H = scipy.sparse.csr_matrix(clustered_histograms(9))
    for seed in range(5):
        nys = NystroemMap(3, kernel="chi2", landmarks="kmeans++", rng=seed).fit(H)
        assert sorted(nys.component_indices_ // 6 >= 18) == [False, True, True]


def test_reproducible_picklable_and_never_changes():
    X = data_for("mean_map", 30, seed=10)
    a = NystroemMap(8, landmarks="kmeans++", rng=3).fit(X)
    b = NystroemMap(8, landmarks="kmeans++", rng=3).fit(X)
    assert_array_equal(a.transform(X), b.transform(X))
    c = pickle.loads(pickle.dumps(a))
    assert_array_equal(c.transform(X), a.transform(X))
    # fit again: the fitted attributes replaced, the same with an int seed
    a.fit(X[:20])
    assert not np.array_equal(a.transform(X), b.transform(X))
    assert_array_equal(a.fit(X).transform(X), b.transform(X))
    assert len(a.set_params(n_components=5).fit(X).components_) == 5


def test_input_is_not_changed_and_bags_subsets_are_the_sets():
    sets = random_sets(np.random.default_rng(11), 17, 3, np.float64)
    copies = [s.copy() for s in sets]
    index = np.array([0, 5, 6, 16])
    nys = NystroemMap(4, landmarks=index, kernel_params={"gamma": 1.0}).fit(
        Bags.from_list(sets))
    for i, j in enumerate(index):
        assert_array_equal(nys.components_[i], sets[j])
    for s, c in zip(sets, copies):
        assert_array_equal(s, c)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales(scale):
    H = histograms(20, 5, seed=12)
    Z = NystroemMap(20, kernel="chi2", rng=0).fit_transform(H * scale)
    assert_allclose(Z @ Z.T, km.additive_chi2_kernel(H * scale),
                    rtol=1e-10, atol=1e-10 * scale)
    # The median heuristic follows the scale: the same features.
    sets = data_for("mean_map", 12, seed=13)
    a = NystroemMap(6, rng=0).fit_transform(sets)
    b = NystroemMap(6, rng=0).fit_transform([s * scale for s in sets])
    assert_allclose(a, b, atol=1e-10)


def test_dask_input_maps_blockwise():
    da = pytest.importorskip("dask.array")
    sets = data_for("renyi", 25, seed=14)
    bags = Bags.from_list(sets)
    for kernel in ("mean_map", "renyi"):
        nys = NystroemMap(10, kernel=kernel, rng=0).fit(bags)
        lazy = nys.transform(Bags(da.from_array(bags.points, chunks=90),
                                  bags.offsets))
        assert_allclose(lazy.compute(), nys.transform(bags), atol=1e-12)
    H = histograms(40, 6, seed=15)
    nys = NystroemMap(10, kernel="chi2", rng=0).fit(H)
    lazy = nys.transform(da.from_array(H, chunks=(7, 6)))
    assert_allclose(lazy.compute(), nys.transform(H), atol=1e-14)


def test_progress_bar_gives_the_same_features():
    pytest.importorskip("tqdm")
    sets = data_for("mean_map", 20, seed=16)
    nys = NystroemMap(5, rng=0).fit(sets)
    assert_allclose(nys.transform(sets, progress=True), nys.transform(sets),
                    atol=1e-12)


def test_point_kernel_parameters_on_their_own():
    """gamma, degree and coef0 as arguments of their own, as scikit-learn's
    Nystroem takes them: the same map as with kernel_params; given twice or
    to a kernel that takes none, a ValueError naming them."""
    sets = data_for("mean_map", 12, seed=22)
    given = NystroemMap(5, gamma=0.5, rng=0).fit(sets)
    assert given.params_["gamma"] == 0.5 and given.gamma == 0.5
    assert_array_equal(given.transform(sets), NystroemMap(
        5, kernel_params={"gamma": 0.5}, rng=0).fit(sets).transform(sets))
    poly = NystroemMap(5, kernel="mmd", degree=3, coef0=0.5, gamma=0.2,
                       kernel_params={"kernel": "polynomial"}, rng=0).fit(sets)
    assert_array_equal(poly.transform(sets), NystroemMap(
        5, kernel="mmd", kernel_params={"kernel": "polynomial", "degree": 3,
                                        "coef0": 0.5, "gamma": 0.2},
        rng=0).fit(sets).transform(sets))
    renyi = NystroemMap(5, kernel="renyi", gamma=2.0, rng=0).fit(sets)
    assert renyi.params_["gamma"] == 2.0
    words = ["ab", "abc", "b", "bc", "c"]

    def overlap(A, B, gamma=1.0):
        return np.array([[gamma * len(set(a) & set(b)) for b in B] for a in A])

    assert_allclose(NystroemMap(3, kernel=overlap, gamma=2.0, rng=0)
                    .fit_transform(words) ** 2,
                    2 * NystroemMap(3, kernel=overlap, rng=0)
                    .fit_transform(words) ** 2, atol=1e-12)
    H = histograms(12, 4, seed=22)
    with pytest.raises(ValueError, match="gamma is given twice"):
        NystroemMap(5, gamma=0.5, kernel_params={"gamma": 0.5}).fit(sets)
    with pytest.raises(ValueError, match=r"gamma=0\.5: the 'chi2' kernel takes "
                                         r"no gamma"):
        NystroemMap(5, kernel="chi2", gamma=0.5).fit(H)
    with pytest.raises(ValueError, match="gamma"):
        NystroemMap(5, gamma=-1.0).fit(sets)
    with pytest.raises(ValueError, match="degree"):
        NystroemMap(5, degree=0).fit(sets)


# -- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"kernel": "gaussian"}, ValueError, "kernel"),
    ({"kernel": 3}, TypeError, "kernel"),
    ({"n_components": 0}, ValueError, "n_components"),
    ({"kernel_params": {"beta": 1.0}}, ValueError, "kernel_params"),
    ({"kernel_params": [1]}, TypeError, "kernel_params"),
    ({"landmarks": "random"}, ValueError, "landmarks"),
    ({"landmarks": [1, 1, 2]}, ValueError, "landmarks"),
    ({"landmarks": [-1, 2]}, ValueError, "landmarks"),
    ({"landmarks": [0.5]}, TypeError, "landmarks"),
    ({"kernel": lambda a, b: a @ b.T, "landmarks": "kmeans++"}, ValueError,
     "landmarks"),
])
def test_bad_parameters(kwargs, error, match):
    nys = NystroemMap(**kwargs)  # stored as given, checked at fit
    with pytest.raises(error, match=match):
        nys.fit(data_for("mean_map", 10, seed=17))


def test_bad_input():
    sets = data_for("mean_map", 10, seed=17)
    with pytest.raises(ValueError, match="landmarks"):
        NystroemMap(3, landmarks=[0, 1, 10]).fit(sets)
    with pytest.raises(ValueError, match="landmarks"):
        NystroemMap(3, landmarks=[0, 1]).fit(sets)
    with pytest.raises(ValueError, match="not fitted"):
        NystroemMap(3).transform(sets)
    nys = NystroemMap(3, rng=0).fit(sets)
    with pytest.raises(ValueError, match="X has 3 features"):
        nys.transform([np.zeros((4, 3))])
    bad = [s.copy() for s in sets]
    bad[2][0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        nys.transform(bad)
    with pytest.raises(ValueError, match="X"):
        NystroemMap(3, kernel="chi2").fit(-histograms(5, 3, seed=0))
    with pytest.raises(TypeError, match="means, covs"):
        NystroemMap(3, kernel="expected").fit(np.zeros((5, 3)))
    means, variances = np.zeros((5, 2)), np.ones((5, 2))
    variances[1, 0] = -1.0
    with pytest.raises(ValueError, match="covs"):
        NystroemMap(3, kernel="expected", landmarks="kmeans++").fit(
            (means, variances))
    means[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"X\[0\] \(means\) and X\[1\] \(covs\) "
                       r"must be finite"):
        NystroemMap(3, kernel="expected").fit((means, np.ones((5, 2))))
    with pytest.raises(ValueError, match="gamma"):
        NystroemMap(3, kernel_params={"gamma": -1.0}).fit(sets)
    with pytest.raises(TypeError, match="alpha"):  # one order, not several
        NystroemMap(3, kernel="renyi",
                    kernel_params={"alpha": [0.5, 0.9]}).fit(sets)


@pytest.mark.parametrize("landmarks", ["uniform", "leverage", "kmeans++"])
def test_more_components_than_objects_takes_every_object(landmarks):
    # as scikit-learn's Nystroem: a warning, and every object a landmark
    # (a small fold of a grid search)
    sets = data_for("mean_map", 10, seed=17)
    with pytest.warns(UserWarning, match="n_components=11 landmarks, but X has "
                                         "only 10 objects: every object is a "
                                         "landmark") as caught:
        nys = NystroemMap(11, landmarks=landmarks, rng=0).fit(sets)
    assert caught[0].filename == __file__
    assert nys.n_features_out_ == 10 and nys.n_components == 11
    assert_array_equal(np.sort(nys.component_indices_), np.arange(10))
    assert_array_equal(nys.transform(sets), NystroemMap(
        10, landmarks=landmarks, rng=0).fit(sets).transform(sets))


@pytest.mark.parametrize(("result", "match"), [
    (lambda a, b: np.zeros((2, 2)), "shape"),
    (lambda a, b: np.full((len(a), len(b)), np.nan), "NaN"),
    (lambda a, b: "no", "real array"),
])
def test_a_callable_that_returns_nonsense_is_named(result, match):
    X = np.random.default_rng(0).random((6, 2))
    with pytest.raises((TypeError, ValueError), match=match):
        NystroemMap(3, kernel=result, rng=0).fit(X)


# -- the scikit-learn protocol ----------------------------------------------


def test_sklearn_clone_gives_the_maps_features():
    pytest.importorskip("sklearn")
    from sklearn.base import clone

    sets = data_for("mmd", 20, seed=18)
    est = NystroemMap(6, kernel="mmd", landmarks="leverage", rng=2)
    fmap = NystroemMap(6, kernel="mmd", landmarks="leverage", rng=2).fit(sets)
    assert_allclose(clone(est).fit(sets).transform(sets), fmap.transform(sets))
    H = histograms(15, 4, seed=19)
    rows = NystroemMap(5, kernel="exp_chi2", kernel_params={"beta": 2.0},
                       rng=0).fit(H)
    assert_array_equal(clone(rows).fit(H).transform(H), rows.transform(H))
    assert rows.n_features_in_ == 4 and rows.n_features_out_ == 5
    assert_array_equal(rows.get_feature_names_out(),
                       [f"nystroemmap{i}" for i in range(5)])
    # gamma on its own, as scikit-learn's Nystroem takes it
    assert_allclose(NystroemMap(6, gamma=0.3, rng=2).fit_transform(sets),
                    NystroemMap(6, kernel_params={"gamma": 0.3},
                                rng=2).fit_transform(sets))
    with pytest.raises(ValueError, match="negative"):
        rows.transform(-H)
    with pytest.raises(TypeError, match="means, covs"):
        clone(est).set_params(kernel="expected").fit(H)


def test_eigenvalues_beyond_float64_are_refused():
    """Landmarks whose kernel entries are finite but whose largest
    eigenvalue exceeds float64 (entries near 1e308): a ValueError that says
    so, not an overflow warning and an infinite eigenvalues_ (found by the
    fuzz suite)."""
    X = np.array([[1.3333333333333332e307, 2.1666666666666667e307,
                   5.166666666666667e307, 8.166666666666667e307, 0.0],
                  [6.333333333333334e307, 5.666666666666667e307, 7.5e307, 1e308,
                   1.5e307],
                  [3.333333333333333e307, 9.666666666666666e307, 0.0, 0.0,
                   3.333333333333333e307],
                  [5.166666666666667e307, 8.333333333333333e306,
                   1.6666666666666665e306, 1.6666666666666666e307,
                   1.3333333333333332e307],
                  [6e307, 1.6666666666666665e306, 7.5e307, 8.333333333333333e306,
                   3e307]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"eigenvalues .* overflow float64"):
            km.NystroemMap(3, kernel="chi2", rng=0).fit(X)
