"""The package's warning, `DegenerateWarning`, and the one function that
issues it, pointing at the user's call."""

import os
import sys
import warnings

__all__ = ["DegenerateWarning", "warn_degenerate"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class DegenerateWarning(UserWarning):
    """A result that is exact but carries no information.

    Issued where a kernel has become the identity (its values between
    distinct points underflow to 0: its scale ``gamma`` is far too large
    for the data) or a constant (they all round to 1: ``gamma`` far too
    small), and where a test can never reject at its level (too few
    resamples for it). The numbers returned are still the exact values of
    what was asked; the warning says that they cannot be used to tell the
    data apart. Silence it as any warning, e.g. ``warnings.simplefilter(
    "ignore", kernelmaps.DegenerateWarning)``.

    Parameters
    ----------
    message : str
        What is degenerate, and what to change.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import kernelmaps as km
    >>> sets = [np.array([[0.0], [1.0]]), np.array([[3.0], [5.0]])]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     K = km.sum_match_kernel(sets, gamma=1e4)
    >>> K
    array([[0.5, 0. ],
           [0. , 0.5]])
    >>> caught[0].category.__name__
    'DegenerateWarning'
    """


def warn_degenerate(message):
    """Issue `message` as a `DegenerateWarning` attributed to the first
    caller outside kernelmaps (the user's line)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, DegenerateWarning, stacklevel=level)
