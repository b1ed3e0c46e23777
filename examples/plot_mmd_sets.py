"""
===========================================
Maximum mean discrepancy between point sets
===========================================

This example compares sets of points by the distance between their kernel mean
embeddings, the maximum mean discrepancy (MMD) [1]_. We draw sets of points
from four distributions in two dimensions that all have mean zero and identity
covariance, so that no comparison of means or variances can tell them apart:
only the shape of the distributions differs. With a Gaussian point kernel the
MMD is a metric between distributions, and it sees these differences.

We then look at how the MMD between two samples of the *same* distribution
shrinks as the samples grow: the biased estimator computed by
:func:`kernelmaps.mmd` decays as :math:`O(1/\\sqrt{n})`, while the MMD between
two different distributions levels off at its population value.

.. [1] A. Gretton, K. Borgwardt, M. Rasch, B. Schoelkopf and A. Smola,
   "A Kernel Two-Sample Test", JMLR 13, 2012.
"""

# %%
# Sets from four distributions with the same mean and covariance
# ---------------------------------------------------------------
# Every coordinate has mean 0 and variance 1: a standard Gaussian, a uniform
# on :math:`[-\sqrt{3}, \sqrt{3}]`, a Laplace of scale :math:`1/\sqrt{2}`,
# and an equal mixture of two Gaussians centred at :math:`(\pm 0.9, 0)` with
# covariance :math:`\mathrm{diag}(0.19, 1)`.

import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

import kernelmaps

rng = np.random.default_rng(0)
dim = 2


def gaussian(n):
    return rng.standard_normal((n, dim))


def uniform(n):
    return rng.uniform(-np.sqrt(3), np.sqrt(3), size=(n, dim))


def laplace(n):
    return rng.laplace(scale=1 / np.sqrt(2), size=(n, dim))


def mixture(n):
    centre = 0.9
    points = rng.standard_normal((n, dim))
    points[:, 0] *= np.sqrt(1 - centre**2)
    points[:, 0] += rng.choice([-centre, centre], size=n)
    return points


distributions = {
    "Gaussian": gaussian,
    "uniform": uniform,
    "Laplace": laplace,
    "mixture": mixture,
}

n_sets, set_size = 40, 100
sets = [draw(set_size) for draw in distributions.values() for _ in range(n_sets)]
labels = np.repeat(np.arange(len(distributions)), n_sets)
bags = kernelmaps.Bags.from_list(sets)
print(bags)

fig, axes = plt.subplots(
    1,
    len(distributions),
    figsize=(10, 3.2),
    sharex=True,
    sharey=True,
    layout="constrained",
)
for ax, (name, draw) in zip(axes, distributions.items(), strict=True):
    points = draw(1000)
    ax.scatter(points[:, 0], points[:, 1], s=3, alpha=0.5)
    ax.set_title(name)
    ax.set_aspect("equal")
axes[0].set_xlim(-4, 4)
axes[0].set_ylim(-4, 4)
fig.suptitle("1000 points of each distribution (mean 0, covariance I)")
plt.show()

# %%
# MMD and MMD kernel between all sets
# -----------------------------------
# The bandwidth of the Gaussian point kernel
# :math:`k(x, y) = \exp(-\gamma \|x - y\|^2)` is set by the median heuristic:
# :math:`\gamma` is the inverse of the median squared distance between the
# pooled points. With ``Y=None``, :func:`kernelmaps.mmd` returns the symmetric
# matrix of MMDs between all pairs of sets, each pair computed once.
# :func:`kernelmaps.mmd_kernel` turns the same quantity into a positive
# definite kernel :math:`\exp(-\gamma_2 \, \mathrm{MMD}^2)`, ready for a
# kernel SVM or kernel ridge regression; here :math:`\gamma_2` is the inverse
# of the median squared MMD, the median heuristic one level up.

gamma = kernelmaps.median_heuristic(bags, rng=0)
print(f"gamma = {gamma:.3f}")

start = time.perf_counter()
D = kernelmaps.mmd(bags, gamma=gamma)
print(
    f"MMD between {len(bags)} sets of {set_size} points: "
    f"{time.perf_counter() - start:.2f} s"
)

gamma2 = 1 / np.median(D[np.triu_indices_from(D, k=1)] ** 2)
K = kernelmaps.mmd_kernel(bags, gamma=gamma, gamma2=gamma2)

names = list(distributions)
for i, name in enumerate(names):
    within = D[np.ix_(labels == i, labels == i)][np.triu_indices(n_sets, k=1)]
    others = ", ".join(
        f"{other} {D[np.ix_(labels == i, labels == j)].mean():.3f}"
        for j, other in enumerate(names)
        if j != i
    )
    print(f"{name:>8}: within {within.mean():.3f}; to {others}")

# %%
# Both matrices are ordered by distribution, so sets of the same distribution
# form the diagonal blocks. The MMD between two sets of the same distribution
# is not zero: it is the sampling noise of sets of 100 points. The peaked,
# heavy-tailed Laplace sets stand out from all the others, farthest from the
# flat uniform and the bimodal mixture; the uniform and the mixture sets, both
# flatter than a Gaussian in the middle, are the hardest to tell apart.

ticks = (np.arange(len(names)) + 0.5) * n_sets
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
for ax, matrix, title, cmap in [
    (axes[0], D, "MMD", "viridis"),
    (axes[1], K, rf"MMD kernel, $\gamma_2 = {gamma2:.1f}$", "magma"),
]:
    image = ax.imshow(matrix, cmap=cmap, interpolation="nearest")
    ax.set_xticks(ticks, names)
    ax.set_yticks(ticks, names, rotation=90, va="center")
    ax.tick_params(length=0)
    for edge in np.arange(1, len(names)) * n_sets - 0.5:
        ax.axhline(edge, color="white", linewidth=0.8)
        ax.axvline(edge, color="white", linewidth=0.8)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
fig.suptitle(f"{len(bags)} sets of {set_size} points, ordered by distribution")
plt.show()

# %%
# MMD between two samples against the sample size
# -----------------------------------------------
# For two independent samples of size :math:`n` of the same distribution, the
# biased (V-statistic) MMD is a positive bias whose expectation decays as
# :math:`1/\sqrt{n}`. For two different distributions it converges to the
# population MMD instead, which is what makes the MMD a two-sample test: the
# gap between the two curves widens as :math:`n` grows. Each point below is
# the mean over a few repetitions.
#
# With ``X=[a]`` and ``Y=[b, c]``, :func:`kernelmaps.mmd` returns a ``(1, 2)``
# matrix: the MMD from the Gaussian sample ``a`` to a second Gaussian sample
# ``b`` and to a Laplace sample ``c``.

sizes = np.unique(np.geomspace(10, 1500, num=10).astype(int))
n_repeats = 8
same = np.empty((len(sizes), n_repeats))
different = np.empty((len(sizes), n_repeats))
for i, n in enumerate(sizes):
    for r in range(n_repeats):
        a, b, c = gaussian(n), gaussian(n), laplace(n)
        same[i, r], different[i, r] = kernelmaps.mmd([a], [b, c], gamma=gamma)[0]

# %%
# On log-log axes a :math:`1/\sqrt{n}` decay is a straight line of slope
# :math:`-1/2`; the dashed reference line is anchored at the smallest sample
# size.

fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
for values, label, marker in [
    (same, "Gaussian vs. Gaussian", "o"),
    (different, "Gaussian vs. Laplace", "s"),
]:
    mean, std = values.mean(axis=1), values.std(axis=1)
    ax.errorbar(sizes, mean, yerr=std, marker=marker, capsize=3, label=label)
reference = same[0].mean() * np.sqrt(sizes[0] / sizes)
ax.plot(
    sizes, reference, "k--", linewidth=1, label=r"slope $-1/2$: $\propto 1/\sqrt{n}$"
)
ax.set_xscale("log")
ax.set_yscale("log")
y_ticks = [0.02, 0.05, 0.1, 0.2, 0.5]
ax.set_yticks(y_ticks, [f"{y:g}" for y in y_ticks])
ax.yaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel("sample size $n$ (points per set)")
ax.set_ylabel("biased MMD")
ax.set_title(f"MMD between two samples of size $n$ (mean ± std of {n_repeats})")
ax.legend()
ax.grid(True, which="both", alpha=0.3)
plt.show()
