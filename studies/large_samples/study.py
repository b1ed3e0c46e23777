"""mmd_test beyond the working memory: the acceptance checks of issue 38.

1. ``--sizes 50000 100000``: the default test (permutation, B = 999) at n =
   m, d = 64, Y shifted by 0.1 in one coordinate, each in a fresh process
   (its peak resident memory from ``getrusage``), against the bound 1.5
   N^2 (d + B) / 2 multiply-adds at the GEMM rate NumPy reaches on this
   machine (a float64 product of 4096 x 4096 by 4096 x 1000, best of 3).
2. ``--agree 3000``: every resampling method at n = m (and unequal sizes
   for the aggregated test's swaps), in memory and on blocks (a budget of
   64 MiB): the p-values, and the largest difference of the statistics,
   relative to the statistic and to the largest resampled one.

Results (markdown, with the machine) to stdout, or ``--out``::

    python studies/large_samples/study.py --sizes 50000 --agree 3000
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# the asv package (benchmarks/benchmarks) beside the studies
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km

D = 64
B = 999
ONE_RUN = """
import json, resource, sys, time
import numpy as np
import kernelmaps as km
n, d, budget = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
X = rng.normal(size=(n, d))
Y = rng.normal(size=(n, d))
Y[:, 0] += 0.1
start = time.perf_counter()
res = km.mmd_test(X, Y, rng=0, working_memory=None if budget == "None"
                  else float(budget))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "pvalue": res.pvalue,
                  "statistic": res.statistic,
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                  / 2**20}))
"""


def gemm_rate():
    """Multiply-adds per second of NumPy's float64 GEMM here, best of 3."""
    rng = np.random.default_rng(0)
    A, S = rng.random((4096, 4096)), rng.random((4096, 1000))
    A @ S
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        A @ S
        best = min(best, time.perf_counter() - start)
    return 4096 * 4096 * 1000 / best


def large(sizes, budget):
    rate = gemm_rate()
    lines = [f"GEMM rate (float64, 4096 x 4096 x 1000): {rate / 1e9:.1f} G "
             f"multiply-adds/s", "",
             "| n = m | time (s) | bound 1.5 N^2 (d + B) / 2 / rate (s) | ratio "
             "| peak RSS (GiB) | p-value |", "|---|---|---|---|---|---|"]
    for n in sizes:
        out = subprocess.run([sys.executable, "-P", "-c", ONE_RUN, str(n), str(D),
                              str(budget)], capture_output=True, text=True,
                             check=True)
        r = json.loads(out.stdout.splitlines()[-1])
        N = 2 * n
        floor = N * N * (D + B) / 2 / rate
        lines.append(f"| {n} | {r['seconds']:.1f} | {1.5 * floor:.1f} | "
                     f"{r['seconds'] / floor:.2f} x the floor | "
                     f"{r['peak_gib']:.2f} | {r['pvalue']:.4g} |")
    return lines


def agree(n):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, D))
    Y = rng.normal(size=(n, D))
    Y[:, 0] += 0.1
    Y2 = rng.normal(size=(n // 2 * 3, D))
    cases = [("permutation", X, Y), ("wild_bootstrap", X, Y),
             ("aggregated", X, Y), ("aggregated", X, Y2), ("fuse", X, Y)]
    lines = ["| method | n, m | p in memory | p on blocks | time in memory (s) | "
             "time on blocks (s) | max rel. diff. (statistic) | max diff. / "
             "max null |", "|---|---|---|---|---|---|---|---|"]
    for method, A, C in cases:
        res, took = [], []
        for budget in (1e6, 64):
            start = time.perf_counter()
            res.append(km.mmd_test(A, C, method=method, rng=0,
                                   working_memory=budget))
            took.append(time.perf_counter() - start)
        whole, blocks = res
        s0, s1 = np.asarray(whole.statistic), np.asarray(blocks.statistic)
        top = np.abs(whole.null_distribution).max()
        diff = max(np.abs(s0 - s1).max(),
                   np.abs(whole.null_distribution - blocks.null_distribution).max())
        lines.append(f"| {method} | {len(A)}, {len(C)} | {whole.pvalue:.6g} | "
                     f"{blocks.pvalue:.6g} | {took[0]:.1f} | {took[1]:.1f} | "
                     f"{np.max(np.abs(s0 - s1) / np.abs(s0)):.2g} | "
                     f"{diff / top:.2g} |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[])
    parser.add_argument("--budget", default="None")
    parser.add_argument("--agree", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lines = [f"Machine: {machine()}", ""]
    if args.sizes:
        lines += [*large(args.sizes, args.budget), ""]
    if args.agree:
        lines += agree(args.agree)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
