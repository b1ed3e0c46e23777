"""
=====================================================
Which two-sample test for which sample size
=====================================================

:func:`kernelmaps.mmd_test` has tests of three costs: the *quadratic* ones
resample the statistic of the exact kernel (``"permutation"``,
``"wild_bootstrap"``, ``"aggregated"``, ``"fuse"``), in time growing as
:math:`N^2` for :math:`N` pooled points; the *cross* test computes a quarter
of the kernel matrix once, with a normal null; the *linear-time* ones
(``"linear"``, the permutation test on explicit features,
``feature_map=1000``, and MMDAggInc, ``method="aggregated",
incomplete=200``) grow as :math:`N`. Which to use depends on how many
points there are and how long one can wait: a test's worth is its power
for the time it takes.

This example draws that picture from the study in
``studies/which_test/`` (its numbers are copied below; the study itself
runs for some 40 minutes): every method of :func:`kernelmaps.mmd_test` and
two released peers, MMDAggInc (the authors' ``agginc``, NumPy) and Compress
Then Test (``goodpoints``), on two samples of :math:`n = m` points in
:math:`d = 64` dimensions, the second shifted by 0.1 along one axis; each
point is the rejection rate at :math:`\\alpha = 0.05` over 10 repetitions
(5 for the slowest, 1 at :math:`10^5` and :math:`10^6` points) at one
sample size, against the median time of one test on 2 cores.
"""

# %%
# The measurements
# ----------------
# ``RESULTS[method]`` lists ``(n, median seconds, power)`` at each sample
# size the study ran (``python -P studies/which_test/study.py --report``
# prints them as tables).

import matplotlib.pyplot as plt

RESULTS = {
    'permutation': [
        (1000, 0.197, 0.0),
        (2000, 0.5, 0.2),
        (5000, 2.57, 0.4),
    ],
    'wild_bootstrap': [
        (1000, 0.085, 0.1),
        (2000, 0.249, 0.1),
        (5000, 1.009, 0.5),
        (10000, 3.982, 1.0),
    ],
    'aggregated': [
        (1000, 1.995, 0.0),
        (2000, 9.629, 0.2),
    ],
    'aggregated, incomplete=200': [
        (1000, 1.194, 0.1),
        (2000, 2.592, 0.1),
        (100000, 74.87, 1.0),
    ],
    'fuse': [
        (1000, 2.714, 0.0),
        (2000, 9.117, 0.2),
    ],
    'cross': [
        (1000, 0.035, 0.1),
        (2000, 0.065, 0.0),
        (5000, 0.26, 0.2),
        (10000, 0.825, 0.8),
        (20000, 3.216, 1.0),
    ],
    'linear': [
        (1000, 0.04, 0.0),
        (2000, 0.072, 0.0),
        (5000, 0.416, 0.4),
        (10000, 0.697, 1.0),
        (20000, 1.556, 1.0),
        (50000, 8.479, 1.0),
        (100000, 7.712, 1.0),
        (1000000, 23.39, 1.0),
    ],
    'permutation, feature_map=1000': [
        (1000, 0.284, 0.2),
        (2000, 0.421, 0.1),
        (5000, 0.69, 0.4),
        (10000, 1.085, 1.0),
        (20000, 3.726, 1.0),
        (100000, 10.114, 1.0),
        (1000000, 84.425, 1.0),
    ],
    'agginc (MMDAggInc)': [
        (1000, 4.618, 0.0),
        (2000, 9.021, 0.2),
        (5000, 18.878, 0.0),
    ],
    'goodpoints CTT': [
        (1000, 0.053, 0.1),
        (2000, 0.099, 0.2),
        (5000, 0.265, 0.3),
        (10000, 0.252, 0.2),
        (20000, 1.173, 0.7),
        (50000, 1.216, 0.9),
        (100000, 4.317, 1.0),
        (1000000, 22.407, 1.0),
    ],
}

# %%
# Power against time
# ------------------
# A test to the left reaches the same power sooner. On this alternative (a
# shift of the mean, which random features see well) the linear-time tests
# win: the linear test and the permutation test on 1000 random features
# reach full power at 10,000 points per sample in about a second, the
# cross test a little later, Compress Then Test at 50,000 points; the
# quadratic tests are limited by their time (the wild bootstrap, a quarter
# of the permutation test's products, first). The aggregated tests
# (MMDAgg, MMD-FUSE, MMDAggInc and the authors' ``agginc``) pay for their
# 20 kernels with time; that buys power where no single bandwidth is good
# for the difference, not here, where the median heuristic is. Their
# incomplete form is linear in n: 75 s at 10^5 points per sample.

fig, ax = plt.subplots(figsize=(8, 5.5))
markers = "osD^v<>phX"
for (name, rows), marker in zip(RESULTS.items(), markers, strict=True):
    rows = sorted(rows)
    ax.plot([t for _, t, _ in rows], [p for _, _, p in rows], marker=marker,
            linestyle="-", label=name)
ax.set_xscale("log")
ax.set_xlabel("median time of one test (s, 2 cores)")
ax.set_ylabel("power at alpha = 0.05")
ax.set_title("n = m from 1000 (left end of each line) upwards")
ax.legend(fontsize=10, loc="center left", bbox_to_anchor=(1.0, 0.5))
fig.tight_layout()
plt.show()
