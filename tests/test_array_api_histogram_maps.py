"""The histogram maps on arrays of other libraries (issue 52): the additive
chi2 maps, `ExpChi2Features` and `AnchorMap` give the NumPy output in the
input's library and on its device, computed by the library where it must
(a gradient asked, array-api-strict, another device), differentiably.

Skipped where array-api-compat or the library is missing: ``.ci/run``
installs them (the README's test command does not)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km

from ._helpers import LIBRARIES
from ._helpers import import_jnp as _jnp
from ._helpers import import_torch as _torch

pytest.importorskip("array_api_compat")


NATIVE = {"torch_grad": LIBRARIES["torch_grad"], "strict": LIBRARIES["strict"]}


def histograms(dtype=np.float64, shape=(9, 6), seed=0):
    """Histograms with zeros."""
    rng = np.random.default_rng(seed)
    H = rng.random(shape).astype(dtype)
    H[0, :2] = 0
    H[-1, 1:3] = 0
    return H


H = histograms()

# Each map, fitted on H where it learns (or given its parameters).
MAPS = {
    "direct": lambda: km.Chi2DirectMap(5).fit(H),
    "direct_per_dimension": lambda: km.Chi2DirectMap(4, per_dimension=True).fit(H),
    "direct_k": lambda: km.Chi2DirectMap(
        k=np.random.default_rng(3).uniform(0.01, 2.0, (6, 3))),
    "chebyshev": lambda: km.Chi2ChebyshevMap(7),
    "chebyshev_median": lambda: km.Chi2ChebyshevMap(4, scale="median").fit(H),
    **{f"vz_{kernel}_{order}": (lambda kernel=kernel, order=order:
                                km.HomogeneousKernelMap(kernel, order))
       for kernel in ("chi2", "js", "intersection") for order in (0, 1, 4)},
    "vz_chi2_period": lambda: km.HomogeneousKernelMap(order=3, period=2.5),
    "hellinger": lambda: km.HomogeneousKernelMap("hellinger"),
    "exp_chi2": lambda: km.ExpChi2Features(23, beta=0.7, rng=0).fit(H),
    "exp_chi2_chebyshev": lambda: km.ExpChi2Features(
        19, chi2_map=km.Chi2ChebyshevMap(4), form="offset", rng=1).fit(H),
    "exp_chi2_vz": lambda: km.ExpChi2Features(
        17, chi2_map=km.HomogeneousKernelMap(order=2), rng=2).fit(H),
    "anchor": lambda: km.AnchorMap(n_anchors=7).fit(H),
    "anchor_interpolated": lambda: km.AnchorMap(
        n_anchors=7, n_neighbors=2, weights="distance").fit(H),
    "anchor_3": lambda: km.AnchorMap(n_anchors=9, n_neighbors=3).fit(H),
    "anchor_3_distance_kmeans": lambda: km.AnchorMap(
        "js", n_anchors=6, n_neighbors=3, weights="distance", anchors="kmeans").fit(H),
    "anchor_hellinger_exact": lambda: km.AnchorMap("hellinger", n_anchors=5,
                                                   energy=1.0).fit(H),
    "anchor_callable": lambda: km.AnchorMap(np.minimum, n_anchors=8, n_neighbors=2,
                                            weights="distance").fit(H),
}
# differentiable away from 0 (uniform weights: constant between anchors)
CONSTANT = ("anchor", "anchor_3", "anchor_hellinger_exact")
SMOOTH = [name for name in MAPS if name not in CONSTANT]


def assert_close(values, expected, dtype):
    """Equal to NumPy's to 1e-12 (float64) or 1e-5 (float32) relative, up
    to that share of the largest feature (cosines near their zeros)."""
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    top = float(np.abs(expected).max(initial=0.0))
    assert_allclose(values, expected, rtol=rtol,
                    atol=max(rtol * top / 10, 1e-300 if dtype == np.float64 else 1e-30))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(MAPS))
def test_maps_equal_numpy(name, dtype, library):
    to_library, to_numpy = LIBRARIES[library]
    fmap = MAPS[name]()
    X = histograms(dtype, (11, 6), seed=4)
    expected = fmap.transform(X)
    Z = fmap.transform(to_library(X))
    assert type(Z) is type(to_library(X))
    values = to_numpy(Z)
    assert values.dtype == expected.dtype and values.shape == expected.shape
    if library in ("torch", "jax"):  # the compiled engine: NumPy's bits
        assert_array_equal(values, expected)
    else:
        assert_close(values, expected, dtype)


@pytest.mark.parametrize("library", sorted(NATIVE))
@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("name", sorted(n for n in MAPS if not n.startswith("exp")))
def test_maps_at_extreme_scales(name, scale, library):
    """The maps fitted (or given parameters) at the scale of the data."""
    to_library, to_numpy = NATIVE[library]
    fmap = MAPS[name]()
    params = fmap.get_params(deep=False)
    if "k" in params and params["k"] is not None:
        fmap.set_params(k=params["k"] * scale)
    elif params.get("scale") == 1.0:
        fmap.set_params(scale=scale)
    X = histograms(np.float64, (7, 6), seed=5) * scale
    if hasattr(fmap, "n_features_in_") and "k" not in params:
        fmap = type(fmap)(**params).fit(H * scale)
    expected = fmap.transform(X)
    assert np.isfinite(expected).all()
    assert_close(to_numpy(fmap.transform(to_library(X))), expected, np.float64)


HUGE = [1e300, 1.7e308, np.finfo(np.float64).max]
TINY = [5e-324, 1e-310, 2.0**-1000, 1e-300]


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_maps_at_the_ends_of_the_float_range(library):
    """Values and parameters near the largest and smallest floats: the
    direct map at its scale 4**-m, the Chebyshev map in logs, as NumPy's."""
    to_library, to_numpy = NATIVE[library]
    X = np.array([[*HUGE, 0.5], TINY], dtype=np.float64)
    fitted = np.random.default_rng(0).random((6, 4))
    maps = [km.Chi2DirectMap().fit(fitted),
            km.Chi2DirectMap(per_dimension=True).fit(fitted),
            km.Chi2DirectMap(k=np.array([1e308, 0.1])),
            km.Chi2DirectMap(k=np.array([1e-300, 5e-324, 1.0])),
            km.Chi2ChebyshevMap(7), km.HomogeneousKernelMap(order=3),
            km.HomogeneousKernelMap("hellinger")]
    maps += [km.Chi2ChebyshevMap(6, scale=scale)
             for scale in (5e-324, 1e-30, 1e10, 1.7e308, 1e300)]
    for fmap in maps:
        # row by row: NumPy's direct map takes the scale of the whole input
        # (its smallest values lose precision where that of the largest
        # differs); the library's is that of the largest values only
        expected = np.vstack([fmap.transform(X[i:i + 1]) for i in range(len(X))])
        assert np.isfinite(expected).all()
        assert_allclose(to_numpy(fmap.transform(to_library(X))), expected,
                        rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("library", sorted(NATIVE))
def test_maps_at_the_ends_of_the_float32_range(library):
    """In float32, computed in float32 (NumPy's maps compute in float64):
    to 1e-4 relative, as the cosines of ``j L log x`` and the Chebyshev
    terms taken in logs have arguments near 100, known to float32's
    precision times that."""
    to_library, to_numpy = NATIVE[library]
    X = np.array([[3.4e38, 1e30, 1e-45, 0.0], [1e-38, 0.5, 1e-20, 2e38]],
                 dtype=np.float32)
    fitted = np.random.default_rng(0).random((5, 4)).astype(np.float32)
    for fmap in (km.Chi2DirectMap().fit(fitted), km.Chi2DirectMap().fit(fitted * 1e30),
                 km.Chi2DirectMap(k=np.array([1.7e308])),
                 km.Chi2DirectMap(k=np.array([1e-40, 1e-10, 1e30])),
                 km.Chi2ChebyshevMap(8), km.Chi2ChebyshevMap(8, scale=5e-324),
                 km.Chi2ChebyshevMap(5, scale=1e-60),
                 km.Chi2ChebyshevMap(5, scale=1e20),
                 km.HomogeneousKernelMap(), km.HomogeneousKernelMap("hellinger")):
        expected = fmap.transform(X)
        Z = to_numpy(fmap.transform(to_library(X)))
        assert Z.dtype == np.float32 and np.isfinite(Z).all()
        assert_allclose(Z, expected, rtol=1e-4, atol=1e-38)


@pytest.mark.parametrize("name", sorted(MAPS))
def test_the_output_stays_on_the_input_device(name):
    """PyTorch's ``meta`` device (no GPU here): computed by the library
    there, its values unread."""
    torch = _torch()
    fmap = MAPS[name]()
    X = torch.empty(5, 6, device="meta", dtype=torch.float32)
    Z = fmap.transform(X)
    assert Z.device.type == "meta" and Z.dtype == torch.float32
    assert tuple(Z.shape) == fmap.transform(H[:5]).shape


@pytest.mark.parametrize("name", SMOOTH)
def test_gradcheck(name):
    """``torch.autograd.gradcheck`` in float64, away from 0."""
    torch = _torch()
    fmap = MAPS[name]()
    X = torch.asarray(histograms(np.float64, (3, 6), seed=6) + 0.05).requires_grad_()
    assert torch.autograd.gradcheck(fmap.transform, (X,))


@pytest.mark.parametrize("name", sorted(MAPS))
def test_zeros_give_zero_features_and_gradient(name):
    torch = _torch()
    fmap = MAPS[name]()
    X = torch.asarray(histograms(np.float64, (4, 6), seed=7)).requires_grad_()
    Z = fmap.transform(X)
    assert_close(Z.detach().numpy(), fmap.transform(X.detach().numpy()), np.float64)
    if not Z.requires_grad:  # (one neighbour: a table lookup)
        assert name in CONSTANT
        return
    weights = torch.asarray(np.random.default_rng(8).standard_normal(Z.shape))
    (Z * weights).sum().backward()
    assert torch.all(torch.isfinite(X.grad))
    if not name.startswith("exp"):
        assert torch.all(X.grad[X.detach() == 0] == 0)


@pytest.mark.parametrize("name", ["exp_chi2", "vz_js_4", "anchor_3_distance_kmeans"])
def test_jax_grad_equals_torch(name):
    torch, jnp = _torch(), _jnp()
    import jax

    fmap = MAPS[name]()
    X = histograms(np.float64, (5, 6), seed=9)  # with zeros: gradient 0, not NaN
    weights = np.random.default_rng(10).standard_normal(fmap.transform(X).shape)

    def loss(A):
        return (fmap.transform(A) * weights).sum()

    g = jax.grad(loss)(jnp.asarray(X))
    A = torch.asarray(X).requires_grad_()
    (fmap.transform(A) * torch.asarray(weights)).sum().backward()
    assert np.all(np.isfinite(np.asarray(g)))
    assert_allclose(np.asarray(g), A.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["direct", "chebyshev", "vz_chi2_1", "exp_chi2",
                                  "anchor_interpolated"])
def test_under_jit(name):
    """Under ``jax.jit`` (values unread: the direct map at its scale, the
    Chebyshev map's values outside its window taken in logs too)."""
    jnp = _jnp()
    import jax

    fmap = MAPS[name]()
    X = histograms(np.float64, (4, 6), seed=11)
    X[1, 3] = 1e-305  # beyond the Chebyshev window
    Z = jax.jit(fmap.transform)(jnp.asarray(X))
    assert_close(np.asarray(Z), fmap.transform(X), np.float64)


def test_a_gradient_is_no_longer_refused():
    """Every histogram map computes with a gradient (the compiled engine
    refused it)."""
    torch = _torch()
    X = torch.asarray(H).requires_grad_()
    for name in SMOOTH:
        Z = MAPS[name]().transform(X)
        assert type(Z) is torch.Tensor and Z.requires_grad


def test_bad_input_has_the_numpy_message():
    torch = _torch()
    bad = H.copy()
    bad[2, 3] = -1.0
    for name in ("direct", "chebyshev", "vz_chi2_1", "exp_chi2", "anchor"):
        fmap = MAPS[name]()
        for values, error, message in (
                (bad, ValueError, "X contains negative values"),
                (np.where(bad < 0, np.nan, H), ValueError, "X contains NaN"),
                (H[0], ValueError, "X must be a 2-D array"),
                (H + 1j, TypeError, "real numbers")):
            with pytest.raises(error, match=message):
                fmap.transform(torch.asarray(values).requires_grad_()
                               if error is ValueError else torch.asarray(values))
    for name in ("direct", "direct_k", "exp_chi2", "anchor"):
        with pytest.raises(ValueError, match="X has 5 features"):
            MAPS[name]().transform(torch.asarray(H[:, :5]).requires_grad_())
    for fmap in (km.Chi2DirectMap(5), km.ExpChi2Features(), km.AnchorMap()):
        with pytest.raises(ValueError, match="not fitted"):
            fmap.transform(torch.asarray(H).requires_grad_())
    huge = km.AnchorMap(n_anchors=4).fit(H * 1e300)
    with pytest.raises(ValueError, match="exceed the float32 range"):
        huge.transform(torch.asarray(H.astype(np.float32)).requires_grad_())


def test_fitted_state_moves_to_the_device_once():
    torch = _torch()
    X = torch.asarray(H).requires_grad_()
    for fmap in (MAPS["direct"](), MAPS["exp_chi2"](), MAPS["anchor_3"]()):
        first = fmap.transform(X)
        kept = dict(fmap._on_device_)
        assert kept
        assert_array_equal(fmap.transform(X).detach().numpy(), first.detach().numpy())
        assert all(fmap._on_device_[key] is value for key, value in kept.items())
        fmap.fit(H[::-1])  # a new fit: moved again
        assert not getattr(fmap, "_on_device_", None)
        assert_close(fmap.transform(X).detach().numpy(), fmap.transform(H), np.float64)
