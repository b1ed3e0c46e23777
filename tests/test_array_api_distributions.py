"""Arrays of other libraries (issue 52) for the expected kernels between
Gaussians, the level-2 kernels, the kNN Renyi divergences and the kernel
of divergences: PyTorch, JAX and array-api-strict input gives the NumPy
output in the input's library and on its device, computed by the
compiled engine (PyTorch and JAX on the CPU without a gradient) or by the
library (a gradient asked, another device, array-api-strict); gradients
through them; the NumPy messages for bad input.

Skipped where array-api-compat or the library is missing."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps.sets import renyi_divergence_both

from ._helpers import LIBRARIES
from ._helpers import import_jnp as _jnp
from ._helpers import import_strict as _strict
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


RTOL = {np.float64: 1e-12, np.float32: 1e-5}


def assert_equals_numpy(result, expected, library, atol=None):
    """`result` (of `library`) holds `expected` (NumPy's): bit for bit
    through the compiled engine, to RTOL of its dtype (and `atol`)
    computed by the library; of the input's type and dtype."""
    to_library, to_numpy = LIBRARIES[library]
    assert type(result) is type(to_library(np.zeros(1)))
    values = to_numpy(result)
    assert values.dtype == expected.dtype
    if library in ("torch", "jax"):
        assert_array_equal(values, expected)
    else:
        if atol is None:
            atol = 1e-300 if expected.dtype == np.float64 else 1e-30
        assert_allclose(values, expected, rtol=RTOL[expected.dtype.type],
                        atol=atol)


def gaussians(dtype, n, d, form, seed):
    """Means (n, d) and covariances: "full" (n, d, d), "diagonal" (n, d)
    or "isotropic" (n,)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(n, d))
    if form == "full":
        A = rng.normal(size=(n, d, d))
        covs = A @ A.transpose(0, 2, 1) / d
    else:
        covs = rng.random((n, d) if form == "diagonal" else n) + 0.1
    return means.astype(dtype), covs.astype(dtype)


def point_sets(dtype, seed, sizes, shift=0.0, d=2):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, d)) + shift).astype(dtype) for n in sizes]


def as_library(sets, to_library):
    return None if sets is None else [to_library(s) for s in sets]


# -- equal to NumPy ---------------------------------------------------------

EXPECTED_OPTIONS = [("rbf", {"gamma": 0.7}), ("rbf", {}), ("linear", {}),
                    ("polynomial", {"degree": 2}),
                    ("polynomial", {"degree": 3, "gamma": 0.3, "coef0": 0.5})]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("forms", [("full", None), ("diagonal", None),
                                   ("isotropic", None), ("full", "diagonal"),
                                   ("isotropic", "diagonal")],
                         ids=lambda f: "-".join(filter(None, f)))
@pytest.mark.parametrize("kernel, options", EXPECTED_OPTIONS,
                         ids=[f"{k}{o}" for k, o in EXPECTED_OPTIONS])
def test_gaussian_expected_kernel_equals_numpy(kernel, options, forms, dtype,
                                               library):
    to_library = LIBRARIES[library][0]
    first = gaussians(dtype, 5, 3, forms[0], 0)
    second = () if forms[1] is None else gaussians(dtype, 4, 3, forms[1], 1)
    expected = km.gaussian_expected_kernel(*first, *second, kernel=kernel,
                                           **options)
    K = km.gaussian_expected_kernel(*map(to_library, (*first, *second)),
                                    kernel=kernel, **options)
    assert_equals_numpy(K, expected, library)
    if not second:
        assert_array_equal(LIBRARIES[library][1](K), LIBRARIES[library][1](K).T)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("kind, options", [
    ("rbf", {"gamma2": 0.3}), ("nrbf", {}), ("linear", {}),
    ("polynomial", {"degree": 3, "coef0": 0.5})], ids=lambda v: str(v))
def test_level2_kernel_equals_numpy(kind, options, pair, dtype, library):
    to_library = LIBRARIES[library][0]
    rng = np.random.default_rng(2)
    Z, W = rng.normal(size=(6, 4)), rng.normal(size=(5, 4))
    if not pair:
        W = Z
    arrays = [a.astype(dtype) for a in (Z @ W.T, np.sum(Z * Z, axis=1),
                                        np.sum(W * W, axis=1))]
    if not pair:
        arrays = arrays[:2]
    expected = km.level2_kernel(*arrays, kind=kind, **options)
    K = km.level2_kernel(*map(to_library, arrays), kind=kind, **options)
    assert_equals_numpy(K, expected, library)


def test_level2_kernel_at_extreme_scales():
    """The squared distances beyond 2**1000 at a power-of-two scale, as
    NumPy's."""
    torch = _torch()
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(4, 3)) * 1e153
    arrays = (Z @ Z.T, np.sum(Z * Z, axis=1))
    expected = km.level2_kernel(*arrays, gamma2=1e-306)
    K = km.level2_kernel(*(torch.asarray(a).requires_grad_() for a in arrays),
                         gamma2=1e-306)
    assert_allclose(K.detach().numpy(), expected, rtol=1e-12)


RENYI_OPTIONS = [{}, {"min_dist": 0.0}, {"min_dist": 0.01},
                 {"alpha": [0.5, 0.99, 1.5]}, {"k": 2, "clamp": False}]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [2, 6])
@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("options", RENYI_OPTIONS, ids=str)
def test_renyi_divergence_equals_numpy(options, pair, d, dtype, library):
    """With duplicate points (zero distances, the floors); float32 points of
    d = 2 are searched in float64, of d = 6 in float32. The estimates are
    differences of logarithms of distances scaled by 2**505 (`knn`), which
    hold about 1e-13 absolutely, on either path: to that also, near 0."""
    to_library = LIBRARIES[library][0]
    X = point_sets(dtype, 4, (8, 10, 9), d=d)
    X[1][3] = X[1][5]
    X[2][:4] = X[2][0]
    Y = point_sets(dtype, 5, (7, 11), 0.5, d=d) if pair else None
    expected = km.renyi_divergence(X, Y, **options)
    D = km.renyi_divergence(as_library(X, to_library), as_library(Y, to_library),
                            **options)
    assert_equals_numpy(D, expected, library, atol=RTOL[dtype])


@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("scale", [1.0, 1e-150, 1e150])
@pytest.mark.parametrize("options", [{}, {"min_dist": 0.0}, {"min_dist": 1e-3}],
                         ids=str)
def test_renyi_divergence_of_degenerate_sets(options, scale):
    """A set whose points are all equal (the median floor of the others),
    all sets so (1e-3 of the data's scale), and points near 1e-150 or
    1e150: computed by the library, NumPy's estimates."""
    strict = _strict()
    rng = np.random.default_rng(27)
    X = [rng.normal(size=(7, 2)) * scale for _ in range(3)]
    X[1][:] = X[1][0]
    equal = [np.full((6, 2), 1.0), np.full((7, 2), 2.0), np.full((6, 2), 2.0)]
    for sets in (X, equal):
        expected = km.renyi_divergence(sets, **options)
        D = km.renyi_divergence([strict.asarray(s) for s in sets], **options)
        assert_allclose(np.asarray(D), expected, rtol=1e-12,
                        atol=1e-14 * np.abs(expected).max())


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_renyi_divergence_both_equals_numpy(library):
    """Both directions from one search (the compiled engine) equal the
    library's two estimates up to rounding."""
    to_library, to_numpy = LIBRARIES[library]
    X, Y = point_sets(np.float64, 6, (8, 9)), point_sets(np.float64, 7, (7, 8, 9), 1)
    expected = renyi_divergence_both(X, Y)
    pair = renyi_divergence_both(as_library(X, to_library),
                                 as_library(Y, to_library))
    for D, E in zip(pair, expected, strict=True):
        assert type(D) is type(to_library(X[0]))
        assert_allclose(to_numpy(D), E, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("options", [{}, {"gamma": 0.5}, {"power": 1},
                                     {"power": 0.5, "gamma": 2.0},
                                     {"gamma": 1e300}, {"gamma": 1e-320}],
                         ids=str)
def test_divergence_kernel_equals_numpy(options, dtype, library):
    """Also where gamma S**power leaves the float range (in logs)."""
    to_library = LIBRARIES[library][0]
    rng = np.random.default_rng(8)
    D = np.abs(rng.normal(size=(6, 6))).astype(dtype)
    np.fill_diagonal(D, 0)
    D[1, 2] = -0.1  # (S = max((D + D^T) / 2, 0))
    expected = km.divergence_kernel(D, **options)
    K = km.divergence_kernel(to_library(D), **options)
    assert_equals_numpy(K, expected, library)


# -- devices, dtypes, bad input ----------------------------------------------

def test_meta_device_gives_shapes_and_device():
    """On PyTorch's meta device (no values: the checks of values skipped,
    gamma needed where its default is a median)."""
    torch = _torch()

    def meta(shape):
        return torch.empty(shape, dtype=torch.float64, device="meta")

    for covs in ((5, 3, 3), (5, 3), (5,)):
        for kernel in ("rbf", "linear", "polynomial"):
            K = km.gaussian_expected_kernel(meta((5, 3)), meta(covs), meta((4, 3)),
                                            meta((4, 3)), kernel=kernel, gamma=0.5)
            assert K.device.type == "meta" and K.shape == (5, 4)
    for kind in ("rbf", "nrbf", "linear", "polynomial"):
        K = km.level2_kernel(meta((4, 3)), meta((4,)), meta((3,)), kind=kind)
        assert K.device.type == "meta" and K.shape == (4, 3)
    assert km.divergence_kernel(meta((4, 4)), gamma=1.0).device.type == "meta"
    X, Y = [meta((8, 2)) for _ in range(3)], [meta((7, 2)) for _ in range(2)]
    D = km.renyi_divergence(X, Y, alpha=[0.5, 0.9])
    assert D.device.type == "meta" and D.shape == (2, 3, 2)
    assert km.renyi_divergence(X, dtype=torch.float32).dtype == torch.float32
    for call in (lambda: km.gaussian_expected_kernel(meta((5, 3)), meta((5,))),
                 lambda: km.divergence_kernel(meta((4, 4)))):
        with pytest.raises(ValueError, match="give gamma"):
            call()


def test_the_dtype_argument():
    torch = _torch()
    means, covs = gaussians(np.float32, 4, 2, "diagonal", 9)
    sets = point_sets(np.float32, 10, (7, 8))
    for grad in (False, True):
        m, c = (torch.asarray(a).requires_grad_(grad) for a in (means, covs))
        S = [torch.asarray(s).requires_grad_(grad) for s in sets]
        assert km.gaussian_expected_kernel(m, c, gamma=1.0).dtype == torch.float32
        K = km.gaussian_expected_kernel(m, c, gamma=1.0, dtype=torch.float64)
        assert K.dtype == torch.float64
        assert km.renyi_divergence(S, dtype=np.float64).dtype == torch.float64
        assert km.divergence_kernel(K, dtype=torch.float32).dtype == torch.float32
        with pytest.raises(ValueError, match="dtype must be"):
            km.renyi_divergence(S, dtype="int8")


def test_bad_input_has_the_numpy_message():
    torch = _torch()

    def grad(a):
        return torch.asarray(a).requires_grad_()

    means, covs = gaussians(np.float64, 4, 2, "full", 11)
    bad = covs.copy()
    bad[1] = [[1.0, 2.0], [2.0, 1.0]]
    for args, error, message in (
            ((means[0], covs), ValueError, "means must be a non-empty 2-D"),
            ((means, covs[:3]), ValueError, "covs must have shape"),
            ((means, np.where(covs > 0, np.nan, covs)), ValueError, "finite"),
            ((means, bad), ValueError, r"covs\[1\] is not positive semi-definite"),
            ((means, covs, means), ValueError, "given together"),
            ((means, covs, means[:, :1], covs[:, :1, :1]), ValueError,
             "Incompatible dimension"),
            ((means, covs + 1j), TypeError, "real numbers")):
        with pytest.raises(error, match=message):
            km.gaussian_expected_kernel(*map(grad, args))
    with pytest.raises(ValueError, match="degree must be 2 or 3"):
        km.gaussian_expected_kernel(grad(means), grad(covs), kernel="polynomial",
                                    degree=4)
    K, dx = np.eye(3), np.ones(3)
    for args, options, message in (
            ((K, dx[:2]), {}, "diag_X and diag_Y must have shapes"),
            ((K, -dx), {}, ">= 0"), ((K, 0 * dx), {"kind": "nrbf"}, "> 0"),
            ((K[0], dx), {}, "K must be 2-D"), ((K, dx), {"kind": "cosine"}, "kind"),
            ((K, dx), {"gamma2": 0}, "gamma2"),
            ((K * 1e300, dx), {"kind": "polynomial", "degree": 3}, "overflow")):
        with pytest.raises(ValueError, match=message):
            km.level2_kernel(*map(grad, args), **options)
    sets = [grad(s) for s in point_sets(np.float64, 12, (6, 4))]
    for options, message in (({}, r"X\[1\] has 4 point\(s\)"),
                             ({"k": 2, "alpha": 1.0}, "alpha must not be 1"),
                             ({"k": 0}, "k")):
        with pytest.raises(ValueError, match=message):
            km.renyi_divergence(sets, **options)
    with pytest.raises(TypeError, match="Y must be given"):
        renyi_divergence_both(sets, None, k=2)
    for D, message in ((np.ones((3, 2)), "square"), (np.full((2, 2), np.nan), "NaN")):
        with pytest.raises(ValueError, match=message):
            km.divergence_kernel(grad(D))


def test_mixed_libraries_are_refused():
    torch = _torch()
    means, covs = gaussians(np.float64, 4, 2, "diagonal", 13)
    with pytest.raises(TypeError, match="give every array in one library"):
        km.gaussian_expected_kernel(torch.asarray(means), covs)
    sets = point_sets(np.float64, 14, (7, 8))
    with pytest.raises(TypeError, match="give every array in one library"):
        km.renyi_divergence([torch.asarray(s) for s in sets], sets)
    with pytest.raises(TypeError, match="give every array in one library"):
        km.level2_kernel(torch.asarray(np.eye(2)), np.ones(2))


# -- gradients ---------------------------------------------------------------

@pytest.mark.parametrize("kernel, options", [
    ("rbf", {"gamma": 0.7}), ("polynomial", {"degree": 3, "gamma": 0.3})])
@pytest.mark.parametrize("form", ["full", "diagonal"])
def test_gaussian_expected_kernel_gradcheck(form, kernel, options):
    """The covariances as B B^T (full) or b^2 (diagonal) of the inputs, so
    that they stay symmetric positive semi-definite when perturbed."""
    torch = _torch()
    first, second = gaussians(np.float64, 3, 2, "diagonal", 15), \
        gaussians(np.float64, 2, 2, "diagonal", 16)
    rng = np.random.default_rng(17)
    factors = [rng.normal(size=(n, 2, 2)) if form == "full" else np.sqrt(v)
               for n, v in ((3, first[1]), (2, second[1]))]
    inputs = [torch.asarray(a).requires_grad_()
              for a in (first[0], factors[0], second[0], factors[1])]

    def call(m1, b1, m2, b2):
        covs = [b @ b.transpose(-1, -2) if form == "full" else b * b
                for b in (b1, b2)]
        return km.gaussian_expected_kernel(m1, covs[0], m2, covs[1], kernel=kernel,
                                           **options)

    assert torch.autograd.gradcheck(call, tuple(inputs))


@pytest.mark.parametrize("pair", [False, True])
def test_renyi_divergence_gradcheck(pair):
    """Points in general position (no ties among the distances); the
    gradient flows through the k-th neighbour distances and the relative
    floors."""
    torch = _torch()
    X = [torch.asarray(s).requires_grad_() for s in point_sets(np.float64, 18, (6, 7))]
    Y = [torch.asarray(s).requires_grad_()
         for s in point_sets(np.float64, 19, (5, 6), 0.5)] if pair else []

    def call(*points):
        return km.renyi_divergence(list(points[:2]), list(points[2:]) or None, k=2,
                                   alpha=[0.5, 1.5], clamp=False)

    assert torch.autograd.gradcheck(call, (*X, *Y))


def test_renyi_divergence_gradient_is_finite_at_duplicates():
    """Duplicate points (zero distances, floored): gradient 0 there, not
    NaN; through renyi_divergence_both too."""
    torch = _torch()
    sets = point_sets(np.float64, 20, (6, 7))
    sets[0][2] = sets[0][4]
    sets[1][:4] = sets[1][0]
    for min_dist in (None, 0.0, 0.1):
        X = [torch.asarray(s).requires_grad_() for s in sets]
        km.renyi_divergence(X, k=2, min_dist=min_dist).sum().backward()
        assert all(torch.all(torch.isfinite(s.grad)) for s in X)
    X = [torch.asarray(s).requires_grad_() for s in sets]
    sum(D.sum() for D in renyi_divergence_both(X, X[::-1], k=2)).backward()
    assert all(torch.all(torch.isfinite(s.grad)) for s in X)


def test_level2_and_divergence_kernel_gradcheck():
    """gamma given (the median rule of divergence_kernel, on the host, is
    a constant of the gradient); the diagonal of D positive, away from
    the kink of max(S, 0)."""
    torch = _torch()
    rng = np.random.default_rng(21)
    Z, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    arrays = (Z @ W.T, np.sum(Z * Z, axis=1), np.sum(W * W, axis=1))
    for kind in ("rbf", "nrbf", "polynomial", "linear"):
        assert torch.autograd.gradcheck(
            lambda *a, kind=kind: km.level2_kernel(*a, kind=kind),
            tuple(torch.asarray(a).requires_grad_() for a in arrays))
    D = torch.asarray(np.abs(rng.normal(size=(4, 4))) + 0.1).requires_grad_()
    for options in ({"gamma": 0.5}, {"gamma": 2.0, "power": 0.5}):
        assert torch.autograd.gradcheck(
            lambda d, options=options: km.divergence_kernel(d, **options), (D,))
    # the zero diagonal: gradient 0 there, not NaN, for every power
    D = torch.asarray(np.abs(rng.normal(size=(4, 4))) * (1 - np.eye(4)))
    for power in (0.5, 1, 2):
        E = D.clone().requires_grad_()
        km.divergence_kernel(E, power=power).sum().backward()
        assert torch.all(torch.isfinite(E.grad))


def test_jax_grad_equals_torch():
    """The kNN divergences under jax.jit (compiled once: op by op, JAX
    compiles each of their operations) and the kernel of divergences."""
    torch, jnp = _torch(), _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 22, (7, 7, 7)))
    Y = np.stack(point_sets(np.float64, 23, (6, 6), 0.4))
    D = np.abs(np.random.default_rng(24).normal(size=(4, 4)))

    def renyi(A, B):
        return (km.renyi_divergence(A, B, k=2, clamp=False) ** 2).sum()

    def kernel(A, B):
        return (km.divergence_kernel(A, gamma=0.5) * B).sum()

    for loss, arrays, grad in ((renyi, (X, Y), jax.jit(jax.grad(renyi))),
                               (kernel, (D, D), jax.grad(kernel))):
        g = grad(*map(jnp.asarray, arrays))
        A = torch.asarray(arrays[0]).requires_grad_()
        loss(A, torch.asarray(arrays[1])).backward()
        assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_jax_jit():
    """Under jax.jit (no values on the host): the checks of values
    skipped, the same results."""
    jnp = _jnp()
    import jax

    X = np.stack(point_sets(np.float64, 25, (7, 7, 7)))
    means, covs = gaussians(np.float64, 4, 2, "full", 26)
    assert_allclose(np.asarray(jax.jit(km.renyi_divergence)(jnp.asarray(X))),
                    km.renyi_divergence(X), rtol=1e-12, atol=1e-12)
    K = jax.jit(lambda m, c: km.gaussian_expected_kernel(m, c, gamma=0.5))(
        jnp.asarray(means), jnp.asarray(covs))
    assert_allclose(np.asarray(K), km.gaussian_expected_kernel(means, covs,
                                                               gamma=0.5),
                    rtol=1e-12)


# -- no copy to the host: the checks and the median rules on the device ------

def _copies(monkeypatch):
    """The shapes of the arrays `ArrayLibrary.to_numpy` is asked to copy
    to the host from now on (a list that grows)."""
    from kernelmaps._libraries import ArrayLibrary

    copied, original = [], ArrayLibrary.to_numpy

    def to_numpy(self, a):
        copied.append(tuple(a.shape))
        return original(self, a)

    monkeypatch.setattr(ArrayLibrary, "to_numpy", to_numpy)
    return copied


@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_no_copy_to_the_host(library, monkeypatch):
    """Computed by the library: its checks (of shapes, finite values,
    symmetric PSD covariances, squared norms), the degenerate warnings and
    the median rule of divergence_kernel read booleans and scalars only;
    the Gaussians' median rule the means it samples (at most
    MEDIAN_SAMPLE rows), as the NumPy path does."""
    to_library = LIBRARIES[library][0]
    rng = np.random.default_rng(30)
    D = np.abs(rng.normal(size=(7, 7)))
    K = rng.normal(size=(5, 4))
    dx, dy = np.sum(K * K, axis=1) + 1, np.sum(K * K, axis=0) + 1
    calls = [lambda o=options: km.divergence_kernel(to_library(D), **o)
             for options in ({}, {"gamma": 0.5}, {"gamma": 1e-30}, {"power": 1})]
    calls += [lambda kind=kind: km.level2_kernel(*map(to_library, (K, dx, dy)),
                                                 kind=kind)
              for kind in ("rbf", "nrbf", "linear", "polynomial")]
    for form in ("full", "diagonal", "isotropic"):
        means, covs = gaussians(np.float64, 6, 3, form, 31)
        calls += [lambda m=means, c=covs, o=options: km.gaussian_expected_kernel(
                      to_library(m), to_library(c), **o)
                  for options in ({"gamma": 0.5}, {"gamma": 1e-30},
                                  {"kernel": "polynomial"})]
    copied = _copies(monkeypatch)
    for call in calls:
        call()
    # PSD covariances (to the check's tolerance) whose I + 2 gamma (S_i + S_j)
    # is not: the pair named, read on the device
    covs = np.stack([np.eye(2), np.eye(2), np.diag([1e10, -0.5])])
    with pytest.raises(ValueError, match=r"not numerically positive definite for "
                                         r"the pair \(2, 2\)"):
        km.gaussian_expected_kernel(to_library(np.zeros((3, 2))), to_library(covs),
                                    gamma=10.0)
    assert copied == []
    for n in (6, 1100):
        means, covs = gaussians(np.float64, n, 2, "isotropic", 32)
        del copied[:]
        K = km.gaussian_expected_kernel(to_library(means), to_library(covs))
        assert copied == [(min(n, 1000), 2)]
        assert_equals_numpy(K, km.gaussian_expected_kernel(means, covs), library)


def _median_cases():
    rng = np.random.default_rng(33)
    D = np.abs(rng.normal(size=(6, 6)))
    mostly_zero = D * (rng.random((6, 6)) < 0.2)
    return {"random": D, "odd": D[:4, :4] - np.eye(4), "one": np.ones((1, 1)),
            "two": D[:2, :2], "mostly zero": mostly_zero, "zero": 0 * D,
            "subnormal": D * 1e-310, "huge": np.full((2, 2), 1.6e308),
            "near the top": D * 1e306, "float32": D.astype(np.float32)}


@pytest.mark.filterwarnings("ignore::kernelmaps.DegenerateWarning")
@pytest.mark.parametrize("library", ["torch_grad", "strict"])
@pytest.mark.parametrize("case", sorted(_median_cases()))
def test_the_divergence_median_rule_on_the_device(case, library):
    """The scale of gamma None computed on the device (sorted, its middle
    values read) is NumPy's exactly: an even or odd count, most entries 0
    (the median of the positive ones), none positive, subnormal
    divergences, a mean of the middle values that overflows."""
    from kernelmaps._engine.scales import divergence_kernel_matrix
    from kernelmaps._libraries import library_of
    from kernelmaps.sets import _array_divergence

    D = _median_cases()[case]
    A = LIBRARIES[library][0](D)
    _, expected = divergence_kernel_matrix(D.astype(np.float64), power=2)
    assert _array_divergence.median_scale(library_of(D=A), A) == expected
    with np.errstate(over="ignore", under="ignore"):
        assert_equals_numpy(km.divergence_kernel(A), km.divergence_kernel(D),
                            library)


def _bad_cases():
    """(function, NumPy arguments, options) of bad input."""
    means, covs = gaussians(np.float64, 4, 2, "full", 34)
    asymmetric, indefinite = covs.copy(), covs.copy()
    asymmetric[2, 0, 1] += 1e-3
    indefinite[3] = [[1.0, 2.0], [2.0, 1.0]]
    variances = np.ones((4, 2))
    K, dx = np.eye(3), np.ones(3)
    expected = km.gaussian_expected_kernel
    return {
        "means 1-D": (expected, (means[0], covs), {}),
        "means empty": (expected, (means[:0], covs[:0]), {}),
        "covs shape": (expected, (means, covs[:3]), {}),
        "covs NaN": (expected, (means, np.where(covs > 0, np.nan, covs)), {}),
        "means inf": (expected, (np.full((4, 2), np.inf), covs), {}),
        "asymmetric": (expected, (means, asymmetric), {}),
        "indefinite": (expected, (means, indefinite), {}),
        "indefinite 2": (expected, (means, covs, means, indefinite), {}),
        "negative variance": (expected, (means, -variances), {}),
        "negative isotropic": (expected, (means, -variances[:, 0]), {}),
        "together": (expected, (means, covs, means), {}),
        "dimension": (expected, (means, covs, means[:, :1], covs[:, :1, :1]), {}),
        "K 1-D": (km.level2_kernel, (K[0], dx), {}),
        "K empty": (km.level2_kernel, (K[:0], dx[:0]), {}),
        "K NaN": (km.level2_kernel, (K * np.nan, dx), {}),
        "diag shape": (km.level2_kernel, (K, dx[:2]), {}),
        "diag NaN": (km.level2_kernel, (K, dx * np.nan), {}),
        "diag negative": (km.level2_kernel, (K, -dx), {}),
        "diag zero": (km.level2_kernel, (K, 0 * dx), {"kind": "nrbf"}),
        "gamma2": (km.level2_kernel, (K, dx), {"gamma2": 0}),
        "overflow": (km.level2_kernel, (K * 1e300, dx),
                     {"kind": "polynomial", "degree": 3}),
        "D 3-D": (km.divergence_kernel, (np.ones((2, 2, 2)),), {}),
        "D square": (km.divergence_kernel, (np.ones((3, 2)),), {}),
        "D empty": (km.divergence_kernel, (np.ones((0, 0)),), {}),
        "D NaN": (km.divergence_kernel, (np.full((2, 2), np.nan),), {}),
        "D inf": (km.divergence_kernel, (np.full((2, 2), np.inf),), {"gamma": 1.0}),
    }


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
@pytest.mark.parametrize("case", sorted(_bad_cases()))
def test_bad_input_gives_the_numpy_error(case, library):
    """The NumPy path's error, word for word, from the checks on the
    device."""
    function, args, options = _bad_cases()[case]
    with pytest.raises((TypeError, ValueError)) as expected:
        function(*args, **options)
    with pytest.raises(expected.type) as given, np.errstate(over="ignore"):
        function(*map(LIBRARIES[library][0], args), **options)
    assert str(given.value) == str(expected.value)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_complex_input_is_refused(library):
    to_library = LIBRARIES[library][0]
    means, covs = gaussians(np.float64, 4, 2, "diagonal", 35)
    for call, message in (
            (lambda: km.gaussian_expected_kernel(to_library(means),
                                                 to_library(covs + 1j)),
             "covs must hold real numbers"),
            (lambda: km.level2_kernel(to_library(np.eye(2) + 1j),
                                      to_library(np.ones(2))),
             "K must be a 2-D array of real numbers, got dtype"),
            (lambda: km.divergence_kernel(to_library(np.eye(2) + 1j)),
             "D must be a 2-D array of real numbers, got dtype")):
        with pytest.raises(TypeError, match=message):
            call()
