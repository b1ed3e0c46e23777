"""Progress bars: tqdm when the caller asked for one (the chunks a bar moves
between are those of `schedule.run_chunked`)."""

from contextlib import contextmanager

__all__ = ["progress_bar"]


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
