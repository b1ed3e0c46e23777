"""The one rule for the default kernel scale ``gamma`` of the package.

``gamma=None`` means the median heuristic with a fixed seed (`point_median_gamma`)
on the data that define the kernel: the training data given to `fit`, for a
map or an estimator; for a kernel function ``f(X, Y)``, the collection `Y`
whose kernel is extended (X when Y is None), so that ``f(X_train)`` and
``f(X_test, X_train)`` use the same value. It applies to the distance
kernels ("rbf", "laplacian"); the scale of an inner product ("polynomial")
stays ``1 / d``, as in scikit-learn. doc/user_guide/conventions.rst says
this to users.
"""

import math

import numpy as np
import scipy.sparse
from scipy.spatial.distance import pdist

from ._bags import Bags
from ._engine.layout import max_abs, power_of_two_exponent
from ._lazy import is_lazy
from ._libraries import is_foreign, library_of
from ._validation import check_points, check_rng, check_scalar, check_sets, check_size

__all__ = ["MEDIAN_SAMPLE", "MEDIAN_SEED", "device_sample", "median_rows",
           "point_median_gamma", "resolve_gamma", "weighted_median"]

# The default sample of the median heuristic, and its fixed seed: the same
# data give the same gamma on every call.
MEDIAN_SAMPLE = 1000
MEDIAN_SEED = 0

# The distance each distance kernel is a function of.
_METRICS = {"rbf": "sqeuclidean", "laplacian": "cityblock"}


def point_median_gamma(X, *, kernel="rbf", sample=MEDIAN_SAMPLE, rng=MEDIAN_SEED,
                 name="X", degenerate="raise"):
    """``1 / median`` of the distances of the kernel (squared Euclidean
    for "rbf", L1 for "laplacian") between distinct points of a sample of
    `X` (points, or the pooled points of sets); see `median_heuristic`.

    With ``degenerate="fallback"``, data where the heuristic is undefined
    do not raise: when most sampled pairs coincide the median is over the
    distinct pairs, and with fewer than 2 distinct points gamma is 1 (the
    kernel is then constant on the data, whatever gamma).

    Weighted sets (a `Bags` with weights): the points of positive weight
    are sampled as points without weights are, and the median is the
    `weighted_median` of the distances, a pair of distinct sampled points
    weighing the product of their weights."""
    fallback = degenerate == "fallback"
    weights = None
    if _held_elsewhere(X):  # (checked by the caller; `sample` first here)
        if sample is not None:
            sample = check_scalar(sample, "sample", kind="int", low=2)
        X = device_sample(X, sample, rng)
    if isinstance(X, Bags) and X.weights is not None:
        bags = check_sets(X, name, weighted=True)
        keep = bags.weights > 0
        points, weights = bags.points[keep], bags.weights[keep]
    else:
        points = check_points(X, name)
    n = points.shape[0]
    if sample is not None:
        sample = check_scalar(sample, "sample", kind="int", low=2)
    generator = check_rng(rng)  # checked even when every point is taken
    if n < 2 and fallback:
        return 1.0
    if n < 2:
        raise ValueError(
            f"{name} must hold at least 2 points for the median heuristic, "
            f"got {n}; give gamma"
        )
    if sample is not None and n > sample:
        rows = _sample(n, sample, generator)
        points = points[rows]
        weights = None if weights is None else weights[rows]
    distances, exponent = scaled_distances(points, kernel)
    pair_weights = None if weights is None else _pair_weights(weights)
    median = _median(distances, pair_weights)
    if not median > 0 and fallback:
        distinct = distances > 0
        distances = distances[distinct]
        if distances.size == 0:
            return 1.0
        median = _median(distances, None if pair_weights is None
                         else pair_weights[distinct])
    if not median > 0:
        raise ValueError(
            f"the median distance between points of {name} is 0 (most of them "
            f"coincide); give gamma"
        )
    return float(unscaled_gammas(1.0 / median, kernel, exponent,
                                 f"median distance of {name}", name)[0])


def scaled_distances(points, kernel):
    """The distances of `kernel` (squared Euclidean for "rbf", L1 for
    "laplacian") between the rows of `points`, and the exponent e they are
    computed at: on the points times 2**e (exact), for a largest magnitude
    of about 2**480 (`power_of_two_exponent`), so that they neither
    overflow nor underflow. The gammas found from them are scaled back by
    `unscaled_gammas`."""
    exponent = power_of_two_exponent(max_abs(points), 480)
    scaled = np.ldexp(np.asarray(points, dtype=np.float64), exponent)
    return pdist(scaled, _METRICS[kernel]), exponent


def unscaled_gammas(gammas, kernel, exponent, what, name):
    """`gammas` for the distances of `scaled_distances` (at `exponent`)
    made gammas of the points themselves (times 2**(2e) for "rbf", whose
    distances are squared, 2**e for "laplacian"), as a float64 array; a
    ValueError when one is beyond the float64 range ("gamma = 1 / `what`
    ...: scale `name` ...")."""
    gammas = np.atleast_1d(np.asarray(gammas, dtype=np.float64))
    power = 2 if kernel == "rbf" else 1
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(gammas, power * exponent)
    if not np.all((np.finfo(np.float64).tiny <= out) & (out < math.inf)):
        bad = float(gammas[~((np.finfo(np.float64).tiny <= out)
                             & (out < math.inf))][0])
        raise ValueError(
            f"gamma = 1 / {what} = 2**"
            f"{power * exponent + math.log2(bad):.0f} is beyond the float64 "
            f"range: scale {name} to magnitudes nearer 1"
        )
    return out


def _sample(n, size, generator):
    """Sorted indices of `size` of `n` rows, drawn without replacement."""
    return np.sort(generator.choice(n, size=size, replace=False))


def _pair_weights(weights):
    """The weights of the pairs of distinct points (in the order of
    `pdist`): the products of the points' `weights`, these first divided by
    their largest (a common factor: the products neither overflow nor, for
    weights within 2**500 of the largest, underflow)."""
    w = weights / weights.max()
    rows, cols = np.triu_indices(len(w), 1)
    return w[rows] * w[cols]


def weighted_median(values, weights):
    """The weighted median of `values` (1-D float) with the non-negative
    `weights`: the smallest value at which the cumulative weight (the
    values in ascending order) reaches half of the total, or, where it
    is exactly half there, the mean of that value and the next one of
    positive weight. With equal weights, ``np.median``; NaN where no weight
    is positive."""
    positive = weights > 0
    values, weights = values[positive], weights[positive]
    if values.size == 0:
        return math.nan
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(weights[order])
    half = cumulative[-1] / 2
    k = int(np.searchsorted(cumulative, half, side="left"))
    if cumulative[k] == half and k + 1 < values.size:
        return float((values[k] + values[k + 1]) / 2)
    return float(values[k])


def _median(values, weights=None):
    """``np.median`` of a 1-D float array (the same value: the middle one,
    or the mean of the two middle ones), by a partition in place, which is
    several times faster; with `weights`, the `weighted_median`."""
    if weights is not None:
        return weighted_median(values, weights)
    k = values.size // 2
    values.partition(k)  # one k: partitioning at [k - 1, k] is 7x slower
    if values.size % 2:
        return float(values[k])
    return float((values[:k].max() + values[k]) / 2)


def resolve_gamma(gamma, kernel, reference, name="gamma", data="X"):
    """`gamma` checked (positive, finite), or for None the package's
    default: `point_median_gamma` of `reference` (validated points, sets or
    CSR rows, of which only a sample is made dense; lazy points, a 2-D Dask
    array or a Bags of Dask points, of which only the sample is computed;
    named `data` in errors) for "rbf" and "laplacian", and
    ``1 / d`` for the other kernels (`reference` then gives d through its
    ``shape[1]`` or ``dim``)."""
    if gamma is not None:
        return check_scalar(gamma, name, low=0, low_inclusive=False)
    if kernel in _METRICS and is_lazy(reference):
        reference = _lazy_sample(reference, data)
    elif kernel in _METRICS and _held_elsewhere(reference):
        reference = device_sample(reference)
    if scipy.sparse.issparse(reference):
        # Only the rows the heuristic samples are made dense: the same rows
        # as for the dense matrix (the same draw).
        n = reference.shape[0]
        if n > MEDIAN_SAMPLE:
            reference = reference[median_rows(n)]
        check_size(rows=reference.shape[0], d=reference.shape[1])
        reference = reference.toarray()
    if kernel in _METRICS:
        return point_median_gamma(reference, kernel=kernel, name=data,
                                  degenerate="fallback")
    d = (reference.dim if isinstance(reference, Bags) or hasattr(reference, "pooled")
         else reference.shape[1])
    return 1.0 / d


def median_rows(n, sample=MEDIAN_SAMPLE, rng=MEDIAN_SEED):
    """The rows of n points that `point_median_gamma` samples (of the
    points in memory): all of them up to `sample` (None: all), else that
    many, drawn by `rng` (`MEDIAN_SEED`: the package's draw), sorted."""
    if sample is None or n <= sample:
        return np.arange(n)
    return _sample(n, sample, check_rng(rng))


def _held_elsewhere(X):
    """Whether `X` holds its points in another array library (an array, a
    `Bags` of its points, or checked sets of it, which say ``pooled()``)."""
    return (hasattr(X, "pooled")
            or is_foreign(X.points if isinstance(X, Bags) else X))


def device_sample(X, sample=MEDIAN_SAMPLE, rng=MEDIAN_SEED):
    """The points of `X`, held by another array library on its device, that
    `point_median_gamma` samples (the same rows, drawn by `rng`, as for the
    same points in NumPy; only points of positive weight), gathered there
    and copied to the host: at most `sample` rows (a `Bags` of one set
    with their weights where `X` is weighted), checked by the caller. `X`
    is a 2-D array of points, a `Bags` of such points, or checked sets
    whose ``pooled()`` gives ``(library, points, rows, weights)``: their
    points as a 2-D array, the rows of those in the order of a Bags, and
    their weights (None: unweighted)."""
    if hasattr(X, "pooled"):
        library, points, rows, weights = X.pooled()
    else:
        bags = X if isinstance(X, Bags) else None
        points = X.points if bags is not None else X
        library = library_of(X=points)
        rows = np.arange(points.shape[0])
        weights = None if bags is None else bags.weights
    if weights is not None:
        rows, weights = rows[weights > 0], weights[weights > 0]
    taken = median_rows(rows.size, sample, rng)
    if rows.size < points.shape[0] or taken.size < rows.size:  # (else: all)
        points = library.xp.take(points, library.from_numpy(rows[taken]), axis=0)
    points = library.to_numpy(points)
    if weights is None:
        return points
    return Bags(points, np.array([0, taken.size]), weights[taken])


def _lazy_sample(reference, data):
    """The points of lazy `reference` that `point_median_gamma` samples (the
    same draw as for the points in memory: all of them up to
    `MEDIAN_SAMPLE`), computed (only those rows are asked for) and checked
    finite, as an array in memory."""
    bags = reference if isinstance(reference, Bags) else None
    points = reference.points if bags is not None else reference
    n = points.shape[0]
    rows = median_rows(n)
    sample = np.asarray(points[rows].compute())
    finite = np.isfinite(sample).all(axis=1)
    if not finite.all():
        where = rows[np.argmin(finite)]
        if bags is None:
            raise ValueError(f"{data} contains NaN or infinity")
        i = np.searchsorted(bags.offsets, where, side="right") - 1
        raise ValueError(f"{data}[{i}] contains NaN or infinity")
    return sample
