"""Benchmarks for out-of-core PCA and ridge regression on random features.

What is measured
----------------
`OutOfCore` streams ``rows`` (20000, and 200000 for the real out-of-core
case) histograms over 300 bins, generated block by block (10000 rows each,
`HistogramBlocks`: five classes, each a Dirichlet with its own concentration
vector; the full data never sit in memory), through ``ExpChi2Features``
with t = 2000 random features on top of a 5-term ``Chi2DirectMap`` (both
fitted on the first block), and times:

* ``time_rf_pca``: ``rf_pca(blocks, features, 200)`` (Algorithm 3 of Li,
  Lebanon and Sminchisescu), the blocks given as a one-shot generator;
* ``time_rf_ridge``: ``rf_ridge`` with one map, 200 components and five
  one-vs-all targets (+1 / -1) in one pass (Algorithm 4);
* ``time_rf_ridge_two_maps``: ``rf_ridge`` on the exp-chi2 features and the
  chi2 direct features (1500 wide) side by side, 200 components each, two
  passes (Algorithm 5);
* ``time_incremental_pca``: scikit-learn's ``IncrementalPCA(200)``
  ``partial_fit`` on the same feature blocks (batch = block), when
  scikit-learn is installed;
* ``time_features``: generating the blocks and computing their features
  only, the floor under all of the above;
* ``time_in_memory_pca`` (20000 rows only): all features materialised (20000
  x 2000 float64, 320 MB), centred, then ``numpy.linalg.svd``;
* ``time_sklearn_ridge`` (20000 rows only): the in-memory peer of
  ``rf_ridge``, scikit-learn's ``Ridge(alpha=1)`` on all the materialised
  features and the five targets (no projection), when it is installed.

The ``peakmem_*`` methods give the peak resident memory of the process
(imports and the fitted maps included). All run once (`common.RunOnce`).

`FixedCost` times ``rf_pca`` and plain ``rf_ridge`` at 4000 and 20000 rows,
where the dense solve on the covariance is a fixed cost beside the cost per
row, and `DenseSolves` those solves alone beside SciPy's way on all BLAS
threads; run them also with a busy process on one core beside.

Expected
--------
The peak memory of ``rf_pca`` and ``rf_ridge`` is that of one block of
features plus a few 2000 x 2000 matrices, the same at 20000 and 200000 rows;
the in-memory way needs the whole feature matrix and more (it would need
about 10 GB at 200000 rows). ``rf_pca`` should be several times faster than
``IncrementalPCA``, which runs an SVD of each ``(10000 + 200) x 2000`` block.
On the 2-core reference machine at 20000 rows: ``rf_pca`` about 8 s (half of
it the features), ``IncrementalPCA`` about 35 s; each block of 10000 rows
adds about 3.5 s to ``rf_pca`` and 17 s to ``IncrementalPCA``, so the whole
module takes about 3 minutes at 20000 rows and 25 at 200000.

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench "outofcore" \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    asv run --python=same --bench "outofcore.*\\(20000\\)" ...  # small size
    python -m benchmarks.outofcore  # the ratios of the stored results
    python -m benchmarks.outofcore --direct  # a table at 20000 rows, no asv
    python -m benchmarks.outofcore --direct 20000 200000  # both sizes
    python -m benchmarks.outofcore --direct 200000 --only=rf_pca,incremental_pca

The direct mode runs each operation in a fresh process, as asv does, for its
peak memory.
"""

import numpy as np
import scipy.linalg
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params

from kernelmaps import ExpChi2Features, rf_pca, rf_ridge

from .common import RunOnce, stored_times

try:
    from sklearn.decomposition import IncrementalPCA
    from sklearn.linear_model import Ridge
except ImportError:  # scikit-learn is optional
    IncrementalPCA = Ridge = None

ROWS = (20_000, 200_000)
BLOCK_ROWS = 10_000
N_BINS = 300
N_CLASSES = 5
N_RANDOM = 2000
N_COMPONENTS = 200


class HistogramBlocks:
    """`n_rows` histograms over `d` bins as blocks of `block_rows` rows,
    generated on the fly: iterating yields the blocks, `targets` the
    matching one-vs-all targets; both can be iterated again and give the
    same values.

    Row i belongs to one of `n_classes` classes, each a Dirichlet with its
    own concentration vector (0.3 times a log-normal factor per bin, the
    same for every `seed`), so rows are non-negative and sum to 1. Block k
    is drawn from ``numpy.random.default_rng([seed, k, ...])``, so blocks do
    not depend on each other and the labels can be drawn without the
    histograms; another `seed` gives a test set of the same classes.
    """

    def __init__(self, n_rows, *, block_rows=BLOCK_ROWS, d=N_BINS,
                 n_classes=N_CLASSES, seed=0):
        self.n_rows, self.block_rows, self.seed = n_rows, block_rows, seed
        rng = np.random.default_rng(12345)
        self.concentration = 0.3 * np.exp(0.5 * rng.standard_normal((n_classes, d)))

    def _sizes(self):
        starts = range(0, self.n_rows, self.block_rows)
        return enumerate(min(self.block_rows, self.n_rows - s) for s in starts)

    def _labels(self, k, n):
        rng = np.random.default_rng([self.seed, k, 0])
        return rng.integers(self.concentration.shape[0], size=n)

    def __iter__(self):
        for k, n in self._sizes():
            rng = np.random.default_rng([self.seed, k, 1])
            X = rng.standard_gamma(self.concentration[self._labels(k, n)])
            X /= X.sum(axis=1, keepdims=True)
            yield X

    def targets(self):
        """One-vs-all targets of each block, ``(n, n_classes)``: +1 for the
        class of the row, -1 for the others."""
        for k, n in self._sizes():
            labels = self._labels(k, n)
            y = -np.ones((n, self.concentration.shape[0]))
            y[np.arange(n), labels] = 1.0
            yield y


def fit_maps(blocks):
    """The exp-chi2 random features (t = 2000) and their chi2 direct map,
    fitted on the first block."""
    features = ExpChi2Features(N_RANDOM, rng=0).fit(next(iter(blocks)))
    return features, features.chi2_map_


def incremental_pca(blocks, features):
    """scikit-learn's IncrementalPCA, one ``partial_fit`` per feature block."""
    pca = IncrementalPCA(N_COMPONENTS)
    for X in blocks:
        pca.partial_fit(features.transform(X))
    return pca


def in_memory_pca(blocks, features):
    """All features in one array, centred, then ``numpy.linalg.svd``:
    principal axes and variances."""
    Z = np.vstack([features.transform(X) for X in blocks])
    Z -= Z.mean(axis=0)
    _, s, Vt = np.linalg.svd(Z, full_matrices=False)
    return Vt[:N_COMPONENTS], s[:N_COMPONENTS] ** 2 / (Z.shape[0] - 1)


def sklearn_ridge(blocks, features):
    """scikit-learn's Ridge on all features in one array, five targets."""
    Z = np.vstack([features.transform(X) for X in blocks])
    return Ridge(alpha=1.0).fit(Z, np.vstack(list(blocks.targets())))


def features_only(blocks, features):
    """Generate the blocks and compute their features, nothing else."""
    for X in blocks:
        features.transform(X)


def rf_ridge_one_map(blocks, features):
    return rf_ridge(iter(blocks), blocks.targets(), features, N_COMPONENTS)


def rf_ridge_two_maps(blocks, features, chi2):
    # Two passes: the blocks must be re-iterable (HistogramBlocks is).
    return rf_ridge(blocks, blocks.targets(), [features, chi2], N_COMPONENTS)


def _need_sklearn():
    if IncrementalPCA is None:
        raise SkipNotImplemented("scikit-learn is not installed")


SKIP_BIG = [(ROWS[1],)]


class OutOfCore(RunOnce):
    """rf_pca and rf_ridge on streamed 300-bin histograms, ExpChi2Features
    (t = 2000), 200 components; IncrementalPCA, in-memory PCA and
    scikit-learn's in-memory Ridge beside."""

    params = (ROWS,)
    param_names = ("rows",)
    timeout = 1800

    def setup(self, rows):
        self.blocks = HistogramBlocks(rows)
        self.features, self.chi2 = fit_maps(self.blocks)

    def time_features(self, rows):
        features_only(self.blocks, self.features)

    def time_rf_pca(self, rows):
        rf_pca(iter(self.blocks), self.features, N_COMPONENTS)

    def peakmem_rf_pca(self, rows):
        rf_pca(iter(self.blocks), self.features, N_COMPONENTS)

    def time_rf_ridge(self, rows):
        rf_ridge_one_map(self.blocks, self.features)

    def peakmem_rf_ridge(self, rows):
        rf_ridge_one_map(self.blocks, self.features)

    def time_rf_ridge_two_maps(self, rows):
        rf_ridge_two_maps(self.blocks, self.features, self.chi2)

    def peakmem_rf_ridge_two_maps(self, rows):
        rf_ridge_two_maps(self.blocks, self.features, self.chi2)

    def time_incremental_pca(self, rows):
        _need_sklearn()
        incremental_pca(self.blocks, self.features)

    def peakmem_incremental_pca(self, rows):
        _need_sklearn()
        incremental_pca(self.blocks, self.features)

    @skip_for_params(SKIP_BIG)
    def time_in_memory_pca(self, rows):
        in_memory_pca(self.blocks, self.features)

    @skip_for_params(SKIP_BIG)
    def peakmem_in_memory_pca(self, rows):
        in_memory_pca(self.blocks, self.features)

    @skip_for_params(SKIP_BIG)
    def time_sklearn_ridge(self, rows):
        _need_sklearn()
        sklearn_ridge(self.blocks, self.features)

    @skip_for_params(SKIP_BIG)
    def peakmem_sklearn_ridge(self, rows):
        _need_sklearn()
        sklearn_ridge(self.blocks, self.features)


PCA_ROWS = (4000, 20000)
PCA_BLOCK_ROWS = 5000


class FixedCost:
    """``rf_pca`` (200 components) and plain ``rf_ridge``
    (``n_components=None``, five targets) of ExpChi2Features (t = 2000) at
    4000 and 20000 rows, in blocks of 5000 rows (one block, four): the
    dense solve on the 2000 x 2000 covariance is a cost fixed beside the
    cost per row. Target: the time at 4000 rows at most 0.4 times that at
    20000, on an idle machine and with a busy process on one core beside it
    (``python -c "while True: pass" &``), where the eigendecomposition on
    all BLAS threads took 24-31 s at 4000 rows against 14 s at 20000."""

    params = (PCA_ROWS,)
    param_names = ("rows",)
    number = 1
    repeat = 3
    warmup_time = 0
    timeout = 600

    def setup(self, rows):
        data = HistogramBlocks(rows, block_rows=PCA_BLOCK_ROWS)
        self.blocks, self.targets = list(data), list(data.targets())
        self.features = ExpChi2Features(N_RANDOM, rng=0).fit(self.blocks[0][:2000])

    def time_rf_pca(self, rows):
        rf_pca(self.blocks, self.features, N_COMPONENTS)

    def time_rf_ridge_all_components(self, rows):
        rf_ridge(self.blocks, self.targets, self.features, None)


class DenseSolves:
    """The dense solves alone, on the moments of 4000 rows of those features
    (2000 x 2000): the top-200 eigendecomposition of ``rf_pca``
    (``scipy.linalg.eigh``); the plain ridge solve of ``rf_ridge`` (a
    Cholesky solve) beside the eigendecomposition it replaced."""

    number = 1
    repeat = 3
    warmup_time = 0
    timeout = 300

    def setup_cache(self):
        try:
            from kernelmaps._outofcore._moments import Moments
        except ImportError:  # before the moments moved to their unit
            from kernelmaps._engine.moments import Moments

        data = HistogramBlocks(PCA_ROWS[0], block_rows=PCA_ROWS[0])
        X, y = next(iter(data)), next(data.targets())
        features = ExpChi2Features(N_RANDOM, rng=0).fit(X[:2000])
        m = Moments(features.transform(X), y)
        return m.M2, m.Czy

    def time_scipy_eigh_top(self, moments):
        p = moments[0].shape[0]
        scipy.linalg.eigh(moments[0], subset_by_index=[p - N_COMPONENTS, p - 1])

    def time_ridge_solve(self, moments):
        from kernelmaps import _outofcore

        models = getattr(_outofcore, "_models", _outofcore)  # a package now
        if not hasattr(models, "_pseudo_solve"):  # before the Cholesky
            raise SkipNotImplemented("no Cholesky solve in this version")
        models._ridge_weights(*moments, 1.0)

    def time_ridge_solve_eigh(self, moments):
        """The way before: ``(H + alpha I)^+ v`` by the eigendecomposition
        of H on all BLAS threads."""
        H, v = moments
        lam, Q = scipy.linalg.eigh(H)
        lam = np.maximum(lam, 0.0) + 1.0
        Q @ ((Q.T @ v) / lam[:, None])


OPERATIONS = {
    "features": "time_features",
    "rf_pca": "time_rf_pca",
    "rf_ridge": "time_rf_ridge",
    "rf_ridge_two_maps": "time_rf_ridge_two_maps",
    "incremental_pca": "time_incremental_pca",
    "in_memory_pca": "time_in_memory_pca",
    "sklearn_ridge": "time_sklearn_ridge",
}


def print_ratios(results_dir=".asv/results"):
    """Times and peak memory of every stored result, and the ratios to
    IncrementalPCA."""
    for label, times in stored_times(results_dir):
        ours = times.get("outofcore.OutOfCore.time_rf_pca", {})
        if not ours:
            continue
        print(label)
        base = times.get("outofcore.OutOfCore.time_incremental_pca", {})
        for (rows,) in sorted(ours, key=lambda c: int(c[0])):
            for name, key in OPERATIONS.items():
                t = times.get(f"outofcore.OutOfCore.{key}", {}).get((rows,))
                if t is None:
                    continue
                mem = times.get(f"outofcore.OutOfCore.{key.replace('time', 'peakmem')}",
                                {}).get((rows,))
                line = f"  {rows:>7} {name:18} {t:8.2f} s"
                if mem is not None:
                    line += f" {mem / 2**20:8.0f} MB"
                if (rows,) in base and name != "incremental_pca":
                    line += f"   / IncrementalPCA = {t / base[(rows,)]:5.2f}"
                print(line)


def _run_one(rows, name):
    """Set up and run one operation; its wall and CPU time and the peak RSS
    (MB) of this process. Meant for a fresh process (see `print_direct`)."""
    import resource
    import time

    bench = OutOfCore()
    bench.setup(rows)
    method = getattr(bench, OPERATIONS[name])
    start, cpu = time.perf_counter(), time.process_time()
    method(rows)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KB
    return elapsed, cpu, peak


def print_direct(sizes=(ROWS[0],), only=None):
    """Each operation (of `only`, default all) at each size in a fresh
    (spawned) process: wall time, CPU time (all threads) and peak resident
    memory, printed as a table."""
    import multiprocessing

    from benchmarks import outofcore

    needs_sklearn = ("incremental_pca", "sklearn_ridge")
    names = [n for n in OPERATIONS if n not in needs_sklearn or IncrementalPCA]
    names = [n for n in names if only is None or n in only]
    context = multiprocessing.get_context("spawn")
    print(f"ExpChi2Features t={N_RANDOM}, {N_BINS} bins, blocks of {BLOCK_ROWS} "
          f"rows, {N_COMPONENTS} components; peak = process RSS")
    print(f"{'rows':>7}  {'operation':18} {'time (s)':>9} {'cpu (s)':>8} "
          f"{'peak (MB)':>10}")
    for rows in sizes:
        for name in names:
            if name in ("in_memory_pca", "sklearn_ridge") and rows > ROWS[0]:
                continue
            with context.Pool(1) as pool:
                elapsed, cpu, peak = pool.apply(outofcore._run_one, (rows, name))
            print(f"{rows:>7}  {name:18} {elapsed:9.2f} {cpu:8.2f} {peak:10.0f}",
                  flush=True)


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = [a.split("=", 1)[1].split(",") for a in sys.argv
            if a.startswith("--only=")]
    if "--direct" in sys.argv:
        print_direct(tuple(int(a) for a in args) or (ROWS[0],),
                     only[0] if only else None)
    else:
        print_ratios(*args)
