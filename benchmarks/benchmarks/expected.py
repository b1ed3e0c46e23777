"""Benchmarks for the expected kernels between Gaussians and the level-2
kernels on mean embeddings.

What is measured
----------------
`GaussianExpectedKernel` times ``kernelmaps.gaussian_expected_kernel(means,
covs, ...)`` (no second collection: the symmetric ``(n, n)`` Gram matrix)
on ``n`` Gaussians in ``d`` dimensions, for "2000x16" and "1000x16", with
1 and 2 worker threads, in three cases:

* ``rbf_full``: ``kernel="rbf"``, full covariances ``(n, d, d)``: one
  compiled factorisation of ``I + 2 gamma (S_i + S_j)`` per pair;
* ``rbf_diagonal``: ``kernel="rbf"``, diagonal covariances ``(n, d)``:
  compiled, a product over the coordinates per pair;
* ``polynomial3``: ``kernel="polynomial", degree=3``, full covariances
  (NumPy matrix products).

Beside it, ``time_numpy_cholesky`` runs `numpy_rbf_full`, the NumPy way (and
that of kernelmaps before the compiled engine): blocks of rows, the
matrices ``I + 2 gamma (S_i + S_j)`` of a block stacked, then batched
`numpy.linalg.cholesky` and `numpy.linalg.solve`, for every ordered pair.
At about 10 microseconds a pair it runs at "1000x16" only (some 10 s; about
40 s at "2000x16"), ``rbf_full``, and once (it takes no ``workers``: it is
skipped for ``workers=2``). Beside ``rbf_diagonal``, ``time_numpy_diagonal``
runs `numpy_rbf_diagonal`, the NumPy way of kernelmaps before the compiled
diagonal kernel (broadcast over blocks of rows, one logarithm per pair and
coordinate), at both sizes, once (skipped for ``workers=2``). The
``peakmem_*`` methods give the peak resident memory of the process, input
data included.

`Level2Kernel` times ``level2_kernel(K, diag(K), kind=...)`` on a 4000 x
4000 level-1 Gram matrix (inner products of 4000 embeddings of dimension
50, see `level1_gram`), each kind, beside the NumPy expression of the same
kernel (no ``workers``: element-wise work on the matrix).

The data (`gaussians`): means standard normal, covariances ``A A^T / d``
with ``A`` standard normal ``(d, d)`` (diagonals: their diagonals), from
``numpy.random.default_rng(0)``; ``gamma = 1 / d``.

Target
------
On the 2-core reference machine, ``rbf_full`` at "2000x16" should cost at
most 1 microsecond per pair and thread (2 001 000 pairs: 2 s with
``workers=1``, 1 s with ``workers=2``), and at "1000x16" with ``workers=1``
at most 0.05x the time of ``time_numpy_cholesky``; ``rbf_diagonal`` at
"2000x16" with ``workers=1`` at most 0.2x the time of
``time_numpy_diagonal`` (``TARGET_DIAGONAL``).

Running
-------
From the ``benchmarks`` directory (that of asv.conf.json)::

    asv run --python=same --bench expected \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.expected  # per-pair times, ratios and targets

(about a minute on 2 cores, mostly the NumPy reference).
"""

import numpy as np
from asv_runner.benchmarks.mark import skip_for_params

from kernelmaps import gaussian_expected_kernel, level2_kernel

from .common import RunOnce, stored_times

SIZES = ("2000x16", "1000x16")
CASES = ("rbf_full", "rbf_diagonal", "polynomial3")
WORKERS = (1, 2)
REFERENCE_SIZE = "1000x16"
MAX_PAIR_SECONDS = 1e-6
TARGET = 0.05
TARGET_DIAGONAL = 0.2

SKIP_REFERENCE = [
    (s, c, w)
    for s in SIZES
    for c in CASES
    for w in WORKERS
    if (s, c, w) != (REFERENCE_SIZE, "rbf_full", 1)
]
SKIP_DIAGONAL = [
    (s, c, w) for s in SIZES for c in CASES for w in WORKERS
    if (c, w) != ("rbf_diagonal", 1)
]

# Bytes of stacked d x d matrices per block of the NumPy reference.
_BLOCK_BYTES = 1 << 26


def gaussians(size, form):
    """Means ``(n, d)`` and covariances (``form`` "full": ``(n, d, d)``,
    "diagonal": ``(n, d)``) from a size string ``"{n}x{d}"``."""
    n, d = (int(v) for v in size.split("x"))
    rng = np.random.default_rng(0)
    means = rng.standard_normal((n, d))
    A = rng.standard_normal((n, d, d))
    covs = A @ A.transpose(0, 2, 1) / d
    if form == "diagonal":
        covs = np.ascontiguousarray(np.diagonal(covs, axis1=1, axis2=2))
    return means, covs


def numpy_rbf_full(means, covs, gamma):
    """The expected RBF kernel Gram matrix of Gaussians with full
    covariances in NumPy: batched Cholesky factorisations of
    ``I + 2 gamma (S_i + S_j)`` over blocks of rows, every ordered pair."""
    n, d = means.shape
    K = np.empty((n, n))
    eye = np.eye(d)
    block = max(1, _BLOCK_BYTES // (8 * n * d * d))
    for start in range(0, n, block):
        rows = slice(start, start + block)
        T = eye + 2 * gamma * (covs[rows, None] + covs[None, :])
        L = np.linalg.cholesky(T)
        dm = means[rows, None, :] - means[None, :, :]
        z = np.linalg.solve(L, dm[..., None])[..., 0]
        logdet = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
        K[rows] = np.exp(-0.5 * logdet - gamma * (z**2).sum(-1))
    return K


def numpy_rbf_diagonal(means, variances, gamma):
    """The expected RBF kernel Gram matrix of Gaussians with diagonal
    covariances in NumPy, as kernelmaps computed it before its compiled
    kernel (within the float64 range): blocks of rows broadcast against
    all the Gaussians, every ordered pair."""
    n, d = means.shape
    K = np.empty((n, n))
    block = max(1, _BLOCK_BYTES // (8 * n * d))
    for start in range(0, n, block):
        rows = slice(start, start + block)
        t = 1 + gamma * (variances[rows, None, :] + variances[None, :, :]) * 2
        dm2 = (means[rows, None, :] - means[None, :, :]) ** 2
        K[rows] = np.exp(-0.5 * np.log(t).sum(-1) - gamma * (dm2 / t).sum(-1))
    return K


class GaussianExpectedKernel(RunOnce):
    """`gaussian_expected_kernel` (symmetric Gram matrix) against the
    batched-Cholesky NumPy reference, each run once."""

    params = (SIZES, CASES, WORKERS)
    param_names = ("size", "case", "workers")

    def setup(self, size, case, workers):
        form = "diagonal" if case == "rbf_diagonal" else "full"
        self.means, self.covs = gaussians(size, form)
        self.gamma = 1.0 / self.means.shape[1]
        kernel, degree = ("polynomial", 3) if case == "polynomial3" else ("rbf", 2)
        self.options = dict(kernel=kernel, degree=degree, gamma=self.gamma,
                            workers=workers)

    def time_kernelmaps(self, size, case, workers):
        gaussian_expected_kernel(self.means, self.covs, **self.options)

    def peakmem_kernelmaps(self, size, case, workers):
        gaussian_expected_kernel(self.means, self.covs, **self.options)

    @skip_for_params(SKIP_REFERENCE)
    def time_numpy_cholesky(self, size, case, workers):
        numpy_rbf_full(self.means, self.covs, self.gamma)

    @skip_for_params(SKIP_REFERENCE)
    def peakmem_numpy_cholesky(self, size, case, workers):
        numpy_rbf_full(self.means, self.covs, self.gamma)

    @skip_for_params(SKIP_DIAGONAL)
    def time_numpy_diagonal(self, size, case, workers):
        numpy_rbf_diagonal(self.means, self.covs, self.gamma)

    @skip_for_params(SKIP_DIAGONAL)
    def peakmem_numpy_diagonal(self, size, case, workers):
        numpy_rbf_diagonal(self.means, self.covs, self.gamma)


def level1_gram(n=4000, t=50):
    """A PSD ``(n, n)`` Gram matrix of mean embeddings (inner products of
    ``n`` non-negative random vectors of dimension `t`) and its diagonal."""
    F = np.random.default_rng(0).random((n, t))
    K = F @ F.T
    return K, np.diag(K).copy()


def numpy_level2_kernel(K, diag, kind, gamma2=1.0, degree=2, coef0=1.0):
    """The level-2 kernels of `level2_kernel` (square case) the NumPy way."""
    if kind == "linear":
        return K.copy()
    if kind == "polynomial":
        return (gamma2 * K + coef0) ** degree
    if kind == "nrbf":
        norms = np.sqrt(diag)
        return np.exp(-gamma2 * (2 - 2 * K / np.outer(norms, norms)))
    D2 = np.maximum(diag[:, None] + diag[None, :] - 2 * K, 0)
    return np.exp(-gamma2 * D2)


class Level2Kernel:
    """`level2_kernel` on a 4000 x 4000 Gram matrix, each kind, beside NumPy."""

    params = (("linear", "polynomial", "rbf", "nrbf"),)
    param_names = ("kind",)

    def setup(self, kind):
        self.K, self.diag = level1_gram()
        self.gamma2 = 1.0 / np.median(self.diag)

    def time_kernelmaps(self, kind):
        level2_kernel(self.K, self.diag, kind=kind, gamma2=self.gamma2)

    def peakmem_kernelmaps(self, kind):
        level2_kernel(self.K, self.diag, kind=kind, gamma2=self.gamma2)

    def time_numpy(self, kind):
        numpy_level2_kernel(self.K, self.diag, kind, self.gamma2)

    def peakmem_numpy(self, kind):
        numpy_level2_kernel(self.K, self.diag, kind, self.gamma2)


def print_ratios(results_dir=".asv/results"):
    """Print the times per pair of ``rbf_full`` and the kernelmaps / NumPy
    time ratios of every stored result (``rbf_full``, ``rbf_diagonal``),
    against the targets."""
    prefix = "expected.GaussianExpectedKernel."
    for label, times in stored_times(results_dir):
        ours = times.get(prefix + "time_kernelmaps", {})
        base = times.get(prefix + "time_numpy_cholesky", {})
        diagonal = times.get(prefix + "time_numpy_diagonal", {})
        if not ours:
            continue
        print(label)
        reference = base.get((REFERENCE_SIZE, "rbf_full", "1"))
        for (size, case, workers), t in sorted(ours.items()):
            line = f"  {size:8} {case:13} workers={workers}  {t:8.3f} s"
            if case == "rbf_full":
                n = int(size.split("x")[0])
                per_pair = t * int(workers) / (n * (n + 1) / 2)
                ok = "met" if per_pair <= MAX_PAIR_SECONDS else "MISSED"
                line += f"  {per_pair * 1e9:6.0f} ns per pair and thread ({ok})"
                if size == REFERENCE_SIZE and reference:
                    ratio = t / reference
                    line += f"; / NumPy {reference:.2f} s = {ratio:.4f}"
                    if workers == "1":
                        line += f" (target <= {TARGET}: "
                        line += "met)" if ratio <= TARGET else "MISSED)"
            old = diagonal.get((size, case, "1"))
            if case == "rbf_diagonal" and old:
                ratio = t / old
                line += f"  / NumPy {old:.2f} s = {ratio:.4f}"
                if size == "2000x16" and workers == "1":
                    line += f" (target <= {TARGET_DIAGONAL}: "
                    line += "met)" if ratio <= TARGET_DIAGONAL else "MISSED)"
            print(line)


if __name__ == "__main__":
    import sys

    print_ratios(*sys.argv[1:])
