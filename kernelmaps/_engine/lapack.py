"""Dense linear algebra that Ctrl-C can stop, and that a loaded machine does
not slow down.

A LAPACK or BLAS routine runs to its end once called: Python raises a
pending KeyboardInterrupt only when it returns, seconds or minutes later for
a large matrix. Here:

- `eigh`, `ldl`, `qr` and `cho_factor` run a factorisation estimated to take more
  than `FORK_SECONDS` in a forked child process (on Linux): the parent waits
  on a pipe in short waits and, on Ctrl-C, kills the child and raises at
  once. The child reads the matrix copy-on-write and sends the result back.
  Elsewhere (no fork) and for smaller matrices they call SciPy directly.
- `matmul` multiplies in blocks of rows (each a BLAS call of a few tens of
  milliseconds), so that Ctrl-C stops between two.

BLAS threads: half of the work of a symmetric eigensolver is one level-2
BLAS call per column (the reduction to tridiagonal form), and each call
forks and joins the BLAS threads; when another process holds a core, every
join waits for a descheduled thread's next time slice. With one busy core
beside it, ``eigh`` of a 2000 x 2000 matrix took 0.9 to 6 s on two BLAS
threads (28 s under heavier load), 0.7 s on one; on an idle 2-core machine
two threads gain 1.5x from n = 1000, nothing up to n = 400. So the calls
made here in-process (at most `FORK_SECONDS` on one thread) run on one
BLAS thread (`one_blas_thread`, also for the small LAPACK calls of the
fits), and a forked child first measures how many CPUs are idle (30 ms of
/proc/stat) and runs on that many BLAS threads, at most the BLAS's own
count: all of them on an idle machine, one on a loaded one.
"""

import contextlib
import ctypes
import functools
import os
import pickle
import select
import signal
import sys
import threading
import time
import warnings

import numpy as np
import scipy.linalg

from .layout import MATMUL_BLOCK_FLOPS

try:
    import threadpoolctl
except ImportError:  # optional: then OpenBLAS is found directly (Linux)
    threadpoolctl = None

__all__ = ["FORK_SECONDS", "cho_factor", "eigh", "ldl", "ldl_blocks", "matmul",
           "one_blas_thread", "qr"]

# Calls estimated longer than this run in a child process.
FORK_SECONDS = 0.25
# Seconds per n**3 of a symmetric eigendecomposition, of an LDL^T and of a
# Cholesky factorisation, on one BLAS thread (at most 1.2 s, 0.3 s and
# 0.075 s at n = 2000 on the reference machine).
_EIGH_RATE = 1.5e-10
_LDL_RATE = 4e-11
_CHOLESKY_RATE = 1e-11
# Seconds per n * m**2 of the QR of a tall (n, m) matrix (0.74 s at
# 5000 x 1000).
_QR_RATE = 1.5e-10
# A forked child measures over this long how many CPUs are idle, and runs
# LAPACK on as many BLAS threads.
_PROBE_SECONDS = 0.03


def eigh(A, **kwargs):
    """`scipy.linalg.eigh(A, **kwargs)`, in a child process when long."""
    return _call(scipy.linalg.eigh, A, kwargs, _EIGH_RATE * len(A) ** 3)


def ldl(A, **kwargs):
    """`scipy.linalg.ldl(A, **kwargs)`, in a child process when long."""
    return _call(scipy.linalg.ldl, A, kwargs, _LDL_RATE * len(A) ** 3)


def ldl_blocks(A, **kwargs):
    """The diagonal and subdiagonal of the block-diagonal factor D of
    `scipy.linalg.ldl(A, **kwargs)`, in a child process when long: only
    they come back from it, not the n x n factors."""
    return _call(_ldl_blocks, A, kwargs, _LDL_RATE * len(A) ** 3)


def _ldl_blocks(A, **kwargs):
    _, D, _ = scipy.linalg.ldl(A, **kwargs)
    return np.diag(D).copy(), np.diag(D, -1).copy()


def qr(A, **kwargs):
    """`numpy.linalg.qr(A, **kwargs)` of a tall (n, m) matrix, in a child
    process when long."""
    n, m = A.shape
    return _call(np.linalg.qr, A, kwargs, _QR_RATE * n * m * m)


def cho_factor(A, **kwargs):
    """`scipy.linalg.cho_factor(A, **kwargs)`, in a child process when long."""
    return _call(scipy.linalg.cho_factor, A, kwargs, _CHOLESKY_RATE * len(A) ** 3)


def matmul(A, B):
    """``A @ B`` for 2-D arrays, in blocks of rows of A."""
    rows = A.shape[0]
    step = max(1, int(MATMUL_BLOCK_FLOPS // max(2.0 * A.shape[1] * B.shape[1],
                                                 1.0)))
    if step >= rows:
        return A @ B
    out = np.empty((rows, B.shape[1]), dtype=np.result_type(A, B))
    for start in range(0, rows, step):
        np.matmul(A[start:start + step], B, out=out[start:start + step])
    return out


class _OneThread:
    """State of `one_blas_thread`: the calls inside it (from any Python
    thread), and how to restore the thread counts when the last leaves."""

    lock = threading.Lock()
    depth = 0
    restore = None


@contextlib.contextmanager
def one_blas_thread():
    """Run the BLAS of NumPy and SciPy on one thread inside the block.

    The count is the process's: BLAS calls of other threads meanwhile run on
    one thread too. The first call to enter sets it and the last to leave
    restores it, so that overlapping calls from several threads restore the
    count the process had. Through threadpoolctl when it is installed (which
    lets one Python thread control OpenBLAS: from another, nothing may
    change), else through OpenBLAS's own setter (Linux); elsewhere nothing
    changes."""
    with _OneThread.lock:
        if _OneThread.depth == 0:
            _OneThread.restore = _set_blas_threads(1)
        _OneThread.depth += 1
    try:
        yield
    finally:
        with _OneThread.lock:
            _OneThread.depth -= 1
            if _OneThread.depth == 0:
                _OneThread.restore()


def _set_blas_threads(n):
    """Lower the thread count of every BLAS loaded to `n` (a higher count is
    left as it is); returns a function that restores the previous counts."""
    previous = [(set_threads, get_threads()) for get_threads, set_threads in
                _blas()]
    for set_threads, count in previous:
        if count > n:
            set_threads(n)
    return lambda: [set_threads(count) for set_threads, count in previous]


@functools.cache
def _blas():
    """(get, set) thread-count functions of each BLAS library loaded in this
    process: threadpoolctl's when it is installed, else those of OpenBLAS
    found in /proc/self/maps (Linux; none elsewhere)."""
    if hasattr(threadpoolctl, "ThreadpoolController"):
        found = threadpoolctl.ThreadpoolController().select(user_api="blas")
        return tuple((c.get_num_threads, c.set_num_threads)
                     for c in found.lib_controllers)
    try:
        with open("/proc/self/maps") as maps:
            fields = [line.split(None, 5) for line in maps
                      if "openblas" in line.lower()]
    except OSError:
        return ()
    found = []
    for path in sorted({f[5].strip() for f in fields if len(f) == 6}):
        try:
            lib = ctypes.CDLL(path)  # loaded already: the same library
        except OSError:
            continue
        for get_name, set_name in _OPENBLAS_NAMES:
            if hasattr(lib, get_name) and hasattr(lib, set_name):
                found.append((getattr(lib, get_name), getattr(lib, set_name)))
                break
    return tuple(found)


# Names of the thread-count functions in OpenBLAS, and in the builds of it
# that SciPy (32-bit integers) and NumPy (64-bit) ship.
_OPENBLAS_NAMES = [(f"{prefix}openblas_get_num_threads{suffix}",
                    f"{prefix}openblas_set_num_threads{suffix}")
                   for prefix, suffix in (("", ""), ("scipy_", ""),
                                          ("scipy_", "64_"))]


def _idle_cpus(seconds=_PROBE_SECONDS, caller=None):
    """How many of the CPUs this process may use are idle, measured over
    `seconds` from /proc/stat (at least 1; None where unknown). The CPU
    time of the process `caller` (a pid) counts as idle: it waits for this
    one, and only its BLAS threads, spinning for a while after its last
    call, keep a CPU busy."""

    def idle_and_total():
        with open("/proc/stat") as stat:
            rows = [line.split() for line in stat if line[:3] == "cpu"
                    and line[3].isdigit()]
        # user nice system idle iowait irq softirq steal: idle + iowait
        return {int(r[0][3:]): (int(r[4]) + int(r[5]), sum(map(int, r[1:9])))
                for r in rows if int(r[0][3:]) in mine}

    def caller_ticks():  # utime + stime, in the clock ticks of /proc/stat
        if caller is None:
            return 0
        with open(f"/proc/{caller}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    try:
        mine = os.sched_getaffinity(0)
        before, used = idle_and_total(), caller_ticks()
        start = time.monotonic()
        time.sleep(seconds)
        after, used = idle_and_total(), caller_ticks() - used
        elapsed_ticks = (time.monotonic() - start) * os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError, IndexError):
        return None
    idle = sum((after[c][0] - before[c][0]) / max(after[c][1] - before[c][1], 1)
               for c in after.keys() & before.keys())
    idle += used / max(elapsed_ticks, 1.0)
    return max(1, min(len(mine), round(idle)))


def _call(func, A, kwargs, seconds):
    if seconds < FORK_SECONDS:
        with one_blas_thread():
            return func(A, **kwargs)
    if _can_fork():
        return _forked(func, A, kwargs)
    return func(A, **kwargs)  # no fork, no /proc/stat: the BLAS's threads


def _can_fork():
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def _forked(func, A, kwargs):
    """func(A, **kwargs) in a forked child; its result or its exception."""
    _blas()  # the libraries, found once, not in each child
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks: the child
        # only runs LAPACK on data it already has, and exits.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.close(read)
            # This process's own count, nothing to restore: as many
            # threads as CPUs are idle (see the module's docstring).
            idle = _idle_cpus(caller=os.getppid())
            if idle is not None:
                _set_blas_threads(idle)
            try:
                result = (True, func(A, **kwargs))
            except Exception as err:  # sent to the parent, raised there
                result = (False, err)
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([read], [], [], 0.05)
            if ready:
                chunk = os.read(read, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError(f"the process computing {func.__name__} died")
    ok, value = pickle.loads(b"".join(chunks))
    if not ok:
        raise value
    return value
