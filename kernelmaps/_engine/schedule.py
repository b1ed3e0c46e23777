"""How the engines run their work: how many threads a call uses, and the
chunks it runs in, so that a progress bar moves and Ctrl-C stops the call
within a fraction of a second.

A compiled call holds no Python frame while its threads work: Python can
raise a KeyboardInterrupt only when the call returns. `run_chunked` runs a
long computation as a sequence of calls on consecutive chunks of its tasks,
each sized from the throughput measured on the chunks before to last about
`CHUNK_SECONDS`; the interpreter raises a pending KeyboardInterrupt between
two chunks, after every thread has finished its task, so nothing is left
running. The engines keep every task short (their planners bound the work
of one task, `TASK_WORK`), so that one chunk is short however large the
input.

Work is counted in *element operations*: one multiply-add (or difference)
of one feature of one pair of points, or its equivalent: on the reference
machines one core does about 5e9 of them per second in the SIMD tiles.
"""

import time

import numpy as np

from .progress import progress_bar

__all__ = [
    "CHUNK_SECONDS",
    "SERIAL_WORK",
    "TASK_WORK",
    "run_chunked",
    "threads_for",
]

# Target duration of one chunk: the Ctrl-C latency is about one chunk.
CHUNK_SECONDS = 0.05
# The first chunk, before any throughput is measured, does this much work
# (a few milliseconds).
FIRST_CHUNK_WORK = 2e7
# Below this much work (about 0.2 ms on one core) a call runs on one
# thread: starting and joining a thread team costs more than it saves, and
# on a loaded machine (or inside Dask or joblib workers) it waits for busy
# cores. Above it, one more thread per SERIAL_WORK.
SERIAL_WORK = 1e6
# Work of one task at most (the planners cut larger ones): about 20 ms on
# one core, so that a chunk never waits long for its slowest task.
TASK_WORK = 1e8


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


def run_chunked(run, cost, *, n_threads, n_tasks=None, progress=False, desc="",
                unit_cost=None):
    """Run the tasks ``0 .. n`` as ``run(start, stop)`` calls on consecutive
    chunks, and return nothing.

    `cost` holds the work of each task (element operations), or is one
    number, the work of every one of `n_tasks` tasks. A chunk holds at
    least one task, and at least ``2 * n_threads`` when that much is left,
    so that every thread has work. With `progress`, a bar over the tasks
    (or over `unit_cost`, the units the bar counts for each task) moves
    after every chunk.
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
    if not progress and (cum[-1] if cum is not None else n * each) <= FIRST_CHUNK_WORK:
        run(0, n)  # small work: one chunk, no planning
        return
    units = None if unit_cost is None else np.cumsum(unit_cost)
    total_units = n if units is None else int(units[-1])
    min_tasks = 2 * max(1, int(n_threads))
    target = FIRST_CHUNK_WORK
    with progress_bar(progress, total_units, desc) as bar:
        start = 0
        while start < n:
            if cum is None:
                stop = start + int(target // each)
            else:
                before = cum[start - 1] if start else 0.0
                stop = int(np.searchsorted(cum, before + target, side="right"))
            stop = min(n, max(stop, start + 1, min(start + min_tasks, n)))
            clock = time.perf_counter()
            run(start, stop)
            elapsed = time.perf_counter() - clock
            work = (stop - start) * each if cum is None else cum[stop - 1] - before
            # The next chunk: CHUNK_SECONDS at the throughput of this one
            # (work per second), growing at most twofold per chunk.
            target = min(work / max(elapsed, 1e-6) * CHUNK_SECONDS,
                         2 * max(target, 1.0))
            if units is None:
                bar.update(stop - start)
            else:
                bar.update(int(units[stop - 1] - (units[start - 1] if start else 0)))
            start = stop
