"""The sliced-Wasserstein kernel and the maps of sets (quantile features,
DRDF, EMK) on arrays of other libraries (issue 52): PyTorch, JAX and
array-api-strict sets give the NumPy output in the input's library and on
its device, by the compiled engine (PyTorch and JAX on the CPU without a
gradient) or by the library, differentiably."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km

from ._helpers import LIBRARIES
from ._helpers import import_jnp as _jnp
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


def point_sets(dtype=np.float64, seed=0, sizes=(4, 7, 5, 6), shift=0.0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, 3)) + shift).astype(dtype) for n in sizes]


def as_library(sets, to_library):
    if sets is None:
        return None
    if isinstance(sets, km.Bags):
        return km.Bags(to_library(sets.points.copy()), sets.offsets, sets.weights)
    if isinstance(sets, list):
        return [to_library(s) for s in sets]
    return to_library(sets)


def assert_equal_numpy(values, expected, library, dtype):
    assert values.dtype == expected.dtype
    if library in ("torch", "jax"):  # the compiled engine: NumPy's bits
        assert_array_equal(values, expected)
    elif dtype == np.float64:
        assert_allclose(values, expected, rtol=1e-12, atol=1e-14)
    else:
        assert_allclose(values, expected, rtol=1e-5, atol=1e-6)


# -- the kernel ---------------------------------------------------------------

@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("gamma", [0.3, None])
@pytest.mark.parametrize("layout", ["list", "list_pair", "3d"])
def test_sliced_wasserstein_kernel_equals_numpy(layout, gamma, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    X = point_sets(dtype, 1, (4, 7, 5, 4, 6))
    Y = point_sets(dtype, 2, (3, 8, 5), 0.3) if layout == "list_pair" else None
    if layout == "3d":
        X = np.stack([s[:4] for s in X])
    options = {"gamma": gamma, "n_projections": 20, "rng": 0}
    expected = km.sliced_wasserstein_kernel(X, Y, **options)
    K = km.sliced_wasserstein_kernel(as_library(X, to_library),
                                     as_library(Y, to_library), **options)
    assert type(K) is type(to_library(X[0]))
    assert_equal_numpy(to_numpy(K), expected, library, dtype)


def test_sliced_wasserstein_kernel_dtype_and_projections():
    torch = _torch()
    X = point_sets(np.float32, 3)
    tensors = [torch.asarray(s).requires_grad_() for s in X]
    directions = np.random.default_rng(4).standard_normal((6, 3))
    K = km.sliced_wasserstein_kernel(tensors, gamma=0.5, projections=directions,
                                     dtype=torch.float64)
    assert K.dtype == torch.float64
    assert_allclose(K.detach().numpy(), km.sliced_wasserstein_kernel(
        X, gamma=0.5, projections=directions, dtype=np.float64), rtol=1e-5)
    with pytest.raises(ValueError, match="gamma"):
        km.sliced_wasserstein_kernel(tensors, gamma=-1.0)
    with pytest.raises(ValueError, match="projections must have shape"):
        km.sliced_wasserstein_kernel(tensors, gamma=1.0, projections=directions[:, :2])


def test_sliced_wasserstein_kernel_gradcheck():
    torch = _torch()
    X = [torch.asarray(s).requires_grad_() for s in point_sets(np.float64, 5, (3, 4))]
    Y = [torch.asarray(s).requires_grad_()
         for s in point_sets(np.float64, 6, (2, 5), 0.5)]

    def call(*points):
        return km.sliced_wasserstein_kernel(list(points[:2]), list(points[2:]),
                                            gamma=0.4, n_projections=5, rng=0)

    assert torch.autograd.gradcheck(call, (*X, *Y))
    assert torch.autograd.gradcheck(
        lambda *s: km.sliced_wasserstein_kernel(list(s), gamma=0.4, n_projections=5,
                                                rng=0), tuple(X))
    # gamma None: the median a constant; the zero diagonal: gradient 0, not NaN
    km.sliced_wasserstein_kernel(X, n_projections=5, rng=0).sum().backward()
    assert all(torch.all(torch.isfinite(s.grad)) for s in X)


def test_sliced_wasserstein_kernel_jax_grad_and_jit():
    torch, _ = _torch(), _jnp()  # (float64 in JAX)
    import jax

    X = np.stack(point_sets(np.float64, 7, (5, 5, 5)))
    Y = np.stack(point_sets(np.float64, 8, (5, 5), 0.4))

    def loss(A, B, gamma=None):
        return (km.sliced_wasserstein_kernel(A, B, gamma=gamma, n_projections=7,
                                             rng=0) ** 2).sum()

    g = jax.grad(loss)(jax.numpy.asarray(X), jax.numpy.asarray(Y))
    A = torch.asarray(X).requires_grad_()
    loss(A, torch.asarray(Y)).backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)
    jitted = jax.jit(lambda A, B: loss(A, B, 0.5))(jax.numpy.asarray(X),
                                                   jax.numpy.asarray(Y))
    assert_allclose(float(jitted), loss(X, Y, 0.5), rtol=1e-12)
    with pytest.raises(ValueError, match="give gamma"):
        jax.jit(loss)(jax.numpy.asarray(X), jax.numpy.asarray(Y))


def test_sliced_wasserstein_kernel_on_the_meta_device():
    torch = _torch()
    X = [torch.empty(n, 3, device="meta", dtype=torch.float64) for n in (3, 5)]
    Y = torch.empty(4, 6, 3, device="meta", dtype=torch.float64)
    K = km.sliced_wasserstein_kernel(X, Y, gamma=0.5, n_projections=4, rng=0)
    assert K.device.type == "meta" and tuple(K.shape) == (2, 4)
    with pytest.raises(ValueError, match="give gamma"):
        km.sliced_wasserstein_kernel(X, n_projections=4, rng=0)


# -- the maps -----------------------------------------------------------------

TRAIN = point_sets(np.float64, 9, (6, 5, 7, 4))
MAPS = {
    "sliced": lambda: km.SlicedWassersteinFeatures(6, n_quantiles=9, rng=0),
    "drdf": lambda: km.DoublyRandomDistributionFeatures(15, 11, gamma=0.5, rng=0),
    "emk_rbf": lambda: km.EMKFeatures(7, gamma=0.5, n_iter=10, rng=0),
    "emk_laplacian": lambda: km.EMKFeatures(7, kernel="laplacian", gamma=0.5,
                                            n_iter=10, rng=0),
}
_FITTED = {}


def fitted(name):
    if name not in _FITTED:
        _FITTED[name] = MAPS[name]().fit(TRAIN)
    return _FITTED[name]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["list", "3d", "weighted"])
@pytest.mark.parametrize("name", sorted(MAPS))
def test_set_maps_equal_numpy(name, layout, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    fmap = fitted(name)
    sets = point_sets(dtype, 10, (4, 7, 5))
    if layout == "3d":
        sets = np.stack([s[:4] for s in sets])
    elif layout == "weighted":
        weights = np.random.default_rng(11).random(16)
        weights[2] = 0.0
        sets = km.Bags.from_list(sets, weights=np.split(weights, [4, 11]))
    expected = fmap.transform(sets)
    F = fmap.transform(as_library(sets, to_library))
    assert type(F) is type(to_library(np.zeros(1)))
    assert_equal_numpy(to_numpy(F), expected, library, dtype)


@pytest.mark.parametrize("name", sorted(MAPS))
def test_set_maps_gradcheck(name):
    torch = _torch()
    fmap = fitted(name)
    sets = [torch.asarray(s).requires_grad_()
            for s in point_sets(np.float64, 12, (3, 4))]
    assert torch.autograd.gradcheck(lambda *s: fmap.transform(list(s)), tuple(sets))
    points = torch.asarray(np.concatenate(point_sets(np.float64, 13, (3, 4))))
    weights = np.random.default_rng(14).random(7)
    assert torch.autograd.gradcheck(
        lambda P: fmap.transform(km.Bags(P, [0, 3, 7], weights)),
        (points.requires_grad_(),))


def test_quantile_features_jax_grad_equals_torch():
    torch, _ = _torch(), _jnp()  # (float64 in JAX)
    import jax

    X = np.stack(point_sets(np.float64, 15, (4, 4, 4)))
    fmap = fitted("sliced")
    g = jax.grad(lambda A: (fmap.transform(A) ** 3).sum())(jax.numpy.asarray(X))
    A = torch.asarray(X).requires_grad_()
    (fmap.transform(A) ** 3).sum().backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_set_maps_on_the_meta_device():
    torch = _torch()
    sets = [torch.empty(n, 3, device="meta", dtype=torch.float32) for n in (3, 5)]
    for name in MAPS:
        fmap = fitted(name)
        F = fmap.transform(sets)
        assert F.device.type == "meta" and F.dtype == torch.float32
        assert tuple(F.shape) == (2, fmap.n_features_out_)


def test_set_maps_refuse_bad_input():
    torch = _torch()
    sets = [torch.asarray(s).requires_grad_() for s in point_sets(np.float64, 16)]
    for name in MAPS:
        fmap = fitted(name)
        arg = "sets" if name.startswith("emk") else "X"
        with pytest.raises(ValueError, match=f"{arg} has 2 features"):
            fmap.transform([s[:, :2] for s in sets])
        with pytest.raises(ValueError, match="not fitted"):
            MAPS[name]().transform(sets)


# -- weighted sets in the sliced-Wasserstein distances and kernel ----------

def weighted_sets(dtype=np.float64, seed=19, sizes=(4, 7, 5, 6), shift=0.0):
    """A weighted Bags of sets of unequal sizes, one weight 0 (in the
    middle of a set) and one set with equal weights."""
    sets = point_sets(dtype, seed, sizes, shift)
    weights = np.random.default_rng(seed + 1).random(sum(sizes)) + 0.1
    weights[2] = 0.0
    weights[sizes[0]:sizes[0] + sizes[1]] = 0.5
    return km.Bags.from_list(sets, weights=np.split(weights, np.cumsum(sizes)[:-1]))


def weighted_pair(pair, dtype):
    """X weighted, and Y: None, unweighted sets, or weighted sets."""
    X = weighted_sets(dtype)
    if pair == "none":
        return X, None
    if pair == "mixed":
        return X, point_sets(dtype, 21, (3, 8, 5), 0.3)
    return X, weighted_sets(dtype, 22, (5, 2, 6), 0.3)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pair", ["none", "mixed", "weighted"])
@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 20.0])
def test_weighted_sliced_wasserstein_equals_numpy(p, pair, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    X, Y = weighted_pair(pair, dtype)
    options = {"p": p, "n_projections": 12, "rng": 0}
    expected = km.sliced_wasserstein(X, Y, **options)
    D = km.sliced_wasserstein(as_library(X, to_library), as_library(Y, to_library),
                              **options)
    assert type(D) is type(to_library(np.zeros(1)))
    assert_equal_numpy(to_numpy(D), expected, library, dtype)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pair", ["none", "mixed", "weighted"])
@pytest.mark.parametrize("gamma", [0.3, None])
def test_weighted_sliced_wasserstein_kernel_equals_numpy(gamma, pair, dtype,
                                                         library):
    to_library, to_numpy = LIBRARIES[library]
    X, Y = weighted_pair(pair, dtype)
    options = {"gamma": gamma, "n_projections": 12, "rng": 0}
    expected = km.sliced_wasserstein_kernel(X, Y, **options)
    K = km.sliced_wasserstein_kernel(as_library(X, to_library),
                                     as_library(Y, to_library), **options)
    assert_equal_numpy(to_numpy(K), expected, library, dtype)


@pytest.mark.parametrize("library", ["strict", "torch_grad"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("where", ["near_one", "tiny", "huge", "far", "far_tiny"])
def test_sliced_wasserstein_keeps_its_digits(where, weighted, dtype, library):
    """The three ways the computation by the library keeps its digits: a
    power of two on the directions (points of moderate magnitude), on the
    points (extreme magnitudes), the points centred first (sets far from
    the origin beside their spread): NumPy's distances, to rounding."""
    to_library, to_numpy = LIBRARIES[library]
    extreme = 1e300 if dtype == np.float64 else 1e36
    scale, shift = {"near_one": (1.0, 0.0), "tiny": (1 / extreme, 0.0),
                    "huge": (extreme, 0.0), "far": (1.0, 1e3),
                    "far_tiny": (1 / extreme, 1e3 / extreme)}[where]
    X, Y = weighted_pair("weighted" if weighted else "mixed", np.float64)
    X, Y = (km.Bags.from_list(S) if isinstance(S, list) else S for S in (X, Y))
    X, Y = (km.Bags((S.points * scale + shift).astype(dtype), S.offsets, S.weights)
            for S in (X, Y))
    for p in (2.0, 1.0):
        expected = km.sliced_wasserstein(X, Y, p=p, n_projections=12, rng=0)
        D = to_numpy(km.sliced_wasserstein(as_library(X, to_library),
                                           as_library(Y, to_library), p=p,
                                           n_projections=12, rng=0))
        assert D.dtype == expected.dtype
        assert_allclose(D, expected, rtol=1e-12 if dtype == np.float64 else 1e-5,
                        atol=(1e-14 if dtype == np.float64 else 1e-6) * scale)


def test_weighted_sliced_wasserstein_in_blocks():
    """Within a small working memory the merges go by blocks of sets: the
    same distances."""
    torch = _torch()
    X, Y = weighted_pair("weighted", np.float64)
    tensors = [as_library(S, lambda a: torch.asarray(a).requires_grad_())
               for S in (X, Y)]
    with km.config_context(working_memory=0.002):  # (2 KiB: one set a block)
        D = km.sliced_wasserstein(*tensors, n_projections=12, rng=0)
    assert_allclose(D.detach().numpy(),
                    km.sliced_wasserstein(X, Y, n_projections=12, rng=0),
                    rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 20.0])
def test_weighted_sliced_wasserstein_gradcheck(p):
    torch = _torch()
    X, Y = weighted_pair("weighted", np.float64)
    Z = point_sets(np.float64, 23, (3, 2), 0.2)

    def bags(points, S):
        return km.Bags(points, S.offsets, S.weights)

    def call(A, B, *C):
        return km.sliced_wasserstein(bags(A, X), bags(B, Y) if not C else list(C),
                                     p=p, n_projections=5, rng=0)

    tensors = [torch.asarray(np.array(S.points)).requires_grad_() for S in (X, Y)]
    assert torch.autograd.gradcheck(call, tuple(tensors))
    mixed = [torch.asarray(z).requires_grad_() for z in Z]
    assert torch.autograd.gradcheck(call, (tensors[0], tensors[1], *mixed))
    # X with itself: the zero diagonal's gradient 0, not NaN
    km.sliced_wasserstein(bags(tensors[0], X), p=p, n_projections=5,
                          rng=0).sum().backward()
    assert torch.all(torch.isfinite(tensors[0].grad))


def test_weighted_sliced_wasserstein_kernel_gradcheck():
    torch = _torch()
    X, Y = weighted_pair("weighted", np.float64)
    assert torch.autograd.gradcheck(
        lambda A, B: km.sliced_wasserstein_kernel(
            km.Bags(A, X.offsets, X.weights), km.Bags(B, Y.offsets, Y.weights),
            gamma=0.4, n_projections=5, rng=0),
        tuple(torch.asarray(np.array(S.points)).requires_grad_() for S in (X, Y)))


def test_weighted_sliced_wasserstein_jax_grad_equals_torch():
    torch, jnp = _torch(), _jnp()  # (float64 in JAX)
    import jax

    X, Y = weighted_pair("mixed", np.float64)

    def loss(points, Y):
        return (km.sliced_wasserstein(km.Bags(points, X.offsets, X.weights), Y,
                                      n_projections=7, rng=0) ** 3).sum()

    # (under jit: one compilation, not one per operation)
    g = jax.jit(jax.grad(loss))(jnp.asarray(X.points), [jnp.asarray(y) for y in Y])
    A = torch.asarray(np.array(X.points)).requires_grad_()
    loss(A, [torch.asarray(y) for y in Y]).backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_weighted_sliced_wasserstein_on_the_meta_device():
    torch = _torch()
    X = weighted_sets()
    bags = km.Bags(torch.empty(X.points.shape, device="meta", dtype=torch.float32),
                   X.offsets, X.weights)
    for D in (km.sliced_wasserstein(bags, n_projections=4, rng=0),
              km.sliced_wasserstein_kernel(bags, [torch.empty(
                  3, 3, device="meta", dtype=torch.float32)], gamma=0.5,
                  n_projections=4, rng=0)):
        assert D.device.type == "meta" and D.dtype == torch.float32
    assert tuple(D.shape) == (4, 1)


def test_weighted_sliced_wasserstein_refuses_bad_weights():
    torch = _torch()
    X = weighted_sets()
    points = torch.asarray(np.array(X.points)).requires_grad_()
    weights = np.array(X.weights)
    weights[:4] = 0.0  # (a set of weight 0)
    for f in (km.sliced_wasserstein, km.sliced_wasserstein_kernel):
        with pytest.raises(ValueError, match="weight") as numpy_error:
            f(km.Bags(X.points, X.offsets, weights))
        with pytest.raises(ValueError, match="weight") as error:
            f(km.Bags(points, X.offsets, weights))
        assert str(error.value) == str(numpy_error.value)


# -- the EMK pyramid ----------------------------------------------------------

def pyramid_input(layout, dtype):
    """Sets (a list, a 3-D array or a weighted Bags) and the positions of
    their points in the unit square (a list, or one array aligned with the
    points for the Bags)."""
    sizes = (4, 4, 4) if layout == "3d" else (4, 7, 5)
    sets = point_sets(dtype, 24, sizes)
    positions = [np.random.default_rng(25).random((n, 2)) for n in sizes]
    positions[0][0] = (1.0, 0.5)  # (the last row of cells)
    if layout == "3d":
        return np.stack(sets), positions
    if layout == "weighted":
        weights = np.random.default_rng(26).random(sum(sizes))
        weights[[2, 5]] = 0.0
        sets = km.Bags.from_list(sets, weights=np.split(weights, [4, 11]))
        return sets, np.concatenate(positions)
    return sets, positions


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["list", "3d", "weighted"])
@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize("name", ["emk_rbf", "emk_laplacian"])
def test_emk_pyramid_equals_numpy(name, levels, layout, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    fmap = fitted(name)
    sets, positions = pyramid_input(layout, dtype)
    expected = fmap.transform(sets, positions, levels=levels)
    F = fmap.transform(as_library(sets, to_library), positions, levels=levels)
    assert type(F) is type(to_library(np.zeros(1)))
    assert_equal_numpy(to_numpy(F), expected, library, dtype)


@pytest.mark.parametrize("library", ["torch_grad", "strict"])
def test_emk_pyramid_positions_of_the_library(library):
    """Positions given as arrays of the library are read on the host."""
    to_library, to_numpy = LIBRARIES[library]
    fmap = fitted("emk_rbf")
    sets, positions = pyramid_input("list", np.float64)
    F = fmap.transform(as_library(sets, to_library), as_library(positions, to_library),
                       levels=2)
    assert_allclose(to_numpy(F), fmap.transform(sets, positions, levels=2),
                    rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("layout", ["list", "weighted"])
def test_emk_pyramid_gradcheck(layout):
    torch = _torch()
    fmap = fitted("emk_laplacian" if layout == "weighted" else "emk_rbf")
    sets, positions = pyramid_input(layout, np.float64)
    # (the features along two random directions: two backward passes)
    R = torch.asarray(np.random.default_rng(28).standard_normal(
        (fmap.n_features_out_ * 21, 2)))
    if layout == "list":
        tensors = tuple(torch.asarray(s).requires_grad_() for s in sets)
        assert torch.autograd.gradcheck(
            lambda *s: fmap.transform(list(s), positions, levels=2) @ R, tensors)
    else:
        assert torch.autograd.gradcheck(
            lambda P: fmap.transform(km.Bags(P, sets.offsets, sets.weights),
                                     positions, levels=2) @ R,
            (torch.asarray(np.array(sets.points)).requires_grad_(),))


def test_emk_pyramid_jax_grad_equals_torch():
    torch, jnp = _torch(), _jnp()  # (float64 in JAX)
    import jax

    fmap = fitted("emk_rbf")
    sets, positions = pyramid_input("3d", np.float64)

    def loss(A):
        return (fmap.transform(A, positions, levels=2) ** 3).sum()

    g = jax.grad(loss)(jnp.asarray(sets))
    A = torch.asarray(sets).requires_grad_()
    loss(A).backward()
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-15)
    jitted = jax.jit(loss)(jnp.asarray(sets))
    assert_allclose(float(jitted), loss(sets), rtol=1e-12)


def test_emk_pyramid_on_the_meta_device():
    torch = _torch()
    fmap = fitted("emk_rbf")
    sets = [torch.empty(n, 3, device="meta", dtype=torch.float32) for n in (3, 5)]
    positions = [np.random.default_rng(27).random((n, 2)) for n in (3, 5)]
    F = fmap.transform(sets, positions, levels=2)
    assert F.device.type == "meta" and F.dtype == torch.float32
    assert tuple(F.shape) == (2, fmap.n_features_out_ * 21)
    with pytest.raises(ValueError, match="positions must have values that can be "
                                         "read on the host"):
        fmap.transform(sets, [torch.empty(n, 2, device="meta") for n in (3, 5)],
                       levels=2)


def test_emk_pyramid_refuses_bad_input_as_numpy():
    torch = _torch()
    fmap = fitted("emk_rbf")
    sets, positions = pyramid_input("list", np.float64)
    tensors = [torch.asarray(s).requires_grad_() for s in sets]
    outside = [p * 2 for p in positions]
    for args, kwargs in (((), {"levels": 1}),
                         ((positions[:2],), {"levels": 1}),
                         ((outside,), {"levels": 1}),
                         ((positions,), {"levels": 17})):
        with pytest.raises(ValueError) as numpy_error:
            fmap.transform(sets, *args, **kwargs)
        with pytest.raises(ValueError) as error:
            fmap.transform(tensors, *args, **kwargs)
        assert str(error.value) == str(numpy_error.value)


@pytest.mark.parametrize("library", ["strict", "torch_grad"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_whose_sum_overflows_are_finite(dtype, library):
    """The check of values reads their sum first (finite only where they
    all are): finite values whose sum overflows are read one by one,
    accepted, and give NumPy's distances; a NaN among them is refused
    with NumPy's message."""
    to_library, to_numpy = LIBRARIES[library]
    top = float(np.finfo(dtype).max)
    X = [np.array([[0.4], [0.9]], dtype=dtype) * top,
         np.array([[0.6], [0.8], [0.7]], dtype=dtype) * top]
    expected = km.sliced_wasserstein(X, n_projections=3, rng=0)
    D = km.sliced_wasserstein(as_library(X, to_library), n_projections=3, rng=0)
    assert_allclose(to_numpy(D), expected, rtol=1e-12 if dtype == np.float64 else 1e-5)
    X[1][1, 0] = np.nan
    with pytest.raises(ValueError) as numpy_error:
        km.sliced_wasserstein(X, n_projections=3, rng=0)
    with pytest.raises(ValueError) as library_error:
        km.sliced_wasserstein(as_library(X, to_library), n_projections=3, rng=0)
    assert str(library_error.value) == str(numpy_error.value)
