"""Expected kernels between Gaussians with full or diagonal covariances: the
driver of ``_expected.pyx``. Inputs are validated float64 means (n, d) and
covariance matrices (n, d, d) or variances (n, d)."""

import numpy as np

from . import _expected as _impl
from .schedule import run_chunked, threads_for

__all__ = ["rbf_diagonal", "rbf_full"]


def rbf_full(m1, F1, m2, F2, gamma, symmetric, n_threads, progress):
    """The expected rbf kernel between the Gaussians (m1[i], F1[i]) and
    (m2[j], F2[j]) with full covariances, one factorisation per pair (see
    _expected.pyx): the halves of I + 2 gamma (S_i + S'_j), I + 2 gamma S_i
    and 2 gamma S'_j, are packed once, each with its mean."""
    n, m = len(m1), len(m2)
    P = _impl.pack(np.ascontiguousarray(F1), np.ascontiguousarray(m1), 2 * gamma,
                   1.0, 1.0, 1)
    Q = _impl.pack(np.ascontiguousarray(F2), np.ascontiguousarray(m2), 2 * gamma,
                   0.0, -1.0, _impl.LANES)
    if not (np.isfinite(P).all() and np.isfinite(Q).all()):
        raise ValueError(
            f"2 gamma times the covariances overflows float64 for gamma={gamma:g}"
        )
    K = np.empty((n, m))
    d = F1.shape[1]
    pairs = m - np.arange(n) if symmetric else np.full(n, m)
    cost = pairs * float((d + 1) ** 3 // 3 + d * d + 8)
    n_threads = threads_for(n_threads, cost.sum(), n)
    scratch = np.empty((n_threads, (2 * P.shape[1] + 1) * _impl.LANES))
    bad = np.zeros(n, dtype=np.int64)  # per row: pairs not positive definite
    run_chunked(_impl.rbf_full, (P, Q, m, gamma, symmetric, K, scratch, bad), cost,
                n_threads=n_threads, progress=progress, desc="Gaussian pairs",
                unit_cost=pairs)
    if bad.any():
        i, j = np.argwhere(np.triu(K) < 0 if symmetric else K < 0)[0]
        raise ValueError(
            f"I + 2 gamma (S_i + S'_j) is not numerically positive definite for "
            f"the pair ({i}, {j}) ({bad.sum()} pair(s) in all): covariances too "
            f"close to indefinite for gamma={gamma:g}; make them safely positive "
            f"semi-definite (e.g. add a small multiple of the identity) or use "
            f"a smaller gamma"
        )
    if symmetric:
        _mirror(K, n_threads)
    return K


def rbf_diagonal(m1, v1, m2, v2, gamma, symmetric, n_threads, progress):
    """The expected rbf kernel between the Gaussians (m1[i], diag v1[i]) and
    (m2[j], diag v2[j]), a product over the coordinates (see
    _expected.pyx); the second collection is interleaved by batches of
    columns. Values beyond the float64 range are taken in logs, never an
    error."""
    n, m = len(m1), len(m2)
    lanes = _impl.DIAGONAL_LANES
    nb = -(-m // lanes)

    def interleave(a):
        padded = np.zeros((nb * lanes, a.shape[1]))
        padded[:m] = a
        return np.ascontiguousarray(padded.reshape(nb, lanes, -1).transpose(0, 2, 1))

    M, V = interleave(m2), interleave(v2)
    m1, v1 = np.ascontiguousarray(m1), np.ascontiguousarray(v1)
    K = np.empty((n, m))
    pairs = m - np.arange(n) if symmetric else np.full(n, m)
    # About four element operations per coordinate (a division among them),
    # and a logarithm and an exponential per pair.
    cost = pairs * float(4 * m1.shape[1] + 40)
    n_threads = threads_for(n_threads, cost.sum(), n)
    run_chunked(_impl.rbf_diagonal, (m1, v1, M, V, m, gamma, symmetric, K), cost,
                n_threads=n_threads, progress=progress, desc="Gaussian pairs",
                unit_cost=pairs)
    if symmetric:
        _mirror(K, n_threads)
    return K


def _mirror(K, n_threads):
    """The upper triangle of the square K copied to its lower triangle, in
    chunks of tile rows: one call on a large K takes most of a second,
    which Ctrl-C would wait for."""
    tile = _impl.MIRROR_ROWS
    n_tiles = -(-K.shape[0] // tile)
    cost = (np.arange(n_tiles) + 1.0) * tile * tile
    run_chunked(_impl.mirror, (K,), cost,
                n_threads=threads_for(n_threads, cost.sum(), n_tiles))
