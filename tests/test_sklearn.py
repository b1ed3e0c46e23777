"""scikit-learn transformers of kernelmaps.sklearn: the estimator checks, and
the same features as the maps they wrap."""

import doctest
import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import RidgeClassifier  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from sklearn.utils import estimator_checks as checks  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import kernelmaps  # noqa: E402
from kernelmaps import sklearn as kms  # noqa: E402

from ._helpers import gamma_histograms  # noqa: E402

SMALL = {"ExpChi2Sampler": {"n_components": 20}, "RFFSampler": {"n_components": 20}}
ESTIMATORS = [getattr(kms, name)(**SMALL.get(name, {})) for name in kms.VECTOR_INPUT]
# Rows [mean, variance]: means may be negative, so the check that any
# negative value is rejected does not apply.
ESTIMATORS.append(kms.ExpectedKernel("iso"))
SET_INPUT = [name for name in kms.__all__
             if name not in kms.VECTOR_INPUT and name != "ExpectedKernel"]


def expected_failures(estimator):
    if isinstance(estimator, kms.ExpectedKernel):
        return {"check_fit_non_negative": "means may be negative; only the "
                "variance columns must be non-negative"}
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize(("estimator", "make_map"), [
    (kms.Chi2DirectSampler(3), lambda X: kernelmaps.Chi2DirectMap(3).fit(X)),
    (kms.Chi2ChebyshevSampler(4),
     lambda X: kernelmaps.Chi2ChebyshevMap(4, scale="median").fit(X)),
    (kms.HomogeneousKernelSampler("js", 1),
     lambda X: kernelmaps.HomogeneousKernelMap("js", 1)),
    (kms.AnchorSampler(n_anchors=20),
     lambda X: kernelmaps.AnchorMap("chi2", 20).fit(X)),
    (kms.ExpChi2Sampler(64, beta=2.0, random_state=3),
     lambda X: kernelmaps.ExpChi2Features(
         64, beta=2.0, chi2_map=kernelmaps.Chi2DirectMap(5).fit(X), rng=3).fit(X)),
    (kms.RFFSampler(32, gamma=0.5, random_state=4),
     lambda X: kernelmaps.RandomFourierFeatures(32, gamma=0.5, rng=4).fit(X)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_features_as_the_map(estimator, make_map, dtype):
    X = gamma_histograms(40, 7, seed=1).astype(dtype)
    Z = clone(estimator).fit(X).transform(X)
    assert Z.dtype == dtype
    assert_array_equal(Z, make_map(X).transform(X))
    names = clone(estimator).fit(X).get_feature_names_out()
    assert len(names) == Z.shape[1]


def test_random_state_as_randomstate_is_reproducible():
    X = gamma_histograms(30, 5, seed=2)
    a = kms.RFFSampler(16, random_state=np.random.RandomState(0)).fit_transform(X)
    b = kms.RFFSampler(16, random_state=np.random.RandomState(0)).fit_transform(X)
    c = kms.RFFSampler(16, random_state=np.random.RandomState(1)).fit_transform(X)
    assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_pipeline_grid_search_and_pickle():
    # Two classes of histograms that differ in shape, not in mean: the
    # exp-chi2 features separate them, and the fitted pipeline pickles.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.dirichlet(np.full(10, 0.3), 150),
                   rng.dirichlet(np.full(10, 3.0), 150)])
    y = np.repeat([0, 1], 150)
    order = rng.permutation(300)
    X, y = X[order], y[order]
    pipe = make_pipeline(kms.ExpChi2Sampler(100, random_state=0), RidgeClassifier())
    search = GridSearchCV(pipe, {"expchi2sampler__beta": [0.5, 2.0],
                                 "expchi2sampler__n_components": [50, 100]}, cv=3)
    search.fit(X[:200], y[:200])
    assert search.score(X[200:], y[200:]) > 0.9
    copy = pickle.loads(pickle.dumps(search.best_estimator_))
    assert_array_equal(copy.predict(X[200:]), search.predict(X[200:]))


def test_negative_input_is_rejected():
    with pytest.raises(ValueError, match="Negative values"):
        kms.Chi2DirectSampler().fit(-np.ones((3, 2)))


def histogram_adapters():
    return [kms.Chi2DirectSampler(3), kms.Chi2ChebyshevSampler(3),
            kms.HomogeneousKernelSampler(order=1), kms.AnchorSampler(n_anchors=5),
            kms.ExpChi2Sampler(8, random_state=0), kms.RFFSampler(8, random_state=0)]


@pytest.mark.parametrize("bad", [
    np.array([["0.5", "0.25"], ["1", "2"]]),
    np.array([[b"0.5", b"0.25"], [b"1", b"2"]]),
    np.array([["0.5", "0.25"], ["1", "2"]], dtype=object),
    [["0.5", "0.25"], ["1", "2"]],
    np.array([["2020-01-01", "2020-01-02"], ["2020-01-03", "2020-01-04"]],
             dtype="datetime64[D]"),
    np.array([[1, 2], [3, 4]], dtype="timedelta64[s]"),
], ids=["str", "bytes", "object-str", "list-str", "datetime64", "timedelta64"])
def test_adapters_refuse_strings_and_datetimes(bad):
    good = np.array([[0.5, 0.25], [1.0, 2.0]])
    for est in histogram_adapters():
        with pytest.raises(TypeError, match="X must hold real numbers"):
            clone(est).fit(bad)
        fitted = clone(est).fit(good)
        with pytest.raises(TypeError, match="X must hold real numbers"):
            fitted.transform(bad)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        kms.ExpectedKernel("iso").fit(bad)
    fitted = kms.ExpectedKernel("iso").fit(good)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        fitted.transform(bad)
    with pytest.raises(TypeError, match="must hold real numbers"):
        kms.RDFSampler(4).fit([bad, bad])


@pytest.mark.parametrize(("random_state", "error"), [
    (True, TypeError), (-1, ValueError), (2**40, ValueError), ("a", ValueError),
    (1.5, ValueError)])
def test_adapters_validate_random_state(random_state, error):
    X = np.random.default_rng(0).random((5, 3))
    with pytest.raises(error, match="random_state"):
        kms.RFFSampler(4, random_state=random_state).fit(X)


def test_adapters_name_their_own_parameters():
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(5, 2)) for _ in range(3)]
    with pytest.raises(ValueError, match="gamma2 must be > 0"):
        kms.DRDFSampler(8, 8, gamma2=-1.0).fit(sets)
    with pytest.raises(ValueError, match="n_components2 must be >= 1"):
        kms.DRDFSampler(8, 0).fit(sets)
    with pytest.raises(TypeError, match="n_components must be an int"):
        kms.DRDFSampler(True, 8).fit(sets)


def test_docstring_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(kms) if t.examples]
    assert len(tests) == len(kms.__all__)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


# Set-input transformers, tagged ``two_d_array=False`` (check_estimator
# declines to test such estimators): the checks that do not feed 2-D arrays
# run here. Left out,
# because they fit and transform (n, d) arrays as one sample per row, which
# a set-valued transformer does not take: check_transformer_general,
# check_transformer_data_not_an_array, check_transformer_preserve_dtypes,
# check_estimators_dtypes, check_fit_score_takes_y, check_estimators_nan_inf
# (the NaN/empty/width checks of sets are tested below instead),
# check_estimator_sparse_*, check_pipeline_consistency,
# check_estimators_pickle (pickling is tested on a fitted pipeline below),
# check_methods_sample_order_invariance, check_methods_subset_invariance,
# check_fit2d_1sample, check_fit2d_1feature, check_fit1d, check_dict_unchanged,
# check_dont_overwrite_parameters, check_n_features_in.
SET_CHECKS = [
    checks.check_estimator_cloneable,
    checks.check_no_attributes_set_in_init,
    checks.check_get_params_invariance,
    checks.check_set_params,
]


@pytest.mark.parametrize("name", SET_INPUT)
@pytest.mark.parametrize("check", SET_CHECKS, ids=lambda c: c.__name__)
def test_set_transformers_checks_that_apply(name, check):
    check(name, getattr(kms, name)())
    checks.check_parameters_default_constructible(name, getattr(kms, name)())


def two_distributions(n_sets, seed):
    """Sets from a Gaussian or from a uniform of the same mean and variance."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_sets)
    sets = [rng.normal(size=(rng.integers(20, 40), 2)) if c == 0 else
            rng.uniform(-np.sqrt(3), np.sqrt(3), size=(rng.integers(20, 40), 2))
            for c in y]
    return sets, y


@pytest.mark.parametrize(("estimator", "make_map"), [
    (kms.RDFSampler(32, gamma=0.5, random_state=1),
     lambda d: kernelmaps.RandomDistributionFeatures(32, gamma=0.5, rng=1).fit(
         [np.eye(d)])),
    (kms.DRDFSampler(32, 16, gamma=0.5, gamma2=2.0, random_state=2),
     lambda d: kernelmaps.DoublyRandomDistributionFeatures(
         32, 16, gamma=0.5, gamma2=2.0, rng=2).fit([np.eye(d)])),
])
def test_set_features_same_as_the_map(estimator, make_map):
    sets, _ = two_distributions(12, seed=3)
    expected = make_map(2).transform(sets)
    assert_array_equal(clone(estimator).fit(sets).transform(sets), expected)
    as_objects = np.empty(len(sets), dtype=object)
    as_objects[:] = sets
    assert_array_equal(clone(estimator).fit(as_objects).transform(as_objects),
                       expected)
    with pytest.raises(ValueError, match="features per point"):
        clone(estimator).fit(sets).transform([s[:, :1] for s in sets])
    with pytest.raises(ValueError, match="empty"):
        clone(estimator).fit(sets).transform([np.zeros((0, 2))])


def test_set_pipeline_grid_search_and_pickle():
    sets, y = two_distributions(160, seed=0)
    pipe = make_pipeline(kms.RDFSampler(100, random_state=0), LinearSVC(C=10.0))
    search = GridSearchCV(pipe, {"rdfsampler__gamma": [0.5, 2.0],
                                 "rdfsampler__n_components": [50, 200]}, cv=3)
    search.fit(sets[:100], y[:100])
    assert search.score(sets[100:], y[100:]) > 0.8  # chance is 0.5
    copy = pickle.loads(pickle.dumps(search.best_estimator_))
    assert_array_equal(copy.predict(sets[100:]), search.predict(sets[100:]))


def test_emk_sampler_learns_a_basis():
    sets, _ = two_distributions(10, seed=4)
    est = kms.EMKSampler(8, gamma=0.5, n_iter=20, random_state=0).fit(sets)
    assert est.transform(sets).shape == (10, 8)
    assert est.get_feature_names_out().shape == (8,)
    assert est.map_.basis.shape == (8, 2)


@pytest.mark.parametrize("kind", ["mean_map", "mmd"])
def test_set_kernel_train_and_test_rows_are_the_exact_kernels(kind):
    sets, _ = two_distributions(14, seed=5)
    train, test = sets[:9], sets[9:]
    est = kms.SetKernel(kind, gamma=0.7, gamma2=2.0)
    K = est.fit_transform(train)
    if kind == "mean_map":
        exact = kernelmaps.sum_match_kernel(train + test, gamma=0.7)
    else:
        exact = kernelmaps.mmd_kernel(train + test, gamma=0.7, gamma2=2.0)
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
    D = kernelmaps.renyi_divergence(train + test, k=3)
    S = np.maximum((D + D.T) / 2, 0.0)
    off = S[:10, :10][~np.eye(10, dtype=bool)]
    gamma = 1.0 / np.median(off)
    assert est.gamma_ == pytest.approx(gamma, rel=1e-12)
    full = np.exp(-gamma * S)
    proj = kernelmaps.PSDProjector("clip").fit(full[:10, :10])
    np.testing.assert_allclose(K, proj.transform(full[:10, :10]), atol=1e-12)
    np.testing.assert_allclose(est.transform(test), proj.transform(full[10:, :10]),
                               atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10


@pytest.mark.parametrize("kind", ["mean_map", "mmd", "renyi"])
def test_set_kernel_validates_each_input_once(kind, monkeypatch):
    # SetKernel computes on the specs: fit and transform check their sets
    # once each (fit checked them twice, through the public kernels).
    from kernelmaps._composite import _specs

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
    with pytest.raises(ValueError, match="features per point"):
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
    ({"workers": 0}, ValueError, "workers"),
    ({"workers": True}, TypeError, "workers"),
])
@pytest.mark.parametrize("kernel", ["renyi", "mean_map"])
def test_set_kernel_validates_every_parameter_at_fit(kernel, params, error, match):
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(4)]
    with pytest.raises(error, match=match):
        kms.SetKernel(kernel, **params).fit(sets)


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
    K = est.fit_transform(sets)
    assert np.isfinite(K).all()
    assert np.isfinite(est.transform(sets)).all()
    D = kernelmaps.renyi_divergence(sets)
    want = kernelmaps.project_psd(kernelmaps.divergence_kernel(D, power=2))
    assert_allclose(kms.SetKernel("renyi").fit_transform(sets), want, atol=1e-12)
    # a default gamma beyond the float range (median ** -2000): NaN before
    est = kms.SetKernel("renyi", power=2000)
    K = est.fit_transform(sets)
    assert np.isfinite(K).all() and np.isfinite(est.transform(sets)).all()
    want = kernelmaps.project_psd(kernelmaps.divergence_kernel(D, power=2000))
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
    exact = kernelmaps.gaussian_expected_kernel(means, covs, gamma=0.5)
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
    K = sk.ExpectedKernel(covariance="diag", gamma=1.0).fit_transform(X)
    assert np.isfinite(K).all() and (K >= 0).all()
    est = sk.ExpectedKernel(covariance="diag", gamma=1.0,
                            workers=np.array(2)).fit(X / 1e308)
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
    pipe = make_pipeline(kms.RDFSampler(100, gamma=2.0, random_state=0),
                         LinearSVC())
    packed = cross_val_score(pipe, kernelmaps.Bags.from_list(sets), y, cv=3)
    listed = cross_val_score(pipe, sets, y, cv=3)
    assert_array_equal(packed, listed)
    assert packed.mean() > 0.7
