"""`fit` of the maps, and the median heuristic, on arrays of other
libraries that compute them (issue 52): the state learned on the device
equals the NumPy fit's, and only what the state holds (a sample of at most
`MEDIAN_SAMPLE` points for the median heuristic, d column maxima) comes
to the host, never a copy of the data."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._gamma import MEDIAN_SAMPLE

from ._helpers import LIBRARIES, NATIVE, host_copies

pytest.importorskip("array_api_compat")

# Libraries whose arrays are fitted on their device (NATIVE), and JAX's
# (through the compiled engine on the CPU: the same state).
FITTED = sorted({*NATIVE, "jax"})


def on(library, objects):
    """NumPy `objects` (an array, a list of arrays, a Bags) in `library`."""
    to_library = LIBRARIES[library][0]
    if isinstance(objects, km.Bags):
        return km.Bags(to_library(objects.points.copy()), objects.offsets,
                       objects.weights)
    if isinstance(objects, list):
        return [to_library(a.copy()) for a in objects]
    return to_library(objects)


def many_points(seed=0, n=MEDIAN_SAMPLE + 300, d=3):
    """More points than the median heuristic samples."""
    return np.random.default_rng(seed).standard_normal((n, d))


def weighted_bags(seed=1):
    """Sets of 300 to 600 points (more than the sample in all), a third of
    their points of weight 0."""
    rng = np.random.default_rng(seed)
    sets = [rng.standard_normal((n, 2)) for n in (400, 600, 300)]
    weights = [rng.uniform(0.1, 2.0, n) * (rng.uniform(size=n) > 0.3)
               for n in (400, 600, 300)]
    return km.Bags.from_list(sets, weights=weights)


# -- the median heuristic -----------------------------------------------------

@pytest.mark.parametrize("library", FITTED)
@pytest.mark.parametrize("options", [{}, {"kernel": "laplacian"},
                                     {"sample": 50, "rng": 3}, {"sample": None}])
def test_median_heuristic_of_points_is_numpys(options, library):
    X = many_points()
    assert km.median_heuristic(on(library, X), **options) == km.median_heuristic(
        X, **options)


@pytest.mark.parametrize("library", FITTED)
def test_median_heuristic_of_weighted_sets_is_numpys(library):
    B = weighted_bags()
    assert km.median_heuristic(on(library, B)) == km.median_heuristic(B)
    # a generator: drawn from once, as by NumPy's path
    expected, generator = np.random.default_rng(5), np.random.default_rng(5)
    assert km.median_heuristic(on(library, B), sample=40, rng=generator) == (
        km.median_heuristic(B, sample=40, rng=expected))
    assert generator.random() == expected.random()


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_median_heuristic_of_a_list_of_rows(library):
    """A list of 1-D arrays: the rows of points, as for NumPy (found by the
    fuzz suite); ragged rows refused with NumPy's message."""
    X = many_points(n=20)
    assert km.median_heuristic(on(library, list(X))) == km.median_heuristic(
        list(X))
    with pytest.raises(ValueError, match="ragged sequence"):
        km.median_heuristic(on(library, [X[0], X[1, :2]]))


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_median_heuristic_copies_only_its_sample(library):
    X, B = many_points(), weighted_bags()
    for data in (X, B, [B.points[:700], B.points[700:]]):
        given = on(library, data)
        with host_copies() as sizes:
            km.median_heuristic(given)
        assert max(sizes) <= MEDIAN_SAMPLE * X.shape[1]


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_median_heuristic_bad_input_has_numpys_message(library):
    X = many_points()
    X[1200, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        km.median_heuristic(on(library, X))
    with pytest.raises(ValueError, match="at least 2 points"):
        km.median_heuristic(on(library, X[:1]))
    for sample, error in ((1, ValueError), ("a", TypeError), (2.5, TypeError)):
        with pytest.raises(error, match="sample must be"):
            km.median_heuristic(on(library, X[:5]), sample=sample)
    with pytest.raises(TypeError, match="rng must be"):
        km.median_heuristic(on(library, X[:5]), rng="x")


# -- the maps' fits -----------------------------------------------------------

def histograms(seed=2, n=MEDIAN_SAMPLE + 200, d=5):
    rng = np.random.default_rng(seed)
    return rng.gamma(0.5, size=(n, d)) * (rng.uniform(size=(n, d)) > 0.2)


# (map, its training data, whether its fit reads the values on the host:
# the statistics the compiled engine computes)
MAPS = {
    "rff": (lambda: km.RandomFourierFeatures(30, rng=0), many_points, False),
    "rff_laplacian": (lambda: km.RandomFourierFeatures(30, kernel="laplacian",
                                                       rng=0), many_points, False),
    "rdf": (lambda: km.RandomDistributionFeatures(30, rng=0), weighted_bags, False),
    "drdf": (lambda: km.DoublyRandomDistributionFeatures(30, 20, rng=0),
             lambda: km.Bags.from_list([many_points(s, 500) for s in range(4)]),
             False),
    "sliced": (lambda: km.SlicedWassersteinFeatures(8, n_quantiles=5, rng=0),
               weighted_bags, False),
    "emk_basis": (lambda: km.EMKFeatures(basis=many_points(3, 10, 2), gamma=0.5),
                  weighted_bags, False),
    "homogeneous": (lambda: km.HomogeneousKernelMap(order=2), histograms, False),
    "direct_k": (lambda: km.Chi2DirectMap(k=[0.5, 1.0, 2.0]), histograms, False),
    "anchors": (lambda: km.AnchorMap(n_anchors=6), histograms, False),
    "direct": (lambda: km.Chi2DirectMap(), histograms, True),
    "chebyshev": (lambda: km.Chi2ChebyshevMap(scale="median"), histograms, False),
    # (an even count: the mean of the two middle values, which overflows)
    "chebyshev_even": (lambda: km.Chi2ChebyshevMap(scale="median"),
                       lambda: np.array([[1e308, 1.5e308], [1.7e308, 1.2e308],
                                         [0.0, 0.0]]), False),
    "exp_chi2": (lambda: km.ExpChi2Features(40, rng=0), histograms, True),
    "anchors_kmeans": (lambda: km.AnchorMap(n_anchors=6, anchors="kmeans"),
                       histograms, True),
}


def _state(fmap):
    return {k: v for k, v in vars(fmap).items()
            if k.endswith("_") and not k.startswith("_on_device")}


def assert_same_state(fitted, expected):
    state, wanted = _state(fitted), _state(expected)
    assert state.keys() == wanted.keys()
    for name, value in wanted.items():
        if isinstance(value, np.ndarray):
            assert_array_equal(state[name], value, err_msg=name)
        elif isinstance(value, km._base.FeatureMap):
            assert_same_state(state[name], value)
        else:
            assert state[name] == value, name


@pytest.mark.parametrize("library", FITTED)
@pytest.mark.parametrize("name", sorted(MAPS))
def test_fitted_state_and_features_are_numpys(name, library):
    make, data, _ = MAPS[name]
    X = data()
    expected = make().fit(X)
    fitted = make().fit(on(library, X))
    assert_same_state(fitted, expected)
    to_numpy = LIBRARIES[library][1]
    Z = make().fit_transform(on(library, X))
    assert_allclose(to_numpy(Z), expected.transform(X), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("name", sorted(MAPS))
def test_the_fit_copies_no_data_to_the_host(name, library):
    """Only the state (a median's sample, column maxima) comes to the host,
    but for the maps that learn from every value on the host."""
    make, data, reads_values = MAPS[name]
    X = data()
    values = (X.points if isinstance(X, km.Bags) else X).size
    given = on(library, X)
    with host_copies() as sizes:
        make().fit(given)
    assert (max(sizes, default=0) >= values) == reads_values


def test_the_fit_keeps_the_gradient_path():
    """`fit_transform` of a tensor that asks for a gradient: the features
    of its fit are differentiable."""
    torch = pytest.importorskip("torch")
    X = torch.asarray(many_points(n=50)).requires_grad_()
    Z = km.RandomFourierFeatures(10, rng=0).fit_transform(X)
    Z.sum().backward()
    assert X.grad is not None and bool(torch.all(torch.isfinite(X.grad)))
