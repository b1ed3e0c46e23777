"""float32 in, float32 out: the `dtype` argument of the exact kernels.

The rule (kernelmaps._validation.check_dtype): None gives float32 when
every floating input is float32, else float64, as scikit-learn's pairwise
kernels do; float32 or float64 forces it. The arithmetic does not depend on
it: a float32 result is the float64 one rounded once, and a value beyond
the float32 range raises a ValueError naming `dtype`.
"""

import re

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km

from ._helpers import random_sets, sparse_histograms

HISTOGRAM_KERNELS = [km.additive_chi2_kernel, km.chi2_distance, km.exp_chi2_kernel,
                     km.intersection_kernel, km.hellinger_kernel, km.js_kernel]
SET_KERNELS = [km.sum_match_kernel, km.mmd, km.mmd_kernel]


def _renyi(X, Y=None, **kw):
    return km.renyi_divergence(X, Y, k=2, **kw)


def _transform(K, **kw):
    """PSDProjector.transform of test rows K, fitted on a float64 kernel."""
    train = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])
    return km.PSDProjector("clip").fit(train).transform(K, **kw)


def _fit_transform(K, **kw):
    return km.PSDProjector("flip").fit_transform(K, **kw)


def _cases():
    """(id, function, inputs of float64, and the indices of the floating
    inputs that a second collection gives (None: a single-input function))."""
    rng = np.random.default_rng(0)
    X, Y = rng.random((6, 5)), rng.random((4, 5))
    sets = [rng.normal(size=(n, 3)) for n in (5, 8, 6)]
    sets2 = [rng.normal(size=(n, 3)) + 0.5 for n in (7, 4)]
    means, covs = rng.normal(size=(4, 3)), rng.uniform(0.1, 1.0, size=(4, 3))
    means2, covs2 = rng.normal(size=(2, 3)), rng.uniform(0.1, 1.0, size=(2,))
    A = rng.normal(size=(4, 4))
    gram = A @ A.T
    indefinite = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])
    D = np.abs(rng.normal(size=(4, 4)))
    cases = [(f.__name__, f, [X, Y]) for f in HISTOGRAM_KERNELS]
    cases += [(f.__name__, f, [sets, sets2]) for f in SET_KERNELS]
    cases += [
        ("renyi_divergence", _renyi, [sets, sets2]),
        ("gaussian_expected_kernel", km.gaussian_expected_kernel,
         [means, covs, means2, covs2]),
        ("level2_kernel", km.level2_kernel, [gram, np.diag(gram)]),
        ("divergence_kernel", km.divergence_kernel, [D]),
        ("project_psd", km.project_psd, [indefinite]),
        ("PSDProjector.fit_transform", _fit_transform, [indefinite]),
        ("PSDProjector.transform", _transform, [rng.random((2, 3))]),
    ]
    return cases


CASES = _cases()
IDS = [c[0] for c in CASES]


def _as(inputs, dtype):
    """Every float array of `inputs` (arrays, or lists of arrays: sets) as
    `dtype`."""
    def cast(a):
        return [x.astype(dtype) for x in a] if isinstance(a, list) else a.astype(dtype)
    return [cast(a) for a in inputs]


@pytest.mark.parametrize(("name", "f", "inputs"), CASES, ids=IDS)
def test_float32_in_float32_out(name, f, inputs):
    # float32 values (exact in both types), then as float64.
    in32 = _as(inputs, np.float32)
    in64 = _as(in32, np.float64)
    got = f(*in32)
    assert got.dtype == np.float32
    # The same arithmetic as dtype=np.float64, rounded once.
    wide = f(*in32, dtype=np.float64)
    assert wide.dtype == np.float64
    assert_array_equal(got, wide.astype(np.float32))
    # and the float64 result to float32 accuracy (some kernels compute
    # float32 input in float32, with float64 sums).
    assert_allclose(got, f(*in64), rtol=2e-6, atol=1e-6)
    assert f(*in64).dtype == np.float64


@pytest.mark.parametrize(("name", "f", "inputs"), CASES, ids=IDS)
def test_dtype_forces_float32_for_float64_input(name, f, inputs):
    K = f(*inputs)
    for dtype in (np.float32, "float32", np.dtype(np.float32), "f4"):
        got = f(*inputs, dtype=dtype)
        assert got.dtype == np.float32
        assert_array_equal(got, K.astype(np.float32))
    assert_array_equal(f(*inputs, dtype="float64"), K)


@pytest.mark.parametrize(("name", "f", "inputs"), CASES, ids=IDS)
def test_mixed_and_integer_input_is_float64(name, f, inputs):
    if len(inputs) == 1:  # one floating input: an integer one
        ints = [np.rint(inputs[0] * 4).astype(np.int64)]
        if name == "PSDProjector.transform":
            ints = [np.abs(ints[0])]
        assert f(*ints).dtype == np.float64
        assert f(*ints, dtype=np.float32).dtype == np.float32
        return
    for i in range(len(inputs)):  # one of them float64, the others float32
        mixed = _as(inputs, np.float32)
        mixed[i] = _as([mixed[i]], np.float64)[0]
        got = f(*mixed)
        assert got.dtype == np.float64, i
        assert f(*mixed, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize(("name", "f", "inputs"), CASES, ids=IDS)
@pytest.mark.parametrize("bad", [int, np.float16, np.complex64, object, "foo",
                                 ">f8", True, 1.5, "float128", [np.float32]])
def test_bad_dtype(name, f, inputs, bad):
    with pytest.raises((TypeError, ValueError), match="dtype"):
        f(*inputs, dtype=bad)


def test_bad_dtype_before_the_computation():
    # A wrong dtype is refused with the other arguments, not after the work.
    rng = np.random.default_rng(1)
    X = rng.random((3, 2))
    with pytest.raises(TypeError, match=re.escape(
            "dtype must be None, numpy.float32 or numpy.float64, got "
            "'double precision'")):
        km.additive_chi2_kernel(X, dtype="double precision")


def test_overflow_of_float32_is_an_error():
    # float32 points whose linear kernel (|x|^2 = 2 * 9e38) is beyond float32
    # but finite in float64.
    sets = [np.full((2, 2), 3e19, dtype=np.float32)]
    with pytest.raises(ValueError, match=r"dtype=float32.*dtype=np\.float64"):
        km.sum_match_kernel(sets, kernel="linear")
    K = km.sum_match_kernel(sets, kernel="linear", dtype=np.float64)
    assert_allclose(K, [[1.8e39]], rtol=1e-6)
    X = np.full((2, 4), 2e38, dtype=np.float32)
    X[1, 0] = 1e38  # (rows apart: the kernel is not constant)
    for f in (km.additive_chi2_kernel, km.intersection_kernel, km.hellinger_kernel,
              km.js_kernel):
        with pytest.raises(ValueError, match="dtype"):
            f(X)
        assert np.isfinite(f(X, dtype=np.float64)).all()
    with pytest.raises(ValueError, match="dtype"):
        km.project_psd(np.diag([1e300, 1.0]), dtype=np.float32)
    with pytest.raises(ValueError, match="dtype"):
        km.level2_kernel(np.eye(2) * 1e300, np.full(2, 1e300), kind="linear",
                         dtype="float32")


def test_underflow_of_float32_gives_zeros():
    # Documented: below the float32 range the values round to 0 (no error).
    X = np.full((2, 3), 1e-300)
    X[1, 0] = 2e-300
    with pytest.warns(km.DegenerateWarning, match="its values are all 0 or "
                                                  "below the float range"):
        K = km.intersection_kernel(X, dtype=np.float32)
    assert K.dtype == np.float32 and not K.any()
    assert km.intersection_kernel(X)[0, 0] == pytest.approx(3e-300)


@pytest.mark.parametrize("f", HISTOGRAM_KERNELS)
def test_csr_float32(f):
    rng = np.random.default_rng(2)
    X = sparse_histograms(rng, 7, 9, dtype=np.float32)
    Y = sparse_histograms(rng, 5, 9, dtype=np.float32)
    Xs, Ys = scipy.sparse.csr_matrix(X), scipy.sparse.csr_array(Y)
    assert Xs.dtype == np.float32
    for args in ((Xs,), (Xs, Ys), (Xs, Y), (X, Ys)):
        got = f(*args)
        assert got.dtype == np.float32
        assert_array_equal(got, f(*args, dtype=np.float64).astype(np.float32))
    # float32 data with float64 on the other side: float64
    assert f(Xs, Ys.astype(np.float64)).dtype == np.float64
    assert f(Xs.astype(np.float64), Y).dtype == np.float64
    # integer CSR counts as float64
    assert f(scipy.sparse.csr_matrix(np.arange(1, 19, dtype=np.int32).reshape(
        2, 9))).dtype == np.float64


def test_set_kernels_bags_and_3d_arrays():
    rng = np.random.default_rng(3)
    sets = random_sets(rng, 4, 3, np.float32, low=2, high=6)
    bags = km.Bags.from_list(sets)
    cube = rng.normal(size=(3, 4, 3)).astype(np.float32)
    for f in SET_KERNELS:
        assert f(bags).dtype == np.float32
        assert f(cube).dtype == np.float32
        assert_array_equal(f(bags), f(sets))


def test_inputs_unchanged():
    rng = np.random.default_rng(4)
    X = rng.random((5, 4)).astype(np.float32)
    K = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]], np.float32)
    copies = X.copy(), K.copy()
    km.chi2_distance(X, dtype=np.float64)
    km.project_psd(K)
    km.divergence_kernel(K, dtype=np.float64)
    assert_array_equal(X, copies[0])
    assert_array_equal(K, copies[1])


def test_cast_checks_every_block():
    # The cast goes a block at a time: a value beyond float32 in the last
    # block, or just beyond its largest value, is found; the largest
    # float32 itself is not an overflow.
    from kernelmaps._validation import cast_output

    top = float(np.finfo(np.float32).max)
    values = np.ones((400, 500))
    values[-1, -1] = 1e39
    with pytest.raises(ValueError, match="dtype"):
        cast_output(values, np.dtype(np.float32), "X")
    values[-1, -1] = np.nextafter(top, np.inf) * (1 + 2**-24)  # rounds to inf
    with pytest.raises(ValueError, match="dtype"):
        cast_output(values, np.dtype(np.float32), "X")
    values[-1, -1] = top
    out = cast_output(values, np.dtype(np.float32), "X")
    assert out.dtype == np.float32 and out[-1, -1] == np.float32(top)
    assert_array_equal(out, values.astype(np.float32))
    assert cast_output(values, np.dtype(np.float64), "X") is values
    strided = values[::2, ::3]
    assert_array_equal(cast_output(strided, np.dtype(np.float32), "X"),
                       strided.astype(np.float32))
