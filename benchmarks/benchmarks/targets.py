"""The speed targets of every size and CPU (issue 18), read from stored asv
results: each ratio against its target, from one run on one machine.

    asv run --python=same --bench "SumMatchKernelShapes|RenyiSmallSets|\\
SetKernelRenyiTransform|JsBesideChi2|GaussianExpectedKernel|ExpChi2\\.|\\
FixedCost|DenseSolves|EMKInit|RDF\\." --set-commit-hash $(git rev-parse HEAD)
    python -m benchmarks.targets

Run both from the directory of asv.conf.json. A ratio is computed only from
the results of one commit and machine; the header names the machine the
script runs on (run it where asv ran).
"""

import sys

from .common import machine, stored_times
from .set_kernels import SHAPES

TINY = "10x10x3"


def _rows():
    """(label, numerator, denominator or None, target): a benchmark is
    (name, parameter tuple); without a denominator the target is seconds."""
    shapes = "set_kernels.SumMatchKernelShapes"
    for size in SHAPES:
        for dtype in ("float64", "float32"):
            if size != TINY:
                yield (f"mean map {size} {dtype} / blocked NumPy",
                       (f"{shapes}.time_kernelmaps", (size, dtype)),
                       (f"{shapes}.time_numpy_blocked", (size, dtype)), 0.15)
            if size == "1000x30x10":
                yield (f"mean map {size} {dtype} / mmd package",
                       (f"{shapes}.time_kernelmaps", (size, dtype)),
                       (f"{shapes}.time_mmd_package", (size, dtype)), 0.15)
    yield (f"tiny call {TINY} float64, seconds",
           (f"{shapes}.time_kernelmaps", (TINY, "float64")), None, 30e-6)
    for w in ("1", "2"):
        yield (f"kNN Renyi 1797 small sets / mean map, workers={w}",
               ("divergence.RenyiSmallSets.time_kernelmaps", (w,)),
               ("divergence.RenyiSmallSets.time_mean_map", (w,)), 1.5)
    # "digits" (blocks on the fly, once per direction either way) is
    # tracked by asv, not a target.
    for w in ("1", "2"):
        yield (f"SetKernel renyi both directions / two searches 100x16, "
               f"workers={w}",
               ("divergence.SetKernelRenyiTransform.time_both_directions",
                ("100x16", w)),
               ("divergence.SetKernelRenyiTransform.time_two_searches",
                ("100x16", w)), 0.8)
    for dtype in ("float64", "float32"):
        for fmt in ("dense", "csr"):
            yield (f"js_kernel / additive_chi2_kernel {dtype} {fmt}, workers=2",
                   ("histograms.JsBesideChi2.time_js", (dtype, fmt, "2")),
                   ("histograms.JsBesideChi2.time_chi2", (dtype, fmt, "2")), 2.0)
    for w in ("1", "2"):
        yield (f"gaussian_expected_kernel diagonal 2000x16 / NumPy, workers={w}",
               ("expected.GaussianExpectedKernel.time_kernelmaps",
                ("2000x16", "rbf_diagonal", w)),
               ("expected.GaussianExpectedKernel.time_numpy_diagonal",
                ("2000x16", "rbf_diagonal", "1")), 0.2)
    for t in ("500", "2000"):
        for w in ("1", "2"):
            yield (f"ExpChi2Features CSR t={t} / sparse product, workers={w}",
                   ("histograms.ExpChi2.time_transform", (t, w)),
                   ("histograms.ExpChi2.time_transform_sparse_product", (t, w)),
                   0.5)
    yield ("rf_pca 4000 rows / 20000 rows",
           ("outofcore.FixedCost.time_rf_pca", ("4000",)),
           ("outofcore.FixedCost.time_rf_pca", ("20000",)), 0.4)
    yield ("rf_ridge(None) ridge solve / eigendecomposition",
           ("outofcore.DenseSolves.time_ridge_solve", ()),
           ("outofcore.DenseSolves.time_ridge_solve_eigh", ()), 1.0)
    for size in ("200x300x30", "1000x300x30"):
        for w in ("1", "2"):
            yield (f"RDF float32 / float64 {size}, workers={w}",
                   ("random_features.RDF.time_rdf", (size, "float32", w)),
                   ("random_features.RDF.time_rdf", (size, "float64", w)), 0.35)


def print_targets(results_dir=".asv/results"):
    print(f"# {machine()}")
    for label, times in stored_times(results_dir):
        print(label)
        for name, num, den, target in _rows():
            t = times.get(num[0], {}).get(num[1])
            base = None if den is None else times.get(den[0], {}).get(den[1])
            if t is None or (den is not None and base is None):
                print(f"  {name:64} (not run)")
                continue
            value = t if den is None else t / base
            shown = f"{value * 1e6:8.1f} us" if den is None else f"{value:8.3f}x"
            limit = f"{target * 1e6:.0f} us" if den is None else f"{target}x"
            verdict = "met" if value <= target else "MISSED"
            print(f"  {name:64} {shown}  target <= {limit}: {verdict}")


if __name__ == "__main__":
    print_targets(*sys.argv[1:])
