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


def test_emk_pyramid_computes_with_numpy_only():
    """EMK's spatial pyramid (levels > 0) is computed through NumPy only:
    a gradient is refused clearly (where `_array_transform` passes the
    transform's arguments on)."""
    torch = _torch()
    fmap = fitted("emk_rbf")
    sets = point_sets(np.float64, 17, (4, 5))
    positions = [np.random.default_rng(18).random((len(s), 2)) for s in sets]
    tensors = [torch.asarray(s) for s in sets]
    F = fmap.transform(tensors, positions, levels=1)
    assert_array_equal(F.numpy(), fmap.transform(sets, positions, levels=1))
    with pytest.raises(TypeError, match=r"levels=1\) with NumPy only"):
        fmap.transform([t.clone().requires_grad_() for t in tensors], positions,
                       levels=1)
