"""Thread counts (`workers`) and progress bars (`progress`), shared by all
long-running functions."""

import itertools
import numbers
from contextlib import contextmanager

import numpy as np

from ._lib._openmp import max_threads, num_procs
from ._validation import check_bool

__all__ = ["check_progress", "progress_bar", "progress_chunks", "resolve_workers"]


def resolve_workers(workers):
    """Number of threads for the `workers` argument.

    None: what OpenMP would use now (all cores unless ``OMP_NUM_THREADS`` or
    threadpoolctl says otherwise). A negative value counts from the number of
    processors, as in `scipy.fft`: -1 is all of them, -2 all but one.
    """
    if workers is None:
        return max_threads()
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral):
        raise TypeError(
            f"workers must be an int or None, got {type(workers).__name__}"
        )
    workers = int(workers)
    if workers == 0:
        raise ValueError("workers must be a positive int, -1 or None, got 0")
    if workers < 0:
        n = num_procs() + 1 + workers
        if n < 1:
            raise ValueError(
                f"workers={workers} leaves no thread on {num_procs()} processors"
            )
        return n
    return workers


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


class _NoBar:
    def update(self, n=1):
        pass


@contextmanager
def progress_bar(progress, total, desc):
    """A tqdm bar when `progress` is True, else an object whose update()
    does nothing."""
    if not progress:
        yield _NoBar()
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, unit="block") as bar:
        yield bar


def progress_chunks(cost, n_threads, progress, max_chunks=50):
    """Split a run of tasks with the given costs into consecutive chunks, so
    a progress bar can move between parallel calls.

    Without a bar, one chunk. With one, chunk boundaries at equal shares of
    the total cost, each chunk with at least ``4 * n_threads`` tasks to keep
    every thread busy. Returns a list of ``(start, stop, chunk_cost)``.
    """
    cum = np.cumsum(cost)
    n = len(cum)
    bounds = [0, n]
    if progress and n:
        n_chunks = max(1, min(max_chunks, n // (4 * n_threads)))
        inner = np.searchsorted(cum, cum[-1] * np.arange(1, n_chunks) / n_chunks)
        bounds = np.unique(np.concatenate([[0], inner, [n]]))
    return [
        (int(a), int(b), int(cum[b - 1] - (cum[a - 1] if a else 0)))
        for a, b in itertools.pairwise(bounds)
    ]
