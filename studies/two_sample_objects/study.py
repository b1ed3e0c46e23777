"""Level and power of `mmd_test` on samples of objects: sets (mean map,
MMD kernel, Renyi), histograms (chi2, JS), Gaussians (expected kernel) and
a precomputed kernel matrix, at n = m = 30 and 30 against 60 objects.

Under the null both samples come from one distribution; the rejection
rate at alpha = 0.05 over R repetitions must lie in the binomial 95 %
interval of 0.05. Under the alternative the second sample differs clearly
(a shift of the sets' points, a tilt of the histograms' bins, a shift of
the Gaussians' means), and the table gives the power. The results go to
``two_sample_objects_study.md``::

    python studies/two_sample_objects/study.py            # R = 1000
    python studies/two_sample_objects/study.py --reps 100 # a quick look
"""

import argparse
import os
import sys
import time
import zlib

import numpy as np
import scipy.stats

import kernelmaps as km

# the asv package (benchmarks/benchmarks) beside the studies
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

ALPHA = 0.05


def sets(rng, n, alt):
    """Point clouds of 10 to 20 points in 2-D; the alternative's spread
    1.3 times larger."""
    scale = 1.3 if alt else 1.0
    return [scale * rng.normal(size=(int(rng.integers(10, 21)), 2))
            for _ in range(n)]


def histograms(rng, n, alt):
    """Histograms of 20 bins, 50 counts each from Dirichlet(1) bin
    probabilities; the alternative's Dirichlet weights rising from 1 to 3
    over the bins."""
    weights = 1.0 + (2.0 if alt else 0.0) * np.linspace(0, 1, 20)
    p = rng.dirichlet(weights, n)
    counts = np.array([rng.multinomial(50, q) for q in p], dtype=float)
    return counts / 50


def gaussians(rng, n, alt):
    """Isotropic Gaussians in 2-D, means N(0, I) (alternative: shifted by
    1 along the first axis), variances uniform on [0.2, 1]."""
    means = rng.normal(size=(n, 2)) + ([1.0, 0.0] if alt else 0.0)
    return means, rng.uniform(0.2, 1.0, n)


CASES = {
    # name: (objects, kernel for mmd_test, kernel_params)
    "sets, mean_map": (sets, "mean_map", None),
    "sets, mmd": (sets, "mmd", None),
    "sets, renyi": (sets, "renyi", None),
    "histograms, chi2": (histograms, "chi2", None),
    "histograms, js": (histograms, "js", None),
    "Gaussians, expected": (gaussians, "expected", None),
    "precomputed (exp_chi2)": (histograms, "precomputed", None),
}


def one_test(case, rng, n, m, alt, seed):
    make, kernel, params = CASES[case]
    X, Y = make(rng, n, False), make(rng, m, alt)
    if kernel == "precomputed":
        K = km.exp_chi2_kernel(np.concatenate([X, Y]), beta=2.0)
        return km.mmd_test(K, np.repeat([0, 1], [n, m]), kernel="precomputed",
                           n_resamples=199, rng=seed, workers=1).pvalue
    return km.mmd_test(X, Y, kernel=kernel, kernel_params=params,
                       n_resamples=199, rng=seed, workers=1).pvalue


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--power-reps", type=int, default=500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lo, hi = (scipy.stats.binom.ppf(q, args.reps, ALPHA) / args.reps
              for q in (0.025, 0.975))
    lines = [
        f"`mmd_test` on objects: level and power at alpha = {ALPHA}, "
        f"permutation test (B = 199), {args.reps} repetitions under the null "
        f"(binomial 95 % interval of the rate: [{lo:.3f}, {hi:.3f}]), "
        f"{args.power_reps} under the alternative.",
        "",
        f"Machine: {machine()}; kernelmaps {km.__version__}.",
        "",
        "| objects, kernel | n, m | level | inside | power | seconds |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    failures = 0
    for case in CASES:
        for n, m in ((30, 30), (30, 60)):
            rng = np.random.default_rng(zlib.crc32(f"{case} {n} {m}".encode()))
            start = time.perf_counter()
            null = np.array([one_test(case, rng, n, m, False, r)
                             for r in range(args.reps)])
            alt = np.array([one_test(case, rng, n, m, True, r)
                            for r in range(args.power_reps)])
            rate = float(np.mean(null <= ALPHA))
            inside = lo <= rate <= hi
            failures += not inside
            line = (f"| {case} | {n}, {m} | {rate:.3f} | "
                    f"{'yes' if inside else '**no**'} | "
                    f"{np.mean(alt <= ALPHA):.3f} | "
                    f"{time.perf_counter() - start:.0f} |")
            lines.append(line)
            print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return failures


if __name__ == "__main__":
    raise SystemExit(main())
