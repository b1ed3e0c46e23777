"""Ctrl-C at random times into the two-sample tests (issue 39): the wall
time from SIGINT to the KeyboardInterrupt, for every method, at times
drawn uniformly in 0.2-3 s after the call starts.

The cases: mmd_test at n = m = 10,000, d = 64 (permutation, wild
bootstrap, cross), n = m = 4,000 (aggregated, fuse), the permutation test
on 1000 features of 10^5 + 10^5 points (d = 16), the linear test on
3 10^5 + 3 10^5 points, and sum_match_kernel of 20,000 one-point sets.
``--loaded`` runs two CPU-bound processes beside it (the latencies are
then wall times on a shared machine: the package's bound, 0.5 s of its
own compute, shows as more).

    python -P studies/ctrl_c/study.py --tries 10 [--loaded]
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km


def cases():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10000, 64)), rng.normal(size=(10000, 64))
    F1, F2 = rng.normal(size=(100000, 16)), rng.normal(size=(100000, 16))
    L1, L2 = rng.normal(size=(300000, 64)), rng.normal(size=(300000, 64))
    sets = [p[None] for p in rng.normal(size=(20000, 8))]
    return {
        "permutation": lambda: km.mmd_test(X, Y, rng=0),
        "wild_bootstrap": lambda: km.mmd_test(X, Y, method="wild_bootstrap",
                                              rng=0),
        "aggregated": lambda: km.mmd_test(X[:4000], Y[:4000],
                                          method="aggregated", rng=0),
        "fuse": lambda: km.mmd_test(X[:4000], Y[:4000], method="fuse", rng=0),
        "cross": lambda: km.mmd_test(X, Y, method="cross"),
        "permutation on features": lambda: km.mmd_test(F1, F2, feature_map=1000,
                                                       rng=0),
        "linear": lambda: km.mmd_test(L1, L2, method="linear", rng=0),
        "sum_match_kernel, one-point sets": lambda: km.sum_match_kernel(sets),
    }


def latency(call, when):
    """Seconds from a SIGINT `when` seconds into `call` to its
    KeyboardInterrupt; None where it finished first."""
    fired = []

    def fire():
        time.sleep(when)
        fired.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=fire)
    timer.start()
    try:
        call()
    except KeyboardInterrupt:
        timer.join()
        return time.perf_counter() - fired[0]
    try:
        timer.join()
        time.sleep(0.05)  # the signal, if it comes after the call
    except KeyboardInterrupt:
        pass
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--loaded", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2 if args.loaded else 0)]
    try:
        print(machine(), "loaded: two CPU-bound processes beside" if args.loaded
              else "quiet", "\n")
        print("| call | latencies (s) | worst | finished first |\n|---|---|---|---|")
        times = np.random.default_rng(1)
        for name, call in cases().items():
            found = [latency(call, float(times.uniform(0.2, 3.0)))
                     for _ in range(args.tries)]
            got = [f for f in found if f is not None]
            print(f"| {name} | {' '.join(f'{f:.2f}' for f in got)} | "
                  f"{max(got, default=float('nan')):.2f} | "
                  f"{found.count(None)} |", flush=True)
    finally:
        for p in load:
            p.kill()


if __name__ == "__main__":
    main()
