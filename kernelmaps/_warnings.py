"""The package's warnings: `DegenerateWarning`, the one function that
issues it, pointing at the user's call, and the test of a point kernel's
matrix for it (`degenerate`, `degenerate_message`), shared by the kernels
and the two-sample tests; `CostWarning` and its function (`warn_cost`)."""

import math
import os
import sys
import warnings

import numpy as np

from ._engine.layout import row_blocks

__all__ = ["PACKAGE", "CostWarning", "DegenerateWarning", "constant_value",
           "degenerate", "degenerate_message", "warn_caller", "warn_cost",
           "warn_degenerate", "warn_uninformative"]

# The package's folder: a frame of a file in it is the package's own call.
PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


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


def warn_degenerate(message):
    """Issue `message` as a `DegenerateWarning` attributed to the first
    caller outside kernelmaps (the user's line)."""
    warn_caller(message, DegenerateWarning)


def warn_cost(message):
    """Issue `message` as a `CostWarning` attributed to the first caller
    outside kernelmaps (the user's line)."""
    warn_caller(message, CostWarning)


def warn_caller(message, category):
    """Issue `message` as a warning of `category` attributed to the first
    caller outside kernelmaps (the user's line; scikit-learn's wrapper of
    the transform methods of `kernelmaps.sklearn` is passed too)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and (
            frame.f_code.co_filename.startswith(PACKAGE)
            or frame.f_globals.get("__name__") == "sklearn.utils._set_output"):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


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
    if not 0 < one < np.inf:  # (pair weights beyond the float range: unknown)
        return None
    if K[corner] == one and all(np.array_equal(K[a:b], ones(a, b))
                                for a, b in blocks):
        return "one"
    return None


def degenerate_message(kind, kernel, gamma, between="points", equal=False,
                       scale="gamma"):
    """What a `DegenerateWarning` of a point kernel says (`kind` from
    `degenerate`, or "constant": a kernel constant on objects equal as it
    sees them; `equal`: the points are all equal, so that the kernel is 1
    between all of them whatever gamma)."""
    if kind == "constant":
        return (f"the {kernel} kernel is the same between all {between}: they "
                f"are equal as far as the kernel sees, and the kernel matrix, "
                f"constant, carries no information")
    if kind == "one" and equal:
        return (f"the {kernel} kernel is 1 between all points: the points are "
                f"all equal, and the kernel matrix, constant, carries no "
                f"information")
    if kind == "zero":
        return (f"the {kernel} kernel with {scale}={gamma:.3g} is 0 between "
                f"all {between}: {scale} is far too large for the distances "
                f"between them, and the kernel matrix carries no information "
                f"(use a smaller {scale}{_HEURISTIC[scale]})")
    return _too_small(kernel, "gamma", gamma, 1.0, "points")


def _too_small(kernel, scale, gamma, value, between):
    """The message of a kernel whose `scale` (its value `gamma`) is far too
    small: the kernel is `value` between all `between`."""
    return (f"the {kernel} kernel with {scale}={gamma:.3g} is {value:.6g} "
            f"between all {between}: {scale} is far too small for the "
            f"distances between them, and the kernel matrix, constant, carries "
            f"no information (use a larger {scale}{_HEURISTIC[scale]})")


def constant_value(K, symmetric):
    """The value of every entry of the kernel matrix `K` where they are the
    same up to rounding (within 1e-12 relative: a constant kernel on the
    data, its sums taken in different orders), else None; a matrix between
    fewer than two objects on a side (one object where `symmetric`) is
    never constant. Two entries tell most calls apart; the whole matrix is
    read, a block of rows at a time, only where they are equal."""
    if K.shape[0] < 2 or (not symmetric and K.shape[1] < 2):
        return None
    value = K.item(0, 0)  # (Python floats: a small call's check is short)
    if not math.isfinite(value):
        return None
    tol = CONSTANT_RTOL * abs(value)
    if not (abs(K.item(0, 1) - value) <= tol and abs(K.item(1, 0) - value) <= tol):
        return None  # (Python floats overflow to inf, without a warning)
    with np.errstate(over="ignore", invalid="ignore"):  # (1e308 - -1e308)
        if all(np.all(np.abs(K[a:b] - value) <= tol) for a, b in row_blocks(K)):
            return value
    return None


# The relative spread of the entries of a kernel matrix under which it is
# constant: far above the rounding of its sums (a few units in the last
# place of float64), far below any difference between objects that a
# kernel machine could use.
CONSTANT_RTOL = 1e-12


# What a scale of None is, by the scale's name.
_HEURISTIC = {"gamma": "; gamma=None is the median heuristic", "beta": "", "gamma2": ""}


def warn_uninformative(K, symmetric, kernel, between, gamma=None, equal=None,
                       scale="gamma"):
    """Issue a `DegenerateWarning` where the kernel matrix `K` (of the
    `kernel`, between the objects `between`, e.g. "sets of X") carries no
    information: it is constant, or, for a kernel ``exp(-gamma d)`` given
    `gamma`, 0 between all distinct objects. `equal`, for such a kernel:
    whether its distances d are all 0 (a bool, or a function that tells,
    called only where `K` is constant). The message says why: the objects
    are equal as the kernel sees them (distances all 0, or a kernel without
    distances), or `gamma` (named `scale` in the message) far too small or
    too large for the distances (gamma None: the median heuristic,
    arbitrary where they are all 0)."""
    if gamma is not None and equal is not None and degenerate(
            K, symmetric) == "zero":
        warn_degenerate(degenerate_message("zero", kernel, gamma, between,
                                           scale=scale))
        return
    value = constant_value(K, symmetric)
    if value is None:
        return
    if callable(equal):
        equal = equal()
    if equal is False and gamma is not None:
        warn_degenerate(_too_small(kernel, scale, gamma, value, between))
        return
    if value == 0 and not equal:
        warn_degenerate(
            f"the {kernel} kernel is 0 between all {between} (its values are "
            f"all 0 or below the float range), and the kernel matrix carries "
            f"no information")
        return
    arbitrary = (" (gamma, from the median of distances that are all 0, is "
                 "arbitrary)" if equal and gamma is None else "")
    warn_degenerate(
        f"the {kernel} kernel is {value:.6g} between all {between}: they are "
        f"equal as far as the kernel sees, and the kernel matrix, constant, "
        f"carries no information{arbitrary}")
