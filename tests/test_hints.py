"""What users of POT, SciPy and scikit-learn write, answered: point weights
given as arguments, seeds named random_state or seed, threads named n_jobs
get a TypeError that shows the call to write, and that call works."""

import functools
import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose

import kernelmaps as km

RNG = np.random.default_rng(0)
XS, XT = RNG.normal(size=(6, 2)), RNG.normal(size=(9, 2))
A, B = RNG.uniform(size=6), RNG.uniform(size=9)

# the functions of pairs of weighted sets
PAIRS = [km.sum_match_kernel, km.mmd, km.mmd_kernel, km.sliced_wasserstein,
         km.sliced_wasserstein_kernel]


@pytest.mark.parametrize("f", PAIRS, ids=lambda f: f.__name__)
def test_pot_users_call_shows_where_weights_go(f):
    # POT: ot.sliced_wasserstein_distance(xs, xt, a, b), positional or
    # named; SciPy: u_weights, v_weights
    for call in (lambda: f(XS, XT, A, B), lambda: f([XS], [XT], a=A, b=B),
                 lambda: f([XS], [XT], weights=[A])):
        with pytest.raises(TypeError) as err:
            call()
        message = str(err.value)
        assert message.startswith(f"{f.__name__}() got ")
        assert "Bags.from_list(sets, weights=[w_0, w_1, ...])" in message
        shown = f"{f.__name__}(Bags.from_list([xs], weights=[a]), " \
                "Bags.from_list([xt], weights=[b]))[0, 0]"
        assert shown in message
    # the call the message shows runs, and the weights count in it (the
    # directions of sliced Wasserstein fixed)
    fixed = functools.partial(f, rng=0) if "rng" in inspect.signature(
        f).parameters else f
    value = eval(shown, {f.__name__: fixed, "Bags": km.Bags, "xs": XS, "xt": XT,
                         "a": A, "b": B})
    X, Y = (km.Bags.from_list([s], weights=[w]) for s, w in ((XS, A), (XT, B)))
    assert_allclose(value, fixed(X, Y)[0, 0], rtol=1e-12)
    assert abs(value - fixed([XS], [XT])[0, 0]) > 1e-3 * abs(value)


def test_the_pot_call_gives_pots_distance():
    # ot.sliced_wasserstein_distance(xs, xt, a, b, projections=P) of POT,
    # written as the TypeError shows it (POT's weights sum to 1)
    ot = pytest.importorskip("ot")
    P = km.sets.sliced_directions(2, 50, None, "iid", 0)[0]
    want = ot.sliced_wasserstein_distance(XS, XT, A / A.sum(), B / B.sum(),
                                          projections=P.T)
    got = km.sliced_wasserstein(km.Bags.from_list([XS], weights=[A]),
                                km.Bags.from_list([XT], weights=[B]),
                                projections=P)[0, 0]
    assert_allclose(got, want, rtol=1e-12)


def test_mmd_test_shows_samples_of_weighted_sets():
    with pytest.raises(TypeError, match=r"mmd_test\(Bags.from_list\(sets_X, "
                                        r"weights=weights_X\), Bags"):
        km.mmd_test(XS, XT, A, B)
    with pytest.raises(TypeError, match=r"mmd_test\(\) takes the seed as rng"):
        km.mmd_test(XS, XT, random_state=0)


def test_median_heuristic_and_functions_without_weights():
    with pytest.raises(TypeError, match=r"median_heuristic\(Bags.from_list\("
                                        r"sets, weights=\[w_0, w_1, \.\.\.\]\)\)"):
        km.median_heuristic([XS], sample_weight=A)
    with pytest.raises(TypeError, match=r"renyi_divergence\(\) got a weights= "
                                        "argument, but it does not take point "
                                        "weights"):
        km.renyi_divergence([XS, XT], weights=[A, B])


@pytest.mark.parametrize("name", ["random_state", "seed"])
def test_seed_names_of_other_libraries(name):
    message = r"takes the seed as rng .*: write rng=3"
    with pytest.raises(TypeError, match=r"median_heuristic\(\) " + message):
        km.median_heuristic([XS], **{name: 3})
    with pytest.raises(TypeError, match="RandomFourierFeatures " + message):
        km.RandomFourierFeatures(**{name: 3})


@pytest.mark.parametrize("name", ["n_jobs", "num_threads"])
def test_thread_names_of_other_libraries(name):
    with pytest.raises(TypeError, match=r"sum_match_kernel\(\) takes the threads "
                                        "as workers .*: write workers=2"):
        km.sum_match_kernel([XS], **{name: 2})


def test_other_mistakes_keep_pythons_message_and_signatures_stay():
    with pytest.raises(TypeError, match="unexpected keyword argument 'gama'"):
        km.sum_match_kernel([XS], gama=1.0)
    with pytest.raises(TypeError, match="positional argument"):
        km.renyi_divergence([XS], [XT], 5)
    with pytest.raises(TypeError, match=r"takes from 1 to 2 positional"):
        km.sum_match_kernel([XS], [XT], "rbf")  # (not weights: Python's)
    assert "gamma" in inspect.signature(km.mmd).parameters
    assert km.mmd.__doc__ and km.mmd.__name__ == "mmd"
