"""The independent references shared by the tests (and the fuzz suite, whose
``fuzz_refs`` builds on them): slow, obviously correct NumPy computations
straight from the definitions, written once.

A reference never imports kernelmaps: it must not share code with what it
checks. Each computes in float64 unless given ``dtype=np.longdouble`` (x87
extended precision on x86: a 64-bit mantissa, exponents to 1e4932), for
inputs near the ends of the float64 range or results checked beyond its
rounding; linear algebra runs in float64 (NumPy has no long double LAPACK).
"""

import math

import numpy as np

# ------------------------------------------------------------ point kernels


def kernel_values(x, y, kernel, gamma, degree=2, coef0=1.0, dtype=np.float64):
    """k(x, y) for the rows of `x` and `y` broadcast against each other (the
    features on the last axis): "rbf" exp(-gamma |x - y|^2), "laplacian"
    exp(-gamma |x - y|_1), "linear" <x, y>, "polynomial" (gamma <x, y> +
    coef0)^degree, "energy" (|x| + |y| - |x - y|) / 2; in `dtype`, the sums
    taken feature by feature (memory of one value per pair)."""
    x, y = np.asarray(x, dtype=dtype), np.asarray(y, dtype=dtype)
    acc = np.zeros(np.broadcast_shapes(x.shape[:-1], y.shape[:-1]), dtype=dtype)
    if kernel == "energy":
        xx, yy, dd = np.zeros_like(acc), np.zeros_like(acc), np.zeros_like(acc)
        with np.errstate(over="ignore", under="ignore"):
            for a, b in zip(np.moveaxis(x, -1, 0), np.moveaxis(y, -1, 0)):
                xx, yy, dd = xx + a * a, yy + b * b, dd + (a - b) ** 2
        return (np.sqrt(xx) + np.sqrt(yy) - np.sqrt(dd)) / 2
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for a, b in zip(np.moveaxis(x, -1, 0), np.moveaxis(y, -1, 0)):
            if kernel == "rbf":
                acc += (a - b) ** 2
            elif kernel == "laplacian":
                acc += np.abs(a - b)
            else:
                acc += a * b
        if kernel in ("rbf", "laplacian"):
            return np.exp(-dtype(gamma) * acc)
        if kernel == "linear":
            return acc
        return (dtype(gamma) * acc + dtype(coef0)) ** int(degree)


def point_kernel(A, B, kernel, gamma, degree=2, coef0=1.0, dtype=np.float64):
    """The matrix k(a_p, b_q) of the points (rows) of `A` and `B`, in
    `dtype` (`kernel_values` of every pair)."""
    A, B = np.asarray(A), np.asarray(B)
    return kernel_values(A[:, None, :], B[None, :, :], kernel, gamma, degree,
                         coef0, dtype)


def median_gamma(points, kernel="rbf", sample=1000, seed=0, dtype=np.float64):
    """The median heuristic: 1 / the median squared Euclidean ("rbf") or L1
    ("laplacian") distance between the pairs of distinct points (indices) of
    a sample (`sample` points drawn with `seed`, kept in order), in `dtype`;
    the median of the non-zero distances when it is 0, and 1 with fewer than
    2 distinct points (the package's fallback)."""
    P = np.asarray(points, dtype=dtype)
    n = len(P)
    if n < 2:
        return dtype(1)
    if sample is not None and n > sample:
        P = P[np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))]
    i, j = np.triu_indices(len(P), 1)
    diff = P[i] - P[j]
    dist = (diff**2).sum(-1) if kernel == "rbf" else np.abs(diff).sum(-1)
    med = np.median(dist)
    if not med > 0:
        dist = dist[dist > 0]
        if dist.size == 0:
            return dtype(1)
        med = np.median(dist)
    return 1 / med


# -------------------------------------------------------------- set kernels


def sum_match(X, Y, kernel, gamma, degree=2, coef0=1.0, *, normalize=True,
              dtype=np.float64):
    """The sum-match kernel of the lists of sets `X` and `Y`: the sum of
    k(a, b) over the points a of a set of X and b of a set of Y, divided by
    the product of their sizes (`normalize`, the mean map kernel); `dtype`."""
    K = np.empty((len(X), len(Y)), dtype=dtype)
    for i, A in enumerate(X):
        for j, B in enumerate(Y):
            s = point_kernel(A, B, kernel, gamma, degree, coef0, dtype).sum()
            K[i, j] = s / (len(A) * len(B)) if normalize else s
    return K


def self_term(A, kernel, gamma, degree=2, coef0=1.0, *, unbiased=False,
              dtype=np.float64):
    """The mean of k(a_p, a_q) over the pairs of points of the set `A`, p !=
    q if `unbiased` (the U-statistic's), in `dtype`."""
    k = point_kernel(A, A, kernel, gamma, degree, coef0, dtype)
    n = len(A)
    if unbiased:
        return (k.sum() - np.trace(k)) / (n * (n - 1))
    return k.sum() / (n * n)


def mmd2(X, Y, kernel, gamma, degree=2, coef0=1.0, *, unbiased=False,
         dtype=np.float64):
    """MMD^2 between each set of the list `X` and each of `Y`: the two self
    terms minus twice the mean map kernel, biased (V-statistic) or
    `unbiased` (U-statistic, Gretton et al. 2012, eq. 3), in `dtype`."""
    kw = {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0,
          "dtype": dtype}
    kx = np.array([self_term(A, unbiased=unbiased, **kw) for A in X], dtype=dtype)
    ky = np.array([self_term(B, unbiased=unbiased, **kw) for B in Y], dtype=dtype)
    return kx[:, None] + ky[None, :] - 2 * sum_match(X, Y, **kw)


def mmd2_samples(A, B, kernel, gamma, degree=2, coef0=1.0, *, unbiased=False,
                 dtype=np.float64):
    """MMD^2 between the samples (point arrays) `A` and `B`, as `mmd2`."""
    return mmd2([A], [B], kernel, gamma, degree, coef0, unbiased=unbiased,
                dtype=dtype)[0, 0]


# ---------------------------------------------------------------- histograms


def additive_terms(kind, x, y, dtype=np.float64):
    """The one-dimensional kernel of the values `x` and `y` (broadcast), in
    `dtype`, 0/0 := 0 and 0 log 0 := 0: "chi2" 2 x y / (x + y) (as 2 x (y /
    (x + y)), no overflow or underflow of x y), "intersection" min(x, y),
    "hellinger" sqrt(x) sqrt(y), "js" x/2 log2(1 + y/x) + y/2 log2(1 + x/y)
    (by log1p: (x + y) / x rounds to 1 for y << x, which would lose the term
    x/2 log2(1 + y/x) ~ y / (2 log 2) of the large value x)."""
    x, y = np.asarray(x, dtype=dtype), np.asarray(y, dtype=dtype)
    with np.errstate(all="ignore"):
        if kind == "chi2":
            s = x + y
            return np.where(s > 0, 2 * x * (y / np.where(s > 0, s, 1)), 0)
        if kind == "intersection":
            return np.minimum(x, y)
        if kind == "hellinger":
            return np.sqrt(x) * np.sqrt(y)
        if kind == "js":
            tx = np.where(x > 0, x / 2 * np.log1p(y / np.where(x > 0, x, 1)), 0)
            ty = np.where(y > 0, y / 2 * np.log1p(x / np.where(y > 0, y, 1)), 0)
            return (tx + ty) / np.log(dtype(2))
    raise KeyError(kind)


def additive_kernel(kind, X, Y, dtype=np.float64):
    """The additive kernel of the rows of `X` and `Y`: `additive_terms`
    summed over the features, for all pairs of rows, in `dtype`."""
    X, Y = np.asarray(X, dtype=dtype), np.asarray(Y, dtype=dtype)
    return additive_terms(kind, X[:, None, :], Y[None, :, :], dtype).sum(-1)


# ---------------------------------------------------------------- Gaussians


def full_covariances(covs, d):
    """Full (n, d, d) covariances, float64, of full, diagonal (n, d) or
    isotropic (n,) ones."""
    c = np.asarray(covs, dtype=np.float64)
    if c.ndim == 3:
        return c
    if c.ndim == 2:
        return np.array([np.diag(v) for v in c])
    return np.array([v * np.eye(d) for v in c])


def gaussian_expected(means, covs, means2=None, covs2=None, *, kernel="rbf",
                      gamma=None, degree=2, coef0=1.0):
    """E k(x, y) for x ~ N(m_i, S_i), y ~ N(m'_j, S'_j), pair by pair, in
    float64 (slogdet and solve for "rbf"; the moments of x.y for "linear"
    and "polynomial" of degree 2 or 3). gamma=None: the median heuristic of
    the second means (in long double) for "rbf", 1 / d otherwise."""
    m1 = np.asarray(means, dtype=np.float64)
    d = m1.shape[1]
    S1 = full_covariances(covs, d)
    if means2 is None:
        m2, S2 = m1, S1
    else:
        m2, S2 = np.asarray(means2, dtype=np.float64), full_covariances(covs2, d)
    K = np.empty((len(m1), len(m2)))
    if gamma is None:
        gamma = median_gamma(m2, dtype=np.longdouble) if kernel == "rbf" else 1 / d
    g, c = float(gamma), float(coef0)
    for i in range(len(m1)):
        for j in range(len(m2)):
            a = float(m1[i] @ m2[j])
            if kernel == "linear":
                K[i, j] = a
            elif kernel == "rbf":
                M = np.eye(d) + 2 * g * (S1[i] + S2[j])
                delta = m1[i] - m2[j]
                _, logdet = np.linalg.slogdet(M)
                K[i, j] = math.exp(
                    -0.5 * logdet - g * delta @ np.linalg.solve(M, delta)
                )
            else:
                A1 = S1[i] + np.outer(m1[i], m1[i])
                A2 = S2[j] + np.outer(m2[j], m2[j])
                eu2 = float(np.trace(A1 @ A2))
                if degree == 2:
                    K[i, j] = g * g * eu2 + 2 * g * c * a + c * c
                else:
                    # E u^3 with u = x.y: conditionally on y, u ~ N(m.y, y'S y).
                    v = m1[i] @ S2[j] @ m1[i]
                    w = m2[j] @ S1[i] @ m2[j]
                    eu3 = (
                        a**3
                        + 3 * a * v
                        + 3 * a * w
                        + 3 * a * np.trace(S1[i] @ S2[j])
                        + 6 * m1[i] @ S2[j] @ S1[i] @ m2[j]
                    )
                    K[i, j] = (
                        g**3 * eu3 + 3 * g * g * c * eu2 + 3 * g * c * c * a + c**3
                    )
    return K


# ---------------------------------------------------------------- regression


def ridge(Z, y, alpha):
    """Ridge regression of `y` on the rows of `Z` with an unpenalised
    intercept, closed form, float64: (coefficients, intercept)."""
    Z, y = np.asarray(Z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    z_mean, y_mean = Z.mean(axis=0), y.mean(axis=0)
    Zc = Z - z_mean
    coef = np.linalg.solve(Zc.T @ Zc + alpha * np.eye(Z.shape[1]),
                           Zc.T @ (y - y_mean))
    return coef, y_mean - z_mean @ coef
