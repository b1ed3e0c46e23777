"""Bad input to the divergences, the divergence kernel and the PSD
projection: a clear TypeError/ValueError naming the argument."""

import numpy as np
import pytest

from kernelmaps import PSDProjector, divergence_kernel, project_psd, renyi_divergence

rng = np.random.default_rng(0)
SETS = [rng.normal(size=(8, 3)), rng.normal(size=(6, 3))]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"k": 6}, ValueError, r"X\[1\] has 6 point\(s\).*more than k=6"),
        ({"k": 0}, ValueError, "k must be >= 1"),
        ({"k": 2.5}, TypeError, "k must be an int"),
        ({"alpha": 1.0}, ValueError, "alpha must not be 1"),
        ({"alpha": 0.0}, ValueError, "alpha must be > 0"),
        ({"alpha": -0.5}, ValueError, "alpha must be > 0"),
        ({"alpha": np.nan}, ValueError, "alpha must be finite"),
        ({"alpha": [0.5, 1.0]}, ValueError, "alpha must not be 1"),
        ({"alpha": []}, ValueError, "alpha must not be empty"),
        ({"alpha": "0.5"}, TypeError, "alpha must be a real number"),
        ({"alpha": 7.0, "k": 5}, ValueError, r"\|alpha - 1\| < k=5.*k - alpha \+ 1"),
        ({"alpha": 2.0, "k": 1}, ValueError, r"\|alpha - 1\| < k=1"),
        ({"min_dist": -1.0}, ValueError, "min_dist must be >= 0"),
        ({"min_dist": np.inf}, ValueError, "min_dist must be finite"),
        ({"clamp": 1}, TypeError, "clamp must be True or False"),
        ({"workers": 0}, ValueError, "workers"),
    ],
)
def test_renyi_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        renyi_divergence(SETS, **kwargs)


def test_renyi_bad_sets():
    with pytest.raises(ValueError, match=r"Y\[0\] has 2 point\(s\).*at least k=3"):
        renyi_divergence(SETS, [np.ones((2, 3))], k=3)
    # k neighbours in Y are enough: m_j = k is fine.
    assert renyi_divergence(SETS, [rng.normal(size=(3, 3))], k=3).shape == (2, 1)
    with pytest.raises(ValueError, match="Incompatible dimension"):
        renyi_divergence(SETS, [np.ones((9, 2))])
    bad = rng.normal(size=(8, 3))
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"X\[1\] contains NaN"):
        renyi_divergence([SETS[0], bad])


@pytest.mark.parametrize(
    ("D", "kwargs", "error", "match"),
    [
        (np.ones((2, 3)), {}, ValueError, "D must be square"),
        (np.ones(3), {}, ValueError, "D must be 2-D"),
        (np.ones((0, 0)), {}, ValueError, "D is empty"),
        (np.array([[0, np.nan], [1, 0]]), {}, ValueError, "D contains NaN"),
        (np.array([["a"]]), {}, TypeError, "D must be a 2-D array of real"),
        (np.eye(2) * 1j, {}, TypeError, "D must be a 2-D array of real"),
        (np.eye(2), {"gamma": 0.0}, ValueError, "gamma must be > 0"),
        (np.eye(2), {"gamma": "1"}, TypeError, "gamma must be a real number"),
        (np.eye(2), {"power": -1}, ValueError, "power must be > 0"),
    ],
)
def test_divergence_kernel_bad_input(D, kwargs, error, match):
    with pytest.raises(error, match=match):
        divergence_kernel(D, **kwargs)


@pytest.mark.parametrize(
    ("K", "error", "match"),
    [
        (np.ones((2, 3)), ValueError, "{} must be square"),
        (np.ones((2, 2, 2)), ValueError, "{} must be 2-D"),
        (np.array([[1.0, np.inf], [0, 1]]), ValueError, "{} contains NaN"),
        ([[1, "x"], [0, 1]], TypeError, "{} must be a 2-D array of real"),
    ],
)
def test_psd_bad_matrix(K, error, match):
    """The errors name the argument: K of project_psd, K_train of fit."""
    with pytest.raises(error, match=match.format("K")):
        project_psd(K)
    with pytest.raises(error, match=match.format("K_train")):
        PSDProjector().fit(K)


def test_psd_bad_method_and_test_rows():
    with pytest.raises(ValueError, match="method must be one of 'clip'"):
        project_psd(np.eye(3), method="nearest")
    with pytest.raises(ValueError, match="method must be one of"):
        PSDProjector(method=None).fit(np.eye(3))
    with pytest.raises(ValueError, match="not fitted"):
        PSDProjector().transform(np.eye(3))
    projector = PSDProjector().fit(np.eye(3))
    with pytest.raises(ValueError, match="3 training sets"):
        projector.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="K_test_train contains NaN"):
        projector.transform(np.full((1, 3), np.nan))
