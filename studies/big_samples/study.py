"""mmd_test for big samples (issue 39): the tests on explicit features and
the cross test, their level, power and time.

``--level``: the rejection rate at alpha = 0.05 under the null (X and Y
standard normal, d = 16) of the permutation test on 1000 random Fourier
features (n = m = 2000, B = 999), of the cross test (n = m = 500) and of
the linear test (n = m = 2000, its default 400 features), over
``--reps`` repetitions, with its Monte Carlo standard error.
``--power``: the p-values over 20 seeds on the table's data of the issue
(n = m = 5000, d = 64, Y shifted by 0.1 in one coordinate) of the
permutation test (exact kernel), the cross test and the default linear
test, and the fraction below 0.05.
``--time``: the permutation test on 1000 features at n = m = 10^6, d = 16
(time, peak memory), and the cross test at n = m = 50,000, d = 64 beside
the unbiased MMD^2 alone (``mmd`` of the two samples as two sets).

Results (markdown, with the machine) to stdout::

    python -P studies/big_samples/study.py --level --power --time
"""

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km


def null_samples(seed, n, d):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d))


def shifted(seed, n=5000, d=64, shift=0.1):
    X, Y = null_samples(seed, n, d)
    Y[:, 0] += shift
    return X, Y


def level(reps):
    rows = []
    for name, n, kwargs in (
            ("permutation, feature_map=1000", 2000, {"feature_map": 1000}),
            ("cross", 500, {"method": "cross"}),
            ("linear (default features)", 2000, {"method": "linear"})):
        p = np.array([km.mmd_test(*null_samples(1000 + s, n, 16), rng=s,
                                  **kwargs).pvalue for s in range(reps)])
        rate = np.mean(p <= 0.05)
        se = np.sqrt(0.05 * 0.95 / reps)
        rows.append(f"| {name} | {n} | {reps} | {rate:.3f} | {se:.3f} | "
                    f"{(rate - 0.05) / se:+.1f} |")
    return ("| test | n = m | repetitions | rejection rate at 0.05 | "
            "MC standard error | (rate - 0.05) / SE |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows))


def power(seeds=20):
    rows = []
    for name, kwargs in (("permutation (exact kernel)", {}),
                         ("permutation, feature_map=1000", {"feature_map": 1000}),
                         ("cross", {"method": "cross"}),
                         ("linear (default features)", {"method": "linear"})):
        p, seconds = [], []
        for s in range(seeds):
            X, Y = shifted(s)
            t = time.perf_counter()
            p.append(km.mmd_test(X, Y, rng=s, **kwargs).pvalue)
            seconds.append(time.perf_counter() - t)
        p = np.array(p)
        rows.append(f"| {name} | {np.mean(p <= 0.05):.2f} | {np.median(p):.3g} | "
                    f"{np.median(seconds):.2f} |")
    return ("| test | power at 0.05 (20 seeds) | median p | median time (s) |\n"
            "|---|---|---|---|\n" + "\n".join(rows))


ONE_RUN = """
import json, resource, sys, time
import numpy as np
import kernelmaps as km
n, d, r = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
Y[:, 0] += 0.02
start = time.perf_counter()
res = km.mmd_test(X, Y, feature_map=r, rng=0)
print(json.dumps({"seconds": time.perf_counter() - start, "pvalue": res.pvalue,
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                  / 2**20}))
"""


def timing():
    import json

    out = subprocess.run([sys.executable, "-P", "-c", ONE_RUN, "1000000", "16",
                          "1000"], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    lines = [f"Permutation test on 1000 random Fourier features, n = m = 10^6, "
             f"d = 16, B = 999 (Y shifted by 0.02): **{r['seconds']:.1f} s**, "
             f"peak RSS **{r['peak_gib']:.2f} GiB**, p = {r['pvalue']:.3g}.", ""]
    X, Y = shifted(0, 50000, 64)
    gamma = km.median_heuristic(np.concatenate([X, Y]))
    start = time.perf_counter()
    km.mmd([X], [Y], gamma=gamma, squared=True, unbiased=True)
    alone = time.perf_counter() - start
    start = time.perf_counter()
    res = km.mmd_test(X, Y, method="cross", gamma=gamma)
    cross = time.perf_counter() - start
    lines.append(f"Cross test, n = m = 50,000, d = 64 (shift 0.1): **{cross:.1f} s**"
                 f" against {alone:.1f} s for the unbiased MMD^2 alone "
                 f"(**{cross / alone:.2f}x**), p = {res.pvalue:.3g}.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--level", action="store_true")
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--time", action="store_true")
    args = parser.parse_args()
    print(machine(), "\n")
    if args.level:
        print(level(args.reps), "\n", flush=True)
    if args.power:
        print(power(), "\n", flush=True)
    if args.time:
        print(timing(), flush=True)
    print("\npeak RSS of this process:",
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
