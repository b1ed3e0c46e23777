"""The kernels of sets on arrays of other libraries (`kernelmaps._array_api`):
sets of PyTorch, JAX, CuPy or array-api-strict points checked in their
library, and the mean map kernel, the MMD and the MMD kernel computed by
that library on the points' device, differentiably.

The sets are held padded, ``(n_sets, n_max, d)`` points and ``(n_sets,
n_max)`` shares (1 / size on a set's points, 0 on the padding), so that
each pair of sets' mean of point kernel values is a weighted sum of one
block of values: no loop over sets or points.
"""

import dataclasses

import numpy as np

from .. import _array_api
from .._bags import Bags
from .._engine.layout import power_of_two_exponent
from .._validation import check_set_sizes, check_set_widths

__all__ = ["ArraySets", "check_array_set_pair", "check_array_sets", "mean_map",
           "mmd_squared", "run", "sliced_wasserstein"]


@dataclasses.dataclass(frozen=True)
class ArraySets:
    """Checked sets of `library`: `padded` points (n_sets, n_max, d), the
    `shares` of the points in their set's mean (n_sets, n_max), 1 / size on
    each set's points and 0 on the padding, and the `sizes` (NumPy)."""

    library: _array_api.ArrayLibrary
    padded: object
    shares: object
    sizes: np.ndarray
    weights = None  # (the sets' point weights, as a Bags': none)

    def __len__(self):
        return len(self.sizes)

    @property
    def dim(self):
        return self.padded.shape[2]

    @property
    def dtype(self):
        return self.padded.dtype

    def bags(self):
        """The sets as a NumPy `Bags` (their values copied to the host where
        they are elsewhere)."""
        P = self.library.to_numpy(self.padded)
        points = np.concatenate([P[i, :n, :] for i, n in enumerate(self.sizes)])
        return Bags(points, np.concatenate([[0], np.cumsum(self.sizes)]))


def check_array_sets(library, X, name="X", *, min_size=1):
    """`kernelmaps._validation.check_sets` for sets of `library`: a 3-D
    array or a list of 2-D arrays of one width; real (float32 kept, other
    real dtypes as float64), sets of at least `min_size` points, finite
    where the values can be read; the same messages."""
    xp = library.xp
    if isinstance(X, Bags):
        raise TypeError(f"{name} is a Bags of {library.name} points; give the "
                        f"sets as a list of 2-D arrays or a 3-D array")
    if isinstance(X, (list, tuple)):
        if len(X) == 0:
            raise ValueError(f"{name} must contain at least one set")
        sets = [_check_set(library, S, f"{name}[{i}]") for i, S in enumerate(X)]
        dims = {S.shape[1] for S in sets}
        if len(dims) > 1:
            raise ValueError(f"the sets of {name} must all have the same number "
                             f"of features, got {sorted(dims)}")
        dtype = xp.float32 if all(S.dtype == xp.float32 for S in sets) else xp.float64
        sizes = np.array([S.shape[0] for S in sets], dtype=np.int64)
        n_max = int(sizes.max())
        padded = xp.stack([
            xp.concat([xp.astype(S, dtype),
                       xp.zeros((n_max - S.shape[0], S.shape[1]), dtype=dtype,
                                device=library.device)])
            for S in sets])
    else:
        if X.ndim != 3:
            raise ValueError(f"{name} must be a list of 2-D arrays or a 3-D array "
                             f"(n_sets, n_points, d), got {X.ndim} dimension(s)")
        padded = _array_api.as_float(library, X, name)
        sizes = np.full(X.shape[0], X.shape[1], dtype=np.int64)
        if X.shape[0] == 0:
            raise ValueError(f"{name} must contain at least one set")
    if padded.shape[2] == 0:
        raise ValueError(f"{name}: the sets have no feature (d == 0)")
    n_max = padded.shape[1]
    mask = np.arange(n_max)[None, :] < sizes[:, None]
    shares = np.where(mask, 1.0 / np.maximum(sizes, 1)[:, None], 0.0)
    sets = ArraySets(library, padded, library.from_numpy(shares.astype(
        np.float32 if padded.dtype == xp.float32 else np.float64)), sizes)
    check_set_sizes(sets, name, min_size)
    if not library.holds(xp.all(xp.isfinite(padded))):
        bad = np.asarray(library.to_numpy(xp.all(xp.isfinite(padded), axis=(1, 2))))
        raise ValueError(f"{name}[{np.flatnonzero(~bad)[0]}] contains NaN or "
                         f"infinity")
    return sets


def _check_set(library, S, name):
    if not _array_api.is_foreign(S) or S.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of {library.name} points "
                         f"(n_points, d)")
    return _array_api.as_float(library, S, name)


def _point_values(library, A, B, params):
    """The point kernel between the points A (..., r, d) and B (..., c, d)
    of `library`: (..., r, c)."""
    xp = library.xp
    kernel, gamma = params["kernel"], params["gamma"]
    if kernel in ("rbf", "polynomial", "linear"):
        if kernel == "rbf":  # |a - b|^2 of the points in units of gamma
            A, B = A * gamma**0.5, B * gamma**0.5
        products = A @ xp.matrix_transpose(B)
        if kernel == "linear":
            return products
        if kernel == "polynomial":
            return (gamma * products + params["coef0"]) ** params["degree"]
        squares = (xp.expand_dims(xp.sum(A * A, axis=-1), axis=-1)
                   + xp.expand_dims(xp.sum(B * B, axis=-1), axis=-2) - 2 * products)
        return xp.exp(-xp.clip(squares, min=0))
    differences = xp.expand_dims(A, axis=-2) - xp.expand_dims(B, axis=-3)
    if kernel == "laplacian":
        return xp.exp(-gamma * xp.sum(xp.abs(differences), axis=-1))
    # energy: (|a| + |b| - |a - b|) / 2, the square roots safe at 0 (their
    # gradient 0 there, not NaN)
    return (xp.expand_dims(_norm(xp, A), axis=-1)
            + xp.expand_dims(_norm(xp, B), axis=-2) - _norm(xp, differences)) / 2


def _norm(xp, A):
    """The Euclidean norms along the last axis, with gradient 0 at 0."""
    squares = xp.sum(A * A, axis=-1)
    positive = squares > 0
    return xp.where(positive, xp.sqrt(xp.where(positive, squares, 1)), 0)


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
    wide = params["kernel"] in ("laplacian", "energy")  # (differences)
    row_bytes = n_a * m * n_c * 8 * (d + 2 if wide else 3)
    blocks = []
    for a, b in _array_api.row_blocks(len(A), row_bytes, library):
        left = xp.reshape(A.padded[a:b, ...], ((b - a) * n_a, d))
        values = xp.reshape(_point_values(library, left, right, params),
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
        k = _point_values(library, points, points, params)
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
        return _norm(xp, points)
    squares = xp.sum(points * points, axis=-1)
    if kernel == "polynomial":
        return (params["gamma"] * squares + params["coef0"]) ** params["degree"]
    return squares


def mmd_squared(library, A, B, params, unbiased=False):
    """MMD^2 between the sets of A and B (None: A, its diagonal 0), at
    least 0 unless `unbiased`, as `kernelmaps.mmd` computes it."""
    xp = library.xp
    K = mean_map(library, A, B, params)
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


def check_array_set_pair(library, X, Y, min_size=1):
    """`kernelmaps._validation.check_set_pair` for sets of `library`
    (`check_array_sets`): X and Y (None) of one width; float64 where
    either is."""
    X = check_array_sets(library, X, "X", min_size=min_size)
    if Y is None:
        return X, None
    Y = check_array_sets(library, Y, "Y", min_size=min_size)
    check_set_widths(X, Y)
    if X.dtype != Y.dtype:
        xp = library.xp
        X, Y = (dataclasses.replace(S, padded=xp.astype(S.padded, xp.float64),
                                    shares=xp.astype(S.shares, xp.float64))
                for S in (X, Y))
    return X, Y


def run(name, X, Y, library, params, out, *, normalize=True, squared=False,
        unbiased=False, gamma2=None):
    """The set kernel `name` ("sum_match_kernel", "mmd", "mmd_kernel")
    between the checked sets X and Y (None: X) of `library`, computed by
    it, as `out` (the library's dtype), with the function's options; a
    ValueError where a value overflows."""
    xp = library.xp
    e = 0
    if params["kernel"] == "energy":  # points at a power-of-two scale (the
        # kernel is homogeneous of degree 1): no square beyond float64
        e = _unit_exponent(library, X, Y)
        X, Y = (None if S is None else dataclasses.replace(S, padded=S.padded * 2.0**e)
                for S in (X, Y))
    if name == "sum_match_kernel":
        K = mean_map(library, X, Y, params)
        if not normalize:  # the sums: the means times the sizes
            sizes = [library.from_numpy(S.sizes.astype(np.float64))
                     for S in (X, X if Y is None else Y)]
            K = K * xp.astype(sizes[0][:, None] * sizes[1][None, :], K.dtype)
    else:
        K = mmd_squared(library, X, Y, params, unbiased)
    if e:
        K = K * 2.0**-e
    if name == "mmd" and not squared:
        positive = K > 0
        K = xp.where(positive, xp.sqrt(xp.where(positive, K, 1)), 0)
    elif name == "mmd_kernel":
        K = xp.exp(-gamma2 * K)
    if not library.holds(xp.all(xp.isfinite(K))):
        names = "X" if Y is None else "X and Y"
        raise ValueError(f"the {params['kernel']} kernel values of {names} overflow "
                         f"float64; scale {names} down or use smaller gamma/coef0")
    return xp.astype(K, out, copy=False)


def sliced_wasserstein(library, X, Y, directions, p, out):
    """`kernelmaps.sliced_wasserstein` between the checked sets X and Y
    (None: X) of `library` on the unit `directions` (L, d) (NumPy,
    float64), computed by the library, differentiably, as `out`.

    Each set's projections are sorted once (the padding last, as +inf);
    the quantile functions of a set of n points and one of m step at the
    levels i / n and j / m, so that for each pair of sizes (n, m) the
    cells of the merge, their lengths and the points on each side are
    known on the host (integer arithmetic on the levels times n m), and
    each block of pairs of those sizes is one gather and one weighted sum.
    The sets are grouped by size, the blocks assembled in that order and
    the rows and columns put back."""
    xp = library.xp
    e = _unit_exponent(library, X, Y)  # (the distance is homogeneous)
    W = library.from_numpy(directions.T.astype(
        np.float32 if X.dtype == xp.float32 else np.float64))
    sides = [_sorted_projections(library, S, W, e) for S in (X, Y) if S is not None]
    (sx, gx, ix), (sy, gy, iy) = sides[0], sides[-1]
    rows = []
    for n, rows_n in gx:
        blocks = [_sliced_block(library, xp.take(sx, rows_n, axis=0),
                                xp.take(sy, cols_m, axis=0), n, m, p)
                  for m, cols_m in gy]
        rows.append(blocks[0] if len(blocks) == 1 else xp.concat(blocks, axis=1))
    M = rows[0] if len(rows) == 1 else xp.concat(rows, axis=0)  # W_p^p means
    M = xp.take(xp.take(M, ix, axis=0), iy, axis=1)
    if Y is None:
        M = _array_api.symmetrised(library, M) * (
            1 - xp.eye(len(X), dtype=M.dtype, device=library.device))
    positive = M > 0
    D = xp.where(positive, xp.where(positive, M, 1) ** (1 / p), 0) * 2.0**-e
    if not library.holds(xp.all(xp.isfinite(D))):
        names = "X" if Y is None else "X and Y"
        raise ValueError(f"the sliced-Wasserstein distances between the sets of "
                         f"{names} overflow float64")
    return xp.astype(D, out, copy=False)


def _unit_exponent(library, X, Y):
    """The power-of-two exponent that takes the largest magnitude of the
    points of X and Y (where it can be read) into [1/2, 1)."""
    xp = library.xp
    tops = [library.scalar(xp.max(xp.abs(S.padded))) for S in (X, Y) if S is not None]
    top = max((t for t in tops if t is not None), default=0.0)
    return min(max(power_of_two_exponent(top), -1000), 1000)


def _sorted_projections(library, S, W, e):
    """The sorted projections of the sets S on the columns of W, their
    points times 2**e: (n_sets, L, n_max), each set's padding last
    (+inf); the groups of sets by size, [(size, indices)] (indices in the
    library), and the positions that put the sets back in their order."""
    xp = library.xp
    P = xp.matmul(S.padded * 2.0**e, W)  # (n_sets, n_max, L)
    mask = library.from_numpy(np.arange(S.padded.shape[1])[None, :] < S.sizes[:, None])
    P = xp.where(mask[:, :, None], P, xp.inf)
    P = xp.sort(xp.permute_dims(P, (0, 2, 1)), axis=-1)
    order = np.argsort(S.sizes, kind="stable")
    sizes, starts = np.unique(S.sizes[order], return_index=True)
    bounds = [*starts, len(order)]
    groups = [(int(n), library.from_numpy(order[a:b].astype(np.int64)))
              for n, a, b in zip(sizes, bounds[:-1], bounds[1:], strict=True)]
    back = library.from_numpy(np.argsort(order, kind="stable").astype(np.int64))
    return P, groups, back


def _sliced_block(library, A, B, n, m, p):
    """The mean over the directions of W_p^p between the sets of A (a, L,
    >= n) of n points and those of B (b, L, >= m) of m points, their
    sorted projections: (a, b), by blocks of rows of A."""
    xp = library.xp
    # the cells (u_{k-1}, u_k] of the merged levels, in units of 1 / (n m)
    u = np.union1d(np.arange(1, n + 1) * m, np.arange(1, m + 1) * n)
    lengths = np.diff(u, prepend=0) / (n * m)
    take_a = library.from_numpy((-(-u // m) - 1).astype(np.int64))
    take_b = library.from_numpy((-(-u // n) - 1).astype(np.int64))
    a_cells = xp.take(A, take_a, axis=2)  # (a, L, K)
    b_cells = xp.expand_dims(xp.take(B, take_b, axis=2), axis=0)
    weights = library.from_numpy(lengths.astype(
        np.float32 if A.dtype == xp.float32 else np.float64)) / A.shape[1]
    L, K = A.shape[1], len(u)
    blocks = []
    for r0, r1 in _array_api.row_blocks(A.shape[0], B.shape[0] * L * K * 8 * 3,
                                        library):
        t = xp.abs(xp.expand_dims(a_cells[r0:r1, ...], axis=1) - b_cells)
        if p != 1:  # (|t|^p with gradient 0, not NaN, at t = 0)
            nonzero = t > 0
            t = xp.where(nonzero, xp.where(nonzero, t, 1) ** p, 0)
        blocks.append(xp.sum(xp.vecdot(t, weights), axis=-1))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks)
