"""scikit-learn's estimator protocol: every feature map is a scikit-learn
transformer itself (the estimator checks where they apply, clone,
get_params and set_params, Pipeline, GridSearchCV, pickle, feature names),
and the kernel estimators of kernelmaps.sklearn (SetKernel, ExpectedKernel)."""

import doctest
import inspect
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import RidgeClassifier  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from sklearn.utils import estimator_checks as checks  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

import kernelmaps as km  # noqa: E402
from kernelmaps import sklearn as kms  # noqa: E402
from kernelmaps._base import FeatureMap  # noqa: E402

from ._helpers import gamma_histograms  # noqa: E402

# The maps do not subclass scikit-learn's BaseEstimator (kernelmaps does
# not import scikit-learn): they follow its protocol, which is what the
# checks test; scikit-learn warns about the base class as it collects them.
NOT_BASE_ESTIMATOR = (r"Estimator \w+ does not inherit from "
                      r"`sklearn\.base\.BaseEstimator`")
pytestmark = pytest.mark.filterwarnings(f"ignore:{NOT_BASE_ESTIMATOR}:UserWarning")

# Every map that takes 2-D input (rows: points or histograms), with the
# random maps seeded (the checks set random_state, which the maps call
# rng); the two scale modes of Chi2ChebyshevMap, Chi2DirectMap fitted or
# given its parameters, NystroemMap on histograms.
ROW_MAPS = [
    km.RandomFourierFeatures(20, rng=0),
    km.Chi2DirectMap(3),
    km.Chi2DirectMap(k=[0.1, 0.5]),
    km.Chi2ChebyshevMap(4, scale="median"),
    km.Chi2ChebyshevMap(4),
    km.HomogeneousKernelMap("js", 1),
    km.AnchorMap("chi2", 8),
    km.ExpChi2Features(20, rng=0),
    km.NystroemMap(5, kernel="chi2", rng=0),
    km.NystroemMap(5, kernel="exp_chi2", rng=0),
]
# Rows [mean, variance]: means may be negative, so the check that any
# negative value is rejected does not apply.
ESTIMATORS = [*ROW_MAPS, kms.ExpectedKernel("iso"), km.PSDProjector("clip"),
              km.PSDProjector("square")]

# The maps check their input themselves, with the package's messages (which
# name the argument): scikit-learn's checks of a few messages fail on the
# wording, not on the error.
MAP_FAILURES = {
    "check_estimators_empty_data_messages":
        "input without a feature is a ValueError with the package's own "
        "message, naming the argument (X is empty (shape (12, 0))), not "
        "scikit-learn's wording",
    "check_dtype_object":
        "an object array of non-numbers is refused with the package's own "
        "message, naming the argument (X must hold real numbers), not "
        "scikit-learn's wording",
    "check_complex_data":
        "complex input is a TypeError (its type is wrong), with the "
        "package's own message; scikit-learn expects a ValueError",
}
POSITIVE_ONLY_FAILURE = {
    "check_positive_only_tag_during_fit":
        "negative histograms are a ValueError with the package's own message, "
        "naming the argument (X contains negative values), not scikit-learn's "
        "wording (Negative values in data)",
}


# PSDProjector takes kernel matrices (tagged pairwise): the checks that
# give it other input, or expect scikit-learn's wording, fail on that.
PAIRWISE_FAILURES = {
    **{k: v.replace("(X", "(K_train").replace("X is", "K_train is")
       for k, v in MAP_FAILURES.items()},
    "check_estimators_nan_inf":
        "the check fits a (10, 3) matrix with a NaN: not square, refused as "
        "such before its NaN is seen",
    "check_n_features_in_after_fitting":
        "test rows of another width are refused with the maps' message, "
        "naming the argument (K_test_train has 1 features, but PSDProjector "
        "is expecting 10 features as input), not X",
    "check_fit2d_predict1d":
        "1-D test rows are refused with the package's own message, naming "
        "the argument (K_test_train must be 2-D), not scikit-learn's wording",
}


def expected_failures(estimator):
    if isinstance(estimator, km.PSDProjector):
        return PAIRWISE_FAILURES
    if isinstance(estimator, kms.ExpectedKernel):
        return {**MAP_FAILURES, "check_fit_non_negative": "means may be "
                "negative; only the variance columns must be non-negative"}
    if estimator.__sklearn_tags__().input_tags.positive_only:
        return {**MAP_FAILURES, **POSITIVE_ONLY_FAILURE}
    return dict(MAP_FAILURES)


# strict: a check listed above that passes fails the run (the list is
# exact)
_STRICT = ({"xfail_strict": True} if "xfail_strict" in
           inspect.signature(parametrize_with_checks).parameters else {})


with warnings.catch_warnings():  # the checks are listed here, at import
    warnings.filterwarnings("ignore", NOT_BASE_ESTIMATOR, UserWarning)
    _ESTIMATOR_CHECKS = parametrize_with_checks(
        ESTIMATORS, expected_failed_checks=expected_failures, **_STRICT)


@_ESTIMATOR_CHECKS
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# -- the maps of sets ----------------------------------------------------------

# The maps of sets are tagged ``two_d_array=False``: check_estimator declines
# to test them (a 2-D array is one set, or points, not n samples). The
# checks that feed no data run here. Left out, because they fit and
# transform (n, d) arrays as one sample per row: check_fit_score_takes_y,
# check_estimators_overwrite_params, check_dont_overwrite_parameters,
# check_estimators_fit_returns_self, check_readonly_memmap_input,
# check_estimators_unfitted, check_n_features_in_after_fitting,
# check_positive_only_tag_during_fit, check_estimators_dtypes,
# check_complex_data, check_dtype_object, check_estimators_empty_data_messages,
# check_pipeline_consistency, check_estimators_nan_inf,
# check_estimator_sparse_*, check_estimators_pickle, check_array_api_input,
# check_f_contiguous_array_estimator, check_transformer_*,
# check_transformers_unfitted, check_methods_sample_order_invariance,
# check_methods_subset_invariance, check_fit2d_1sample, check_fit2d_1feature,
# check_dict_unchanged, check_fit_idempotent, check_fit_check_is_fitted,
# check_n_features_in, check_fit1d, check_fit2d_predict1d. What they promise
# is tested on sets below (clone, refit, pickle, Pipeline, GridSearchCV,
# feature names) and in each map's tests (widths, NaN, empty sets, dtypes).
SET_MAPS = [
    km.RandomDistributionFeatures(20, rng=0),
    km.DoublyRandomDistributionFeatures(16, 8, rng=0),
    km.EMKFeatures(5, n_iter=5, rng=0),
    km.SlicedWassersteinFeatures(10, 8, rng=0),
    km.NystroemMap(5, rng=0),
]
SET_CHECKS = [
    checks.check_estimator_cloneable,
    checks.check_estimator_repr,
    checks.check_no_attributes_set_in_init,
    checks.check_get_params_invariance,
    checks.check_set_params,
    checks.check_do_not_raise_errors_in_init_or_set_params,
    checks.check_parameters_default_constructible,
    checks.check_mixin_order,
    checks.check_valid_tag_types,
    checks.check_estimator_tags_renamed,
]


@pytest.mark.parametrize("estimator", [*SET_MAPS, kms.SetKernel()], ids=repr)
@pytest.mark.parametrize("check", SET_CHECKS, ids=lambda c: c.__name__)
def test_set_input_checks_that_apply(estimator, check):
    check(type(estimator).__name__, clone(estimator))


def test_set_maps_are_tagged_and_declined_by_check_estimator():
    for fmap in SET_MAPS:
        tags = fmap.__sklearn_tags__()
        assert not tags.input_tags.two_d_array and tags.requires_fit
    for fmap in ROW_MAPS:
        assert fmap.__sklearn_tags__().input_tags.two_d_array


# -- every map: clone, set_params, Pipeline, GridSearchCV, pickle ---------------


def two_classes(kind, n, seed):
    """`n` objects of two classes and their labels: histograms (also taken
    as points) of different shapes, or sets of two spreads."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 2)
    if kind == "sets":
        X = [rng.normal(scale=1.0 + 0.8 * c, size=(rng.integers(20, 40), 2))
             for c in y]
    else:
        X = np.vstack([rng.dirichlet(np.full(8, 0.3 if c else 3.0)) for c in y])
    return X, y


# (the map, its input, a parameter and two values for the grid)
EVERY_MAP = [
    (km.RandomFourierFeatures(50, rng=0), "points", "gamma", [1.0, 10.0]),
    (km.RandomDistributionFeatures(50, rng=0), "sets", "gamma", [0.5, 2.0]),
    (km.DoublyRandomDistributionFeatures(50, 50, rng=0), "sets", "gamma2",
     [0.5, 2.0]),
    (km.EMKFeatures(8, n_iter=10, rng=0), "sets", "n_basis", [4, 8]),
    (km.SlicedWassersteinFeatures(20, 10, rng=0), "sets", "n_quantiles",
     [5, 10]),
    (km.Chi2DirectMap(3), "histograms", "n_terms", [2, 3]),
    (km.Chi2DirectMap(k=[0.1, 0.5]), "histograms", "k", [[0.1, 0.5], [0.2]]),
    (km.Chi2ChebyshevMap(4), "histograms", "scale", [0.1, "median"]),
    (km.HomogeneousKernelMap(), "histograms", "kernel", ["chi2", "js"]),
    (km.AnchorMap(n_anchors=10), "histograms", "n_anchors", [5, 10]),
    (km.ExpChi2Features(50, rng=0), "histograms", "beta", [0.5, 2.0]),
    (km.NystroemMap(10, rng=0), "sets", "gamma", [0.5, 2.0]),
    (km.NystroemMap(10, kernel="chi2", rng=0), "histograms", "n_components",
     [5, 10]),
]


@pytest.mark.parametrize(("fmap", "kind", "param", "values"), EVERY_MAP,
                         ids=[repr(m[0]) for m in EVERY_MAP])
def test_clone_set_params_pipeline_grid_search_pickle(fmap, kind, param, values):
    X, y = two_classes(kind, 120, seed=0)
    train, y_train, test, y_test = X[:80], y[:80], X[80:], y[80:]
    fitted = clone(fmap).fit(train)
    # a clone: the same parameters, unfitted
    twin = clone(fitted)
    assert repr(twin) == repr(fmap)
    assert not hasattr(twin, "n_features_in_")
    if twin.__sklearn_tags__().requires_fit:
        with pytest.raises(NotFittedError):
            check_is_fitted(twin)
    # set_params, then fit: the map of the new value
    assert twin.set_params(**{param: values[0]}) is twin
    assert twin.get_params()[param] == values[0]
    made = type(fmap)(**{**fmap.get_params(), param: values[0]})
    assert_array_equal(twin.fit_transform(train), made.fit_transform(train))
    # in a Pipeline, searched by GridSearchCV, pickled
    step = type(fmap).__name__.lower()
    search = GridSearchCV(make_pipeline(clone(fmap), RidgeClassifier()),
                          {f"{step}__{param}": values}, cv=2)
    search.fit(train, y_train)
    assert search.score(test, y_test) > 0.7  # chance is 0.5
    best = search.best_estimator_
    assert best[0].get_params()[param] == search.best_params_[f"{step}__{param}"]
    copy = pickle.loads(pickle.dumps(best))
    assert_array_equal(copy.predict(test), best.predict(test))
    assert_array_equal(copy[0].transform(test), best[0].transform(test))
    # feature names: the class name and the column number
    names = best[0].get_feature_names_out()
    assert list(names) == [f"{step}{i}" for i in range(best[0].n_features_out_)]
    assert list(best[:-1].get_feature_names_out()) == list(names)


def test_refit_with_an_int_seed_draws_the_same_a_generator_moves_on():
    X = gamma_histograms(30, 5, seed=2)
    seeded = km.ExpChi2Features(16, rng=0)
    Z = seeded.fit_transform(X)
    assert_array_equal(seeded.fit_transform(X), Z)
    assert_array_equal(clone(seeded).fit_transform(X), Z)
    moving = km.ExpChi2Features(16, rng=np.random.default_rng(0))
    assert_array_equal(moving.fit_transform(X), Z)  # the same first draw
    assert not np.array_equal(moving.fit_transform(X), Z)


def test_rng_as_randomstate_is_reproducible():
    X = gamma_histograms(30, 5, seed=2)

    def features(seed):
        return km.RandomFourierFeatures(
            16, rng=np.random.RandomState(seed)).fit_transform(X)

    assert_array_equal(features(0), features(0))
    assert not np.array_equal(features(0), features(1))


def test_pipeline_grid_search_and_pickle():
    # Two classes of histograms that differ in shape, not in mean: the
    # exp-chi2 features separate them, and the fitted pipeline pickles.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.dirichlet(np.full(10, 0.3), 150),
                   rng.dirichlet(np.full(10, 3.0), 150)])
    y = np.repeat([0, 1], 150)
    order = rng.permutation(300)
    X, y = X[order], y[order]
    pipe = make_pipeline(km.ExpChi2Features(100, rng=0), RidgeClassifier())
    search = GridSearchCV(pipe, {"expchi2features__beta": [0.5, 2.0],
                                 "expchi2features__n_components": [50, 100]},
                          cv=3)
    search.fit(X[:200], y[:200])
    assert search.score(X[200:], y[200:]) > 0.9
    copy = pickle.loads(pickle.dumps(search.best_estimator_))
    assert_array_equal(copy.predict(X[200:]), search.predict(X[200:]))


def test_negative_input_is_rejected():
    with pytest.raises(ValueError, match="X contains negative values"):
        km.Chi2DirectMap().fit(-np.ones((3, 2)))


def row_maps():
    return [km.Chi2DirectMap(3), km.Chi2ChebyshevMap(3),
            km.HomogeneousKernelMap(order=1), km.AnchorMap(n_anchors=5),
            km.ExpChi2Features(8, rng=0), km.RandomFourierFeatures(8, rng=0),
            km.NystroemMap(2, kernel="chi2", rng=0)]


@pytest.mark.parametrize("bad", [
    np.array([["0.5", "0.25"], ["1", "2"]]),
    np.array([[b"0.5", b"0.25"], [b"1", b"2"]]),
    np.array([["0.5", "0.25"], ["1", "2"]], dtype=object),
    [["0.5", "0.25"], ["1", "2"]],
    np.array([["2020-01-01", "2020-01-02"], ["2020-01-03", "2020-01-04"]],
             dtype="datetime64[D]"),
    np.array([[1, 2], [3, 4]], dtype="timedelta64[s]"),
], ids=["str", "bytes", "object-str", "list-str", "datetime64", "timedelta64"])
def test_maps_refuse_strings_and_datetimes(bad):
    good = np.array([[0.5, 0.25], [1.0, 2.0]])
    for fmap in row_maps():
        with pytest.raises(TypeError, match="X must hold real numbers"):
            clone(fmap).fit(bad)
        fitted = clone(fmap).fit(good)
        with pytest.raises(TypeError, match="X must hold real numbers"):
            fitted.transform(bad)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        kms.ExpectedKernel("iso").fit(bad)
    fitted = kms.ExpectedKernel("iso").fit(good)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        fitted.transform(bad)
    with pytest.raises(TypeError, match="must hold real numbers"):
        km.RandomDistributionFeatures(4).fit([bad, bad])


def test_no_adapters_and_random_state_is_rng():
    # the maps are the estimators: kernelmaps.sklearn holds the kernel
    # estimators only, and none of the maps' names
    assert kms.__all__ == ["ExpectedKernel", "SetKernel"]
    with pytest.raises(ImportError):
        from kernelmaps.sklearn import RandomFourierFeatures  # noqa: F401
    maps = [name for name in dir(km) if isinstance(getattr(km, name), type)
            and issubclass(getattr(km, name), FeatureMap)]
    assert "RandomFourierFeatures" in maps and "NystroemMap" in maps
    for name in [*maps, "RFFSampler", "RDFSampler", "DRDFSampler", "EMKSampler",
                 "Chi2DirectSampler", "Chi2ChebyshevSampler",
                 "HomogeneousKernelSampler", "AnchorSampler", "ExpChi2Sampler",
                 "NystroemSampler"]:
        assert not hasattr(kms, name), name
    # scikit-learn's name of the seed: a TypeError saying to write rng
    with pytest.raises(TypeError, match=r"takes the seed as rng.*write rng=0"):
        km.RandomFourierFeatures(4, random_state=0)


# -- feature names of DataFrames ---------------------------------------------------


class Frame:
    """The little of a DataFrame that the maps read: the column names and
    the values (pandas need not be installed)."""

    def __init__(self, values, columns):
        self.values = np.asarray(values)
        self.columns = list(columns)
        self.shape = self.values.shape

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def frame_types():
    """Frame, and pandas' DataFrame where pandas is installed."""
    try:
        import pandas
    except ImportError:
        return [Frame]
    return [Frame, pandas.DataFrame]


@pytest.mark.parametrize("fmap", ROW_MAPS, ids=repr)
def test_dataframe_column_names_are_checked_at_transform(fmap):
    H = gamma_histograms(12, 4, seed=5)
    names = ["a", "b", "c", "d"]
    for frame in frame_types():
        fitted = clone(fmap).fit(frame(H, columns=names))
        assert list(fitted.feature_names_in_) == names
        Z = fitted.transform(frame(H, columns=names))
        with pytest.warns(UserWarning, match="X does not have valid feature names"):
            assert_array_equal(fitted.transform(H), Z)
        with pytest.raises(ValueError, match="The feature names should match "
                                             "those that were passed during fit"):
            fitted.transform(frame(H[:, ::-1], columns=names[::-1]))  # reordered
        with pytest.raises(ValueError, match="The feature names should match"):
            fitted.transform(frame(H, columns=["a", "b", "c", "e"]))
        plain = clone(fmap).fit(H)
        assert not hasattr(plain, "feature_names_in_")
        with pytest.warns(UserWarning, match="X has feature names, but "
                                             rf"{type(fmap).__name__} was fitted "
                                             "without feature names"):
            assert_array_equal(plain.transform(frame(H, columns=names)), Z)


def test_pandas_dataframe_with_reordered_columns_raises_at_transform():
    pandas = pytest.importorskip("pandas")
    H = gamma_histograms(12, 4, seed=6)
    frame = pandas.DataFrame(H, columns=["a", "b", "c", "d"])
    for fmap in (km.RandomFourierFeatures(8, rng=0), km.Chi2DirectMap(3)):
        fitted = fmap.fit(frame)
        assert fitted.transform(frame).shape[0] == 12
        with pytest.raises(ValueError, match="The feature names should match"):
            fitted.transform(frame[["b", "a", "c", "d"]])


@pytest.mark.parametrize("fmap", ROW_MAPS, ids=repr)
@pytest.mark.parametrize("check", ["check_set_output_transform",
                                   "check_set_output_transform_pandas",
                                   "check_global_output_transform_pandas",
                                   "check_set_output_transform_polars",
                                   "check_global_set_output_transform_polars"])
def test_set_output_passes_scikit_learns_checks(fmap, check):
    # (the checks skip where pandas or polars is not installed; they fit on
    # a DataFrame and transform an array, which warns as in scikit-learn)
    from sklearn.utils import estimator_checks

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X (does not have valid|has) feature "
                                "names", UserWarning)
        getattr(estimator_checks, check)(type(fmap).__name__, fmap)


@pytest.mark.parametrize("fmap", [
    km.RandomDistributionFeatures(6, rng=0),
    km.SlicedWassersteinFeatures(4, n_quantiles=3, rng=0),
    km.DoublyRandomDistributionFeatures(6, 5, rng=0),  # (a map inside)
], ids=repr)
def test_set_output_of_the_maps_of_sets(fmap):
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    sets = [rng.normal(size=(n, 2)) for n in (3, 5, 4)]
    F = clone(fmap).fit_transform(sets)
    frame = clone(fmap).set_output(transform="pandas").fit_transform(sets)
    assert isinstance(frame, pandas.DataFrame)
    assert_array_equal(frame.to_numpy(), F)
    assert list(frame.columns) == list(clone(fmap).fit(sets).get_feature_names_out())
    with sklearn.config_context(transform_output="pandas"):
        assert isinstance(clone(fmap).fit_transform(sets), pandas.DataFrame)
        # the package's own calls of transform take arrays
        km.mmd_test(sets, sets[::-1], method="linear", feature_map=clone(fmap),
                    rng=0)
        # the map's own setting first
        assert isinstance(clone(fmap).set_output(transform="default")
                          .fit_transform(sets), np.ndarray)
    with pytest.raises(ValueError, match="transform must be one of 'default', "
                                         "'pandas', 'polars'; got 'numpy'"):
        clone(fmap).set_output(transform="numpy")


def test_set_output_of_sparse_features_is_refused_clearly():
    pytest.importorskip("pandas")
    H = scipy.sparse.csr_matrix(gamma_histograms(6, 4, seed=1))
    fmap = km.Chi2DirectMap(2).set_output(transform="pandas")
    with pytest.raises(ValueError, match=r"Pandas output does not support sparse "
                                         "data: Chi2DirectMap.transform gave a "
                                         "scipy"):
        fmap.fit_transform(H)


# -- sets ----------------------------------------------------------------------------


def two_distributions(n_sets, seed):
    """Sets from a Gaussian or from a uniform of the same mean and variance."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_sets)
    sets = [rng.normal(size=(rng.integers(20, 40), 2)) if c == 0 else
            rng.uniform(-np.sqrt(3), np.sqrt(3), size=(rng.integers(20, 40), 2))
            for c in y]
    return sets, y


@pytest.mark.parametrize("fmap", [
    km.RandomDistributionFeatures(32, gamma=0.5, rng=1),
    km.DoublyRandomDistributionFeatures(32, 16, gamma=0.5, gamma2=2.0, rng=2),
    km.EMKFeatures(6, gamma=0.5, n_iter=5, rng=3),
    km.SlicedWassersteinFeatures(8, 6, rng=5),
    km.NystroemMap(6, gamma=0.5, rng=4),
], ids=repr)
def test_set_maps_take_lists_object_arrays_and_refuse_other_widths(fmap):
    sets, _ = two_distributions(12, seed=3)
    expected = clone(fmap).fit(sets).transform(sets)
    as_objects = np.empty(len(sets), dtype=object)
    as_objects[:] = sets
    assert_allclose(clone(fmap).fit(as_objects).transform(as_objects), expected,
                    rtol=1e-14, atol=1e-14)
    name = type(fmap).__name__
    with pytest.raises(ValueError, match=r"has 1 features, but \w+ is expecting 2 "
                                         r"features as input"):
        clone(fmap).fit(sets).transform([s[:, :1] for s in sets])
    with pytest.raises(ValueError, match="empty"):
        clone(fmap).fit(sets).transform([np.zeros((0, 2))])
    assert name in repr(fmap)


def test_set_pipeline_grid_search_and_pickle():
    sets, y = two_distributions(160, seed=0)
    pipe = make_pipeline(km.RandomDistributionFeatures(100, rng=0),
                         LinearSVC(C=10.0))
    search = GridSearchCV(pipe, {"randomdistributionfeatures__gamma": [0.5, 2.0],
                                 "randomdistributionfeatures__n_components":
                                     [50, 200]}, cv=3)
    search.fit(sets[:100], y[:100])
    assert search.score(sets[100:], y[100:]) > 0.8  # chance is 0.5
    copy = pickle.loads(pickle.dumps(search.best_estimator_))
    assert_array_equal(copy.predict(sets[100:]), search.predict(sets[100:]))


def test_emk_learns_a_basis():
    sets, _ = two_distributions(10, seed=4)
    est = km.EMKFeatures(8, gamma=0.5, n_iter=20, rng=0).fit(sets)
    assert est.transform(sets).shape == (10, 8)
    assert est.get_feature_names_out().shape == (8,)
    assert est.basis_.shape == (8, 2)


def test_docstring_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(kms) if t.examples]
    assert len(tests) == len(kms.__all__)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


# -- the kernel estimators: SetKernel, ExpectedKernel ---------------------------------


@pytest.mark.parametrize("kind", ["mean_map", "mmd"])
def test_set_kernel_train_and_test_rows_are_the_exact_kernels(kind):
    sets, _ = two_distributions(14, seed=5)
    train, test = sets[:9], sets[9:]
    est = kms.SetKernel(kind, gamma=0.7, gamma2=2.0)
    K = est.fit_transform(train)
    if kind == "mean_map":
        exact = km.sum_match_kernel(train + test, gamma=0.7)
    else:
        exact = km.mmd_kernel(train + test, gamma=0.7, gamma2=2.0)
    np.testing.assert_allclose(K, exact[:9, :9], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(est.transform(test), exact[9:, :9], rtol=1e-12,
                               atol=1e-14)


def test_set_kernel_renyi_projects_test_rows_like_the_training_kernel():
    sets, _ = two_distributions(16, seed=6)
    train, test = sets[:10], sets[10:]
    est = kms.SetKernel("renyi", k=3, power=1)
    K = est.fit_transform(train)
    # Reference: divergences of all sets at once, the kernel with the
    # training median scale, and the projection fitted on the training block.
    D = km.renyi_divergence(train + test, k=3)
    S = np.maximum((D + D.T) / 2, 0.0)
    off = S[:10, :10][~np.eye(10, dtype=bool)]
    gamma = 1.0 / np.median(off)
    assert est.gamma_ == pytest.approx(gamma, rel=1e-12)
    full = np.exp(-gamma * S)
    proj = km.PSDProjector("clip").fit(full[:10, :10])
    np.testing.assert_allclose(K, proj.transform(full[:10, :10]), atol=1e-12)
    np.testing.assert_allclose(est.transform(test), proj.transform(full[10:, :10]),
                               atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10


@pytest.mark.parametrize("kind", ["mean_map", "mmd", "renyi"])
def test_set_kernel_validates_each_input_once(kind, monkeypatch):
    # SetKernel computes on the specs: fit and transform check their sets
    # once each (fit checked them twice, through the public kernels).
    from kernelmaps.sets import _specs

    names, check_sets = [], _specs.check_sets

    def counted(X, name="X", **kwargs):
        names.append(name)
        return check_sets(X, name, **kwargs)

    monkeypatch.setattr(_specs, "check_sets", counted)
    sets, _ = two_distributions(12, seed=4)
    est = kms.SetKernel(kind, k=3).fit(sets[:8])
    assert names == ["X"]
    est.transform(sets[8:])
    assert names == ["X", "X"]


@pytest.mark.parametrize("kind", ["mean_map", "mmd", "renyi"])
def test_set_kernel_with_a_precomputed_svm_beats_chance(kind):
    from sklearn.svm import SVC

    # Gaussian sets of two spreads.
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 120)
    sets = [rng.normal(scale=1.0 + 0.8 * c, size=(40, 2)) for c in y]
    model = make_pipeline(kms.SetKernel(kind, gamma2=5.0),
                          SVC(kernel="precomputed", C=10.0))
    model.fit(sets[:80], y[:80])
    assert model.score(sets[80:], y[80:]) > 0.65  # chance is 0.5


def test_set_kernel_bad_input():
    sets, _ = two_distributions(6, seed=8)
    with pytest.raises(ValueError, match="kernel"):
        kms.SetKernel("nope").fit(sets)
    est = kms.SetKernel().fit(sets)
    with pytest.raises(ValueError, match="X has 1 features, but SetKernel is "
                       "expecting 2"):
        est.transform([s[:, :1] for s in sets])


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"gamma": -1}, ValueError, "gamma must be > 0"),
    ({"gamma": 0}, ValueError, "gamma must be > 0"),
    ({"gamma": True}, TypeError, "gamma must be a real number"),
    ({"gamma": np.nan}, ValueError, "gamma must be finite"),
    ({"power": -1}, ValueError, "power must be > 0"),
    ({"power": 0}, ValueError, "power must be > 0"),
    ({"power": [0.5]}, TypeError, "power must be a real number"),
    ({"power": "2"}, TypeError, "power must be a real number"),
    ({"psd": ""}, ValueError, "psd must be one of"),
    ({"psd": None}, ValueError, "psd must be one of"),
    ({"alpha": 1.0}, ValueError, "alpha must not be 1"),
    ({"alpha": [0.5, 2.0]}, TypeError, "alpha must be a real number"),
    ({"k": 0}, ValueError, "k must be >= 1"),
    ({"k": 2.5}, TypeError, "k must be an int"),
    ({"gamma2": 0}, ValueError, "gamma2 must be > 0"),
])
@pytest.mark.parametrize("kernel", ["renyi", "mean_map"])
def test_set_kernel_validates_every_parameter_at_fit(kernel, params, error, match):
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(4)]
    with pytest.raises(error, match=match):
        kms.SetKernel(kernel, **params).fit(sets)


@pytest.mark.parametrize("kind", ["sets", "gaussians"])
def test_kernel_estimators_take_workers_and_progress_as_the_maps(kind):
    # workers and progress are arguments of fit, transform and
    # fit_transform, as for the maps, not of the constructor
    rng = np.random.default_rng(0)
    if kind == "sets":
        X, make = [rng.normal(size=(20, 2)) for _ in range(5)], kms.SetKernel
    else:
        X = np.hstack([rng.normal(size=(5, 2)), rng.uniform(size=(5, 2))])
        make = kms.ExpectedKernel
    est = make()
    K = est.fit_transform(X, workers=1, progress=False)
    assert_array_equal(K, make().fit(X, workers=2).transform(X, workers=1)
                       if kind == "gaussians" else make().fit_transform(X, workers=2))
    assert_array_equal(est.transform(X[:2], workers=2), est.transform(X[:2]))
    for bad, error in [(0, ValueError), (True, TypeError)]:
        with pytest.raises(error, match="workers"):
            make().fit(X, workers=bad)
        with pytest.raises(error, match="workers"):
            est.transform(X, workers=bad)
    with pytest.raises(TypeError, match="progress"):
        est.transform(X, progress="yes")
    with pytest.raises(TypeError, match="workers"):
        make(workers=2)
    assert "workers" not in est.get_params()


@pytest.mark.parametrize("kernel", ["mean_map", "renyi", "sliced_wasserstein"])
def test_set_kernel_transform_in_blocks_under_a_progress_bar_and_of_dask_sets(
        kernel, capsys):
    # as the maps of sets: a bar over blocks of sets, and Dask sets give a
    # lazy kernel, computed a block of sets at a time
    pytest.importorskip("tqdm")
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    sets = [rng.normal(size=(rng.integers(10, 20), 2)) for _ in range(30)]
    est = kms.SetKernel(kernel, k=3, rng=0).fit(sets[:20])
    want = est.transform(sets[20:])
    capsys.readouterr()
    assert_array_equal(est.transform(sets[20:], progress=True), want)
    assert "100%" in capsys.readouterr().err
    test = km.Bags.from_list(sets[20:])
    lazy = est.transform(km.Bags(da.from_array(test.points, chunks=40),
                                 test.offsets))
    assert isinstance(lazy, da.Array)
    assert_allclose(lazy.compute(), want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["kernel", "sets", "gaussians"])
def test_kernel_transformers_follow_set_output_in_a_pipeline(kind):
    # PSDProjector, SetKernel and ExpectedKernel give DataFrames where a
    # Pipeline asks for them (PSDProjector was refused: no set_output)
    pd = pytest.importorskip("pandas")
    from sklearn.svm import SVC

    rng = np.random.default_rng(1)
    y = np.arange(8) % 2
    if kind == "kernel":
        A = rng.normal(size=(8, 8))
        X, make = (A + A.T) / 2, km.PSDProjector
    elif kind == "sets":
        X, make = [rng.normal(scale=1 + c, size=(15, 2)) for c in y], kms.SetKernel
    else:
        X = np.hstack([rng.normal(size=(8, 2)), rng.uniform(size=(8, 1)) + y[:, None]])
        make = lambda: kms.ExpectedKernel("iso")  # noqa: E731
    pipe = make_pipeline(make(), SVC(kernel="precomputed")).set_output(
        transform="pandas").fit(X, y)
    frame = pipe[0].transform(X)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(pipe[0].get_feature_names_out())
    assert frame.columns[0] == type(pipe[0]).__name__.lower() + "0"
    plain = make().fit(X)
    assert_array_equal(frame.to_numpy(), plain.transform(X))
    assert_array_equal(make().set_output(transform="pandas").fit_transform(X)
                       .to_numpy(), make().fit_transform(X))
    assert_array_equal(pipe.predict(X), make_pipeline(
        make(), SVC(kernel="precomputed")).fit(X, y).predict(X))


def test_set_kernel_psd_square_and_0d_parameters():
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(4)]
    a = kms.SetKernel("renyi", power=np.array(2.0), k=np.int64(5)).fit_transform(sets)
    assert_array_equal(a, kms.SetKernel("renyi").fit_transform(sets))
    assert np.isfinite(kms.SetKernel("renyi", psd="square").fit(sets)
                       .transform(sets)).all()


def test_set_kernel_renyi_uses_the_stable_divergence_kernel():
    rng = np.random.default_rng(3)
    sets = [rng.normal(loc=c, size=(25, 2)) for c in (0, 0, 2, 2, 4)]
    est = kms.SetKernel("renyi", gamma=1e-320)  # subnormal gamma: K = 1
    with pytest.warns(km.DegenerateWarning, match="gamma is far too small"):
        K = est.fit_transform(sets)
    assert np.isfinite(K).all()
    assert np.isfinite(est.transform(sets)).all()
    D = km.renyi_divergence(sets)
    want = km.project_psd(km.divergence_kernel(D, power=2))
    assert_allclose(kms.SetKernel("renyi").fit_transform(sets), want, atol=1e-12)
    # a default gamma beyond the float range (median ** -2000): NaN before
    est = kms.SetKernel("renyi", power=2000)
    K = est.fit_transform(sets)
    assert np.isfinite(K).all() and np.isfinite(est.transform(sets)).all()
    want = km.project_psd(km.divergence_kernel(D, power=2000))
    assert_allclose(K, want, atol=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diag", "iso"])
def test_expected_kernel_rows_are_the_closed_form(covariance):
    rng = np.random.default_rng(9)
    n, d = 9, 3
    means = rng.normal(size=(n, d))
    if covariance == "full":
        A = rng.normal(size=(n, d, d))
        covs = A @ A.transpose(0, 2, 1) * 0.1
        X = np.hstack([means, covs.reshape(n, -1)])
    elif covariance == "diag":
        covs = rng.uniform(0.1, 1.0, size=(n, d))
        X = np.hstack([means, covs])
    else:
        covs = rng.uniform(0.1, 1.0, size=n)
        X = np.hstack([means, covs[:, None]])
    est = kms.ExpectedKernel(covariance, gamma=0.5)
    exact = km.gaussian_expected_kernel(means, covs, gamma=0.5)
    np.testing.assert_allclose(est.fit_transform(X[:6]), exact[:6, :6], rtol=1e-12)
    np.testing.assert_allclose(est.transform(X[6:]), exact[6:, :6], rtol=1e-12)


def test_expected_kernel_bad_input():
    with pytest.raises(ValueError, match="not d \\+ d \\* d"):
        kms.ExpectedKernel("full").fit(np.ones((3, 5)))
    with pytest.raises(ValueError, match="not 2 d"):
        kms.ExpectedKernel("diag").fit(np.ones((3, 5)))
    with pytest.raises(ValueError, match="Negative values"):
        kms.ExpectedKernel("diag").fit(np.array([[0.0, -1.0]]))
    with pytest.raises(ValueError, match="covariance"):
        kms.ExpectedKernel("nope").fit(np.ones((3, 4)))


def test_sklearn_expected_kernel_at_1e308():
    sk = pytest.importorskip("kernelmaps.sklearn")
    rng = np.random.default_rng(0)
    X = np.hstack([rng.uniform(-1, 1, (4, 2)), rng.uniform(0, 1, (4, 2))]) * 1e308
    with pytest.warns(km.DegenerateWarning, match="gamma is far too large"):
        K = sk.ExpectedKernel(covariance="diag", gamma=1.0).fit_transform(X)
    assert np.isfinite(K).all() and (K >= 0).all()
    est = sk.ExpectedKernel(covariance="diag", gamma=1.0).fit(
        X / 1e308, workers=np.array(2))
    again = pickle.loads(pickle.dumps(est))
    assert_array_equal(again.transform(X / 1e308), est.transform(X / 1e308))


def test_support_measure_machine_uses_the_spread():
    # Two classes with the same means but different spreads: an SVM on the
    # means is at chance, the support measure machine is not.
    from sklearn.svm import SVC

    rng = np.random.default_rng(10)
    n = 200
    y = rng.integers(0, 2, n)
    means = rng.normal(size=(n, 2))
    var = np.where(y == 1, 2.0, 0.05)
    X = np.hstack([means, var[:, None]])
    smm = make_pipeline(kms.ExpectedKernel("iso", gamma=1.0),
                        SVC(kernel="precomputed", C=10.0))
    smm.fit(X[:150], y[:150])
    means_only = make_pipeline(kms.ExpectedKernel("iso", gamma=1.0),
                               SVC(kernel="precomputed", C=10.0))
    zero = np.hstack([means, np.zeros((n, 1))])
    means_only.fit(zero[:150], y[:150])
    assert smm.score(X[150:], y[150:]) > 0.85
    assert means_only.score(zero[150:], y[150:]) < 0.7


def test_cross_validation_splits_a_bags():
    # scikit-learn indexes objects without a shape like lists: a Bags splits
    # into lists of its sets, and the scores are those of the list.
    from sklearn.model_selection import cross_val_score

    sets, y = two_distributions(90, seed=11)
    pipe = make_pipeline(km.RandomDistributionFeatures(100, gamma=2.0, rng=0),
                         LinearSVC())
    packed = cross_val_score(pipe, km.Bags.from_list(sets), y, cv=3)
    listed = cross_val_score(pipe, sets, y, cv=3)
    assert_array_equal(packed, listed)
    assert packed.mean() > 0.7
