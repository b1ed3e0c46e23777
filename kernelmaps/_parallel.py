"""The `workers` and `progress` arguments of the long-running functions:
the number of threads, and whether a progress bar can be shown (the bars
themselves are drawn by kernelmaps._engine.progress)."""

import numbers

from ._engine._runtime import max_threads, num_procs
from ._validation import check_bool

__all__ = ["check_progress", "resolve_workers"]


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
