"""Demo: ``python -m kernelmaps [--quick] [--n-sets N] [--n-points n] ...``

Generates sets of points from several distributions with the same mean and
variance, computes the exact set kernels with kernelmaps and the plain NumPy
way, checks they agree and prints the timings, then shows that the MMD tells
the distributions apart, and the random distribution features (RDF) whose
inner products approximate the mean map kernel; last, the kNN Renyi
divergences between the sets,
against a cKDTree computation, and the kernel made from them, projected onto
the positive semi-definite cone; then, on generated bag-of-words
histograms, the exact chi2 kernels against NumPy and their explicit feature
maps, with their errors and timings.
"""

import argparse
import sys
import time

import numpy as np
import scipy.sparse

import kernelmaps
from kernelmaps import (
    AnchorMap,
    Bags,
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
    RandomDistributionFeatures,
    additive_chi2_kernel,
    divergence_kernel,
    exp_chi2_kernel,
    median_heuristic,
    mmd,
    mmd_kernel,
    project_psd,
    renyi_divergence,
    sum_match_kernel,
)
from kernelmaps._data import bag_of_words
from kernelmaps._naive import (
    blocked_additive_chi2_kernel,
    blocked_sum_match_kernel,
    kdtree_renyi_divergence,
    pairwise_sum_match_kernel,
)

# Zero mean and unit variance per feature: only the shape differs.
DISTRIBUTIONS = {
    "gaussian": lambda rng, size: rng.normal(size=size),
    "uniform": lambda rng, size: rng.uniform(-np.sqrt(3), np.sqrt(3), size=size),
    "laplace": lambda rng, size: rng.laplace(scale=np.sqrt(0.5), size=size),
    "mixture": lambda rng, size: (
        rng.choice([-0.9, 0.9], size=size) + np.sqrt(1 - 0.81) * rng.normal(size=size)
    ),
}


def make_sets(n_sets, n_points, dim, rng):
    """`n_sets` sets of each distribution, with `n_points` points +- 50 %."""
    sets, labels = [], []
    for label, draw in DISTRIBUTIONS.items():
        for _ in range(n_sets):
            n = int(rng.integers(n_points // 2, n_points * 3 // 2 + 1))
            sets.append(draw(rng, (n, dim)))
            labels.append(label)
    return sets, np.array(labels)


def timed(f, *args, **kwargs):
    start = time.perf_counter()
    result = f(*args, **kwargs)
    return result, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kernelmaps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-sets", type=int, default=30, help="sets per distribution")
    parser.add_argument("--n-points", type=int, default=200, help="points per set")
    parser.add_argument("--dim", type=int, default=5, help="features per point")
    parser.add_argument("--workers", type=int, default=None, help="threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_sets, args.n_points = 8, 40

    rng = np.random.default_rng(args.seed)
    sets, labels = make_sets(args.n_sets, args.n_points, args.dim, rng)
    bags = Bags.from_list(sets)
    gamma = median_heuristic(bags, rng=args.seed)
    print(f"kernelmaps {kernelmaps.__version__}: exact kernels between sets of vectors")
    print(f"data: {len(bags)} sets ({args.n_sets} per distribution: "
          f"{', '.join(DISTRIBUTIONS)}), {bags.n_points} points in d={args.dim}")
    print(f"gamma from the median heuristic: {gamma:.4g}\n")

    print(f"{'mean map kernel':<24}{'time':>10}{'speed-up':>11}{'max |diff|':>13}")
    for dtype in (np.float64, np.float32):
        typed = [s.astype(dtype) for s in sets]
        K, t = timed(sum_match_kernel, Bags.from_list(typed), gamma=gamma,
                     workers=args.workers)
        print(f"  kernelmaps, {dtype.__name__:<11}{t:>9.3f}s")
        for name, naive in [("numpy, blocked", blocked_sum_match_kernel),
                            ("numpy, cdist per pair", pairwise_sum_match_kernel)]:
            R, t_naive = timed(naive, typed, gamma)
            print(f"  {name:<22}{t_naive:>9.3f}s{t_naive / t:>10.1f}x"
                  f"{np.abs(K - R).max():>13.1e}")
    print()

    D, t_mmd = timed(mmd, bags, gamma=gamma, workers=args.workers)
    G, t_kernel = timed(mmd_kernel, bags, gamma=gamma, gamma2=1.0 / np.median(D) ** 2,
                        workers=args.workers)
    K = blocked_sum_match_kernel(sets, gamma)
    D_naive = np.sqrt(np.maximum(np.diag(K)[:, None] + np.diag(K) - 2 * K, 0))
    diff = np.abs(D - D_naive).max()
    print(f"mmd        {t_mmd:.3f}s  max |diff| vs numpy {diff:.1e}")
    print(f"mmd_kernel {t_kernel:.3f}s  PSD: min eigenvalue "
          f"{np.linalg.eigvalsh(G).min():.1e}\n")

    # The median heuristic is a start; shapes differ at shorter range.
    print("1-nearest-neighbour accuracy of the distribution label under MMD:")
    best = (-1.0, None, None)
    for factor in (1, 4, 16):
        D, t = timed(mmd, bags, gamma=factor * gamma, workers=args.workers)
        accuracy = nearest_neighbour_accuracy(D, labels)
        print(f"  gamma = {factor:>2} x median heuristic: {accuracy:6.1%} ({t:.3f}s)")
        best = max(best, (accuracy, factor, D), key=lambda b: b[0])
    _, factor, D = best

    names = list(DISTRIBUTIONS)
    print(f"\nmean MMD between the sets of two distributions (gamma = {factor} x "
          "median; diagonal: different sets of one distribution)")
    print(" " * 10 + "".join(f"{n:>10}" for n in names))
    for a in names:
        row = []
        for b in names:
            block = D[np.ix_(labels == a, labels == b)]
            if a == b:
                block = block[~np.eye(len(block), dtype=bool)]
            row.append(block.mean())
        print(f"{a:<10}" + "".join(f"{v:>10.4f}" for v in row))

    distribution_features(bags, labels, factor * gamma, args.workers)
    divergences(bags, labels, args.workers)
    histograms(400 if args.quick else 2000, args.workers)
    return 0


def nearest_neighbour_accuracy(D, labels):
    """1-NN accuracy of the labels under a matrix of dissimilarities."""
    nearest = np.argmin(D + np.diag(np.full(len(D), np.inf)), axis=1)
    return np.mean(labels[nearest] == labels)


def distribution_features(bags, labels, gamma, workers):
    """Random distribution features (RDF) against the exact mean map kernel."""
    K, t_exact = timed(sum_match_kernel, bags, gamma=gamma, workers=workers)
    D = mmd(bags, gamma=gamma, workers=workers)
    print(f"\nrandom distribution features (RDF) vs the exact mean map kernel "
          f"({t_exact:.3f}s), gamma = {gamma:.4g}:")
    print(f"  {'features':>8}{'RDF + Gram':>12}{'speed-up':>10}{'max |diff|':>12}"
          f"{'mean |diff|':>13}{'1-NN accuracy':>15}")
    for t in (250, 1000, 4000):
        rdf = RandomDistributionFeatures(bags.dim, t, gamma=gamma, rng=0)
        start = time.perf_counter()
        F = rdf.transform(bags, workers=workers)
        G = F @ F.T
        elapsed = time.perf_counter() - start
        E = np.abs(G - K)
        dist = np.sqrt(np.maximum(np.diag(G)[:, None] + np.diag(G) - 2 * G, 0))
        print(f"  {t:>8}{elapsed:>11.3f}s{t_exact / elapsed:>9.1f}x{E.max():>12.1e}"
              f"{E.mean():>13.1e}{nearest_neighbour_accuracy(dist, labels):>15.1%}")
    print(f"  {'exact':>8}{t_exact:>11.3f}s{'':>10}{'':>12}{'':>13}"
          f"{nearest_neighbour_accuracy(D, labels):>15.1%}")


def divergences(bags, labels, workers):
    """The NPKL baseline: kNN Renyi divergences, their kernel, PSD."""
    D, t = timed(renyi_divergence, bags, alpha=0.99, k=5, workers=workers)
    R, t_tree = timed(kdtree_renyi_divergence, bags, alpha=0.99, k=5,
                      workers=-1 if workers is None else workers)
    print(f"\nkNN Renyi divergence (alpha=0.99, k=5), {len(bags)} x {len(bags)}:")
    print(f"  kernelmaps {t:.3f}s, cKDTree + NumPy {t_tree:.3f}s: "
          f"{t_tree / t:.1f}x; max |diff| {np.abs(D - R).max():.1e}")
    S = (D + D.T) / 2
    print(f"  1-nearest-neighbour accuracy under (D + D^T) / 2: "
          f"{nearest_neighbour_accuracy(S, labels):.1%}")
    K = divergence_kernel(D)
    w = np.linalg.eigvalsh(K)
    P, t_psd = timed(project_psd, K)
    print(f"  divergence_kernel: {np.count_nonzero(w < 0)} negative eigenvalues "
          f"(smallest {w[0]:.3f}, largest {w[-1]:.3f})")
    print(f"  project_psd (clip) {t_psd:.3f}s: smallest eigenvalue "
          f"{np.linalg.eigvalsh(P)[0]:.1e}, relative change "
          f"{np.linalg.norm(P - K) / np.linalg.norm(K):.1%}")



def histograms(n, workers):
    """Exact chi2 kernels vs NumPy, and the maps' errors, on histograms."""
    X = bag_of_words(n)
    sparse = scipy.sparse.csr_matrix(X)
    print(f"\nhistograms: {n} bag-of-words histograms of 300 words "
          f"({sparse.nnz / X.size:.1%} non-zero, L1-normalised)")
    K, t = timed(additive_chi2_kernel, X, workers=workers)
    _, t_sparse = timed(additive_chi2_kernel, sparse, workers=workers)
    print(f"  additive_chi2_kernel, {n} x {n}: {t:.3f}s dense, {t_sparse:.3f}s CSR")
    # NumPy is slow: compare on the first rows only.
    rows = X[: n // 10]
    S, t = timed(additive_chi2_kernel, rows, X, workers=workers)
    R, t_numpy = timed(blocked_additive_chi2_kernel, rows, X)
    print(f"  {len(rows)} x {n}: kernelmaps {t:.3f}s, numpy {t_numpy:.3f}s "
          f"({t_numpy / t:.0f}x); max |diff| {np.abs(S - R).max():.1e}")
    print(f"  {'map, 5 features per word':<30}{'transform':>10}"
          f"{'max |error|':>13}{'mean |error|':>14}")
    maps = [("Chi2DirectMap (fitted)", Chi2DirectMap.fit(X, 5)),
            ("Chi2ChebyshevMap (fitted)", Chi2ChebyshevMap.fit(X, 5)),
            ("HomogeneousKernelMap (VZ)", HomogeneousKernelMap("chi2", 2)),
            ("AnchorMap, 50 anchors (*)", AnchorMap.fit(X, "chi2", 50)),
            ("AnchorMap, interpolated (*)",
             AnchorMap.fit(X, "chi2", 50, n_neighbors=2, weights="distance"))]
    for name, chi2_map in maps:
        Z, t = timed(chi2_map.transform, sparse, workers=workers)
        E = np.abs((Z @ Z.T).toarray() - K)
        print(f"  {name:<30}{t:>9.3f}s{E.max():>13.1e}{E.mean():>14.1e}")
    print("  (*) 99 % of the anchor kernel's spectrum: about 2 features per word,"
          " or a uint8 code")
    features = ExpChi2Features.fit(X, 2000, beta=1.0, rng=0)
    Z, t = timed(features.transform, sparse, workers=workers)
    E = np.abs(Z @ Z.T - exp_chi2_kernel(X, beta=1.0, workers=workers))
    print(f"  {'ExpChi2Features (t=2000)':<30}{t:>9.3f}s{E.max():>13.1e}"
          f"{E.mean():>14.1e}  (exp-chi2 kernel)")


if __name__ == "__main__":
    sys.exit(main())
