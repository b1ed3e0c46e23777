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
``--only NAME``: the rows of ``--level`` and ``--power`` whose test's name
starts with NAME (e.g. ``linear``).
``--tail`` (issue 50): the linear test on 100 random Fourier features, n =
m = 300, d = 5, with its exact null tail and with the four-cumulant
chi-square it used before (`four_cumulant_sf`, as it was), on the same
data and features: the ratio of the p-values, the level (``--tail-reps``
null data sets, at 0.05 and 0.01) and the power (Y shifted by 0.25 in one
coordinate).

Results (markdown, with the machine) to stdout::

    python -P studies/big_samples/study.py --level --power --time
    python -P studies/big_samples/study.py --tail
"""

import argparse
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np
import scipy.stats

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


def level(reps, only=""):
    rows = []
    for name, n, kwargs in (
            ("permutation, feature_map=1000", 2000, {"feature_map": 1000}),
            ("cross", 500, {"method": "cross"}),
            ("linear (default features)", 2000, {"method": "linear"})):
        if not name.startswith(only):
            continue
        p = np.array([km.mmd_test(*null_samples(1000 + s, n, 16), rng=s,
                                  **kwargs).pvalue for s in range(reps)])
        rate = np.mean(p <= 0.05)
        se = np.sqrt(0.05 * 0.95 / reps)
        rows.append(f"| {name} | {n} | {reps} | {rate:.3f} | {se:.3f} | "
                    f"{(rate - 0.05) / se:+.1f} |")
    return ("| test | n = m | repetitions | rejection rate at 0.05 | "
            "MC standard error | (rate - 0.05) / SE |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows))


def power(seeds=20, only=""):
    rows = []
    for name, kwargs in (("permutation (exact kernel)", {}),
                         ("permutation, feature_map=1000", {"feature_map": 1000}),
                         ("cross", {"method": "cross"}),
                         ("linear (default features)", {"method": "linear"})):
        if not name.startswith(only):
            continue
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


def four_cumulant_sf(q, weights):
    """The linear test's null tail before issue 50, as it was: the
    chi-square with the four cumulants of ``sum_j w_j chi2_1`` (Liu, Tang
    and Zhang, 2009), but for positive weights always the branch of scale
    ``1 / sqrt(s2)`` and ``c2^3 / c3^2`` degrees of freedom (the published
    formula has scale ``1 / s1`` there): p-values too large."""
    c1, c2, c3, c4 = (math.fsum(weights**k) for k in (1, 2, 3, 4))
    s1, s2 = c3 / c2**1.5, c4 / c2**2
    if s1**2 > s2:
        a = 1.0 / (s1 - math.sqrt(s1**2 - s2))
        delta = s1 * a**3 - a**2
        dof = a**2 - 2 * delta
    else:
        a, delta, dof = 1.0 / math.sqrt(s2), 0.0, c2**3 / c3**2
    t = (q - c1) / math.sqrt(2 * c2) * math.sqrt(2) * a + dof + delta
    if delta > 0:
        return float(scipy.stats.ncx2.sf(t, dof, delta))
    return float(scipy.stats.chi2.sf(t, dof))


def tail(reps, shift=0.25, power_reps=1000):
    """The linear test (100 features, n = m = 300, d = 5) with the exact
    tail and with `four_cumulant_sf`, on the same data and features."""
    from kernelmaps._two_sample import linear

    exact = linear.weighted_chi2_sf

    def both(seed, delta):
        rng = np.random.default_rng([50, seed])
        X, Y = rng.normal(size=(300, 5)), rng.normal(size=(300, 5))
        Y[:, 0] += delta
        out = []
        for sf in (exact, four_cumulant_sf):
            linear.weighted_chi2_sf = sf
            try:
                out.append(km.mmd_test(X, Y, method="linear", feature_map=100,
                                       rng=seed).pvalue)
            finally:
                linear.weighted_chi2_sf = exact
        return out

    start = time.perf_counter()
    null = np.array([both(s, 0.0) for s in range(reps)])
    alt = np.array([both(10**6 + s, shift) for s in range(power_reps)])
    seconds = time.perf_counter() - start
    lines = [f"{reps} null data sets and {power_reps} shifted by {shift} "
             f"({seconds:.0f} s for both tails of all):", "",
             "| tail | level at 0.05 | level at 0.01 | KS p (null p-values vs "
             "U(0, 1)) | power at 0.05 (shift " + f"{shift}) |",
             "|---|---|---|---|---|"]
    for i, name in enumerate(("exact (issue 50)", "four-cumulant (before)")):
        lines.append(
            f"| {name} | {np.mean(null[:, i] <= 0.05):.4f} | "
            f"{np.mean(null[:, i] <= 0.01):.4f} | "
            f"{scipy.stats.kstest(null[:, i], 'uniform').pvalue:.3f} | "
            f"{np.mean(alt[:, i] <= 0.05):.3f} |")
    se = lambda p, r: math.sqrt(p * (1 - p) / r)  # noqa: E731
    gained = (alt[:, 0] <= 0.05).astype(float) - (alt[:, 1] <= 0.05)
    lines += ["", f"Monte Carlo standard errors: level at 0.05 "
              f"{se(0.05, reps):.4f}, at 0.01 {se(0.01, reps):.4f}; power "
              f"{se(np.mean(alt[:, 0] <= 0.05), power_reps):.3f}. Power of the "
              f"exact tail minus the old one's, on the same data sets: "
              f"{gained.mean():+.3f} (standard error "
              f"{gained.std(ddof=1) / math.sqrt(power_reps):.3f}; rejections "
              f"the old one missed {np.mean(gained > 0):.3f}, the reverse "
              f"{np.mean(gained < 0):.3f})."]
    p = np.concatenate([null, alt])
    middle = (p[:, 0] > 1e-3) & (p[:, 0] < 0.1)
    ratio = p[middle, 1] / p[middle, 0]
    lines.append(f"Old p / exact p where the exact one is in (0.001, 0.1) "
                 f"({middle.sum()} tests): median {np.median(ratio):.3f}, "
                 f"10 % {np.percentile(ratio, 10):.3f}, 90 % "
                 f"{np.percentile(ratio, 90):.3f}.")
    return "\n".join(lines)


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
    parser.add_argument("--only", default="")
    parser.add_argument("--tail", action="store_true")
    parser.add_argument("--tail-reps", type=int, default=2000)
    args = parser.parse_args()
    print(machine(), "\n")
    if args.level:
        print(level(args.reps, args.only), "\n", flush=True)
    if args.power:
        print(power(only=args.only), "\n", flush=True)
    if args.tail:
        print(tail(args.tail_reps), "\n", flush=True)
    if args.time:
        print(timing(), flush=True)
    print("\npeak RSS of this process:",
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
