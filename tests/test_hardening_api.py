"""Input validation and numerical robustness of the Python API layer:
regressions from the fuzzing campaign (bad input gets a clear ValueError or
TypeError naming the argument; no crash, hang, NaN/inf output or changed
input; valid input at any scale accepted)."""

import pickle

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps._validation import check_histograms, check_points, check_scalar


def dense(Z):
    return Z.toarray() if scipy.sparse.issparse(Z) else np.asarray(Z)


# ------------------------------------------------------------ scalar checks


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


def test_alpha_as_0d_array_and_numpy_scalar():
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(3)]
    want = km.renyi_divergence(sets, alpha=0.5)
    assert_array_equal(km.renyi_divergence(sets, alpha=np.array(0.5)), want)
    assert_array_equal(km.renyi_divergence(sets, alpha=np.float32(0.5)), want)
    assert_array_equal(km.renyi_divergence(sets, alpha=0.5, k=np.array(5)), want)
    with pytest.raises(TypeError, match="alpha"):
        km.renyi_divergence(sets, alpha=np.bool_(True))
    with pytest.raises(TypeError, match="k must be an int"):
        km.renyi_divergence(sets, k=np.array(True))


# ------------------------------------------------------------ points


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
    assert_array_equal(emk.basis, same.basis)


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


# ------------------------------------------------------------ histograms


def strided_csr():
    data2 = np.arange(1.0, 13.0)
    indices = np.array([0, 1, 2, 0, 2, 3])
    indptr = np.array([0, 3, 6])
    M = scipy.sparse.csr_matrix((data2[::2], indices, indptr), shape=(2, 4))
    assert not M.data.flags.c_contiguous
    return M


@pytest.mark.parametrize("f", [km.additive_chi2_kernel, km.chi2_distance,
                               km.exp_chi2_kernel, km.intersection_kernel,
                               km.hellinger_kernel, km.js_kernel])
def test_strided_csr_data_is_accepted_by_the_exact_kernels(f):
    M = strided_csr()
    before = M.data.copy()
    assert_allclose(f(M), f(M.toarray()), rtol=1e-12)
    assert_allclose(f(M, M), f(M.toarray()), rtol=1e-12)
    assert_array_equal(M.data, before)
    assert not M.data.flags.c_contiguous  # the caller's matrix is untouched


@pytest.mark.parametrize("make", [
    lambda X: km.Chi2DirectMap().fit(X),
    lambda X: km.Chi2ChebyshevMap(scale="median").fit(X),
    lambda X: km.HomogeneousKernelMap(),
    lambda X: km.AnchorMap(n_anchors=5).fit(X),
    lambda X: km.ExpChi2Features(8, rng=0).fit(X),
])
def test_strided_csr_data_is_accepted_by_the_maps(make):
    M = strided_csr()
    fmap = make(M)
    assert_allclose(dense(fmap.transform(M)), dense(fmap.transform(M.toarray())),
                    rtol=1e-12)


def test_check_histograms_copies_only_when_needed():
    M = scipy.sparse.csr_matrix(np.eye(4))
    out = check_histograms(M)
    assert np.shares_memory(out.data, M.data)
    out = check_histograms(strided_csr())
    assert all(a.flags.c_contiguous for a in (out.data, out.indices, out.indptr))


# ------------------------------------------------------------ Bags


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_bags_offsets_are_copied(dtype):
    points = np.arange(12.0).reshape(6, 2)
    offsets = np.array([0, 2, 6], dtype=dtype)
    bags = km.Bags(points, offsets)
    offsets[1] = 5  # the caller edits its array: the Bags keeps its sets
    assert_array_equal(bags.offsets, [0, 2, 6])
    assert not np.shares_memory(bags.offsets, offsets)
    assert not bags.offsets.flags.writeable
    assert offsets.flags.writeable  # the caller's array is not frozen
    assert_array_equal(bags.sizes, [2, 4])


def test_bags_points_are_a_documented_read_only_view():
    # Notes of the Bags docstring: C-contiguous float points are not copied;
    # the caller's array stays writeable and the Bags sees its changes.
    points = np.arange(12.0).reshape(6, 2)
    bags = km.Bags(points, [0, 2, 6])
    assert np.shares_memory(bags.points, points)
    assert points.flags.writeable and not bags.points.flags.writeable
    points[0, 0] = -1.0
    assert bags[0][0, 0] == -1.0
    assert "copy the points first" in km.Bags.__doc__


# ------------------------------------------------------------ AnchorMap


@pytest.fixture(scope="module")
def anchor_fit():
    H = np.random.default_rng(0).random((20, 4))
    return H, km.AnchorMap(n_anchors=8, n_neighbors=2).fit(H)


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"kernel": "rbf"}, ValueError, "kernel must be one of"),
    ({"kernel": None}, ValueError, "kernel must be one of"),
    ({"n_anchors": 1}, ValueError, "n_anchors must be >= 2"),
    ({"n_anchors": 2.5}, TypeError, "n_anchors must be an int"),
    ({"anchors": "random"}, ValueError, "anchors must be one of"),
    ({"energy": 0.0}, ValueError, "energy must be > 0"),
    ({"energy": 1.5}, ValueError, "energy must be <= 1"),
    ({"n_neighbors": 9}, ValueError, "n_neighbors must be <= 8"),
    ({"n_neighbors": True}, TypeError, "n_neighbors must be an int"),
    ({"weights": "foo"}, ValueError, "weights must be one of"),
])
def test_anchor_map_constructor_validates_every_parameter(change, error, match):
    args = {"kernel": "chi2", "n_anchors": 8, "n_neighbors": 2, **change}
    with pytest.raises(error, match=match):
        km.AnchorMap(**args)


def test_anchor_map_fit_never_freezes_the_training_data(anchor_fit):
    H, A = anchor_fit
    H = H.copy()
    B = km.AnchorMap(n_anchors=8, n_neighbors=2).fit(H)
    assert H.flags.writeable
    want = B.transform(H)
    assert_array_equal(want, A.transform(H))
    H[:] = np.nan  # the map keeps its own arrays
    assert np.isfinite(B.table).all() and np.isfinite(B.anchors).all()
    # lists and float32 work as training data
    C = km.AnchorMap(n_anchors=8, n_neighbors=2).fit(A.anchors.T.tolist())
    assert C.n_features_in == 4


def test_anchor_map_callable_kernel(anchor_fit):
    H, _ = anchor_fit
    B = km.AnchorMap(np.minimum, 8).fit(H)
    assert B.kernel is np.minimum
    assert np.isfinite(B.transform(H)).all()


def test_anchor_decode_validates_codes(anchor_fit):
    H, A = anchor_fit
    one = km.AnchorMap(n_anchors=8).fit(H)
    codes = one.codes(H)
    Z = one.transform(H)
    for dtype in (np.uint8, np.int8, np.uint64, np.int64):
        assert_array_equal(one.decode(codes.astype(dtype)), Z)
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(codes.astype(float))
    nan_codes = codes.astype(float)
    nan_codes[0, 0] = np.nan
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(nan_codes)  # NaN indices read out of bounds before
    with pytest.raises(TypeError, match="integer anchor indices"):
        one.decode(codes > 0)
    with pytest.raises(ValueError, match="codes must come from"):
        one.decode(codes[0])  # 1-D: an IndexError before
    with pytest.raises(ValueError, match="codes must come from"):
        one.decode(codes[:, :, None, None])
    # codes from another map with more anchors
    other = km.AnchorMap(n_anchors=200).fit(H * 2)
    with pytest.raises(ValueError, match="out of range"):
        one.decode(other.codes(H * 2))
    indices, weights = A.codes(H)
    assert_allclose(A.decode((indices, weights)), A.transform(H), atol=1e-6)
    bad = weights.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="weights contain NaN"):
        A.decode((indices, bad))
    with pytest.raises(TypeError, match="codes weights must hold real"):
        A.decode((indices, weights.astype(str)))
    with pytest.raises(ValueError, match="codes must come from"):
        A.decode((indices, weights, weights))
    with pytest.raises(ValueError, match="codes must come from"):
        A.decode((indices, weights[:, :, :1]))


@pytest.mark.parametrize("kernel", ["chi2", "js", "intersection", "hellinger"])
@pytest.mark.parametrize("anchors", ["uniform", "kmeans"])
@pytest.mark.parametrize("scale", [2.0**-600, 1e-300, 1e300, 1.7e308 / 4])
def test_anchor_map_fit_at_any_scale(kernel, anchors, scale):
    # Homogeneous kernels: the features of s x are sqrt(s) times those of x.
    H = np.random.default_rng(1).random((30, 3))
    H[:, 0] *= 4  # dimensions of different ranges
    ref = km.AnchorMap(kernel, 10, anchors=anchors).fit(H)
    big = km.AnchorMap(kernel, 10, anchors=anchors).fit(H * scale)
    Z = big.transform(H * scale)
    assert np.isfinite(Z).all()
    assert_allclose(Z / np.sqrt(scale), ref.transform(H), rtol=1e-9, atol=1e-12)
    assert_allclose(big.anchors / scale, ref.anchors, rtol=1e-12)


def test_anchor_map_fit_refuses_values_too_small_for_distinct_anchors():
    with pytest.raises(ValueError, match="distinct anchors"):
        km.AnchorMap(n_anchors=10).fit(np.full((3, 2), 5e-324))


def test_anchor_map_float32_input_with_features_beyond_float32(anchor_fit):
    H, _ = anchor_fit
    # A (Mercer) kernel whose anchor features are about 1e150.
    B = km.AnchorMap(lambda x, y: 1e300 * np.minimum(x, y), 8).fit(H)
    assert np.abs(B.table).max() > 1e100
    assert np.isfinite(B.transform(H)).all()
    with pytest.raises(ValueError, match="float32 range"):
        B.transform(H.astype(np.float32))


# ------------------------------------------------------------ divergence kernels


def divergences(n=6, seed=0):
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.1, 3.0, size=(n, n))
    np.fill_diagonal(D, 0.0)
    return D


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 2.0**-600, 1e160, 1e300,
                                   1.7e308 / 3])
@pytest.mark.parametrize("power", [1, 2, 0.5, 3.5])
def test_divergence_kernel_default_scale_at_any_magnitude(scale, power):
    # The default gamma makes the kernel invariant to the scale of D.
    D = divergences()
    K = km.divergence_kernel(D * scale, power=power)
    assert np.isfinite(K).all()
    assert_allclose(K, km.divergence_kernel(D, power=power), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize(("scale", "gamma"), [(1e160, 1e-320), (1e160, 1e-300),
                                              (1e-170, 1e300), (1e-300, 1e-10),
                                              (1e300, 1e-300), (1.0, 1e-320)])
def test_divergence_kernel_given_gamma_at_any_magnitude(scale, gamma):
    D = divergences()
    K = km.divergence_kernel(D * scale, gamma=gamma, power=2)
    assert np.isfinite(K).all()
    S = (D + D.T) / 2
    # exact value, in logs: gamma (scale S)^2
    want = np.exp(-np.exp(np.log(gamma) + 2 * (np.log(scale) + np.log(S + (S == 0)))))
    want[S == 0] = 1.0
    assert_allclose(K, want, rtol=1e-12, atol=1e-300)


def test_divergence_kernel_plain_formula_unchanged_at_ordinary_scales():
    D = divergences()
    S = (D + D.T) / 2
    assert_array_equal(km.divergence_kernel(D, gamma=0.7, power=1.5),
                       np.exp(-0.7 * S**1.5))
    off = S[~np.eye(len(S), dtype=bool)]
    assert_array_equal(km.divergence_kernel(D),
                       np.exp(-(1.0 / np.median(off) ** 2) * S**2))


def test_set_kernel_renyi_uses_the_stable_divergence_kernel():
    kms = adapters()

    rng = np.random.default_rng(3)
    sets = [rng.normal(loc=c, size=(25, 2)) for c in (0, 0, 2, 2, 4)]
    est = kms.SetKernel("renyi", gamma=1e-320)  # subnormal gamma: K = 1
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


# ------------------------------------------------------------ scikit-learn


def adapters():
    """`kernelmaps.sklearn`, or skip the test when scikit-learn is absent."""
    pytest.importorskip("sklearn")
    from kernelmaps import sklearn

    return sklearn


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
    kms = adapters()

    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(4)]
    with pytest.raises(error, match=match):
        kms.SetKernel(kernel, **params).fit(sets)


def test_set_kernel_psd_square_and_0d_parameters():
    kms = adapters()

    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(20, 2)) for _ in range(4)]
    a = kms.SetKernel("renyi", power=np.array(2.0), k=np.int64(5)).fit_transform(sets)
    assert_array_equal(a, kms.SetKernel("renyi").fit_transform(sets))
    assert np.isfinite(kms.SetKernel("renyi", psd="square").fit(sets)
                       .transform(sets)).all()


def histogram_adapters():
    kms = adapters()

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
    kms = adapters()
    from sklearn.base import clone

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
    kms = adapters()

    X = np.random.default_rng(0).random((5, 3))
    with pytest.raises(error, match="random_state"):
        kms.RFFSampler(4, random_state=random_state).fit(X)


def test_adapters_name_their_own_parameters():
    kms = adapters()

    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(5, 2)) for _ in range(3)]
    with pytest.raises(ValueError, match="gamma2 must be > 0"):
        kms.DRDFSampler(8, 8, gamma2=-1.0).fit(sets)
    with pytest.raises(ValueError, match="n_components2 must be >= 1"):
        kms.DRDFSampler(8, 0).fit(sets)
    with pytest.raises(TypeError, match="n_components must be an int"):
        kms.DRDFSampler(True, 8).fit(sets)


# ------------------------------------------------------------ random features


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"gamma2": -1}, ValueError, "gamma2 must be > 0"),
    ({"gamma2": 0.0}, ValueError, "gamma2 must be > 0"),
    ({"gamma2": np.inf}, ValueError, "gamma2 must be finite"),
    ({"gamma2": "1"}, TypeError, "gamma2 must be a real number"),
    ({"n_components2": 0}, ValueError, "n_components2 must be >= 1"),
    ({"n_components2": True}, TypeError, "n_components2 must be an int"),
    ({"n_components2": 2.5}, TypeError, "n_components2 must be an int"),
    ({"gamma": -1}, ValueError, r"^gamma must be > 0"),
    ({"n_components": 0}, ValueError, r"^n_components must be >= 1"),
    ({"rng": True}, TypeError, "rng must be None"),
    ({"rng": -1}, ValueError, "rng"),
    ({"rng": "seed"}, TypeError, "rng must be None"),
])
def test_drdf_names_its_parameters(kwargs, error, match):
    args = {"n_components": 5, "n_components2": 5, **kwargs}
    with pytest.raises(error, match=match):
        km.DoublyRandomDistributionFeatures(args.pop("n_components"),
                                            args.pop("n_components2"), **args)


def test_drdf_gamma2_none_is_the_median_heuristic_of_the_rdf_features():
    sets = [np.random.default_rng(i).normal(size=(6, 2)) for i in range(5)]
    drdf = km.DoublyRandomDistributionFeatures(8, 4, gamma2=None, rng=0).fit(sets)
    assert drdf.gamma2 == km.median_heuristic(drdf.rdf.transform(sets))
    # gamma2 given: kept
    drdf = km.DoublyRandomDistributionFeatures(8, 4, gamma2=1 / 8, rng=0).fit(sets)
    assert drdf.gamma2 == 1 / 8


@pytest.mark.parametrize("make", [
    lambda rng: km.RandomFourierFeatures(4, rng=rng),
    lambda rng: km.RandomDistributionFeatures(4, rng=rng),
    lambda rng: km.EMKFeatures(2, n_iter=1, rng=rng).fit(np.eye(3)),
    lambda rng: km.ExpChi2Features(4, rng=rng).fit(np.eye(3)),
])
def test_rng_is_validated_and_named(make):
    for rng, error in ((True, TypeError), (1.5, TypeError), ("a", TypeError),
                       (-3, ValueError)):
        with pytest.raises(error, match="rng"):
            make(rng)
    assert make(np.array(3)) is not None  # a 0-d array seed


# ------------------------------------------------------------ exp-chi2 features


def test_exp_chi2_features_constructor_validates():
    H = np.random.default_rng(0).random((10, 3))
    cases = [
        ({"chi2_map": "foo"}, TypeError, "chi2_map must be a Chi2DirectMap"),
        ({"chi2_map": km.HomogeneousKernelMap("js")}, ValueError,
         "chi2_map must approximate the chi2 kernel"),
        ({"n_components": 0}, ValueError, "n_components must be >= 1"),
        ({"n_components": 2.5}, TypeError, "n_components must be an int"),
        ({"beta": -1.0}, ValueError, "beta must be > 0"),
        ({"beta": True}, TypeError, "beta must be a real"),
        ({"rng": "seed"}, TypeError, "rng"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            km.ExpChi2Features(**{"n_components": 6, **kwargs})
    with pytest.raises(ValueError, match="chi2_map was fitted for 5"):
        km.ExpChi2Features(6, chi2_map=km.Chi2DirectMap(k=np.ones((5, 2)))).fit(H)
    # an unfitted chi2 map given is fitted as a copy: the caller's map stays
    # unfitted
    chi2_map = km.Chi2DirectMap(3)
    good = km.ExpChi2Features(6, chi2_map=chi2_map, rng=0).fit(H)
    assert not chi2_map.is_fitted and good.chi2_map.is_fitted
    assert_array_equal(good.chi2_map.k, km.Chi2DirectMap(3).fit(H).k)


# ------------------------------------------------------------ PSD projection


def indefinite_matrix(n=7, seed=0, n_negative=2):
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = rng.uniform(0.1, 2.0, size=n)
    w[:n_negative] *= -1
    return (V * w) @ V.T


PSD_SCALES = [1e-300, 1e-200, 1e-170, 1e-100, 1.0, 1e100, 1e170, 1e200, 1e300]


@pytest.mark.parametrize("method", ["clip", "flip", "shift", "square"])
@pytest.mark.parametrize("scale", PSD_SCALES)
@pytest.mark.parametrize("K", [np.array([[0.0, 1.0], [1.0, 0.0]]),
                               indefinite_matrix()], ids=["2x2", "7x7"])
def test_project_psd_at_any_scale(K, scale, method):
    if method == "square" and not 1e-150 < scale < 1e150:
        with pytest.raises(ValueError, match=r"'square' projection of K "
                                             r"(overflows|underflows) float64"):
            km.project_psd(K * scale, method=method)
        return
    P = km.project_psd(K * scale, method=method)
    assert np.isfinite(P).all()
    assert_array_equal(P, P.T)
    unit = P / np.abs(P).max()
    assert np.linalg.eigvalsh(unit).min() > -1e-12  # PSD
    want = km.project_psd(K, method=method) * (scale if method != "square"
                                               else scale**2)
    assert_allclose(P, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("method", ["clip", "flip", "shift", "square"])
@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e-100, 1e100, 1e170, 1e300])
def test_psd_projector_at_any_scale(scale, method):
    K = indefinite_matrix(9, seed=1, n_negative=3)
    K_test = np.random.default_rng(2).normal(size=(4, 9))
    ref = km.PSDProjector(method).fit(K)
    proj = km.PSDProjector(method)
    if method == "square" and not 1e-150 < scale < 1e150:
        with pytest.raises(ValueError, match=r"overflows|underflows"):
            proj.fit_transform(K * scale)
        return
    proj.fit(K * scale)
    assert_allclose(proj.eigenvalues_, ref.eigenvalues_ * scale, rtol=1e-10)
    assert_allclose(proj.shift_, ref.shift_ * scale, rtol=1e-10)
    factor = scale**2 if method == "square" else scale
    got = proj.transform(K_test * scale)
    assert np.isfinite(got).all()
    assert_allclose(got, ref.transform(K_test) * factor, rtol=1e-10,
                    atol=1e-12 * factor)


def test_project_psd_of_the_reproducer_is_psd():
    # the inertia count underflowed: the indefinite input came back unchanged
    P = km.project_psd(np.array([[0.0, 1.0], [1.0, 0.0]]) * 1e-170)
    assert_allclose(P, np.full((2, 2), 0.5e-170), rtol=1e-12)


def test_project_psd_near_the_largest_float():
    K = np.array([[1.0, -1.0], [-1.0, 1.0]]) * 1.5e308  # PSD: unchanged
    assert_array_equal(km.project_psd(K), K)
    K = np.array([[0.0, 1.0], [1.0, 0.0]]) * 1.7e308
    assert_allclose(km.project_psd(K), np.full((2, 2), 0.85e308), rtol=1e-12)
    K = np.full((3, 3), 1e308)
    np.fill_diagonal(K, -1e308)  # eigenvalues -2e308 (twice) and 1e308
    with pytest.raises(ValueError, match="overflows float64"):
        km.project_psd(K, method="flip")


@pytest.mark.parametrize("kind", ["polynomial"])
def test_level2_polynomial_overflow_is_a_clear_error(kind):
    K = np.array([[1e200, 1.0], [1.0, 1e200]])
    with pytest.raises(ValueError, match=r"polynomial.*overflow"):
        km.level2_kernel(K, np.diag(K), kind=kind)
    with pytest.raises(ValueError, match=r"polynomial.*overflow"):
        km.level2_kernel(np.full((2, 2), 10.0), np.ones(2), kind=kind, degree=400)
    # large degrees are fine where the base is at most 1 in absolute value
    K = np.array([[0.5, -0.25], [-0.25, 0.5]])
    out = km.level2_kernel(K, np.diag(K), kind=kind, coef0=0.0, degree=2**31 - 1)
    assert np.isfinite(out).all()


# ------------------------------------------------------------ distributions


@pytest.mark.parametrize("bad", ["means", "covs", "means2", "covs2"])
@pytest.mark.parametrize("kind", ["complex", "str"])
def test_gaussian_expected_kernel_refuses_complex_and_strings(bad, kind):
    args = {"means": np.zeros((2, 2)), "covs": np.ones(2),
            "means2": np.zeros((3, 2)), "covs2": np.ones(3)}
    args[bad] = (args[bad] + 1j) if kind == "complex" else args[bad].astype(str)
    with pytest.raises(TypeError, match=f"{bad} must hold real numbers"):
        km.gaussian_expected_kernel(**args)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "polynomial"])
@pytest.mark.parametrize(("degree", "error"), [
    (10**12, ValueError), (2**31, ValueError), (10**30, ValueError),
    (0, ValueError), (-2, ValueError), (True, TypeError), (2.5, TypeError),
    ("2", TypeError)])
def test_degree_is_bounded_and_named(kernel, degree, error):
    with pytest.raises(error, match="degree"):
        km.gaussian_expected_kernel(np.zeros((2, 2)), np.ones(2), kernel=kernel,
                                    degree=degree)
    kind = "rbf" if kernel == "linear" else kernel
    with pytest.raises(error, match="degree"):
        km.level2_kernel(np.eye(2), np.ones(2), kind=kind, degree=degree)


def test_degree_as_numpy_int_and_0d_array():
    m, c = np.ones((2, 2)), np.ones(2)
    want = km.gaussian_expected_kernel(m, c, kernel="polynomial", degree=3)
    for degree in (np.int64(3), np.array(3), 3.0):
        assert_array_equal(km.gaussian_expected_kernel(
            m, c, kernel="polynomial", degree=degree), want)


@pytest.mark.parametrize("kernel", ["linear", "polynomial", "rbf"])
def test_gaussian_expected_kernel_overflow_is_a_clear_error(kernel):
    means = np.array([[1e200, 0.0], [0.0, 1e200]])
    if kernel == "rbf":  # bounded: a value where the formula allows one
        K = km.gaussian_expected_kernel(means, np.ones(2), gamma=1.0)
        assert_allclose(K, np.eye(2) / 5, rtol=1e-15)  # det(I + 4 I)^(-1/2)
        # inf / inf in the plain formula: taken in logs, the value (in [0, 1])
        # is computed, never NaN: det(I + 4e308 I)^(-1/2) on the diagonal,
        # exp(-2.25e308) = 0 off it
        means = np.array([[1.5e308, 0.0], [-1.5e308, 0.0]])
        K = km.gaussian_expected_kernel(means, np.array([1e308, 1e308]), gamma=1.0)
        assert_allclose(K, np.eye(2) * 2.5e-309, rtol=1e-12, atol=0)
        return
    with pytest.raises(ValueError, match=rf"{kernel} expected kernel values of "
                                         r"means and covs overflow"):
        km.gaussian_expected_kernel(means, np.ones(2), kernel=kernel)


def test_level2_rbf_and_nrbf_at_extreme_scales():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(4, 3))
    K = F @ F.T
    d = np.diag(K)
    for scale in (1e-300, 1e-170, 1e170, 1e300, 1.7e308 / np.abs(K).max() / 4):
        R = km.level2_kernel(K * scale, d * scale, kind="rbf", gamma2=1.0 / scale)
        assert_allclose(R, km.level2_kernel(K, d, kind="rbf"), rtol=1e-10)
        N = km.level2_kernel(K * scale, d * scale, kind="nrbf")
        assert_allclose(N, km.level2_kernel(K, d, kind="nrbf"), rtol=1e-10)
    with pytest.raises(TypeError, match="diag_X must hold real numbers"):
        km.level2_kernel(K, d.astype(complex))
    with pytest.raises(TypeError, match="diag_Y must hold real numbers"):
        km.level2_kernel(K, d, ["1", "2", "3", "4"])


# ------------------------------------------------------------ chi2 maps

HUGE = [1e300, 1.7e308, np.finfo(np.float64).max]


def chebyshev_reference(x, scale, n_terms):
    """sqrt(s) d_q(x / s) in 60-digit decimal arithmetic (no overflow)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097")
        z = Decimal(float(x)) / Decimal(float(scale))
        a = z.ln() / pi
        d = [2 * z / (z + 1)]
        if n_terms > 1:
            d.append(Decimal(2).sqrt() * a * d[0])
        for q in range(2, n_terms):
            d.append((2 * a * d[q - 1] - (q - 2) * d[q - 2]) / q)
        root = Decimal(float(scale)).sqrt()
        return np.array([float(root * v) for v in d])


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("sparse", [False, True])
def test_chi2_maps_finite_near_the_largest_float(value, sparse):
    H = np.random.default_rng(0).random((6, 3))
    X = np.full((2, 3), value)
    X[1, 1] = 0.5
    X = scipy.sparse.csr_matrix(X) if sparse else X
    for fmap in (km.Chi2DirectMap().fit(H), km.Chi2DirectMap(per_dimension=True).fit(H),
                 km.Chi2ChebyshevMap(), km.Chi2ChebyshevMap(scale="median").fit(H),
                 km.HomogeneousKernelMap(), km.HomogeneousKernelMap("js"),
                 km.HomogeneousKernelMap("intersection"),
                 km.HomogeneousKernelMap("hellinger"),
                 km.ExpChi2Features(16, rng=0).fit(H)):
        Z = dense(fmap.transform(X))
        assert np.isfinite(Z).all(), fmap
        if isinstance(fmap, km.Chi2DirectMap):
            # |c_q(x)| <= 2 sqrt(x), and the map is homogeneous of degree 1/2
            # in (x, k): the features of x are 2**m those of (x, k) / 4**m
            assert np.abs(Z).max() <= 2 * np.sqrt(value)
            small = km.Chi2DirectMap(k=fmap.k / 2.0**200)
            want = dense(small.transform(X / 2.0**200)) * 2.0**100
            assert_allclose(Z, want, rtol=1e-12)


@pytest.mark.parametrize("scale", [2.0**-1000, 1e-300, 1e-150, 1e150, 1e300,
                                   2.0**1000])
def test_chi2_maps_are_homogeneous_at_any_scale(scale):
    # The chi2 kernel is homogeneous of degree 1: a map with its parameters
    # scaled gives sqrt(scale) times the features of the scaled data.
    H = np.random.default_rng(1).random((8, 4))
    H[H < 0.3] = 0
    k = np.array([0.05, 0.2, 0.6, 1.5])
    ref = km.Chi2DirectMap(k=k).transform(H)
    Z = km.Chi2DirectMap(k=k * scale).transform(H * scale)
    assert_allclose(Z, ref * np.sqrt(scale), rtol=1e-12, atol=1e-300)
    ref = km.Chi2ChebyshevMap(6, scale=0.3).transform(H)
    Z = km.Chi2ChebyshevMap(6, scale=0.3 * scale).transform(H * scale)
    assert_allclose(Z, ref * np.sqrt(scale), rtol=1e-12, atol=1e-300)
    Z = km.Chi2ChebyshevMap(6, scale="median").fit(H * scale).transform(H * scale)
    ref = km.Chi2ChebyshevMap(6, scale="median").fit(H).transform(H)
    assert_allclose(Z, ref * np.sqrt(scale), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e200, 1.7e308 / 2])
def test_chi2_direct_fit_at_any_scale(scale):
    from kernelmaps import additive_chi2_kernel

    H = np.random.default_rng(2).dirichlet(np.ones(6), size=40)
    fmap = km.Chi2DirectMap(n_terms=6).fit(H * scale)
    assert np.isfinite(fmap.k).all() and (fmap.k > 0).all()
    Z = fmap.transform(H * scale) / np.sqrt(scale)
    assert np.isfinite(Z).all()
    K = additive_chi2_kernel(H)
    assert np.abs(Z @ Z.T - K).max() < 0.05 * K.max()
    assert np.isfinite(km.Chi2DirectMap(per_dimension=True).fit(H * scale).k).all()


@pytest.mark.parametrize(("x", "scale"), [
    (1e-10, 5e-324), (0.5, 5e-324), (1.7e308, 5e-324), (1.7e308, 1e-30),
    (5e-324, 1e10), (5e-324, 1.7e308), (1e-300, 1e300), (2.0**-1000, 1.0),
    (2.0**1000, 1.0), (0.3, 1.0)])
@pytest.mark.parametrize("n_terms", [1, 2, 7])
def test_chebyshev_map_extreme_ratios_match_the_exact_series(x, scale, n_terms):
    Z = km.Chi2ChebyshevMap(n_terms, scale=scale).transform(np.array([[x, 0.0]]))
    assert np.isfinite(Z).all()
    assert_array_equal(Z[0, n_terms:], 0.0)
    want = chebyshev_reference(x, scale, n_terms)
    assert_allclose(Z[0, :n_terms], want, rtol=1e-10, atol=1e-300)


def test_chebyshev_fit_and_map_of_subnormal_scale():
    H = np.random.default_rng(0).random((5, 3))
    fmap = km.Chi2ChebyshevMap(scale=5e-324)  # the reproducer: NaN before
    for X in (H, H.astype(np.float32), scipy.sparse.csr_matrix(H)):
        assert np.isfinite(dense(fmap.transform(X))).all()
    tiny = km.Chi2ChebyshevMap(scale="median").fit(np.full((2, 3), 5e-324))
    assert tiny.scale == 5e-324
    assert np.isfinite(tiny.transform(H)).all()
    big = km.Chi2ChebyshevMap(scale="median").fit(np.full((2, 3), 1.7e308))
    assert big.scale == 1.7e308  # the median overflowed to inf before
    assert np.isfinite(big.transform(H)).all()


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda: km.Chi2ChebyshevMap(n_terms=10**12), ValueError, "n_terms must be <="),
    (lambda: km.Chi2ChebyshevMap(n_terms=True), TypeError, "n_terms must be an int"),
    (lambda: km.Chi2ChebyshevMap(scale=np.inf), ValueError, "scale must be finite"),
    (lambda: km.Chi2ChebyshevMap(scale=True), TypeError, "scale must be a real"),
    (lambda: km.Chi2ChebyshevMap(scale=-1.0), ValueError, "scale must be > 0"),
    (lambda: km.Chi2DirectMap(k=np.ones(2**16 + 1)), ValueError, "at most 65536"),
    (lambda: km.Chi2DirectMap(k=["a"]), TypeError, "k must hold real numbers"),
    (lambda: km.Chi2DirectMap(k=[1j]), TypeError, "k must hold real numbers"),
    (lambda: km.Chi2DirectMap(n_terms=10**12).fit(np.eye(3)), ValueError,
     "n_terms must be <="),
    (lambda: km.Chi2DirectMap(n_bins=10**12).fit(np.eye(3)), ValueError,
     "n_bins must be <="),
    (lambda: km.Chi2DirectMap(n_bins=2.5).fit(np.eye(3)), TypeError,
     "n_bins must be an int"),
    (lambda: km.HomogeneousKernelMap(order=10**12), ValueError, "order must be <="),
    (lambda: km.HomogeneousKernelMap(order=True), TypeError, "order must be an int"),
    (lambda: km.HomogeneousKernelMap(period=1e-310), ValueError, "period must be >="),
    (lambda: km.HomogeneousKernelMap(period=1e-100), ValueError, "period must be >="),
    (lambda: km.HomogeneousKernelMap(period=np.nan), ValueError,
     "period must be finite"),
    (lambda: km.HomogeneousKernelMap(kernel=None), ValueError, "kernel must be one"),
])
def test_chi2_map_parameters(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_homogeneous_map_extreme_periods_stay_finite():
    x = np.array([[3.4e38, 1e-30, 0.0]], dtype=np.float32)
    for period in (2 * np.pi / 2.0**100, 1e300):
        for kernel in ("chi2", "js", "intersection"):
            fmap = km.HomogeneousKernelMap(kernel, order=3, period=period)
            assert np.isfinite(fmap.transform(x)).all()
            assert np.isfinite(fmap.transform(x.astype(np.float64) * 5e269)).all()


def test_chi2_map_float32_extremes():
    H = np.random.default_rng(0).random((5, 3)).astype(np.float32)
    X = np.full((2, 3), np.finfo(np.float32).max, dtype=np.float32)
    X[0, 0] = np.float32(1e-45)
    for fmap in (km.Chi2DirectMap().fit(H), km.Chi2DirectMap(k=np.array([1.7e308])),
                 km.Chi2ChebyshevMap(8), km.Chi2ChebyshevMap(8, scale=5e-324),
                 km.HomogeneousKernelMap()):
        Z = fmap.transform(X)
        assert Z.dtype == np.float32 and np.isfinite(Z).all()


# ------------------------------------------------------------ EMK


@pytest.fixture(scope="module")
def emk_points():
    return np.random.default_rng(0).normal(size=(300, 3))


@pytest.mark.parametrize("scale", [2.0**-500, 1e-150, 2.0**500, 1e150])
def test_emk_fit_is_scale_equivariant(emk_points, scale):
    # gamma scaled with the data: the same kernel values, the same basis
    P = emk_points
    ref = km.EMKFeatures(5, gamma=0.3, n_iter=20, rng=0).fit(P)
    emk = km.EMKFeatures(5, gamma=0.3 / scale**2, n_iter=20, rng=0).fit(P * scale)
    assert_allclose(emk.basis / scale, ref.basis, rtol=1e-8, atol=1e-8)
    assert_allclose(emk.objective_, ref.objective_, rtol=1e-8)
    sets = [P[:5], P[5:40]]
    F = emk.transform([s * scale for s in sets])
    assert_allclose(F, ref.transform(sets), atol=1e-8)
    assert_allclose(emk.projection, ref.projection, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e160, 1e300])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_emk_default_gamma_at_extreme_scales_is_finite(emk_points, scale, kernel):
    # the reproducer: points * 1e160 gave NaN features (with gamma = 1 / d,
    # the default then)
    P = emk_points * scale
    emk = km.EMKFeatures(5, kernel=kernel, gamma=1 / P.shape[1], n_iter=20,
                         rng=0).fit(P)
    assert np.isfinite(emk.basis).all() and np.isfinite(emk.projection).all()
    assert np.isfinite(emk.objective_).all()
    F = emk.transform([P[:5], P[5:40], emk.basis[:1]])
    assert np.isfinite(F).all()
    positions = [np.random.default_rng(1).random((len(s), 2))
                 for s in (P[:5], P[5:40], emk.basis[:1])]
    F = emk.transform([P[:5], P[5:40], emk.basis[:1]], positions, levels=2)
    assert np.isfinite(F).all()
    # gamma=None: the median heuristic, where it is within float64's range
    # (1 / median L1 distance), else a ValueError saying so (1 / median
    # squared distance)
    default = km.EMKFeatures(5, kernel=kernel, n_iter=0, rng=0)
    if kernel == "laplacian":
        assert default.fit(P).gamma == km.median_heuristic(P, kernel=kernel)
    else:
        with pytest.raises(ValueError, match="beyond the float64 range"):
            default.fit(P)


@pytest.mark.parametrize("scale", [1e-40, 1e-25, 1e25, 1e35])
def test_emk_float32_points_at_extreme_scales(emk_points, scale):
    P = emk_points
    ref = km.EMKFeatures(5, gamma=0.3, n_iter=5, rng=0).fit(P)
    emk = km.EMKFeatures(basis=ref.basis * scale, gamma=0.3 / scale**2)
    sets = [(P[:5] * scale).astype(np.float32), (P[5:9] * scale).astype(np.float32)]
    F = emk.transform(sets)
    assert F.dtype == np.float32 and np.isfinite(F).all()
    want = ref.transform([P[:5].astype(np.float32), P[5:9].astype(np.float32)])
    assert_allclose(F, want, atol=1e-5 if scale > 1e-39 else 1e-3)


def test_emk_basis_beyond_float32_with_float32_points(emk_points):
    emk = km.EMKFeatures(basis=emk_points[:4] * 1e100, gamma=1e-200)
    F = emk.transform([emk_points[:3].astype(np.float32)])
    assert F.dtype == np.float32 and np.isfinite(F).all()


def test_emk_levels_are_bounded(emk_points):
    emk = km.EMKFeatures(4, n_iter=1, rng=0).fit(emk_points)
    sets = [emk_points[:5]]
    positions = [np.full((5, 2), 0.5)]
    with pytest.raises(ValueError, match="levels must be <= 16"):
        emk.transform(sets, positions, levels=10**12)  # hung before
    with pytest.raises(ValueError, match="output entries"):
        emk.transform(sets, positions, levels=15)
    with pytest.raises(TypeError, match="levels must be an int"):
        emk.transform(sets, positions, levels=True)
    assert emk.transform(sets, positions, levels=np.int64(1)).shape == (1, 20)


# ------------------------------------------------------------ every argument


def test_random_frequencies_that_overflow_are_refused():
    for kernel in ("rbf", "laplacian"):
        with pytest.raises(ValueError, match=r"gamma=.* is too large"):
            km.RandomFourierFeatures(8, kernel=kernel, gamma=1.7e308, rng=0).fit(
                np.eye(3))
    with pytest.raises(ValueError, match=r"gamma2=.* is too large"):
        km.DoublyRandomDistributionFeatures(4, 4, gamma2=1.7e308, rng=0).fit(
            [np.eye(2)])
    H = np.random.default_rng(0).random((4, 3))
    # frequencies of scale sqrt(beta): finite, and so are the features
    fmap = km.ExpChi2Features(8, beta=1.7e308, rng=0).fit(H)
    assert np.isfinite(fmap.transform(H)).all()


def test_fourier_arguments_that_overflow_are_refused():
    # x W beyond the float range: the engine's cosine of inf was garbage
    rff = km.RandomFourierFeatures(4, gamma=1e300, rng=0).fit(np.eye(3))
    P = np.random.default_rng(0).normal(size=(5, 3))
    assert np.isfinite(rff.transform(P)).all()
    with pytest.raises(ValueError, match="X has values too large"):
        rff.transform(P * 1e300)
    rdf = km.RandomDistributionFeatures(4, gamma=1.0, rng=0).fit([np.eye(3)])
    with pytest.raises(ValueError, match="X has values too large"):
        rdf.transform([np.full((2, 3), 1e308)])
    with pytest.raises(ValueError, match="X has values too large"):
        rdf.transform([np.full((2, 3), 3e38, dtype=np.float32)])
    H = np.random.default_rng(0).random((4, 3))
    fmap = km.ExpChi2Features(8, beta=1e306, rng=0,
                              chi2_map=km.HomogeneousKernelMap()).fit(H)
    with pytest.raises(ValueError, match="X has values too large"):
        fmap.transform(H * 1.7e308)  # features ~ sqrt(x), frequencies ~ 1e153
    # pickled and back, the check still runs
    back = pickle.loads(pickle.dumps(rff))
    with pytest.raises(ValueError, match="X has values too large"):
        back.transform(P * 1e300)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: km.RandomFourierFeatures(10**10).fit(np.eye(3)), "dim \\* n_components"),
    (lambda: km.RandomDistributionFeatures(2**63).fit([np.eye(2)]),
     "dim \\* n_components"),
    (lambda: km.DoublyRandomDistributionFeatures(10**10, 10**10).fit([np.eye(2)]),
     "dim \\* n_components"),
    (lambda: km.DoublyRandomDistributionFeatures(10**3, 10**15).fit([np.eye(2)]),
     "n_components \\* n_components2"),
    (lambda: km.ExpChi2Features(2**62).fit(np.eye(3)), "width \\* n_components"),
    (lambda: km.AnchorMap(n_anchors=10**30).fit(np.eye(3)), "n_anchors must be <="),
    (lambda: km.EMKFeatures(2, n_iter=10**30).fit(np.eye(3)), "n_iter must be <="),
])
def test_huge_sizes_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_emk_objective_is_set_by_fit_only():
    # objective= of the old constructor is gone: fit sets objective_
    basis = np.eye(3)
    assert km.EMKFeatures(basis=basis).objective_.shape == (0,)
    with pytest.raises(TypeError, match="objective"):
        km.EMKFeatures(basis=basis, objective=[2.0, 1.0])


def test_emk_fit_survives_absurd_learning_rates():
    P = np.random.default_rng(0).normal(size=(50, 3))
    for lr in (1e30, 1e300):  # LinAlgError from the broken kernel matrix before
        emk = km.EMKFeatures(4, n_iter=25, learning_rate=lr, rng=0).fit(P)
        assert np.isfinite(emk.basis).all()
        assert np.all(np.diff(emk.objective_) <= 0)
        assert len(emk.objective_) == 4  # start, after 10, 20 and 25


@pytest.mark.parametrize("kind", ["gamma", "coef0"])
def test_gaussian_polynomial_huge_parameters_are_a_value_error(kind):
    kwargs = {"gamma": 1.0, "coef0": 1.0, kind: 1e308}
    with pytest.raises(ValueError, match="polynomial expected kernel values of "
                                         "means and covs overflow"):
        km.gaussian_expected_kernel(np.ones((2, 2)), np.ones(2), kernel="polynomial",
                                    **kwargs)


def test_outofcore_blocks_that_are_not_arrays():
    for call in (lambda: km.rf_pca([1.0], None, 1),
                 lambda: km.rf_ridge([1.0], [np.zeros(1)], None, 1)):
        with pytest.raises(TypeError, match=r"chunks block 0 must be an array"):
            call()


def test_outofcore_errors_name_the_block_and_overflow_is_clear():
    H = np.random.default_rng(0).random((12, 4))
    bad = H.copy()
    bad[3, 1] = np.nan
    # a map's error names the map (feature_map) and the block (chunks)
    with pytest.raises(ValueError, match=r"feature_map cannot transform chunks "
                                         r"block 1 \(its X\): X contains NaN"):
        km.rf_pca([H, bad], km.Chi2DirectMap().fit(H), 2)
    with pytest.raises(ValueError, match=r"feature_maps\[1\] cannot transform "
                                         r"chunks block 1"):
        km.rf_ridge([H, -H], [np.zeros(12)] * 2,  # negative: not histograms
                    [km.RandomFourierFeatures(8, rng=0, gamma=1.0).fit(np.eye(4)),
                     km.Chi2DirectMap().fit(H)],
                    2)
    with pytest.raises(ValueError, match=r"chunks block 0 must be 2-D"):
        km.rf_pca([H.ravel()], None, 2)
    with pytest.raises(TypeError, match=r"chunks block 0 must hold real numbers"):
        km.rf_pca([H.astype(str)], None, 2)  # strings were parsed as numbers
    with pytest.raises(ValueError, match="features of chunks overflow float64"):
        km.rf_pca(H * 1e308, None, 2)  # eigh's "must not contain infs" before
    with pytest.raises(ValueError, match="of chunks \\(or of them and y_chunks\\) "
                                         "overflow float64"):
        km.rf_ridge(H, np.full(12, 1e308), None, 2)

    class Identity:
        def transform(self, X):
            return X

    with pytest.raises(ValueError, match="overflow float64"):
        km.rf_ridge([H * 1e200, H], [np.zeros(12), np.zeros(12)],
                    [Identity(), Identity()], 2)


def test_frozen_maps_never_freeze_the_arrays_they_hold():
    from kernelmaps._frozen import Frozen

    class Holder(Frozen):
        def __init__(self, a):
            self.a = a  # not copied: the guard of _freeze
            self._freeze()

    a = np.arange(3.0)
    held = Holder(a)
    assert a.flags.writeable and not held.a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        held.a[0] = 1.0
    fmap = km.Chi2DirectMap(k=[0.5, 1.0])
    back = pickle.loads(pickle.dumps(fmap))
    assert not back.k.flags.writeable and not back._params.flags.writeable


def test_0d_arrays_for_choices_and_bools():
    from kernelmaps._validation import check_bool, check_choice

    assert check_choice(np.array("clip"), "method", ("clip", "flip")) == "clip"
    assert type(check_choice(np.str_("flip"), "method", ("clip", "flip"))) is str
    assert check_bool(np.array(True), "clamp") is True
    with pytest.raises(TypeError, match="clamp must be True or False"):
        check_bool(np.array(1), "clamp")
    with pytest.raises(ValueError, match="method must be one of"):
        check_choice(np.array(["clip"]), "method", ("clip",))
