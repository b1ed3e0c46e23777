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
* "linear": n = m = 10^5, d = 10, its default random Fourier features
  (1000 at this size; 10 before issue 39).

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
`TwoSampleObjects` times ``mmd_test`` on 200 against 250 objects of every
kind it takes (sets by the mean map, MMD and Renyi kernels, histograms by
chi2 and JS, Gaussians by the expected kernel, a precomputed matrix, a
callable kernel on strings), by the permutation (1000 resamples),
aggregated and fused tests (their defaults), beside the NumPy permutation
test of the pooled matrix that the unit's public function computes.
`AggregatedUnequal` times the aggregated test of 1500 against 1550 points
beside 1525 against 1525. `OnBlocks` times the test with its kernel
matrices whole beside streamed in blocks (beyond the working memory).
`BigSamples` times the tests for big samples at n = m = 10^5, d = 16: the
permutation test on 1000 random Fourier features (999 resamples), the
linear test (its default features) and the cross test (the exact kernel,
at n = m = 2 10^4).
`LinearTail` times the null tail of the linear test (issue 50: Imhof's
inversion at the saddle point, ``P(sum_j w_j chi2_1 > q)``) for 100, 1000
and 3000 weights (Exp(1), and one weight far above the rest), at p-values
about 0.05 and far in the tail (1e-10 to 1e-67), beside SciPy's chi-square
of the same mean (``scipy.stats.chi2.sf``, the equal-weights case) and the
four-cumulant approximation (the published one, which the package's
faulty copy of it was): once per test, it must stay a few milliseconds.
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
``studies/two_sample/speed.py`` gives the issue's speed
figures (hyppo with 1 and 2 workers, MMDAgg at n = m = 5000, d = 100)
without asv.
"""

import importlib.util
import inspect

import numpy as np
import scipy.stats
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params
from scipy.spatial.distance import pdist

from kernelmaps import mmd_test

from .common import RunOnce, machine, stored_times
from .peers import (
    numpy_mmd_permutation_test,
    numpy_precomputed_permutation_test,
)

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


# Samples of objects: sets, histograms, Gaussians, a precomputed matrix, a
# callable.

OBJECTS = ("sets mean_map", "sets mmd", "sets renyi", "histograms chi2",
           "histograms js", "gaussians expected", "precomputed", "callable")
OBJECT_METHODS = ("permutation", "aggregated", "fuse")
# Objects in the two samples (unequal sizes: the aggregated test's swaps).
OBJECT_SIZES = (200, 250)


def two_object_samples(kind, seed=0):
    """The samples of `kind`: sets of 30 to 60 points in 2-D (the second
    sample's spread 1.1 times larger); bag-of-words histograms of 300 words
    (`common.bag_of_words`, the second from other words' frequencies);
    Gaussians in 5-D (means shifted by 0.2); for "precomputed" the pooled
    mean map matrix of the sets and the labels; for "callable" lists of
    strings and a kernel on their letter counts."""
    from .common import bag_of_words

    rng = np.random.default_rng(seed)
    n, m = OBJECT_SIZES
    family = kind.split()[0]
    if family in ("sets", "precomputed"):
        X = [rng.normal(size=(int(rng.integers(30, 61)), 2)) for _ in range(n)]
        Y = [1.1 * rng.normal(size=(int(rng.integers(30, 61)), 2))
             for _ in range(m)]
        if family == "precomputed":
            from kernelmaps import sum_match_kernel

            return (sum_match_kernel(X + Y, gamma=0.25),
                    np.repeat([0, 1], [n, m]))
        return X, Y
    if family == "histograms":
        H = bag_of_words(n + m, seed=seed)
        return H[:n], H[n:, ::-1].copy()
    if family == "gaussians":
        return ((rng.normal(size=(n, 5)), np.full(n, 0.5)),
                (rng.normal(size=(m, 5)) + 0.2, np.full(m, 0.5)))
    words = ["".join(rng.choice(list("abcd"), size=8)) for _ in range(n)]
    other = ["".join(rng.choice(list("abcdd"), size=8)) for _ in range(m)]
    return words, other


def letter_kernel(A, B):
    """A kernel on strings: the Gaussian kernel of their letter counts."""
    def counts(words):
        return np.array([[w.count(c) for c in "abcd"] for w in words], float)

    a, b = counts(A), counts(B)
    return np.exp(-((a[:, None] - b[None]) ** 2).sum(-1) / 8)


def run_object_test(kind, X, Y, method, workers):
    kernel = {"precomputed": "precomputed", "callable": letter_kernel}.get(
        kind, kind.split()[-1])
    resamples = 1000 if method == "permutation" else None
    return mmd_test(X, Y, kernel=kernel, method=method, n_resamples=resamples,
                    rng=0, workers=workers)


def numpy_object_test(kind, X, Y):
    """The peer: the pooled kernel matrix by the unit's public function,
    then the plain NumPy permutation test on it (1000 permutations)."""
    import kernelmaps as km

    if kind == "precomputed":
        K, labels = X, Y
        return numpy_precomputed_permutation_test(K, int((labels == 0).sum()),
                                                  RESAMPLES, 0)
    if kind == "callable":
        Z = X + Y
        K = letter_kernel(Z, Z)
    elif kind.startswith("sets"):
        Z = X + Y
        K = {"mean_map": km.sum_match_kernel, "mmd": km.mmd_kernel,
             "renyi": lambda S: km.divergence_kernel(km.renyi_divergence(S))}[
                 kind.split()[-1]](Z)
    elif kind.startswith("histograms"):
        Z = np.concatenate([X, Y])
        K = {"chi2": km.additive_chi2_kernel, "js": km.js_kernel}[
            kind.split()[-1]](Z)
    else:
        K = km.gaussian_expected_kernel(np.concatenate([X[0], Y[0]]),
                                        np.concatenate([X[1], Y[1]]))
    return numpy_precomputed_permutation_test(K, OBJECT_SIZES[0], RESAMPLES, 0)


class TwoSampleObjects:
    """mmd_test on 200 against 250 objects of each kind, by each of the
    methods over kernels and scales (the permutation test at 1000
    resamples), 1 and 2 workers; beside it, at workers=1, the NumPy
    permutation test of the pooled matrix (computed by the unit's public
    function, and timed with it)."""

    params = (OBJECTS, OBJECT_METHODS, WORKERS)
    param_names = ("objects", "method", "workers")
    timeout = 300

    def setup(self, kind, method, workers):
        if kind in ("precomputed", "callable") and method != "permutation":
            raise SkipNotImplemented("one kernel: the permutation test only")
        self.X, self.Y = two_object_samples(kind)

    def time_mmd_test(self, kind, method, workers):
        run_object_test(kind, self.X, self.Y, method, workers)

    def peakmem_mmd_test(self, kind, method, workers):
        run_object_test(kind, self.X, self.Y, method, workers)

    def time_numpy(self, kind, method, workers):
        if method != "permutation" or workers != 1:
            raise SkipNotImplemented("the peer: permutation, workers=1")
        numpy_object_test(kind, self.X, self.Y)


class AggregatedUnequal(RunOnce):
    """The aggregated test (its defaults) of 1500 against 1550 points in
    3-D (swaps of paired points) beside 1525 against 1525 (the wild
    bootstrap), 1 and 2 workers: unequal sizes should cost what equal ones
    do."""

    params = (("1525x1525", "1500x1550"), WORKERS)
    param_names = ("sizes", "workers")

    def setup(self, sizes, workers):
        n, m = (int(v) for v in sizes.split("x"))
        rng = np.random.default_rng(0)
        self.X = rng.normal(size=(n, 3))
        self.Y = rng.normal(size=(m, 3))
        self.Y[:, 0] += 0.05

    def time_mmd_test(self, sizes, workers):
        mmd_test(self.X, self.Y, method="aggregated", rng=0, workers=workers)

    def peakmem_mmd_test(self, sizes, workers):
        mmd_test(self.X, self.Y, method="aggregated", rng=0, workers=workers)


class OnBlocks(RunOnce):
    """``mmd_test`` (permutation, 999 resamples; the aggregated test, its
    defaults) of n = m = 3000 points in d = 64 (the second sample shifted by
    0.1), its kernel matrices whole (a budget of 4096 MiB) beside streamed
    in blocks (``working_memory=64``): the time and the peak memory of the
    two paths of the same test (the same p-value), 1 and 2 workers.
    ``studies/large_samples/study.py`` runs n = m = 50,000 against the GEMM
    floor."""

    params = (("permutation", "aggregated"), ("memory", "blocks"), WORKERS)
    param_names = ("method", "path", "workers")

    def setup(self, method, path, workers):
        if "working_memory" not in inspect.signature(mmd_test).parameters:
            raise SkipNotImplemented("mmd_test before its working memory")
        rng = np.random.default_rng(0)
        self.X = rng.normal(size=(3000, 64))
        self.Y = rng.normal(size=(3000, 64))
        self.Y[:, 0] += 0.1
        self.budget = 4096 if path == "memory" else 64

    def time_mmd_test(self, method, path, workers):
        mmd_test(self.X, self.Y, method=method, rng=0, workers=workers,
                 working_memory=self.budget)

    def peakmem_mmd_test(self, method, path, workers):
        mmd_test(self.X, self.Y, method=method, rng=0, workers=workers,
                 working_memory=self.budget)


class BigSamples(RunOnce):
    """The tests for big samples (issue 39) on n = m = 10^5 points in d =
    16, the second sample shifted by 0.02: the permutation test on 1000
    random Fourier features (999 resamples, one pass over the samples), the
    linear test (its default 1000 features, an asymptotic null), and the
    cross test of the exact kernel at n = m = 2 10^4 (a quarter of the
    kernel matrix, one pass). Time and peak memory, 1 and 2 workers."""

    params = (("features", "linear", "cross"), WORKERS)
    param_names = ("test", "workers")

    def setup(self, test, workers):
        if test == "cross" and "cross" not in (mmd_test.__doc__ or ""):
            raise SkipNotImplemented("mmd_test before its cross test")
        n = 20000 if test == "cross" else 100000
        rng = np.random.default_rng(0)
        self.X = rng.normal(size=(n, 16))
        self.Y = rng.normal(size=(n, 16))
        self.Y[:, 0] += 0.02
        self.kwargs = {"features": {"feature_map": 1000},
                       "linear": {"method": "linear"},
                       "cross": {"method": "cross"}}[test]

    def time_mmd_test(self, test, workers):
        mmd_test(self.X, self.Y, rng=0, workers=workers, **self.kwargs)

    def peakmem_mmd_test(self, test, workers):
        mmd_test(self.X, self.Y, rng=0, workers=workers, **self.kwargs)


class ManyKernels(RunOnce):
    """The tests over 20 kernels (Gauss and Laplace at 10 bandwidths) at n
    = m = 2000, d = 64, the second sample shifted by 0.1: the aggregated
    test (MMDAgg, 2000 + 2000 resamples) with its default float32 products
    and with float64 ones, its incomplete U-statistic (MMDAggInc, 200
    diagonals: linear in n), and MMD-FUSE (2000 permutations). Time and
    peak memory, 1 and 2 workers."""

    params = (("aggregated", "aggregated-float64", "aggregated-incomplete",
               "fuse"), WORKERS)
    param_names = ("test", "workers")

    def setup(self, test, workers):
        if test == "aggregated-incomplete" and (
                "incomplete" not in (mmd_test.__doc__ or "")):
            raise SkipNotImplemented("mmd_test before MMDAggInc")
        self.X, self.Y, _ = two_samples(2000, 64)
        self.kwargs = {
            "aggregated": {"method": "aggregated"},
            "aggregated-float64": {"method": "aggregated", "dtype": np.float64},
            "aggregated-incomplete": {"method": "aggregated", "incomplete": 200},
            "fuse": {"method": "fuse"}}[test]

    def time_mmd_test(self, test, workers):
        mmd_test(self.X, self.Y, rng=0, workers=workers, **self.kwargs)

    def peakmem_mmd_test(self, test, workers):
        mmd_test(self.X, self.Y, rng=0, workers=workers, **self.kwargs)


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


class LinearTail:
    """The linear test's null tail for n weights (``profile``: "exp", Exp(1)
    weights; "dominant", one weight 100 times the others), at q giving a
    p-value about 0.05 (``far=False``) or far in the tail (1e-10 to 1e-67:
    3 to 89 ms on Zen 5), beside the chi-square of SciPy and the
    four-cumulant approximation (Liu, Tang and Zhang)."""

    params = ((100, 1000, 3000), ("exp", "dominant"), (False, True))
    param_names = ("n_weights", "profile", "far")

    def setup(self, n_weights, profile, far):
        try:
            from kernelmaps._two_sample.chi2_tail import weighted_chi2_sf
        except ImportError:  # (before issue 51)
            from kernelmaps._composite._weighted_chi2 import weighted_chi2_sf

        self.tail = weighted_chi2_sf
        rng = np.random.default_rng(0)
        w = rng.exponential(size=n_weights)
        if profile == "dominant":
            w[:] = 0.01
            w[0] = 1.0
        self.w = w
        mean, sd = w.sum(), np.sqrt(2 * (w**2).sum())
        self.q = mean + (9.0 if far else 1.7) * sd * (3.0 if far else 1.0)

    def time_imhof(self, n_weights, profile, far):
        self.tail(self.q, self.w)

    def time_scipy_chi2(self, n_weights, profile, far):
        scipy.stats.chi2.sf(self.q / self.w.mean(), len(self.w))

    def time_four_cumulants(self, n_weights, profile, far):
        c1, c2, c3 = ((self.w**k).sum() for k in (1, 2, 3))
        s1 = c3 / c2**1.5
        dof = 1.0 / s1**2
        t = (self.q - c1) / np.sqrt(2 * c2) * np.sqrt(2 * dof) + dof
        scipy.stats.chi2.sf(t, dof)
