"""Peers of the exact kernels that only the benchmarks use: plain NumPy and
SciPy implementations, what a user would write without kernelmaps. (The
tests have their own, independent references.)"""

import inspect

import numpy as np
from scipy.spatial.distance import cdist
from scipy.special import gammaln

__all__ = [
    "blocked_additive_chi2_kernel",
    "blocked_sum_match_kernel",
    "eigh_project_psd",
    "kdtree_renyi_divergence",
    "naive_renyi_divergence",
    "numpy_mmd_permutation_test",
    "numpy_precomputed_permutation_test",
    "pairwise_sum_match_kernel",
]


def pairwise_sum_match_kernel(sets, gamma):
    """Mean map kernel, one `cdist` per pair of sets (symmetric: each
    unordered pair once)."""
    n = len(sets)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            K[i, j] = K[j, i] = np.exp(
                -gamma * cdist(sets[i], sets[j], "sqeuclidean")
            ).mean()
    return K


def blocked_sum_match_kernel(sets, gamma, Y=None, *, block_points=2048,
                             products_only=False):
    """Mean map kernel, vectorised: sets stacked into blocks of about
    `block_points` points, one matrix product per pair of blocks (unordered
    when `Y` is None) for the squared distances, then exp and sums per pair
    of sets. With `products_only`, only the matrix products of those
    blocks (the GEMM-only reference of the set-kernel benchmarks; NumPy
    computes a block against itself with SYRK, half the products)."""
    symmetric = Y is None
    sides = []
    for side in (sets,) if symmetric else (sets, Y):
        sizes = np.array([len(s) for s in side])
        starts = np.concatenate([[0], np.cumsum(sizes)])
        points = np.concatenate(side)
        # Blocks of whole sets.
        cuts = [0]
        for i in range(1, len(side)):
            if starts[i] - starts[cuts[-1]] >= block_points:
                cuts.append(i)
        cuts.append(len(side))
        sides.append((sizes, starts, points, np.einsum("ij,ij->i", points, points),
                      cuts))
    (xsizes, xstarts, xpoints, xnorms, xcuts) = sides[0]
    (ysizes, ystarts, ypoints, ynorms, ycuts) = sides[-1]
    K = np.empty((len(xsizes), len(ysizes)))
    for a in range(len(xcuts) - 1):
        ia = slice(xcuts[a], xcuts[a + 1])
        pa = slice(xstarts[xcuts[a]], xstarts[xcuts[a + 1]])
        for b in range(a if symmetric else 0, len(ycuts) - 1):
            ib = slice(ycuts[b], ycuts[b + 1])
            pb = slice(ystarts[ycuts[b]], ystarts[ycuts[b + 1]])
            D = xpoints[pa] @ ypoints[pb].T
            if products_only:
                continue
            D *= -2
            D += xnorms[pa, None]
            D += ynorms[None, pb]
            np.maximum(D, 0, out=D)
            D *= -gamma
            np.exp(D, out=D)
            S = np.add.reduceat(D, ystarts[ib] - ystarts[ycuts[b]], axis=1)
            S = np.add.reduceat(S, xstarts[ia] - xstarts[xcuts[a]], axis=0)
            K[ia, ib] = S
            if symmetric:
                K[ib, ia] = S.T
    return K / np.multiply.outer(xsizes, ysizes)


def kdtree_renyi_divergence(sets, *, alpha=0.99, k=5, workers=-1):
    """kNN Renyi divergences (``Y=None``, default floor, clamped) with the
    neighbours found by `scipy.spatial.cKDTree`: one tree per set, queried
    with all points at once, the rest in NumPy. This is the kd-tree path of
    `kernelmaps.renyi_divergence`, forced whatever the dimension."""
    from kernelmaps._parallel import resolve_workers
    from kernelmaps._validation import check_sets
    from kernelmaps.sets._divergence import _renyi

    D = _renyi(check_sets(sets), None, np.array([alpha]), k, None, "kdtree",
               resolve_workers(workers), False)
    if inspect.isgenerator(D):  # (issue 51: a generator of steps)
        from kernelmaps._engine.schedule import run_steps

        D = run_steps(D)
    D = D[0]
    return np.maximum(D, 0.0)


def naive_renyi_divergence(sets, *, alpha=0.99, k=5):
    """The kNN Renyi divergences the plain NumPy way: every ordered pair of
    sets on its own, squared distances from one matrix product per pair
    (``|x|^2 + |y|^2 - 2 x y^T``) and the k-th smallest by
    ``numpy.partition`` (twice the distances of a symmetric engine)."""
    logB = (2 * gammaln(k) - gammaln(k - alpha + 1) - gammaln(k + alpha - 1))
    norms = [np.einsum("ij,ij->i", s, s) for s in sets]
    D = np.zeros((len(sets), len(sets)))
    for i, a in enumerate(sets):
        d2 = norms[i][:, None] + norms[i][None, :] - 2 * a @ a.T
        np.fill_diagonal(d2, np.inf)
        rho = np.sqrt(np.maximum(np.partition(d2, k - 1, axis=1)[:, k - 1], 0))
        for j, b in enumerate(sets):
            if i == j:
                continue
            d2 = norms[i][:, None] + norms[j][None, :] - 2 * a @ b.T
            nu = np.sqrt(np.maximum(np.partition(d2, k - 1, axis=1)[:, k - 1], 0))
            mean = np.mean((rho / nu) ** (a.shape[1] * (1 - alpha)))
            D[i, j] = (logB + (1 - alpha) * np.log((len(a) - 1) / len(b))
                       + np.log(mean)) / (alpha - 1)
    return D


def eigh_project_psd(K, method="clip"):
    """PSD projection from a full `numpy.linalg.eigh` of the symmetrised
    matrix (every eigenvector computed)."""
    K = (K + K.T) / 2
    if method == "square":
        return K @ K
    w, V = np.linalg.eigh(K)
    if method == "shift":
        K[np.diag_indices_from(K)] += max(-w[0], 0.0)
        return K
    w = np.maximum(w, 0.0) if method == "clip" else np.abs(w)
    return (V * w) @ V.T


def blocked_additive_chi2_kernel(X, Y=None, *, block=32):
    """Additive chi2 kernel, ``sum 2xy/(x+y)``, by NumPy broadcasting over
    blocks of `block` rows of X (dense input)."""
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    K = np.empty((len(X), len(Y)))
    for start in range(0, len(X), block):
        x = X[start : start + block, None, :]
        s = x + Y[None, :, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(s > 0, 2 * x * Y[None, :, :] / s, 0.0)
        K[start : start + block] = terms.sum(axis=-1)
    return K


def numpy_mmd_permutation_test(X, Y, gamma, n_resamples, rng):
    """Permutation test of the unbiased MMD^2 (rbf kernel) as a user would
    write it: the pooled kernel matrix once (`cdist`, then exp), then
    `numpy_precomputed_permutation_test`.

    Returns ``(statistic, pvalue)``, the p-value being
    ``(1 + #{null >= statistic}) / (1 + n_resamples)``; `rng` is anything
    `numpy.random.default_rng` takes."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    Z = np.concatenate([X, Y])
    K = np.exp(-gamma * cdist(Z, Z, "sqeuclidean"))
    return numpy_precomputed_permutation_test(K, len(X), n_resamples, rng)


def numpy_precomputed_permutation_test(K, n, n_resamples, rng):
    """Permutation test of the unbiased MMD^2 of the pooled kernel matrix K
    (its first n rows the first sample) as a user would write it: a Python
    loop over permutations, each statistic from sums of the blocks of the
    matrix picked by fancy indexing. Returns ``(statistic, pvalue)``."""
    K = np.array(K, dtype=np.float64)
    np.fill_diagonal(K, 0.0)  # the U-statistic leaves out the pairs (i, i)
    m = len(K) - n

    def mmd2(ix, iy):
        return (
            K[np.ix_(ix, ix)].sum() / (n * (n - 1))
            + K[np.ix_(iy, iy)].sum() / (m * (m - 1))
            - 2 * K[np.ix_(ix, iy)].sum() / (n * m)
        )

    generator = np.random.default_rng(rng)
    statistic = mmd2(np.arange(n), np.arange(n, n + m))
    null = np.empty(n_resamples)
    for b in range(n_resamples):
        order = generator.permutation(n + m)
        null[b] = mmd2(order[:n], order[n:])
    pvalue = (1 + np.count_nonzero(null >= statistic)) / (1 + n_resamples)
    return statistic, pvalue
