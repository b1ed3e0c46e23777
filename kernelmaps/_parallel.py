"""The `workers` and `progress` arguments of the long-running functions:
the number of threads, and whether a progress bar can be shown (the bars
themselves are drawn by kernelmaps._engine.progress)."""

import functools
import math
import numbers
import os

import numpy as np

from ._engine._runtime import max_threads, num_procs
from ._validation import check_bool

__all__ = ["available_cpus", "check_progress", "resolve_workers"]


def resolve_workers(workers):
    """Number of threads for the `workers` argument, at most the CPUs this
    process may use (`available_cpus`).

    None: what OpenMP would use now (all of them unless ``OMP_NUM_THREADS``
    or threadpoolctl says otherwise). A negative value counts from the
    number of CPUs, as in `scipy.fft`: -1 is all of them, -2 all but one. A
    larger number than there are CPUs gives one thread per CPU (results do
    not depend on the number of threads). Each engine runs small work on
    fewer threads still (one below about 0.2 ms of work).
    """
    cpus = available_cpus()
    if workers is None:
        return max(1, min(max_threads(), cpus))
    if isinstance(workers, np.ndarray) and workers.ndim == 0:
        workers = workers[()]  # a 0-d array: its NumPy scalar
    if isinstance(workers, (bool, np.bool_)) or not isinstance(
            workers, numbers.Integral):
        raise TypeError(
            f"workers must be an int or None, got {type(workers).__name__}"
        )
    workers = int(workers)
    if workers == 0:
        raise ValueError("workers must be a positive int (threads), a negative "
                         "one (-1: all CPUs, -2: all but one, ...) or None (all "
                         "CPUs), got 0")
    if workers < 0:
        n = cpus + 1 + workers
        if n < 1:
            raise ValueError(
                f"workers={workers} leaves no thread on the {cpus} CPUs this "
                f"process may use"
            )
        return n
    return min(workers, cpus)


@functools.cache
def available_cpus():
    """CPUs this process may use: its affinity mask, and the CPU quota of its
    cgroup (a container's limit), as scikit-learn's thread count does
    (through loky). Read once per process."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, min(n, num_procs()))


def _cgroup_quota():
    """CPUs of the cgroup quota (cgroup v2, else v1), or None for none."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def check_progress(progress):
    """Validate `progress` early, before any long computation starts."""
    if check_bool(progress, "progress"):
        try:
            import tqdm  # noqa: F401
        except ImportError:
            raise ImportError(
                "progress=True needs tqdm, which is not installed; install it "
                "with `pip install 'kernelmaps[progress]'`"
            ) from None
    return bool(progress)
