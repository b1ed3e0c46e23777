"""Issue 41's speed targets for the sliced-Wasserstein tools: the exact
matrix against POT called pair by pair, and the quantile features' Gram
against the exact matrix.

1,000 sets of 50 to 150 standard-normal points (sizes uniform), d = 16,
100 unit directions; unweighted, and with weights uniform in [0.5, 2].
kernelmaps on 2 threads (best of 3; 1 for the weighted matrix); POT
(``ot.sliced_wasserstein_distance``, the same directions, its BLAS on one
thread) timed on 200 random pairs and extrapolated to the 499,500 pairs,
and checked against the matrix on 20 of them. Needs POT.

    python -P studies/sliced_speed/study.py
"""

import os
import sys
import time

import numpy as np
import ot
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)
from benchmarks.sliced import squared_distances

import kernelmaps as km

N_SETS, D, L, POT_PAIRS = 1000, 16, 100, 200


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    print(machine())
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(int(m), D)) for m in rng.integers(50, 151, size=N_SETS)]
    P = rng.normal(size=(L, D))
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    weights = [rng.uniform(0.5, 2.0, size=len(s)) for s in sets]
    first = rng.integers(N_SETS, size=POT_PAIRS)
    pairs = list(zip(first.tolist(),
                     ((first + 1 + rng.integers(N_SETS - 1, size=POT_PAIRS))
                      % N_SETS).tolist(), strict=True))
    n_pairs = N_SETS * (N_SETS - 1) // 2
    PT = np.ascontiguousarray(P.T)  # POT takes (d, L)
    for kind in ("unweighted", "weighted"):
        w = weights if kind == "weighted" else None
        bags = km.Bags.from_list(sets, weights=w)
        exact = best(lambda b=bags: km.sliced_wasserstein(b, projections=P,
                                                          workers=2),
                     3 if w is None else 1)
        D_ = km.sliced_wasserstein(bags, projections=P, workers=2)

        def pot(i, j, w=w):
            a = None if w is None else w[i] / w[i].sum()
            b = None if w is None else w[j] / w[j].sum()
            return ot.sliced_wasserstein_distance(sets[i], sets[j], a, b,
                                                  projections=PT)

        with threadpool_limits(1):
            diff = max(abs(pot(i, j) - D_[i, j]) / D_[i, j] for i, j in pairs[:20])
            start = time.perf_counter()
            for i, j in pairs:
                pot(i, j)
            pot_all = (time.perf_counter() - start) / POT_PAIRS * n_pairs
        fmap = km.SlicedWassersteinFeatures(projections=P, n_quantiles=50)
        features = best(lambda b=bags, f=fmap: f.fit_transform(b, workers=2))
        F = fmap.fit_transform(bags, workers=2)
        gram = best(lambda F=F: squared_distances(F))
        print(f"{kind}: exact {exact:.2f} s; POT pair by pair {pot_all:.0f} s "
              f"(extrapolated): {pot_all / exact:.0f}x; largest relative "
              f"difference from POT {diff:.1e}; features (Q = 50) "
              f"{features:.3f} s, their Gram {gram:.3f} s: exact / Gram "
              f"{exact / gram:.1f}x, exact / (features + Gram) "
              f"{exact / (features + gram):.1f}x", flush=True)


if __name__ == "__main__":
    main()
