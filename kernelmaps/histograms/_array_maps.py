"""The histogram maps computed by another array library
(`kernelmaps._array_api`): the expansions of ``_engine/_expand.pyx`` and
the anchor lookup of ``_engine/_anchors.pyx``, value by value, with the
library's arrays on their device, differentiably, in the input's
precision.

The additive maps give column ``j * n_terms + q`` for term q of input
column j, and a value of 0 gives zero features with a gradient of 0
there (not NaN where the feature has no derivative at 0, a square root):
each formula is evaluated at a stand-in value (1) where the input is 0,
its result then replaced by 0.
"""

import math

import numpy as np

from .. import _array_api

__all__ = ["anchor_features", "chebyshev", "direct", "homogeneous", "square_root"]


def _features(library, terms):
    """The (n, d) arrays `terms`, one per term, as the (n, d * n_terms)
    features (column ``j * n_terms + q``)."""
    xp = library.xp
    Z = xp.stack(terms, axis=-1)
    return xp.reshape(Z, (Z.shape[0], Z.shape[1] * Z.shape[2]))


def _positive(library, X):
    """(X > 0, X with 1 in place of its zeros)."""
    positive = X > 0
    return positive, library.xp.where(positive, X, 1)


def direct(library, X, k, c, m):
    """`Chi2DirectMap`'s features of the histograms X: ``c_q(x) =
    prod_{p<q} (x - k_p)/(x + k_p) * c_q x / (x + k_q)``, with `k` and
    ``c = 2 sqrt(k)`` arrays (rows, n_terms) of the library (one row shared
    by the columns, or one per column), at the scale ``4**-m`` of X (k and
    c given at that scale: parameters beyond the range of float32 input)
    and times ``2**m``.

    As the engine, but in any precision without rescaling the values:
    ``c_q x / (x + k_q)`` is ``c_q (x / s)`` for x >= k_q and ``(c_q / s)
    x`` below (each factor within the range), and x and k_q are halved
    where x + k_q could overflow (the ratios stay the same)."""
    xp = library.xp
    # (a value of 0 at that scale gives zero features, as in the engine)
    positive, x = _positive(library, _array_api.times_power_of_two(X, -2 * m))
    top = 2.0 ** (np.finfo(_dtype(library, X)).maxexp - 2)
    high = x > top
    terms, prod = [], None
    for q in range(k.shape[1]):
        kq, cq = k[:, q], c[:, q]
        half = high | (kq > top)
        xh, kh = xp.where(half, x * 0.5, x), xp.where(half, kq * 0.5, kq)
        s = xh + kh
        term = xp.where(x >= kq, cq * (xh / s), (cq / s) * xh)
        term = xp.where(positive, term if prod is None else prod * term, 0)
        terms.append(_array_api.times_power_of_two(term, m))
        prod = (xh - kh) / s if prod is None else prod * (xh - kh) / s
    return _features(library, terms)


def _dtype(library, X):
    """NumPy's float32 or float64, as the dtype of X."""
    return np.float32 if X.dtype == library.xp.float32 else np.float64


def chebyshev(library, X, scale, n_terms):
    """`Chi2ChebyshevMap`'s features ``sqrt(s) d_q(x / s)`` of the
    histograms X (`scale` s): by the recurrence of the engine where ``z =
    x / s`` is within ``2**+-window`` (`_CHEBYSHEV_WINDOWS`, by precision),
    and by the same recurrence in logs elsewhere (`_chebyshev_in_logs`'s,
    with an exponent carried apart), as `Chi2ChebyshevMap._expand`."""
    xp = library.xp
    dtype = _dtype(library, X)
    info = np.finfo(dtype)
    positive = X > 0
    near = terms = None
    if info.tiny <= scale <= info.max:  # s in the precision: z = x / s
        window = _CHEBYSHEV_WINDOWS[dtype]
        low, high = math.ldexp(scale, -window), math.inf
        if math.frexp(scale)[1] + window <= info.maxexp:
            high = math.ldexp(scale, window)
        if dtype == np.float32:  # (bounds that float32 holds)
            low, high = max(low, float(info.tiny)), min(high, float(info.max))
        near = positive & (low <= X) & (high >= X)
        z = xp.where(near, X, scale) / scale
        terms = _chebyshev_near(library, z, scale, n_terms)
    far = positive if near is None else positive & ~near
    if terms is None or library.holds(xp.any(far)):
        logs = _chebyshev_far(library, xp.where(far, X, 1), scale, n_terms)
        terms = logs if near is None else [xp.where(near, t, v)
                                           for t, v in zip(terms, logs, strict=True)]
        near = positive
    return _features(library, [xp.where(near, t, 0) for t in terms])


# The Chebyshev recurrence runs on z = x / s within 2**+-window (2 z and
# z + 1 stay normal numbers): float64's is the engine's.
_CHEBYSHEV_WINDOWS = {np.float64: 1000, np.float32: 120}


def _chebyshev_near(library, z, scale, n_terms):
    """The terms ``sqrt(s) d_q(z)`` of positive z, as the engine's
    ``_chebyshev``."""
    xp = library.xp
    a = xp.log(z) / math.pi
    root = math.sqrt(scale)
    d0 = 2 * z / (z + 1)
    terms = [root * d0]
    if n_terms == 1:
        return terms
    d1 = math.sqrt(2.0) * a * d0
    terms.append(root * d1)
    for q in range(2, n_terms):
        d0, d1 = d1, (2 * a * d1 - (q - 2) * d0) / q
        terms.append(root * d1)
    return terms


def _chebyshev_far(library, x, scale, n_terms):
    """The terms of positive x, for any ratio x / s, as
    `_maps._chebyshev_in_logs` (its renormalisation by ``2**half``,
    half by precision, and its 0 features where ``d_q = 0``)."""
    xp = library.xp
    half = 500 if x.dtype == xp.float64 else 50
    log_x = xp.log(x)
    L = log_x - math.log(scale)
    a = L / math.pi
    absL = xp.abs(L)
    log_scale = 0.5 * log_x + math.log(2.0) - absL / 2 - xp.log1p(xp.exp(-absL))
    terms = [xp.exp(log_scale)]
    r0, r1 = xp.ones_like(a), math.sqrt(2.0) * a
    for q in range(1, n_terms):
        if q >= 2:
            r0, r1 = r1, (2 * a * r1 - (q - 2) * r0) / q
        big = xp.abs(r1) > 2.0**half
        r0 = xp.where(big, r0 * 2.0**-half, r0)
        r1 = xp.where(big, r1 * 2.0**-half, r1)
        log_scale = xp.where(big, log_scale + half * math.log(2.0), log_scale)
        zero = r1 == 0
        r = xp.where(zero, 1, r1)
        terms.append(xp.where(zero, 0, xp.sign(r) * xp.exp(log_scale
                                                           + xp.log(xp.abs(r)))))
    return terms


def homogeneous(library, X, coef, step):
    """`HomogeneousKernelMap`'s features of the histograms X: ``c_0
    sqrt(x)``, then ``c_j sqrt(x) (cos, sin)(j step log x)``, with the
    coefficients `coef` (a NumPy array) shared by the columns."""
    xp = library.xp
    positive, x = _positive(library, X)
    root, log_x = xp.sqrt(x), xp.log(x)
    terms = [float(coef[0]) * root]
    for j in range(1, len(coef)):
        t = j * step * log_x
        c = float(coef[j])
        terms += [c * root * xp.cos(t), c * root * xp.sin(t)]
    return _features(library, [xp.where(positive, t, 0) for t in terms])


def square_root(library, X):
    """`HomogeneousKernelMap`'s Hellinger features: ``sqrt(x)``."""
    positive, x = _positive(library, X)
    return library.xp.where(positive, library.xp.sqrt(x), 0)


def anchor_features(library, X, anchors, table, plan, n_neighbors, distance):
    """`AnchorMap`'s features of the histograms X (n, d): for each value,
    its `n_neighbors` nearest anchors among the (d, n_anchors) `anchors`
    (a binary search in those of its column, the value clamped to them)
    and their weights, as the engine's ``_neighbours`` (a value of 0 takes
    the anchor 0 alone), then the weighted sum of their rows of the
    concatenated anchor features `table` (1-D). `plan` gives, for each
    output column, its input column, its offset in the table (that of
    the column's block plus its component) and its rank, as arrays of the
    library. The weights, and so the features, are differentiable in the
    values (piecewise: constant with uniform weights)."""
    xp = library.xp
    n_anchors = anchors.shape[1]
    flat = xp.reshape(anchors, (-1,))
    first = xp.arange(anchors.shape[0], device=library.device,
                      dtype=xp.int64) * n_anchors

    def at(i):
        """The anchors i (n, d) of each value's column."""
        return xp.reshape(xp.take(flat, xp.reshape(first + i, (-1,))), i.shape)

    zero = X == 0
    x = xp.minimum(xp.maximum(X, anchors[:, 0]), anchors[:, -1])
    lo = xp.zeros(X.shape, dtype=xp.int64, device=library.device)
    size = n_anchors
    while size > 1:  # the largest lo with a[lo] <= x
        step = size // 2
        lo = lo + step * xp.astype(at(lo + step) <= x, xp.int64)
        size -= step
    hi = xp.minimum(lo + 1, n_anchors - 1)
    if n_neighbors == 1:
        near = [lo + xp.astype(at(hi) - x < x - at(lo), xp.int64)]
        weights = None
    elif n_neighbors == 2 and distance:
        lo = xp.where(hi == lo, lo - 1, lo)
        a0 = at(lo)
        frac = (x - a0) / (at(hi) - a0)
        near, weights = [lo, hi], [1 - frac, frac]
    else:
        near, weights = _k_nearest(library, x, at, lo, n_anchors, n_neighbors,
                                   distance)
    # a value of 0: the anchor 0, weight 1
    near = [xp.where(zero, 0, i) for i in near]
    if weights is not None:
        weights = [xp.where(zero, 1 if t == 0 else 0, w)
                   for t, w in enumerate(weights)]
    column, offset, rank = plan
    Z = None
    for t, i in enumerate(near):
        rows = xp.take(i, column, axis=1)
        values = xp.reshape(xp.take(table, xp.reshape(offset + rows * rank, (-1,))),
                            rows.shape)
        if weights is not None:
            values = xp.take(weights[t], column, axis=1) * values
        Z = values if Z is None else Z + values
    return Z


def _k_nearest(library, x, at, lo, n_anchors, k, distance):
    """The engine's k nearest anchors of the clamped values x, walking out
    from ``lo`` and ``lo + 1``, and their weights: 1/k each, or inversely
    proportional to the distance (weight 1 on an anchor hit exactly)."""
    xp = library.xp
    left, right = lo, lo + 1
    near, gaps = [], []
    for _ in range(k):
        dl = xp.where(left >= 0, x - at(xp.maximum(left, 0)), math.inf)
        dr = xp.where(right < n_anchors, at(xp.minimum(right, n_anchors - 1)) - x,
                      math.inf)
        take = dl <= dr
        near.append(xp.where(take, left, right))
        gaps.append(xp.where(take, dl, dr))
        step = xp.astype(take, xp.int64)
        left, right = left - step, right + 1 - step
    if not distance:
        return near, [xp.full_like(x, 1.0 / k)] * k
    hit = gaps[0] == 0
    inverse = [1 / xp.where(hit, 1, g) for g in gaps]
    total = inverse[0]
    for v in inverse[1:]:
        total = total + v
    return near, [xp.where(hit, 1 if t == 0 else 0, v / total)
                  for t, v in enumerate(inverse)]
