"""Benchmarks for the kernel two-sample test `kernelmaps.mmd_test`.

What is measured
----------------
`TwoSample` times (and measures the peak memory of) ``mmd_test`` for each
method at a realistic size, 1 and 2 worker threads, on two samples of
standard-normal points (the second shifted by 0.1 along the first axis),
rbf kernel with gamma the median heuristic (``1 / median`` of the squared
distances between the first 1000 pooled points), given to every
implementation:

* "permutation" and "wild_bootstrap": n = m = 1000, d = 10, 1000 resamples;
* "aggregated" (MMDAgg): n = m = 1000, d = 10, its 20 default kernels
  (Laplace and Gaussian, 10 bandwidths each) and resamples (2000, 2000);
* "linear": n = m = 10^5, d = 10, its default 10 random Fourier features.

Beside it, at ``workers=1`` only (they take no thread count, or one of
processes), the peers:

* ``time_numpy`` / ``peakmem_numpy`` (permutation): the plain NumPy test of
  `benchmarks/peers.py` (``numpy_mmd_permutation_test``): the pooled kernel
  matrix once, then a Python loop over the permutations;
* ``time_hyppo`` (permutation): hyppo's ``MMD().test(X, Y, reps=1000,
  workers=1, auto=False)`` (hyppo 0.5.2; ``auto=False``, or it replaces the
  permutations by a chi-squared approximation above 20 points), where
  hyppo is installed (``pip install hyppo``), else skipped;
* ``time_hyppo`` (linear): hyppo's ``MeanEmbeddingTest(num_randfreq=10)``,
  the linear-time test of Chwialkowski et al. 2015 on 10 random locations
  (its own fixed kernel scale), n = m only.

`TwoSampleSmall` does the same at n = m = 50, d = 5 (1000 resamples;
MMDAgg with its defaults), the fixed costs of a test on a small sample.
The ``peakmem_*`` methods give the peak resident memory of the process, the
input data included. `TwoSample` calls each function once (``number =
repeat = rounds = 1``, no warmup): hyppo takes minutes there.

Running
-------
From the ``benchmarks`` directory (that of asv.conf.json), against the
installed kernelmaps::

    asv run --python=same --bench "two_sample" \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.two_sample  # the ratios to the peers

(hyppo's permutation test takes 5 to 7 minutes at the realistic size on
one core of the reference machine; the whole file about 10 minutes.)
``two_sample_speed.py`` beside this directory gives the issue's speed
figures (hyppo with 1 and 2 workers, MMDAgg at n = m = 5000, d = 100)
without asv.
"""

import importlib.util

import numpy as np
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params
from scipy.spatial.distance import pdist

from kernelmaps import mmd_test

from .common import RunOnce, machine, stored_times
from .peers import numpy_mmd_permutation_test

# hyppo, a peer where installed; imported by its benchmarks only (with numba
# it adds some 100 MB to the process, which the peakmem_* methods would count).
HAVE_HYPPO = importlib.util.find_spec("hyppo") is not None

METHODS = ("permutation", "wild_bootstrap", "aggregated", "linear")
WORKERS = (1, 2)
RESAMPLES = 1000
# (n = m, d) of each method at the realistic size.
SIZES = {"permutation": (1000, 10), "wild_bootstrap": (1000, 10),
         "aggregated": (1000, 10), "linear": (100_000, 10)}
SMALL = dict.fromkeys(METHODS, (50, 5))

# The NumPy peer: the permutation test at workers=1; hyppo also beside the
# linear test.
SKIP_NUMPY = [(meth, w) for meth in METHODS for w in WORKERS
              if (meth, w) != ("permutation", 1)]
SKIP_HYPPO = [(meth, w) for meth in METHODS for w in WORKERS
              if w != 1 or meth not in ("permutation", "linear")]


def two_samples(n, d, seed=0):
    """X and Y, ``(n, d)`` standard normal, Y shifted by 0.1 along the
    first axis; and the median-heuristic gamma."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = rng.standard_normal((n, d))
    Y[:, 0] += 0.1
    pooled = np.concatenate([X[:500], Y[:500]])
    return X, Y, 1.0 / np.median(pdist(pooled, "sqeuclidean"))


def run_mmd_test(X, Y, gamma, method, workers):
    """`mmd_test` as benchmarked: `RESAMPLES` resamples for the single-kernel
    resampling tests, the defaults of the others (MMDAgg its own
    bandwidths)."""
    if method == "aggregated":
        return mmd_test(X, Y, method=method, rng=0, workers=workers)
    resamples = None if method == "linear" else RESAMPLES
    return mmd_test(X, Y, gamma=gamma, method=method, n_resamples=resamples,
                    rng=0, workers=workers)


def run_hyppo(X, Y, gamma, method):
    """hyppo's permutation test of MMD (with `RESAMPLES`), or its linear-time
    mean embedding test."""
    if not HAVE_HYPPO:
        raise SkipNotImplemented("hyppo is not installed")
    from hyppo.ksample import MMD, MeanEmbeddingTest

    if method == "linear":
        return MeanEmbeddingTest(num_randfreq=10).test(X, Y, random_state=0)
    return MMD(gamma=gamma).test(X, Y, reps=RESAMPLES, workers=1,
                                 auto=False, random_state=0)


class _TwoSample:
    params = (METHODS, WORKERS)
    param_names = ("method", "workers")
    sizes = None

    def setup(self, method, workers):
        n, d = self.sizes[method]
        self.X, self.Y, self.gamma = two_samples(n, d)

    def time_mmd_test(self, method, workers):
        run_mmd_test(self.X, self.Y, self.gamma, method, workers)

    def peakmem_mmd_test(self, method, workers):
        run_mmd_test(self.X, self.Y, self.gamma, method, workers)

    @skip_for_params(SKIP_NUMPY)
    def time_numpy(self, method, workers):
        numpy_mmd_permutation_test(self.X, self.Y, self.gamma, RESAMPLES, 0)

    @skip_for_params(SKIP_NUMPY)
    def peakmem_numpy(self, method, workers):
        numpy_mmd_permutation_test(self.X, self.Y, self.gamma, RESAMPLES, 0)

    @skip_for_params(SKIP_HYPPO)
    def time_hyppo(self, method, workers):
        run_hyppo(self.X, self.Y, self.gamma, method)


class TwoSample(RunOnce, _TwoSample):
    """The realistic sizes (`SIZES`), each function run once."""

    sizes = SIZES


class TwoSampleSmall(_TwoSample):
    """n = m = 50, d = 5: the fixed costs."""

    sizes = SMALL


# Ratios to the peers, read from the stored asv results.


def print_ratios(results_dir=".asv/results"):
    """Print every stored ``mmd_test`` time and peak memory, and its
    ratios to the peers' at ``workers=1`` (peer time / kernelmaps time:
    how many times faster kernelmaps is). Run ``python -m
    benchmarks.two_sample`` from the directory of asv.conf.json after
    ``asv run``."""
    print(f"# {machine()}")
    for label, results in stored_times(results_dir):
        print(label)
        for cls in ("TwoSampleSmall", "TwoSample"):
            prefix = f"two_sample.{cls}."
            ours = results.get(prefix + "time_mmd_test", {})
            memory = results.get(prefix + "peakmem_mmd_test", {})
            for combo in sorted(ours.keys() | memory.keys()):
                seconds = ours.get(combo, np.nan)
                line = (f"  {cls:15} {' '.join(combo):16} {seconds:9.4f} s "
                        f"{memory.get(combo, np.nan) / 2**20:7.0f} MiB")
                for peer in ("numpy", "hyppo"):
                    base = results.get(prefix + f"time_{peer}", {}).get(
                        (combo[0], "1"))
                    if base is not None:
                        line += f"  {peer} {base:9.4f} s = {base / seconds:7.1f}x"
                print(line)


if __name__ == "__main__":
    import sys

    print_ratios(*sys.argv[1:])
