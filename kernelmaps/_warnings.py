"""The package's warnings: `DegenerateWarning`, the one function that
issues it, pointing at the user's call, and the test of a point kernel's
matrix for it (`degenerate`, `degenerate_message`), shared by the kernels
and the two-sample tests; `CostWarning` and its function (`warn_cost`)."""

import os
import sys
import warnings

import numpy as np

from ._engine.layout import row_blocks

__all__ = ["CostWarning", "DegenerateWarning", "degenerate",
           "degenerate_message", "warn_cost", "warn_degenerate"]

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


class CostWarning(UserWarning):
    """A call whose estimated time is far beyond a minute, said before it
    starts.

    Issued by `mmd_test` where its cost model (arithmetic on the sizes, the
    dimension, the resamples and the method, with the speed of a fast core
    on each thread the call uses: an estimate on the short side) gives more
    than 10 minutes; the message says the estimate and the faster ways the
    user guide recommends at that size. The call then runs as asked. As
    scikit-learn's ``EfficiencyWarning``, it is a `UserWarning`: silence it
    with ``warnings.simplefilter("ignore", kernelmaps.CostWarning)``, or
    make it an error (``"error"``) to stop such calls before they start.

    Parameters
    ----------
    message : str
        The estimate, and what is faster.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import kernelmaps as km
    >>> X, Y = np.random.default_rng(0).normal(size=(2, 150_000, 3))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", km.CostWarning)  # stop, do not run
    ...     try:
    ...         km.mmd_test(X, Y, workers=1)
    ...     except km.CostWarning as warning:
    ...         print(str(warning)[:63])
    mmd_test(method='permutation') of n=150000 and m=150000 objects
    """


def _warn(message, category):
    """Issue `message` as a `category` warning attributed to the first
    caller outside kernelmaps (the user's line)."""
    level, frame = 3, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def warn_degenerate(message):
    """Issue `message` as a `DegenerateWarning` attributed to the first
    caller outside kernelmaps (the user's line)."""
    _warn(message, DegenerateWarning)


def warn_cost(message):
    """Issue `message` as a `CostWarning` attributed to the first caller
    outside kernelmaps (the user's line)."""
    _warn(message, CostWarning)


def degenerate(K, symmetric, pairs=None):
    """How a point kernel with values in [0, 1] is degenerate on the data,
    from `K`, its means over pairs of points (or its sums over the pairs,
    `pairs` = (rows, cols): the sizes of the sets of its rows and columns,
    ``rows[i] * cols[j]`` pairs for ``K[i, j]``): "zero" where it is 0
    between all points of different sets (the off-diagonal entries are 0
    where `symmetric`, else every entry), "one" where it is 1 between all
    points (every entry is 1), else None. One entry tells most calls apart;
    the whole matrix is read, a block of rows at a time (Ctrl-C stops
    between two), only where that entry is degenerate."""
    n = K.shape[0]
    if symmetric and n < 2:
        return None
    corner = (0, 1) if symmetric else (0, 0)
    blocks = row_blocks(K)
    if K[corner] == 0 and (
            sum(np.count_nonzero(K[a:b]) for a, b in blocks) == n if symmetric
            else not any(K[a:b].any() for a, b in blocks)):
        return "zero"

    def ones(a, b):  # the rows a .. b of K of a kernel that is 1 everywhere
        return np.broadcast_to(
            1.0 if pairs is None else np.multiply.outer(pairs[0][a:b], pairs[1]),
            (b - a, K.shape[1]))

    one = 1.0 if pairs is None else pairs[0][corner[0]] * pairs[1][corner[1]]
    if K[corner] == one and all(np.array_equal(K[a:b], ones(a, b))
                                for a, b in blocks):
        return "one"
    return None


def degenerate_message(kind, kernel, gamma, between="points"):
    """What a `DegenerateWarning` of a point kernel says (`kind` from
    `degenerate`)."""
    if kind == "zero":
        return (f"the {kernel} kernel with gamma={gamma:.3g} is 0 between all "
                f"{between}: gamma is far too large for the distances between "
                f"them, and the kernel matrix carries no information (use a "
                f"smaller gamma; gamma=None is the median heuristic)")
    return (f"the {kernel} kernel with gamma={gamma:.3g} is 1 between all "
            f"points: gamma is far too small for the distances between them, "
            f"and the kernel matrix, constant, carries no information (use a "
            f"larger gamma; gamma=None is the median heuristic)")
