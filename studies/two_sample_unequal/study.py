"""The aggregated test of samples of unequal sizes: swaps of paired points
(the default) against permutations of the pooled sample (the previous
resampling), on the same data: level under the null and power under the
alternatives of the aggregated test's study (``two_sample_study.py``:
a shift of the mean, a larger spread, a mixture), d = 3.

Both are randomization tests over a group of permutations of the pooled
sample, so both are exact; the swaps cost a quadratic form of min(n, m)^2
per resample, the permutations one of (n + m)^2. The package resamples
swaps only: for the permutations, the study has the test's statistics
computed in the permutation mode (`permutations`). Results go to
``two_sample_unequal_study.md``::

    python studies/two_sample_unequal/study.py
"""

import argparse
import contextlib
import os
import sys
import time
from unittest import mock

import numpy as np
import scipy.stats

import kernelmaps as km

# the asv package (benchmarks/benchmarks) beside the studies
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

from kernelmaps._two_sample.checks import Checked

ALPHA = 0.05
D = 3


def sample(rng, size, kind):
    """`size` points in 3-D: N(0, I), or an alternative."""
    Z = rng.normal(size=(size, D))
    if kind == "shift":
        Z[:, 0] += 0.35
    elif kind == "spread":
        Z *= 1.25
    elif kind == "mixture":  # a fifth of the points from a shifted component
        Z[rng.random(size) < 0.2] += 1.5
    return Z


def permutations():
    """A context in which the aggregated test of samples of unequal sizes
    resamples permutations of the pooled sample, not swaps of paired
    points: its statistics computed in the permutation mode."""
    mode = Checked.mode.fget

    def permuted(iv):
        return "permutation" if mode(iv) == "swap" else mode(iv)

    return mock.patch.object(Checked, "mode", property(permuted))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--power-reps", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lo, hi = (scipy.stats.binom.ppf(q, args.reps, ALPHA) / args.reps
              for q in (0.025, 0.975))
    lines = [
        f"Aggregated `mmd_test` (default kernels and bandwidths, B = (500, "
        f"500)) on samples of unequal sizes in {D}-D: swaps of paired points "
        f"against permutations, on the same data. Level: {args.reps} "
        f"repetitions under the null (binomial 95 % interval "
        f"[{lo:.3f}, {hi:.3f}]); power: {args.power_reps} per alternative "
        f"(the second sample from it).",
        "",
        f"Machine: {machine()}; kernelmaps {km.__version__}.",
        "",
        "| n, m | data | swaps | permutations | seconds (swaps / perms) |",
        "|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for n, m in ((100, 150), (200, 230)):
        for kind in ("null", "shift", "spread", "mixture"):
            reps = args.reps if kind == "null" else args.power_reps
            rng = np.random.default_rng(n * 1000 + m + len(kind))
            rates, seconds = [], []
            data = [(sample(rng, n, "null"), sample(rng, m, kind))
                    for _ in range(reps)]
            for context in (contextlib.nullcontext, permutations):
                start = time.perf_counter()
                with context():
                    p = [km.mmd_test(X, Y, method="aggregated", n_resamples=500,
                                     rng=r, workers=1).pvalue
                         for r, (X, Y) in enumerate(data)]
                seconds.append(time.perf_counter() - start)
                rates.append(float(np.mean(np.array(p) <= ALPHA)))
            line = (f"| {n}, {m} | {kind} | {rates[0]:.3f} | {rates[1]:.3f} | "
                    f"{seconds[0]:.0f} / {seconds[1]:.0f} |")
            lines.append(line)
            print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
