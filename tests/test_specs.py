"""The kernel's spec is the only place its parameters are checked: every
parameter of every kernel over objects, passed through `kernel_params` of
`mmd_test` and `NystroemMap`, or as an argument of `SetKernel`, is refused
with the kernel function's own error (type and message) wherever the
function refuses it, and taken wherever the function takes it."""

import contextlib
import re
import warnings

import numpy as np
import pytest

import kernelmaps as km
from kernelmaps._spec import SPECS

RNG = np.random.default_rng(0)
SETS = km.Bags.from_list([RNG.normal(size=(8, 2)) + 0.1 * i for i in range(12)])
ROWS = RNG.dirichlet(np.ones(6), 12)
GAUSSIANS = (RNG.normal(size=(12, 2)), np.full(12, 0.5))
OBJECTS = {"sets": SETS, "rows": ROWS, "gaussians": GAUSSIANS}


def _renyi(X, alpha=0.99, k=5, min_dist=None, clamp=True, gamma=None, power=2):
    D = km.renyi_divergence(X, alpha=alpha, k=k, min_dist=min_dist, clamp=clamp)
    return km.divergence_kernel(D, gamma=gamma, power=power)


# Each kernel's public function of its objects and keyword parameters.
FUNCTIONS = {
    "mean_map": km.sum_match_kernel,
    "mmd": km.mmd_kernel,
    "renyi": _renyi,
    "sliced_wasserstein": lambda X, **kw: km.sliced_wasserstein_kernel(
        X, rng=0, **kw),
    "exp_chi2": km.exp_chi2_kernel,
    "expected": lambda X, **kw: km.gaussian_expected_kernel(*X, **kw),
}
# Values a parameter may be given that some function refuses (and some
# it takes, which the tools must take too).
VALUES = [-1.0, 0, 0.0, 1, 2.5, 4.0, np.inf, np.nan, True, [0.5], 1 + 2j,
          "0.5", "foo", "polynomial", "laplacian", "linear", 10**12, -3,
          np.float32(0.25), None]


def _cases():
    for name in FUNCTIONS:
        for param in SPECS[name].takes:
            if param in ("scale", "projections"):
                continue  # (the tools' own: not arguments of the function)
            for value in VALUES:
                yield name, param, value


def _outcome(call):
    """The exception type and message of `call`, or None where it
    returns."""
    try:
        call()
    except (TypeError, ValueError) as e:
        return type(e), str(e)
    return None


@contextlib.contextmanager
def _quiet():
    """No warnings (of degenerate kernels, say): errors only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _expected_error(name, param, value):
    objects = OBJECTS[SPECS[name].kind]
    if name == "renyi" and param == "alpha" and isinstance(value, list):
        # renyi_divergence takes several orders, the kernel one: its spec
        # says so (divergence_kernel would say its D is 3-D)
        return TypeError, ("alpha must be a real number (one order) for the "
                           "Renyi kernel, got [0.5]")
    with _quiet():
        return _outcome(lambda: FUNCTIONS[name](objects, **{param: value}))


@pytest.mark.parametrize(("name", "param", "value"), list(_cases()))
def test_nystroem_refuses_what_the_function_refuses(name, param, value):
    expected = _expected_error(name, param, value)
    objects = OBJECTS[SPECS[name].kind]
    with _quiet():
        got = _outcome(lambda: km.NystroemMap(
            5, kernel=name, kernel_params={param: value}, rng=0).fit(objects))
    if expected is None:
        assert got is None
    else:
        assert got == expected


def _test_params(name, param, value):
    """How `mmd_test` takes the parameter: its scale as gamma, the others
    in kernel_params."""
    if param == SPECS[name].scale and not (name == "mmd" and param == "gamma"):
        return {"gamma": value}
    return {"kernel_params": {param: value}}


@pytest.mark.parametrize(("name", "param", "value"), list(_cases()))
def test_mmd_test_refuses_what_the_function_refuses(name, param, value):
    expected = _expected_error(name, param, value)
    objects = OBJECTS[SPECS[name].kind]
    given = _test_params(name, param, value)
    if "gamma" in given and (isinstance(value, list) or value is None):
        return  # (a list of scales: the grid of the aggregated tests; None:
        # the default)
    with _quiet():
        got = _outcome(lambda: km.mmd_test(
            objects, objects, kernel=name, n_resamples=9, rng=0, **given))
    if expected is None:
        assert got is None
        return
    assert got is not None
    if "gamma" in given and param != "gamma":
        # the scale is mmd_test's gamma: the message names it so
        expected = (expected[0], re.sub(rf"\b{param}\b", "gamma", expected[1]))
    assert got == expected


SET_KERNEL_PARAMS = ("gamma", "gamma2", "alpha", "k", "power", "n_projections")


@pytest.mark.parametrize(("name", "param", "value"), [
    case for case in _cases()
    if case[0] in ("mean_map", "mmd", "renyi", "sliced_wasserstein")
    and case[1] in SET_KERNEL_PARAMS])
def test_set_kernel_refuses_what_the_function_refuses(name, param, value):
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    expected = _expected_error(name, param, value)
    if value is None and param != "gamma":
        return  # (None is SetKernel's own default only for gamma)
    with _quiet():
        got = _outcome(lambda: SetKernel(name, **{"k": 3, param: value}).fit(SETS))
    if name == "renyi" and param != "k" and not isinstance(value, list):
        # SetKernel's k=3: the function's error at k=3
        with _quiet():
            expected = _outcome(lambda: _renyi(SETS, k=3, **{param: value}))
    if expected is None:
        assert got is None
    else:
        assert got == expected


@pytest.mark.parametrize(("tool", "call"), [
    ("NystroemMap", lambda p, X: km.NystroemMap(
        5, kernel="renyi", kernel_params=p, rng=0).fit(X)),
    ("mmd_test", lambda p, X: km.mmd_test(
        X, X, kernel="renyi", kernel_params=p, n_resamples=9, rng=0)),
])
def test_the_issue_cases(tool, call):
    # alpha=4 with k=3: the function's message, not an all-ones kernel
    with pytest.raises(ValueError, match=r"alpha=4.0 needs \|alpha - 1\| < k=3"):
        call({"alpha": 4.0, "k": 3}, SETS)
    with pytest.raises(ValueError, match="degree must be"):
        km.mmd_test(SETS, SETS, kernel="mean_map", kernel_params={
            "kernel": "polynomial", "degree": -3})
    with pytest.raises(ValueError, match="kernel must be one of"):
        km.mmd_test(SETS, SETS, kernel="mean_map", kernel_params={"kernel": "foo"})



# The kernel function's other parameters, through SetKernel's kernel_params.
SET_KERNEL_EXTRA = {"mean_map": ("kernel", "degree", "coef0"),
                    "mmd": ("kernel", "degree", "coef0"),
                    "renyi": ("min_dist", "clamp"),
                    "sliced_wasserstein": ("draw",)}


@pytest.mark.parametrize(("name", "param", "value"), [
    case for case in _cases() if case[1] in SET_KERNEL_EXTRA.get(case[0], ())])
def test_set_kernel_params_refused_as_by_the_function(name, param, value):
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    with _quiet():
        expected = (_outcome(lambda: _renyi(SETS, k=3, **{param: value}))
                    if name == "renyi" else _expected_error(name, param, value))
        got = _outcome(lambda: SetKernel(name, k=3, kernel_params={
            param: value}).fit(SETS))
    assert got == expected


def test_set_kernel_params_of_its_own_arguments_refused():
    pytest.importorskip("sklearn")
    from kernelmaps.sklearn import SetKernel

    with pytest.raises(ValueError, match="give it as gamma="):
        SetKernel(kernel_params={"gamma": 1.0}).fit(SETS)
    with pytest.raises(ValueError, match="which the 'mean_map' kernel does not"):
        SetKernel(kernel_params={"alpha": 0.5}).fit(SETS)


@pytest.mark.parametrize("magnitude, beta", [(1.0, 0.7), (1e-315, 1e308),
                                             (1e-300, 1e300), (1e300, 1e-300)])
def test_exp_chi2_blocks_are_the_function(magnitude, beta):
    """The tools' exp-chi2 blocks (mmd_test, NystroemMap) are
    `exp_chi2_kernel`'s values bit for bit, at every magnitude (one
    computation: the distances at each pair's power-of-two level), at one
    scale and on a grid."""
    X = RNG.dirichlet(np.ones(7), 20) * magnitude
    spec = SPECS["exp_chi2"]("exp_chi2", {"beta": beta})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (degenerate at some magnitudes)
        np.testing.assert_array_equal(spec.matrix(X, None, beta, 1),
                                      km.exp_chi2_kernel(X, beta=beta))
        for K, b in zip(spec.blocks(X, X[:7], [beta / 2, beta], 1),
                        [beta / 2, beta], strict=True):
            np.testing.assert_array_equal(
                K, km.exp_chi2_kernel(X, X[:7], beta=b))


@pytest.mark.parametrize("kernel", ["sliced_wasserstein", "mmd"])
def test_default_scale_of_overflowing_distances_refused(kernel):
    """Distances beyond float64 (sets at 1e300) give a default gamma of 0:
    refused naming the scale (the sliced kernel raised a bare "math domain
    error" from its values at gamma 0; found by the fuzz suite)."""
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(4, 1)) * 1e300 for _ in range(5)]
    Y = [rng.normal(size=(3, 1)) for _ in range(4)]
    with pytest.raises(ValueError, match=r"beyond the float64 range|overflow"):
        km.mmd_test(X, Y, kernel=kernel, n_resamples=19, rng=0)


@pytest.mark.parametrize("magnitude", [1.0, 1e-300, 1e-160, 1e-150, 1e150,
                                       1e154, 1e160])
def test_sliced_wasserstein_blocks_are_the_function(magnitude):
    """The tools' sliced-Wasserstein blocks (mmd_test, NystroemMap) and
    Gram (SetKernel, NystroemMap's landmarks: the median rule) are
    `sliced_wasserstein_kernel`'s values bit for bit, at every magnitude
    (one computation: SW_2^2 in the units of the centred sets; failed
    before: the tools scaled SW_2^2 back first, 0 beyond 1e154, off in the
    last bit below 1e-154)."""
    S = km.Bags(SETS.points * magnitude, SETS.offsets)
    directions = km.sets.sliced_directions(2, 16, None, "iid", 0)[0]
    spec = SPECS["sliced_wasserstein"](
        "sliced_wasserstein", {"projections": directions})
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        gammas = list(np.clip([0.5 / np.float64(magnitude)**2,
                               2.0 / np.float64(magnitude)**2], 1e-300, 1e300))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (degenerate at some magnitudes)
        for K, g in zip(spec.blocks(S, S[:5], gammas, 1), gammas, strict=True):
            np.testing.assert_array_equal(K, km.sliced_wasserstein_kernel(
                S, S[:5], gamma=g, projections=directions))
        if not 1e-154 < magnitude < 1e155:  # (the median's gamma, or SW_2^2,
            return                          # beyond float64: refused)
        K, params = spec.function_gram(S, spec.params, 1, None)
        np.testing.assert_array_equal(K, km.sliced_wasserstein_kernel(
            S, projections=directions))
        np.testing.assert_array_equal(spec.matrix(S, None, params["gamma"], 1),
                                      km.sliced_wasserstein_kernel(
            S, gamma=params["gamma"], projections=directions))


@pytest.mark.parametrize("tool", ["nystroem", "mmd_test"])
def test_mmd_overflow_refused_as_by_the_function(tool):
    """The tools' MMD^2 is `mmd`'s (`mmd_squared`): where the point kernel's
    values overflow float64, the function's error, not a constant kernel
    (failed before: NystroemMap gave equal features, mmd_test statistic
    0)."""
    S = km.Bags(SETS.points * 1e10, SETS.offsets)
    params = {"kernel": "polynomial", "degree": 40}
    message = "the polynomial kernel values of X overflow float64"
    with pytest.raises(ValueError, match=message):
        km.mmd_kernel(S, **params)
    with pytest.raises(ValueError, match=message), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if tool == "nystroem":
            km.NystroemMap(5, kernel="mmd", kernel_params=params,
                           rng=0).fit(S)
        else:
            km.mmd_test(S[:6], S[6:], kernel="mmd", kernel_params=params,
                        rng=0)


@pytest.mark.parametrize("clamp", [True, False])
def test_renyi_gram_is_the_function(clamp):
    """The tools' Renyi Gram (SetKernel's fit, NystroemMap's landmarks) is
    the divergence kernel of `renyi_divergence` with the same parameters,
    bit for bit, clamp=False too (failed before: the tools clamped the
    divergences whatever `clamp`)."""
    params = {"alpha": 0.8, "k": 3, "clamp": clamp}
    spec = SPECS["renyi"]("renyi", params)
    D = km.renyi_divergence(SETS, **params)
    assert clamp or (D < 0).any()  # (the case clamp changes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for gamma in (None, 0.7):
            K, _ = spec.function_gram(SETS, {**spec.params, "gamma": gamma}, 1,
                                      None)
            np.testing.assert_array_equal(K, km.divergence_kernel(D, gamma=gamma))
