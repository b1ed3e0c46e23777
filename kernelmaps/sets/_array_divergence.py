"""The kNN Renyi divergences between sets and the kernel of divergences on
arrays of other libraries (`kernelmaps._array_api`), computed by that
library on the arrays' device, differentiably: the estimator of
`renyi_divergence` from the k-th neighbour distances of blocks of points
(their rows of squared distances, sorted), and `divergence_kernel`'s
formula, elementwise."""

import math

import numpy as np

from .. import _array_api
from .._engine.knn import FLOAT32_MIN_DIM
from .._engine.layout import power_of_two_exponent, squares_exponent
from ._renyi_terms import LOG_EPS, LOG_TINY, RELATIVE_FLOOR, estimate_terms

__all__ = ["divergence_kernel", "median_scale", "renyi"]


def renyi(library, X, Y, alphas, k, min_dist, both=False, clamp=False):
    """`_divergence._renyi` for the checked sets X and Y (None: X) of
    `library` (`_array_sets.ArraySets`): the estimates, (len(alphas),
    len(X), len(Y)), float64; with `both` (Y given), the pair (D_xy,
    D_yx); with `clamp`, at least 0.

    As in the compiled search, float32 points of fewer than five features
    are searched in float64, the squared distances are sums of squared
    differences (exactly 0 between duplicates), and the floors and the
    log-sum-exp are those of `_renyi`; the gradient flows through the
    k-th neighbour distances (0, not NaN, at a distance 0). The points are
    scaled by a power of two to magnitudes below 1 (where the gradients
    of the distances neither overflow nor underflow; the compiled search
    scales them to half the exponent range, `knn.NeighbourSearch`, whose
    units the floors of min_dist=0 and of sets without distinct points
    keep)."""
    xp = library.xp
    sides = [X] if Y is None else [X, Y]
    dtype = np.float32 if X.dtype == xp.float32 else np.float64
    work = (xp.float64 if dtype == np.float32 and X.dim < FLOAT32_MIN_DIM
            else X.dtype)
    tops = [library.scalar(xp.max(xp.abs(S.padded))) for S in sides]
    top = max((t for t in tops if t is not None), default=0.0)
    e = power_of_two_exponent(top)
    shift = (squares_exponent(top, X.dim, dtype) - e) * math.log(2)
    points = [_array_api.times_power_of_two(xp.astype(S.padded, work), e)
              for S in sides]
    valid = [library.from_numpy(np.arange(S.padded.shape[1]) < S.sizes[:, None])
             for S in sides]
    # per side searched: (log rho floored, the floors of its sets)
    own = [_floors(library, _log_kth(library, points[s], sides[s].sizes, k),
                   valid[s], min_dist, e, shift) for s in range(2 if both else 1)]
    coef = X.dim * (1.0 - alphas)
    pair = []
    for s, t in [(0, len(sides) - 1), (1, 0)][:2 if both else 1]:
        log_rho, floors = own[s]
        log_nu = _log_kth(library, points[s], sides[s].sizes, k, points[t], valid[t])
        u = log_rho[:, :, None] - xp.maximum(log_nu, floors[:, None, None])
        pair.append(_estimate(library, u, valid[s], coef, sides[s].sizes,
                              sides[t].sizes, alphas, k))
    if Y is None:  # 0 on the diagonal, exactly
        pair[0] = xp.where(library.from_numpy(np.eye(len(X), dtype=bool)), 0.0,
                           pair[0])
    if clamp:
        pair = [xp.clip(D, min=0.0) for D in pair]
    return tuple(pair) if both else pair[0]


def _log_kth(library, P, sizes, k, Q=None, valid_q=None):
    """log of the distance from each point of the sets P (n, n_max, d),
    of `sizes`, to its k-th nearest neighbour in its own set, itself
    excluded (Q None): (n, n_max); or in each set of Q (m, m_max, d), whose
    points `valid_q` (m, m_max) marks: (n, n_max, m). float64, -inf for 0
    (any value at the padding of P). By blocks of points (`row_blocks`),
    each a block of squared distances sorted along its rows."""
    xp = library.xp
    n, n_max, d = P.shape
    flat = xp.reshape(P, (n * n_max, d))
    columns = n_max if Q is None else Q.shape[0] * Q.shape[1]
    if Q is not None:
        right = xp.reshape(Q, (1, columns, d))
        keep = xp.reshape(valid_q, (1, columns))
    itemsize = 4 if P.dtype == xp.float32 else 8
    blocks = []
    for a, b in _array_api.row_blocks(n * n_max, 3 * columns * (d + 2) * itemsize,
                                      library):
        if Q is None:  # each point against its own set
            rows = np.arange(a, b)
            owner, position = rows // n_max, rows % n_max
            right = xp.take(P, library.from_numpy(owner), axis=0)
            keep = library.from_numpy((np.arange(n_max) < sizes[owner][:, None])
                                      & (np.arange(n_max) != position[:, None]))
        diff = xp.expand_dims(flat[a:b, :], axis=1) - right
        squares = xp.where(keep, xp.sum(diff * diff, axis=-1), xp.inf)
        if Q is not None:
            squares = xp.reshape(squares, (b - a, Q.shape[0], Q.shape[1]))
        blocks.append(xp.sort(squares, axis=-1, stable=False)[..., k - 1])
    kth = xp.astype(blocks[0] if len(blocks) == 1 else xp.concat(blocks),
                    xp.float64)
    kth = xp.reshape(kth, (n, n_max) if Q is None else (n, n_max, Q.shape[0]))
    positive = kth > 0
    return xp.where(positive, 0.5 * xp.log(xp.where(positive, kth, 1.0)), -xp.inf)


def _floors(library, log_rho, valid, min_dist, e, shift):
    """``(log rho floored, floors)``: the floors of the sets of log rho
    (n, n_max) (`valid` marks their points) as `_divergence._renyi` takes
    them, for points scaled by ``2**e`` (`shift`: the log of the further
    scale of the compiled search): min_dist's, or (None) the relative
    floors of `_divergence._relative_floors`, in the library."""
    xp = library.xp
    n = log_rho.shape[0]
    if min_dist is not None:
        value = (LOG_TINY - shift if min_dist == 0
                 else math.log(min_dist) + e * math.log(2))
        floors = xp.full((n,), value, dtype=xp.float64, device=library.device)
    else:
        # log(1e-3 (rho[lo] + rho[hi]) / 2) over the positive rho of each set
        positive = valid & xp.isfinite(log_rho)
        ordered = xp.sort(xp.where(positive, xp.exp(log_rho), xp.inf), axis=1)
        count = xp.sum(xp.astype(positive, xp.int64), axis=1)
        has = count > 0
        middle = (_pick(library, ordered, (count - 1) // 2)
                  + _pick(library, ordered, count // 2))
        own = xp.log(xp.where(has, RELATIVE_FLOOR * middle / 2, 1.0))
        # a set without one: the median of the others' floors
        h = xp.sum(xp.astype(has, xp.int64))
        others = xp.sort(xp.where(has, own, xp.inf))[None, :]
        median = (_pick(library, others, (h - 1) // 2)[0]
                  + _pick(library, others, h // 2)[0]) / 2
        floors = xp.where(has, own, xp.where(
            h > 0, median, math.log(RELATIVE_FLOOR) - shift))
    return xp.maximum(log_rho, floors[:, None]), floors


def _pick(library, A, index):
    """``A[i, index[i]]`` for the rows of A (0 where index is out of
    range), differentiable."""
    xp = library.xp
    columns = xp.arange(A.shape[1], device=library.device)
    return xp.sum(xp.where(columns == xp.reshape(index, (-1, 1)), A, 0.0), axis=1)


def _estimate(library, u, valid, coef, sizes_x, sizes_y, alphas, k):
    """`_divergence._estimate` from ``u = log rho - log nu`` (floored) of
    the points of the sets of X (n, n_max, m), `valid` marking them: the
    log of the mean of ``exp(coef u)`` over each set's points (a
    log-sum-exp), for each alpha: (len(alphas), n, m)."""
    xp = library.xp
    rows, cols = estimate_terms(sizes_x, sizes_y, alphas, k)
    mask = valid[:, :, None]
    out = []
    for a, alpha in enumerate(alphas):
        v = xp.where(mask, u * float(coef[a]), -xp.inf)
        top = xp.max(v, axis=1)
        L = top + xp.log(xp.sum(xp.exp(v - top[:, None, :]), axis=1))
        L = (L + library.from_numpy(rows[a])[:, None]
             - library.from_numpy(cols[a])[None, :])
        out.append(xp.clip(L, min=LOG_EPS) / float(alpha - 1))
    return xp.stack(out)


def median_scale(library, D):
    """The scale of `divergence_kernel` for gamma None (the median rule)
    of the divergences D (n, n) of `library`, as a float: that of
    `_engine.scales.divergence_kernel_matrix`, the median of the
    off-diagonal entries of its ``S`` (of the positive ones, if that is
    0; 1 if none is positive), computed on the device as there (S at the
    same power of two, sorted; a few values copied): the NumPy value
    exactly. Where D's values cannot be read, `ArrayLibrary.to_numpy`'s
    ValueError ("give gamma")."""
    xp = library.xp
    D = xp.astype(D, xp.float64)
    top = library.scalar(xp.max(xp.abs(D)))
    if top is None:
        library.to_numpy(D)  # (raises: the rule needs values)
    exponent = power_of_two_exponent(top) if top < 2.0**-900 else 0
    D = _array_api.times_power_of_two(D, exponent)
    DT = xp.matrix_transpose(D)
    S = xp.clip(D / 2 + DT / 2 if top > 2.0**1020 else (D + DT) / 2, min=0.0)
    n = S.shape[0]
    count = n * (n - 1)  # the off-diagonal entries, first once sorted
    diagonal = xp.eye(n, dtype=xp.bool, device=library.device)
    values = xp.sort(xp.reshape(xp.where(diagonal, xp.inf, S), (-1,)))
    zeros = int(library.scalar(xp.sum(xp.astype(values[:count] == 0, xp.int64))))
    scale = _median(library, values, 0, count) if count else 0.0
    if scale == 0 and zeros < count:
        scale = _median(library, values, zeros, count)
    scale = scale if scale > 0 else 1.0
    return max(math.ldexp(scale, -exponent), math.ulp(0.0))


def _median(library, values, start, stop):
    """``np.median`` of the sorted `values[start:stop]` (of `library`): the
    middle one, or the mean of the two middle ones (twice that of their
    halves where their sum overflows), as the engine's takes it."""
    k = (start + stop) // 2
    if (stop - start) % 2:
        return library.scalar(values[k])
    a, b = library.scalar(values[k - 1]), library.scalar(values[k])
    mean = (a + b) / 2
    return mean if math.isfinite(mean) else 2 * ((a / 2 + b / 2) / 2)


def divergence_kernel(library, D, gamma, scale, power, reverse=None):
    """`divergence_kernel`'s values of the divergences D (n, n) of
    `library`, ``exp(-gamma S**power)``, or (gamma None) ``exp(-(S /
    scale)**power)``, with ``S = max((D + R^T) / 2, 0)``, R the `reverse`
    divergences (m, n) of a D (n, m) between two collections (None: D):
    by the library on its device, differentiably. ``S == 0`` gives 1
    (gradient 0); where ``gamma S**power`` leaves the float range, it is
    taken in logs."""
    xp = library.xp
    R = D if reverse is None else reverse
    S = xp.clip(D / 2 + xp.matrix_transpose(R) / 2, min=0.0)
    positive = S > 0
    S1 = xp.where(positive, S, 1.0)
    if gamma is None:
        exponents = (S1 / scale) ** power
    else:
        tiny, top = xp.finfo(D.dtype).smallest_normal, xp.finfo(D.dtype).max
        plain, exponents = xp.zeros_like(positive), S1
        if tiny <= gamma <= top:
            powers = S1**power
            exponents = gamma * powers
            plain = (powers >= tiny) & (exponents <= top)
        # exp(log(gamma) + power log(S)), its argument bounded: exp(-A) is
        # 0 long before, and the gradient stays finite
        logs = xp.clip(math.log(gamma) + power * xp.log(S1),
                       max=math.log(top) - 1)
        exponents = xp.where(plain, exponents, xp.exp(xp.where(plain, 0.0, logs)))
    return xp.exp(-xp.where(positive, exponents, 0.0))
