"""Progress bars: tqdm when the caller asked for one (the chunks a bar moves
between are those of `schedule.run_chunked`, or the items of a loop over a
stream: the blocks read out of core, the resamples, an optimiser's
iterations)."""

from contextlib import contextmanager

__all__ = ["NoBar", "progress_bar"]


class NoBar:
    """The bar of ``progress=False``: its update() does nothing."""

    def update(self, n=1):
        pass


@contextmanager
def progress_bar(progress, total, desc, unit="block", leave=True):
    """A tqdm bar when `progress` is True, else an object whose update()
    does nothing. With ``leave=False`` the bar clears itself when closed."""
    if not progress:
        yield NoBar()
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, unit=unit, leave=leave) as bar:
        yield bar
