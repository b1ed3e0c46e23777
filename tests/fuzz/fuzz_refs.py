"""Slow, obviously correct NumPy references for the fuzz suite.

Every reference takes plain inputs (lists of 2-D arrays, dense arrays; the
callers convert sparse matrices, Bags and lists first) and computes in
``numpy.longdouble`` where NumPy allows it (x87 extended precision on x86:
64-bit mantissa, exponent range to 1e4932), so that inputs scaled to 1e150
or 1e308 and subnormal inputs have an exact-enough reference; a true value
that overflows float64 shows as inf after ``to_float64``. Linear algebra
(eigh, slogdet, solve) runs in float64, as NumPy has no long double LAPACK.

This module never imports kernelmaps: the references must not share code
with what they check. The feature-map references take the map's public
parameters (``weights``, ``k``, ``table``, ...), never its ``transform``.
The references the tests share (point and set kernels, histogram kernels,
expected kernels, ridge) are those of ``tests/_references.py``, here in
long double.
"""

import functools
import itertools
import math
import os
import sys

import numpy as np
import scipy.sparse
from scipy.special import gammaln

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import _references as shared  # noqa: E402
from _references import gaussian_expected as gaussian_expected  # noqa: E402

LD = np.longdouble
TINY = 1e-300  # absolute floor of every tolerance


# ----------------------------------------------------------------- inputs


def dense(a, dtype=LD):
    """A dense 2-D (or any-D) array of `a`: sparse matrices are densified
    (duplicates summed, as scipy does), lists and memmaps copied, a
    tensor's values (the `[torch]` entries) read."""
    if scipy.sparse.issparse(a):
        a = a.toarray()
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.array(a, dtype=dtype)


def set_list(X, dtype=LD):
    """A collection of sets (list, tuple, object array, 3-D array, or a
    Bags-like object with ``points`` and ``offsets``) as a list of 2-D
    arrays."""
    if hasattr(X, "points") and hasattr(X, "offsets"):
        pts = np.asarray(X.points)
        off = np.asarray(X.offsets)
        return [np.array(pts[a:b], dtype=dtype) for a, b in itertools.pairwise(off)]
    if isinstance(X, np.ndarray) and X.dtype != object:
        return [np.array(s, dtype=dtype) for s in X]
    return [dense(s, dtype) for s in X]


def to_float64(a):
    """`a` (long double) as float64, overflow to inf without a warning."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.asarray(a, dtype=np.float64)


# ------------------------------------------------------------ comparisons


def compare(result, ref, rtol, atol):
    """None if `result` matches `ref` elementwise within ``atol + rtol *
    |ref|``, else a one-line description of the worst mismatch."""
    res = np.asarray(result.toarray() if scipy.sparse.issparse(result) else result)
    ref = np.asarray(ref)
    if res.shape != ref.shape:
        return f"shape {res.shape}, expected {ref.shape}"
    ref64 = to_float64(ref)
    if np.isnan(ref64).any():
        return None  # the reference cannot tell (e.g. inf - inf inside it)
    if not np.isfinite(ref64).all():
        i = np.unravel_index(np.argmax(~np.isfinite(ref64)), ref64.shape)
        return (
            f"the true value at {tuple(int(v) for v in i)} overflows float64 "
            f"({float(ref[i]):.3g}) but a finite value was returned"
        )
    with np.errstate(all="ignore"):
        diff = np.abs(res.astype(LD) - ref.astype(LD))
        bound = atol + rtol * np.abs(ref.astype(LD))
        bad = diff > bound
    if not bad.any():
        return None
    with np.errstate(all="ignore"):
        excess = np.where(bad, diff / np.maximum(bound, TINY), 0)
    i = np.unravel_index(np.argmax(excess), res.shape)
    rel = float(diff[i] / max(abs(ref[i]), TINY))
    return (
        f"at {tuple(int(v) for v in i)}: got {float(res[i])!r}, reference "
        f"{float(ref[i])!r} (abs err {float(diff[i]):.3g}, rel err {rel:.3g}; "
        f"{int(bad.sum())} of {bad.size} entries off)"
    )


def scale_of(*arrays):
    """Largest finite |value| of the arrays (1 if none)."""
    m = 0.0
    for a in arrays:
        a = to_float64(np.abs(np.asarray(a, dtype=LD)))
        a = a[np.isfinite(a)]
        if a.size:
            m = max(m, float(a.max()))
    return m if m > 0 else 1.0


# -------------------------------------------------------------- set kernels


# the references shared with the tests, in long double
point_kernel = functools.partial(shared.point_kernel, dtype=LD)
median_gamma = functools.partial(shared.median_gamma, dtype=LD)


def _gamma(gamma, kernel, sets, weights=None):
    """gamma, or the package's default for the kernel on the pooled points
    of `sets` (the second collection of a kernel function; with `weights`,
    the weighted rule of `weighted_median_gamma`)."""
    if gamma is not None:
        return float(gamma)
    if kernel in ("rbf", "laplacian"):
        if weights is not None:
            return weighted_median_gamma(np.vstack(sets), np.concatenate(weights),
                                         kernel)
        return median_gamma(np.vstack(sets), kernel)
    return 1.0 / sets[0].shape[1]


def weight_list(X):
    """The point weights of each set of a weighted `Bags` (float64 arrays),
    or None for anything unweighted."""
    w = getattr(X, "weights", None)
    if w is None or not hasattr(X, "offsets"):
        return None
    off = np.asarray(X.offsets)
    return [np.array(w[a:b], dtype=np.float64) for a, b in itertools.pairwise(off)]


def weighted_median_gamma(points, weights, kernel, sample=1000, seed=0):
    """The weighted median heuristic (`median_heuristic`'s Notes): the points
    of positive weight, sampled as without weights, the median of the
    distances of their pairs weighted by the products of their weights
    (the smallest distance where the cumulative weight reaches half, the
    mean with the next where it is exactly half); the distinct pairs where
    it is 0, and 1 with fewer than 2 points (the package's fallback)."""
    keep = weights > 0
    P, w = np.asarray(points, dtype=np.float64)[keep], weights[keep]
    n = len(P)
    if n < 2:
        return 1.0
    if n > sample:
        rows = np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
        P, w = P[rows], w[rows]
    i, j = np.triu_indices(len(P), 1)
    diff = P[i].astype(LD) - P[j]
    dist = (diff**2).sum(-1) if kernel == "rbf" else np.abs(diff).sum(-1)
    pw = (w / w.max())[i] * (w / w.max())[j]

    def median(d, pw):
        order = np.argsort(d, kind="stable")
        d, c = d[order], np.cumsum(pw[order])
        k = int(np.searchsorted(c, c[-1] / 2))
        return (d[k] + d[k + 1]) / 2 if c[k] == c[-1] / 2 and k + 1 < len(d) else d[k]

    med = median(dist, pw)
    if not med > 0:
        if not (dist > 0).any():
            return 1.0
        med = median(dist[dist > 0], pw[dist > 0])
    return 1 / med


def _weighted_sum_match(X, wX, Y, wY, kernel, gamma, degree, coef0, normalize):
    """The weighted sum-match kernel, long double: ``sum w_a w_b k(a, b)``,
    over the total weights with `normalize` (None weights: 1 a point)."""
    wX = wX or [np.ones(len(A)) for A in X]
    wY = wY or [np.ones(len(B)) for B in Y]
    K = np.empty((len(X), len(Y)), dtype=LD)
    for i, (A, a) in enumerate(zip(X, wX, strict=True)):
        for j, (B, b) in enumerate(zip(Y, wY, strict=True)):
            k = shared.point_kernel(A, B, kernel, gamma, degree, coef0, LD)
            s = (a.astype(LD)[:, None] * k * b.astype(LD)[None, :]).sum()
            K[i, j] = s / (LD(a.sum()) * LD(b.sum())) if normalize else s
    return K


def sum_match(
    X, Y=None, *, kernel="rbf", gamma=None, degree=2, coef0=1.0, normalize=True
):
    """The sum-match (mean map) kernel, long double (weighted sets: the
    weighted kernel)."""
    wX, wY = weight_list(X), weight_list(X if Y is None else Y)
    X = set_list(X)
    Y = X if Y is None else set_list(Y)
    g = _gamma(gamma, kernel, Y, wY)
    if wX is not None or wY is not None:
        return _weighted_sum_match(X, wX, Y, wY, kernel, g, degree, coef0,
                                   normalize)
    return shared.sum_match(X, Y, kernel, g, degree, coef0, normalize=normalize,
                            dtype=LD)


def mmd2(X, Y=None, *, kernel="rbf", gamma=None, degree=2, coef0=1.0, unbiased=False):
    """(MMD^2 before clipping, scale of the kernel terms), long double. For
    Y=None the diagonal is 0. Weighted sets: of the weighted mean
    embeddings (biased only)."""
    wX = weight_list(X)
    wY = wX if Y is None else weight_list(Y)
    Xs = set_list(X)
    Ys = Xs if Y is None else set_list(Y)
    kw = {"kernel": kernel, "gamma": _gamma(gamma, kernel, Ys, wY), "degree": degree,
          "coef0": coef0, "dtype": LD}

    def within(sets, weights):
        if weights is not None:
            return np.array([_weighted_sum_match(
                [A], [w], [A], [w], kw["kernel"], kw["gamma"], degree, coef0,
                True)[0, 0] for A, w in zip(sets, weights, strict=True)], dtype=LD)
        return np.array([shared.self_term(A, unbiased=unbiased, **kw) for A in sets],
                        dtype=LD)

    kx = within(Xs, wX)
    ky = kx if Y is None else within(Ys, wY)
    if wX is not None or wY is not None:
        kxy = _weighted_sum_match(Xs, wX, Ys, wY, kernel, kw["gamma"], degree,
                                  coef0, True)
    else:
        kxy = shared.sum_match(Xs, Ys, **kw)
    D2 = kx[:, None] + ky[None, :] - 2 * kxy
    if Y is None:
        np.fill_diagonal(D2, 0)
    return D2, scale_of(kx, ky, kxy)


def renyi(X, Y=None, *, alpha=0.99, k=5, min_dist=None, clamp=True):
    """kNN Renyi divergence estimate (Poczos et al.), the formula of the
    API; None when a set has no positive k-th neighbour distance with the
    default (relative) floor, which this reference does not model."""
    Xs = set_list(X, np.float64)
    Ys = Xs if Y is None else set_list(Y, np.float64)
    alphas = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    d = Xs[0].shape[1]

    def dist(A, B):
        return np.sqrt(((A[:, None, :].astype(LD) - B[None, :, :]) ** 2).sum(-1))

    out = np.zeros((len(alphas), len(Xs), len(Ys)), dtype=LD)
    for i, A in enumerate(Xs):
        n = len(A)
        dA = dist(A, A)
        np.fill_diagonal(dA, np.inf)
        rho = np.sort(dA, axis=1)[:, k - 1]
        if min_dist is None:
            pos = rho[rho > 0]
            if pos.size == 0:
                return None
            floor = LD(1e-3) * np.median(pos)
        elif min_dist > 0:
            floor = LD(min_dist)
        else:
            floor = LD(np.finfo(np.float64).tiny)
        r = np.maximum(rho, floor)
        for j, B in enumerate(Ys):
            if Y is None and i == j:
                continue
            m = len(B)
            nu = np.maximum(np.sort(dist(A, B), axis=1)[:, k - 1], floor)
            for q, a in enumerate(alphas):
                e = LD(d * (1 - a)) * (np.log(r) - np.log(nu))
                top = e.max()
                L = top + np.log(np.exp(e - top).sum())
                log_b = 2 * gammaln(k) - gammaln(k - a + 1) - gammaln(k + a - 1)
                log_i = (
                    LD(log_b) + LD(1 - a) * np.log(LD(n - 1) / m) + L - np.log(LD(n))
                )
                log_i = max(log_i, LD(math.log(np.finfo(np.float64).eps)))
                out[q, i, j] = log_i / LD(a - 1)
    if clamp:
        out = np.maximum(out, 0)
    return out[0] if np.ndim(alpha) == 0 else out


def divergence_kernel(D, *, gamma=None, power=2):
    D = dense(D)
    S = np.maximum((D + D.T) / 2, 0)
    if gamma is None:
        off = S[~np.eye(len(S), dtype=bool)]
        scale = np.median(off) if off.size else LD(0)
        if scale == 0 and np.any(off > 0):
            scale = np.median(off[off > 0])
        gamma = 1 / scale ** LD(power) if scale > 0 else LD(1)
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(-LD(gamma) * S ** LD(power))


# ---------------------------------------------------------- histograms


def hist_kernel(name, X, Y=None, *, beta=1.0):
    """The six histogram kernels of the API, long double."""
    symmetric = Y is None
    X = dense(X)
    Y = X if symmetric else dense(Y)
    if name in ("chi2_distance", "exp_chi2_kernel"):
        x, y = X[:, None, :], Y[None, :, :]
        with np.errstate(all="ignore"):
            s = x + y
            t = np.where(s > 0, (x - y) ** 2 / np.where(s > 0, s, 1), 0)
            D = t.sum(-1) / 2
            if symmetric:
                np.fill_diagonal(D, 0)
            return D if name == "chi2_distance" else np.exp(-LD(beta) * D)
    kind = {"additive_chi2_kernel": "chi2", "intersection_kernel": "intersection",
            "hellinger_kernel": "hellinger", "js_kernel": "js"}[name]
    return shared.additive_kernel(kind, X, Y, dtype=LD)


def chi2_direct_features(X, k):
    """Eq. 7 of the chi2 paper with parameters `k` (T,) or (d, T)."""
    X = dense(X)
    n, d = X.shape
    k = np.asarray(k, dtype=LD)
    K = np.broadcast_to(k, (d, k.shape[-1]))
    T = K.shape[1]
    out = np.zeros((n, d, T), dtype=LD)
    with np.errstate(all="ignore"):
        prod = np.ones((n, d), dtype=LD)
        for q in range(T):
            kq = K[None, :, q]
            out[:, :, q] = prod * 2 * np.sqrt(kq) * X / (X + kq)
            prod = prod * (X - kq) / (X + kq)
    return out.reshape(n, d * T)


def chebyshev_features(X, n_terms, scale):
    X = dense(X)
    n, d = X.shape
    out = np.zeros((n, d, n_terms), dtype=LD)
    s = LD(scale)
    with np.errstate(all="ignore"):
        z = X / s
        a = np.log(np.where(z > 0, z, 1)) / LD(np.pi)
        terms = [2 * z / (z + 1)]
        if n_terms > 1:
            terms.append(np.sqrt(LD(2)) * a * terms[0])
        for q in range(2, n_terms):
            terms.append((2 * a * terms[q - 1] - (q - 2) * terms[q - 2]) / q)
        for q in range(n_terms):
            out[:, :, q] = np.where(X > 0, np.sqrt(s) * terms[q], 0)
    return out.reshape(n, d * n_terms)


_SPECTRA = {
    "chi2": lambda w: 1 / np.cosh(np.pi * w),
    "intersection": lambda w: 2 / np.pi / (1 + 4 * w**2),
    "js": lambda w: 2 / math.log(4) / np.cosh(np.pi * w) / (1 + 4 * w**2),
}


def homogeneous_features(X, kernel, order, period):
    X = dense(X)
    n, d = X.shape
    if kernel == "hellinger":
        return np.sqrt(X)
    L = 2 * math.pi / period
    T = 2 * order + 1
    out = np.zeros((n, d, T), dtype=LD)
    with np.errstate(all="ignore"):
        root = np.sqrt(X)
        lx = np.log(np.where(X > 0, X, 1))
        out[:, :, 0] = LD(math.sqrt(L * _SPECTRA[kernel](0.0))) * root
        for j in range(1, order + 1):
            c = LD(math.sqrt(2 * L * _SPECTRA[kernel](j * L)))
            out[:, :, 2 * j - 1] = c * root * np.cos(j * LD(L) * lx)
            out[:, :, 2 * j] = c * root * np.sin(j * LD(L) * lx)
    return out.reshape(n, d * T)


def _anchor_dimensions(X, anchors, table, table_offsets, rank):
    """Per dimension j of the dense X: its anchors a, its table block
    (len(a), rank[j]), the values of X clamped to the anchor range, and the
    output columns."""
    A = np.asarray(anchors, dtype=np.float64)
    col = 0
    for j in range(X.shape[1]):
        a = A[j]
        r = int(rank[j])
        block = np.asarray(table[table_offsets[j] : table_offsets[j] + len(a) * r])
        x = np.clip(X[:, j], a[0], a[-1])
        yield a, block.reshape(len(a), r), x, slice(col, col + r)
        col += r


def anchor_features(X, anchors, table, table_offsets, rank):
    """ANNFM with one neighbour (values clamped to the anchor range). Returns
    (features, alternative features): where a value lies at equal distance
    from two anchors either is right, and the second array holds the
    other choice (equal to the first elsewhere)."""
    X = dense(X, np.float64)
    out = np.zeros((X.shape[0], int(np.sum(rank))))
    alt = np.zeros_like(out)
    for a, block, x, cols in _anchor_dimensions(X, anchors, table, table_offsets, rank):
        dist = np.abs(x[:, None] - a[None, :])
        best = dist.min(axis=1)
        tie = np.abs(dist - best[:, None]) <= 1e-12 * max(abs(a[-1]), 1e-300)
        first = np.argmax(tie, axis=1)
        last = len(a) - 1 - np.argmax(tie[:, ::-1], axis=1)
        out[:, cols] = block[first]
        alt[:, cols] = block[last]
    return out, alt


def anchor_interpolated(X, anchors, table, table_offsets, rank):
    """k-ANNFM with the 2 bracketing anchors weighted by distance: linear
    interpolation between the rows of the anchors around each value
    (values clamped to the anchor range)."""
    X = dense(X, np.float64)
    out = np.zeros((X.shape[0], int(np.sum(rank))))
    for a, block, x, cols in _anchor_dimensions(X, anchors, table, table_offsets, rank):
        hi = np.clip(np.searchsorted(a, x, side="right"), 1, len(a) - 1)
        lo = hi - 1
        t = (x - a[lo]) / (a[hi] - a[lo])
        out[:, cols] = (1 - t)[:, None] * block[lo] + t[:, None] * block[hi]
    return out


# ------------------------------------------------------ random features


def fourier(X, weights, offsets):
    """sqrt(2/t) cos(X W + b) and the largest |X W + b|, float64 with long
    double products."""
    X = dense(X)
    W = np.asarray(weights, dtype=LD)
    arg = X @ W + np.asarray(offsets, dtype=LD)
    t = W.shape[1]
    return np.sqrt(LD(2) / t) * np.cos(arg), float(np.max(np.abs(arg), initial=0))


def set_fourier(X, weights, offsets):
    sets = set_list(X)
    rows, big = [], 0.0
    for s in sets:
        z, m = fourier(s, weights, offsets)
        rows.append(z.mean(axis=0))
        big = max(big, m)
    return np.array(rows, dtype=LD), big


def emk_features(sets, basis, projection, kernel, gamma):
    B = np.asarray(basis, dtype=LD)
    rows = []
    for s in set_list(sets):
        k = point_kernel(s, B, "rbf" if kernel == "rbf" else "laplacian", gamma, 2, 1)
        rows.append(k.mean(axis=0))
    return np.array(rows, dtype=LD) @ np.asarray(projection, dtype=LD).T


def emk_pyramid(sets, positions, levels, basis, projection, kernel, gamma):
    """The spatial pyramid of EMK features, as documented in
    EMKFeatures.transform: level l splits the unit square into a 2**l by
    2**l grid, a cell's feature is the mean feature of the set's points in
    it (0 if none), weighted 1/2**L at level 0 and 1/2**(L - l + 1) at
    level l >= 1, concatenated level by level, cells row-major."""
    B = np.asarray(basis, dtype=LD)
    G = np.asarray(projection, dtype=LD)
    pos = np.asarray(positions, dtype=np.float64)
    rows, start = [], 0
    for s in set_list(sets):
        k = point_kernel(s, B, "rbf" if kernel == "rbf" else "laplacian", gamma, 2, 1)
        psi = k @ G.T
        p = pos[start : start + len(s)]
        start += len(s)
        feats = []
        for level in range(levels + 1):
            side = 2**level
            rc = np.minimum((p * side).astype(np.int64), side - 1)
            weight = 1 / LD(2 ** (levels if level == 0 else levels - level + 1))
            for r in range(side):
                for c in range(side):
                    inside = (rc[:, 0] == r) & (rc[:, 1] == c)
                    cell = psi[inside].mean(axis=0) if inside.any() else psi[0] * 0
                    feats.append(weight * cell)
        rows.append(np.concatenate(feats))
    return np.array(rows, dtype=LD)


# --------------------------------------------------- distributions, PSD


def level2(K, diag_X, diag_Y=None, *, kind="rbf", gamma2=1.0, degree=2, coef0=1.0):
    K = dense(K)
    dx = np.asarray(diag_X, dtype=LD)
    dy = dx if diag_Y is None else np.asarray(diag_Y, dtype=LD)
    g = LD(gamma2)
    with np.errstate(all="ignore"):
        if kind == "linear":
            return K
        if kind == "polynomial":
            return (g * K + LD(coef0)) ** int(degree)
        if kind == "rbf":
            return np.exp(-g * np.maximum(dx[:, None] + dy[None, :] - 2 * K, 0))
        cosine = K / np.sqrt(dx[:, None] * dy[None, :])
        return np.exp(-g * np.maximum(2 - 2 * cosine, 0))


def psd_parts(K):
    """Symmetrised K and its eigenvalues (long double), and its eigenvectors
    (float64); (None, None) for a non-finite K.

    The eigendecomposition runs at a unit scale (K times a power of two,
    exact) and the results are scaled back in long double: (K + K.T) / 2
    in float64 overflows for entries beyond 9e307, a symmetrised matrix that
    does not, and the eigenvalues of K of 1e-300 or 1e300 are those of the
    unit-scale K times that scale."""
    K = np.asarray(dense(K, np.float64))
    if not np.isfinite(K).all():
        return K, None, None
    top = float(np.abs(K).max(initial=0.0))
    e = math.frexp(top)[1] if top > 0 else 0
    U = np.ldexp(K, -e)
    Su = (U + U.T) / 2
    w, V = np.linalg.eigh(Su)
    return np.ldexp(Su.astype(LD), e), np.ldexp(w.astype(LD), e), V


def project_psd(K, method):
    """The projection, in long double (beyond the float64 range where it
    overflows or underflows)."""
    S, w, V = psd_parts(K)
    if w is None:
        return None
    V = V.astype(LD)
    if method == "clip":
        return (V * np.maximum(w, 0)) @ V.T
    if method == "flip":
        return (V * np.abs(w)) @ V.T
    if method == "shift":
        return S + max(-w.min(), LD(0)) * np.eye(len(S), dtype=LD)
    return S @ S


def psd_transform(K_train, K_test, method):
    """The test-row map of PSDProjector; None when an eigenvalue is so
    close to 0 that its sign (and so the map) is ambiguous."""
    S, w, V = psd_parts(K_train)
    if w is None:
        return None
    T = np.asarray(dense(K_test, LD))
    if method == "square":
        return T @ S
    if method == "shift":
        return T
    if np.any(np.abs(w) <= 1e-9 * np.abs(w).max()):
        return None
    neg = V[:, w < 0].astype(LD)
    return T - (1.0 if method == "clip" else 2.0) * (T @ neg) @ neg.T


def pca(Z, n_components):
    """Mean, and the top explained variances (n - 1 denominator)."""
    Z = np.asarray(dense(Z, np.float64))
    mean = Z.mean(axis=0)
    C = (Z - mean).T @ (Z - mean) / max(len(Z) - 1, 1)
    w = np.linalg.eigvalsh(C)[::-1]
    return mean, np.maximum(w[:n_components], 0)


def ridge_predict(Z, y, alpha, Z_test):
    """Ridge with an unpenalised intercept on all features."""
    coef, intercept = shared.ridge(dense(Z, np.float64), y, alpha)
    return np.asarray(dense(Z_test, np.float64)) @ coef + intercept
