"""The kernels of sets on arrays of other libraries (`kernelmaps._array_api`):
sets of PyTorch, JAX, CuPy or array-api-strict points checked in their
library, and the mean map kernel, the MMD, the MMD kernel, the
sliced-Wasserstein distances and the quantile features computed by that
library on the points' device, differentiably.

The sets are held padded, ``(n_sets, n_max, d)`` points and ``(n_sets,
n_max)`` shares (1 / size on a set's points, 0 on the padding), so that
each pair of sets' mean of point kernel values is a weighted sum of one
block of values: no loop over sets or points.
"""

import dataclasses
import math

import numpy as np

from .. import _array_api
from .._bags import Bags, pack_sets, segment_sums, shape_stand_in
from .._engine.layout import power_of_two_exponent
from .._engine.set_means import weights_over_largest
from .._validation import (
    check_set_sizes,
    check_set_weights,
    check_set_widths,
    check_sets,
    check_values,
)
from .._warnings import degenerate_message, warn_degenerate

__all__ = [
    "ArraySets",
    "array_bags",
    "centre_means",
    "centre_sums",
    "check_array_set_pair",
    "check_array_sets",
    "check_layout",
    "mean_map",
    "mmd_squared",
    "padding",
    "quantile_means",
    "run",
    "sliced_wasserstein",
    "stacked_rows",
]


@dataclasses.dataclass(frozen=True)
class ArraySets:
    """Checked sets of `library`: `padded` points (n_sets, n_max, d), the
    `shares` of the points in their set's mean (n_sets, n_max), 1 / size
    on each set's points (a weighted `Bags`: weight / total weight) and 0 on
    the padding, the `sizes` and the point `weights` of a weighted Bags, as
    a Bags holds them (NumPy; None: unweighted)."""

    library: _array_api.ArrayLibrary
    padded: object
    shares: object
    sizes: np.ndarray
    weights: np.ndarray = None

    def shares_in(self, dtype):
        """The `shares` (each point's weight over its set's total, 1 / size
        unweighted; 0 on the padding) as an array of the library's `dtype`,
        from float64 on the host."""
        mask, rows = padding(self.sizes, self.padded.shape[1])
        if self.weights is None:
            shares = np.where(mask, 1.0 / np.maximum(self.sizes, 1)[:, None], 0.0)
        else:
            shares = np.where(mask, self.weights[rows] / self.set_weights()[:, None],
                              0.0)
        float32 = dtype == self.library.xp.float32
        return self.library.from_numpy(shares.astype(np.float32 if float32
                                                     else np.float64))

    def point_weights(self):
        """Each point's weight over the largest of its set
        (`weights_over_largest`; 1 unweighted), 0 on the padding: (n_sets,
        n_max) float64 on the host, the weights of the engine's sorts."""
        mask, rows = padding(self.sizes, self.padded.shape[1])
        if self.weights is None:
            return mask.astype(np.float64)
        offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        return np.where(mask, weights_over_largest(self.weights, offsets)[rows], 0.0)

    def set_weights(self):
        """The total weight of each set (`Bags.set_weights`): its size where
        the sets are not weighted."""
        if self.weights is None:
            return self.sizes.astype(np.float64)
        return segment_sums(self.weights, np.concatenate([[0], np.cumsum(self.sizes)]))

    def __len__(self):
        return len(self.sizes)

    @property
    def n_points(self):
        return int(self.sizes.sum())

    @property
    def dim(self):
        return self.padded.shape[2]

    @property
    def dtype(self):
        return self.padded.dtype

    def pooled(self):
        """The library, the points as one 2-D array of the library (the
        padded points, flattened), the rows of the sets' points in it in
        the order of a `Bags` (NumPy), and their weights (None: unweighted):
        what `_gamma.device_sample` gathers the median's sample from."""
        n_sets, n_max, d = self.padded.shape
        mask, _ = padding(self.sizes, n_max)
        return (self.library, self.library.xp.reshape(self.padded, (n_sets * n_max, d)),
                np.flatnonzero(mask), self.weights)

    def take(self, index):
        """The sets `index` (NumPy integers), gathered on the device."""
        weights = self.weights
        if weights is not None:  # (those of the points of the sets taken)
            offsets = np.concatenate([[0], np.cumsum(self.sizes)])
            weights = np.concatenate([weights[offsets[i]:offsets[i + 1]]
                                      for i in index])
        rows = self.library.from_numpy(np.asarray(index, dtype=np.int64))
        xp = self.library.xp
        return ArraySets(self.library, xp.take(self.padded, rows, axis=0),
                         xp.take(self.shares, rows, axis=0), self.sizes[index],
                         weights)

    def bags(self):
        """The sets as a NumPy `Bags` (their values copied to the host where
        they are elsewhere)."""
        P = self.library.to_numpy(self.padded)
        points = np.concatenate([P[i, :n, :] for i, n in enumerate(self.sizes)])
        return Bags(points, np.concatenate([[0], np.cumsum(self.sizes)]),
                    self.weights)


def stacked_rows(library, X):
    """A list or tuple of 1-D arrays of `library` as the 2-D array of those
    rows, stacked on their device, as NumPy's path reads a list of rows
    (`check_points`); anything else as it is."""
    if not (isinstance(X, (list, tuple)) and X and all(
            _array_api.is_foreign(a) and a.ndim == 1 for a in X)):
        return X
    if len({a.shape[0] for a in X}) > 1:
        raise ValueError("X must be a 2-D array of points (rows of equal length) "
                         "or a collection of 2-D sets; got a ragged sequence")
    return library.xp.stack(X)


def check_layout(X, name="X"):
    """NumPy's checks (`check_sets`) of the layout of the sets X of another
    library given as a list of its arrays or one 3-D array, with NumPy's
    messages, read from their shapes alone (`shape_stand_in`); a `Bags`
    passes (its layout is its offsets, checked with its weights by the
    caller)."""
    if isinstance(X, (list, tuple)):
        check_sets([shape_stand_in(a, 2) for a in X], name)
    elif _array_api.is_foreign(X):
        check_sets(shape_stand_in(X, 3), name)


def array_bags(library, X, name, check):
    """The sets X of `library` (a list of its 2-D arrays, a 3-D array or a
    `Bags` of its points) as a `Bags` of their points on their device (as
    given, with their gradient; float32 where every set is, else float64)
    and its host stand-in (zeros of their sizes, one column, with their
    weights), checked as ``check(sets, name)`` (`check_sets`, a spec's
    `check`) checks NumPy sets, with its messages: their layout
    (`check_layout`), their sizes and weights on the stand-in, their values
    (finite) on the device, where one boolean comes back."""
    xp = library.xp
    if isinstance(X, (Bags, list, tuple)):
        # (a list: one array, on their device, its layout checked by NumPy's
        # packing of stand-ins of its arrays, `_bags._pack_foreign`)
        bags = pack_sets(X, name)
        points, offsets, weights = bags.points, bags.offsets, bags.weights
    else:
        check_layout(X, name)
        n_sets, n, d = X.shape
        points = xp.reshape(_array_api.as_float(library, X, name), (n_sets * n, d))
        offsets, weights = np.arange(n_sets + 1) * n, None
    stand_in = check(Bags(np.zeros(
        (points.shape[0], min(points.shape[1], 1)),
        dtype=np.float32 if points.dtype == xp.float32 else np.float64),
        offsets, weights), name)
    if not library.all_finite(points):  # (NumPy's message, naming the set)
        finite = library.to_numpy(xp.all(xp.isfinite(points), axis=1))
        check_values(np.where(~finite, np.nan, 0.0)[:, None], name,
                     offsets=stand_in.offsets)
    return Bags(points, stand_in.offsets, weights), stand_in


def check_array_sets(library, X, name="X", *, min_size=1, weighted=False):
    """`kernelmaps._validation.check_sets` for sets of `library`: a 3-D
    array, a list of 2-D arrays of one width or a `Bags` of the library's
    points (with weights where `weighted`); real (float32 kept, other real
    dtypes as float64), sets of at least `min_size` points, finite where
    the values can be read; the same messages (their layout:
    `check_layout`)."""
    xp = library.xp
    weights = None
    if not isinstance(X, (Bags, list, tuple)) and not _array_api.is_foreign(X):
        raise TypeError(f"{name} must be a list of 2-D arrays, a 3-D array or "
                        f"a Bags of {library.name} points, as the other sets, "
                        f"got {type(X).__name__}")
    check_layout(X, name)
    if isinstance(X, Bags):
        if X.weights is not None:
            check_set_weights(X, name, weighted)
        padded, sizes, weights = _padded_bags(library, X, name)
    elif isinstance(X, (list, tuple)):
        sets = [_check_set(library, S, f"{name}[{i}]") for i, S in enumerate(X)]
        dtype = xp.float32 if all(S.dtype == xp.float32 for S in sets) else xp.float64
        sizes = np.array([S.shape[0] for S in sets], dtype=np.int64)
        n_max = int(sizes.max())
        padded = xp.stack([
            xp.concat([xp.astype(S, dtype),
                       xp.zeros((n_max - S.shape[0], S.shape[1]), dtype=dtype,
                                device=library.device)])
            for S in sets])
    else:
        padded = _array_api.as_float(library, X, name)
        sizes = np.full(X.shape[0], X.shape[1], dtype=np.int64)
    if padded.shape[2] == 0:
        raise ValueError(f"{name}: the sets have no feature (d == 0)")
    sets = ArraySets(library, padded, None, sizes, weights)
    sets = dataclasses.replace(sets, shares=sets.shares_in(padded.dtype))
    check_set_sizes(sets, name, min_size)
    if not library.all_finite(padded):
        bad = np.asarray(library.to_numpy(xp.all(xp.isfinite(padded), axis=(1, 2))))
        raise ValueError(f"{name}[{np.flatnonzero(~bad)[0]}] contains NaN or "
                         f"infinity")
    return sets


def _padded_bags(library, X, name):
    """The points of the `Bags` X of `library` padded (n_sets, n_max, d) by
    one gather (zeros after each set's points), its sizes and weights."""
    xp = library.xp
    sizes = np.asarray(X.sizes)
    if len(sizes) == 0:
        raise ValueError(f"{name} must contain at least one set")
    mask, rows = padding(sizes, int(sizes.max()))
    n_max = mask.shape[1]
    gathered = xp.take(X.points, library.from_numpy(rows.reshape(-1)), axis=0)
    padded = xp.where(library.from_numpy(mask.reshape(-1, 1)), gathered,
                      xp.zeros((), dtype=gathered.dtype, device=library.device))
    return xp.reshape(padded, (len(sizes), n_max, X.dim)), sizes, X.weights


def padding(sizes, n_max):
    """The mask (n_sets, n_max) of the points of sets of `sizes` padded to
    `n_max`, and the row of each in the points one set after the other (0
    on the padding), NumPy."""
    mask = np.arange(n_max)[None, :] < sizes[:, None]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return mask, np.where(mask, starts[:, None] + np.arange(n_max), 0)


def _check_set(library, S, name):
    if not _array_api.is_foreign(S) or S.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of {library.name} points "
                         f"(n_points, d)")
    return _array_api.as_float(library, S, name)


def mean_map(library, A, B, params):
    """The mean map kernel between the sets A and B (None: A) of `library`
    (`ArraySets`), by blocks of sets of A within the memory budget
    (`_array_api.row_blocks`): (len(A), len(B))."""
    xp = library.xp
    C = A if B is None else B
    n_a, d = A.padded.shape[1], A.dim
    m, n_c = len(C), C.padded.shape[1]
    if params["kernel"] == "linear":  # the products of the set means
        means = [xp.sum(S.padded * S.shares[..., None], axis=1) for S in (A, C)]
        K = means[0] @ xp.matrix_transpose(means[1])
        return K if B is not None else _array_api.symmetrised(library, K)
    right = xp.reshape(C.padded, (m * n_c, d))
    wide = params["kernel"] in ("laplacian", "energy") or (  # (differences)
        params["kernel"] == "rbf" and d <= _array_api.DIRECT_WIDTH)
    row_bytes = n_a * m * n_c * 8 * (d + 2 if wide else 3)
    blocks = []
    for a, b in _array_api.row_blocks(len(A), row_bytes, library):
        left = xp.reshape(A.padded[a:b, ...], ((b - a) * n_a, d))
        values = xp.reshape(_array_api.point_kernel(library, left, right, params),
                            (b - a, n_a, m, n_c))
        # the weighted sums over the points of the sets: products, no
        # temporary of the values' size
        values = xp.vecdot(values, C.shares[None, None, :, :])  # (b - a, n_a, m)
        blocks.append(xp.matmul(A.shares[a:b, None, :], values)[:, 0, :])
    K = blocks[0] if len(blocks) == 1 else xp.concat(blocks)
    return K if B is not None else _array_api.symmetrised(library, K)


def _within(library, S, params, unbiased):
    """Each set's mean of its point kernel values (`unbiased`: over the
    pairs of distinct points), by blocks of sets."""
    xp = library.xp
    n_max = S.padded.shape[1]
    if unbiased:  # (the sum over a != b, times n / (n - 1))
        factor = library.from_numpy((S.sizes / (S.sizes - 1)).astype(
            np.float32 if S.dtype == xp.float32 else np.float64))
    values = []
    for a, b in _array_api.row_blocks(len(S), n_max * n_max * 8 * (S.dim + 2),
                                      library):
        points, w = S.padded[a:b, ...], S.shares[a:b, :]
        k = _array_api.point_kernel(library, points, points, params)
        total = xp.vecdot(w, xp.matmul(k, w[:, :, None])[:, :, 0])
        if unbiased:
            total = (total - xp.vecdot(w * w, _self_values(library, points, params))
                     ) * factor[a:b]
        values.append(total)
    return values[0] if len(values) == 1 else xp.concat(values)


def _self_values(library, points, params):
    """k(a, a) for the points (..., n, d): (..., n)."""
    xp = library.xp
    kernel = params["kernel"]
    if kernel in ("rbf", "laplacian"):
        return xp.ones(points.shape[:-1], dtype=points.dtype, device=library.device)
    if kernel == "energy":
        return _array_api.row_norms(xp, points)
    squares = xp.sum(points * points, axis=-1)
    if kernel == "polynomial":
        return (params["gamma"] * squares + params["coef0"]) ** params["degree"]
    return squares


def mmd_squared(library, A, B, params, unbiased=False, K=None):
    """MMD^2 between the sets of A and B (None: A, its diagonal 0), at
    least 0 unless `unbiased`, as `kernelmaps.mmd` computes it (from their
    mean map kernel `K`, where given)."""
    xp = library.xp
    K = mean_map(library, A, B, params) if K is None else K
    if B is None and not unbiased:  # (the within-set means: K's diagonal)
        kx = xp.sum(K * xp.eye(len(A), dtype=K.dtype, device=library.device), axis=1)
    else:
        kx = _within(library, A, params, unbiased)
    ky = kx if B is None else _within(library, B, params, unbiased)
    D2 = kx[:, None] + ky[None, :] - 2 * K
    if not unbiased:
        D2 = xp.clip(D2, min=0)
    if B is None:  # 0 on the diagonal, exactly
        D2 = D2 * (1 - xp.eye(len(A), dtype=D2.dtype, device=library.device))
    return D2


def _warn_degenerate(library, K, X, Y, params):
    """The `DegenerateWarning` of the NumPy path (`_mean_map._pair_kernel_sums`)
    where the rbf or laplacian kernel is 0 between all points of different
    sets, or 1 between all points, read from their mean map kernel K (two
    booleans on the host; none where the values cannot be read), and
    whether it was given."""
    if params["kernel"] not in ("rbf", "laplacian") or not library.readable(K):
        return False
    xp = library.xp
    if Y is None and len(X) < 2:
        return False
    if Y is None:  # (the diagonal: the sets with themselves)
        off = K * (1 - xp.eye(len(X), dtype=K.dtype, device=library.device))
    kind = ("zero" if library.holds(xp.all((K if Y is not None else off) == 0))
            else "one" if library.holds(xp.all(K == 1)) else None)
    if kind is None:
        return False
    equal = kind == "one" and all(library.holds(xp.all(
        (S.padded == S.padded[0, 0, :]) | (S.shares[..., None] == 0)))
        for S in (X, X if Y is None else Y))
    equal = equal and (Y is None or library.holds(
        xp.all(X.padded[0, 0, :] == Y.padded[0, 0, :])))
    gamma = params["gamma"]
    warn_degenerate(degenerate_message(
        kind, params["kernel"], library.scalar(gamma) if _array_api.is_foreign(gamma)
        else gamma, "points of different sets", equal))
    return True


def _names(Y):
    return "X" if Y is None else "X and Y"


def check_array_set_pair(library, X, Y, min_size=1, weighted=False):
    """`kernelmaps._validation.check_set_pair` for sets of `library`
    (`check_array_sets`): X and Y (None) of one width; float64 where
    either is."""
    X = check_array_sets(library, X, "X", min_size=min_size, weighted=weighted)
    if Y is None:
        return X, None
    Y = check_array_sets(library, Y, "Y", min_size=min_size, weighted=weighted)
    check_set_widths(X, Y)
    if X.dtype != Y.dtype:
        xp = library.xp
        X, Y = (dataclasses.replace(S, padded=xp.astype(S.padded, xp.float64),
                                    shares=S.shares_in(xp.float64))
                for S in (X, Y))
    return X, Y


def run(name, X, Y, library, params, out, *, normalize=True, squared=False,
        unbiased=False, gamma2=None):
    """The set kernel `name` ("sum_match_kernel", "mmd", "mmd_kernel")
    between the checked sets X and Y (None: X) of `library`, computed by
    it, as `out` (the library's dtype), with the function's options; a
    ValueError where a value overflows."""
    xp = library.xp
    dtype = X.dtype if Y is None else Y.dtype  # (check_array_set_pair: one)
    if _array_api.is_foreign(params["gamma"]):  # (a scale given as an array)
        params = {**params, "gamma": xp.astype(params["gamma"], dtype)}
    if _array_api.is_foreign(gamma2):
        gamma2 = xp.astype(gamma2, dtype)
    X, Y = _in_float32_range(library, X, Y, params["kernel"])
    e = 0
    if params["kernel"] == "energy":  # points at a power-of-two scale (the
        # kernel is homogeneous of degree 1): no square beyond float64
        e = _unit_exponent(library, X, Y)
        X, Y = (None if S is None else dataclasses.replace(
            S, padded=_array_api.times_power_of_two(S.padded, e)) for S in (X, Y))
    means = mean_map(library, X, Y, params)
    warned = _warn_degenerate(library, means, X, Y, params)
    if name == "sum_match_kernel":
        K = means
        if not normalize:  # the sums: the means times the sizes (weights)
            sizes = [library.from_numpy(S.set_weights())
                     for S in (X, X if Y is None else Y)]
            K = K * xp.astype(sizes[0][:, None] * sizes[1][None, :], K.dtype)
    else:
        K = mmd_squared(library, X, Y, params, unbiased, means)
    if e:
        K = _array_api.times_power_of_two(K, -e)
    if name == "mmd" and not squared:
        positive = K > 0
        K = xp.where(positive, xp.sqrt(xp.where(positive, K, 1)), 0 * K)  # (NaN kept)
    elif name == "mmd_kernel":
        equal = library.readable(K) and not library.holds(xp.any(K != 0))
        K = xp.exp(-gamma2 * K)
        if not warned:  # (the MMD kernel's, as `_mean_map._mmd`)
            _array_api.warn_uninformative(
                library, K, Y is None, "MMD", f"sets of {_names(Y)}",
                library.scalar(gamma2) if _array_api.is_foreign(gamma2) else gamma2,
                equal)
    names = _names(Y)  # (float32 sets computed in float64: NumPy's range check)
    return _array_api.cast_result(
        library, K, out, names, f"the {params['kernel']} kernel values of {names} "
        f"overflow float64; scale {names} down or use smaller gamma/coef0")


# float32 points whose largest magnitude is within 2**-40 to 2**40 (or 0):
# their squared distances and products, over any number of features, are
# normal float32 numbers.
_FLOAT32_RANGE = (2.0**-40, 2.0**40)


def _in_float32_range(library, X, Y, kernel):
    """The float32 sets X and Y (None) of a point kernel of squares or
    products ("rbf", "laplacian", "linear", "polynomial") as float64 where
    their magnitude is beyond `_FLOAT32_RANGE` (the engine sums float32
    data in float64: there, the same values), else as given."""
    xp = library.xp
    if X.dtype != xp.float32 or kernel == "energy":  # (energy: its own scale)
        return X, Y
    sets = [S for S in (X, Y) if S is not None]
    top = _largest_magnitude(library, [S.padded for S in sets])
    if top is None or top == 0 or _FLOAT32_RANGE[0] <= top <= _FLOAT32_RANGE[1]:
        return X, Y
    return tuple(None if S is None else dataclasses.replace(
        S, padded=xp.astype(S.padded, xp.float64), shares=S.shares_in(xp.float64))
        for S in (X, Y))


def sliced_wasserstein(library, X, Y, directions, p, out, *, scaled=False):
    """`kernelmaps.sliced_wasserstein` between the checked sets X and Y
    (None: X) of `library` on the unit `directions` (L, d) (NumPy,
    float64), computed by the library, differentiably (with respect to
    the points; the weights are constants), as `out`; `scaled`: the
    distances times ``2**e`` (of points near 1: in range whatever their
    magnitude) and e, a pair.

    The points are centred on the mean of the sets' means first where
    they are far from the origin (`_centred`: the distance does not
    change; such sets keep their digits), and taken to a power-of-two
    scale near 1. Unweighted sets:
    `_uniform_distances`; where either side is weighted (a `Bags` with
    weights; the other side's points then weigh the same), the merges of
    the cumulative weights: `_weighted_distances`."""
    xp = library.xp
    sets = [S for S in (X, Y) if S is not None]
    sets, e = _centred(library, sets)
    W = library.from_numpy(directions.T.astype(
        np.float32 if X.dtype == xp.float32 else np.float64))
    weighted = any(S.weights is not None for S in sets)
    D = (_weighted_distances if weighted else _uniform_distances)(
        library, sets, W, e, p)
    if Y is None:
        D = _array_api.symmetrised(library, D) * (
            1 - xp.eye(len(X), dtype=D.dtype, device=library.device))
    overflow = (f"the sliced-Wasserstein distances between the sets of "
                f"{_names(Y)} overflow float64")
    if scaled:
        if not library.all_finite(D):
            raise ValueError(overflow)
        return D, e
    # (scaled back in float64: float32 sets' distances may exceed float32's
    # range, refused as NumPy refuses them, or be asked for in float64)
    D = _array_api.times_power_of_two(xp.astype(D, xp.float64), -e)
    return _array_api.cast_result(library, D, out, _names(Y), overflow)


def _uniform_distances(library, sets, W, e, p):
    """SW_p between the unweighted `sets` (X, and Y where given) on the
    directions W, their points times 2**e.

    Each set's projections are sorted once (the padding last, as +inf);
    the quantile functions of a set of n points and one of m step at the
    levels i / n and j / m, so that for each pair of sizes (n, m) the
    cells of the merge, their lengths and the points on each side are
    known on the host (integer arithmetic on the levels times n m), and
    each block of pairs of those sizes is one gather and one weighted sum
    (`_sliced_block`). The sets are grouped by size, the blocks assembled
    in that order and the rows and columns put back."""
    xp = library.xp
    sides = [_sorted_projections(library, S, W, e) for S in sets]
    (sx, gx, ix), (sy, gy, iy) = sides[0], sides[-1]

    def group(P, index):
        return P if index is None else xp.take(P, index, axis=0)

    rows = []
    for n, rows_n in gx:
        blocks = [_sliced_block(library, group(sx, rows_n), group(sy, cols_m), n, m, p)
                  for m, cols_m in gy]
        rows.append(blocks[0] if len(blocks) == 1 else xp.concat(blocks, axis=1))
    D = group(rows[0] if len(rows) == 1 else xp.concat(rows, axis=0), ix)
    return D if iy is None else xp.take(D, iy, axis=1)


def _weighted_distances(library, sets, W, e, p):
    """SW_p between the `sets` (X, and Y where given), either weighted, on
    the directions W, their points times 2**e, as the engine computes them
    (float64 sums): each set's projections sorted with their cumulative
    weights (`_weighted_sorted`), and for each pair and direction the two
    step quantile functions merged: the cumulative weights of both sorted
    together, each cell ending at one of them (of length the step from
    the one before), the point of each side on a cell of positive length
    the first whose cumulative weight reaches the cell's end, which is
    after as many of the side's points as precede the cell in the merge.
    By blocks of rows of X; the padding (cumulative weight 1) and the
    cells of length 0 add nothing."""
    xp = library.xp
    sides = [_weighted_sorted(library, S, W, e) for S in sets]
    (vx, cx), (vy, cy) = sides[0], sides[-1]
    n_y, L, n, m = vy.shape[0], W.shape[1], vx.shape[2], vy.shape[2]
    K = n + m
    positions = xp.arange(K, device=library.device)
    blocks = []
    for a, b in _array_api.row_blocks(vx.shape[0], n_y * L * K * 8 * 12, library):
        shape = (b - a, n_y, L)
        merged = xp.concat([xp.broadcast_to(cx[a:b, None, ...], (*shape, n)),
                            xp.broadcast_to(cy[None, ...], (*shape, m))], axis=-1)
        order = xp.argsort(merged, axis=-1, stable=True)
        ends = xp.take_along_axis(merged, order, axis=-1)
        lengths = ends - xp.concat([xp.zeros((*shape, 1), dtype=ends.dtype,
                                             device=library.device),
                                    ends[..., :-1]], axis=-1)
        of_x = xp.astype(order < n, xp.int64)
        before_x = xp.cumulative_sum(of_x, axis=-1) - of_x  # (X's before each)
        t = (xp.take_along_axis(xp.broadcast_to(vx[a:b, None, ...], (*shape, n)),
                                xp.clip(before_x, max=n - 1), axis=-1)
             - xp.take_along_axis(xp.broadcast_to(vy[None, ...], (*shape, m)),
                                  xp.clip(positions - before_x, max=m - 1), axis=-1))
        t = xp.where(lengths > 0, t, 0)  # (no power of a gap beyond the largest)
        blocks.append(_sliced_costs(
            xp, t, lambda s, lengths=lengths: xp.sum(s * lengths, axis=(2, 3)) / L, p))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks)


def quantile_means(library, S, W, edges):
    """`kernelmaps._engine.sliced.quantile_means` of the checked sets S of
    `library` on the unit directions W (d, L) (the library's, S's dtype)
    and the quantile cells of `edges` (NumPy, float64), computed by the
    library, differentiably: (len(S), L Q), S's dtype.

    A set's cell integrals are a linear map of its sorted projections, the
    overlaps of its steps with the cells: for sets of n points without
    weights the steps [i / n, (i + 1) / n], the same for every direction,
    the overlaps (n, Q) computed on the host as the engine's merge
    computes them, each group of sets of one size one product; for
    weighted sets the steps of the cumulative weights (float64) in the
    order of each direction's sort, by blocks of sets."""
    xp = library.xp
    e = _unit_exponent(library, S, None)  # (the features are homogeneous)
    widths = np.diff(edges)
    L, Q = W.shape[1], len(widths)
    scale = 1.0 / np.sqrt(widths * L)
    dtype = np.float32 if S.dtype == xp.float32 else np.float64
    if S.weights is not None:
        F = _weighted_quantile_means(library, S, W, e, edges, scale, dtype)
    else:
        P, groups, back = _sorted_projections(library, S, W, e)
        parts = []
        for n, rows in groups:
            steps = np.arange(1, n + 1) / n
            M = library.from_numpy(_overlaps(
                np, np.concatenate([[0.0], steps[:-1]]), steps, edges, scale
            ).astype(dtype))
            F = (P if rows is None else xp.take(P, rows, axis=0))[:, :, :n] @ M
            parts.append(xp.reshape(F, (F.shape[0], L * Q)))  # (sets, L Q)
        F = parts[0] if len(parts) == 1 else xp.take(xp.concat(parts), back, axis=0)
    F = _array_api.times_power_of_two(F, -e)
    if not library.all_finite(F):
        raise ValueError("the quantile features of X overflow its dtype; scale X "
                         "down")
    return F


def _overlaps(xp, low, high, edges, scale):
    """The lengths of the steps [low, high] (..., n) in the cells [edges[k],
    edges[k + 1]] times scale[k]: (..., n, Q), computed by `xp` (NumPy or
    a library's namespace)."""
    low, high = low[..., None], high[..., None]
    lengths = xp.minimum(high, edges[1:]) - xp.maximum(low, edges[:-1])
    return xp.where(lengths > 0, lengths, 0.0) * scale


def _weighted_quantile_means(library, S, W, e, edges, scale, dtype):
    """`quantile_means` of weighted sets: (len(S), L Q)."""
    xp = library.xp
    values, cum = _weighted_sorted(library, S, W, e)
    n_sets, L, Q = len(S), W.shape[1], len(scale)
    low = xp.concat([xp.zeros((n_sets, L, 1), dtype=cum.dtype,
                              device=library.device), cum[:, :, :-1]], axis=-1)
    cells = [library.from_numpy(a) for a in (edges, scale)]
    blocks = []
    for a, b in _array_api.row_blocks(n_sets, L * S.padded.shape[1] * Q * 8 * 3,
                                      library):
        M = xp.astype(_overlaps(xp, low[a:b, ...], cum[a:b, ...], *cells),
                      values.dtype)
        F = xp.matmul(values[a:b, :, None, :], M)[:, :, 0, :]  # (b - a, L, Q)
        blocks.append(xp.reshape(F, (b - a, L * Q)))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks)


def _weighted_sorted(library, S, W, e):
    """The projections of the sets S on the columns of W, their points
    times 2**e, sorted per set and direction, and their cumulative weights
    (`ArraySets.point_weights` in the order of the sort, float64, over
    their total: each set's last exactly 1): (n_sets, L, n_max) each, the
    padding last (value 0, cumulative weight 1)."""
    xp = library.xp
    n_sets, n_max = S.padded.shape[:2]
    inside = library.from_numpy(np.arange(n_max)[None, None, :]
                                < S.sizes[:, None, None])
    P = xp.permute_dims(_projections(xp, S.padded, W, e), (0, 2, 1))
    P = xp.where(inside, P, xp.inf)
    order = xp.argsort(P, axis=-1, stable=True)  # (n_sets, L, n_max)
    values = xp.where(inside, xp.take_along_axis(P, order, axis=-1), 0)
    w = xp.broadcast_to(library.from_numpy(S.point_weights()[:, None, :]),
                        (n_sets, W.shape[1], n_max))
    cum = xp.cumulative_sum(xp.take_along_axis(w, order, axis=-1), axis=-1)
    return values, cum / cum[:, :, -1:]


def centre_means(library, S, centres, params):
    """The mean over each set of S of the point kernel (`params`: "rbf" or
    "laplacian" and gamma) between its points and the rows of `centres`
    (t, d) of `library`: (len(S), t), by blocks of sets."""
    return centre_sums(library, S, centres, params,
                       lambda a, b: S.shares[a:b, None, :])[:, 0, :]


def centre_sums(library, S, centres, params, groups, n_groups=1):
    """The sums over groups of the points of each set of S of the point
    kernel (`params`) between them and the rows of `centres` (t, d) of
    `library`: (len(S), n_groups, t), ``groups(a, b)`` the weight of each
    point of the sets a to b in each group, (b - a, n_groups, n_max) (or
    one group for all), by blocks of sets."""
    xp = library.xp
    n_max, t = S.padded.shape[1], centres.shape[0]
    width = S.dim + 2 if params["kernel"] == "laplacian" else 3
    row_bytes = (n_max * t * width + n_groups * (n_max + t)) * 8
    blocks = []
    for a, b in _array_api.row_blocks(len(S), row_bytes, library):
        values = _array_api.point_kernel(library, S.padded[a:b, ...], centres, params)
        blocks.append(xp.matmul(groups(a, b), values))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks)


def _unit_exponent(library, X, Y):
    """The power-of-two exponent that takes the largest magnitude of the
    points of X and Y (where it can be read) into [1/2, 1)."""
    return _exponent_of(_largest_magnitude(
        library, [S.padded for S in (X, Y) if S is not None]))


def _exponent_of(top):
    """`power_of_two_exponent` of the largest magnitude `top` (None: 0)."""
    return min(max(power_of_two_exponent(top or 0.0), -1000), 1000)


def _largest_magnitude(library, arrays):
    """The largest magnitude of the values of the `arrays` of `library` (a
    float), or None where they cannot be read."""
    values = _magnitudes(library, arrays)
    return None if values is None else float(values.max())


def _magnitudes(library, arrays):
    """The largest magnitude of the values of each of the `arrays` of
    `library` (NumPy, float64), or None where they cannot be read: from
    their largest and smallest values (reads, no temporary), copied to
    the host at once."""
    xp = library.xp
    values = library.host_values(xp.stack(
        [xp.astype(v, xp.float64) for a in arrays for v in (xp.max(a), -xp.min(a))]))
    if values is None:
        return None
    return np.asarray(library.to_numpy(values)).reshape(-1, 2).max(axis=1)


def _centred(library, sets):
    """The sets (a list of one or two) centred on the mean of their means
    where the centre's largest magnitude is more than half their points'
    (padding included; else centring gains at most one bit) and the
    centred points do not overflow, else as given, and the exponent that
    takes the largest magnitude of the points returned into [1/2, 1)
    (`_unit_exponent`). The means are convex combinations of the points,
    in range (the sets' sum may not be)."""
    xp = library.xp
    means = xp.concat([xp.matmul(S.shares[:, None, :], S.padded)[:, 0, :]
                       for S in sets])
    centre = xp.sum(means / means.shape[0], axis=0)
    values = _magnitudes(library, [*(S.padded for S in sets), centre])
    if values is not None and values[-1] <= values[:-1].max() / 2:
        return sets, _exponent_of(values[:-1].max())
    centred = [dataclasses.replace(S, padded=S.padded - centre) for S in sets]
    top = _largest_magnitude(library, [S.padded for S in centred])
    if top is not None and not math.isfinite(top):  # (points beyond max / 2)
        return sets, _exponent_of(values[:-1].max())
    return centred, _exponent_of(top)


# The largest |e| of a scale 2**e of the points applied to the directions
# instead: a unit direction's float32 component times 2**e is then exact
# unless it is below 2**-106 (a product beyond any float32 sum's digits).
_SCALE_ON_DIRECTIONS = 20


def _projections(xp, points, W, e):
    """``(points 2**e) @ W``: the power of two on the few values of the
    directions W where |e| is small enough (`_SCALE_ON_DIRECTIONS`; the
    same products, exactly), else on the points."""
    if abs(e) <= _SCALE_ON_DIRECTIONS:
        return xp.matmul(points, _array_api.times_power_of_two(W, e))
    return xp.matmul(_array_api.times_power_of_two(points, e), W)


def _sorted_projections(library, S, W, e):
    """The sorted projections of the sets S on the columns of W, their
    points times 2**e: (n_sets, L, n_max), each set's padding last
    (+inf); the groups of sets by size, [(size, indices)] (indices in the
    library), and the positions that put the sets back in their order
    (sets of one size: one group, indices and positions None)."""
    xp = library.xp
    n_max, L = S.padded.shape[1], W.shape[1]
    mask = (library.from_numpy(np.arange(n_max)[None, :] < S.sizes[:, None])
            if np.any(S.sizes < n_max) else None)  # (one size: no padding)

    def projected(a, b):  # (b - a, L, n_max)
        P = _projections(xp, S.padded[a:b, ...], W, e)
        if mask is not None:
            P = xp.where(mask[a:b, :, None], P, xp.inf)
        return xp.permute_dims(xp.sort(P, axis=1, stable=False), (0, 2, 1))

    P = [projected(a, b) for a, b in _array_api.row_blocks(
        len(S), n_max * (S.dim + 3 * L) * 8, library)]
    P = P[0] if len(P) == 1 else xp.concat(P)
    order = np.argsort(S.sizes, kind="stable")
    sizes, starts = np.unique(S.sizes[order], return_index=True)
    if len(sizes) == 1:  # (one group, in order: no gathers)
        return P, [(int(sizes[0]), None)], None
    bounds = [*starts, len(order)]
    groups = [(int(n), library.from_numpy(order[a:b].astype(np.int64)))
              for n, a, b in zip(sizes, bounds[:-1], bounds[1:], strict=True)]
    back = library.from_numpy(np.argsort(order, kind="stable").astype(np.int64))
    return P, groups, back


# The p beyond which SW_p is computed from the gaps over the largest one.
_NORMALISED_P = 16.0


def _sliced_block(library, A, B, n, m, p):
    """SW_p between the sets of A (a, L, >= n) of n points and those of B
    (b, L, >= m) of m points, their sorted projections (of points near 1):
    (a, b), by blocks of rows of A (`_sliced_costs`)."""
    xp = library.xp
    # the cells (u_{k-1}, u_k] of the merged levels, in units of 1 / (n m)
    u = np.union1d(np.arange(1, n + 1) * m, np.arange(1, m + 1) * n)
    lengths = np.diff(u, prepend=0) / (n * m)
    if n == m:  # (the cells are the points' own steps: no gathers)
        a_cells, b_cells = A[..., :n], xp.expand_dims(B[..., :m], axis=0)
    else:
        take_a, take_b = (library.from_numpy((-(-u // k) - 1).astype(np.int64))
                          for k in (m, n))
        a_cells = xp.take(A, take_a, axis=2)  # (a, L, K)
        b_cells = xp.expand_dims(xp.take(B, take_b, axis=2), axis=0)
    weights = library.from_numpy(lengths.astype(
        np.float32 if A.dtype == xp.float32 else np.float64)) / A.shape[1]
    blocks = []
    for r0, r1 in _array_api.row_blocks(A.shape[0],
                                        B.shape[0] * A.shape[1] * len(u) * 8 * 3,
                                        library):
        t = xp.expand_dims(a_cells[r0:r1, ...], axis=1) - b_cells
        blocks.append(_sliced_costs(
            xp, t, lambda s: xp.sum(s @ weights, axis=-1), p))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks)


def _sliced_costs(xp, t, mean_cost, p):
    """SW_p of pairs of sets from the differences t (r, c, L, K) of their
    quantile functions on the K cells of their merges, along L directions
    (points near 1), ``mean_cost(s)`` the mean over the directions of the
    sums of s (as t) weighted by the cells' lengths: (r, c). Beyond p =
    `_NORMALISED_P`, the mean over the directions of W_p^p as ``T^p R``, T
    the largest |t| of the pair and R the mean of ``(t / T)^p``: SW_p is
    ``T R^(1/p)``, in range at any p (the largest gap as p grows). Below
    p = 1, in logarithms: ``exp(log1p(S) / p)``, S the mean of ``|t|^p - 1``
    (the lengths sum to 1), which keeps the digits of ``M^(1/p)`` as p
    falls to 0 (the geometric mean of the gaps; 0 where a gap is), that
    limit itself below p = 1e-15 (``p log|t|`` would lose its digits)."""
    if p < 1:
        a = xp.abs(t)
        nonzero = a > 0
        if p < 1e-15:  # (within 1e-13 of the limit: the mean log gap)
            logs = xp.where(nonzero, xp.log(xp.where(nonzero, a, 1)), 0)
            zero = mean_cost(xp.astype(~nonzero, a.dtype)) > 0
            return xp.where(zero, 0 * logs[..., 0, 0], xp.exp(mean_cost(logs)))
        S = mean_cost(xp.expm1(xp.where(  # (gradient 0, not NaN, at a gap of 0)
            nonzero, p * xp.log(xp.where(nonzero, a, 1)), -xp.inf)))
        above = S > -1  # (-1: every gap 0; 0 * S: NaN kept, to be refused)
        return xp.where(above, xp.exp(xp.log1p(xp.where(above, S, 0)) / p), 0 * S)
    if p <= _NORMALISED_P:  # (t at most about 2 sqrt(d): t^p in range)
        M = mean_cost(t * t if p == 2 else xp.abs(t) if p == 1 else xp.abs(t) ** p)
        if p == 1:
            return M
        positive = M > 0  # (0 * M: NaN kept, to be refused)
        return xp.where(positive, xp.where(positive, M, 1) ** (1 / p), 0 * M)
    t = xp.abs(t)
    T = xp.max(t, axis=(2, 3))
    positive = T > 0
    T1 = xp.where(positive, T, 1)
    R = mean_cost((t / T1[:, :, None, None]) ** p)
    return xp.where(positive, T1 * xp.where(positive, R, 1) ** (1 / p), 0 * T)
