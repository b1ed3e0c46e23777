"""Benchmarks for the random Fourier features of points and sets.

What is measured
----------------
`RDF` times ``RandomDistributionFeatures(t=1000, gamma=1/d).fit(sets).transform``
on ``n_sets`` sets of ``n_points`` standard-normal points in ``d``
dimensions ("200x300x30", and "1000x300x30" to show how the gap to the
exact kernel grows with the number of sets), float64 and float32, 1 and 2
worker threads; ``time_rdf_gram`` adds the Gram matrix ``F @ F.T`` (what
replaces the exact kernel), and ``time_rdf_weighted`` transforms the same
sets with point weights (uniform in [0.5, 2]: the weighted means; the
ratio to ``time_rdf`` is the cost of the weights). Beside it, on the same
data and frequencies:

* ``time_numpy``: what a user would write: ``cos(X @ W + b)`` on all
  points in one go, then the per-set means;
* ``time_sklearn``: the same with scikit-learn's ``RBFSampler`` (its own
  frequencies, t = 1000) when it is installed;
* ``time_exact``: the exact Gram ``sum_match_kernel(sets, gamma=1/d)``,
  which the RDF Gram approximates.

The baselines do not depend on ``workers`` and run at ``workers=1`` only;
the exact Gram at 1000 sets runs at ``workers=2`` only (about a minute).
`DRDF` does the same for ``DoublyRandomDistributionFeatures`` (t = t2 =
1000; transform, and transform plus Gram) beside the exact ``mmd_kernel``,
NumPy (set means as above, then ``cos(F @ W2 + b2)``) and two
``RBFSampler``; `RFF` for ``RandomFourierFeatures.transform`` on 60000
points against NumPy and ``RBFSampler``, and the exact RBF Gram of the
first 2000 points (``sum_match_kernel`` of one-point sets) beside the
feature Gram of those points; `RFFSparse` for ``RandomFourierFeatures.transform``
of a CSR matrix (20000 x 1000, 2% non-zeros) beside ``RBFSampler`` and
NumPy/SciPy (``cos(X @ W + b)``) on the same CSR matrix. The ``peakmem_*``
methods give the peak resident memory of the process.

`Draws` times ``fit`` and ``transform`` of ``RandomFourierFeatures`` (20000
points) and ``RandomDistributionFeatures`` (200x300x30) for each frequency
draw ("iid", "orthogonal", "qmc"; sincos form, t = 1000, gamma given, one
worker), and ``time_fit_wide`` the fit of RFF at d = 2000 (where the
orthogonal draw's QR factorisations cost most); ``transform`` should not
depend on the draw.

Targets
-------
On the 2-core reference machine, at 200x300x30 and t = 1000: RDF at most
0.25x the NumPy way in float64; float32 at most 0.5x float64; RDF features
plus their Gram at least 10x faster than the exact Gram (all at
``workers=2``).

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench "random_features" \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.random_features  # the ratios and the targets
    python -m benchmarks.random_features --direct  # the targets, without asv
"""

import numpy as np
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params

from kernelmaps import (
    Bags,
    DoublyRandomDistributionFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
    mmd_kernel,
    sum_match_kernel,
)

from .common import RunOnce, make_sets, stored_times

try:
    from sklearn.kernel_approximation import RBFSampler
except ImportError:  # scikit-learn is optional
    RBFSampler = None

SIZES = ("200x300x30", "1000x300x30")
DTYPES = ("float64", "float32")
WORKERS = (1, 2)
N_COMPONENTS = 1000
# RFFSparse: a CSR matrix of this shape and share of non-zeros.
SPARSE_SHAPE = (20_000, 1000)
SPARSE_DENSITY = 0.02
NUMPY_TARGET = 0.25
FLOAT32_TARGET = 0.5
EXACT_TARGET = 10.0

SKIP_NUMPY = [(s, dt, w) for s in SIZES for dt in DTYPES for w in WORKERS if w != 1]
# The exact Gram: float64 only (float32 is computed like it), and at 1000
# sets with two workers only.
SKIP_EXACT = [
    (s, dt, w) for s in SIZES for dt in DTYPES for w in WORKERS
    if dt == "float32" or (s == SIZES[1] and w == 1)
]


def numpy_set_means(bags, weights, offsets):
    """The NumPy way: all point features at once, then the set means."""
    dtype = bags.points.dtype
    Z = np.cos(bags.points @ weights.astype(dtype) + offsets.astype(dtype))
    Z *= np.sqrt(2.0 / weights.shape[1]).astype(dtype)
    sums = np.add.reduceat(Z, bags.offsets[:-1], axis=0)
    return sums / bags.sizes[:, None]


def _rbf_sampler(dim, n_components, gamma):
    """scikit-learn's RBFSampler, fitted (its fit only draws frequencies),
    or None without scikit-learn."""
    if RBFSampler is None:
        return None
    sampler = RBFSampler(gamma=gamma, n_components=n_components, random_state=0)
    return sampler.fit(np.zeros((1, dim)))


def sklearn_set_means(sampler, bags):
    """scikit-learn's way: ``RBFSampler.transform`` of all points, then the
    per-set means."""
    if sampler is None:
        raise SkipNotImplemented("scikit-learn is not installed")
    Z = sampler.transform(bags.points)
    return np.add.reduceat(Z, bags.offsets[:-1], axis=0) / bags.sizes[:, None]


class RDF(RunOnce):
    params = (SIZES, DTYPES, WORKERS)
    param_names = ("size", "dtype", "workers")

    def setup(self, size, dtype, workers):
        sets, d = make_sets(size, dtype)
        self.bags = Bags.from_list(sets)
        self.gamma = 1.0 / d
        self.rdf = RandomDistributionFeatures(N_COMPONENTS, gamma=self.gamma,
                                              rng=0).fit(self.bags)
        self.sampler = _rbf_sampler(d, N_COMPONENTS, self.gamma)
        self.weighted = self.bags.with_weights(np.random.default_rng(1).uniform(
            0.5, 2.0, self.bags.n_points))

    def time_rdf(self, size, dtype, workers):
        self.rdf.transform(self.bags, workers=workers)

    def time_rdf_weighted(self, size, dtype, workers):
        self.rdf.transform(self.weighted, workers=workers)

    def time_rdf_gram(self, size, dtype, workers):
        F = self.rdf.transform(self.bags, workers=workers)
        F @ F.T

    @skip_for_params(SKIP_NUMPY)
    def time_numpy(self, size, dtype, workers):
        numpy_set_means(self.bags, self.rdf.weights_, self.rdf.offsets_)

    @skip_for_params(SKIP_NUMPY)
    def time_sklearn(self, size, dtype, workers):
        sklearn_set_means(self.sampler, self.bags)

    @skip_for_params(SKIP_EXACT)
    def time_exact(self, size, dtype, workers):
        sum_match_kernel(self.bags, gamma=self.gamma, workers=workers)

    def peakmem_rdf(self, size, dtype, workers):
        self.rdf.transform(self.bags, workers=workers)

    @skip_for_params(SKIP_NUMPY)
    def peakmem_numpy(self, size, dtype, workers):
        numpy_set_means(self.bags, self.rdf.weights_, self.rdf.offsets_)


def numpy_drdf(bags, drdf):
    """DRDF the NumPy way: the RDF set means, then ``cos(F @ W2 + b2)``."""
    F = numpy_set_means(bags, drdf.rdf_.weights_, drdf.rdf_.offsets_)
    t2 = drdf.rff_.weights_.shape[1]
    return np.sqrt(2.0 / t2) * np.cos(F @ drdf.rff_.weights_ + drdf.rff_.offsets_)


class DRDF(RunOnce):
    params = (WORKERS,)
    param_names = ("workers",)

    def setup(self, workers):
        sets, d = make_sets(SIZES[0], "float64")
        self.bags = Bags.from_list(sets)
        self.gamma = 1.0 / d
        self.drdf = DoublyRandomDistributionFeatures(
            N_COMPONENTS, N_COMPONENTS, gamma=self.gamma, gamma2=1.0, rng=0
        ).fit(self.bags)
        self.sampler = _rbf_sampler(d, N_COMPONENTS, self.gamma)
        self.sampler2 = _rbf_sampler(N_COMPONENTS, N_COMPONENTS, 1.0)

    def time_drdf(self, workers):
        self.drdf.transform(self.bags, workers=workers)

    def peakmem_drdf(self, workers):
        self.drdf.transform(self.bags, workers=workers)

    def time_drdf_gram(self, workers):
        F = self.drdf.transform(self.bags, workers=workers)
        F @ F.T

    @skip_for_params([(2,)])
    def time_numpy(self, workers):
        numpy_drdf(self.bags, self.drdf)

    @skip_for_params([(2,)])
    def time_sklearn(self, workers):
        F = sklearn_set_means(self.sampler, self.bags)
        self.sampler2.transform(F)

    def time_exact(self, workers):
        mmd_kernel(self.bags, gamma=self.gamma, gamma2=1.0, workers=workers)


class RFF:
    params = (DTYPES, WORKERS)
    param_names = ("dtype", "workers")
    number = 1
    repeat = 3

    def setup(self, dtype, workers):
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((60_000, 30)).astype(dtype)
        self.rff = RandomFourierFeatures(N_COMPONENTS, gamma=1 / 30, rng=0).fit(self.X)
        self.sampler = _rbf_sampler(30, N_COMPONENTS, 1 / 30)
        # the first 2000 points as one-point sets: the exact RBF Gram
        self.subset = Bags(self.X[:2000], np.arange(2001))

    def time_rff(self, dtype, workers):
        self.rff.transform(self.X, workers=workers)

    def peakmem_rff(self, dtype, workers):
        self.rff.transform(self.X, workers=workers)

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def time_numpy(self, dtype, workers):
        W = self.rff.weights_.astype(self.X.dtype)
        np.cos(self.X @ W + self.rff.offsets_.astype(self.X.dtype))

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def time_sklearn(self, dtype, workers):
        if self.sampler is None:
            raise SkipNotImplemented("scikit-learn is not installed")
        self.sampler.transform(self.X)

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def peakmem_sklearn(self, dtype, workers):
        if self.sampler is None:
            raise SkipNotImplemented("scikit-learn is not installed")
        self.sampler.transform(self.X)

    def time_rff_gram_subset(self, dtype, workers):
        Z = self.rff.transform(self.subset.points, workers=workers)
        Z @ Z.T

    def time_exact_subset(self, dtype, workers):
        sum_match_kernel(self.subset, gamma=1 / 30, workers=workers)


class RFFSparse:
    """RandomFourierFeatures of CSR input (its non-zeros times the rows of
    W, in float64) beside scikit-learn's RBFSampler and NumPy/SciPy on the
    same CSR matrix."""

    params = (DTYPES, WORKERS)
    param_names = ("dtype", "workers")
    number = 1
    repeat = 3

    def setup(self, dtype, workers):
        import scipy.sparse

        n, d = SPARSE_SHAPE
        self.X = scipy.sparse.random(n, d, density=SPARSE_DENSITY, format="csr",
                                     dtype=np.float64, random_state=0).astype(dtype)
        self.rff = RandomFourierFeatures(N_COMPONENTS, gamma=1 / d, rng=0).fit(self.X)
        self.sampler = _rbf_sampler(d, N_COMPONENTS, 1 / d)

    def time_rff_csr(self, dtype, workers):
        self.rff.transform(self.X, workers=workers)

    def peakmem_rff_csr(self, dtype, workers):
        self.rff.transform(self.X, workers=workers)

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def time_numpy_csr(self, dtype, workers):
        W = self.rff.weights_.astype(self.X.dtype)
        np.cos(self.X @ W + self.rff.offsets_.astype(self.X.dtype))

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def time_sklearn_csr(self, dtype, workers):
        if self.sampler is None:
            raise SkipNotImplemented("scikit-learn is not installed")
        self.sampler.transform(self.X)

    @skip_for_params([(dt, 2) for dt in DTYPES])
    def peakmem_sklearn_csr(self, dtype, workers):
        if self.sampler is None:
            raise SkipNotImplemented("scikit-learn is not installed")
        self.sampler.transform(self.X)


FOURIER_DRAWS = ("iid", "orthogonal", "qmc")
DRAW_MAPS = ("RFF", "RDF")


class Draws:
    params = (DRAW_MAPS, FOURIER_DRAWS)
    param_names = ("map", "draw")
    number = 1
    repeat = 3

    def setup(self, name, draw):
        if name == "RFF":
            self.X = np.random.default_rng(0).standard_normal((20_000, 30))
            self.make = RandomFourierFeatures
        else:
            self.X = Bags.from_list(make_sets(SIZES[0], "float64")[0])
            self.make = RandomDistributionFeatures
        self.fmap = self.make(N_COMPONENTS, gamma=1 / 30, draw=draw,
                              rng=0).fit(self.X)
        self.wide = np.zeros((2, 2000))

    def time_fit(self, name, draw):
        self.make(N_COMPONENTS, gamma=1 / 30, draw=draw, rng=0).fit(self.X)

    def time_transform(self, name, draw):
        self.fmap.transform(self.X, workers=1)

    @skip_for_params([("RDF", d) for d in FOURIER_DRAWS])
    def time_fit_wide(self, name, draw):
        RandomFourierFeatures(N_COMPONENTS, gamma=1 / 2000, draw=draw,
                              rng=0).fit(self.wide)


def print_ratios(results_dir=".asv/results"):
    """Ratios and targets of every stored result."""
    for label, times in stored_times(results_dir):
        rdf = times.get("random_features.RDF.time_rdf", {})
        if not rdf:
            continue
        gram = times.get("random_features.RDF.time_rdf_gram", {})
        numpy = times.get("random_features.RDF.time_numpy", {})
        sklearn = times.get("random_features.RDF.time_sklearn", {})
        exact = times.get("random_features.RDF.time_exact", {})
        print(label)
        for (size, dtype, workers), t in sorted(rdf.items()):
            line = f"  RDF {size} {dtype} workers={workers}: {t:6.3f} s"
            base = numpy.get((size, dtype, "1"))
            if base:
                line += f"; / NumPy {base:6.3f} s = {t / base:5.3f}"
                if dtype == "float64" and workers == "2" and size == SIZES[0]:
                    verdict = "met" if t / base <= NUMPY_TARGET else "MISSED"
                    line += f" (target <= {NUMPY_TARGET}: {verdict})"
            base = sklearn.get((size, dtype, "1"))
            if base:
                line += f"; / RBFSampler {base:6.3f} s = {t / base:5.3f}"
            t64 = rdf.get((size, "float64", workers))
            if dtype == "float32" and t64:
                verdict = "met" if t / t64 <= FLOAT32_TARGET else "MISSED"
                line += f"; / float64 = {t / t64:5.3f}"
                if size == SIZES[0]:
                    line += f" (target <= {FLOAT32_TARGET}: {verdict})"
            print(line)
        for (size, dtype, workers), t in sorted(exact.items()):
            approx = gram.get((size, dtype, workers))
            if approx:
                ratio = t / approx
                line = (f"  exact Gram {size} workers={workers}: {t:7.3f} s / "
                        f"RDF + Gram {approx:6.3f} s = {ratio:6.1f}x")
                if size == SIZES[0] and workers == "2":
                    verdict = "met" if ratio >= EXACT_TARGET else "MISSED"
                    line += f" (target >= {EXACT_TARGET:g}x: {verdict})"
                print(line)
        drdf = times.get("random_features.DRDF.time_drdf_gram", {})
        drdf_exact = times.get("random_features.DRDF.time_exact", {})
        for (workers,), t in sorted(drdf.items()):
            if (workers,) in drdf_exact:
                e = drdf_exact[(workers,)]
                print(f"  mmd_kernel workers={workers}: {e:6.3f} s / DRDF + Gram "
                      f"{t:6.3f} s = {e / t:5.1f}x")
        rff = times.get("random_features.RFF.time_rff", {})
        rff_numpy = times.get("random_features.RFF.time_numpy", {})
        for (dtype, workers), t in sorted(rff.items()):
            base = rff_numpy.get((dtype, "1"))
            if base:
                print(f"  RFF 60000x30 {dtype} workers={workers}: {t:6.3f} s / "
                      f"NumPy {base:6.3f} s = {t / base:5.3f}")
        csr = times.get("random_features.RFFSparse.time_rff_csr", {})
        csr_sklearn = times.get("random_features.RFFSparse.time_sklearn_csr", {})
        shape = "x".join(map(str, SPARSE_SHAPE))
        for (dtype, workers), t in sorted(csr.items()):
            base = csr_sklearn.get((dtype, "1"))
            if base:
                print(f"  RFF CSR {shape} {dtype} workers={workers}: {t:6.3f} s / "
                      f"RBFSampler {base:6.3f} s = {t / base:5.3f}")


def _rdf_gram(rdf, bags, workers):
    F = rdf.transform(bags, workers=workers)
    return F @ F.T


def print_direct(size=SIZES[0], repeat=3):
    """The three targets timed directly (best of `repeat`), without asv."""
    import time

    def best(n, f, *args, **kwargs):
        times = []
        for _ in range(n):
            start = time.perf_counter()
            f(*args, **kwargs)
            times.append(time.perf_counter() - start)
        return min(times)

    t = {}
    for dtype in DTYPES:
        sets, d = make_sets(size, dtype)
        bags = Bags.from_list(sets)
        rdf = RandomDistributionFeatures(N_COMPONENTS, gamma=1.0 / d, rng=0).fit(bags)
        t[dtype, "numpy"] = best(2, numpy_set_means, bags, rdf.weights_, rdf.offsets_)
        t[dtype] = best(repeat, rdf.transform, bags, workers=2)
        t[dtype, "gram"] = best(repeat, _rdf_gram, rdf, bags, 2)
        if dtype == "float64":
            t["exact"] = best(1, sum_match_kernel, bags, gamma=1.0 / d, workers=2)
    print(f"RDF {size}, t={N_COMPONENTS}, workers=2")
    print(f"  float64 {t['float64']:.3f} s / NumPy {t['float64', 'numpy']:.3f} s = "
          f"{t['float64'] / t['float64', 'numpy']:.3f} (target <= {NUMPY_TARGET})")
    print(f"  float32 {t['float32']:.3f} s / float64 = "
          f"{t['float32'] / t['float64']:.3f} (target <= {FLOAT32_TARGET})")
    print(f"  exact Gram {t['exact']:.3f} s / RDF + Gram {t['float64', 'gram']:.3f} s "
          f"= {t['exact'] / t['float64', 'gram']:.1f}x (target >= {EXACT_TARGET:g}x)")


if __name__ == "__main__":
    import sys

    if "--direct" in sys.argv:
        print_direct()
    else:
        print_ratios()
