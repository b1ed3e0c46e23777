"""Which two-sample test for which sample size (issue 39): the level,
power and time of every method of `mmd_test`, beside the released peers
MMDAggInc (`agginc`, NumPy) and Compress Then Test (`goodpoints`), run by
`peers.py` in their own virtual environment.

Data of a repetition (seed s): ``X`` and ``Y`` of n standard normal points
in d = 64 dimensions, ``Y[:, 0] += shift`` (0.1 for the power, 0 for the
level). Each (method, n) point is run for ``--seeds`` seeds while its runs
take at most ``--cap`` seconds each (the next size is skipped once the
median time, scaled by the method's growth, would exceed it), at n = m =
1000, 2000, 5000, ... 10^6. Every run appends one JSON line to
``--out`` (resumed: lines already there are not run again); ``--report``
prints the tables (markdown, with the machine) and draws the power-vs-time
picture::

    python -P studies/which_test/study.py --power --level
    python -P studies/which_test/study.py --report --plot power_vs_time.png

``--rescore METHOD`` runs every recorded run of METHOD again on its data
and seed and replaces its p-value and decision, keeping its time (issue
50: the linear test's null tail, exact since, on the same runs; its cost
changed by milliseconds).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km

HERE = os.path.dirname(os.path.abspath(__file__))

PEERS_PYTHON = "/work/peers/bin/python"
SIZES = (1000, 2000, 5000, 10000, 20000, 50000)
BIG = (100000, 1000000)
# name: (mmd_test keywords, or the peer; how the time grows with n)
METHODS = {
    "permutation": ({}, 2),
    "wild_bootstrap": ({"method": "wild_bootstrap"}, 2),
    "aggregated": ({"method": "aggregated"}, 2),
    "aggregated, incomplete=200": ({"method": "aggregated",
                                    "incomplete": 200}, 1),
    "fuse": ({"method": "fuse"}, 2),
    "cross": ({"method": "cross"}, 2),
    "linear": ({"method": "linear"}, 1),
    "permutation, feature_map=1000": ({"feature_map": 1000}, 1),
    "agginc (MMDAggInc)": ("agginc", 1),
    "goodpoints CTT": ("ctt", 1),
}


def data(n, d, shift, seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    Y[:, 0] += shift
    return X, Y


def run_ours(kwargs, n, shift, seed):
    X, Y = data(n, 64, shift, seed)
    t = time.perf_counter()
    res = km.mmd_test(X, Y, rng=seed, **kwargs)
    return {"reject": bool(res.pvalue <= 0.05), "pvalue": float(res.pvalue),
            "seconds": time.perf_counter() - t}


def run_peer(peer, n, shift, seeds):
    out = subprocess.run(
        [PEERS_PYTHON, os.path.join(HERE, "peers.py"), "--n", str(n), "--d",
         "64", "--shift", str(shift), "--seeds", ",".join(map(str, seeds)),
         "--peer", peer], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()
            if line.startswith("{")]


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def sweep(path, kind, seeds, cap, names, sizes):
    shift = 0.1 if kind == "power" else 0.0
    done = {(r["method"], r["n"], r["seed"], r["kind"]) for r in load(path)}
    for name in names:
        spec, growth = METHODS[name]
        previous = None
        for n in sizes:
            if previous is not None:
                t_prev, n_prev = previous
                if t_prev * (n / n_prev) ** growth > cap:
                    break
            todo = [s for s in range(seeds) if (name, n, s, kind) not in done]
            if previous is None and n in BIG:  # the largest sizes: start
                # from the time at the largest size of the first sweep
                ran = [r for r in load(path) if (r["method"], r["kind"])
                       == (name, kind) and r["n"] < n]
                top = max((r["n"] for r in ran), default=None)
                if top is not None and np.median(
                        [r["seconds"] for r in ran if r["n"] == top]) * (
                        n / top) ** growth > cap:
                    break
            if isinstance(spec, str):
                rows = run_peer(spec, n, shift, todo) if todo else []
            else:
                rows = [run_ours(spec, n, shift, s) for s in todo]
            failed = [row["error"] for row in rows if "error" in row]
            if failed:  # (a peer out of memory: the larger sizes too)
                print(f"{kind} {name} n={n}: {failed[0]}", flush=True)
                break
            with open(path, "a") as f:
                for s, row in zip(todo, rows, strict=True):
                    f.write(json.dumps({"method": name, "n": n, "seed": s,
                                        "kind": kind, "reject": row["reject"],
                                        "pvalue": row.get("pvalue"),
                                        "seconds": row["seconds"]}) + "\n")
            times = [r["seconds"] for r in load(path)
                     if (r["method"], r["n"], r["kind"]) == (name, n, kind)]
            previous = (float(np.median(times)), n)
            print(f"{kind} {name} n={n}: {np.median(times):.2f} s", flush=True)


def rescore(path, name):
    rows = load(path)
    changed = 0
    for row in rows:
        if row["method"] != name:
            continue
        shift = 0.1 if row["kind"] == "power" else 0.0
        new = run_ours(METHODS[name][0], row["n"], shift, row["seed"])
        changed += new["reject"] != row["reject"]
        row.update(reject=new["reject"], pvalue=new["pvalue"])
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{name}: {sum(r['method'] == name for r in rows)} runs scored again, "
          f"{changed} decisions changed", flush=True)


def report(path, plot):
    rows = load(path)
    print(f"Machine: {machine()}\n")
    for kind, title in (("power", "Power at alpha = 0.05 (shift 0.1)"),
                        ("level", "Level at alpha = 0.05 (no shift)")):
        sizes = sorted({r["n"] for r in rows if r["kind"] == kind})
        print(f"{title}: rejection rate (repetitions) / median seconds\n")
        print("| method | " + " | ".join(f"n = m = {n:,}" for n in sizes)
              + " |\n|---|" + "---|" * len(sizes))
        for name in METHODS:
            cells = []
            for n in sizes:
                sel = [r for r in rows if (r["method"], r["n"], r["kind"])
                       == (name, n, kind)]
                seconds = np.median([r["seconds"] for r in sel]) if sel else 0
                cells.append(f"{np.mean([r['reject'] for r in sel]):.2f} "
                             f"({len(sel)}) / {seconds:.2g}" if sel else "-")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name in METHODS:
            sel = [r for r in rows if r["method"] == name and r["kind"] == "power"]
            sizes = sorted({r["n"] for r in sel})
            if not sizes:
                continue
            t = [np.median([r["seconds"] for r in sel if r["n"] == n]) for n in sizes]
            p = [np.mean([r["reject"] for r in sel if r["n"] == n]) for n in sizes]
            ax.plot(t, p, "o-", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("median time of one test (s, 2 cores)")
        ax.set_ylabel("power at alpha = 0.05")
        ax.set_title("d = 64, Y shifted by 0.1 in one coordinate;\n"
                     "each point a sample size n = m from 1000")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(HERE, "results.jsonl"))
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--level", action="store_true")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--level-reps", type=int, default=100)
    parser.add_argument("--level-sizes", default="500",
                        help="comma-separated n = m of the level runs")
    parser.add_argument("--cap", type=float, default=8.0)
    parser.add_argument("--methods", default=";".join(METHODS),
                        help="the methods to run, separated by ';'")
    parser.add_argument("--big", action="store_true",
                        help="n = 10^5 and 10^6 for the tests linear in n "
                             "(--big-seeds seeds, --big-cap seconds a run)")
    parser.add_argument("--big-seeds", type=int, default=3)
    parser.add_argument("--big-cap", type=float, default=150.0)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--plot", default=None)
    parser.add_argument("--rescore", default=None)
    args = parser.parse_args()
    if args.rescore:
        rescore(args.out, args.rescore)
    names = [m for m in METHODS if m in args.methods.split(";")]
    if args.level:
        sweep(args.out, "level", args.level_reps, args.cap, names,
              tuple(int(n) for n in args.level_sizes.split(",")))
    if args.power:
        sweep(args.out, "power", args.seeds, args.cap, names, SIZES)
    if args.big:
        sweep(args.out, "power", args.big_seeds, args.big_cap,
              [m for m in names if METHODS[m][1] == 1], BIG)
    if args.report:
        report(args.out, args.plot)


if __name__ == "__main__":
    main()
