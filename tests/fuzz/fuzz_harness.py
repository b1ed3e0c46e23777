"""The parent of the fuzz suite: enumerates cases, runs them in worker
processes with a deadline each, records crashes and hangs, and reports.

The parent never imports kernelmaps: the workers are fresh interpreters
(``python -P fuzz_worker.py``, spawned, not forked), each in its own
session so that a Ctrl-C in the terminal reaches the parent only.

API: ``run(mode="quick" | "full", only=None, seed=0, n_workers=2)`` returns
a `Report` (``.results``, ``.failures``, ``.table()``, ``.failure_text()``,
``.to_json()``).
"""

import collections
import contextlib
import json
import os
import queue
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fuzz_entries as fe  # noqa: E402
from fuzz_interrupts import CASES as INTERRUPT_CASES  # noqa: E402

WORKER = os.path.join(HERE, "fuzz_worker.py")
CATEGORIES = [
    "ok",
    "error-ok",
    "error-unnamed",
    "error-other",
    "wrong",
    "nonfinite",
    "mutated",
    "crash",
    "hang",
]
PASSING = ("ok", "error-ok")
DEADLINE = 20.0  # seconds per case (generous for a slow CI machine)
INTERRUPT_AFTER = 2.0  # seconds after the call starts (its validation is done)
INTERRUPT_GRACE = 10.0  # seconds to wait for the call to stop after SIGINT
# Seconds of work within which it must have stopped: the CPU time the worker
# (one thread) spent after the signal, which a machine loaded with other
# work does not change, where it computed; the wall time where it waited.
INTERRUPT_LATENCY = 1.5
# CPU time, and time waiting to run (runnable while other processes held the
# cores: none for a call that waits), over wall time of a call that computed
COMPUTING = 0.25
MEMORY_LIMIT = 4 << 30  # address space per worker


# ---------------------------------------------------------------- cases


def _pick(key, seed, k, items):
    """A deterministic sample of k of `items`."""
    ranked = sorted(items, key=lambda it: zlib.crc32(f"{seed}:{key}:{it}".encode()))
    return ranked[:k]


DATA_ARGS = (
    "X",
    "Y",
    "sets",
    "K",
    "D",
    "K_train",
    "K_test_train",
    "means",
    "covs",
    "points",
    "chunks",
    "basis",
)
QUICK_MUST = {  # mutations the quick mode always runs, where an entry has them
    "X": [
        "nan",
        "sets-nan",
        "array-nan",
        "empty-set",
        "negative",
        "fortran",
        "sparse-csr_matrix",
        "dtype-float32",
        "far-apart-1e6",
    ],
    "workers": ["10**6", "0"],
    "gamma": ["nan"],
}


def have_sklearn():
    import importlib.util

    try:
        return importlib.util.find_spec("sklearn") is not None
    except (ImportError, ValueError):
        return False


def enumerate_cases(mode="quick", only=None, seed=0):
    """Case ids ``entry|arg|label|variant`` (and ``interrupt|name|SIGINT|0``).
    The scikit-learn adapters are left out when scikit-learn is not
    installed (the README's test command runs without it)."""
    cases = []
    sklearn = have_sklearn()
    for name, entry in fe.ENTRIES.items():
        if only and only not in name:
            continue
        if entry.group == "sklearn" and not sklearn:
            continue
        muts = [(a, lab) for a, lab, _, _ in fe.iter_mutations(entry)]
        if mode == "full":
            # every mutation on 2 baselines; those of the data arguments on
            # 4 (the variants also pick the kernel, Y or not, ...)
            cases += [f"{name}|-|baseline|{v}" for v in range(6)]
            cases += [
                f"{name}|{a}|{lab}|{v}"
                for a, lab in muts
                for v in range(4 if a in DATA_ARGS else 2)
            ]
        else:
            cases += [f"{name}|-|baseline|{v}" for v in range(2)]
            chosen = set(_pick(name, seed, 4, muts))
            for a, labels in QUICK_MUST.items():
                for lab in labels:
                    if (a, lab) in muts:
                        chosen.add((a, lab))
                        break
            cases += [f"{name}|{a}|{lab}|0" for a, lab in sorted(chosen)]
    for name in INTERRUPT_CASES:
        if only and only not in name:
            continue
        if mode == "full" or name == "sum_match_kernel":
            cases.append(f"interrupt|{name}|SIGINT|0")
    return cases


# -------------------------------------------------------------- workers


class Worker:
    """One worker process and the pipe protocol with it."""

    def __init__(self, index, log_dir):
        self.index, self.log_dir = index, log_dir
        self.proc = None
        self.buf = b""
        self.starts = 0

    def start(self):
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(k, "1")
        env["KM_FUZZ_MEMORY_LIMIT"] = str(MEMORY_LIMIT)
        env["PYTHONFAULTHANDLER"] = "1"
        self.log_path = os.path.join(self.log_dir, f"worker{self.index}.log")
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - kept open with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-P", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            bufsize=0,
            start_new_session=True,
        )
        self.buf = b""
        self.starts += 1
        msg = self._read(120.0)
        if msg is None or not msg.get("ready"):
            tail = self.tail()
            self.kill()
            raise RuntimeError(f"fuzz worker failed to start: {tail}")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    f.close()
            self.log.close()
        self.proc = None

    def tail(self, n=6):
        """What the worker wrote to stderr during the last case, boiled
        down: the fatal error, the innermost kernelmaps frames, messages
        of the OpenMP runtime."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - 20000))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        text = text.rsplit("== case ", 1)[-1]
        lines = [ln.strip() for ln in text.splitlines()[1:] if ln.strip()]
        keep = [
            ln
            for ln in lines
            if ln.startswith(
                ("Fatal Python error", "libgomp", "OMP:", "MemoryError", "Killed")
            )
            or ("kernelmaps" in ln and ln.startswith("File"))
        ]
        keep = keep[:n] or lines[-n:]
        return " | ".join(keep)

    def _read(self, timeout):
        """The next JSON line, or None on timeout; raises EOFError if the
        worker died."""
        end = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self.buf:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                if not sel.select(left):
                    return None
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
        finally:
            sel.close()
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _died(self):
        rc = self.proc.wait(timeout=10)
        how = (
            f"killed by {signal.Signals(-rc).name}"
            if rc < 0
            else f"exited with status {rc}"
        )
        return how

    def run(self, case_id, seed, deadline):
        if self.proc is None:
            self.start()
        interrupt = case_id.startswith("interrupt|")
        req = {"id": case_id, "seed": seed, "interrupt": interrupt}
        t0 = time.monotonic()
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
            if interrupt:
                return self._interrupt(case_id, t0, deadline)
            msg = self._read(deadline)
        except (EOFError, BrokenPipeError, OSError):
            how = self._died()
            tail = self.tail()
            self.kill()
            return {
                "id": case_id,
                "category": "crash",
                "detail": f"worker {how}; stderr: {tail}"[:1500],
                "elapsed": time.monotonic() - t0,
            }
        if msg is None:
            self.kill()
            return {
                "id": case_id,
                "category": "hang",
                "detail": f"no result within {deadline:.0f} s (worker killed)",
                "elapsed": time.monotonic() - t0,
            }
        return msg

    def _interrupt(self, case_id, t0, deadline):
        msg = self._read(deadline * 3)
        if msg is None or msg.get("event") != "started":
            self.kill()
            return {
                "id": case_id,
                "category": "error-other",
                "detail": f"interrupt case did not start: {msg}",
            }
        time.sleep(INTERRUPT_AFTER)
        sent, cpu = time.monotonic(), _cpu_seconds(self.proc.pid)
        queued = _run_queue_seconds(self.proc.pid)
        os.kill(self.proc.pid, signal.SIGINT)
        msg = self._read(INTERRUPT_GRACE)
        if msg is None:
            self.kill()
            return {
                "id": case_id,
                "category": "hang",
                "detail": f"Ctrl-C (SIGINT) not honoured: the call ran on for "
                f"{INTERRUPT_GRACE:.0f} s after it (worker killed)",
                "elapsed": time.monotonic() - t0,
            }
        latency = time.monotonic() - sent
        now = _cpu_seconds(self.proc.pid)
        work = latency if cpu is None or now is None else now - cpu
        later = _run_queue_seconds(self.proc.pid)
        waited = 0.0 if queued is None or later is None else later - queued
        if work + waited >= COMPUTING * latency:  # it computed: its CPU time counts
            latency = work
        cat = msg.get("category")
        if cat == "interrupted" and latency <= INTERRUPT_LATENCY:
            msg["category"] = "ok"
            msg["detail"] = (f"KeyboardInterrupt {latency:.2f} s (of work) after "
                             f"SIGINT")
        elif cat == "interrupted":
            msg["category"] = "hang"
            msg["detail"] = (
                f"Ctrl-C (SIGINT) honoured only {latency:.1f} s after it, "
                f"when the call had run to its end"
            )
        elif cat == "finished":
            msg["category"] = "error-other"
            msg["detail"] = (
                f"the call finished {msg.get('elapsed', 0):.1f} s after its "
                f"start, before or without honouring SIGINT: make the "
                f"interrupt case larger"
            )
        return msg


def _run_queue_seconds(pid):
    """Seconds the threads of the process `pid` (those alive now) were
    runnable but not running, so far (Linux's scheduler statistics), or
    None."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                total += int(stat.read().split()[1])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _cpu_seconds(pid):
    """CPU time (user and system) of the process `pid` so far (Linux), or
    None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


# --------------------------------------------------------------- report


class Report:
    def __init__(self, results, mode, seed, wall):
        self.results, self.mode, self.seed, self.wall = results, mode, seed, wall

    @property
    def failures(self):
        return [r for r in self.results if r["category"] not in PASSING]

    def counts(self):
        c = collections.Counter(r["category"] for r in self.results)
        return {k: c.get(k, 0) for k in CATEGORIES}

    def table(self):
        rows = collections.defaultdict(collections.Counter)
        for r in self.results:
            rows[r["entry"]][r["category"]] += 1
        short = [
            "ok",
            "err-ok",
            "unnamed",
            "err-oth",
            "wrong",
            "nonfin",
            "mutated",
            "crash",
            "hang",
        ]
        width = max(len(e) for e in rows) if rows else 10
        lines = [f"{'entry point':<{width}} " + " ".join(f"{s:>7}" for s in short)]
        for e in sorted(rows):
            lines.append(
                f"{e:<{width}} "
                + " ".join(f"{rows[e].get(c, 0) or '.':>7}" for c in CATEGORIES)
            )
        tot = self.counts()
        lines.append(
            f"{'total':<{width}} " + " ".join(f"{tot[c]:>7}" for c in CATEGORIES)
        )
        lines.append(
            f"{len(self.results)} cases in {self.wall:.0f} s ({self.mode}, seed "
            f"{self.seed}): {len(self.failures)} failures"
        )
        return "\n".join(lines)

    def groups(self):
        """Failures grouped by entry point, category and message shape; an
        outcome that a mutated case had besides (``also``) counts too."""
        items = list(self.failures)
        for r in self.results:
            if r.get("also"):
                a = dict(r, **r["also"])
                a["detail"] = (
                    a.get("detail", "") + " (this call also mutated an argument)"
                )
                items.append(a)
        g = collections.OrderedDict()
        for r in sorted(items, key=lambda r: (r["entry"], r["category"], r["id"])):
            sig = re.sub(
                r"accepted an invalid input \(.*?\)",
                "accepted an invalid input",
                r.get("detail", ""),
            )
            sig = re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?(e[-+]?\d+)?", "#", sig)
            sig = re.sub(r"\(first at .*?\)|got .*$", "", sig)[:160]
            key = (r["entry"], r["category"], r.get("arg"), sig)
            g.setdefault(key, []).append(r)
        return g

    def failure_text(self, limit=None):
        lines = []
        groups = list(self.groups().items())
        for (entry, cat, _, _), rs in groups[:limit]:
            r = rs[0]
            muts = sorted({f"{x['arg']}={x['label']}" for x in rs})
            more = f" (+{len(muts) - 8} more)" if len(muts) > 8 else ""
            lines.append(f"[{cat}] {entry}: {r.get('detail', '')}")
            lines.append(f"    mutations: {', '.join(muts[:8])}{more}")
            if r.get("args"):
                lines.append(f"    args: {r['args']}")
            if r.get("repro"):
                lines.append(f'    python -P -c "{r["repro"]}"')
            lines.append(f"    python -P tests/fuzz/run.py --case '{r['id']}'")
        if limit is not None and len(groups) > limit:
            lines.append(f"... and {len(groups) - limit} more groups")
        return "\n".join(lines)

    def to_json(self):
        return {
            "mode": self.mode,
            "seed": self.seed,
            "wall_seconds": self.wall,
            "counts": self.counts(),
            "results": self.results,
        }


# ------------------------------------------------------------------ run


def _annotate(r):
    if r["id"].startswith("interrupt|"):
        _, name, label, _ = r["id"].split("|")
        r.update(entry=f"Ctrl-C: {name}", arg="-", label=label)
    else:
        entry, arg, label, variant = r["id"].split("|")
        r.update(entry=entry, arg=arg, label=label, variant=int(variant))
    return r


def run_cases(
    case_ids, seed=0, n_workers=2, deadline=DEADLINE, progress=None, log_dir=None
):
    import tempfile

    log_dir = log_dir or tempfile.mkdtemp(prefix="km-fuzz-logs-")
    todo = queue.Queue()
    for c in case_ids:
        todo.put(c)
    results = []
    lock = threading.Lock()
    errors = []

    def drive(i):
        w = Worker(i, log_dir)
        try:
            while True:
                try:
                    c = todo.get_nowait()
                except queue.Empty:
                    return
                r = _annotate(w.run(c, seed, deadline))
                if r.pop("isolate", False) and r["category"] not in PASSING:
                    w.kill()  # it may have corrupted the worker's memory
                with lock:
                    results.append(r)
                    if progress:
                        progress(len(results), len(case_ids), r)
        except Exception as e:
            errors.append(e)
        finally:
            w.kill()

    threads = [
        threading.Thread(target=drive, args=(i,), daemon=True)
        for i in range(max(1, n_workers))
    ]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except KeyboardInterrupt:
        while not todo.empty():
            todo.get_nowait()
        for t in threads:
            t.join(DEADLINE + 10)
        raise
    if errors:
        raise errors[0]
    order = {c: i for i, c in enumerate(case_ids)}
    results.sort(key=lambda r: order.get(r["id"], 0))
    return results


def run(mode="quick", only=None, seed=0, n_workers=2, progress=None, cases=None):
    t0 = time.monotonic()
    ids = cases if cases is not None else enumerate_cases(mode, only, seed)
    results = run_cases(ids, seed=seed, n_workers=n_workers, progress=progress)
    return Report(results, mode, seed, time.monotonic() - t0)
