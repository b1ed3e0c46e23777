"""The cost of a call of `mmd_test`, said before it starts: its estimated
time (a cost model, O(1) arithmetic), a `CostWarning` beyond
`LONG_CALL_SECONDS`, and the message of a call beyond the working-memory
budget."""

import numpy as np

from .._lazy import is_lazy
from .._warnings import warn_cost
from .checks import DEFAULT_RESAMPLES
from .features import LINEAR_COVARIANCE_ROWS


def warn_long_call(iv, width=None):
    """A `CostWarning` before the long work where the call's estimated
    time on its threads (`work_seconds`; `width`: the features of the
    linear test or of the resampling tests on features) is beyond
    `LONG_CALL_SECONDS`, with the faster ways the user guide recommends.
    Not for Dask input (its work runs on the cluster's workers, whose
    number is not known here). Reads the `Checked` call's method, kind,
    samples (X, Y, n, N, lazy), resamples B, n_kernels, kernels,
    incomplete and n_threads."""
    if is_lazy(iv.X, iv.Y):
        return
    work, sizes = work_seconds(iv, width)
    seconds = work / iv.n_threads
    if seconds > LONG_CALL_SECONDS:
        warn_cost(_long_call_message(iv, seconds, sizes, width))


def work_seconds(iv, width, resamples=None):
    """The seconds of work of the validated call `iv` on one fast core, by
    a cost model of its longest parts (an estimate on the short side: the
    rates are a few times those measured on one core of a Zen 5, and the
    kernel of objects other than points is not counted), and ``(n, m)``:
    O(1) arithmetic from the sizes, the dimension, the resamples (or
    `resamples`, one number, instead), the method and the features
    (`width`, for the linear test and the tests on features)."""
    n, m, N = iv.n, iv.N - iv.n, iv.N
    d = iv.X.shape[1] if iv.kind == "points" else 0
    if iv.method == "linear":
        covariance = min(n, LINEAR_COVARIANCE_ROWS) + min(m, LINEAR_COVARIANCE_ROWS)
        return (N * width * (d + 2) + covariance * width**2 + width**3
                ) / FEATURE_RATE, (n, m)
    if iv.method == "cross":
        return N * N / 4 * (d + 4) / KERNEL_RATE, (n, m)
    B = sum(np.atleast_1d(iv.B)) if resamples is None else resamples
    wild = iv.method in ("wild_bootstrap", "aggregated")
    rows = min(n, m) if wild else N
    if width is not None:  # the permutation test or wild bootstrap on features
        return (rows * width * (B + 1) + N * width * (d + 2)) / FEATURE_RATE, (n, m)
    L, band = iv.n_kernels, iv.incomplete
    products = L * rows * (band if band is not None else rows / 2)
    draws = rows / (SIGN_RATE if wild else DRAW_RATE)
    pairs = N * band if band is not None else N * N / 2
    kernel = pairs * (d * len(iv.kernels) + 4 * L) / KERNEL_RATE
    return ((B + 1) * (products / RESAMPLE_RATE + draws + L * RESAMPLE_COST)
            + kernel), (n, m)


def _long_call_message(iv, seconds, sizes, width):
    """What a `CostWarning` of `mmd_test` says: the estimate, and what is
    faster (fewer resamples where they make the cost, else the tests the
    user guide recommends at that size)."""
    n, m = sizes
    resamples = "" if iv.B is None else f" with n_resamples={iv.B}"
    head = (f"mmd_test(method={iv.method!r}) of n={n} and m={m} objects"
            f"{resamples}: about {_duration(seconds)} of work on "
            f"{iv.n_threads} thread{'s' * (iv.n_threads > 1)} (a cost model's "
            f"estimate on the short side, made before the call starts)")
    default = None if iv.B is None else DEFAULT_RESAMPLES[iv.method]
    if default is not None and sum(np.atleast_1d(iv.B)) > sum(
            np.atleast_1d(default)) and (
            work_seconds(iv, width, sum(np.atleast_1d(default)))[0]
            / iv.n_threads <= LONG_CALL_SECONDS):
        smallest = 1 / (np.atleast_1d(default)[-1] + 1)
        advice = (f"the resamples make it long: the default, n_resamples="
                  f"{default}, gives p-values down to {smallest:.2g}, enough "
                  f"for any alpha above that")
    elif width is not None:
        advice = ("at this size a random subsample of X and Y, or fewer "
                  "features" + (" or resamples" if iv.B is not None else "")
                  + ", is faster")
    else:
        faster = ("feature_map=1000 (the permutation test on 1000 random "
                  "Fourier features, exact for their kernel), "
                  "method='linear'" if iv.kind == "points" else
                  "method='linear' with a feature_map that takes the objects")
        if iv.method != "cross":
            faster += " or method='cross'"
        if iv.method in ("aggregated", "fuse") and iv.incomplete is None:
            faster += (", or for a grid of kernels method='aggregated' with "
                       "incomplete=200")
        advice = (f"at this size the user guide (\"Which test for which "
                  f"size\") recommends the tests linear in n: {faster}")
    return (f"{head}; {advice}. (Silence it: warnings.simplefilter('ignore', "
            f"kernelmaps.CostWarning).)")


def _duration(seconds):
    """`seconds` in words: minutes, hours or days."""
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.3g} days"


# A call whose estimated time (`work_seconds`, on its threads) is beyond
# this many seconds says so up front (`CostWarning`).
LONG_CALL_SECONDS = 600.0
# Rates of the cost model, per thread: about 2.5 times those measured on
# one core of an AMD Zen 5 (AVX-512; process time, workers=1, a machine
# shared with other jobs), so that the estimate is on the short side (a
# faster core, perfect scaling over the threads): the resampling products
# (multiply-adds per second, float64 or float32: 1.5e10 measured for both
# from N = 1000 on, less below), the permutations drawn (objects per
# second: 5.5e7; random draws, which a faster core speeds up less: 1.8
# times), the Rademacher signs (3.6e8), what each kernel adds per resample
# (seconds: 0.1e-6), the kernel's distances and exponentials (multiply-adds
# per second: 7.6e9), the features' products (1.4e10 to 2.1e10).
RESAMPLE_RATE = 4e10
DRAW_RATE = 1e8
SIGN_RATE = 1e9
RESAMPLE_COST = 0.04e-6
KERNEL_RATE = 2e10
FEATURE_RATE = 4e10


def budget_message(iv, need, held, remedy):
    """What a test that cannot run within the working memory says: `held`,
    what it holds at the least; `remedy`, what else the user can do (of
    the `Checked` call: its sizes n and N, method and budget)."""
    return (
        f"mmd_test needs about {need / 2**30:.3g} GiB of working memory for "
        f"X and Y of n={iv.n} and m={iv.N - iv.n} objects with "
        f"method={iv.method!r} ({held}), more than the budget of "
        f"{iv.budget / 2**20:.3g} MiB: give a larger one (working_memory=..., "
        f"in MiB, or kernelmaps.set_config(working_memory=...)), {remedy}"
    )
