"""Weighted sets through scikit-learn's cross-validation: a `Bags` with point
weights is indexed as a whole by every splitter and search, so that the
folds keep their weights, and a fitted tool given sets without weights
says so. The reference: the same model fitted and scored by hand on each
fold, the fold's sets packed from their arrays and weights."""

import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn import model_selection as ms  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import RidgeClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import kernelmaps as km  # noqa: E402
from kernelmaps.sklearn import SetKernel  # noqa: E402


def pixel_clouds(n, seed=0):
    """`n` images of two classes as weighted point clouds on one 6 x 6
    grid, every pixel a point (most of weight 0), the class in the weights
    only: a bar at the top or at the bottom, plus noise. Without their
    weights the sets are all equal."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:6, 0:6]
    grid = np.column_stack([cols.ravel(), rows.ravel()]).astype(float)
    y = np.arange(n) % 2
    images = rng.uniform(0, 0.3, size=(n, 36)) * (rng.random((n, 36)) < 0.5)
    for image, label in zip(images, y):
        row = rng.integers(0, 2) if label else rng.integers(4, 6)
        image[row * 6 + rng.integers(0, 3): row * 6 + 6] += rng.uniform(2, 4)
    sets = [grid] * n
    weights = list(images)
    return km.Bags.from_list(sets, weights=weights), sets, weights, y


MODELS = {
    "SetKernel sliced_wasserstein": lambda: make_pipeline(
        SetKernel("sliced_wasserstein", n_projections=20, rng=0),
        SVC(kernel="precomputed", C=10)),
    "SetKernel mean_map": lambda: make_pipeline(
        SetKernel("mean_map"), SVC(kernel="precomputed", C=10)),
    "RandomDistributionFeatures": lambda: make_pipeline(
        km.RandomDistributionFeatures(100, rng=0), RidgeClassifier()),
    "SlicedWassersteinFeatures": lambda: make_pipeline(
        km.SlicedWassersteinFeatures(n_projections=20, n_quantiles=10, rng=0),
        RidgeClassifier()),
    "NystroemMap": lambda: make_pipeline(
        km.NystroemMap(n_components=10, kernel="sliced_wasserstein", rng=0),
        RidgeClassifier()),
}


def by_hand(model, sets, weights, y, folds):
    """The scores of `model` fitted and scored on each fold, the folds'
    sets packed from their arrays (never by indexing a Bags)."""
    def pack(index):
        return km.Bags.from_list([sets[i] for i in index],
                                 weights=[weights[i] for i in index])

    return [clone(model).fit(pack(train), y[train]).score(pack(test), y[test])
            for train, test in folds]


@pytest.mark.parametrize("name", MODELS)
def test_cross_val_score_keeps_the_weights(name):
    bags, sets, weights, y = pixel_clouds(40)
    cv = ms.StratifiedKFold(4, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the weights are kept
        scores = ms.cross_val_score(MODELS[name](), bags, y, cv=cv)
    expected = by_hand(MODELS[name](), sets, weights, y, cv.split(sets, y))
    np.testing.assert_array_equal(scores, expected)
    # (the weights carry the class: far above chance, where the sets that
    # lost their weights scored 0.5)
    assert scores.mean() >= 0.9, scores


@pytest.mark.parametrize("cv", [
    ms.KFold(3), ms.KFold(5, shuffle=True, random_state=1), ms.ShuffleSplit(
        3, test_size=0.25, random_state=0), ms.GroupKFold(4),
    ms.LeavePGroupsOut(1), ms.TimeSeriesSplit(3),
    ms.RepeatedStratifiedKFold(n_splits=2, n_repeats=2, random_state=0),
], ids=lambda cv: type(cv).__name__)
def test_every_splitter_gives_weighted_folds(cv):
    bags, sets, weights, y = pixel_clouds(24, seed=1)
    groups = (np.arange(24) % 4 if "Group" in type(cv).__name__ else None)
    model = MODELS["SlicedWassersteinFeatures"]()
    scores = ms.cross_val_score(model, bags, y, cv=cv, groups=groups)
    expected = by_hand(model, sets, weights, y, cv.split(sets, y, groups))
    np.testing.assert_array_equal(scores, expected)


def test_searches_predictions_and_splits_keep_the_weights():
    bags, sets, weights, y = pixel_clouds(32, seed=2)
    cv = ms.KFold(4, shuffle=True, random_state=0)
    model = MODELS["SetKernel sliced_wasserstein"]()
    search = ms.GridSearchCV(model, {"svc__C": [0.1, 10]}, cv=cv).fit(bags, y)
    for C, score in zip([0.1, 10], search.cv_results_["mean_test_score"]):
        expected = by_hand(clone(model).set_params(svc__C=C), sets, weights, y,
                           cv.split(sets))
        assert score == pytest.approx(np.mean(expected), abs=1e-15)
    assert isinstance(search.best_estimator_[0].train_, km.Bags)
    assert search.best_estimator_[0].train_.weights is not None

    predicted = ms.cross_val_predict(MODELS["RandomDistributionFeatures"](), bags,
                                     y, cv=cv)
    for train, test in cv.split(sets):
        model = MODELS["RandomDistributionFeatures"]().fit(bags[train], y[train])
        np.testing.assert_array_equal(predicted[test], model.predict(bags[test]))

    train, test = ms.train_test_split(bags, test_size=0.25, random_state=0)
    assert isinstance(train, km.Bags) and isinstance(test, km.Bags)
    assert len(train) + len(test) == 32
    assert train.weights is not None and test.weights is not None


@pytest.mark.parametrize("name", MODELS)
def test_sets_that_lost_their_weights_are_not_taken_silently(name):
    # a tool fitted on weighted sets, given the same sets without weights
    # (a list of their arrays): a warning at the user's line
    bags, sets, _, y = pixel_clouds(12)
    model = MODELS[name]().fit(bags, y)
    model.predict(bags)  # the weights kept: no warning (-W error)
    match = "X has no point weights, but .* was fitted on weighted sets"
    with pytest.warns(UserWarning, match=match):
        model.predict(sets)
    with pytest.warns(UserWarning, match=match) as caught:
        model[0].transform(sets)
    assert caught[0].filename == __file__
    # fitted without weights: sets without weights are what it expects
    moved = [s + np.array([i % 3, i % 5]) for i, s in enumerate(sets)]
    MODELS[name]().fit(moved, y).predict(moved)
