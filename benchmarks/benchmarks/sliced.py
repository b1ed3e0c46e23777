"""Benchmarks for the sliced-Wasserstein distances, kernel and features.

What is measured
----------------
`SlicedWasserstein` times, on ``n_sets`` sets of 50 to 150 standard-normal
points (sizes uniform) in d dimensions, float64, with L = 100 directions,
for 1 and 2 worker threads and three sizes "sets x mean size x d"
("1000x100x16": the issue's, 1,000 sets; "100x100x16": a small one;
"200x100x2048": high-dimensional points, where the projections, one BLAS
product, weigh more):

* ``time_exact``: ``sliced_wasserstein(sets)``, the symmetric matrix
  (499,500 pairs at the large size);
* ``time_kernel``: ``sliced_wasserstein_kernel(sets)`` (gamma by the median
  rule: the same matrix, then the exp);
* ``time_features``: ``SlicedWassersteinFeatures(100, 50).fit_transform``
  (5,000 features per set);
* ``time_features_gram``: the squared distances of those features
  (``|a|^2 + |b|^2 - 2 a.b``, one BLAS product), the features computed in
  ``setup``: with ``time_features``, what the map costs in place of
  ``time_exact``;
* ``time_pot_subset``: POT's ``ot.sliced_wasserstein_distance`` pair by pair
  with the same directions on a fixed subset of `POT_PAIRS` pairs (skipped
  without POT, which is not a dependency); ``track_pot_seconds``
  extrapolates it to every pair of the size (the subset's time times the
  number of pairs over `POT_PAIRS`): POT on all 499,500 pairs would take
  hours.

`WeightedSlicedWasserstein` times ``time_exact`` and POT on the same sets
with point weights uniform in [0.5, 2] (their merges go direction by
direction: several times the unweighted cost). `SlicedWassersteinAnyP`
times the matrix at p = 0.5, 1.5 and 8 beside p = 2, weighted or not (200
sets, 2 threads): the cost of a p other than 1 and 2.

``peakmem_*`` give the peak resident memory of the process, the input
included. POT runs on the BLAS threads it finds: it is timed at
``workers=1`` only (its BLAS limited to one thread).

Targets
-------
On the 2-core reference machine, with ``workers=2`` at the large size:
``time_exact`` at least 100 times faster than ``track_pot_seconds``, and
``time_features_gram`` at least 10 times faster than ``time_exact``.

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench SlicedWasserstein \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.sliced  # one quick run of each, and the ratios
"""

import time

import numpy as np
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params

from kernelmaps import (
    Bags,
    SlicedWassersteinFeatures,
    sliced_wasserstein,
    sliced_wasserstein_kernel,
)

from .common import BlasThreads, RunOnce

try:  # POT, a peer where installed
    import ot
except ImportError:
    ot = None

SIZES = ("1000x100x16", "100x100x16", "200x100x2048")
WEIGHTED_SIZES = ("300x100x16",)
WORKERS = (1, 2)
N_PROJECTIONS = 100
N_QUANTILES = 50
# Pairs on which POT is timed (then extrapolated to every pair).
POT_PAIRS = 200
SKIP_POT = [(size, workers) for size in SIZES for workers in WORKERS
            if workers != 1]


def make_clouds(size, seed=0):
    """``n`` sets of 50 to 150 standard-normal points in d dimensions for
    a size "n x mean x d" (float64), and L = 100 unit directions (L, d)."""
    n, _, d = (int(x) for x in size.split("x"))
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(int(m), d)) for m in rng.integers(50, 151, size=n)]
    directions = rng.normal(size=(N_PROJECTIONS, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return sets, directions


def pot_pairs(sets, directions, pairs, weights=None):
    """POT's distance for each pair (i, j) of `pairs` (with the sets'
    `weights`, normalised, where given)."""
    P = np.ascontiguousarray(directions.T)  # POT takes (d, L)
    if weights is None:
        return [ot.sliced_wasserstein_distance(sets[i], sets[j], projections=P)
                for i, j in pairs]
    w = [u / u.sum() for u in weights]
    return [ot.sliced_wasserstein_distance(sets[i], sets[j], w[i], w[j],
                                           projections=P)
            for i, j in pairs]


def random_pairs(n, seed=1):
    """`POT_PAIRS` random pairs of distinct sets among n."""
    rng = np.random.default_rng(seed)
    i = rng.integers(n, size=POT_PAIRS)
    j = (i + 1 + rng.integers(n - 1, size=POT_PAIRS)) % n
    return list(zip(i.tolist(), j.tolist(), strict=True))


def squared_distances(F):
    """``|F_i - F_j|^2`` for every pair of rows, by one BLAS product."""
    sq = np.einsum("ij,ij->i", F, F)
    D = F @ F.T
    D *= -2
    D += sq[:, None]
    D += sq[None, :]
    return np.maximum(D, 0, out=D)


class SlicedWasserstein(RunOnce, BlasThreads):
    """The exact matrix, the kernel and the features, beside POT."""

    params = (SIZES, WORKERS)
    param_names = ("size", "workers")

    def setup(self, size, workers):
        self.sets, self.directions = make_clouds(size)
        n = len(self.sets)
        self.pairs = random_pairs(n)
        self.n_pairs = n * (n - 1) // 2
        self.F = SlicedWassersteinFeatures(
            projections=self.directions, n_quantiles=N_QUANTILES).fit_transform(
            self.sets, workers=workers)
        self.setup_blas(workers)

    def time_exact(self, size, workers):
        sliced_wasserstein(self.sets, projections=self.directions,
                           workers=workers)

    def peakmem_exact(self, size, workers):
        sliced_wasserstein(self.sets, projections=self.directions,
                           workers=workers)

    def time_kernel(self, size, workers):
        sliced_wasserstein_kernel(self.sets, projections=self.directions,
                                  workers=workers)

    def time_features(self, size, workers):
        SlicedWassersteinFeatures(
            projections=self.directions, n_quantiles=N_QUANTILES).fit_transform(
            self.sets, workers=workers)

    def peakmem_features(self, size, workers):
        SlicedWassersteinFeatures(
            projections=self.directions, n_quantiles=N_QUANTILES).fit_transform(
            self.sets, workers=workers)

    def time_features_gram(self, size, workers):
        squared_distances(self.F)

    @skip_for_params(SKIP_POT)
    def time_pot_subset(self, size, workers):
        if ot is None:
            raise SkipNotImplemented("POT is not installed")
        pot_pairs(self.sets, self.directions, self.pairs)

    @skip_for_params(SKIP_POT)
    def track_pot_seconds(self, size, workers):
        """POT on every pair, extrapolated from `POT_PAIRS` of them."""
        if ot is None:
            raise SkipNotImplemented("POT is not installed")
        start = time.perf_counter()
        pot_pairs(self.sets, self.directions, self.pairs)
        return (time.perf_counter() - start) * self.n_pairs / POT_PAIRS

    track_pot_seconds.unit = "seconds"


class WeightedSlicedWasserstein(RunOnce, BlasThreads):
    """The exact matrix of weighted sets, beside POT with the same weights."""

    params = (WEIGHTED_SIZES, WORKERS)
    param_names = ("size", "workers")

    def setup(self, size, workers):
        self.sets, self.directions = make_clouds(size)
        rng = np.random.default_rng(2)
        self.weights = [rng.uniform(0.5, 2.0, size=len(s)) for s in self.sets]
        self.bags = Bags.from_list(self.sets, weights=self.weights)
        n = len(self.sets)
        self.pairs = random_pairs(n)
        self.n_pairs = n * (n - 1) // 2
        self.setup_blas(workers)

    def time_exact(self, size, workers):
        sliced_wasserstein(self.bags, projections=self.directions,
                           workers=workers)

    @skip_for_params([(size, 2) for size in WEIGHTED_SIZES])
    def track_pot_seconds(self, size, workers):
        """POT on every pair, extrapolated from `POT_PAIRS` of them."""
        if ot is None:
            raise SkipNotImplemented("POT is not installed")
        start = time.perf_counter()
        pot_pairs(self.sets, self.directions, self.pairs, self.weights)
        return (time.perf_counter() - start) * self.n_pairs / POT_PAIRS

    track_pot_seconds.unit = "seconds"


class SlicedWassersteinAnyP(RunOnce):
    """The exact matrix at p other than 1 and 2 (issue 50: each pair's
    differences over their largest, two passes over the merges; below p =
    1 an expm1/log1p form) beside p = 2, unweighted and weighted (weights
    uniform in [0.5, 2]), 200 sets, 2 threads: ``time_exact(p) /
    time_exact(2)`` is what any p costs."""

    params = ((0.5, 1.5, 2.0, 8.0), (False, True))
    param_names = ("p", "weighted")

    def setup(self, p, weighted):
        sets, self.directions = make_clouds("200x100x16")
        rng = np.random.default_rng(2)
        weights = [rng.uniform(0.5, 2.0, size=len(s)) for s in sets]
        self.bags = Bags.from_list(sets, weights=weights if weighted else None)

    def time_exact(self, p, weighted):
        sliced_wasserstein(self.bags, p=p, projections=self.directions,
                           workers=2)

    def peakmem_exact(self, p, weighted):
        sliced_wasserstein(self.bags, p=p, projections=self.directions,
                           workers=2)


def print_ratios(size=SIZES[0], workers=2):
    """One run of each method at `size` with `workers` threads (POT at
    one BLAS thread), and the ratios of the targets."""
    bench = SlicedWasserstein()
    bench.setup(size, int(workers))

    def seconds(method, *args):
        start = time.perf_counter()
        method(*args)
        return time.perf_counter() - start

    args = (size, int(workers))
    exact = seconds(bench.time_exact, *args)
    kernel = seconds(bench.time_kernel, *args)
    features = seconds(bench.time_features, *args)
    gram = seconds(bench.time_features_gram, *args)
    print(f"{size}, workers={workers}: exact {exact:.3g} s, kernel "
          f"{kernel:.3g} s, features {features:.3g} s, their Gram {gram:.3g} s")
    print(f"  exact / Gram of the features: {exact / gram:.3g} (target >= 10); "
          f"exact / (features + Gram): {exact / (features + gram):.3g}")
    if ot is not None:
        bench.teardown(*args)
        bench.setup_blas(1)
        pot = bench.track_pot_seconds(*args)
        print(f"  POT extrapolated from {POT_PAIRS} pairs: {pot:.4g} s; "
              f"POT / exact: {pot / exact:.3g} (target >= 100)")
    bench.teardown(*args)


if __name__ == "__main__":
    import sys

    print_ratios(*sys.argv[1:])
