"""The construction convention of the feature maps: hyperparameters in the
constructor (stored as given, checked at `fit`), `fit` (in place, returning
the map; again: a refit), `transform` only when fitted, `fit_transform`,
fitted attributes ending in ``_``, scikit-learn's repr; the spellings of the
development are errors;
the one rule for gamma=None (the median heuristic of the data that define
the kernel); random Fourier features of CSR input; progress bars; the checks
of arguments and arrays common to every function (numbers, choices, rng,
sizes; points, histograms, kernel matrices)."""

import inspect
import pickle
import sys

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._base import FeatureMap
from kernelmaps._validation import check_histograms, check_points, check_scalar

from ._helpers import strided_csr
from ._references import median_gamma

RNG = np.random.default_rng(0)
HIST = RNG.random((40, 6))
HIST /= HIST.sum(axis=1, keepdims=True)
POINTS = RNG.normal(size=(40, 3))
SETS = [RNG.normal(size=(n, 3)) for n in (5, 9, 3, 7, 6, 4)]

# name: (an unfitted map, its training data); the set maps transform sets.
MAPS = {
    "Chi2DirectMap": (lambda: km.Chi2DirectMap(4), HIST),
    "Chi2DirectMap-per-dimension": (
        lambda: km.Chi2DirectMap(4, per_dimension=True), HIST),
    "Chi2ChebyshevMap-median": (
        lambda: km.Chi2ChebyshevMap(4, scale="median"), HIST),
    "AnchorMap": (lambda: km.AnchorMap("chi2", 10), HIST),
    "AnchorMap-kmeans-2nn": (
        lambda: km.AnchorMap("js", 10, anchors="kmeans", n_neighbors=2,
                             weights="distance"), HIST),
    "ExpChi2Features": (lambda: km.ExpChi2Features(32, beta=2.0, rng=0), HIST),
    "RandomFourierFeatures": (lambda: km.RandomFourierFeatures(32, rng=0), POINTS),
    "RandomFourierFeatures-laplacian": (
        lambda: km.RandomFourierFeatures(32, kernel="laplacian", rng=0), POINTS),
    "RandomDistributionFeatures": (
        lambda: km.RandomDistributionFeatures(32, rng=0), SETS),
    "DoublyRandomDistributionFeatures": (
        lambda: km.DoublyRandomDistributionFeatures(32, 16, rng=0), SETS),
    "DoublyRandomDistributionFeatures-gamma2-None": (
        lambda: km.DoublyRandomDistributionFeatures(32, 16, gamma2=None, rng=0),
        SETS),
    "EMKFeatures": (lambda: km.EMKFeatures(6, n_iter=5, rng=0), SETS),
    "SlicedWassersteinFeatures": (
        lambda: km.SlicedWassersteinFeatures(8, 5, rng=0), SETS),
    "NystroemMap": (lambda: km.NystroemMap(4, rng=0), SETS),
    "NystroemMap-chi2-leverage": (
        lambda: km.NystroemMap(8, kernel="chi2", landmarks="leverage", rng=0),
        HIST),
}
# Maps whose features may differ in the last bits between blocks of rows
# (sums over sets; Nystroem's matrix product with the normalization; the
# BLAS projections of the sliced-Wasserstein features).
SET_MAPS = ("RandomDistributionFeatures", "DoublyRandomDistributionFeatures",
            "EMKFeatures", "NystroemMap", "SlicedWassersteinFeatures")
# Maps that learn nothing: usable without fit.
STATELESS = {
    "HomogeneousKernelMap": lambda: km.HomogeneousKernelMap("chi2", 2),
    "Chi2ChebyshevMap": lambda: km.Chi2ChebyshevMap(4, scale=0.5),
}


def is_set_map(name):
    return name.startswith(SET_MAPS)


def assert_same_features(name, A, B):
    """Row maps: bit for bit; set maps (sums over sets, in blocks that may
    differ): to rounding, relative to the largest feature."""
    if is_set_map(name):
        assert_allclose(A, B, rtol=1e-14, atol=1e-14 * np.abs(B).max())
    else:
        assert_array_equal(A, B)


def test_every_public_map_is_covered():
    # (PSDProjector, a FeatureMap of kernel matrices, is tested in test_psd
    # and, with scikit-learn's checks, in test_sklearn)
    public = {name for name in dir(km) if isinstance(getattr(km, name), type)
              and issubclass(getattr(km, name), FeatureMap)} - {"PSDProjector"}
    covered = {name.split("-")[0] for name in [*MAPS, *STATELESS]}
    assert public == covered


# ------------------------------------------------------------- fit, transform


@pytest.mark.parametrize("name", MAPS)
def test_unfitted_transform_raises_naming_fit(name):
    make, X = MAPS[name]
    fmap = make()
    assert not fmap.__sklearn_is_fitted__()
    cls = type(fmap).__name__
    with pytest.raises(ValueError, match=rf"^this {cls} is not fitted yet: call "
                                         r"fit\(X\) with training data first"):
        fmap.transform(X)
    with pytest.raises(ValueError, match=r"fit_transform\(X\)"):
        fmap.transform(X, progress=True)


@pytest.mark.parametrize("name", MAPS)
def test_unfitted_transform_of_dask_input_raises_naming_fit(name):
    # (blocked_rows and blocked_sets check the map before the lazy path:
    # the transform applied to its probe expects a fitted map)
    da = pytest.importorskip("dask.array")
    make, X = MAPS[name]
    if isinstance(X, list):  # sets: a Bags of lazy points
        bags = km.Bags.from_list(X)
        lazy = km.Bags(da.from_array(bags.points, chunks=10), bags.offsets)
    else:
        lazy = da.from_array(X, chunks=10)
    cls = type(make()).__name__
    with pytest.raises(ValueError, match=rf"^this {cls} is not fitted yet"):
        make().transform(lazy)


@pytest.mark.parametrize("name", MAPS)
def test_fit_returns_the_map_and_a_second_fit_refits(name):
    make, X = MAPS[name]
    fmap = make()
    assert fmap.fit(X) is fmap
    assert fmap.__sklearn_is_fitted__()
    Z = fmap.transform(X)
    width = fmap.n_features_in_
    # fit again, on other data: every fitted attribute replaced
    narrow = _narrower(X)
    assert fmap.fit(narrow) is fmap
    assert fmap.n_features_in_ == width - 1
    with pytest.raises(ValueError, match=f"is expecting {width - 1} features"):
        fmap.transform(X)
    # and on the same data: the same map (an int seed draws the same)
    assert_array_equal(fmap.fit(X).transform(X), Z)
    assert_array_equal(fmap.fit_transform(X), Z)
    fmap.anything = 1  # an ordinary object


@pytest.mark.parametrize("name", MAPS)
def test_fit_transform_is_fit_then_transform(name):
    make, X = MAPS[name]
    fitted = make().fit(X)
    fmap = make()
    Z = fmap.fit_transform(X)
    assert fmap.__sklearn_is_fitted__()
    assert_same_features(name, Z, fitted.transform(X))
    assert_same_features(name, fmap.transform(X), fitted.transform(X))
    # the arguments of transform pass through
    twin = make()
    assert_same_features(name, twin.fit_transform(X, workers=1),
                         fitted.transform(X, workers=1))


def test_fit_transform_passes_transform_arguments():
    emk = km.EMKFeatures(6, n_iter=5, rng=0)
    positions = [RNG.random((len(s), 2)) for s in SETS]
    F = emk.fit_transform(SETS, positions=positions, levels=1)
    assert_same_features("EMKFeatures", F, emk.transform(SETS, positions, levels=1))
    assert F.shape == (len(SETS), 6 * 5)


@pytest.mark.parametrize("name", MAPS)
def test_pickle_unfitted_and_fitted(name):
    make, X = MAPS[name]
    unfitted = make()
    again = pickle.loads(pickle.dumps(unfitted))
    assert not again.__sklearn_is_fitted__()
    assert repr(again) == repr(unfitted)
    # the same map once fitted (the random generator travels with it)
    want = make().fit(X).transform(X)
    assert_same_features(name, again.fit(X).transform(X), want)
    fitted = make().fit(X)
    back = pickle.loads(pickle.dumps(fitted))
    assert back.__sklearn_is_fitted__()
    assert repr(back) == repr(fitted)
    assert_array_equal(back.transform(X), fitted.transform(X))
    assert_array_equal(back.fit(X).transform(X), fitted.transform(X))  # a refit


@pytest.mark.parametrize("name", STATELESS)
def test_stateless_maps_need_no_fit(name):
    fmap = STATELESS[name]()
    assert fmap.__sklearn_is_fitted__() and not hasattr(fmap, "n_features_in_")
    Z = fmap.transform(HIST)
    n_terms = Z.shape[1] // HIST.shape[1]
    assert fmap.transform(HIST[:, :4]).shape == (len(HIST), 4 * n_terms)
    with pytest.raises(ValueError, match="negative"):
        fmap.fit(-HIST)  # fit checks X
    assert fmap.fit(HIST) is fmap  # and records its width
    assert fmap.n_features_in_ == HIST.shape[1]
    assert fmap.n_features_out_ == Z.shape[1]
    with pytest.raises(ValueError, match="X has 4 features"):
        fmap.transform(HIST[:, :4])
    assert fmap.fit(HIST[:, :4]).n_features_in_ == 4  # a refit: another width
    assert_array_equal(fmap.fit(HIST).transform(HIST), Z)
    assert_array_equal(STATELESS[name]().fit_transform(HIST), Z)
    back = pickle.loads(pickle.dumps(fmap))
    assert_array_equal(back.transform(HIST), Z)
    assert back.n_features_in_ == HIST.shape[1]


@pytest.mark.parametrize("name", MAPS)
def test_random_state_is_called_rng(name):
    """Every map that takes a seed takes it as rng (as SciPy); scikit-learn's
    name gets a TypeError that says so."""
    make, _ = MAPS[name]
    cls = type(make())
    if "rng" not in inspect.signature(cls).parameters:
        return
    with pytest.raises(TypeError, match=rf"^{cls.__name__} takes the seed as rng "
                                        rf".*write rng=0"):
        cls(random_state=0)


def _narrower(X):
    """`X` with one feature less (the last column of the histograms or
    points, or of the points of every set)."""
    if isinstance(X, list):
        return [x[:, :-1] for x in X]
    return X[:, :-1]


@pytest.mark.parametrize("name", [*MAPS, *STATELESS])
def test_fitted_maps_know_their_widths_and_refuse_others(name):
    """Every map records the width of X at fit: n_features_in_ and
    n_features_out_ are set, and transform refuses another width, naming X
    and both widths in scikit-learn's words (before: Chi2DirectMap(5).fit(H)
    took any width)."""
    make, X = MAPS[name] if name in MAPS else (STATELESS[name], HIST)
    fmap = make().fit(X)
    width = (X[0] if isinstance(X, list) else X).shape[1]
    assert fmap.n_features_in_ == width
    assert fmap.n_features_out_ == fmap.transform(X).shape[1]
    argument = "sets" if name == "EMKFeatures" else "X"
    cls = type(fmap).__name__
    with pytest.raises(ValueError, match=rf"^{argument} has {width - 1} features, "
                                         rf"but {cls} is expecting {width} "
                                         rf"features as input$"):
        fmap.transform(_narrower(X))


def test_chi2_chebyshev_median_scale():
    fmap = km.Chi2ChebyshevMap(4, scale="median")
    assert fmap.scale == "median"
    fmap.fit(HIST)
    assert fmap.scale == "median"  # the parameter, as given
    assert fmap.scale_ == np.median(HIST[HIST > 0])
    assert_array_equal(fmap.transform(HIST),
                       km.Chi2ChebyshevMap(4, scale=fmap.scale_).transform(HIST))
    assert km.Chi2ChebyshevMap(4, scale=0.5).fit(HIST).scale_ == 0.5
    mean = km.Chi2ChebyshevMap(4, scale="mean")
    for call in (mean.transform, mean.fit):
        with pytest.raises(TypeError, match="scale must be a real number"):
            call(HIST)


def test_chi2_direct_map_with_k_needs_no_fit():
    k = np.array([0.05, 0.2, 0.5])
    fmap = km.Chi2DirectMap(k=k)
    assert fmap.__sklearn_is_fitted__() and fmap.k is k
    assert fmap.transform(HIST).shape == (len(HIST), 6 * 3)
    fitted = km.Chi2DirectMap(3).fit(HIST)
    assert_array_equal(km.Chi2DirectMap(k=fitted.k_).transform(HIST),
                       fitted.transform(HIST))
    assert_array_equal(fmap.fit(HIST).k_, k)  # fit records the width
    assert fmap.n_features_in_ == 6 and fmap.n_features_out_ == 18
    # n_terms left out, or the number of terms of k
    assert_array_equal(km.Chi2DirectMap(3, k=k).transform(HIST),
                       fmap.transform(HIST))
    wrong = km.Chi2DirectMap(4, k=k)
    for call in (wrong.transform, wrong.fit):
        with pytest.raises(ValueError, match="n_terms=4 disagrees with k"):
            call(HIST)
    per_dimension = km.Chi2DirectMap(k=np.full((6, 2), 0.1))
    message = "X has 5 features, but Chi2DirectMap is expecting 6 features"
    with pytest.raises(ValueError, match=message):
        per_dimension.transform(HIST[:, :5])  # the width k fixes
    with pytest.raises(ValueError, match=message):
        per_dimension.fit(HIST[:, :5])
    per_dimension.fit(HIST)
    assert per_dimension.n_features_in_ == 6 and per_dimension.n_features_out_ == 12
    with pytest.raises(ValueError, match=message):
        per_dimension.transform(HIST[:, :5])


def test_emk_with_basis_learns_nothing_but_the_width():
    basis = POINTS[:5]
    emk = km.EMKFeatures(basis=basis, gamma=0.5)
    assert not emk.__sklearn_is_fitted__()
    with pytest.raises(ValueError, match="not fitted yet"):
        emk.transform(SETS)
    Z = emk.fit(SETS).transform(SETS)
    assert Z.shape == (len(SETS), 5)
    assert emk.n_features_out_ == 5 and emk.n_features_in_ == 3
    assert_array_equal(emk.basis_, basis)
    assert emk.objective_.shape == (0,)
    # the features do not depend on the sets fit saw, only their width
    assert_array_equal(km.EMKFeatures(basis=basis, gamma=0.5).fit(
        [s + 1.0 for s in SETS[:2]]).transform(SETS), Z)
    # gamma=None: the median heuristic of the basis
    assert km.EMKFeatures(basis=basis).fit(SETS).gamma_ == km.median_heuristic(
        basis)
    with pytest.raises(ValueError, match="X has 2 features, but EMKFeatures is "
                                         "expecting 3"):
        emk.fit([s[:, :2] for s in SETS])


def test_exp_chi2_features_fits_a_copy_of_its_chi2_map():
    chi2_map = km.Chi2DirectMap(3)
    fmap = km.ExpChi2Features(16, chi2_map=chi2_map, rng=0).fit(HIST)
    assert not chi2_map.__sklearn_is_fitted__()  # the caller's map never changes
    assert fmap.chi2_map is chi2_map  # the parameter, as given
    assert fmap.chi2_map_ is not chi2_map and fmap.chi2_map_.__sklearn_is_fitted__()
    fitted = km.Chi2DirectMap(3).fit(HIST[:10])
    fmap = km.ExpChi2Features(16, chi2_map=fitted, rng=0).fit(HIST)
    # fitted: used as it is (a copy: a later refit of the caller's map does
    # not change this one)
    assert_array_equal(fmap.chi2_map_.k_, fitted.k_)
    assert fmap.chi2_map_ is not fitted


# -------------------------------------------------------------------- repr


@pytest.mark.parametrize(("make", "X", "want"), [
    (lambda: km.Chi2DirectMap(4), HIST, "Chi2DirectMap(n_terms=4)"),
    (lambda: km.Chi2DirectMap(4, per_dimension=True), HIST,
     "Chi2DirectMap(n_terms=4, per_dimension=True)"),
    (lambda: km.Chi2ChebyshevMap(4, scale="median"), HIST,
     "Chi2ChebyshevMap(n_terms=4, scale='median')"),
    (lambda: km.AnchorMap("chi2", 10), HIST, "AnchorMap(n_anchors=10)"),
    (lambda: km.RandomFourierFeatures(8, gamma=0.5, rng=0), POINTS,
     "RandomFourierFeatures(n_components=8, gamma=0.5, rng=0)"),
    (lambda: km.RandomFourierFeatures(8, draw="iid", form="offset", rng=0), POINTS,
     "RandomFourierFeatures(n_components=8, draw='iid', form='offset', rng=0)"),
    (lambda: km.RandomDistributionFeatures(8, kernel="laplacian", rng=0), SETS,
     "RandomDistributionFeatures(n_components=8, kernel='laplacian', rng=0)"),
    (lambda: km.DoublyRandomDistributionFeatures(8, 4, gamma=0.5, rng=0), SETS,
     "DoublyRandomDistributionFeatures(n_components=8, n_components2=4, "
     "gamma=0.5, rng=0)"),
    (lambda: km.EMKFeatures(4, gamma=0.5, n_iter=2, rng=0), SETS,
     "EMKFeatures(n_basis=4, gamma=0.5, n_iter=2, rng=0)"),
    (lambda: km.EMKFeatures(4, n_iter=2, rng=0), SETS,
     "EMKFeatures(n_basis=4, n_iter=2, rng=0)"),
    (lambda: km.HomogeneousKernelMap(), HIST, "HomogeneousKernelMap()"),
])
def test_repr_shows_the_parameters_not_at_their_default(make, X, want):
    # scikit-learn's repr: the constructor's arguments as given, the same
    # before and after fit (the fitted values are attributes ending in _)
    fmap = make()
    assert repr(fmap) == want
    fmap.fit(X)
    assert repr(fmap) == want


def test_exp_chi2_repr_names_its_chi2_map():
    fmap = km.ExpChi2Features(8, rng=0)
    assert repr(fmap) == "ExpChi2Features(n_components=8, rng=0)"
    fmap = km.ExpChi2Features(8, chi2_map=km.Chi2DirectMap(3), rng=0)
    assert repr(fmap) == ("ExpChi2Features(n_components=8, "
                          "chi2_map=Chi2DirectMap(n_terms=3), rng=0)")
    assert repr(fmap.fit(HIST)) == repr(fmap)


# ------------------------------------------ spellings of the development


def test_removed_spellings_are_errors():
    # the spellings changed before the first release are gone, not
    # deprecated: a map takes its parameters first, and is fitted by fit
    for call, error in [
        (lambda: km.RandomFourierFeatures(3, 32), TypeError),
        (lambda: km.DoublyRandomDistributionFeatures(3, 32, 16), TypeError),
        # stored as given, refused at fit or transform
        (lambda: km.Chi2DirectMap([0.05, 0.2, 0.5]).fit(HIST), TypeError),
        (lambda: km.Chi2DirectMap([0.05, 0.2, 0.5]).transform(HIST), ValueError),
        (lambda: km.EMKFeatures(POINTS[:5]).fit(SETS), TypeError),
    ]:
        with pytest.raises(error):
            call()
    with pytest.raises((TypeError, AttributeError)):
        km.Chi2DirectMap.fit(HIST)  # fit is an instance method
    fmap = km.Chi2DirectMap(3)
    assert km.Chi2DirectMap.fit(fmap, HIST) is fmap and fmap.__sklearn_is_fitted__()


def test_removed_constructor_arguments_are_errors():
    with pytest.raises(TypeError):
        km.AnchorMap("chi2", np.zeros((2, 3)), np.zeros(3), np.ones(2, int))
    with pytest.raises(TypeError):
        km.ExpChi2Features(km.Chi2DirectMap(3), np.zeros((3, 4)), np.zeros(4), 1.0)
    with pytest.raises(TypeError, match="objective"):
        km.EMKFeatures(basis=POINTS[:4], objective=[1.0])


# ----------------------------------------------------------------- gamma=None


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("n", [2, 3, 40, 1200])
def test_median_heuristic_against_numpy(kernel, n):
    X = np.random.default_rng(n).normal(size=(n, 4)) * 3
    want = median_gamma(X, kernel)
    assert_allclose(km.median_heuristic(X, kernel=kernel), want, rtol=1e-13)
    # the default seed is fixed: the same value on every call
    assert km.median_heuristic(X, kernel=kernel) == km.median_heuristic(
        X, kernel=kernel, rng=0)
    sets = [X[: n // 2], X[n // 2:]] if n > 2 else [X]
    assert_allclose(km.median_heuristic(sets, kernel=kernel), want, rtol=1e-13)
    assert_allclose(km.median_heuristic(X, kernel=kernel, sample=None),
                    median_gamma(X, kernel, sample=None), rtol=1e-13)


def test_median_heuristic_laplacian_small_example():
    X = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0]])  # L1: 3, 4, 5
    assert km.median_heuristic(X, kernel="laplacian") == 1 / 4
    assert km.median_heuristic(X) == 1 / 10  # squared: 5, 10, 13
    with pytest.raises(ValueError, match="kernel"):
        km.median_heuristic(X, kernel="polynomial")


@pytest.mark.parametrize(("make", "data", "points"), [
    (lambda k: km.RandomFourierFeatures(8, kernel=k, rng=0), POINTS, POINTS),
    (lambda k: km.RandomDistributionFeatures(8, kernel=k, rng=0), SETS, SETS),
    (lambda k: km.EMKFeatures(4, kernel=k, n_iter=2, rng=0), SETS, SETS),
    (lambda k: km.EMKFeatures(4, kernel=k, n_iter=2, rng=0), POINTS, POINTS),
])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_fitted_gamma_is_the_median_heuristic_of_the_training_data(
        make, data, points, kernel):
    fmap = make(kernel).fit(data)
    assert fmap.gamma_ == km.median_heuristic(points, kernel=kernel)
    assert fmap.gamma is None  # the parameter, as given


def test_drdf_gammas_are_median_heuristics():
    drdf = km.DoublyRandomDistributionFeatures(64, 8, gamma2=None, rng=0).fit(SETS)
    assert drdf.gamma_ == km.median_heuristic(SETS)
    F = drdf.rdf_.transform(SETS)
    assert drdf.gamma2_ == km.median_heuristic(F)
    assert drdf.rff_.gamma_ == drdf.gamma2_
    assert drdf.gamma is None and drdf.gamma2 is None


def test_rff_gamma_of_csr_training_data():
    X = POINTS.copy()
    X[np.abs(X) < 0.5] = 0
    dense = km.RandomFourierFeatures(8, rng=0).fit(X)
    sparse = km.RandomFourierFeatures(8, rng=0).fit(scipy.sparse.csr_matrix(X))
    assert dense.gamma_ == sparse.gamma_ == km.median_heuristic(X)
    assert_array_equal(dense.weights_, sparse.weights_)


def test_defaults_are_the_median_heuristic():
    assert km.RandomFourierFeatures().fit(POINTS).gamma_ == km.median_heuristic(
        POINTS)
    assert km.RandomDistributionFeatures().fit(SETS).gamma_ == (
        km.median_heuristic(SETS))
    assert km.Chi2ChebyshevMap(scale="median").fit(HIST).scale_ == np.median(
        HIST[HIST > 0])
    sk = pytest.importorskip("kernelmaps.sklearn")
    est = sk.SetKernel("mean_map").fit(SETS)
    assert est.gamma_ == km.median_heuristic(SETS)
    means, covs = POINTS[:10], np.abs(POINTS[10:20])
    est = sk.ExpectedKernel("diag").fit(np.hstack([means, covs]))
    assert est.gamma_ == km.median_heuristic(means)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("func", [km.sum_match_kernel, km.mmd, km.mmd_kernel])
def test_kernel_functions_take_the_median_heuristic_of_y(func, kernel):
    # f(X_test, X_train) is the test-by-train block of f on all the sets
    # with the gamma of the training sets, and f(X_train) its train block.
    train, test = SETS[:4], [s * 1.5 + 0.5 for s in SETS[4:]]
    gamma = km.median_heuristic(train, kernel=kernel)
    full = func(test + train, kernel=kernel, gamma=gamma)
    assert_allclose(func(test, train, kernel=kernel), full[:2, 2:], rtol=1e-12,
                    atol=1e-15)
    assert_allclose(func(train, kernel=kernel), full[2:, 2:], rtol=1e-12,
                    atol=1e-15)
    # not X's gamma
    other = func(test + train, kernel=kernel,
                 gamma=km.median_heuristic(test, kernel=kernel))
    assert not np.allclose(func(test, train, kernel=kernel), other[:2, 2:])


def test_gaussian_expected_kernel_takes_the_median_heuristic_of_means2():
    means, covs = POINTS[:6], np.abs(POINTS[6:12])
    means2, covs2 = POINTS[12:16] * 2, np.abs(POINTS[16:20])
    gamma = km.median_heuristic(means2)
    assert_allclose(km.gaussian_expected_kernel(means, covs, means2, covs2),
                    km.gaussian_expected_kernel(means, covs, means2, covs2,
                                                gamma=gamma), rtol=1e-15)
    assert_allclose(km.gaussian_expected_kernel(means, covs),
                    km.gaussian_expected_kernel(
                        means, covs, gamma=km.median_heuristic(means)), rtol=1e-15)
    # polynomial: 1 / d
    assert_allclose(
        km.gaussian_expected_kernel(means, covs, kernel="polynomial"),
        km.gaussian_expected_kernel(means, covs, kernel="polynomial", gamma=1 / 3),
        rtol=1e-15)


@pytest.mark.parametrize("func", [km.sum_match_kernel, km.mmd, km.mmd_kernel])
def test_polynomial_gamma_stays_one_over_d(func):
    assert_allclose(func(SETS, kernel="polynomial"),
                    func(SETS, kernel="polynomial", gamma=1 / 3), rtol=1e-15)


def test_degenerate_training_data_fall_back():
    # most pairs coincide: the median of the distinct pairs (squared
    # distances 1, 9 and 4 -> 4)
    X = np.array([[0.0]] * 6 + [[1.0], [3.0]])
    with pytest.raises(ValueError, match="median distance"):
        km.median_heuristic(X)
    assert km.RandomFourierFeatures(8, rng=0).fit(X).gamma_ == 0.25
    assert km.sum_match_kernel([X]) == km.sum_match_kernel([X], gamma=0.25)
    # fewer than 2 distinct points: gamma 1
    for one in (np.ones((5, 2)), np.ones((1, 2))):
        assert km.RandomFourierFeatures(8, rng=0).fit(one).gamma_ == 1.0
        assert km.RandomDistributionFeatures(8, rng=0).fit([one]).gamma_ == 1.0
    assert km.DoublyRandomDistributionFeatures(8, 4, gamma2=None, rng=0).fit(
        [np.ones((2, 2))]).gamma2_ == 1.0


# ------------------------------------------------------- RFF of CSR input


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_rff_of_csr_equals_dense(dtype, workers, kernel):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 40))
    X[rng.random(X.shape) < 0.8] = 0
    X[7] = 0  # an empty row
    X = X.astype(dtype)
    fmap = km.RandomFourierFeatures(64, kernel=kernel, gamma=0.05, rng=0).fit(X)
    dense = fmap.transform(X, workers=workers)
    for S in (scipy.sparse.csr_matrix(X), scipy.sparse.csr_array(X)):
        Z = fmap.transform(S, workers=workers)
        assert isinstance(Z, np.ndarray) and Z.dtype == dtype
        if dtype == np.float64:
            assert_allclose(Z, dense, rtol=1e-12, atol=1e-14)
        else:
            assert_allclose(Z, dense, rtol=1e-5, atol=1e-6)
    # fitted on CSR: the same map
    other = km.RandomFourierFeatures(64, kernel=kernel, gamma=0.05, rng=0)
    assert_array_equal(other.fit(scipy.sparse.csr_matrix(X)).weights_,
                       fmap.weights_)


def test_rff_csr_checks_its_input():
    fmap = km.RandomFourierFeatures(8, gamma=0.5, rng=0).fit(POINTS)
    bad = scipy.sparse.csr_matrix(np.array([[np.nan, 0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        fmap.transform(bad)
    with pytest.raises(ValueError, match="X has 2 features"):
        fmap.transform(scipy.sparse.csr_matrix(POINTS[:, :2]))
    huge = km.RandomFourierFeatures(8, gamma=1e300, rng=0).fit(POINTS)
    assert np.isfinite(huge.transform(scipy.sparse.csr_matrix(POINTS))).all()
    with pytest.raises(ValueError, match="X has values too large"):
        huge.transform(scipy.sparse.csr_matrix(POINTS * 1e300))


def test_rff_fits_and_maps_csr_with_the_median_heuristic():
    X = POINTS.copy()
    X[np.abs(X) < 0.5] = 0
    S = scipy.sparse.csr_matrix(X)
    fmap = km.RandomFourierFeatures(32, rng=0).fit(S)
    Z = fmap.transform(S)
    assert isinstance(Z, np.ndarray) and Z.shape == (40, 32)
    assert_allclose(Z, km.RandomFourierFeatures(32, rng=0).fit(X).transform(X),
                    rtol=1e-12, atol=1e-14)
    assert_allclose(km.RandomFourierFeatures(32, rng=0).fit_transform(S), Z,
                    rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------ progress bars


@pytest.mark.parametrize("name", [*MAPS, *STATELESS])
def test_progress_bar_on_every_map_transform(name, capsys):
    pytest.importorskip("tqdm")
    if name in STATELESS:
        fmap, X = STATELESS[name](), HIST
    else:
        make, X = MAPS[name]
        fmap = make().fit(X)
    want = fmap.transform(X)
    capsys.readouterr()
    Z = fmap.transform(X, progress=True)
    err = capsys.readouterr().err
    assert "100%" in err
    assert_same_features(name, Z, want)
    assert_same_features(name, fmap.transform(X, progress=False), want)


def test_progress_bar_of_emk_pyramids(capsys):
    pytest.importorskip("tqdm")
    emk = km.EMKFeatures(6, n_iter=5, rng=0).fit(SETS)
    positions = [RNG.random((len(s), 2)) for s in SETS]
    want = emk.transform(SETS, positions, levels=2)
    capsys.readouterr()
    got = emk.transform(SETS, positions, levels=2, progress=True)
    assert "100%" in capsys.readouterr().err
    assert_same_features("EMKFeatures", got, want)


@pytest.mark.parametrize("name", [*MAPS, *STATELESS])
def test_progress_on_empty_input_is_the_maps_error(name):
    pytest.importorskip("tqdm")
    if name in STATELESS:
        fmap, X = STATELESS[name](), HIST
    else:
        make, X = MAPS[name]
        fmap = make().fit(X)
    with pytest.raises(ValueError) as plain:
        fmap.transform(X[:0])
    with pytest.raises(ValueError) as shown:
        fmap.transform(X[:0], progress=True)
    assert str(shown.value) == str(plain.value)


@pytest.mark.parametrize("kind", ["rows", "sets"])
def test_progress_over_many_blocks_is_repeatable(kind, monkeypatch):
    # Blocks of fixed size (not of the chunks, which follow the clock): the
    # same features on every run, those of one call up to rounding.
    pytest.importorskip("tqdm")
    from kernelmaps._engine import schedule

    monkeypatch.setattr(schedule, "CHUNK_SECONDS", 1e-4)  # many chunks
    rng = np.random.default_rng(5)
    if kind == "rows":
        X = rng.normal(size=(20001, 40))
        fmap = km.RandomFourierFeatures(64, gamma=0.1, rng=0).fit(X)
    else:
        X = km.Bags.from_list([rng.normal(size=(k, 40)) for k in
                               rng.integers(1, 30, size=2000)])
        fmap = km.RandomDistributionFeatures(64, gamma=0.1, rng=0).fit(X)
    once = fmap.transform(X, progress=True)
    assert_array_equal(fmap.transform(X, progress=True), once)
    assert_allclose(once, fmap.transform(X), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", [*MAPS, *STATELESS])
def test_progress_without_tqdm_is_the_set_kernels_error(name, monkeypatch):
    if name in STATELESS:
        fmap, X = STATELESS[name](), HIST
    else:
        make, X = MAPS[name]
        fmap = make().fit(X)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(ImportError) as kernels_error:
        km.sum_match_kernel(SETS, progress=True)
    with pytest.raises(ImportError, match=r"kernelmaps\[progress\]") as map_error:
        fmap.transform(X, progress=True)
    assert str(map_error.value) == str(kernels_error.value)


@pytest.mark.parametrize("name", MAPS)
def test_progress_is_checked(name):
    make, X = MAPS[name]
    fmap = make().fit(X)
    with pytest.raises((TypeError, ValueError), match="progress"):
        fmap.transform(X, progress="yes")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 11, 1000, 79800, 79801])
def test_median_of_the_heuristic_is_numpy_median(n):
    # The heuristic's median (one partition in place) is np.median's value,
    # with ties and at extreme scales.
    from kernelmaps._gamma import _median

    rng = np.random.default_rng(n)
    for scale in (1e-300, 1.0, 1e300):
        x = rng.random(n) * scale
        if n > 5:
            x[: n // 3] = x[0]  # ties
        assert _median(x.copy()) == np.median(x)


# ------------------------------------ arguments: numbers, choices, rng, sizes


@pytest.mark.parametrize("value", [np.array(0.5), np.float32(0.5), np.float64(0.5),
                                   0.5, np.array(0.5, dtype=np.float32)])
def test_check_scalar_takes_numpy_scalars_and_0d_arrays(value):
    out = check_scalar(value, "a")
    assert type(out) is float and out == 0.5


@pytest.mark.parametrize("value", [np.array(3), np.int8(3), np.uint64(3), 3, 3.0,
                                   np.array(3.0)])
def test_check_scalar_int_takes_numpy_scalars_and_0d_arrays(value):
    out = check_scalar(value, "n", kind="int")
    assert type(out) is int and out == 3


@pytest.mark.parametrize("kind", ["real", "int"])
@pytest.mark.parametrize("value", [True, np.bool_(False), np.array(True), "1",
                                   None, 1j, np.array([1.0]), [1.0]])
def test_check_scalar_refuses_non_numbers(kind, value):
    with pytest.raises(TypeError, match=r"^a must be"):
        check_scalar(value, "a", kind=kind)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, np.array(np.nan),
                                   10**400, -(10**400)],
                         ids=["nan", "inf", "-inf", "0d-nan", "1e400", "-1e400"])
def test_check_scalar_refuses_non_finite(value):
    with pytest.raises(ValueError, match="a must be finite"):
        check_scalar(value, "a")


def test_check_scalar_int_refuses_non_finite_and_fractions():
    for value in (np.nan, np.inf, 1e400, 0.5):
        with pytest.raises(TypeError, match="n must be an int"):
            check_scalar(value, "n", kind="int")


def test_0d_arrays_for_choices_and_bools():
    from kernelmaps._validation import check_bool, check_choice

    assert check_choice(np.array("clip"), "method", ("clip", "flip")) == "clip"
    assert type(check_choice(np.str_("flip"), "method", ("clip", "flip"))) is str
    assert check_bool(np.array(True), "clamp") is True
    with pytest.raises(TypeError, match="clamp must be True or False"):
        check_bool(np.array(1), "clamp")
    with pytest.raises(ValueError, match="method must be one of"):
        check_choice(np.array(["clip"]), "method", ("clip",))


@pytest.mark.parametrize("make", [
    lambda rng: km.RandomFourierFeatures(4, rng=rng).fit(np.eye(3)),
    lambda rng: km.RandomDistributionFeatures(4, rng=rng).fit([np.eye(3)]),
    lambda rng: km.DoublyRandomDistributionFeatures(4, 2, rng=rng).fit([np.eye(3)]),
    lambda rng: km.NystroemMap(2, rng=rng).fit(SETS),
    lambda rng: km.EMKFeatures(2, n_iter=1, rng=rng).fit(np.eye(3)),
    lambda rng: km.ExpChi2Features(4, rng=rng).fit(np.eye(3)),
])
def test_rng_is_validated_and_named(make):
    for rng, error in ((True, TypeError), (1.5, TypeError), ("a", TypeError),
                       (-3, ValueError)):
        with pytest.raises(error, match="rng"):
            make(rng)
    assert make(np.array(3)) is not None  # a 0-d array seed


@pytest.mark.parametrize(("make", "match"), [
    (lambda: km.RandomFourierFeatures(10**10).fit(np.eye(3)),
     "\\(dim \\+ 1\\) \\* n_components"),
    (lambda: km.RandomDistributionFeatures(2**63).fit([np.eye(2)]),
     "\\(dim \\+ 1\\) \\* n_components"),
    (lambda: km.DoublyRandomDistributionFeatures(10**10, 10**10).fit([np.eye(2)]),
     "\\(dim \\+ 1\\) \\* n_components"),
    (lambda: km.DoublyRandomDistributionFeatures(10**3, 10**15).fit([np.eye(2)]),
     "n_components \\* n_components2"),
    (lambda: km.ExpChi2Features(2**62).fit(np.eye(3)),
     "\\(width \\+ 1\\) \\* n_components"),
    (lambda: km.AnchorMap(n_anchors=10**30).fit(np.eye(3)), "n_anchors must be <="),
    (lambda: km.EMKFeatures(2, n_iter=10**30).fit(np.eye(3)), "n_iter must be <="),
])
def test_huge_sizes_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# -------------------------------- arrays: points, histograms, kernel matrices


def test_nested_list_of_numbers_is_points():
    rows = [[0.0, 1.0], [1.0, 3.0], [3.0, 0.0], [2.0, 2.0]]
    want = np.array(rows)
    assert_array_equal(check_points(rows), want)
    assert_array_equal(check_points(tuple(map(tuple, rows))), want)
    assert_array_equal(check_points([np.array(r) for r in rows]), want)
    assert km.median_heuristic(rows) == km.median_heuristic(want)
    assert km.median_heuristic([[0.0], [1.0], [3.0]]) == 0.25
    # integers too
    assert_array_equal(check_points([[0, 1], [2, 3]]), [[0.0, 1.0], [2.0, 3.0]])
    # a list of 2-D arrays stays a list of sets (pooled)
    sets = [want[:3], want[3:]]
    assert_array_equal(check_points(sets), want)
    assert_array_equal(check_points([want]), want)
    emk = km.EMKFeatures(2, n_iter=2, rng=0).fit(rows)
    same = km.EMKFeatures(2, n_iter=2, rng=0).fit(want)
    assert_array_equal(emk.basis_, same.basis_)


@pytest.mark.parametrize(("X", "error", "match"), [
    ([[0.0, 1.0], [1.0]], ValueError, "rows of equal length"),
    ([[0.0, 1.0], np.ones((2, 2))], ValueError, "rows of equal length"),
    ([["a", "b"]], TypeError, "must hold real numbers"),
    ([[0.0, np.nan]], ValueError, "NaN or infinity"),
    ([[], []], ValueError, "no feature"),
    (np.zeros((3, 0)), ValueError, "no feature"),
    ([[1 + 1j, 0.0]], TypeError, "must hold real numbers"),
])
def test_bad_points(X, error, match):
    with pytest.raises(error, match=match):
        check_points(X, "X")


def test_python_ints_beyond_float_range_are_a_value_error():
    with pytest.raises(ValueError, match="X holds a number too large"):
        check_points([[10**400, 0]], "X")
    with pytest.raises(ValueError, match="X holds a number too large"):
        km.additive_chi2_kernel(np.array([[10**400, 1]], dtype=object))


def test_dask_points_are_refused_not_computed():
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="lazy Dask"):
        check_points(da.ones((4, 2), chunks=2), "points")


SPARSE_POINTS = ["coo_matrix", "coo_array", "dia_matrix", "dia_array", "bsr_matrix",
                 "bsr_array", "csr_matrix", "csc_array", "lil_matrix", "dok_array"]


@pytest.mark.parametrize("fmt", SPARSE_POINTS)
def test_sparse_points_are_a_type_error_naming_the_argument(fmt):
    P = getattr(scipy.sparse, fmt)(np.arange(1.0, 13.0).reshape(6, 2))
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse .*X\.toarray\(\)"):
        km.median_heuristic(P)
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse"):
        km.EMKFeatures(2, n_iter=1, rng=0).fit(P)
    with pytest.raises(TypeError, match=r"^basis is a scipy\.sparse"):
        km.EMKFeatures(basis=P).fit(SETS)
    with pytest.raises(TypeError, match=r"^X is a scipy\.sparse"):
        km.sum_match_kernel(P)  # a collection of sets
    with pytest.raises(TypeError, match=r"^points is a scipy\.sparse"):
        km.Bags(P, [0, 6])


def test_check_histograms_copies_only_when_needed():
    M = scipy.sparse.csr_matrix(np.eye(4))
    out = check_histograms(M)
    assert np.shares_memory(out.data, M.data)
    out = check_histograms(strided_csr())
    assert all(a.flags.c_contiguous for a in (out.data, out.indices, out.indptr))


@pytest.mark.parametrize("dtype", ["m8[s]", "M8[s]", "U8", "S8", "c16", "O"])
def test_kernel_matrices_refuse_non_real_dtypes(dtype):
    K = np.eye(3).astype("i8").astype(dtype)
    if dtype == "O":
        K[0, 0] = None
    for call, name in [(lambda: km.project_psd(K), "K"),
                       (lambda: km.PSDProjector().fit(K), "K_train"),
                       (lambda: km.divergence_kernel(K), "D"),
                       (lambda: km.level2_kernel(K, np.ones(3)), "K")]:
        with pytest.raises(TypeError, match=rf"^{name} must be a 2-D array of real"):
            call()


def test_out_of_core_models_never_freeze_the_arrays_they_hold():
    # the out-of-core models' fitted arrays are read-only views
    from kernelmaps._outofcore._models import RandomFeaturePCA

    a = np.arange(3.0)
    held = RandomFeaturePCA()._set_fitted({"a_": a})
    assert a.flags.writeable and not held.a_.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        held.a_[0] = 1.0


def test_maps_hold_ordinary_arrays():
    # a map keeps its arguments as given and its fitted arrays writeable,
    # pickled or not
    k = np.array([0.5, 1.0])
    fmap = km.Chi2DirectMap(k=k).fit(HIST)
    assert fmap.k is k and k.flags.writeable
    back = pickle.loads(pickle.dumps(fmap))
    assert back.k_.flags.writeable and back.k.flags.writeable
    rff = pickle.loads(pickle.dumps(km.RandomFourierFeatures(8, rng=0).fit(POINTS)))
    assert rff.weights_.flags.writeable and rff.offsets_.flags.writeable
