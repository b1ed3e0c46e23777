"""Statistical acceptance study of `kernelmaps.mmd_test` (issue 20).

Two parts, each run writes its results (every p-value or decision) to a JSON
file, and ``report`` turns the JSON files into the markdown tables of
``studies/two_sample/results.md``:

- ``calibration``: both samples from the same distribution; for every
  method, distribution and pair of sizes, the rejection rate at alpha =
  0.05 over R repetitions, the exact binomial 95 % interval around 0.05 for
  R (``scipy.stats.binom.interval(0.95, R, 0.05) / R``), and the
  Kolmogorov-Smirnov p-value of the R p-values against U(0, 1).
- ``power``: the rejection rate at alpha = 0.05 on three alternatives (a
  Gaussian mean shift, Gaussian vs Laplace of equal mean and variance, and
  the "blobs" of Gretton et al. 2012) of kernelmaps' tests, hyppo's MMD
  test at the same number of resamples, and each single kernel of the
  aggregated test's collection alone.

Run on one thread, e.g.::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/two_sample/study.py \\
        calibration --reps 500 --out calibration.json
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/two_sample/study.py \\
        power --reps 200 --out power.json
    python studies/two_sample/study.py report calibration.json power.json \\
        > studies/two_sample/results.md

Every repetition's data come from ``numpy.random.default_rng([seed, cell,
rep])`` (``cell`` a CRC-32 of the distribution and sizes, so every method
of a calibration cell sees the same samples), and each test's resamples
from a generator seeded by the method too.
"""

import argparse
import json
import math
import os
import platform
import shlex
import sys
import time
import warnings
import zlib

import numpy as np
import scipy.stats

import kernelmaps as km

ALPHA = 0.05
METHODS = ("permutation", "wild_bootstrap", "aggregated", "linear")
DISTRIBUTIONS = ("gauss5", "t3_5", "mixture2", "gauss50")
SIZES = ((20, 20), (30, 50), (200, 200), (2000, 2000))
ALTERNATIVES = ("shift", "laplace", "blobs")
POWER_METHODS = ("permutation", "hyppo", "wild_bootstrap", "aggregated",
                 "linear", "singles")
# Mean shift of the first coordinate, and dimension of Gaussian vs Laplace
# (chosen by a pilot run so that the power spans about 0.1 to 0.95 over
# n = 25..200); blobs: a 3 x 3 grid, spacing 10, eigenvalue ratio 8 (the
# pilot found ratio 4 hardly detectable, power <= 0.1, by any of the tests
# at n <= 200).
SHIFT, SHIFT_DIM = 0.5, 5
LAPLACE_DIM = 1
BLOB_GRID, BLOB_SPACING, BLOB_RATIO = 3, 10.0, 8.0


# -- data ------------------------------------------------------------------

def null_sample(name, size, rng):
    """`size` points of the null distribution `name`."""
    if name == "gauss5":
        return rng.standard_normal((size, 5))
    if name == "gauss50":
        return rng.standard_normal((size, 50))
    if name == "t3_5":
        return rng.standard_t(3, size=(size, 5))
    if name == "mixture2":  # two unit Gaussians at (-2, 0) and (2, 0)
        centres = np.where(rng.random(size) < 0.5, -2.0, 2.0)
        Z = rng.standard_normal((size, 2))
        Z[:, 0] += centres
        return Z
    raise ValueError(name)


def blobs(size, rng, ratio):
    """Gretton et al. 2012's blobs: a 3 x 3 grid of Gaussians, spacing 10;
    unit covariance (ratio 1), or eigenvalues ratio : 1 along the diagonals
    of the plane (covariance [[1, c], [c, 1]], c = (ratio - 1) / (ratio +
    1): the unit blob stretched along 45 degrees)."""
    c = (ratio - 1.0) / (ratio + 1.0)
    L = np.linalg.cholesky(np.array([[1.0, c], [c, 1.0]]))
    centres = rng.integers(0, BLOB_GRID, size=(size, 2)) * BLOB_SPACING
    return centres + rng.standard_normal((size, 2)) @ L.T


def alternative(name, n, rng):
    """(X, Y), n points each, of the alternative `name`."""
    if name == "shift":
        X = rng.standard_normal((n, SHIFT_DIM))
        Y = rng.standard_normal((n, SHIFT_DIM))
        Y[:, 0] += SHIFT
        return X, Y
    if name == "laplace":  # both of mean 0 and variance 1 per coordinate
        X = rng.standard_normal((n, LAPLACE_DIM))
        Y = rng.laplace(scale=1 / math.sqrt(2), size=(n, LAPLACE_DIM))
        return X, Y
    if name == "blobs":
        return blobs(n, rng, 1.0), blobs(n, rng, BLOB_RATIO)
    raise ValueError(name)


def cell_key(*parts):
    """A stable integer for a cell (the seed of its data)."""
    return zlib.crc32(repr(parts).encode())


# -- calibration -----------------------------------------------------------

def calibration_cells(methods, distributions, sizes):
    """(method, distribution, n, m, n_resamples) of the plan: every method
    on the three null distributions (the linear test also on a 50-D
    Gaussian) at every size; the wild bootstrap at equal sizes only; the
    aggregated test with (500, 500) resamples and only the 5-D Gaussian at
    n = m = 2000 (36 min for 500 repetitions on one core)."""
    for n, m in sizes:
        for method in methods:
            if method == "wild_bootstrap" and n != m:
                continue
            for dist in distributions:
                if dist == "gauss50" and method != "linear":
                    continue
                if method == "aggregated" and n >= 2000:
                    if dist != "gauss5":
                        continue
                    B = (500, 500)
                elif method == "aggregated":
                    B = None  # the default (2000, 2000)
                elif method == "linear":
                    B = None
                else:
                    B = 999
                yield method, dist, n, m, B


def run_calibration(args):
    rows = []
    for method, dist, n, m, B in calibration_cells(args.methods, args.dists,
                                                   args.sizes):
        key = cell_key(dist, n, m)
        pvalues, rejects = [], []
        start = time.perf_counter()
        for rep in range(args.reps):
            rng = np.random.default_rng([args.seed, key, rep])
            X, Y = null_sample(dist, n, rng), null_sample(dist, m, rng)
            res = km.mmd_test(X, Y, method=method, n_resamples=B,
                              rng=np.random.default_rng(
                                  [args.seed, key, rep, METHODS.index(method)]),
                              workers=1)
            pvalues.append(res.pvalue)
            rejects.append(bool(res.reject))
        seconds = time.perf_counter() - start
        row = dict(method=method, dist=dist, n=n, m=m, B=B, reps=args.reps,
                   pvalues=pvalues, rejects=rejects, seconds=seconds)
        row.update(calibration_summary(pvalues, rejects))
        print(format_calibration_row(row), flush=True)
        rows.append(row)
    return rows


def calibration_summary(pvalues, rejects):
    R = len(rejects)
    low, high = scipy.stats.binom.interval(0.95, R, ALPHA)
    rate = float(np.mean(rejects))
    ks = float(scipy.stats.kstest(pvalues, "uniform").pvalue)
    return dict(rate=rate, low=low / R, high=high / R,
                inside=bool(low / R <= rate <= high / R), ks=ks,
                ks_ok=ks > 0.01)


def format_calibration_row(r):
    B = "default" if r["B"] is None else str(r["B"]).replace(" ", "")
    if r["method"] == "linear":
        B = "-"
    return (f"| {r['method']} | {r['dist']} | {r['n']} | {r['m']} | {B} | "
            f"{r['reps']} | {r['rate']:.3f} | [{r['low']:.3f}, "
            f"{r['high']:.3f}] | {'yes' if r['inside'] else '**no**'} | "
            f"{r['ks']:.3f} | {'yes' if r['ks_ok'] else '**no**'} | "
            f"{1e3 * r['seconds'] / r['reps']:.1f} |")


# -- power -----------------------------------------------------------------

def hyppo_pvalue(X, Y, B, seed):
    from hyppo.ksample import MMD

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(MMD().test(X, Y, reps=B, workers=1, auto=False,
                                random_state=seed % 2**31).pvalue)


def power_decisions(method, X, Y, B, single_B, seed):
    """The decisions (a list: several for "singles") of one method on one
    data set, with the members of the aggregated collection for
    "singles"."""
    if method == "hyppo":
        return [hyppo_pvalue(X, Y, B, seed) <= ALPHA]
    if method == "singles":
        # The collection of the default aggregated test (its gammas follow
        # from the pooled sample only: no resampling needed to find them).
        agg = km.mmd_test(X, Y, method="aggregated", n_resamples=1, rng=seed,
                          workers=1)
        single = "wild_bootstrap" if len(X) == len(Y) else "permutation"
        return [bool(km.mmd_test(X, Y, method=single, kernel=str(k),
                                 gamma=float(g), n_resamples=single_B,
                                 rng=np.random.default_rng([seed, i]),
                                 workers=1).reject)
                for i, (k, g) in enumerate(zip(agg.kernel, agg.gamma,
                                                   strict=True))]
    n_resamples = {"aggregated": None, "linear": None}.get(method, B)
    return [bool(km.mmd_test(X, Y, method=method, n_resamples=n_resamples,
                             rng=seed, workers=1).reject)]


def run_power(args):
    rows = []
    for alt in args.alternatives:
        for n in args.power_sizes:
            key = cell_key(alt, n)
            for method in args.power_methods:
                decisions = []
                start = time.perf_counter()
                for rep in range(args.reps):
                    rng = np.random.default_rng([args.seed, key, rep])
                    X, Y = alternative(alt, n, rng)
                    seed = zlib.crc32(repr((args.seed, key, rep,
                                            method)).encode())
                    decisions.append(power_decisions(
                        method, X, Y, args.resamples, args.single_resamples,
                        seed))
                seconds = time.perf_counter() - start
                row = dict(alternative=alt, n=n, method=method,
                           reps=args.reps, B=args.resamples,
                           single_B=args.single_resamples,
                           decisions=decisions, seconds=seconds)
                if method == "singles":
                    agg = km.mmd_test(X, Y, method="aggregated",
                                      n_resamples=1, workers=1)
                    row["members"] = [str(k) for k in agg.kernel]
                power = np.mean(decisions, axis=0)
                print(f"{alt} n={n} {method}: power "
                      f"{np.round(power, 3).tolist()} "
                      f"({1e3 * seconds / args.reps:.1f} ms/test)",
                      flush=True)
                rows.append(row)
    return rows


# -- report ----------------------------------------------------------------

def report(paths, summary=None):
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    out = [HEADER]
    if summary:
        with open(summary) as f:
            out.append(f.read())
    calibration = [r for r in runs if r["part"] == "calibration"]
    power = [r for r in runs if r["part"] == "power"]
    if calibration:
        out.append(CALIBRATION_TEXT)
        out += [run_header(r) for r in calibration]
        out.append(CALIBRATION_COLUMNS)
        rows = [row for r in calibration for row in r["rows"]]
        order = {m: i for i, m in enumerate(METHODS)}
        rows.sort(key=lambda r: (order[r["method"]], r["n"], r["m"],
                                 DISTRIBUTIONS.index(r["dist"]), r["seed"]))
        for row in rows:
            line = format_calibration_row(row)
            out.append(line if row["seed"] == calibration[0]["seed"] else
                       line.replace(f"| {row['dist']} |",
                                    f"| {row['dist']} (seed {row['seed']}) |"))
        failures = [r for r in rows if not (r["inside"] and r["ks_ok"])]
        out.append(f"\n{len(rows)} cells, {len(failures)} outside the "
                   f"binomial interval or with KS p <= 0.01.\n")
    if power:
        out.append(POWER_TEXT)
        out += [run_header(r) for r in power]
        out += power_tables([row for r in power for row in r["rows"]])
    return "\n".join(out)


def power_tables(rows):
    cells = {}
    for row in rows:
        cells.setdefault((row["alternative"], row["n"]), {})[row["method"]] = row
    shown = [m for m in POWER_METHODS if any(m in c for c in cells.values())]
    names = {"singles": "best single", "wild_bootstrap": "wild bootstrap"}
    out = ["\nPower at alpha = 0.05 (standard error in parentheses):\n",
           "| alternative | n = m | " + " | ".join(names.get(m, m)
                                                  for m in shown) + " |",
           "|---|---:|" + "---:|" * len(shown)]
    accept = ["\nAcceptance (paired differences on the same data sets, "
              "standard error in parentheses; 'ok' when the difference is "
              "at least -2 standard errors, resp. at least -0.05 - 2 "
              "standard errors):\n",
              "| alternative | n = m | permutation - hyppo | ok | "
              "aggregated - best single | ok | best single (member) |",
              "|---|---:|---:|---|---:|---|---|"]
    for (alt, n), cell in sorted(cells.items(),
                                 key=lambda c: (ALTERNATIVES.index(c[0][0]),
                                                c[0][1])):
        values = []
        for m in shown:
            if m not in cell:
                values.append("")
                continue
            d = np.asarray(cell[m]["decisions"], dtype=float)
            d = d[:, d.mean(0).argmax()] if m == "singles" else d[:, 0]
            values.append(f"{d.mean():.3f} ({se(d):.3f})")
        out.append(f"| {alt} | {n} | " + " | ".join(values) + " |")
        line = [alt, str(n)]
        for a, b, margin in (("permutation", "hyppo", 0.0),
                             ("aggregated", "singles", 0.05)):
            if a in cell and b in cell:
                da = np.asarray(cell[a]["decisions"], dtype=float)[:, 0]
                db = np.asarray(cell[b]["decisions"], dtype=float)
                best = db.mean(0).argmax()
                diff = da - db[:, best]
                ok = diff.mean() >= -margin - 2 * se(diff)
                line += [f"{diff.mean():+.3f} ({se(diff):.3f})",
                         "yes" if ok else "**no**"]
            else:
                line += ["", ""]
        if "singles" in cell:
            db = np.asarray(cell["singles"]["decisions"], dtype=float)
            best = int(db.mean(0).argmax())
            line.append(member_labels(cell["singles"]["members"])[best])
        else:
            line.append("")
        accept.append("| " + " | ".join(line) + " |")
    out += accept
    out.append(singles_table(cells))
    return out


def member_labels(members):
    """lap1..lap10, rbf1..rbf10: each kernel's members, numbered from the
    widest bandwidth."""
    counts, labels = {}, []
    for k in members:
        counts[k] = counts.get(k, 0) + 1
        labels.append(f"{k[:3]}{counts[k]}")
    return labels


def singles_table(cells):
    """The power of every member of the collection, one row per cell."""
    with_singles = {k: c["singles"] for k, c in cells.items() if "singles" in c}
    if not with_singles:
        return ""
    heads = member_labels(next(iter(with_singles.values()))["members"])
    out = ["\nPower of each single test of the aggregated collection "
           "(members in the order of `res.kernel`, `res.gamma`: laplacian "
           "then rbf, each from the smallest gamma, i.e. the widest "
           "bandwidth, to the largest):\n",
           "| alternative | n = m | " + " | ".join(heads) + " |",
           "|---|---:|" + "---:|" * len(heads)]
    for (alt, n), row in sorted(with_singles.items(),
                                key=lambda c: (ALTERNATIVES.index(c[0][0]),
                                               c[0][1])):
        power = np.mean(row["decisions"], axis=0)
        out.append(f"| {alt} | {n} | " + " | ".join(f"{p:.2f}" for p in power)
                   + " |")
    return "\n".join(out)


def se(d):
    return float(np.std(d, ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0


def run_header(run):
    return (f"\n- `{run['command']}`: seed {run['seed']}, {run['wall']:.0f} s "
            f"wall, {run['machine']}, {run['threads']}; {run['versions']}")


HEADER = """\
# `kernelmaps.mmd_test`: calibration and power (issue 20)

Produced by `studies/two_sample/study.py` (its docstring says how); the
commands, machine and wall time of each run are listed above its table.
Every test ran on one thread (`workers=1`, `OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1`), at most two runs at a time on the 2-core machine.
"""

CALIBRATION_TEXT = """
## Calibration under the null

Both samples from the same distribution: `gauss5` standard Gaussian in
d = 5, `t3_5` Student t with 3 degrees of freedom (independent coordinates)
in d = 5, `mixture2` equal mixture of unit Gaussians at (-2, 0) and (2, 0)
in d = 2, `gauss50` standard Gaussian in d = 50 (linear test only). Sizes
n = m = 20, 200, 2000 and n = 30, m = 50 (where the aggregated test uses
permutations, the others by construction). Resamples B: 999 for the
permutation test and the wild bootstrap; for the aggregated test the
default (B1, B2) = (2000, 2000), and the plan's (500, 500) at n = m =
2000 on `gauss5` only (500 repetitions there take 36 min on an idle core:
not run for this report, see the summary); the linear test (its default
random Fourier features; before issue 39, 10 of them with an F null) has
none. Rows marked "(seed 21)" rerun a cell
on a new block of seeds.
Columns: rejection rate at alpha = 0.05 over R repetitions; the exact
binomial 95 % interval around 0.05 (`scipy.stats.binom.interval(0.95, R,
0.05) / R`) and whether the rate is inside it; the Kolmogorov-Smirnov
p-value of the R p-values against U(0, 1) (`scipy.stats.kstest`) and
whether it is > 0.01; the mean time of one test.

The resampling p-values are discrete (multiples of 1 / (1 + B)), the KS
test compares them with the continuous U(0, 1): at B = 999 (and B2 = 500 or
2000) the largest gap the discreteness can make between their empirical
distribution and the uniform one is 1 / (1 + B) = 0.001, far below the KS
test's sensitivity at R = 500 (its 1 % critical distance is about 0.073),
so the check stays the right one.
"""

CALIBRATION_COLUMNS = (
    "\n| method | null | n | m | B | R | rate | 95 % interval | inside | KS p "
    "| > 0.01 | ms/test |\n"
    "|---|---|---:|---:|---|---:|---:|---|---|---:|---|---:|")

POWER_TEXT = f"""
## Power

Alternatives, n = m points each: `shift` X ~ N(0, I_{SHIFT_DIM}), Y the
same shifted by {SHIFT} in the first coordinate; `laplace` X ~ N(0, 1) in
d = {LAPLACE_DIM}, Y Laplace of scale 1/sqrt(2) (the same mean and
variance); `blobs` (Gretton et al. 2012): a {BLOB_GRID} x {BLOB_GRID} grid
of Gaussians with spacing {BLOB_SPACING:g}, unit covariance for X, for Y
covariance [[1, c], [c, 1]] with c = (r - 1) / (r + 1), r = {BLOB_RATIO:g}
(eigenvalue ratio {BLOB_RATIO:g}, axes at 45 degrees). Methods:
`permutation` kernelmaps' default test (rbf, median heuristic) and
`hyppo` (`hyppo.ksample.MMD().test(X, Y, reps=B, workers=1, auto=False)`)
with the same B; `wild bootstrap` (rbf, median heuristic, B); `aggregated`
the default MMDAgg (10 laplacian + 10 rbf bandwidths, (B1, B2) = (2000,
2000)); `linear` (its default random Fourier features; before issue 39,
10 of them); `best single` the most
powerful member of the aggregated collection, each member run alone as a
wild bootstrap test (the aggregated test's resampling at n = m) with its
`kernel` and `gamma`. The best single is picked after the fact among 20
estimates, so its power is biased upwards by the selection (by up to about
one standard error): the comparison favours it.
"""


# -- main ------------------------------------------------------------------

def machine():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "benchmarks"))
    from benchmarks.common import machine as describe

    return describe()


def parse_sizes(text):
    return tuple(tuple(int(v) for v in s.split("x")) for s in text.split(","))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    cal = sub.add_parser("calibration", help="rejection rates under the null")
    cal.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    cal.add_argument("--dists", nargs="+", default=DISTRIBUTIONS,
                     choices=DISTRIBUTIONS)
    cal.add_argument("--sizes", type=parse_sizes, default=SIZES,
                     help="pairs n x m, e.g. 20x20,30x50")
    pow_ = sub.add_parser("power", help="power on three alternatives")
    pow_.add_argument("--alternatives", nargs="+", default=ALTERNATIVES,
                      choices=ALTERNATIVES)
    pow_.add_argument("--power-methods", nargs="+", default=POWER_METHODS,
                      choices=POWER_METHODS)
    pow_.add_argument("--power-sizes", type=int, nargs="+",
                      default=(25, 50, 100, 200))
    pow_.add_argument("--resamples", type=int, default=199,
                      help="B of permutation, hyppo and wild bootstrap")
    pow_.add_argument("--single-resamples", type=int, default=999,
                      help="B of each single test of the collection")
    for p in (cal, pow_):
        p.add_argument("--reps", type=int, default=500 if p is cal else 200)
        p.add_argument("--seed", type=int, default=20)
        p.add_argument("--out", required=True, help="JSON file of results")
    rep = sub.add_parser("report", help="markdown tables from JSON files")
    rep.add_argument("files", nargs="+")
    rep.add_argument("--summary", help="a markdown file put after the title")
    args = parser.parse_args(argv)
    if args.part == "report":
        print(report(args.files, args.summary))
        return
    command = ("OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python "
               "studies/two_sample/study.py "
               + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    threads = (f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
               f"OPENBLAS_NUM_THREADS="
               f"{os.environ.get('OPENBLAS_NUM_THREADS')}, workers=1")
    info = dict(part=args.part, command=command, seed=args.seed,
                machine=machine(), threads=threads,
                versions=f"kernelmaps {km.__version__}, numpy "
                         f"{np.__version__}, scipy {scipy.__version__}, "
                         f"Python {platform.python_version()}")
    print(f"{info['machine']}\n{threads}\nseed {args.seed}\n{command}",
          flush=True)
    start = time.perf_counter()
    rows = (run_calibration if args.part == "calibration" else run_power)(args)
    for row in rows:
        row["seed"] = args.seed
    info.update(rows=rows, wall=time.perf_counter() - start)
    with open(args.out, "w") as f:
        json.dump(info, f)
    print(f"wall {info['wall']:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
