"""Which kernel between sets lets SVC(kernel="precomputed") work without
tuning C, as the dimension grows (issue 40's newcomer item).

The getting-started example: sets of 20 to 40 points, class 0 a round
Gaussian, class 1 scaled by 1.25 along the even axes and 0.8 along the
odd ones (at d = 2 the example's data). At
large d the mean map kernel's values crowd together (every pair of points
is about as far apart), and an SVC with a moderate C underfits. Compared,
for C in 1, 10, 1000: the mean map kernel (sum_match_kernel), its cosine
normalisation K(x, y) / sqrt(K(x, x) K(y, y)), the centred kernel
(scikit-learn's KernelCenterer), and the Gaussian MMD kernel mmd_kernel
with gamma2 = 1 / median of the squared MMDs between training sets.

    python -P studies/precomputed_scale/study.py [--dims 2,16,128] [--seeds 5]
"""

import argparse
import platform

import numpy as np
from sklearn.preprocessing import KernelCenterer
from sklearn.svm import SVC

import kernelmaps


def data(d, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=200)
    scale = np.ones(d)
    sets = []
    for y in labels:
        s = scale.copy()
        if y == 1:
            s[0::2], s[1::2] = 1.25, 0.8
        sets.append(rng.normal(size=(rng.integers(20, 41), d)) * s)
    return sets[:150], sets[150:], labels[:150], labels[150:]


def kernels(train, test):
    K = kernelmaps.sum_match_kernel(train + test)
    n = len(train)
    out = {"mean map": (K[:n, :n], K[n:, :n])}
    diag = np.sqrt(np.diag(K))
    C = K / np.outer(diag, diag)
    out["normalised"] = (C[:n, :n], C[n:, :n])
    centerer = KernelCenterer().fit(K[:n, :n])
    out["centred"] = (centerer.transform(K[:n, :n]), centerer.transform(K[n:, :n]))
    D2 = np.maximum(diag[:, None] ** 2 + diag[None, :] ** 2 - 2 * K, 0)
    train_d2 = D2[:n, :n][np.triu_indices(n, 1)]
    gamma2 = 1.0 / np.median(train_d2)
    out["mmd_kernel, gamma2 median"] = (np.exp(-gamma2 * D2[:n, :n]),
                                        np.exp(-gamma2 * D2[n:, :n]))
    spread = {k: float(np.ptp(v[0][np.triu_indices(n, 1)])) for k, v in out.items()}
    return out, spread


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", default="2,16,128")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print(f"CPU: {platform.processor() or platform.machine()}")
    Cs = (1, 10, 1000)
    for d in map(int, args.dims.split(",")):
        scores, spreads = {}, {}
        for seed in range(args.seeds):
            train, test, y_train, y_test = data(d, seed)
            ks, spread = kernels(train, test)
            for name, (Ktr, Kte) in ks.items():
                spreads.setdefault(name, []).append(spread[name])
                for C in Cs:
                    svm = SVC(kernel="precomputed", C=C).fit(Ktr, y_train)
                    scores.setdefault((name, C), []).append(svm.score(Kte, y_test))
        print(f"\nd = {d}, {args.seeds} seeds: test accuracy (mean) for C = "
              f"{', '.join(map(str, Cs))}; spread of the training values")
        for name in spreads:
            row = "  ".join(f"{np.mean(scores[name, C]):.2f}" for C in Cs)
            print(f"  {name:28s} {row}   spread {np.mean(spreads[name]):.3g}")


if __name__ == "__main__":
    main()
