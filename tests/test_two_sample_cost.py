"""mmd_test's CostWarning: a call whose estimated time is beyond 10 minutes
says so before any work, naming what is faster; the estimate (a cost
model, O(1) arithmetic) is on the short side of the times measured in
studies/which_test, so the sizes of the docs never warn (and the suite runs
with -W error: a false positive in any test fails it)."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import kernelmaps as km
from kernelmaps import _validation
from kernelmaps._two_sample import cost, cross, draws, features, linear
from kernelmaps._two_sample.features import linear_width


class _WorkStarted(Exception):
    pass


@pytest.fixture
def no_work(monkeypatch):
    """Any resampling or feature work stops the call (the tests here must
    not run for hours when the warning does not come)."""
    def stop(*args, **kwargs):
        raise _WorkStarted

    for module, name in ((draws, "block_seeds"), (features, "feature_pass"),
                         (linear, "_feature_moments"), (cross, "cross_part")):
        monkeypatch.setattr(module, name, stop)


def test_long_calls_warn_before_any_work(no_work, monkeypatch):
    rng = np.random.default_rng(0)
    # the exact test at n = m = 200,000 (2 hours on 2 busy cores)
    X, Y = rng.normal(size=(2, 200_000, 10))
    with pytest.warns(km.CostWarning) as record, pytest.raises(_WorkStarted):
        km.mmd_test(X, Y, workers=2)
    message = str(record[0].message)
    assert record[0].filename == __file__  # the user's line
    assert message.startswith("mmd_test(method='permutation') of n=200000 and "
                              "m=200000 objects with n_resamples=999: about ")
    for faster in ("feature_map=1000", "method='linear'", "method='cross'"):
        assert faster in message
    # made an error, it stops the call before it starts
    with warnings.catch_warnings():
        warnings.simplefilter("error", km.CostWarning)
        with pytest.raises(km.CostWarning):
            km.mmd_test(X, Y, method="aggregated", workers=2)
    # n_resamples=10**9 on 100 + 100 points: the resamples make it long
    # (8 GB for the null distribution: allowed here on any machine). (The
    # wild bootstrap's 10**9 sign flips of 100 pairs, about 0.7 us each on
    # one core, do not warn.)
    monkeypatch.setattr(_validation, "memory_limit", lambda: (2**40, "this machine"))
    X, Y = rng.normal(size=(2, 100, 3))
    with pytest.warns(km.CostWarning, match=r"the resamples make it long: the "
                      r"default, n_resamples=999, gives p-values down to 0\.001"
                      ), pytest.raises(_WorkStarted):
        km.mmd_test(X, Y, n_resamples=10**9, workers=2)


def test_what_each_warning_names(no_work, monkeypatch):
    # every method's advice (a threshold of 0: every call warns)
    monkeypatch.setattr(cost, "LONG_CALL_SECONDS", 0.0)
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(2, 60, 3))
    sets = [rng.normal(size=(5, 2)) for _ in range(20)]
    cases = [
        ({"method": "cross"}, X, "feature_map=1000 (the permutation test on "
                              "1000 random Fourier features"),
        ({"method": "fuse"}, X, "method='aggregated' with incomplete=200"),
        ({"method": "linear"}, X, "a random subsample of X and Y, or fewer "
                                  "features, is faster"),
        ({"feature_map": 50}, X, "fewer features or resamples"),
        ({"kernel": "mean_map"}, sets, "method='linear' with a feature_map "
                                       "that takes the objects"),
    ]
    for kwargs, A, advice in cases:
        with pytest.warns(km.CostWarning, match="a cost model's estimate") as \
                record, pytest.raises(_WorkStarted):
            km.mmd_test(A[:10], A[10:], **kwargs)
        assert advice in str(record[0].message), (kwargs, str(record[0].message))
    # Dask input: the cluster's workers do the work, not counted here
    da = pytest.importorskip("dask.array")
    with warnings.catch_warnings():
        warnings.simplefilter("error", km.CostWarning)
        with pytest.raises(_WorkStarted):
            km.mmd_test(da.from_array(X), da.from_array(Y), method="linear")


# studies/which_test (2 cores of an AMD EPYC Zen 3, quiet; d = 64): median
# seconds of one test at n = m, with (method, n, keywords of mmd_test)
MEASURED = [
    ("permutation", 1000, {}, 0.2), ("permutation", 5000, {}, 2.6),
    ("wild_bootstrap", 1000, {}, 0.085), ("wild_bootstrap", 10_000, {}, 4.0),
    ("aggregated", 1000, {}, 2.0), ("aggregated", 2000, {}, 9.6),
    ("aggregated", 1000, {"incomplete": 200}, 1.2),
    ("aggregated", 100_000, {"incomplete": 200}, 75.0),
    ("fuse", 1000, {}, 2.7), ("fuse", 2000, {}, 9.1),
    ("cross", 1000, {}, 0.035), ("cross", 20_000, {}, 3.2),
    ("linear", 1000, {}, 0.04), ("linear", 10**6, {}, 23.0),
    ("permutation", 1000, {"feature_map": 1000}, 0.28),
    ("permutation", 10**6, {"feature_map": 1000}, 84.0),
]


@pytest.mark.parametrize(("method", "n", "kwargs", "seconds"), MEASURED)
def test_estimate_on_the_short_side(method, n, kwargs, seconds):
    # the cost model (run on a stand-in of the checked call: samples of
    # that shape, no memory) never above what was measured on 2 cores
    X = np.broadcast_to(np.zeros(1), (n, 64))
    grid = method in ("aggregated", "fuse")
    B = {"aggregated": (2000, 2000), "fuse": 2000, "linear": None,
         "cross": None}.get(method, 999)
    iv = SimpleNamespace(method=method, kind="points", X=X, Y=X, n=n, N=2 * n,
                         B=B, n_kernels=20 if grid else 1,
                         incomplete=kwargs.get("incomplete"),
                         kernels=("laplacian", "rbf") if grid else ("rbf",))
    width = (linear_width(2 * n, 64) if method == "linear"
             else kwargs.get("feature_map"))
    work, sizes = cost.work_seconds(iv, width)
    assert sizes == (n, n)
    assert work / 2 <= seconds
