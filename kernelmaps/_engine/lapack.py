"""Dense products that Ctrl-C can stop, and the BLAS on one thread.

- `matmul` multiplies in blocks of rows (each a BLAS call of a few tens of
  milliseconds), so that Ctrl-C stops between two.
- `one_blas_thread` runs the BLAS on one thread around many small BLAS and
  LAPACK calls, those made from the package's own threads and those of the
  fits on small matrices: there a multithreaded BLAS gains nothing, and
  on a loaded machine each call waits for its descheduled threads.

- `blas_threads` bounds the BLAS threads of a factorisation by the
  function's `workers`, as `workers` bounds the package's own threads.

The factorisations (`scipy.linalg.eigh`, ``ldl``, ``cho_factor``,
`numpy.linalg.qr`) are called directly. As in SciPy, Ctrl-C cannot stop one
once it has started; the package keeps them short by design (Nystroem's
eigendecomposition is of the landmarks only; `rf_pca` factors a matrix of
the features' size, not the data's). They run on the BLAS threads the user
set (threadpoolctl, ``OPENBLAS_NUM_THREADS``), at most `workers` of them
where the function takes `workers`: one thread is faster on a loaded
machine but slower on an idle one with many cores, and the package does
not probe the machine to tell the two apart.
"""

import contextlib
import functools
import threading

import numpy as np

from .layout import MATMUL_BLOCK_FLOPS

try:
    import threadpoolctl
except ImportError:  # optional: then `one_blas_thread` changes nothing
    threadpoolctl = None

__all__ = ["blas_threads", "matmul", "one_blas_thread"]


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
    count the process had. Through threadpoolctl when it is installed;
    without it nothing changes."""
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


@contextlib.contextmanager
def blas_threads(n):
    """Run the BLAS of NumPy and SciPy on at most `n` threads inside the
    block (the factorisations of a call given ``workers=n``), then restore
    the counts; inside `one_blas_thread` (one thread) nothing changes.
    Through threadpoolctl when it is installed; without it nothing
    changes."""
    with _OneThread.lock:
        restore = _set_blas_threads(n) if _OneThread.depth == 0 else None
    try:
        yield
    finally:
        if restore is not None:
            restore()


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
    process, from threadpoolctl (3.0 or later); none without it."""
    if not hasattr(threadpoolctl, "ThreadpoolController"):
        return ()
    found = threadpoolctl.ThreadpoolController().select(user_api="blas")
    return tuple((c.get_num_threads, c.set_num_threads)
                 for c in found.lib_controllers)
