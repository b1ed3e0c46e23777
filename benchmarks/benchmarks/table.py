"""One table of every exact kernel and feature map, from one run.

    cd benchmarks && python -m benchmarks.table [--workers N] [--quick]
        [--rows NAME ...]

For each operation: its size, its wall time (the best of several runs for
operations under a second, else one run), its time as a ratio to the exact
kernel it replaces and to the best available peer (scikit-learn, or NumPy /
SciPy where scikit-learn has none), and its error. A map's time is its
``transform`` of all the objects: the features a linear model needs, where
a kernel machine needs the exact Gram matrix (so the ratio to the exact
kernel falls as the number of objects grows); its error, and its peer's, is
``max |Z @ Z.T - K|`` against the exact kernel's result. An exact kernel's
error is its largest difference from the peer's result. The README's
numbers are this script's output. scikit-learn is optional: without it,
its peers are left out.

The sizes are those of the asv suite where it can afford them in a few
minutes; asv (``asv run --python=same``) sweeps sizes, dtypes and threads.
"""

import argparse
import importlib.util
import time

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.spatial.distance

import kernelmaps as km

from .common import bag_of_words, machine, make_sets
from .divergence import indefinite_kernel
from .emk import _nystroem
from .expected import gaussians, numpy_rbf_full
from .histograms import PEERS, numpy_js_kernel
from .outofcore import incremental_pca
from .peers import (
    blocked_sum_match_kernel,
    eigh_project_psd,
    kdtree_renyi_divergence,
)
from .random_features import _rbf_sampler, numpy_set_means, sklearn_set_means
from .set_kernels import numpy_mmd_kernel

# Without scikit-learn, its peers are left out.
HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None


# How long OpenBLAS's threads spin after a call, at most (measured: a
# multi-threaded kernelmaps call right after a NumPy product took 1.2x to
# 1.5x its time).
_BLAS_SPIN_SECONDS = 0.3


def best_time(f):
    """Result and wall time of ``f()``: one run if it takes a second or
    more, else the best of as many runs as fit in about a second (3 to 50).
    It waits first for the BLAS threads of the row before to go to sleep
    (OpenBLAS's spin for tens of milliseconds after a call, on the cores
    the next call would use)."""
    time.sleep(_BLAS_SPIN_SECONDS)
    start = time.perf_counter()
    result = f()
    best = time.perf_counter() - start
    if best < 1.0:
        for _ in range(min(50, max(2, int(1.0 / max(best, 1e-3))))):
            start = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - start)
    return result, best


def max_abs_diff(a, b):
    return np.abs(a - b).max()


def gram_error(Z, K):
    """``max |Z @ Z.T - K|`` for features `Z` (dense or sparse)."""
    if scipy.sparse.issparse(Z):
        Z = Z.toarray()
    return np.abs(Z @ Z.T - K).max()


class Table:
    """Rows of (operation, size, time, ratio to exact and to peer, errors)."""

    def __init__(self):
        self.results = {}
        self.times = {}
        print(f"{'operation':<38}{'size':>15}{'time':>9}{'/ exact':>9}"
              f"{'/ peer':>9}  {'peer':<24}{'error':>8}{'peer err':>9}")

    def row(self, name, size, run, *, exact=None, peer=None, error=max_abs_diff):
        """Time `run`. `exact` names an earlier row whose result is the
        exact kernel; `peer` is ``(label, callable)``. The error is
        ``error(result, reference)`` against the exact result, else against
        the peer's (None: no error); the peer's error is against the exact
        result."""
        result, t = best_time(run)
        self.results[name], self.times[name] = result, t
        reference = self.results[exact] if exact else None
        cells = [f"{t / self.times[exact]:.3f}x" if exact else ""]
        peer_err = ""
        if peer is not None and (HAVE_SKLEARN or "sklearn" not in peer[0]):
            peer_result, t_peer = best_time(peer[1])
            cells += [f"{t / t_peer:.3f}x", peer[0]]
            if reference is None:
                reference = peer_result
            elif error is not None:
                peer_err = f"{error(peer_result, reference):.0e}"
        else:
            cells += ["", ""]
        err = ""
        if reference is not None and error is not None:
            err = f"{error(result, reference):.0e}"
        print(f"{name:<38}{size:>15}{t:>8.3f}s{cells[0]:>9}{cells[1]:>9}  "
              f"{cells[2]:<24}{err:>8}{peer_err:>9}", flush=True)

    def map_row(self, name, size, fmap, X, workers, exact, *, peer=None):
        """A row for ``fmap.transform(X)``, whose features approximate the
        kernel of row `exact`."""
        self.row(name, size, lambda: fmap.transform(X, workers=workers),
                 exact=exact, peer=peer, error=gram_error)


def set_rows(table, workers, quick):
    size = "50x100x10" if quick else "200x100x10"
    sets, _ = make_sets(size, np.float64)
    bags = km.Bags.from_list(sets)
    gamma = km.median_heuristic(bags, rng=0)
    table.row("sum_match_kernel (mean map)", size,
              lambda: km.sum_match_kernel(bags, gamma=gamma, workers=workers),
              peer=("NumPy blocked", lambda: blocked_sum_match_kernel(sets, gamma)))
    table.row("median_heuristic", size, lambda: km.median_heuristic(bags, rng=0))
    table.row("mmd", size, lambda: km.mmd(bags, gamma=gamma, workers=workers),
              peer=("NumPy blocked", lambda: _numpy_mmd(sets, gamma)))
    table.row("mmd_kernel", size,
              lambda: km.mmd_kernel(bags, gamma=gamma, workers=workers),
              peer=("NumPy blocked", lambda: numpy_mmd_kernel(sets, gamma, 1.0)))
    for t in (1000, 4000):
        rdf = km.RandomDistributionFeatures(t, gamma=gamma, rng=0).fit(bags)
        table.map_row(f"RandomDistributionFeatures t={t}", size, rdf, bags,
                      workers, "sum_match_kernel (mean map)",
                      peer=("NumPy cos(XW+b)", lambda rdf=rdf: numpy_set_means(
                          bags, rdf.weights_, rdf.offsets_)))
    drdf = km.DoublyRandomDistributionFeatures(1000, 2000, gamma=gamma,
                                               rng=0).fit(bags)
    table.map_row("DoublyRandomDistributionFeatures", size, drdf, bags, workers,
                  "mmd_kernel")
    emk = km.EMKFeatures(200, gamma=gamma, rng=0).fit(bags.points)
    table.map_row("EMKFeatures, 200 basis vectors", size, emk, bags, workers,
                  "sum_match_kernel (mean map)",
                  peer=("sklearn Nystroem + means",
                        lambda: sklearn_set_means(
                            _nystroem(bags.points, gamma), bags)))

    size = "50x200x10" if quick else "100x200x10"
    sets, _ = make_sets(size, np.float64)
    table.row("renyi_divergence (k=5)", size,
              lambda: km.renyi_divergence(sets, workers=workers),
              peer=("cKDTree", lambda: kdtree_renyi_divergence(
                  sets, workers=-1 if workers is None else workers)))
    D = table.results["renyi_divergence (k=5)"]
    table.row("divergence_kernel", f"{len(D)}x{len(D)}",
              lambda: km.divergence_kernel(D))
    K = indefinite_kernel("l1_gaussian", n=500 if quick else 2000)
    table.row("project_psd (clip)", f"{len(K)}x{len(K)}", lambda: km.project_psd(K),
              peer=("numpy.linalg.eigh", lambda: eigh_project_psd(K)))


def _numpy_mmd(sets, gamma):
    """The MMD matrix from the blocked NumPy sum-match kernel."""
    K = blocked_sum_match_kernel(sets, gamma)
    diag = np.diag(K)
    return np.sqrt(np.maximum(diag[:, None] + diag - 2 * K, 0))


def descriptor_rows(table, workers, quick):
    """The set kernels on descriptors (d = 128 to 2048), beside the blocked
    NumPy baseline and beside its matrix products alone (GEMM only)."""
    for size in ("8x100x512",) if quick else ("60x150x128", "30x150x512",
                                               "16x150x2048"):
        for dtype in (np.float64, np.float32):
            sets, d = make_sets(size, dtype)
            gamma = 1.0 / (2 * d)
            name = f"sum_match_kernel, {np.dtype(dtype).name}"

            def ours(sets=sets, gamma=gamma):
                return km.sum_match_kernel(sets, gamma=gamma, workers=workers)

            table.row(name, size, ours, peer=(
                "NumPy blocked",
                lambda sets=sets, gamma=gamma: blocked_sum_match_kernel(sets, gamma)))
            table.row(f"{name} (GEMM)", size, ours, error=None, peer=(
                "NumPy GEMM only",
                lambda sets=sets, gamma=gamma: blocked_sum_match_kernel(
                    sets, gamma, products_only=True)))


def histogram_rows(table, workers, quick):
    n = 500 if quick else 2000
    X = bag_of_words(n)
    size = f"{n}x{n}x300"
    csr = scipy.sparse.csr_matrix(X)
    table.row("additive_chi2_kernel, dense", size,
              lambda: km.additive_chi2_kernel(X, workers=workers),
              peer=("sklearn (dense only)", lambda: PEERS["chi2"](X)))
    table.row("additive_chi2_kernel, CSR", size,
              lambda: km.additive_chi2_kernel(csr, workers=workers),
              exact="additive_chi2_kernel, dense")
    table.row("exp_chi2_kernel", size,
              lambda: km.exp_chi2_kernel(X, workers=workers),
              peer=("sklearn chi2_kernel", lambda: PEERS["exp_chi2"](X)))
    table.row("chi2_distance", size, lambda: km.chi2_distance(X, workers=workers),
              peer=("sklearn (dense only)", lambda: PEERS["chi2_distance"](X)))
    table.row("intersection_kernel", size,
              lambda: km.intersection_kernel(X, workers=workers),
              peer=("NumPy blocked", lambda: PEERS["intersection"](X)))
    table.row("hellinger_kernel", size,
              lambda: km.hellinger_kernel(X, workers=workers),
              peer=("NumPy sqrt + matmul", lambda: np.sqrt(X) @ np.sqrt(X).T))
    table.row("js_kernel", size, lambda: km.js_kernel(X, workers=workers),
              peer=("NumPy blocked", lambda: numpy_js_kernel(X)))
    chi2 = "additive_chi2_kernel, dense"
    maps = [("Chi2DirectMap, 5 terms, CSR", km.Chi2DirectMap(5).fit(X)),
            ("Chi2DirectMap, 5 terms per dimension",
             km.Chi2DirectMap(5, per_dimension=True).fit(X)),
            ("Chi2ChebyshevMap, 5 terms",
             km.Chi2ChebyshevMap(5, scale="median").fit(X)),
            ("HomogeneousKernelMap (VZ), 5 terms", km.HomogeneousKernelMap("chi2", 2)),
            ("AnchorMap, 50 anchors", km.AnchorMap("chi2", 50).fit(X))]
    for name, fmap in maps:
        table.map_row(name, size, fmap, csr, workers, chi2,
                      peer=("sklearn AdditiveChi2", lambda: _sklearn_chi2_sampler(csr)))
    fmap = km.ExpChi2Features(2000, rng=0).fit(X)
    table.map_row("ExpChi2Features, t=2000", size, fmap, csr, workers,
                  "exp_chi2_kernel")


def _sklearn_chi2_sampler(X):
    from sklearn.kernel_approximation import AdditiveChi2Sampler

    return AdditiveChi2Sampler(sample_steps=3).fit_transform(X)


def vector_rows(table, workers, quick):
    n = 2000 if quick else 10000
    X = np.random.default_rng(0).standard_normal((n, 30))
    size = f"{n}x30, t=1000"
    gamma = 1.0 / 30
    table.row("rbf kernel (scipy cdist + exp)", f"{n}x{n}x30", lambda: np.exp(
        -gamma * scipy.spatial.distance.cdist(X, X, "sqeuclidean")))
    rff = km.RandomFourierFeatures(1000, gamma=gamma, rng=0).fit(X)
    table.map_row("RandomFourierFeatures", size, rff, X, workers,
                  "rbf kernel (scipy cdist + exp)",
                  peer=("sklearn RBFSampler",
                        lambda: _rbf_sampler(30, 1000, gamma).transform(X)))

    size = "500x16" if quick else "1000x16"
    means, covs = gaussians(size, "full")
    table.row("gaussian_expected_kernel, full", size,
              lambda: km.gaussian_expected_kernel(means, covs, gamma=0.1),
              peer=("NumPy batched Cholesky", lambda: numpy_rbf_full(means, covs, 0.1)))
    K = table.results["gaussian_expected_kernel, full"]
    table.row("level2_kernel (rbf)", f"{len(K)}x{len(K)}",
              lambda: km.level2_kernel(K, np.diag(K), kind="rbf"))


def outofcore_rows(table, workers, quick):
    n = 4000 if quick else 20000
    X = bag_of_words(n, seed=1)
    fmap = km.ExpChi2Features(2000, rng=0).fit(X[:2000])
    blocks = [X[i:i + 5000] for i in range(0, n, 5000)]
    size = f"{n}x300, t=2000"
    table.row("rf_pca, 200 components", size,
              lambda: km.rf_pca(blocks, fmap, 200),
              peer=("sklearn IncrementalPCA", lambda: incremental_pca(blocks, fmap)),
              error=lambda a, b: np.abs(a.explained_variance_[:10]
                                        - b.explained_variance_[:10]).max())
    y = np.where(X[:, 0] > X[:, 1], 1.0, -1.0)
    table.row("rf_ridge, 200 components", size,
              lambda: km.rf_ridge(blocks, y, fmap, 200),
              peer=("sklearn Ridge, in memory",
                    lambda: _sklearn_ridge(blocks, y, fmap)),
              error=None)  # different models: nothing to compare


def _sklearn_ridge(blocks, y, fmap):
    from sklearn.linear_model import Ridge

    Z = np.vstack([fmap.transform(X) for X in blocks])
    return Ridge(alpha=1.0).fit(Z, y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--rows", nargs="+", choices=sorted(ROWS),
                        default=list(ROWS), help="which rows (default: all)")
    args = parser.parse_args(argv)
    print(f"# {machine()}; workers={args.workers}")
    table = Table()
    for name in args.rows:
        ROWS[name](table, args.workers, args.quick)


ROWS = {"sets": set_rows, "descriptors": descriptor_rows,
        "histograms": histogram_rows, "vectors": vector_rows,
        "outofcore": outofcore_rows}


if __name__ == "__main__":
    main()
