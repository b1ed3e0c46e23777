"""Demo: ``python -m kernelmaps [--quick] [--workers N] [--seed S]``

The case for kernelmaps in one screen. For three kinds of generated data,
the exact kernel with a kernel machine against explicit feature maps with a
linear model: time of the whole fit-and-predict pipeline, speed-up over the
exact kernel's row, error of the approximate kernel on the training objects,
and held-out score. The closing lines state what the numbers of this run
show, computed from them: a map is called faster only where its speed-up
is above 1.

- sets of points drawn from four distributions with the same mean and
  variance: the mean map kernel against random distribution features (RDF);
- histograms of six overlapping classes: the exp-chi2 kernel against random
  features on the direct chi2 map, and the additive chi2 kernel against the
  direct map itself;
- distributions known by samples, regression of the skewness of Beta
  distributions: the MMD kernel against doubly random distribution features
  (DRDF).

Both sides solve ridge regression (one-vs-all for classes): kernel ridge
with the exact Gram matrix, linear ridge on the features. ``--quick`` is a
smoke run (a few seconds) at sizes too small to show what the maps are for. A
progress bar (needs tqdm: ``pip install "kernelmaps[progress]"``) shows the
pipeline being computed and disappears when the table is complete.
"""

import argparse
import functools
import string
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
from kernelmaps._engine.progress import progress_bar
from kernelmaps._parallel import resolve_workers

HEADER = (f"  {'row':<5}{'method':<44}{'time':>8}{'speed-up':>14}"
          f"{'kernel error':>16}{'score':>9}")
SUBHEADER = f"  {'':<5}{'':<44}{'':>8}{'(vs row)':>14}{'max':>8}{'mean':>8}"
FOOTNOTE = ("speed-up: time of the exact-kernel row named after 'vs' divided by "
            "this row's time;\nkernel error: this map's Gram matrix against that "
            "row's exact one.")
QUICK_NOTE = ("--quick is a smoke run: at its sizes the exact kernels take "
              "milliseconds and the training\nsets are small, so its speed-ups "
              "(some below 1) and scores do not show what the maps\ndo at "
              "scale; run without --quick for that.")
# Sizes of the three sections: (sets per class, points per set),
# (train, test histograms), (distributions, samples per distribution).
SIZES = {"full": ((200, 100), (8000, 2000), (300, 200)),
         "quick": ((20, 40), (1000, 500), (60, 100))}
# Short pipelines are repeated and the best time kept, so that a speed-up is
# not set by one noisy run: up to MAX_RUNS runs, while their total stays
# under REPEAT_BUDGET seconds (the long exact kernels run once).
MAX_RUNS, REPEAT_BUDGET = 5, 0.5
# Speed-ups within 5 % of 1 are "about as fast": less than the timing noise.
SAME_SPEED = 1.05


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kernelmaps", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run at small sizes (a few seconds)")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads (default: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar")
    args = parser.parse_args(argv)
    try:
        import tqdm  # noqa: F401
        progress = not args.no_progress
    except ImportError:
        progress = False

    sets_size, histograms_size, distributions_size = SIZES[
        "quick" if args.quick else "full"]
    print(f"kernelmaps {kernelmaps.__version__}: exact kernels against explicit "
          f"feature maps, {resolve_workers(args.workers)} threads"
          + (" (--quick: smoke run)" if args.quick else ""))
    print("time: fit and predict (kernel machine: Gram matrices and solve; map: "
          f"features and\nlinear ridge), the best of up to {MAX_RUNS} runs "
          f"(repeated while their total is under {REPEAT_BUDGET} s)\n", flush=True)
    # The bar over the pipelines clears itself when closed: only the table
    # stays on the screen.
    with progress_bar(progress, Demo.STEPS, "demo", unit="pipeline",
                      leave=False) as bar:
        demo = Demo(args.workers, args.seed, bar if progress else None)
        demo.write(HEADER)
        demo.write(SUBHEADER)
        demo.sets(*sets_size)
        demo.histograms(*histograms_size)
        demo.distributions(*distributions_size)
    print()
    print(FOOTNOTE)
    print()
    print("What this run shows:")
    for line in demo.conclusions():
        print(f"- {line}")
    if args.quick:
        print()
        print(QUICK_NOTE)
    if not progress and not args.no_progress:
        print("\n(progress bar: pip install tqdm)")
    return 0


def _best_time(f):
    """The result of `f()` and its best time over up to MAX_RUNS runs (the
    runs after the first only while their total stays under REPEAT_BUDGET;
    `f` is deterministic, so every run gives the same result)."""
    times = []
    while len(times) < MAX_RUNS and sum(times) < REPEAT_BUDGET:
        result = None  # (the previous run's arrays freed before the next)
        start = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - start)
    return result, min(times)


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


def _kernel_error(Z, K):
    """The largest and the mean of ``|Z Z^T - K|``, a block of rows at a
    time (the whole difference would be three more matrices of K's size)."""
    largest, total = 0.0, 0.0
    for start in range(0, len(K), 1000):
        block = np.abs(Z[start:start + 1000] @ Z.T - K[start:start + 1000])
        largest, total = max(largest, block.max()), total + block.sum()
    return largest, total / K.size


def _r2(y, predicted):
    return 1 - np.sum((y - predicted) ** 2) / np.sum((y - y.mean()) ** 2)


class Score:
    """A held-out score: test accuracy (printed in %) or R^2."""

    def __init__(self, kind, y_test):
        self.kind = kind
        self.y_test = y_test

    def __call__(self, predicted):
        if self.kind == "accuracy":
            return float(np.mean(np.argmax(predicted, axis=1) == self.y_test))
        return float(_r2(self.y_test, np.ravel(predicted)))

    def format(self, value):
        return f"{value:>8.1%}" if self.kind == "accuracy" else f"{value:>9.3f}"

    def compare(self, value, baseline):
        """`value` against `baseline`, in numbers."""
        if self.kind == "accuracy":
            # The difference of the printed values, so that the numbers of a
            # line add up as the reader sees them.
            difference = round(round(100 * value, 1) - round(100 * baseline, 1), 1)
            return (f"accuracy {value:.1%} vs {baseline:.1%} "
                    f"({difference + 0.0:+.1f} points)")  # + 0.0: no "-0.0"
        difference = round(round(value, 3) - round(baseline, 3), 3)
        return f"R^2 {value:.3f} vs {baseline:.3f} ({difference + 0.0:+.3f})"


class Demo:
    """The pipelines, and one table row per method."""

    STEPS = 10  # pipelines (table rows), for the progress bar

    def __init__(self, workers, seed, bar=None):
        self.workers = workers
        self.seed = seed
        self.bar = bar
        self.rows = []  # dicts: label, name, time, baseline, score, kind

    def write(self, line):
        """Print a line above the progress bar (which tqdm.write clears and
        redraws), so that bar and table never share a line."""
        if self.bar is None:
            print(line, flush=True)
        else:
            self.bar.write(line, file=sys.stdout)
            sys.stdout.flush()

    def step(self, name):
        if self.bar is not None:
            self.bar.set_description(name)

    def row(self, name, elapsed, score, value, baseline=None, error=None):
        """Print and record a row; `baseline` is the row (a dict) whose exact
        kernel this map approximates. Returns the new row."""
        label = string.ascii_uppercase[len(self.rows)]
        speedup, ratio = " " * 14, None
        if baseline is not None:
            # Three significant digits; the conclusions are computed from
            # this printed number, printed without exponent or trailing
            # zeros ("39.2", "0.0255", "1230").
            ratio = float(f"{baseline['time'] / elapsed:.3g}")
            printed = np.format_float_positional(ratio, trim="-")
            speedup = f"{printed:>8}x vs {baseline['label']}"
        error = (f"{error[0]:>8.0e}{error[1]:>8.0e}" if error is not None
                 else " " * 16)
        self.write(f"  {label:<5}{name:<44}{elapsed:>7.3f}s{speedup}{error}"
                   f"{score.format(value)}")
        record = {"label": label, "name": name, "time": elapsed,
                  "baseline": baseline, "speedup": ratio, "score": value,
                  "kind": score}
        self.rows.append(record)
        if self.bar is not None:
            self.bar.update()
        return record

    def kernel_machine(self, name, kernel, train, test, y, alpha, score):
        """Kernel ridge with `kernel(X, Y=None, **)`: train Gram, test rows,
        solve; prints a row and returns (the row, the train Gram matrix)."""
        self.step(name)
        kw = {"workers": self.workers}
        targets = y if y.ndim == 2 else y[:, None]

        def pipeline():
            K = kernel(train, **kw)
            K_test = kernel(test, train, **kw)
            mean = targets.mean(axis=0)
            # K + alpha I, solved in place (LAPACK's column order: a C-order
            # matrix is copied twice more): one copy of K, not four
            A = K.copy(order="F")
            A[np.diag_indices_from(A)] += alpha
            coef = scipy.linalg.solve(A, targets - mean, assume_a="pos",
                                      overwrite_a=True)
            return K, K_test @ coef + mean

        (K, predicted), elapsed = _best_time(pipeline)
        return self.row(name, elapsed, score, score(predicted)), K

    def linear_model(self, name, fmap, train, test, y, alpha, score, K, baseline):
        """Linear ridge on the features of `fmap`; prints a row whose speed-up
        and kernel error are against the exact row `baseline` (Gram `K`)."""
        self.step(name)

        def pipeline():
            Z = fmap.transform(train, workers=self.workers)
            Z_test = fmap.transform(test, workers=self.workers)
            w, intercept = _linear_ridge(Z, y, alpha)
            return Z, Z_test @ w + intercept

        (Z, predicted), elapsed = _best_time(pipeline)
        self.row(name, elapsed, score, score(predicted), baseline,
                 _kernel_error(Z, K))

    def conclusions(self):
        """One sentence per map row, from the numbers of its row as printed:
        faster or slower than its exact row (faster only for a speed-up of
        at least SAME_SPEED), and its score against that row's."""
        lines = []
        for row in self.rows:
            base = row["baseline"]
            if base is None:
                continue
            ratio = row["speedup"]
            if ratio >= SAME_SPEED:
                speed = f"{ratio:.1f}x faster than"
            elif ratio <= 1 / SAME_SPEED:
                speed = f"{1 / ratio:.1f}x slower than"
            else:
                speed = "about as fast as"
            lines.append(f"{row['label']} ({row['name'].split(' + ')[0]}): {speed} "
                         f"{base['label']} ({base['name'].split(' + ')[0]}); "
                         f"{row['kind'].compare(row['score'], base['score'])}")
        return lines

    def sets(self, n_per_class, n_points):
        """Which of four distributions of equal mean and variance sampled a set."""
        sets, labels = shaped_sets(n_per_class, n_points, 5, seed=self.seed)
        n_train = len(sets) * 2 // 3
        train = kernelmaps.Bags.from_list(sets[:n_train])
        test = kernelmaps.Bags.from_list(sets[n_train:])
        gamma = 4 * median_heuristic(train, rng=self.seed)
        accuracy = Score("accuracy", labels[n_train:])
        self.write(f"\n  sets: {len(sets)} sets of {n_points} +- 50 % points in d = 5"
                   f" from {len(SHAPES)} distributions\n  of equal mean and "
                   f"variance ({n_train} train); score: test accuracy")

        y = _one_vs_all(labels[:n_train])
        exact, K = self.kernel_machine(
            "mean map kernel + kernel ridge",
            functools.partial(sum_match_kernel, gamma=gamma),
            train, test, y, 1e-3, accuracy)
        for t in (1000, 4000):
            rdf = RandomDistributionFeatures(t, gamma=gamma, rng=self.seed).fit(train)
            self.linear_model(f"RDF, t = {t} + linear ridge", rdf, train, test, y,
                              1e-3, accuracy, K, exact)

    def histograms(self, n_train, n_test):
        """Six overlapping classes of histograms over 50 bins."""
        X, labels = class_histograms(n_train + n_test, seed=self.seed)
        train, test = X[:n_train], X[n_train:]
        y = _one_vs_all(labels[:n_train])
        accuracy = Score("accuracy", labels[n_train:])
        self.write(f"\n  histograms: {len(X)} histograms of 100 to 300 counts over "
                   f"50 bins, 6 classes\n  ({n_train} train); score: test accuracy")

        beta = 2.0
        self.step("linear ridge")
        (w, intercept), elapsed = _best_time(lambda: _linear_ridge(train, y, 1e-3))
        self.row("linear ridge on the histograms", elapsed, accuracy,
                 accuracy(test @ w + intercept))
        exact, K = self.kernel_machine(
            f"exp-chi2 kernel (beta = {beta:g}) + kernel ridge",
            functools.partial(exp_chi2_kernel, beta=beta),
            train, test, y, 1e-2, accuracy)
        self.step("ExpChi2Features")
        features = ExpChi2Features(2000, beta=beta, rng=self.seed).fit(train)
        self.linear_model("ExpChi2Features, t = 2000 + linear ridge", features,
                          train, test, y, 1e-2, accuracy, K, exact)
        del K  # (freed before the next Gram matrix of the same size)
        exact, K = self.kernel_machine(
            "additive chi2 kernel + kernel ridge",
            additive_chi2_kernel, train, test, y, 1e-2, accuracy)
        direct = Chi2DirectMap(5, per_dimension=True).fit(train)
        self.linear_model("Chi2DirectMap, 5 terms + linear ridge", direct, train,
                          test, y, 1e-2, accuracy, K, exact)

    def distributions(self, n_sets, n_points):
        """Regression of the skewness of Beta(a, 3) from samples."""
        sets, skewness = beta_sets(n_sets, n_points, seed=self.seed)
        n_train = n_sets * 2 // 3
        train = kernelmaps.Bags.from_list(sets[:n_train])
        test = kernelmaps.Bags.from_list(sets[n_train:])
        y = skewness[:n_train]
        r2 = Score("r2", skewness[n_train:])
        gamma = median_heuristic(train, rng=self.seed)
        gamma2 = 10.0
        self.write(f"\n  distributions: skewness of {n_sets} Beta(a, 3) "
                   f"distributions, a in [1, 3],\n  from {n_points} samples each "
                   f"({n_train} train); score: test R^2")

        exact, K = self.kernel_machine(
            "MMD kernel + kernel ridge",
            functools.partial(mmd_kernel, gamma=gamma, gamma2=gamma2),
            train, test, y, 1e-4, r2)
        drdf = DoublyRandomDistributionFeatures(
            500, 2000, gamma=gamma, gamma2=gamma2, rng=self.seed).fit(train)
        self.linear_model("DRDF, t = 500, 2000 + linear ridge", drdf, train,
                          test, y, 1e-4, r2, K, exact)


if __name__ == "__main__":
    sys.exit(main())
