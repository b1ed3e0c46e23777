"""kernelmaps._engine.lapack: `matmul` in blocks gives ``A @ B``; small
calls run on one BLAS thread (through threadpoolctl) and the thread counts
are restored; without threadpoolctl nothing changes."""

import threading

import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_array_equal

from kernelmaps._engine import lapack


@pytest.fixture
def blas():
    """The BLAS libraries found through threadpoolctl."""
    pytest.importorskip("threadpoolctl")
    lapack._blas.cache_clear()
    if not lapack._blas():
        pytest.skip("threadpoolctl finds no BLAS library")
    yield
    lapack._blas.cache_clear()


def counts():
    return [get_threads() for get_threads, _ in lapack._blas()]


@pytest.fixture
def two_threads(blas):
    """The BLAS libraries on two threads during the test (one CPU is enough:
    the count is what is checked, not the speed)."""
    restore = [(set_threads, get_threads()) for get_threads, set_threads
               in lapack._blas()]
    for set_threads, _ in restore:
        set_threads(2)
    yield
    for set_threads, count in restore:
        set_threads(count)


def test_matmul_in_blocks_of_rows(monkeypatch):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(37, 5)), rng.normal(size=(5, 4))
    monkeypatch.setattr(lapack, "MATMUL_BLOCK_FLOPS", 2 * 5 * 4 * 3)  # 3 rows
    blocks = [A[i:i + 3] @ B for i in range(0, 37, 3)]
    assert_array_equal(lapack.matmul(A, B), np.vstack(blocks))
    assert lapack.matmul(A[:0], B).shape == (0, 4)
    monkeypatch.undo()
    assert_array_equal(lapack.matmul(A, B), A @ B)  # one block


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


def test_one_blas_thread_overlapping_threads_restore(monkeypatch):
    """Thread A enters, B enters, A leaves, B leaves: the count the process
    had comes back (each call restoring what it saw would leave one). On a
    recorded count (threadpoolctl lets one Python thread control OpenBLAS:
    from others it changes nothing)."""
    count = [2]
    monkeypatch.setattr(lapack, "_blas", lambda: (
        (lambda: count[0], lambda n: count.__setitem__(0, n)),))
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with lapack.one_blas_thread():
            a_in.set()
            b_in.wait(5)
        seen["after a"] = count[0]
        a_out.set()

    def b():
        a_in.wait(5)
        with lapack.one_blas_thread():
            b_in.set()
            a_out.wait(5)
            seen["b after a left"] = count[0]

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after a": 1, "b after a left": 1}
    assert count == [2]


def test_thread_counts_are_only_lowered(two_threads):
    restore = lapack._set_blas_threads(8)
    assert counts() == [2] * len(counts())
    restore()
    assert counts() == [2] * len(counts())


def test_without_threadpoolctl_nothing_changes(monkeypatch):
    monkeypatch.setattr(lapack, "threadpoolctl", None)
    lapack._blas.cache_clear()
    try:
        assert lapack._blas() == ()
        with lapack.one_blas_thread():
            assert_array_equal(lapack.matmul(np.eye(2), np.ones((2, 1))),
                               np.ones((2, 1)))
    finally:
        lapack._blas.cache_clear()


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


def test_factorisations_run_on_at_most_workers_blas_threads(two_threads,
                                                            monkeypatch):
    """project_psd, PSDProjector.fit and NystroemMap.fit: their
    factorisations see at most `workers` BLAS threads (beside busy cores
    all of them were 3 to 8 times slower), the same results, and the count
    comes back after; without workers, the count the process has."""
    from kernelmaps import NystroemMap, PSDProjector, project_psd

    seen = []

    def recorded(func):
        def call(*args, **kwargs):
            seen.append(tuple(counts()))
            return func(*args, **kwargs)
        return call

    for name in ("eigh", "ldl"):
        monkeypatch.setattr(scipy.linalg, name, recorded(getattr(scipy.linalg, name)))
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 40))
    K = A + A.T
    one, two = (1,) * len(counts()), (2,) * len(counts())
    for method in ("clip", "shift"):
        seen.clear()
        P = project_psd(K, method=method, workers=1)
        assert seen and set(seen) == {one}, seen
        seen.clear()
        assert_array_equal(project_psd(K, method=method), P)
        assert set(seen) == {two}
        seen.clear()
        PSDProjector(method).fit(K, workers=1)
        assert set(seen) == {one}
    sets = [rng.normal(size=(5, 2)) for _ in range(30)]
    seen.clear()
    nys = NystroemMap(10, landmarks="leverage", rng=0).fit(sets, workers=1)
    Z = nys.transform(sets)
    assert seen and set(seen) == {one}, seen
    assert_array_equal(Z, NystroemMap(10, landmarks="leverage", rng=0).fit(
        sets).transform(sets))
    assert counts() == [2] * len(counts())
