"""Benchmarks for the exact kernels between sets of vectors.

What is measured
----------------
`SumMatchKernel` times ``kernelmaps.sum_match_kernel(sets, gamma=1/d)``
(rbf, normalised, ``Y=None``: the symmetric ``(n_sets, n_sets)`` matrix)
on ``n_sets`` sets of ``n_points`` standard-normal points in ``d``
dimensions, for two shapes ("200x300x30": few large sets, "1000x50x30":
many small ones), float64 and float32 input, and 1 and 2 worker threads.
Beside it, on the same data and gamma, it times the plain NumPy baselines
of `benchmarks/peers.py`, what a user would write without kernelmaps:

* ``blocked_sum_match_kernel``: sets stacked into blocks, one matrix product
  per unordered pair of blocks, exp, and sums per pair of sets;
* ``pairwise_sum_match_kernel``: one ``scipy.spatial.distance.cdist`` per
  unordered pair of sets.

The baselines take no ``workers`` argument (their matrix products use
whatever threads the BLAS is allowed), so they are run for ``workers=1``
only and skipped for the other values. The ``peakmem_*`` methods give the
peak resident memory of the process, the input data included. `MMDKernel`
does the same for ``kernelmaps.mmd_kernel``, against
``exp(-gamma2 * MMD^2)`` computed from the blocked baseline, and for
``kernelmaps.mmd`` (``time_mmd``, ``peakmem_mmd``; "200x300x30" float64
only, its other cases running the code of ``mmd_kernel``) against the
same baseline (the MMD matrix costs it the same: a square root in place of
the exp).
`MedianHeuristic` times ``median_heuristic`` (1000 or 5000 sampled points
of the "200x300x30" sets) beside the SciPy way (the same sample,
``pdist``, ``numpy.median``). `SumMatchKernelSmall` is a fast smoke
signal (100 sets of 20 points in 5 dimensions) over the four point
kernels; `SumMatchKernelShapes` times the rbf kernel (default ``workers``)
and the blocked baseline from a tiny call (10 sets of 10 points in 3-D)
through many small sets to d = 256; and `BagsFromList` times packing a
list of arrays into `kernelmaps.Bags` (which every call on a list does)
beside ``numpy.concatenate`` and the offsets.

The data are drawn once per parameter combination in ``setup`` with
``numpy.random.default_rng(0)``; float32 data are the float64 data rounded.
The large classes call each function once (``number = repeat = rounds = 1``,
no warmup): the baselines take tens of seconds there.

Target
------
On the 2-core reference machine, ``sum_match_kernel`` with ``workers=2``
should take at most 0.35x the time of the blocked symmetric NumPy baseline
(``SumMatchKernel.time_numpy_blocked``) for float64 input, and at most 0.2x
for float32 input, at each of the two sizes: the ratio of ``time_kernelmaps`` at
``workers=2`` to ``time_numpy_blocked`` for the same size and dtype.

Running
-------
From the ``benchmarks`` directory (that of asv.conf.json), against the
installed kernelmaps, storing the results under the current commit::

    asv run --python=same --quick --bench SumMatchKernelSmall \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    asv run --python=same --bench "SumMatchKernel\\.|MMDKernel\\." \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.set_kernels  # the ratios and the targets

(the large classes take some 20 to 40 minutes on 2 cores, mostly the baselines).
"""

import numpy as np
from asv_runner.benchmarks.mark import skip_for_params
from scipy.spatial.distance import pdist

from kernelmaps import Bags, median_heuristic, mmd, mmd_kernel, sum_match_kernel

from .common import RunOnce, make_sets, stored_times
from .peers import blocked_sum_match_kernel, pairwise_sum_match_kernel

SIZES = ("200x300x30", "1000x50x30")
DTYPES = ("float64", "float32")
WORKERS = (1, 2)
KERNELS = ("rbf", "laplacian", "linear", "polynomial")
# SumMatchKernelShapes: from a tiny call to large d.
SHAPES = ("10x10x3", "20x20x2", "100x200x30", "1000x30x10", "60x150x128",
          "200x50x256")

# The NumPy baselines do not depend on `workers`: time them once, at workers=1.
SKIP_BASELINE = [
    (size, dtype, workers)
    for size in SIZES
    for dtype in DTYPES
    for workers in WORKERS
    if workers != 1
]
# kernelmaps.mmd: at the first size in float64 only (its other cases run the
# code of mmd_kernel, timed at every size and dtype).
SKIP_MMD = [
    (size, dtype, workers)
    for size in SIZES
    for dtype in DTYPES
    for workers in WORKERS
    if (size, dtype) != (SIZES[0], "float64")
]
# In the small class, the baselines (rbf only) at kernel="rbf", workers=1 only.
SKIP_SMALL_BASELINE = [
    (kernel, workers)
    for kernel in KERNELS
    for workers in WORKERS
    if (kernel, workers) != ("rbf", 1)
]


def numpy_mmd_kernel(sets, gamma, gamma2):
    """``exp(-gamma2 * MMD^2)`` from the blocked NumPy sum-match kernel."""
    K = blocked_sum_match_kernel(sets, gamma)
    diag = np.diag(K)
    D2 = diag[:, None] + diag[None, :] - 2 * K
    np.maximum(D2, 0, out=D2)
    return np.exp(-gamma2 * D2)


def numpy_median_heuristic(sets, sample, seed=0):
    """``1 / median`` of the squared distances between `sample` points drawn
    without replacement from the pooled points: the SciPy way."""
    points = np.concatenate(sets)
    rng = np.random.default_rng(seed)
    points = points[np.sort(rng.choice(len(points), size=sample, replace=False))]
    return 1.0 / np.median(pdist(points.astype(np.float64), "sqeuclidean"))


class _Large(RunOnce):
    """The realistic sizes, each function run once."""

    params = (SIZES, DTYPES, WORKERS)
    param_names = ("size", "dtype", "workers")

    def setup(self, size, dtype, workers):
        self.sets, d = make_sets(size, dtype)
        self.gamma = 1.0 / d
        self.gamma2 = 1.0


class SumMatchKernel(_Large):
    """`sum_match_kernel` (rbf) against the NumPy baselines."""

    def time_kernelmaps(self, size, dtype, workers):
        sum_match_kernel(self.sets, gamma=self.gamma, workers=workers)

    def peakmem_kernelmaps(self, size, dtype, workers):
        sum_match_kernel(self.sets, gamma=self.gamma, workers=workers)

    @skip_for_params(SKIP_BASELINE)
    def time_numpy_blocked(self, size, dtype, workers):
        blocked_sum_match_kernel(self.sets, self.gamma)

    @skip_for_params(SKIP_BASELINE)
    def peakmem_numpy_blocked(self, size, dtype, workers):
        blocked_sum_match_kernel(self.sets, self.gamma)

    @skip_for_params(SKIP_BASELINE)
    def time_numpy_pairwise(self, size, dtype, workers):
        pairwise_sum_match_kernel(self.sets, self.gamma)


class MMDKernel(_Large):
    """`mmd_kernel` (rbf point kernel) against ``exp(-gamma2 * MMD^2)`` from
    the blocked NumPy baseline."""

    def time_kernelmaps(self, size, dtype, workers):
        mmd_kernel(self.sets, gamma=self.gamma, gamma2=self.gamma2, workers=workers)

    def peakmem_kernelmaps(self, size, dtype, workers):
        mmd_kernel(self.sets, gamma=self.gamma, gamma2=self.gamma2, workers=workers)

    @skip_for_params(SKIP_BASELINE)
    def time_numpy_blocked(self, size, dtype, workers):
        numpy_mmd_kernel(self.sets, self.gamma, self.gamma2)

    @skip_for_params(SKIP_BASELINE)
    def peakmem_numpy_blocked(self, size, dtype, workers):
        numpy_mmd_kernel(self.sets, self.gamma, self.gamma2)

    @skip_for_params(SKIP_MMD)
    def time_mmd(self, size, dtype, workers):
        mmd(self.sets, gamma=self.gamma, workers=workers)

    @skip_for_params(SKIP_MMD)
    def peakmem_mmd(self, size, dtype, workers):
        mmd(self.sets, gamma=self.gamma, workers=workers)


class MedianHeuristic:
    """`median_heuristic` on the pooled points of 200 sets of 300 points in
    30 dimensions, beside the SciPy way on the same sample."""

    params = ((1000, 5000),)
    param_names = ("sample",)

    def setup(self, sample):
        self.sets, _ = make_sets(SIZES[0], "float64")

    def time_kernelmaps(self, sample):
        median_heuristic(self.sets, sample=sample, rng=0)

    def peakmem_kernelmaps(self, sample):
        median_heuristic(self.sets, sample=sample, rng=0)

    def time_scipy_pdist(self, sample):
        numpy_median_heuristic(self.sets, sample)

    def peakmem_scipy_pdist(self, sample):
        numpy_median_heuristic(self.sets, sample)


class SumMatchKernelSmall:
    """Small and fast: 100 sets of 20 points in 5 dimensions, every point
    kernel; the NumPy baselines for rbf only."""

    params = (KERNELS, WORKERS)
    param_names = ("kernel", "workers")

    def setup(self, kernel, workers):
        self.sets, d = make_sets("100x20x5", "float64")
        self.gamma = 1.0 / d

    def time_sum_match_kernel(self, kernel, workers):
        sum_match_kernel(self.sets, kernel=kernel, gamma=self.gamma, workers=workers)

    def time_mmd(self, kernel, workers):
        mmd(self.sets, kernel=kernel, gamma=self.gamma, workers=workers)

    def time_mmd_kernel(self, kernel, workers):
        mmd_kernel(self.sets, kernel=kernel, gamma=self.gamma, workers=workers)

    @skip_for_params(SKIP_SMALL_BASELINE)
    def time_numpy_blocked(self, kernel, workers):
        blocked_sum_match_kernel(self.sets, self.gamma)

    @skip_for_params(SKIP_SMALL_BASELINE)
    def time_numpy_pairwise(self, kernel, workers):
        pairwise_sum_match_kernel(self.sets, self.gamma)


class SumMatchKernelShapes:
    """The shapes users meet beyond the tuned one, default ``workers``: a
    tiny call (the Python path: validation, packing, dispatch), small sets
    in 2-D, many small sets, and large d (where a BLAS GEMM does the dot
    products of the NumPy baseline), beside the blocked NumPy baseline."""

    params = (SHAPES, DTYPES)
    param_names = ("size", "dtype")

    def setup(self, size, dtype):
        self.sets, d = make_sets(size, dtype)
        self.gamma = 1.0 / d

    def time_kernelmaps(self, size, dtype):
        sum_match_kernel(self.sets, gamma=self.gamma)

    def time_numpy_blocked(self, size, dtype):
        blocked_sum_match_kernel(self.sets, self.gamma)


class BagsFromList:
    """Packing a list of arrays into a `Bags` (a copy of all points)."""

    params = (SIZES, DTYPES)
    param_names = ("size", "dtype")

    def setup(self, size, dtype):
        self.sets, _ = make_sets(size, dtype)

    def time_from_list(self, size, dtype):
        Bags.from_list(self.sets)

    def peakmem_from_list(self, size, dtype):
        Bags.from_list(self.sets)

    def time_numpy_concatenate(self, size, dtype):
        np.concatenate(self.sets)
        np.cumsum([0] + [len(s) for s in self.sets])


# Ratios to the baseline, read from the stored asv results.

TARGETS = {"float64": 0.35, "float32": 0.2}  # at workers=2, against numpy_blocked
RATIOS = [
    ("SumMatchKernel", "time_kernelmaps"),
    ("MMDKernel", "time_kernelmaps"),
    ("MMDKernel", "time_mmd"),
    ("SumMatchKernelSmall", "time_sum_match_kernel"),
]


def print_ratios(results_dir=".asv/results"):
    """Print ``time_kernelmaps / time_numpy_blocked`` of every stored asv
    result (baseline at workers=1, same other parameters), and whether the
    target holds. Run ``python -m benchmarks.set_kernels`` from the directory
    of asv.conf.json after ``asv run``."""
    for label, times in stored_times(results_dir):
        print(label)
        for cls, method in RATIOS:
            ours = times.get(f"set_kernels.{cls}.{method}", {})
            base = times.get(f"set_kernels.{cls}.time_numpy_blocked", {})
            for combo, t in ours.items():
                baseline = [b for c, b in base.items() if c[:-1] == combo[:-1]]
                if not baseline:
                    continue
                ratio = t / baseline[0]
                line = (
                    f"  {cls + '.' + method[5:]:30} {' '.join(combo):28} "
                    f"{t:9.3f} s / {baseline[0]:9.3f} s = {ratio:6.3f}"
                )
                target = TARGETS.get(combo[1])
                if cls == "SumMatchKernel" and combo[-1] == "2" and target:
                    line += f"  target <= {target}: "
                    line += "met" if ratio <= target else "MISSED"
                print(line)


if __name__ == "__main__":
    import sys

    print_ratios(*sys.argv[1:])
