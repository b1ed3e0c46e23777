"""How kernelmaps runs long work: how many threads a call uses, and the
chunks it runs in, so that a progress bar moves and Ctrl-C stops the call
within a fraction of a second. Every long loop of the package goes through
this module: `run_chunked` for work cut into tasks (compiled calls on a
range of tasks, or Python calls on a range of fixed blocks), `thread_map`
for NumPy and BLAS calls run on Python threads, and the bar of
`progress.progress_bar` that both move.

A compiled call holds no Python frame while its threads work: Python can
raise a KeyboardInterrupt only when the call returns. `run_chunked` runs a
long computation as a sequence of calls on consecutive chunks of its tasks,
each sized from the throughput measured on the chunks before to last about
`CHUNK_SECONDS`; the interpreter raises a pending KeyboardInterrupt between
two chunks, after every thread has finished its task, so nothing is left
running. The tasks of `thread_map` run on other threads, where no
KeyboardInterrupt is raised: when the call stops (Ctrl-C in the thread
that called it, or an error), its running tasks stop at their next
`check_cancelled`, which `run_chunked` calls before each chunk. The
engines keep every task short (their planners bound the work of one task,
`TASK_WORK`), so that one chunk is short however large the input.

A computation run in chunks is a function and its *plan*: the tuple of
its arguments but the range and the threads, which the function takes
last, ``fn(*plan, start, stop, n_threads)``. The compiled entry points
take them so, as do the drivers' functions that work in Python (kd-tree
queries, BLAS products and their cosines): `run_chunked` is handed the
function and the plan, never a closure that binds them. (A loop that
gathers its results in Python, a map's transform in blocks or the linear
test's moments, is a closure over them, with the empty plan.)

Work is counted in *element operations*: one multiply-add (or difference)
of one feature of one pair of points, or its equivalent: on the reference
machines one core does about 5e9 of them per second in the SIMD tiles.
"""

import collections
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .progress import NoBar, progress_bar

__all__ = [
    "CHUNK_SECONDS",
    "MAP_VALUE_WORK",
    "SERIAL_WORK",
    "TASK_WORK",
    "Cancelled",
    "check_cancelled",
    "run_chunked",
    "run_steps",
    "thread_map",
    "threads_for",
    "touch_pages",
]

# Target duration of one chunk: the Ctrl-C latency is about one chunk.
CHUNK_SECONDS = 0.05
# The first chunk, before any throughput is measured, does this much work
# (a few milliseconds).
FIRST_CHUNK_WORK = 2e7
# Work of a feature map on one value of its input, about twice the width of
# its output: the first chunk of a loop over blocks of a map's input is
# sized from it (the chunks after from their measured time).
MAP_VALUE_WORK = 1e3
# Below this much work (about 0.2 ms on one core) a call runs on one
# thread: starting and joining a thread team costs more than it saves, and
# on a loaded machine (or inside Dask or joblib workers) it waits for busy
# cores. Above it, one more thread per SERIAL_WORK.
SERIAL_WORK = 1e6
# Fresh outputs larger than this are touched (`touch_pages`) before the
# work that would touch them all at once, in blocks of this size: a few
# milliseconds each, about 60 ms where the memory is new to the process
# (the host's, on a virtual machine).
TOUCH_BYTES = 1 << 24
# Bytes of a page of memory (the smallest: a page of 2 MB is touched
# through any of its small pages).
PAGE_BYTES = 4096
# Work of one task at most (the planners cut larger ones): about 20 ms on
# one core, so that a chunk never waits long for its slowest task.
TASK_WORK = 1e8


# The events of the `thread_map` calls whose task this thread runs (the
# call's and those of the calls it runs in): set when the call stops.
_tasks = threading.local()


class Cancelled(BaseException):
    """Raised by `check_cancelled` in a task of a `thread_map` call that
    has stopped. (A BaseException, as KeyboardInterrupt: no ``except
    Exception`` on its way catches it; `thread_map` never returns it.)"""


def check_cancelled():
    """Raise `Cancelled` in a task of a `thread_map` call that has stopped
    (Ctrl-C, or an error); elsewhere, nothing."""
    for event in getattr(_tasks, "stopped", ()):
        if event.is_set():
            raise Cancelled


def threads_for(n_threads, work, n_tasks=None):
    """The threads a call of `work` element operations in `n_tasks`
    independent tasks uses: one below `SERIAL_WORK`, at most one per
    `SERIAL_WORK` of work and one per task, at most `n_threads`."""
    if work < SERIAL_WORK:
        return 1
    n = min(int(n_threads), max(1, int(work // SERIAL_WORK)))
    if n_tasks is not None:
        n = min(n, max(1, int(n_tasks)))
    return max(1, n)


def run_chunked(fn, plan, cost, *, n_threads, n_tasks=None, progress=False,
                desc="", unit_cost=None):
    """Run the tasks ``0 .. n`` as ``fn(*plan, start, stop, n_threads)``
    calls on consecutive chunks, and return nothing.

    `cost` holds the work of each task (element operations), or is one
    number, the work of every one of `n_tasks` tasks. A chunk holds at
    least one task, and on several threads at least ``2 * n_threads`` when
    that much is left, so that every thread has work. Where the chunks
    fall depends on the time the chunks before took: a task's result must
    not depend on the tasks it runs with (work whose sums would, such as a
    BLAS product of many rows, is cut into fixed blocks, the tasks, which
    `fn` computes one by one).

    `progress`: False, True for a bar of its own, or an open bar of
    `progress_bar` (a computation in several calls) that the chunks move.
    The bar counts tasks, or `unit_cost` units for each task (fractions
    allowed: the bar moves by the rounded running total).
    """
    if np.ndim(cost) == 0:
        if n_tasks is None:
            raise TypeError("n_tasks is needed with a scalar cost")
        n, each = int(n_tasks), max(float(cost), 1.0)
        cum = None
    else:
        cost = np.asarray(cost, dtype=np.float64)
        n, each = int(cost.shape[0]), None
        cum = np.cumsum(np.maximum(cost, 1.0))
    if n == 0:
        return
    shown = not (progress is False or isinstance(progress, NoBar))
    if not shown and (cum[-1] if cum is not None else n * each) <= FIRST_CHUNK_WORK:
        fn(*plan, 0, n, n_threads)  # small work: one chunk, no planning
        return
    units = None if unit_cost is None else np.cumsum(unit_cost)

    def done(stop):  # the units of the tasks before `stop`
        if units is None:
            return stop
        return round(units[stop - 1]) if stop else 0
    min_tasks = 2 * int(n_threads) if n_threads > 1 else 1
    target = FIRST_CHUNK_WORK
    with _open_bar(progress, done(n), desc) as bar:
        start = 0
        while start < n:
            if cum is None:
                stop = start + int(target // each)
            else:
                before = cum[start - 1] if start else 0.0
                stop = int(np.searchsorted(cum, before + target, side="right"))
            stop = min(n, max(stop, start + 1, min(start + min_tasks, n)))
            check_cancelled()
            clock = time.perf_counter()
            fn(*plan, start, stop, n_threads)
            elapsed = time.perf_counter() - clock
            work = (stop - start) * each if cum is None else cum[stop - 1] - before
            # The next chunk: CHUNK_SECONDS at the throughput of this one
            # (work per second), growing at most twofold per chunk.
            target = min(work / max(elapsed, 1e-6) * CHUNK_SECONDS,
                         2 * max(target, 1.0))
            bar.update(done(stop) - done(start))
            start = stop


def run_steps(steps):
    """Run the steps of the generator `steps`, each a ``(fn, plan, cost,
    options)`` of `run_chunked`, and return the generator's value.

    A computation of several chunked loops with work between them (the
    kNN estimators' searches) is written as a generator that yields its
    loops: they run here, the compiled loops two calls below the caller
    however deep the generators nest (``yield from``), and a generator's
    ``with`` blocks (a progress bar, one BLAS thread) hold while its loop
    runs. A loop that raises (Ctrl-C) closes the generator, so that those
    blocks exit at once."""
    try:
        while True:
            fn, plan, cost, options = next(steps)
            try:
                run_chunked(fn, plan, cost, **options)
            except BaseException:
                steps.close()
                raise
    except StopIteration as done:
        return done.value


def touch_pages(out, n_threads):
    """Write 0 to one value of each page of the fresh C-contiguous array
    `out`, in blocks of TOUCH_BYTES on `n_threads` threads, when it is
    larger than that; return `out`.

    For outputs whose first chunk of work would touch all their pages: the
    symmetric ones written with their mirror, where the tasks of the first
    rows write a value in every row. The first touch of a page costs the
    kernel its zeroing (NumPy asks for pages of 2 MB, 13 rows of 20,000
    values), and on a virtual machine, where the host hands out its memory
    on first use, much more: seconds for gigabytes, which the first chunk
    of the work would spend at once, holding Ctrl-C (benchmarks/TUNING.md).
    Touched here, a block at a time (Ctrl-C stops between two), the same
    pages cost the same time, and the chunks of the work after touch
    none. (The values written are overwritten by
    the work: every value of such an output belongs to one of its
    tasks.)"""
    flat = out.reshape(-1)
    if flat.nbytes <= TOUCH_BYTES:
        return out
    step = max(1, PAGE_BYTES // flat.itemsize)
    block = TOUCH_BYTES // flat.itemsize // step * step

    def touch(start):
        flat[start:start + block:step] = 0

    for _ in thread_map(touch, range(0, flat.size, block), n_threads):
        pass
    return out


def _open_bar(progress, total, desc):
    """`progress_bar` for a bool, else the open bar given, left open."""
    if isinstance(progress, (bool, np.bool_)):
        return progress_bar(bool(progress), total, desc)
    return contextlib.nullcontext(progress)


def thread_map(fn, items, n_threads, in_flight=None):
    """``fn(item)`` for each of `items` (read one at a time, as the calls
    run), yielded in order; on `n_threads` Python threads when more than
    one, for NumPy and BLAS calls (which release the GIL), each short or
    calling `check_cancelled` between its short steps (a step, a few tens
    of milliseconds, is the latency of Ctrl-C).

    At most `in_flight` calls (two per thread by default) run or wait
    beyond the one whose result is yielded, so an iterable that makes its
    items (draws, blocks) runs that far ahead of the threads and no
    further. Ctrl-C, or an error, cancels the queued calls; the running
    ones stop at their next `check_cancelled` (or finish), and it is
    raised when they have.
    """
    if n_threads <= 1:
        for item in items:
            yield fn(item)
        return
    in_flight = 2 * n_threads if in_flight is None else in_flight
    running = collections.deque()
    stopped = threading.Event()
    # the call's event, and those of the calls it runs in (nested tasks)
    events = (*getattr(_tasks, "stopped", ()), stopped)

    def task(item):
        _tasks.stopped = events
        try:
            return fn(item)
        finally:
            _tasks.stopped = ()

    with ThreadPoolExecutor(n_threads) as pool:
        try:
            for item in items:
                running.append(pool.submit(task, item))
                if len(running) == in_flight:
                    yield running.popleft().result()
            while running:
                yield running.popleft().result()
        finally:
            stopped.set()
            for future in running:
                future.cancel()
