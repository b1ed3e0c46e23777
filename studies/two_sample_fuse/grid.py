"""MMD-FUSE's bandwidth grid: kernelmaps' rule against the authors' (issue
50), without their JAX code: `authors_bandwidths` is the NumPy transcription
of ``compute_bandwidths`` in github.com/antoninschrab/mmdfuse (the
distances between all the pooled points, the upper triangle with its
diagonal, each zero replaced by the median, then the order statistics at
``floor(0.05 len)`` and ``floor(0.95 len)``); kernelmaps leaves the zeros
out. Prints the largest relative difference of the 10 bandwidths of each
kernel at several sizes, and the p-values of ``mmd_test(method="fuse")``
with either grid (one kernel at a time, the same permutations)::

    python -P studies/two_sample_fuse/grid.py
"""

import math
import os
import sys

import numpy as np
from scipy.spatial.distance import cdist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

import kernelmaps as km
from kernelmaps._spec import point_grid

KERNELS = (("laplacian", "cityblock"), ("rbf", "euclidean"))


def authors_bandwidths(Z, metric, count=10):
    D = cdist(Z, Z, metric)
    d = D[np.triu_indices(len(Z))]
    d = d + (d == 0) * np.median(d)
    d = np.sort(d)
    low = d[math.floor(len(d) * 0.05)] / 2
    high = d[math.floor(len(d) * 0.95)] * 2
    return np.linspace(low, high, count)


def gammas(kernel, bandwidths):
    """MMD-FUSE's kernels: exp(-sqrt(2) |x-y|_1 / b), exp(-|x-y|^2 / (2 b^2))."""
    return (math.sqrt(2) / bandwidths if kernel == "laplacian"
            else 0.5 / bandwidths**2)


def main():
    print(machine(), "\n")
    print("| N pooled points | d | kernel | largest relative difference of "
          "the bandwidths |\n|---|---|---|---|")
    for N, d in ((40, 2), (400, 10), (500, 64), (1000, 5)):
        Z = np.random.default_rng(N).normal(size=(N, d))
        for kernel, metric in KERNELS:
            g = point_grid(Z, kernel, 10, "fuse")
            ours = np.sort(math.sqrt(2) / g if kernel == "laplacian"
                           else np.sqrt(0.5 / g))
            theirs = authors_bandwidths(Z, metric)
            print(f"| {N} | {d} | {kernel} | "
                  f"{np.max(np.abs(ours / theirs - 1)):.1e} |")
    equal, total, largest = 0, 0, 0.0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        X, Y = rng.normal(size=(200, 5)), rng.normal(size=(200, 5))
        Y[:, 0] += 0.25 * (seed % 3)
        for kernel, metric in KERNELS:
            g = gammas(kernel, authors_bandwidths(np.concatenate([X, Y]), metric))
            p = km.mmd_test(X, Y, method="fuse", kernel=kernel, rng=seed).pvalue
            q = km.mmd_test(X, Y, method="fuse", kernel=kernel, gamma=g,
                            rng=seed).pvalue
            equal += p == q
            total += 1
            largest = max(largest, abs(p - q))
    print(f"\n200 + 200 points (d = 5, Y shifted by 0, 0.25 or 0.5), B = 2000, "
          f"each kernel alone: {equal} of {total} p-values equal with either "
          f"grid; the largest difference {largest:.2g} "
          f"({round(largest * 2001)} of the 2001 counts).")


if __name__ == "__main__":
    main()
