"""The aggregated and fused tests' time (issue 39): today's code against
a baseline build, in one run, on the issue's data (n = m = 5000, d = 64, Y
shifted by 0.1 in one coordinate), with the same `rng`.

``--baseline DIR``: a directory holding the baseline's installed
``kernelmaps`` package (e.g. a copy of site-packages/kernelmaps built from
the commit before), imported in a subprocess of its own. Each
configuration runs in a fresh subprocess; the p-values and statistics are
compared with the baseline's. Results (markdown, with the machine) to
stdout::

    python -P studies/aggregated_speed/study.py --baseline /tmp/base
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

RUN = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None
import numpy as np
import kernelmaps as km
from kernelmaps._two_sample import resampling
n, method, path = int(sys.argv[2]), sys.argv[3], sys.argv[4]
extra = json.loads(sys.argv[5])
if path == "blocks":
    resampling._in_memory_bytes = lambda *args: float("inf")
rng = np.random.default_rng(0)
X, Y = rng.normal(size=(n, 64)), rng.normal(size=(n, 64))
Y[:, 0] += 0.1
t = time.perf_counter()
res = km.mmd_test(X, Y, method=method, rng=0, **extra)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "pvalue": res.pvalue,
                  "statistic": np.atleast_1d(res.statistic).tolist()}))
"""


def run(impl, n, method, path, extra):
    out = subprocess.run([sys.executable, "-P", "-c", RUN, impl, str(n),
                          method, path, json.dumps(extra)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--methods", default="aggregated,fuse")
    parser.add_argument("--configs", default="default,blocks,memory,float64")
    args = parser.parse_args()
    print(f"Machine: {machine()}\n")
    print(f"n = m = {args.n}, d = 64, defaults, rng=0 (quiet machine)\n")
    print("| method | code | time (s) | speed-up | p-value | max relative "
          "difference of the statistics |\n|---|---|---|---|---|---|")
    configs = {"default": ("default", {}), "blocks": ("blocks", {}),
               "memory": ("memory", {}),
               "float64": ("default", {"dtype": "float64"}),
               "incomplete": ("default", {"incomplete": 200})}
    for method in args.methods.split(","):
        base = run(args.baseline, args.n, method, "default", {})
        print(f"| {method} | baseline | {base['seconds']:.1f} | 1.00 | "
              f"{base['pvalue']:.6g} | - |")
        for name in args.configs.split(","):
            path, extra = configs[name]
            if method != "aggregated" and "incomplete" in extra:
                continue
            new = run("", args.n, method, path, extra)
            diff = max(abs(x - y) / max(abs(x), 1e-300) for x, y in
                       zip(base["statistic"], new["statistic"], strict=True))
            print(f"| {method} | {name} | {new['seconds']:.1f} | "
                  f"{base['seconds'] / new['seconds']:.2f} | "
                  f"{new['pvalue']:.6g} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
