"""How work runs (kernelmaps._engine.schedule): the thread counts of the
workers argument of every entry point, the chunks of `run_chunked` and the
bars they move, the Python threads of `thread_map`. Ctrl-C is tested in
test_interrupt.py."""

import itertools
import threading
import time

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_array_equal

import kernelmaps as km
from kernelmaps._engine import schedule
from kernelmaps._parallel import available_cpus, resolve_workers

from ._helpers import sets_and_histograms

SETS, HIST = sets_and_histograms()

# Every entry point with a `workers` argument, on small data.
PARALLEL = {
    "sum_match_kernel": lambda w: km.sum_match_kernel(SETS, workers=w),
    "mmd": lambda w: km.mmd(SETS, SETS[:2], workers=w),
    "mmd_kernel": lambda w: km.mmd_kernel(SETS, workers=w),
    "renyi_divergence": lambda w: km.renyi_divergence(SETS, k=2, workers=w),
    "additive_chi2_kernel": lambda w: km.additive_chi2_kernel(HIST, workers=w),
    "chi2_distance": lambda w: km.chi2_distance(HIST, workers=w),
    "exp_chi2_kernel": lambda w: km.exp_chi2_kernel(HIST, workers=w),
    "intersection_kernel": lambda w: km.intersection_kernel(HIST, workers=w),
    "hellinger_kernel": lambda w: km.hellinger_kernel(HIST, workers=w),
    "js_kernel": lambda w: km.js_kernel(scipy.sparse.csr_matrix(HIST), HIST,
                                        workers=w),
    "gaussian_expected_kernel": lambda w: km.gaussian_expected_kernel(
        HIST[:, :3], np.tile(np.eye(3), (7, 1, 1)), workers=w),
    "RandomDistributionFeatures": lambda w: km.RandomDistributionFeatures(
        16, rng=0, gamma=1 / 4).fit(SETS).transform(SETS, workers=w),
    "Chi2DirectMap": lambda w: km.Chi2DirectMap().fit(HIST).transform(HIST,
                                                                    workers=w),
    "AnchorMap": lambda w: km.AnchorMap().fit(HIST).transform(HIST, workers=w),
    "ExpChi2Features": lambda w: km.ExpChi2Features(8, rng=0).fit(HIST).transform(
        HIST, workers=w),
}


@pytest.mark.parametrize("name", list(PARALLEL))
@pytest.mark.parametrize("workers", [100_000, 30_000, 2**31, 10**100])
def test_huge_workers_are_capped(name, workers):
    """Used to segfault (100_000), start 30,000 threads, or overflow."""
    assert_array_equal(PARALLEL[name](workers), PARALLEL[name](1))


def test_workers_resolve_to_the_cpus_of_this_process():
    cpus = available_cpus()
    assert 1 <= cpus <= (len(__import__("os").sched_getaffinity(0)))
    assert resolve_workers(10**6) == cpus
    assert resolve_workers(-1) == cpus
    assert resolve_workers(None) <= cpus
    assert resolve_workers(np.int64(1)) == 1


@pytest.mark.parametrize("workers", [3.5, "2", np.float64(2.0), True, [2]])
def test_workers_of_the_wrong_type(workers):
    with pytest.raises(TypeError, match="workers"):
        km.sum_match_kernel(SETS, workers=workers)


@pytest.mark.parametrize("workers", [0, -100])
def test_workers_out_of_range(workers):
    with pytest.raises(ValueError, match="workers"):
        km.additive_chi2_kernel(HIST, workers=workers)


class _Bar:
    def __init__(self):
        self.updates = []

    def update(self, n=1):
        self.updates.append(n)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_run_chunked_runs_every_task_once_and_moves_an_open_bar(monkeypatch,
                                                                 n_threads):
    # Chunks cover 0 .. n in order; an open bar given by the caller moves by
    # the rounded running total of fractional units (the kNN search counts
    # a pair split into 3 items as 1/3 each) and ends at their sum.
    monkeypatch.setattr(schedule, "CHUNK_SECONDS", 1e-5)  # many chunks
    rng = np.random.default_rng(0)
    pieces = rng.integers(1, 4, size=50)
    units = np.repeat(1.0 / pieces, pieces)
    calls, bar = [], _Bar()
    schedule.run_chunked(lambda a, b, _: calls.append((a, b)), (),
                         rng.uniform(1e6, 1e7, size=len(units)),
                         n_threads=n_threads, progress=bar, unit_cost=units)
    assert calls[0][0] == 0 and calls[-1][1] == len(units) and len(calls) > 3
    assert all(b0 == a1 for (_, b0), (a1, _) in itertools.pairwise(calls))
    assert all(n >= 0 for n in bar.updates) and sum(bar.updates) == 50
    assert len(bar.updates) == len(calls)


def test_touch_pages_writes_a_zero_in_each_page_of_a_large_output(monkeypatch):
    monkeypatch.setattr(schedule, "TOUCH_BYTES", 1 << 16)
    out = np.full(40000, np.nan)  # 320 kB: 5 blocks, the last partial
    assert schedule.touch_pages(out, 2) is out
    step = schedule.PAGE_BYTES // 8
    assert_array_equal(out[::step], 0.0)
    assert np.isnan(np.delete(out, np.arange(0, out.size, step))).all()
    small = np.full((10, 10), np.nan)  # below TOUCH_BYTES: left as it is
    assert np.isnan(schedule.touch_pages(small, 2)).all()


@pytest.mark.parametrize("name", ["sum_match_kernel", "additive_chi2_kernel",
                                  "js_kernel CSR", "gaussian_expected_kernel"])
def test_symmetric_outputs_do_not_depend_on_the_chunks(monkeypatch, name):
    # The symmetric outputs with their pages touched first (touch_pages) and
    # in many chunks, the expected kernels mirrored in chunks: the values
    # of one chunk, untouched, bit for bit.
    rng = np.random.default_rng(3)
    call = {
        "sum_match_kernel": lambda: km.sum_match_kernel(
            [p[None] for p in rng.normal(size=(700, 4))], workers=2),
        "additive_chi2_kernel": lambda: km.additive_chi2_kernel(
            rng.random((700, 9)), workers=2),
        "js_kernel CSR": lambda: km.js_kernel(scipy.sparse.random(
            700, 40, density=0.2, format="csr", random_state=3), workers=2),
        "gaussian_expected_kernel": lambda: km.gaussian_expected_kernel(
            rng.normal(size=(700, 3)), rng.random((700, 3)), workers=2),
    }[name]
    monkeypatch.setattr(schedule, "FIRST_CHUNK_WORK", 1e12)  # one chunk
    rng = np.random.default_rng(3)
    whole = call()
    monkeypatch.setattr(schedule, "TOUCH_BYTES", 1 << 16)  # touched
    monkeypatch.setattr(schedule, "FIRST_CHUNK_WORK", 1e3)
    monkeypatch.setattr(schedule, "CHUNK_SECONDS", 1e-6)  # many chunks
    rng = np.random.default_rng(3)
    assert_array_equal(call(), whole)


def test_thread_map_keeps_the_order_and_reads_ahead_boundedly():
    read = []

    def items():
        for i in range(40):
            read.append(i)
            yield i

    def square(i):
        assert len(read) <= i + 1 + 2 * 2  # at most two per thread in flight
        return i * i

    assert list(schedule.thread_map(square, items(), 2)) == [
        i * i for i in range(40)]
    assert list(schedule.thread_map(abs, [-3, 4], 1)) == [3, 4]


def test_thread_map_cancels_the_queued_calls_on_an_error():
    done = []

    def work(i):
        if i == 3:
            raise KeyboardInterrupt
        done.append(i)
        return i

    with pytest.raises(KeyboardInterrupt):
        list(schedule.thread_map(work, range(1000), 2))
    assert len(done) < 20  # the queued ones did not start


@pytest.mark.parametrize("nested", [False, True])
def test_thread_map_stops_its_running_tasks_at_their_next_check(nested):
    # Ctrl-C while tasks run (here: raised by the iterable of items, in the
    # calling thread): each running task stops at its next check, here
    # before a chunk of `run_chunked`; nested, the tasks of a thread_map
    # run by a task stop too. Unstopped, a task would run 20,000 tasks of
    # 0.1 ms in chunks.
    tasks = 4 if nested else 2
    running, ended = threading.Semaphore(0), []

    def long_task(item):
        ran = []

        def run(start, stop, _):
            if not ran:
                running.release()
            ran.append(stop)
            time.sleep(1e-4 * (stop - start))

        try:
            schedule.run_chunked(run, (), 1e6, n_threads=1, n_tasks=20000)
        finally:
            ended.append(ran[-1])

    def task(item):
        if nested:
            return list(schedule.thread_map(long_task, [0, 1], 2))
        return long_task(item)

    def items():
        yield from (0, 1)
        for _ in range(tasks):  # every task has run a chunk
            running.acquire()
        raise KeyboardInterrupt

    assert schedule.check_cancelled() is None  # outside a task: nothing
    with pytest.raises(KeyboardInterrupt):
        list(schedule.thread_map(task, items(), 2))
    assert len(ended) == tasks
    assert max(ended) < 20000


def test_run_steps_runs_the_yielded_loops_and_closes_on_an_error():
    """run_steps runs each (fn, plan, cost, options) a generator yields,
    between its steps, returns its value; a loop that raises closes the
    generator at once (its with blocks exit: no BLAS limit left behind)."""
    from kernelmaps._engine.schedule import run_steps

    done, exited = [], []

    def fill(out, start, stop, n_threads):
        out[start:stop] = np.arange(start, stop)
        done.append((start, stop))

    def steps(fail):
        out = np.zeros(5)
        try:
            yield (fill, (out,), 1.0, {"n_tasks": 5, "n_threads": 1})
            if fail:
                yield (lambda start, stop, n_threads: 1 / 0, (), 1.0,
                       {"n_tasks": 1, "n_threads": 1})
            return out * 2
        finally:
            exited.append(fail)

    assert np.array_equal(run_steps(steps(False)), 2 * np.arange(5.0))
    assert done == [(0, 5)] and exited == [False]
    with pytest.raises(ZeroDivisionError) as error:
        run_steps(steps(True))
    # closed while the traceback (its frames, the generator) is still held
    assert exited == [False, True] and error.traceback
