"""Study of `kernelmaps.Chi2DirectMap.fit` (issue 29, item 2): the error of
the direct chi2 map against the number of terms, with the parameters of the
old fit (Algorithm 1 of the chi2 paper, reimplemented here as ``main`` had
it) and of the new one, beside scikit-learn's ``AdditiveChi2Sampler``; the
convergence factors the tests rely on; the fit time before and after.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/chi2_direct/study.py

(about 1 to 2 minutes on 2 cores; ``--quick``: fewer seeds and intervals).
It prints markdown, saved as ``studies/chi2_direct/results.md``.

The error is the largest absolute error over all pairs of the 300 (or 200)
training histograms, ``max |Z Z^T - additive_chi2_kernel(H)|``, the map
fitted on them; for the multi-scale data relative to the largest kernel
value (the others have histograms summing to 1, so their largest kernel
value is about 1).

Parts:

1. The issue's table: Dirichlet(0.05) and Dirichlet(0.02) histograms of
   300 bins, 300 rows (``numpy.random.default_rng(0)``), 3, 5, 8, 12 and 20
   terms. scikit-learn's sampler gives ``2 * sample_steps - 1`` features
   per bin: it gets ``sample_steps = n_terms // 2 + 1``, the smallest width
   at least ``n_terms`` (3, 5, 9, 13 and 21 for 3, 5, 8, 12 and 20 terms:
   equal for odd numbers, one more feature for even ones), and its best
   ``sample_interval`` among 25 log-spaced values from 0.05 to 2 (chosen
   on the same error it is judged by: the most favourable setting).
2. The same on the other kinds of histograms of the tests
   (``kernelmaps._data.chi2_histograms``, which the tests use): dense,
   skewed and multi-scale, 200 rows.
3. Convergence factors: for each kind and seeds 0-5, the error with 2, 6,
   10, ..., 30 terms (until it is at most 1e-6 of the largest kernel
   value), and the smallest factor by which 4 more terms divided it while
   the next error was still above 1e-6; also for float32 input, CSR input
   and ``per_dimension=True``, as the tests run them.
4. Fit time (best of 7, one thread): the old rule (the NumPy code of main)
   and the new ``fit``, on 100,000 x 50 and 20,000 x 300 histograms, and on
   the 20,000 bag-of-words histograms of the asv suite (300 words, 86 %
   zeros; ``benchmarks/benchmarks/common.py``), dense and CSR.
"""

import argparse
import itertools
import platform
import time

import numpy as np
import scipy.sparse
from benchmarks.common import bag_of_words  # the asv suite's data

import kernelmaps
from kernelmaps import Chi2DirectMap, additive_chi2_kernel
from kernelmaps._data import CHI2_KINDS, chi2_histograms

try:
    import sklearn
    from sklearn.kernel_approximation import AdditiveChi2Sampler
except ImportError:  # scikit-learn is optional: its column is left out
    sklearn = AdditiveChi2Sampler = None

TERMS = (3, 5, 8, 12, 20)


def machine():
    """The CPU (model name, family and model, vector extensions), the SIMD
    path kernelmaps runs and the versions."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f.read().split("\n\n")[0].splitlines():
                if ":" in line:
                    key, value = line.split(":", 1)
                    info[key.strip()] = value.strip()
    except OSError:
        pass
    model = info.get("model name", platform.processor() or "unknown CPU")
    flags = set(info.get("flags", "").split())
    isa = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    cpu = (f"{model} (family {info.get('cpu family', '?')}, model "
           f"{info.get('model', '?')}; {', '.join(isa) or 'no AVX2'})")
    from kernelmaps import _engine
    versions = (f"kernelmaps {kernelmaps.__version__}, NumPy {np.__version__}"
                + (f", scikit-learn {sklearn.__version__}" if sklearn else ""))
    return (f"CPU: {cpu}; kernelmaps SIMD path: {_engine.simd_isa()} (the CPU "
            f"has {', '.join(_engine.available_isas())}); {versions}")


# -- the old rule (main before issue 29): Algorithm 1 ------------------------


def old_fit(X, n_terms, per_dimension=False, n_bins=100):
    """The parameters of main's ``Chi2DirectMap.fit``: the count density of
    the non-zero values on log-spaced bins from the smallest to the
    largest; each step takes the bin centre where ``|b|`` is largest,
    ``b = x / (x + 1) * density * prod_p r_p(x)``."""
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_matrix(X)
        values, cols = X.data, X.indices
    else:
        values = X.reshape(-1)
        cols = np.tile(np.arange(X.shape[1]), X.shape[0])
    keep = values > 0
    values = values[keep].astype(np.float64)
    cols = cols[keep]
    lo, hi = values.min(), values.max()
    edges = np.geomspace(lo, hi, n_bins + 1) if hi > lo else np.array([lo, hi])
    with np.errstate(over="ignore", under="ignore"):
        centres = np.sqrt(edges[:-1] * edges[1:])
    if not np.all((centres >= edges[:-1]) & (centres <= edges[1:])):
        centres = np.sqrt(edges[:-1]) * np.sqrt(edges[1:])
    bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0,
                   len(centres) - 1)
    pooled = np.bincount(bins, minlength=len(centres)) / values.size

    def greedy(density):
        b = centres / (centres + 1) * density
        k = np.empty((len(density), n_terms))
        for q in range(n_terms):
            k[:, q] = centres[np.argmax(np.abs(b), axis=1)]
            kq = k[:, q:q + 1]
            with np.errstate(over="ignore", invalid="ignore"):
                ratio = (centres - kq) / (centres + kq)
            if not np.isfinite(ratio).all():
                ratio = (centres / 2 - kq / 2) / (centres / 2 + kq / 2)
            b *= ratio
        return k

    if not per_dimension:
        return greedy(pooled[None, :])[0]
    d = X.shape[1]
    counts = np.bincount(cols * len(centres) + bins,
                         minlength=d * len(centres)).reshape(d, len(centres))
    totals = counts.sum(axis=1, keepdims=True)
    density = counts / np.maximum(totals, 1) + 0.1 * pooled
    density[totals[:, 0] == 0] = pooled
    return greedy(density)


# -- data ----------------------------------------------------------------------



def describe(X):
    v = X[X > 0]
    return (f"{X.shape[0]} x {X.shape[1]}, {np.mean(X < 1e-8):.0%} of the "
            f"values below 1e-8, non-zero values {v.min():.1e} .. {v.max():.1e}")


# -- errors ----------------------------------------------------------------------


def gram_error(Z, K):
    Z = (Z.toarray() if scipy.sparse.issparse(Z) else Z).astype(np.float64)
    return float(np.abs(Z @ Z.T - K).max())


def sampler_error(X, K, n_terms, intervals):
    """scikit-learn's best error at the smallest width >= n_terms, and its
    width and interval."""
    steps = n_terms // 2 + 1
    errors = []
    for interval in intervals:
        sampler = AdditiveChi2Sampler(sample_steps=steps, sample_interval=interval)
        errors.append((gram_error(sampler.fit_transform(X), K), interval))
    error, interval = min(errors)
    return error, 2 * steps - 1, interval


def error_table(X, intervals):
    """Rows (terms, old, new, sklearn) of the max abs error, relative to
    the largest kernel value."""
    K = additive_chi2_kernel(X)
    scale = K.max()
    rows = []
    for n_terms in TERMS:
        old = gram_error(Chi2DirectMap(k=old_fit(X, n_terms)).transform(X), K)
        new = gram_error(Chi2DirectMap(n_terms).fit_transform(X), K)
        row = [str(n_terms), f"{old / scale:.2e}", f"{new / scale:.2e}"]
        if AdditiveChi2Sampler is not None:
            err, width, interval = sampler_error(X, K, n_terms, intervals)
            row.append(f"{err / scale:.2e} ({width} features, interval "
                       f"{interval:.2f})")
            row.append("yes" if new < err else "**no**")
        rows.append(row)
    return rows


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table_header():
    header = ["terms", "old rule", "new fit"]
    if AdditiveChi2Sampler is not None:
        header += ["scikit-learn, best interval", "new < scikit-learn"]
    return header


# -- convergence factors ----------------------------------------------------


def convergence(X, tol=1e-6, **kwargs):
    """Errors (relative) with 2, 6, 10, ... terms until at most `tol`; the
    smallest factor of 4 more terms while the next error is above `tol`."""
    X64 = X.toarray() if scipy.sparse.issparse(X) else X
    K = additive_chi2_kernel(np.asarray(X64, dtype=np.float64))
    errors = []
    for n_terms in range(2, 31, 4):
        errors.append(gram_error(Chi2DirectMap(n_terms, **kwargs).fit_transform(X), K)
                      / K.max())
        if errors[-1] <= tol:
            break
    e = np.array(errors)
    ratios = [a / b for a, b in itertools.pairwise(e) if b > tol]
    reached = 2 + 4 * (len(e) - 1) if e[-1] <= tol else None
    return e, min(ratios) if ratios else np.inf, reached


VARIANTS = [("float32", "sparse-0.02"), ("float32", "multiscale-rows"),
            ("csr", "sparse-0.05"), ("per_dimension", "sparse-0.02"),
            ("per_dimension", "multiscale-bins")]


def factor_rows(cases, seeds):
    rows = []
    for variant, kind in cases:
        factors, reached, first = [], [], None
        for seed in seeds:
            X = chi2_histograms(kind, seed)
            kwargs = {"per_dimension": variant == "per_dimension"}
            if variant == "float32":
                X = X.astype(np.float32)
            elif variant == "csr":
                X = scipy.sparse.csr_matrix(X)
            e, factor, at = convergence(X, **kwargs)
            factors.append(factor)
            reached.append(at)
            if first is None:
                first = e
        name = kind if variant is None else f"{kind}, {variant}"
        rows.append([name, " ".join(f"{v:.1e}" for v in first),
                     " ".join(f"{f:.1f}" for f in factors), f"{min(factors):.1f}",
                     str(max(r if r is not None else 99 for r in reached))])
    return rows


# -- fit time ----------------------------------------------------------------------


def best_time(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def fit_times(repeat):
    rng = np.random.default_rng(0)
    wide = rng.dirichlet(np.full(300, 0.05), size=20_000)
    cases = [
        ("100,000 x 50, Dirichlet(0.5)", rng.dirichlet(np.full(50, 0.5), size=100_000)),
        ("20,000 x 300, Dirichlet(0.05)", wide),
        ("20,000 x 300, Dirichlet(0.05), CSR (values < 1e-8 dropped)",
         scipy.sparse.csr_matrix(np.where(wide < 1e-8, 0, wide))),
        ("20,000 x 300, bag of words (asv), dense", bag_of_words(20_000)),
        ("20,000 x 300, bag of words (asv), CSR",
         scipy.sparse.csr_matrix(bag_of_words(20_000))),
    ]
    rows = []
    for name, X in cases:
        for per_dimension in (False, True):
            def old_rule(X=X, per_dimension=per_dimension):
                return old_fit(X, 5, per_dimension)

            def new_fit(X=X, per_dimension=per_dimension):
                return Chi2DirectMap(5, per_dimension=per_dimension).fit(X)

            old = best_time(old_rule, repeat)
            new = best_time(new_fit, repeat)
            rows.append([name, str(per_dimension), f"{old * 1e3:.0f}",
                         f"{new * 1e3:.0f}", f"{new / old:.2f}"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds, 7 intervals, 2 timing runs")
    args = parser.parse_args()
    seeds = range(2) if args.quick else range(6)
    intervals = np.geomspace(0.05, 2.0, 7 if args.quick else 25)
    repeat = 2 if args.quick else 7

    print(f"{machine()}\n")
    print("## 1. The issue's table: max abs kernel error, 300 x 300\n")
    for alpha in (0.05, 0.02):
        X = np.random.default_rng(0).dirichlet(np.full(300, alpha), size=300)
        print(f"Dirichlet({alpha}): {describe(X)}\n")
        print(markdown(table_header(), error_table(X, intervals)) + "\n")
        print("The parameters with 8 terms: old rule "
              f"{np.array2string(old_fit(X, 8), precision=1)}; new fit "
              f"{np.array2string(Chi2DirectMap(8).fit(X).k_, precision=1)}\n")

    print("## 2. Other histograms: max abs kernel error / largest kernel "
          "value\n")
    for kind in CHI2_KINDS[2:]:
        X = chi2_histograms(kind)
        print(f"{kind}: {describe(X)}\n")
        print(markdown(table_header(), error_table(X, intervals)) + "\n")

    print("## 3. Convergence: the factor of 4 more terms\n")
    print(f"Seeds {seeds.start}-{seeds.stop - 1}; errors relative to the "
          "largest kernel value, with 2, 6, 10, ... terms until <= 1e-6 "
          "(seed 0 shown); factor: the smallest ratio of an error to the "
          "next while that is above 1e-6, per seed; terms: the most terms "
          "any seed needed to reach 1e-6.\n")
    header = ["data", "errors, seed 0", "factor per seed", "smallest", "terms"]
    rows = factor_rows([(None, kind) for kind in CHI2_KINDS], seeds)
    print(markdown(header, rows) + "\n")
    print(markdown(header, factor_rows(VARIANTS, seeds)) + "\n")

    print("## 4. Fit time, 5 terms (ms, best of "
          f"{repeat}; one thread)\n")
    print(markdown(["data", "per_dimension", "old rule", "new fit", "new / old"],
                   fit_times(repeat)))


if __name__ == "__main__":
    main()
