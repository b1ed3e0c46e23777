"""The constrained kernel SVD (CKSVD) of Bo and Sminchisescu: the basis Z of
the efficient match kernel features, learned by Adam on minibatches with a
monitored, never-increasing objective (section 3.1 of "Efficient Match
Kernels between Sets of Features for Visual Recognition", NIPS 2009).

`fit_basis` runs the whole fit on validated float64 points; `projection`
gives G with ``G^T G = K_ZZ^+``; `objective_and_gradient` is exposed for the
tests' finite-difference check.
"""

import math
import warnings

import numpy as np
import scipy.linalg
from scipy.cluster.vq import kmeans2
from scipy.spatial.distance import cdist

from .._engine.lapack import one_blas_thread
from .._engine.layout import max_abs, power_of_two_exponent
from .._engine.progress import progress_bar

__all__ = ["fit_basis", "kernel_matrix", "objective_and_gradient", "projection"]

# Ridge added to the diagonal of K_ZZ (whose diagonal is 1 for both kernels)
# in the objective and its gradient during the fit.
_RIDGE = 1e-8
# Eigenvalues of K_ZZ below this fraction of the largest are dropped from G.
_EIG_TOL = 1e-8
# Size of the monitor sample on which the objective is evaluated.
_MONITOR = 4096
# Points whose largest coordinate is beyond 2**+-_RANGE are scaled by a power
# of two (exact) to about 1, with gamma scaled to match, before the kernel
# matrices (whose |x|^2 + |z|^2 - 2 <x, z> would overflow or underflow) and
# the fit; at ordinary scales nothing changes.
_RANGE = 400
# After that scaling, a gamma beyond 2**+-_FLAT makes the kernel numerically
# constant between distinct points (0 or 1): the objective is flat and the
# fit keeps its initial basis.
_FLAT = 600
# Rows of the data per block of kernel values of the objective.
CKSVD_BLOCK_ROWS = 4096


def unit_scale(X, Z, kernel, gamma):
    """``(X, Z, gamma, exponent)``: X and Z (float64) divided by
    ``2**exponent``, exactly, and gamma multiplied to match (``2**(2
    exponent)`` for "rbf", ``2**exponent`` for "laplacian"), so that the
    kernel values are the same; exponent is 0 (nothing changes) unless the
    largest coordinate is beyond ``2**+-_RANGE``. The scaled gamma is capped
    where it would make exp(-gamma |x - z|^2) overflow its exponent: any
    capped value gives 0 for every pair of points the data can hold apart."""
    exponent = -power_of_two_exponent(max_abs(X, Z))
    if -_RANGE <= exponent <= _RANGE:
        return X, Z, gamma, 0
    X = np.ldexp(X, -exponent)
    Z = None if Z is None else np.ldexp(Z, -exponent)
    power = 2 if kernel == "rbf" else 1
    try:
        gamma = math.ldexp(gamma, power * exponent)
    except OverflowError:
        gamma = math.inf
    # |x_k| < 1: |x - z|^2 < 4 d and |x - z|_1 < 2 d
    cap = float(np.finfo(np.float64).max) / (8 * X.shape[1])
    return X, Z, min(gamma, cap), exponent


def fit_basis(X, n_basis, kernel, gamma, n_iter, batch_size, learning_rate, init,
              check_every, rng, progress):
    """The learned basis (n_basis, d) of the rows of X (float64) and the
    objective at each check; the arguments are those of EMKFeatures,
    validated (`rng` a Generator, `batch_size` None or an int).

    Points beyond ``2**+-_RANGE`` are fitted at a unit scale (`unit_scale`)
    and the basis scaled back; a kernel numerically constant between
    distinct points there (gamma beyond ``2**+-_FLAT``) keeps the initial
    basis."""
    X, _, gamma, exponent = unit_scale(X, None, kernel, gamma)
    flat = not 2.0**-_FLAT <= gamma <= 2.0**_FLAT
    basis, objective = _fit_basis(X, n_basis, kernel, gamma,
                                  0 if flat and exponent else n_iter, batch_size,
                                  learning_rate, init, check_every, rng, progress)
    return np.ldexp(basis, exponent) if exponent else basis, objective


def _fit_basis(X, n_basis, kernel, gamma, n_iter, batch_size, learning_rate, init,
               check_every, rng, progress):
    n = X.shape[0]
    order = rng.permutation(n)
    if n > 2 * _MONITOR and n - _MONITOR >= 4 * n_basis:
        monitor, train = X[order[:_MONITOR]], order[_MONITOR:]
    else:
        monitor, train = X, order
    if init == "kmeans":
        basis = _kmeans_init(X[train], n_basis, rng)
    else:
        basis = _sample_init(X, train, n_basis)
        if basis is None:
            basis = _sample_init(X, order, n_basis)
        if basis is None:
            raise ValueError(
                f"n_basis={n_basis} exceeds the number of distinct points"
            )
    if n_iter == 0:
        return basis, np.array([_objective(monitor, basis, kernel, gamma)])

    if batch_size is None:
        batch_size = max(n_basis, 256)
    batch_size = min(batch_size, train.shape[0])
    scale = _length_scale(X, kernel, gamma)
    with one_blas_thread():  # small matrices (see lapack)
        return _adam(X, train, monitor, basis, kernel, gamma, n_iter,
                     batch_size, learning_rate * scale, check_every, rng,
                     progress)


def kernel_matrix(X, Z, kernel, gamma):
    """k(x_i, z_j) for float64 rows of X and Z, of any magnitude
    (`unit_scale`) and offset: both kernels are translation-invariant, and
    the points are centred on the mean of Z first, so that |x|^2 + |z|^2 -
    2 <x, z> does not cancel catastrophically for points far from the origin
    (e.g. offset by 1e8)."""
    X, Z, gamma, _ = unit_scale(X, Z, kernel, gamma)
    centre = Z.mean(axis=0) if Z.shape[0] else 0.0
    X, Z = X - centre, Z - centre
    # gamma * |x - z| beyond float64 (a huge gamma): exp(-inf) = 0
    with np.errstate(over="ignore"):
        if kernel == "rbf":
            sq = np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", Z, Z)
            sq -= 2 * (X @ Z.T)
            np.maximum(sq, 0, out=sq)
            sq *= -gamma
        else:
            sq = cdist(X, Z, "cityblock")
            sq *= -gamma
    return np.exp(sq, out=sq)


def projection(basis, kernel, gamma):
    """G with G^T G the pseudo-inverse of K_ZZ, the kernel matrix of the
    basis, its tiny eigenvalues dropped."""
    K = kernel_matrix(basis, basis, kernel, gamma)
    with one_blas_thread():
        w, U = np.linalg.eigh(K)
    keep = w > _EIG_TOL * max(w[-1], 0.0)
    scale = np.zeros_like(w)
    scale[keep] = 1.0 / np.sqrt(w[keep])
    return scale[:, None] * U.T


def _cholesky(K):
    """Cholesky factor of K + ridge (more ridge if needed)."""
    ridge = _RIDGE
    while True:
        try:
            return scipy.linalg.cho_factor(
                K + ridge * np.eye(K.shape[0]), lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            ridge *= 10
            if ridge > 1e-2:
                raise


def _objective(X, basis, kernel, gamma, factor=None):
    """Mean CKSVD residual of the rows of X (k(x, x) = 1 for both kernels)."""
    if factor is None:
        factor = _cholesky(kernel_matrix(basis, basis, kernel, gamma))
    total = 0.0
    for start in range(0, X.shape[0], CKSVD_BLOCK_ROWS):
        A = kernel_matrix(X[start:start + CKSVD_BLOCK_ROWS], basis, kernel, gamma)
        W = scipy.linalg.solve_triangular(factor[0], A.T, lower=True,
                                          check_finite=False)
        total += A.shape[0] - np.einsum("ij,ij->", W, W)
    return total / X.shape[0]


def objective_and_gradient(X, basis, kernel, gamma):
    """Mean CKSVD residual of the rows of X and its gradient w.r.t. basis
    (non-finite where a step too long sent the basis beyond float64: the
    caller checks)."""
    with np.errstate(over="ignore", invalid="ignore"):
        K = kernel_matrix(basis, basis, kernel, gamma)
        A = kernel_matrix(X, basis, kernel, gamma)
        factor = _cholesky(K)
        Q = scipy.linalg.cho_solve(factor, A.T, check_finite=False).T
        b = X.shape[0]
        objective = 1.0 - np.einsum("ij,ij->", A, Q) / b
        M = 2 * Q * A
        N = (Q.T @ Q) * K
        if kernel == "rbf":
            grad = 2 * gamma * (M.T @ X - M.sum(0)[:, None] * basis)
            grad -= 4 * gamma * (N @ basis - N.sum(1)[:, None] * basis)
        else:
            # sum_i M_ij sign(x_i - z_j), one (b, d) slab per basis vector
            signs = np.sign(X[None, :, :] - basis[:, None, :])
            grad = gamma * (M.T[:, None, :] @ signs)[:, 0]
            signs = np.sign(basis[None, :, :] - basis[:, None, :])
            grad -= 2 * gamma * (N[:, None, :] @ signs)[:, 0]
        return objective, -grad / b


def _length_scale(X, kernel, gamma):
    """Per-coordinate length scale of the steps."""
    d = X.shape[1]
    data = math.sqrt(float(np.mean(np.var(X, axis=0))))
    width = (1.0 / math.sqrt(2 * gamma * d) if kernel == "rbf"
             else 1.0 / (gamma * d))
    return min(data, width) if data > 0 else width


def _sample_init(X, order, n_basis):
    """The first n_basis distinct rows of X in the random `order` (None if
    there are fewer)."""
    n = X.shape[0]
    pool = min(n, 2 * n_basis)
    while True:
        cand = X[order[:pool]]
        _, first = np.unique(cand, axis=0, return_index=True)
        if first.shape[0] >= n_basis or pool == n:
            break
        pool = min(n, 4 * pool)
    if first.shape[0] < n_basis:
        return None
    return cand[np.sort(first)[:n_basis]].copy()


def _kmeans_init(X, n_basis, rng):
    """k-means++ / Lloyd centres of a random sample of X."""
    n = X.shape[0]
    size = min(n, max(50 * n_basis, 20000))
    sample = X[rng.choice(n, size, replace=False)] if size < n else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty clusters keep their centre
        centres, _ = kmeans2(sample, n_basis, minit="++", rng=rng)
    centres = np.asarray(centres, dtype=np.float64)
    if np.unique(centres, axis=0).shape[0] < n_basis:
        raise ValueError(
            f"k-means found fewer than n_basis={n_basis} distinct centres in "
            "the points; use init='sample' or a smaller n_basis"
        )
    return centres


def _adam(X, train, monitor, basis, kernel, gamma, n_iter, batch_size, step,
          check_every, rng, progress):
    """Adam on minibatches with a monitored, never-increasing objective."""
    beta1, beta2, eps = 0.9, 0.999, 1e-12
    best = basis.copy()
    objective = [_objective(monitor, best, kernel, gamma)]
    m = np.zeros_like(basis)
    v = np.zeros_like(basis)
    t_adam = 0
    halvings = 0
    with progress_bar(progress, n_iter, "EMK fit") as bar:
        for it in range(n_iter):
            batch = X[train[rng.integers(0, train.shape[0], batch_size)]]
            try:
                _, grad = objective_and_gradient(batch, basis, kernel, gamma)
            except np.linalg.LinAlgError:
                grad = None
            finite = grad is not None and np.isfinite(grad).all()
            if finite:
                t_adam += 1
                with np.errstate(over="ignore", invalid="ignore"):
                    m = beta1 * m + (1 - beta1) * grad
                    v = beta2 * v + (1 - beta2) * grad * grad
                    m_hat = m / (1 - beta1 ** t_adam)
                    v_hat = v / (1 - beta2 ** t_adam)
                    lr = step * 0.5 ** halvings / math.sqrt(1 + 10 * it / n_iter)
                    basis = basis - lr * m_hat / (np.sqrt(v_hat) + eps)
            if not (finite and np.isfinite(basis).all()):
                # a step too long broke the basis kernel matrix, or sent the
                # basis beyond float64: as for an increase
                basis, m, v, t_adam, halvings = _restart(best, halvings)
            bar.update()
            if (it + 1) % check_every == 0 or it + 1 == n_iter:
                try:
                    value = _objective(monitor, basis, kernel, gamma)
                except np.linalg.LinAlgError:
                    value = math.inf
                if value <= objective[-1]:
                    best = basis.copy()
                    objective.append(value)
                else:
                    basis, m, v, t_adam, halvings = _restart(best, halvings)
                    objective.append(objective[-1])
    return best, np.array(objective)


def _restart(best, halvings):
    """Adam's state back at the best basis with half the step: the basis,
    its moments, their step count and the halvings."""
    return best.copy(), np.zeros_like(best), np.zeros_like(best), 0, halvings + 1
