"""Ctrl-C at random times into the two-sample tests and the kernels with
large outputs (issue 39): how long a call runs on after SIGINT.

For each case the call is built once (its data), timed (the shorter of
two calls, each up to ``--probe`` seconds: a SIGINT stops it there), then
interrupted ``--tries`` times, at times drawn uniformly (seeded) in 0.1 s
.. min(``--latest``, 0.9 x its time). Each try records, from the signal to
the KeyboardInterrupt reaching Python:

- wall: the wall time (what the user waits for);
- cpu: the CPU time of the whole process (all its threads);
- busiest: the CPU time of its busiest thread (/proc/self/task, 10 ms
  ticks): the work the call did after the signal, which on a quiet
  machine is its wall time. On a loaded machine each thread gets a share
  of a core, and the wall time grows with the load where this does not:
  the package's bound (0.5 s of its own compute) is on this.

``--mode loaded`` runs two CPU-bound processes (``while True: pass``)
beside the tries; ``both`` (the default) runs every case quiet, then
loaded, at the same interrupt times. ``--gaps`` also runs each call once
(its first ``--trace`` seconds) under a trace function of the main thread,
and reports its longest stretches without a line of Python (where no
KeyboardInterrupt can be raised) and the line that ends them: the random
times of the tries reach only the first ``--latest`` seconds of a call,
this covers all of it (or more of it).

    python -P studies/ctrl_c/study.py                    # 30 tries, quiet and loaded
    python -P studies/ctrl_c/study.py --quick            # 3 tries, a first look
    python -P studies/ctrl_c/study.py --cases sum_match_kernel,linear --gaps
    python -P studies/ctrl_c/study.py --tries 0 --gaps   # the stretches only
"""

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km

N, D = 10000, 64  # the two samples of mmd_test
N_BIG = 20000  # rows (sets, histograms, Gaussians) of the large outputs
N_SMALL = 3000  # n = m of the tests whose matrices fit the working memory
N_SETS, SET_SIZE = 5000, 10  # sets of points (d = 16) of each sample


def _samples():
    rng = np.random.default_rng(0)
    return rng.normal(size=(N, D)), rng.normal(size=(N, D))


def _test(n=N, **kwargs):
    def build():
        X, Y = (A[:n] for A in _samples())
        return lambda: km.mmd_test(X, Y, rng=0, **kwargs)
    return build


def _set_test(**kwargs):
    def build():
        rng = np.random.default_rng(0)
        X, Y = (km.Bags(rng.normal(size=(N_SETS * SET_SIZE, 16)),
                        np.arange(0, N_SETS * SET_SIZE + 1, SET_SIZE))
                for _ in range(2))
        return lambda: km.mmd_test(X, Y, rng=0, **kwargs)
    return build


def _one_point_sets(kernel):
    def build():
        sets = [p[None] for p in np.random.default_rng(0).normal(size=(N_BIG, 16))]
        return lambda: kernel(sets)
    return build


def _histograms(kernel):
    def build():
        H = np.random.default_rng(0).random((N_BIG, 64))
        return lambda: kernel(H)
    return build


def _gaussians():
    rng = np.random.default_rng(0)
    m, v = rng.normal(size=(N_BIG, 16)), rng.random((N_BIG, 16))
    return lambda: km.gaussian_expected_kernel(m, v)


# name: a function that makes the data and returns the call
CASES = {
    "permutation": _test(),
    "permutation workers=1": _test(workers=1),
    "wild_bootstrap": _test(method="wild_bootstrap"),
    "aggregated": _test(method="aggregated"),
    "fuse": _test(method="fuse"),
    "cross": _test(method="cross"),
    "linear": _test(method="linear"),
    "permutation feature_map=1000": _test(feature_map=1000),
    f"permutation n={N_SMALL}": _test(N_SMALL),
    f"wild_bootstrap n={N_SMALL}": _test(N_SMALL, method="wild_bootstrap"),
    f"aggregated n={N_SMALL}": _test(N_SMALL, method="aggregated"),
    "permutation of sets": _set_test(),
    "aggregated of sets": _set_test(method="aggregated"),
    "sum_match_kernel": _one_point_sets(km.sum_match_kernel),
    "mmd_kernel": _one_point_sets(km.mmd_kernel),
    "additive_chi2_kernel": _histograms(km.additive_chi2_kernel),
    "exp_chi2_kernel": _histograms(km.exp_chi2_kernel),
    "js_kernel": _histograms(km.js_kernel),
    "gaussian_expected_kernel": _gaussians,
}
DESCRIPTION = (
    f"mmd_test of n = m = {N:,} points, d = {D} (rbf, the defaults, rng=0; "
    f"n = m = {N_SMALL:,}: in memory), and of {N_SETS:,} + {N_SETS:,} sets of "
    f"{SET_SIZE} points (d = 16); "
    f"sum_match_kernel and mmd_kernel of {N_BIG:,} one-point sets (d = 16); "
    f"the histogram kernels of a {N_BIG:,} x 64 matrix (uniform values); "
    f"gaussian_expected_kernel of {N_BIG:,} diagonal Gaussians (d = 16)")

TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu():
    """CPU seconds of each thread of this process (Linux), {} elsewhere."""
    cpu = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # the thread ended
                continue
            cpu[tid] = (int(fields[11]) + int(fields[12])) / TICKS
    except OSError:
        pass
    return cpu


def now():
    return time.perf_counter(), time.process_time(), thread_cpu()


def interrupt(call, when):
    """SIGINT `when` seconds into `call`: {"wall", "cpu", "busiest"} from
    the signal to the KeyboardInterrupt, or {"ended": seconds} where the
    call ended first (no signal is sent then). The threads' CPU times are
    read every 10 ms after the signal: a pool's threads may end before
    the KeyboardInterrupt reaches Python (their last reading counts)."""
    fired, done, caught = [], threading.Event(), threading.Event()
    seen = {}

    def fire():
        if done.wait(when):
            return
        fired.append(now())
        os.kill(os.getpid(), signal.SIGINT)
        while not caught.wait(0.01):
            seen.update(thread_cpu())

    timer = threading.Thread(target=fire)
    start = time.perf_counter()
    timer.start()
    try:
        call()
        ended = time.perf_counter() - start
    except KeyboardInterrupt:
        end = now()
        caught.set()
        timer.join()
        (t0, p0, c0), (t1, p1, c1) = fired[0], end
        seen.update(c1)
        return {"wall": t1 - t0, "cpu": p1 - p0,
                "busiest": max((c - c0.get(t, 0.0) for t, c in seen.items()),
                               default=0.0)}
    try:
        done.set()
        timer.join()
        time.sleep(0.05)  # a signal sent as the call ended
    except KeyboardInterrupt:
        caught.set()
        timer.join()
    return {"ended": ended}


def duration(call, probe):
    """Seconds `call` takes, at most `probe` (a SIGINT stops it there)."""
    return interrupt(call, probe).get("ended", probe)


def gaps(call, limit, top=3):
    """The `top` longest stretches of the call (its first `limit` seconds:
    a SIGINT stops it there) without a line of Python run by the main
    thread (a trace function's events: where a KeyboardInterrupt can be
    raised; a wait on a lock is one, but Ctrl-C then waits for the
    threads' tasks): (wall s, process CPU s, the line that ended it),
    longest first; and the seconds traced (the tracing slows the call)."""
    found, last = [], [time.perf_counter(), time.process_time()]

    def trace(frame, event, arg):
        t, p = time.perf_counter(), time.process_time()
        if t - last[0] > 0.02:
            where = " < ".join(
                f"{os.path.basename(s.filename)}:{s.lineno} {s.name}"
                for s in reversed(traceback.extract_stack(frame)[-3:]))
            found.append((t - last[0], p - last[1], f"{event} at {where}"))
        last[:] = time.perf_counter(), time.process_time()
        return trace

    start = time.perf_counter()
    sys.settrace(trace)
    try:
        interrupt(call, limit)
    finally:
        sys.settrace(None)
    return sorted(found, reverse=True)[:top], time.perf_counter() - start


def machine_busy():
    """(seconds of CPU the machine has spent busy, this process's CPU
    seconds, wall time), to tell the other processes' share (Linux)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / TICKS  # less idle, iowait
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    t = os.times()
    return busy, t.user + t.system, time.perf_counter()


def others_share(before, after):
    """The CPUs' share (0 .. 1 of all of them) taken by other processes
    between two `machine_busy` readings."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count()
    busy, own, wall = (b - a for a, b in zip(before, after, strict=True))
    return max(0.0, busy - own) / (wall * cpus)


def spinners(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(n)]


def stats(values):
    return (f"{max(values):.2f}", f"{float(np.median(values)):.2f}") if values \
        else ("-", "-")


def table(record, modes, tries, latest):
    print(f"{tries} interrupts per case at times drawn uniformly in 0.1 s .. "
          f"min({latest:g} s, 0.9 x the call's time); latencies in s, worst / "
          f"median; others: the share of the CPUs other processes took during "
          f"the tries (loaded: the two spinners among them).\n")
    head, rule = "| call | time (s) |", "|---|---|"
    for mode in modes:
        head += (f" {mode}: wall | {mode}: busiest thread | {mode}: process CPU |"
                 f" {mode}: others |")
        rule += "---|---|---|---|"
    print(head + " ended first |\n" + rule + "---|")
    for name, entry in record.items():
        line = f"| {name} | {entry['time']:.1f} |"
        ended = []
        for mode in modes:
            got = [f for f in entry[mode] if "wall" in f]
            for key in ("wall", "busiest", "cpu"):
                line += " {} / {} |".format(*stats([f[key] for f in got]))
            line += f" {entry[f'{mode} others']:.0%} |"
            ended.append(str(len(entry[mode]) - len(got)))
        print(line + f" {', '.join(ended)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 tries")
    parser.add_argument("--mode", choices=("quiet", "loaded", "both"),
                        default="both")
    parser.add_argument("--cases", default="",
                        help="comma-separated names (default: all)")
    parser.add_argument("--latest", type=float, default=4.0,
                        help="latest interrupt time drawn (s)")
    parser.add_argument("--probe", type=float, default=10.0,
                        help="time a call for at most this long (s)")
    parser.add_argument("--gaps", action="store_true")
    parser.add_argument("--trace", type=float, default=60.0,
                        help="with --gaps, trace at most this long (s)")
    parser.add_argument("--json", help="write every try here")
    args = parser.parse_args()
    tries = 3 if args.quick else args.tries
    names = [n.strip() for n in args.cases.split(",") if n.strip()] or list(CASES)
    modes = (["quiet", "loaded"] if args.mode == "both" else [args.mode]
             ) if tries else []
    signal.signal(signal.SIGINT, signal.default_int_handler)

    print(machine(), "\n")
    print(DESCRIPTION, "\n")
    record = {}
    times = np.random.default_rng(1)
    for name in names:
        call = CASES[name]()
        # (twice: a first call may take much longer, its memory new to
        # the process)
        entry = record[name] = {
            "time": min(duration(call, args.probe) for _ in range(2))
            if tries else float("nan")}
        latest = max(0.1, min(args.latest, 0.9 * entry["time"]))
        entry["when"] = list(times.uniform(0.1, latest, tries))
        if args.gaps:
            entry["gaps"], entry["traced"] = gaps(call, args.trace)
        for mode in modes:
            load = spinners(2 if mode == "loaded" else 0)
            before = machine_busy()
            try:
                found = []
                for when in entry["when"]:
                    found.append(interrupt(call, when))
                    gc.collect()
                    time.sleep(0.1)
            finally:
                for p in load:
                    p.kill()
                    p.wait()
            entry[mode] = found
            entry[f"{mode} others"] = others_share(before, machine_busy())
            got = [f for f in found if "wall" in f]
            walls = " ".join(f"{f['wall']:.2f}" for f in got)
            busiest = " ".join(f"{f['busiest']:.2f}" for f in got)
            print(f"{name} ({mode}, call {entry['time']:.1f} s, other "
                  f"processes {entry[f'{mode} others']:.0%} of the CPUs): "
                  f"wall {walls}; "
                  f"busiest {busiest}; ended first {len(found) - len(got)}",
                  file=sys.stderr, flush=True)
        del call
        gc.collect()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(record, f, indent=1)

    if tries:
        table(record, modes, tries, args.latest)
    if args.gaps:
        print("\nLongest stretches without a line of Python in the main thread "
              "(the call, traced, up to --trace s, before the tries): wall s "
              "(process CPU s), the line that ended them.\n")
        for name, entry in record.items():
            print(f"- {name} ({entry['traced']:.0f} s traced): " + "; ".join(
                f"{w:.2f} ({c:.2f}) {where}" for w, c, where in entry["gaps"]))


if __name__ == "__main__":
    main()
