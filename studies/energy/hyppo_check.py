"""mmd_test(kernel="energy") against hyppo's Energy statistic.

The unbiased squared MMD of the distance-induced kernel (mmd_test's
statistic) is half the energy distance's U-statistic; hyppo's Energy
(bias=False, its default) is a multiple of it that depends on the sample
sizes n, m (N = n + m) only, derived from hyppo's U-centred distance
covariance:

    hyppo = 2 N^3 (n - 1) (m - 1) / (n m (N - 1) (N - 2) (N - 3)) * MMD_u^2

Run with hyppo installed (it is not a dependency of the project):

    python -P studies/energy/hyppo_check.py
"""

import warnings

import numpy as np
from hyppo.ksample import Energy

import kernelmaps as km


def factor(n, m):
    N = n + m
    return 2 * N**3 * (n - 1) * (m - 1) / (n * m * (N - 1) * (N - 2) * (N - 3))


def main():
    warnings.simplefilter("ignore")  # (9 resamples: the statistic only)
    rng = np.random.default_rng(0)
    worst = 0.0
    sizes = [(30, 40), (40, 30), (30, 30), (7, 11), (50, 23), (4, 5), (200, 150)]
    for n, m in sizes:
        for d in (1, 3, 16):
            for shift in (0.0, 0.5):
                x = rng.normal(size=(n, d))
                y = rng.normal(size=(m, d)) + shift
                ours = km.mmd_test(x, y, kernel="energy", n_resamples=9,
                                   rng=0).statistic * factor(n, m)
                theirs = Energy().statistic(x, y)
                worst = max(worst, abs(ours - theirs) / abs(theirs))
    print(f"{len(sizes) * 6} cases (n, m in {sizes}, d = 1, 3, 16, shift 0 "
          f"and 0.5): largest relative difference {worst:.2e}")
    return 0 if worst < 1e-10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
