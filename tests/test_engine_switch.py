"""The engine's one code-path switch: `kernelmaps._engine.select_isa`
selects the SIMD path of every extension at once (the `simd_path` fixture
of conftest.py runs the kernels' tests on each path through it)."""

import os

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose

import kernelmaps as km
from kernelmaps import _engine
from kernelmaps._engine.pair_sums import pair_sums


def test_available_paths_and_selection():
    available = _engine.available_isas()
    assert available[0] == "baseline"
    assert _engine.simd_isa() == available[-1]  # the best, at import
    previous = _engine.select_isa("baseline")
    try:
        assert previous == available[-1]
        assert _engine.simd_isa() == "baseline"
    finally:
        assert _engine.select_isa(previous) == "baseline"
    assert _engine.simd_isa() == previous


@pytest.mark.parametrize("name", ["avx512", "AVX2", "", None, 1])
def test_unknown_path_is_refused(name):
    if name in _engine.available_isas():
        pytest.skip("available here")
    before = _engine.simd_isa()
    with pytest.raises(ValueError, match=r"code path .* is not available here"):
        _engine.select_isa(name)
    assert _engine.simd_isa() == before


@pytest.mark.skipif(len(_engine.available_isas()) < 2,
                    reason="one code path on this CPU")
def test_every_simd_engine_follows_the_switch():
    """Every SIMD engine runs the path selected, as each engine's record of
    its last dispatch (`last_isa`) shows, and its results on the baseline
    and on the best path agree to rounding. The bits may differ (vector
    widths and FMA change the order of the sums) or not (some results are
    exact, or rounded alike, on some CPUs): the test assumes neither."""
    from kernelmaps._engine import _additive, _knn, _pair_sums, _set_means, _sliced

    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(n, 17)) for n in (7, 30, 12, 25)]
    sets32 = [s.astype(np.float32) for s in sets]
    H = rng.dirichlet(np.ones(20), size=9)
    calls = {  # the engine, and the relative tolerance
        "pair sums": (lambda: km.sum_match_kernel(sets, gamma=0.3), _pair_sums,
                      1e-12),
        "pair sums energy": (lambda: pair_sums(km.Bags.from_list(sets),
                                               kernel="energy"), _pair_sums, 1e-12),
        "kNN": (lambda: km.renyi_divergence(sets32, k=3, clamp=False), _knn, 1e-5),
        "additive": (lambda: km.js_kernel(H), _additive, 1e-12),
        "additive csr": (lambda: km.js_kernel(scipy.sparse.csr_matrix(
            H * (H > 0.05))), _additive, 1e-12),
        "set means": (lambda: km.RandomDistributionFeatures(40, rng=0, gamma=1 / 17)
                      .fit_transform(sets), _set_means, 1e-12),
        "sliced": (lambda: km.sliced_wasserstein(sets, rng=0), _sliced, 1e-12),
        "sliced p=1": (lambda: km.sliced_wasserstein(sets, p=1, rng=0), _sliced,
                       1e-12),
        "sliced weighted": (lambda: km.sliced_wasserstein(km.Bags.from_list(
            sets, weights=[np.arange(1.0, len(s) + 1) for s in sets]), rng=0),
            _sliced, 1e-12),
    }
    results = {}
    for path in ("baseline", *_engine.available_isas()[1:]):
        previous = _engine.select_isa(path)
        try:
            results[path] = {}
            for name, (f, engine, _) in calls.items():
                results[path][name] = f()
                assert engine.last_isa() == _engine.available_isas().index(path), (
                    name, path)
        finally:
            _engine.select_isa(previous)
    base = results["baseline"]
    for path, result in results.items():
        for name, (_, _, rtol) in calls.items():
            assert_allclose(base[name], result[name], rtol=rtol, atol=rtol,
                            err_msg=f"{name} on {path}")


@pytest.mark.skipif("avx512" not in _engine.available_isas(),
                    reason="no AVX-512 on this CPU")
def test_avx512_and_avx2_give_the_same_bits():
    """The AVX-512 path computes every lane with the operations of the AVX2
    path (FMA on both, the same polynomials, the same order of the sums), in
    vectors twice as wide: results do not depend on which of the two a CPU
    runs. Odd sizes: padded lanes and the tails of both widths."""
    rng = np.random.default_rng(1)
    sets = [rng.normal(size=(n, 13)) for n in (7, 33, 12, 5, 70)]
    sets32 = [s.astype(np.float32) for s in sets]
    H = rng.dirichlet(np.ones(37), size=11)
    calls = {
        "rbf": lambda: km.sum_match_kernel(sets, gamma=0.3),
        "laplacian f32": lambda: km.sum_match_kernel(sets32, kernel="laplacian"),
        "polynomial f32": lambda: km.sum_match_kernel(sets32, kernel="polynomial"),
        "energy": lambda: pair_sums(km.Bags.from_list(sets), kernel="energy"),
        "energy f32": lambda: pair_sums(km.Bags.from_list(sets32),
                                        km.Bags.from_list(sets32[1:3]),
                                        kernel="energy"),
        "mmd": lambda: km.mmd(sets, sets32[:2]),
        "kNN": lambda: km.renyi_divergence(sets32, k=4, clamp=False),
        "js": lambda: km.js_kernel(H),
        "js csr": lambda: km.js_kernel(scipy.sparse.csr_matrix(H * (H > 0.02))),
        "chi2 f32": lambda: km.additive_chi2_kernel(H.astype(np.float32)),
        "intersection": lambda: km.intersection_kernel(H),
        "set means": lambda: km.RandomDistributionFeatures(41, rng=0, gamma=1 / 13)
        .fit_transform(sets32),
    }
    results = {}
    for path in ("avx2", "avx512"):
        previous = _engine.select_isa(path)
        try:
            results[path] = {name: f() for name, f in calls.items()}
        finally:
            _engine.select_isa(previous)
    for name in calls:
        np.testing.assert_array_equal(results["avx2"][name], results["avx512"][name],
                                      err_msg=name)


@pytest.mark.parametrize("value", ["baseline", " AVX2 ", "avx512", "sse9", ""])
def test_path_from_the_environment(value):
    """KERNELMAPS_SIMD selects the path at import, in a fresh process; a path
    this CPU lacks warns and keeps the best one."""
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('error');\n"
            "try:\n    from kernelmaps import _engine\n"
            "except RuntimeWarning as w:\n    print('warning', w)\n"
            "else:\n    print(_engine.simd_isa())")
    env = {**os.environ, "KERNELMAPS_SIMD": value}
    out = subprocess.run([sys.executable, "-P", "-c", code], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    name = value.strip().lower()
    if not name:
        assert out == _engine.available_isas()[-1]
    elif name in _engine.available_isas():
        assert out == name
    else:
        assert out.startswith("warning KERNELMAPS_SIMD=") and name in out
