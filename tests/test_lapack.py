"""kernelmaps._engine.lapack: the factorisations give SciPy's results in
process and in a forked child, small calls run on one BLAS thread, a child
on as many as CPUs are idle, and the thread counts are restored, with and
without threadpoolctl."""

import io
import threading

import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_allclose, assert_array_equal

from kernelmaps._engine import lapack

# The BLAS libraries of NumPy and SciPy, found through threadpoolctl or
# (without it) directly: the two ways `lapack` sets their thread counts.
WAYS = ["threadpoolctl", "direct"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    if request.param == "threadpoolctl":
        pytest.importorskip("threadpoolctl")
    else:
        monkeypatch.setattr(lapack, "threadpoolctl", None)
    lapack._blas.cache_clear()
    if not lapack._blas():
        pytest.skip(f"no BLAS library found {request.param}")
    yield request.param
    lapack._blas.cache_clear()


def counts():
    return [get_threads() for get_threads, _ in lapack._blas()]


def spd(n, seed=0):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T / n + np.eye(n)


@pytest.fixture
def two_threads(way):
    """The BLAS libraries on two threads during the test (one CPU is enough:
    the count is what is checked, not the speed)."""
    restore = [(set_threads, get_threads()) for get_threads, set_threads
               in lapack._blas()]
    for set_threads, _ in restore:
        set_threads(2)
    yield way
    for set_threads, count in restore:
        set_threads(count)


def test_one_blas_thread_sets_and_restores(two_threads):
    assert counts() == [2] * len(counts())
    with lapack.one_blas_thread():
        assert counts() == [1] * len(counts())
        with lapack.one_blas_thread():  # nested: still one, restored after
            assert counts() == [1] * len(counts())
        assert counts() == [1] * len(counts())
    assert counts() == [2] * len(counts())
    with pytest.raises(ZeroDivisionError), lapack.one_blas_thread():
        raise ZeroDivisionError
    assert counts() == [2] * len(counts())


def test_one_blas_thread_overlapping_threads_restore(two_threads):
    """Thread A enters, B enters, A leaves, B leaves: the count the process
    had comes back (each call restoring what it saw would leave one).
    threadpoolctl lets one Python thread control OpenBLAS (here the main
    thread, which set two): from others it changes nothing."""
    if two_threads == "threadpoolctl":
        pytest.skip("threadpoolctl: the main thread controls OpenBLAS")
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with lapack.one_blas_thread():
            a_in.set()
            b_in.wait(5)
        seen["after a"] = counts()
        a_out.set()

    def b():
        a_in.wait(5)
        with lapack.one_blas_thread():
            b_in.set()
            a_out.wait(5)
            seen["b after a left"] = counts()

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    n = len(counts())
    assert seen == {"after a": [1] * n, "b after a left": [1] * n}
    assert counts() == [2] * n


def test_thread_counts_are_only_lowered(two_threads):
    restore = lapack._set_blas_threads(8)
    assert counts() == [2] * len(counts())
    restore()
    assert counts() == [2] * len(counts())


@pytest.mark.parametrize("idle", [1, 64])
def test_forked_child_runs_on_the_idle_cpus(two_threads, monkeypatch, idle):
    if not lapack._can_fork():
        pytest.skip("no fork here")
    monkeypatch.setattr(lapack, "_idle_cpus", lambda **kwargs: idle)
    child = lapack._forked(lambda A: counts(), np.eye(2), {})
    assert child == [min(idle, 2)] * len(counts())
    assert counts() == [2] * len(counts())  # the parent's are untouched


def test_idle_cpus():
    idle = lapack._idle_cpus(0.02)
    if idle is None:
        pytest.skip("/proc/stat cannot be read here")
    assert 1 <= idle <= len(lapack.os.sched_getaffinity(0))


def test_idle_cpus_count_the_caller_as_idle(monkeypatch):
    """From /proc/stat over the probe: CPU 0 idle, CPU 1 busy all along,
    with the caller's one thread spinning on it (another CPU, 3, is not
    this process's): one CPU idle, two when the caller's time counts as
    idle. (Read from fixed /proc contents: the machine's load does not
    matter.)"""
    ticks = 100  # the probe's length, in clock ticks
    cpu = {0: [0, 0], 1: [0, 0], 3: [0, 0]}  # [busy, idle] ticks
    caller = [0]
    files = {"/proc/stat": lambda: "cpu  1 2 3 4 5 6 7 8\n" + "".join(
                 f"cpu{c} {busy} 0 0 {idle} 0 0 0 0 0 0\n"
                 for c, (busy, idle) in cpu.items()),
             "/proc/42/stat": lambda: f"42 (py thon) R 1 2 3 4 5 6 7 8 9 10 "
                                      f"{caller[0]} 0 0 0\n"}

    def sleep(seconds):  # the probe: what the CPUs did meanwhile
        cpu[0][1] += ticks
        cpu[1][0] += ticks
        cpu[3][0] += ticks
        caller[0] += ticks
        clock[0] += ticks / lapack.os.sysconf("SC_CLK_TCK")

    clock = [0.0]
    monkeypatch.setattr(lapack, "open", lambda path: io.StringIO(files[path]()),
                        raising=False)
    monkeypatch.setattr(lapack.time, "sleep", sleep)
    monkeypatch.setattr(lapack.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(lapack.os, "sched_getaffinity", lambda pid: {0, 1})
    assert lapack._idle_cpus(0.03) == 1
    assert lapack._idle_cpus(0.03, caller=42) == 2


@pytest.mark.parametrize("forked", [False, True])
def test_factorisations_are_scipy_s(monkeypatch, forked):
    if forked:
        if not lapack._can_fork():
            pytest.skip("no fork here")
        monkeypatch.setattr(lapack, "FORK_SECONDS", 0.0)
    A = spd(57)
    S = A - 2 * np.eye(57)  # indefinite, for ldl
    w, V = lapack.eigh(A, subset_by_index=[50, 56])
    w_ref, V_ref = scipy.linalg.eigh(A, subset_by_index=[50, 56])
    assert_allclose(w, w_ref, rtol=1e-13)
    assert_allclose(np.abs(V), np.abs(V_ref), atol=1e-12)
    c, lower = lapack.cho_factor(A, lower=True)
    assert lower
    assert_allclose(np.tril(c), np.linalg.cholesky(A), rtol=1e-13, atol=1e-14)
    L, D, _ = lapack.ldl(S, lower=True)
    assert_allclose(L @ D @ L.T, S, atol=1e-12)
    diag, sub = lapack.ldl_blocks(S, lower=True)
    assert_array_equal(diag, np.diag(D))
    assert_array_equal(sub, np.diag(D, -1))
    with pytest.raises(np.linalg.LinAlgError):  # raised in the parent
        lapack.cho_factor(S)


def test_fits_run_their_small_lapack_calls_on_one_thread(two_threads, monkeypatch):
    """AnchorMap.fit's eigendecompositions, and those and the Cholesky
    factorisations of the EMK basis fit, see one BLAS thread; the count
    comes back after."""
    from kernelmaps import AnchorMap, EMKFeatures

    seen = []

    def recorded(func):
        def call(*args, **kwargs):
            seen.append((func.__name__, tuple(counts())))
            return func(*args, **kwargs)
        return call

    monkeypatch.setattr(np.linalg, "eigh", recorded(np.linalg.eigh))
    monkeypatch.setattr(scipy.linalg, "cho_factor", recorded(scipy.linalg.cho_factor))
    rng = np.random.default_rng(0)
    X = rng.dirichlet(np.ones(6), size=200)
    AnchorMap("chi2", 20).fit(X)
    EMKFeatures(20, n_iter=3, rng=0).fit(rng.normal(size=(300, 5)))
    names = {name for name, _ in seen}
    assert names == {"eigh", "cho_factor"}
    one = (1,) * len(counts())
    assert all(c == one for _, c in seen), seen
    assert counts() == [2] * len(counts())
