"""Digits as weighted point clouds: does weighting help, and which set
kernel classifies them best (issue 41)?

Each 8 x 8 image of scikit-learn's digits is upsampled to 16 x 16 (cubic
spline, clipped at 0) and becomes a set of 2-D points: the centres of its
pixels of positive intensity, weighted by the intensity (the weighted
sets), or the same points weighing 1 each (the unweighted sets, which lose
the grey levels). Every image is rotated by a random angle in [-30, 30]
degrees and translated by a random vector in [-2, 2]^2 pixels (as in
Meunier, Pontil and Ciliberto, ICML 2022, on MNIST). Compared, each as
SVC(kernel="precomputed", C=10) on 1,000 training images, scored on the
other 797: the mean map kernel (sum_match_kernel, rbf, gamma by the median
heuristic), the Gaussian MMD kernel (mmd_kernel), the sliced-Wasserstein
kernel exp(-gamma SW_2^2) (sliced_wasserstein_kernel, 100 projections,
gamma 1 / median), and its explicit features (SlicedWassersteinFeatures,
100 projections, 50 quantiles) with a linear SVC and with the Gaussian
kernel of the features; the time of each kernel matrix (features: fit,
transform and Gram).

    python -P studies/weighted_digits/study.py [--seeds 3] [--train 1000]
    python -P studies/weighted_digits/study.py --gamma-grid

(the second: the mean map kernel of the weighted sets of seed 0 with gamma
chosen by cross-validation on the training images among 1, 4, 16 and 64
times the median rule's.)
"""

import argparse
import os
import sys
import time

import numpy as np
from scipy import ndimage
from sklearn.datasets import load_digits
from sklearn.svm import SVC, LinearSVC

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km


def point_clouds(seed, zoom=2, angle=30.0, shift=2.0):
    """The digits as point clouds ``(sets, weights, labels)``: the pixel
    centres of each upsampled, rotated and translated image where its
    intensity is positive, and those intensities."""
    digits = load_digits()
    rng = np.random.default_rng(seed)
    side = 8 * zoom
    rows, cols = np.mgrid[0:side, 0:side]
    centre = (side - 1) / 2
    grid = np.column_stack([cols.ravel() - centre, centre - rows.ravel()])
    sets, weights = [], []
    for image in digits.images:
        big = np.clip(ndimage.zoom(image, zoom, order=3), 0, None).ravel()
        keep = big > 0.05 * big.max()
        theta = np.deg2rad(rng.uniform(-angle, angle))
        rotation = np.array([[np.cos(theta), -np.sin(theta)],
                             [np.sin(theta), np.cos(theta)]])
        points = grid[keep] @ rotation.T + rng.uniform(-shift, shift, size=2) * zoom
        sets.append(points)
        weights.append(big[keep])
    order = rng.permutation(len(sets))
    return ([sets[i] for i in order], [weights[i] for i in order],
            digits.target[order])


def timed(f, *args, **kwargs):
    start = time.perf_counter()
    out = f(*args, **kwargs)
    return out, time.perf_counter() - start


def median_gamma(D2, n):
    """1 / median of the off-diagonal squared distances among the first n."""
    return 1.0 / np.median(D2[:n, :n][np.triu_indices(n, 1)])


def feature_error(bags, projections, n_sets=300):
    """The relative error of the features' squared distances against the
    exact SW_2^2 with the same directions, on the first `n_sets` sets, at
    50 and 100 quantiles: over the off-diagonal matrix (Frobenius norms),
    then pair by pair: the median, the 99th percentile, the worst, and the
    share of pairs within 1e-3."""
    sub = bags[:n_sets]
    exact = km.sliced_wasserstein(sub, projections=projections) ** 2
    off = ~np.eye(n_sets, dtype=bool)
    errors = {}
    for q in (50, 100):
        Z = km.SlicedWassersteinFeatures(n_quantiles=q,
                                         projections=projections).fit_transform(sub)
        sq = (Z * Z).sum(axis=1)
        approx = np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0)
        diff = np.abs(approx - exact)[off]
        pairs = diff / exact[off]
        errors[q] = (float(np.linalg.norm(diff) / np.linalg.norm(exact[off])),
                     *np.quantile(pairs, [0.5, 0.99, 1.0]).tolist(),
                     float(np.mean(pairs <= 1e-3)))
    return errors


def scores(bags, labels, n, seed):
    """Accuracy and time of each kernel on `bags` (train: the first n)."""
    y_train, y_test = labels[:n], labels[n:]
    out = {}

    def svc(K, name, seconds):
        clf = SVC(kernel="precomputed", C=10).fit(K[:n, :n], y_train)
        out[name] = (float(np.mean(clf.predict(K[n:, :n]) == y_test)), seconds)

    K, t = timed(km.sum_match_kernel, bags)
    svc(K, "mean map", t)
    K, t = timed(km.mmd_kernel, bags)
    svc(K, "MMD kernel", t)
    K, t = timed(km.sliced_wasserstein_kernel, bags, n_projections=100, rng=seed)
    svc(K, "SW kernel (exact)", t)
    fmap = km.SlicedWassersteinFeatures(n_projections=100, n_quantiles=50, rng=seed)
    (Z, G), t = timed(lambda: (Z := fmap.fit_transform(bags), Z @ Z.T))
    out["SW features: error"] = feature_error(bags, fmap.projections_)
    clf = LinearSVC(C=10, dual="auto", max_iter=20000).fit(Z[:n], y_train)
    out["SW features, linear"] = (float(np.mean(clf.predict(Z[n:]) == y_test)), t)
    sq = np.diag(G)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * G, 0)
    svc(np.exp(-median_gamma(D2, n) * D2), "SW features, Gaussian", t)
    return out


def mean_map_grid(bags, labels, n, factors=(1, 4, 16, 64)):
    """The mean map kernel with gamma = the median rule's times each of
    `factors`, the factor chosen by 3-fold cross-validation of the SVC on
    the training images: (factor, test accuracy, seconds per matrix)."""
    from sklearn.model_selection import cross_val_score

    y_train, y_test = labels[:n], labels[n:]
    g0 = km.median_heuristic(bags)
    found = []
    for factor in factors:
        K, t = timed(km.sum_match_kernel, bags, gamma=g0 * factor)
        cv = cross_val_score(SVC(kernel="precomputed", C=10), K[:n, :n],
                             y_train, cv=3).mean()
        clf = SVC(kernel="precomputed", C=10).fit(K[:n, :n], y_train)
        test = float(np.mean(clf.predict(K[n:, :n]) == y_test))
        print(f"  mean map, gamma = {factor} x median rule: cross-validated "
              f"{cv:.3f}, test {test:.3f} ({t:.0f} s)", flush=True)
        found.append((cv, factor, test, t))
    cv, factor, test, t = max(found)
    return factor, test, t


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--gamma-grid", action="store_true",
                        help="only the mean map with a cross-validated gamma "
                             "(weighted sets, seed 0)")
    args = parser.parse_args()
    print(f"{machine()}; kernelmaps {km.__version__}; {args.seeds} seeds, "
          f"{args.train} training images")
    if args.gamma_grid:  # (the weighted sets of seed 0)
        sets, weights, labels = point_clouds(0)
        bags = km.Bags.from_list(sets, weights=weights)
        factor, test, t = mean_map_grid(bags, labels, args.train)
        print(f"seed 0, weighted: mean map with the cross-validated gamma "
              f"({factor} x the median rule's): test accuracy {test:.3f}")
        return
    results = {}
    for seed in range(args.seeds):
        sets, weights, labels = point_clouds(seed)
        for kind in ("weighted", "unweighted"):
            bags = km.Bags.from_list(sets, weights=weights if kind == "weighted"
                                     else None)
            found = scores(bags, labels, args.train, seed)
            for q, (whole, median, p99, worst, share) in found.pop(
                    "SW features: error").items():
                print(f"seed {seed}, {kind}: SW features at {q} quantiles, "
                      f"squared distances' relative error {whole:.1e} over "
                      f"the matrix; pair by pair: median {median:.1e}, 99th "
                      f"percentile {p99:.1e}, worst {worst:.1e}; "
                      f"{share:.1%} of pairs within 1e-3", flush=True)
            for name, (acc, t) in found.items():
                results.setdefault((name, kind), []).append((acc, t))
        sizes = [len(s) for s in sets]
        print(f"seed {seed}: points per set {min(sizes)}-{max(sizes)} "
              f"(mean {np.mean(sizes):.0f})", flush=True)
    print("\n| kernel | sets | accuracy (mean +- sd) | time (s) |")
    print("|---|---|---|---|")
    for (name, kind), runs in results.items():
        acc, t = np.array(runs).T
        print(f"| {name} | {kind} | {acc.mean():.3f} +- {acc.std():.3f} | "
              f"{np.median(t):.2f} |")


if __name__ == "__main__":
    main()
