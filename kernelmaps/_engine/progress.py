"""Progress bars (tqdm, when the caller asked for one) and the chunks of
work between which a bar can move."""

import itertools
from contextlib import contextmanager

import numpy as np

__all__ = ["progress_bar", "progress_chunks"]


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
