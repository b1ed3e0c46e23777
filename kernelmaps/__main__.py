"""Demo: ``python -m kernelmaps [--quick] [--workers N] [--seed S]``

The case for kernelmaps in one screen. For three kinds of generated data,
the exact kernel with a kernel machine against the best explicit feature map
with a linear model: time of the whole fit-and-predict pipeline, speed-up,
error of the approximate kernel on the training objects, and held-out score.

- sets of points drawn from four distributions with the same mean and
  variance: the mean map kernel against random distribution features (RDF);
- histograms of six overlapping classes: the exp-chi2 kernel against random
  features on the direct chi2 map, and the additive chi2 kernel against the
  direct map itself;
- distributions known by samples, regression of the skewness of Beta
  distributions: the MMD kernel against doubly random distribution features
  (DRDF).

Both sides solve ridge regression (one-vs-all for classes): kernel ridge
with the exact Gram matrix, linear ridge on the features. Progress bars
need tqdm (``pip install "kernelmaps[progress]"``).
"""

import argparse
import sys
import time

import numpy as np
import scipy.linalg

import kernelmaps
from kernelmaps import (
    Chi2DirectMap,
    DoublyRandomDistributionFeatures,
    ExpChi2Features,
    RandomDistributionFeatures,
    additive_chi2_kernel,
    exp_chi2_kernel,
    median_heuristic,
    mmd_kernel,
    sum_match_kernel,
)
from kernelmaps._data import SHAPES, beta_sets, class_histograms, shaped_sets
from kernelmaps._parallel import resolve_workers

HEADER = (f"  {'method':<44}{'time':>8}{'speed-up':>10}"
          f"{'kernel error':>16}{'score':>9}")
SUBHEADER = f"  {'':<44}{'':>8}{'':>10}{'max':>8}{'mean':>8}"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kernelmaps", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (a few seconds)")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads (default: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars")
    args = parser.parse_args(argv)
    try:
        import tqdm  # noqa: F401
        progress = not args.no_progress
    except ImportError:
        progress = False

    demo = Demo(args.workers, progress, args.seed)
    print(f"kernelmaps {kernelmaps.__version__}: exact kernels against explicit "
          f"feature maps, {resolve_workers(args.workers)} threads")
    print("time: fit and predict (kernel machine: Gram matrices and solve; map: "
          "features and linear ridge)")
    print("kernel error: |approximate - exact| on the training Gram matrix\n")
    print(HEADER)
    print(SUBHEADER)
    demo.sets(*((20, 40) if args.quick else (200, 100)))
    demo.histograms(*((1000, 500) if args.quick else (8000, 2000)))
    demo.distributions(*((60, 100) if args.quick else (300, 200)))
    if not progress:
        print("\n(progress bars: pip install tqdm)")
    return 0


def _timed(f, *args, **kwargs):
    start = time.perf_counter()
    result = f(*args, **kwargs)
    return result, time.perf_counter() - start


def _one_vs_all(labels):
    """Targets +1 for the class, -1 otherwise: one column per class."""
    return np.where(labels[:, None] == np.unique(labels), 1.0, -1.0)


def _linear_ridge(Z, y, alpha):
    """Weights and intercept of ridge regression on features `Z`, solved
    in the primal or the dual, whichever system is smaller."""
    mean, y_mean = Z.mean(axis=0), y.mean(axis=0)
    Z = Z - mean
    if Z.shape[1] <= Z.shape[0]:
        w = scipy.linalg.solve(Z.T @ Z + alpha * np.eye(Z.shape[1]),
                               Z.T @ (y - y_mean), assume_a="pos")
    else:
        w = Z.T @ scipy.linalg.solve(Z @ Z.T + alpha * np.eye(Z.shape[0]),
                                     y - y_mean, assume_a="pos")
    return w, y_mean - mean @ w


def _r2(y, predicted):
    return 1 - np.sum((y - predicted) ** 2) / np.sum((y - y.mean()) ** 2)


class Demo:
    """The pipelines, and one table row per method."""

    def __init__(self, workers, progress, seed):
        self.workers = workers
        self.progress = progress
        self.seed = seed

    def kernel_machine(self, name, kernel, train, test, y, alpha, score):
        """Kernel ridge with `kernel(X, Y=None, **)`: train Gram, test rows,
        solve; prints a row and returns (train Gram, time)."""
        kw = {"workers": self.workers}
        start = time.perf_counter()
        K = kernel(train, progress=self.progress, **kw)
        K_test = kernel(test, train, **kw)
        targets = y if y.ndim == 2 else y[:, None]
        mean = targets.mean(axis=0)
        coef = scipy.linalg.solve(K + alpha * np.eye(len(K)), targets - mean,
                                  assume_a="pos")
        predicted = K_test @ coef + mean
        elapsed = time.perf_counter() - start
        self.row(name, elapsed, None, None, score(predicted))
        return K, elapsed

    def linear_model(self, name, fmap, train, test, y, alpha, score, K, t_exact):
        """Linear ridge on the features of `fmap`; prints a row."""
        start = time.perf_counter()
        Z = fmap.transform(train, workers=self.workers)
        Z_test = fmap.transform(test, workers=self.workers)
        w, intercept = _linear_ridge(Z, y, alpha)
        predicted = Z_test @ w + intercept
        elapsed = time.perf_counter() - start
        error = np.abs(Z @ Z.T - K)
        self.row(name, elapsed, t_exact / elapsed, error, score(predicted))

    def row(self, name, elapsed, speedup, error, score):
        speedup = f"{speedup:>9.1f}x" if speedup is not None else " " * 10
        error = (f"{error.max():>8.0e}{error.mean():>8.0e}" if error is not None
                 else " " * 16)
        print(f"  {name:<44}{elapsed:>7.2f}s{speedup}{error}{score}", flush=True)

    def sets(self, n_per_class, n_points):
        """Which of four distributions of equal mean and variance sampled a set."""
        sets, labels = shaped_sets(n_per_class, n_points, 5, seed=self.seed)
        n_train = len(sets) * 2 // 3
        train = kernelmaps.Bags.from_list(sets[:n_train])
        test = kernelmaps.Bags.from_list(sets[n_train:])
        gamma = 4 * median_heuristic(train, rng=self.seed)
        y_test = labels[n_train:]
        print(f"sets: {len(sets)} sets of {n_points} +- 50 % points in d = 5 from "
              f"{len(SHAPES)} distributions of equal mean and variance "
              f"({n_train} train); score: test accuracy")

        def accuracy(scores):
            return f"{np.mean(np.argmax(scores, axis=1) == y_test):>8.1%}"

        y = _one_vs_all(labels[:n_train])
        K, t_exact = self.kernel_machine(
            "mean map kernel + kernel ridge",
            lambda X, Y=None, **kw: sum_match_kernel(X, Y, gamma=gamma, **kw),
            train, test, y, 1e-3, accuracy)
        for t in (1000, 4000):
            rdf = RandomDistributionFeatures(5, t, gamma=gamma, rng=self.seed)
            self.linear_model(f"RDF, t = {t} + linear ridge", rdf, train, test, y,
                              1e-3, accuracy, K, t_exact)

    def histograms(self, n_train, n_test):
        """Six overlapping classes of histograms over 50 bins."""
        X, labels = class_histograms(n_train + n_test, seed=self.seed)
        train, test = X[:n_train], X[n_train:]
        y = _one_vs_all(labels[:n_train])
        y_test = labels[n_train:]
        print(f"\nhistograms: {len(X)} histograms of 100 to 300 counts over "
              f"50 bins, 6 classes ({n_train} train); score: test accuracy")

        def accuracy(scores):
            return f"{np.mean(np.argmax(scores, axis=1) == y_test):>8.1%}"

        beta = 2.0
        (w, intercept), elapsed = _timed(_linear_ridge, train, y, 1e-3)
        self.row("linear ridge on the histograms", elapsed, None, None,
                 accuracy(test @ w + intercept))
        K, t_exact = self.kernel_machine(
            f"exp-chi2 kernel (beta = {beta:g}) + kernel ridge",
            lambda X, Y=None, progress=False, **kw: exp_chi2_kernel(
                X, Y, beta=beta, **kw),
            train, test, y, 1e-2, accuracy)
        features = ExpChi2Features.fit(train, 2000, beta=beta, rng=self.seed)
        self.linear_model("ExpChi2Features, t = 2000 + linear ridge", features,
                          train, test, y, 1e-2, accuracy, K, t_exact)
        K, t_exact = self.kernel_machine(
            "additive chi2 kernel + kernel ridge",
            lambda X, Y=None, progress=False, **kw: additive_chi2_kernel(X, Y, **kw),
            train, test, y, 1e-2, accuracy)
        direct = Chi2DirectMap.fit(train, 5, per_dimension=True)
        self.linear_model("Chi2DirectMap, 5 terms + linear ridge", direct, train,
                          test, y, 1e-2, accuracy, K, t_exact)

    def distributions(self, n_sets, n_points):
        """Regression of the skewness of Beta(a, 3) from samples."""
        sets, skewness = beta_sets(n_sets, n_points, seed=self.seed)
        n_train = n_sets * 2 // 3
        train = kernelmaps.Bags.from_list(sets[:n_train])
        test = kernelmaps.Bags.from_list(sets[n_train:])
        y, y_test = skewness[:n_train], skewness[n_train:]
        gamma = median_heuristic(train, rng=self.seed)
        gamma2 = 10.0
        print(f"\ndistributions: skewness of {n_sets} Beta(a, 3) distributions, "
              f"a in [1, 3], from {n_points} samples each ({n_train} train); "
              "score: test R^2")

        def r2(predicted):
            return f"{_r2(y_test, np.ravel(predicted)):>9.3f}"

        K, t_exact = self.kernel_machine(
            "MMD kernel + kernel ridge",
            lambda X, Y=None, **kw: mmd_kernel(X, Y, gamma=gamma, gamma2=gamma2,
                                               **kw),
            train, test, y, 1e-4, r2)
        drdf = DoublyRandomDistributionFeatures(1, 500, 2000, gamma=gamma,
                                                gamma2=gamma2, rng=self.seed)
        self.linear_model("DRDF, t = 500, 2000 + linear ridge", drdf, train,
                          test, y, 1e-4, r2, K, t_exact)


if __name__ == "__main__":
    sys.exit(main())
