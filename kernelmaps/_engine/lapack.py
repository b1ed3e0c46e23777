"""Dense linear algebra that Ctrl-C can stop.

A LAPACK or BLAS routine runs to its end once called: Python raises a
pending KeyboardInterrupt only when it returns, seconds or minutes later for
a large matrix. Here:

- `eigh` and `ldl` run a factorisation estimated to take more than
  `FORK_SECONDS` in a forked child process (on Linux): the parent waits on a
  pipe in short waits and, on Ctrl-C, kills the child and raises at once.
  The child reads the matrix copy-on-write and sends the result back.
  Elsewhere (no fork) and for smaller matrices they call SciPy directly.
- `matmul` multiplies in blocks of rows (each a BLAS call of a few tens of
  milliseconds), so that Ctrl-C stops between two.
"""

import os
import pickle
import select
import signal
import sys
import warnings

import numpy as np
import scipy.linalg

__all__ = ["FORK_SECONDS", "eigh", "ldl", "matmul"]

# Calls estimated longer than this run in a child process.
FORK_SECONDS = 0.25
# Seconds per n**3 of a symmetric eigendecomposition, and of an LDL^T
# factorisation (OpenBLAS, 2 cores: 0.9 s and 0.3 s at n = 2000).
_EIGH_RATE = 1.2e-10
_LDL_RATE = 4e-11
# Floating-point operations of one block of `matmul` (tens of milliseconds).
_MATMUL_BLOCK_FLOPS = 5e8


def eigh(A, **kwargs):
    """`scipy.linalg.eigh(A, **kwargs)`, in a child process when long."""
    return _call(scipy.linalg.eigh, A, kwargs, _EIGH_RATE * len(A) ** 3)


def ldl(A, **kwargs):
    """`scipy.linalg.ldl(A, **kwargs)`, in a child process when long."""
    return _call(scipy.linalg.ldl, A, kwargs, _LDL_RATE * len(A) ** 3)


def matmul(A, B):
    """``A @ B`` for 2-D arrays, in blocks of rows of A."""
    rows = A.shape[0]
    step = max(1, int(_MATMUL_BLOCK_FLOPS // max(2.0 * A.shape[1] * B.shape[1],
                                                 1.0)))
    if step >= rows:
        return A @ B
    out = np.empty((rows, B.shape[1]), dtype=np.result_type(A, B))
    for start in range(0, rows, step):
        np.matmul(A[start:start + step], B, out=out[start:start + step])
    return out


def _call(func, A, kwargs, seconds):
    if seconds < FORK_SECONDS or not _can_fork():
        return func(A, **kwargs)
    return _forked(func, A, kwargs)


def _can_fork():
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def _forked(func, A, kwargs):
    """func(A, **kwargs) in a forked child; its result or its exception."""
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
