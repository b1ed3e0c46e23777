"""Benchmarks for the exact histogram kernels and their explicit maps.

What is measured
----------------
`HistogramMaps` times ``transform`` of 20000 bag-of-words histograms of 300
words (13-14 % non-zero, L1-normalised; `kernelmaps._data.bag_of_words`),
CSR and dense, float64, with 5 features per input feature: `Chi2DirectMap`
(fitted, 5 terms), `Chi2ChebyshevMap` (5 terms, fitted scale),
`HomogeneousKernelMap`
(chi2, order 2), and scikit-learn's ``AdditiveChi2Sampler(sample_steps=3)``
when it is installed, with 1 and 2 worker threads (scikit-learn takes none:
run at workers=1 only). `AnchorMaps` times `AnchorMap` (fit, transform,
codes) for each kernel and 30 or 50 anchors beside `HomogeneousKernelMap`
of similar width.
`ExactChi2Kernel` times ``additive_chi2_kernel`` on
2000 x 2000 of those histograms (dense and CSR, ``Y=None``) beside
``sklearn.metrics.pairwise.additive_chi2_kernel`` (dense only; CSR is not
supported there). ``peakmem_*`` give the peak resident memory.

Targets
-------
On the 2-core reference machine: ``Chi2DirectMap.transform`` on CSR at most
0.3x the time of scikit-learn's sampler; ``additive_chi2_kernel`` (dense,
2 workers) at most 0.5x scikit-learn's, and CSR as well.

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench "HistogramMaps|ExactChi2Kernel|AnchorMaps" \\
        --set-commit-hash $(git rev-parse HEAD)
    python -m benchmarks.histograms          # ratios and targets
    python -m benchmarks.histograms --accuracy   # error vs features table
"""

import math

import numpy as np
import scipy.sparse
from asv_runner.benchmarks.mark import skip_for_params

from kernelmaps import (
    AnchorMap,
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
    additive_chi2_kernel,
    chi2_distance,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)
from kernelmaps._data import bag_of_words

from .common import stored_times

try:
    from sklearn.kernel_approximation import AdditiveChi2Sampler
    from sklearn.metrics.pairwise import additive_chi2_kernel as sk_additive_chi2
except ImportError:  # scikit-learn is optional
    AdditiveChi2Sampler = sk_additive_chi2 = None

FORMATS = ("csr", "dense")
WORKERS = (1, 2)
MAP_TARGET = 0.3
KERNEL_TARGET = 0.5


def _as(X, fmt):
    return scipy.sparse.csr_matrix(X) if fmt == "csr" else X


class HistogramMaps:
    """transform of 20000 x 300 histograms, 5 features per input feature."""

    params = (FORMATS, WORKERS)
    param_names = ("format", "workers")

    def setup(self, fmt, workers):
        X = bag_of_words(20000)
        self.X = _as(X, fmt)
        self.direct = Chi2DirectMap.fit(X, n_terms=5)
        self.chebyshev = Chi2ChebyshevMap.fit(X, n_terms=5)
        self.vz = HomogeneousKernelMap("chi2", order=2)
        if AdditiveChi2Sampler is not None:
            self.sampler = AdditiveChi2Sampler(sample_steps=3).fit(self.X)

    def time_direct(self, fmt, workers):
        self.direct.transform(self.X, workers=workers)

    def peakmem_direct(self, fmt, workers):
        self.direct.transform(self.X, workers=workers)

    def time_chebyshev(self, fmt, workers):
        self.chebyshev.transform(self.X, workers=workers)

    def time_vz(self, fmt, workers):
        self.vz.transform(self.X, workers=workers)

    @skip_for_params([(f, 2) for f in FORMATS])
    def time_sklearn_sampler(self, fmt, workers):
        if AdditiveChi2Sampler is None:
            raise NotImplementedError("scikit-learn is not installed")
        self.sampler.transform(self.X)

    @skip_for_params([(f, 2) for f in FORMATS])
    def peakmem_sklearn_sampler(self, fmt, workers):
        if AdditiveChi2Sampler is None:
            raise NotImplementedError("scikit-learn is not installed")
        self.sampler.transform(self.X)


class ExactChi2Kernel:
    """additive_chi2_kernel on 2000 x 2000 x 300 histograms."""

    params = (FORMATS, WORKERS)
    param_names = ("format", "workers")
    timeout = 300

    def setup(self, fmt, workers):
        self.X = _as(bag_of_words(2000, seed=1), fmt)

    def time_kernelmaps(self, fmt, workers):
        additive_chi2_kernel(self.X, workers=workers)

    def peakmem_kernelmaps(self, fmt, workers):
        additive_chi2_kernel(self.X, workers=workers)

    @skip_for_params([("csr", 1), ("csr", 2), ("dense", 2)])
    def time_sklearn(self, fmt, workers):
        if sk_additive_chi2 is None:
            raise NotImplementedError("scikit-learn is not installed")
        sk_additive_chi2(self.X)


EXACT = {"chi2": additive_chi2_kernel, "js": js_kernel,
         "intersection": intersection_kernel, "hellinger": hellinger_kernel}
ALL_EXACT = dict(EXACT, chi2_distance=chi2_distance, exp_chi2=exp_chi2_kernel)


class ExactHistogramKernels:
    """Every exact histogram kernel on 2000 x 2000 x 300 (Y=None), dense
    and CSR, 2 workers."""

    params = (tuple(ALL_EXACT), FORMATS)
    param_names = ("kernel", "format")
    timeout = 300

    def setup(self, kernel, fmt):
        self.X = _as(bag_of_words(2000, seed=1), fmt)

    def time_kernel(self, kernel, fmt):
        ALL_EXACT[kernel](self.X, workers=2)

    def peakmem_kernel(self, kernel, fmt):
        ALL_EXACT[kernel](self.X, workers=2)


class ExpChi2:
    """ExpChi2Features (direct map, t components) on 2000 histograms,
    features and their Gram, beside the exact exp-chi2 Gram; 2 workers."""

    params = ((500, 2000),)
    param_names = ("n_components",)
    timeout = 300

    def setup(self, n_components):
        X = bag_of_words(2000, seed=3)
        self.X = scipy.sparse.csr_matrix(X)
        self.features = ExpChi2Features.fit(X, n_components, beta=1.0, rng=0)

    def time_features_and_gram(self, n_components):
        Z = self.features.transform(self.X, workers=2)
        Z @ Z.T

    def peakmem_features_and_gram(self, n_components):
        Z = self.features.transform(self.X, workers=2)
        Z @ Z.T

    def time_exact_gram(self, n_components):
        exp_chi2_kernel(self.X, beta=1.0, workers=2)


class AnchorMaps:
    """AnchorMap (ANNFM, nearest uniform anchor, 99 % energy) fit and
    transform of 20000 x 300 histograms, beside `HomogeneousKernelMap` of
    the smallest output width at least as large (VZ widths are odd: order
    ceil((width - 1) / 2); Hellinger: its exact single feature) and the
    exact kernel on 2000 rows; 2 workers.
    ``track_codes_share`` is the memory of the uint8 codes over that of the
    float32 features (target: at most 1/8)."""

    params = (("chi2", "js", "intersection", "hellinger"), (30, 50), FORMATS)
    param_names = ("kernel", "n_anchors", "format")
    timeout = 300

    def setup(self, kernel, n_anchors, fmt):
        X = bag_of_words(20000)
        self.X = _as(X, fmt)
        self.annfm = AnchorMap.fit(X, kernel, n_anchors)
        width = self.annfm.n_features_out / X.shape[1]
        order = max(math.ceil((width - 1) / 2), 0)
        self.vz = HomogeneousKernelMap(kernel, order)
        self.subset = X[:2000]
        self.train = X

    def time_fit(self, kernel, n_anchors, fmt):
        AnchorMap.fit(self.X, kernel, n_anchors)

    def time_transform(self, kernel, n_anchors, fmt):
        self.annfm.transform(self.X, workers=2)

    def peakmem_transform(self, kernel, n_anchors, fmt):
        self.annfm.transform(self.X, workers=2)

    def time_vz_transform(self, kernel, n_anchors, fmt):
        self.vz.transform(self.X, workers=2)

    def time_codes(self, kernel, n_anchors, fmt):
        self.annfm.codes(self.X, workers=2)

    @skip_for_params([(k, 50, f) for k in EXACT for f in FORMATS]
                     + [(k, 30, "csr") for k in EXACT])
    def time_exact_subset(self, kernel, n_anchors, fmt):
        EXACT[kernel](self.subset, workers=2)

    def track_codes_share(self, kernel, n_anchors, fmt):
        codes = self.annfm.codes(self.train)
        features = self.annfm.transform(self.train.astype(np.float32))
        return codes.nbytes / features.nbytes


def print_ratios(results_dir=".asv/results"):
    """kernelmaps / scikit-learn time ratios of every stored result."""
    for label, times in stored_times(results_dir):
        maps = times.get("histograms.HistogramMaps.time_direct", {})
        sampler = times.get("histograms.HistogramMaps.time_sklearn_sampler", {})
        kernel = times.get("histograms.ExactChi2Kernel.time_kernelmaps", {})
        sk_kernel = times.get("histograms.ExactChi2Kernel.time_sklearn", {})
        annfm = times.get("histograms.AnchorMaps.time_transform", {})
        vz = times.get("histograms.AnchorMaps.time_vz_transform", {})
        if not (maps or kernel or annfm):
            continue
        print(label)
        for combo, t in sorted(annfm.items()):
            if combo in vz:
                print(f"  AnchorMap.transform {' '.join(combo):24} {t * 1e3:7.1f} ms / "
                      f"VZ {vz[combo] * 1e3:7.1f} ms = {t / vz[combo]:5.2f}")
        for (fmt, workers), t in sorted(maps.items()):
            base = sampler.get((fmt, "1"))
            if base:
                line = (f"  Chi2DirectMap.transform {fmt:5} workers={workers}: "
                        f"{t * 1e3:7.1f} ms / sklearn {base * 1e3:7.1f} ms = "
                        f"{t / base:5.2f}")
                if fmt == "csr":
                    verdict = "met" if t / base <= MAP_TARGET else "MISSED"
                    line += f"  target <= {MAP_TARGET}: {verdict}"
                print(line)
        base = sk_kernel.get(("dense", "1"))
        for (fmt, workers), t in sorted(kernel.items()):
            if base:
                ratio = t / base
                line = (f"  additive_chi2_kernel {fmt:5} workers={workers}: "
                        f"{t:6.3f} s / sklearn dense {base:6.3f} s = {ratio:5.2f}")
                if workers == "2":
                    verdict = "met" if ratio <= KERNEL_TARGET else "MISSED"
                    line += f"  target <= {KERNEL_TARGET}: {verdict}"
                print(line)


def print_accuracy(n=1000):
    """Max and mean abs error of the additive chi2 kernel on `n` histograms
    of `bag_of_words`, against features per input feature."""
    X = bag_of_words(n, seed=2)
    K = additive_chi2_kernel(X)
    print(f"additive chi2 kernel on {n} bag-of-words histograms (300 words): "
          "max / mean abs error")
    print(f"{'features':>8}  {'direct':>17}  {'Chebyshev':>17}  {'VZ':>17}  "
          f"{'sklearn sampler':>17}")
    for n_terms in (1, 3, 5, 7, 9):
        maps = [Chi2DirectMap.fit(X, n_terms), Chi2ChebyshevMap.fit(X, n_terms),
                HomogeneousKernelMap("chi2", order=(n_terms - 1) // 2)]
        cells = []
        for m in maps:
            Z = m.transform(X)
            E = np.abs(Z @ Z.T - K)
            cells.append(f"{E.max():8.1e} {E.mean():8.1e}")
        if AdditiveChi2Sampler is not None and n_terms <= 5:
            Z = AdditiveChi2Sampler(sample_steps=(n_terms + 1) // 2).fit_transform(X)
            E = np.abs(Z @ Z.T - K)
            cells.append(f"{E.max():8.1e} {E.mean():8.1e}")
        else:
            cells.append(f"{'n/a':>17}")
        print(f"{n_terms:>8}  " + "  ".join(cells))


if __name__ == "__main__":
    import sys

    if "--accuracy" in sys.argv:
        print_accuracy()
    else:
        print_ratios(*[a for a in sys.argv[1:] if not a.startswith("--")])
