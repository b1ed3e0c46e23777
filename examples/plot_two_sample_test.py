"""
=====================================================
Kernel two-sample tests: level, power and cost
=====================================================

A *two-sample test* asks whether two samples of points, :math:`X = \\{x_1,
\\dots, x_n\\}` drawn from a distribution :math:`P` and :math:`Y = \\{y_1,
\\dots, y_m\\}` drawn from :math:`Q`, could come from the same distribution:
it tests the null hypothesis :math:`H_0: P = Q` against :math:`P \\ne Q`.
:func:`kernelmaps.mmd_test` takes as its statistic the unbiased estimate of
the squared maximum mean discrepancy [1]_,

.. math::

    \\widehat{\\mathrm{MMD}}{}^2_u = \\frac{1}{n(n-1)} \\sum_{a \\ne a'}
    k(x_a, x_{a'}) + \\frac{1}{m(m-1)} \\sum_{b \\ne b'} k(y_b, y_{b'})
    - \\frac{2}{nm} \\sum_{a, b} k(x_a, y_b),

which is close to 0 when :math:`P = Q` and grows with the difference between
the distributions; with a Gaussian kernel :math:`k(x, y) = \\exp(-\\gamma
\\|x - y\\|^2)` every difference counts, not only of means and covariances.

How large must the statistic be to reject :math:`H_0`? The *p-value*
answers: it is the probability, were :math:`H_0` true, of a statistic at
least as large as the one observed. A test at level :math:`\\alpha` rejects
when :math:`p \\le \\alpha`, so that it wrongly rejects a true null in at
most a fraction :math:`\\alpha` of the experiments. Its *power* is how often
it rejects a false null.

This example shows what each method of :func:`kernelmaps.mmd_test` gives:
a level that holds at every sample size (section 2), the power against
three kinds of difference (section 3), and the cost of a test, in units of
one MMD (section 4).

.. [1] A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schoelkopf and A. Smola,
   "A kernel two-sample test", JMLR 13, pp. 723-773, 2012.
.. [2] A. Gretton, B. Sriperumbudur, D. Sejdinovic, H. Strathmann,
   S. Balakrishnan, M. Pontil and K. Fukumizu, "Optimal kernel choice for
   large-scale two-sample tests", NIPS 2012.
.. [3] K. Chwialkowski, D. Sejdinovic and A. Gretton, "A wild bootstrap for
   degenerate kernel tests", NIPS 2014.
.. [4] A. Schrab, I. Kim, M. Albert, B. Laurent, B. Guedj and A. Gretton,
   "MMD aggregated two-sample test", JMLR 24(194), pp. 1-81, 2023.
.. [5] A. Gretton, K. Fukumizu, Z. Harchaoui and B. K. Sriperumbudur, "A
   fast, consistent kernel two-sample test", NIPS 2009.
.. [6] J. Zhao and D. Meng, "FastMMD: ensemble of circular discrepancy for
   efficient two-sample test", Neural Computation 27(6), pp. 1345-1372,
   2015.
"""

# %%
# 1. One test, and its p-value
# ----------------------------
# The distribution of the statistic under :math:`H_0` depends on the unknown
# :math:`P`, but the test can draw from it: if :math:`P = Q`, the labels
# "from X" and "from Y" are arbitrary, and any split of the pooled
# :math:`n + m` points into samples of sizes :math:`n` and :math:`m` is as
# likely as the observed one. The permutation test computes the statistic on
# :math:`B` random splits (``n_resamples``, 999 by default) and counts those
# at least as large as the observed statistic :math:`t`,
#
# .. math::
#
#     p = \frac{1 + \#\{b : t_b \ge t\}}{1 + B}.
#
# The observed split is one of the :math:`B + 1` equally likely ones: under
# :math:`H_0` its rank among them is uniform, so :math:`P(p \le \alpha) \le
# \alpha` for every sample size and every :math:`P`, not only
# asymptotically: the test is exact. Leaving the observed statistic out
# (:math:`\# / B`, a common mistake) makes :math:`p = 0` possible and the
# test rejects a true null too often. The kernel matrix of the pooled points
# is computed once; all the resampled statistics come from it by matrix
# products.
#
# Below, :math:`X` and :math:`Y` have 100 points of a standard Gaussian in
# two dimensions, and :math:`Y` is either from the same Gaussian or from one
# whose mean is shifted by 0.5 along the first axis. The histograms are the
# 999 resampled statistics (``null_distribution``); the p-value is the
# fraction of them to the right of the observed statistic (counting the
# observed one too).

import itertools
import math
import timeit
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter

import kernelmaps

rng = np.random.default_rng(0)
X = rng.standard_normal((100, 2))
shift = np.array([0.5, 0.0])
samples = {
    "same distribution": rng.standard_normal((100, 2)),
    "mean shifted by 0.5": rng.standard_normal((100, 2)) + shift,
}

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True,
                         layout="constrained")
for ax, (name, Y) in zip(axes, samples.items(), strict=True):
    result = kernelmaps.mmd_test(X, Y, rng=0)
    print(f"{name}: {result}")
    ax.hist(result.null_distribution, bins=40, color="C0", alpha=0.7,
            label="999 permutations")
    ax.axvline(result.statistic, color="C3", lw=2, label="observed")
    ax.set_title(f"{name}: p = {result.pvalue:.3f}")
    ax.set_xlabel(r"$\widehat{\mathrm{MMD}}{}^2_u$")
    ax.legend(loc="upper right")
axes[0].set_ylabel("number of permutations")
plt.show()

# %%
# 2. The level: p-values under the null are uniform
# -------------------------------------------------
# We repeat the test 200 times on two samples of 30 points each from the
# same skewed, heavy-tailed distribution (a log-normal in two dimensions;
# nothing here is Gaussian), with each of the four methods:
#
# - ``"permutation"``: the test above;
# - ``"wild_bootstrap"`` [3]_: samples of equal size only; it pairs
#   :math:`x_i` with :math:`y_i` and swaps the points of random pairs (a
#   random sign per pair), which is again exact, on an :math:`n \times n`
#   matrix instead of :math:`2n \times 2n`;
# - ``"aggregated"`` (MMDAgg [4]_): the tests of 20 kernels (Gaussian and
#   Laplace, 10 bandwidths each, from half the 5 % quantile of the distances
#   between the points to twice the largest), each run at a level
#   corrected, by resampling, so that the test that rejects when any of them
#   rejects has level :math:`\alpha`;
# - ``"linear"`` [5]_ [6]_: the squared distance between the samples' mean
#   random Fourier features (100 of them here), against its asymptotic null
#   distribution (a sum of chi-squares weighted by the eigenvalues of the
#   features' covariance): no resampling, a cost linear in the number of
#   points.
#
# If the p-values are uniform, the fraction of them at most :math:`\alpha`,
# which is the rate at which the test rejects at level :math:`\alpha`, is
# :math:`\alpha` itself: the curves below follow the diagonal. The grey band
# is where the empirical distribution function of 200 uniform p-values stays
# with probability 0.95 (the Dvoretzky-Kiefer-Wolfowitz bound). The
# resampling tests use 199 resamples here (``(199, 199)`` for the
# aggregated test), so their p-values are multiples of 1/200.

METHODS = ("permutation", "wild_bootstrap", "aggregated", "linear")


def run_test(X, Y, method, seed):
    """`mmd_test` with few resamples (199; 199 + 199 for MMDAgg), on one
    thread: a second one does not pay on samples this small."""
    n_resamples = {"linear": None, "aggregated": (199, 199)}.get(method, 199)
    return kernelmaps.mmd_test(X, Y, method=method, n_resamples=n_resamples,
                               rng=seed, workers=1)


n_null, null_size = 200, 30
pvalues = {method: np.empty(n_null) for method in METHODS}
for r in range(n_null):
    X_null = rng.lognormal(size=(null_size, 2))
    Y_null = rng.lognormal(size=(null_size, 2))
    for method in METHODS:
        pvalues[method][r] = run_test(X_null, Y_null, method, r).pvalue

levels = np.linspace(0, 1, 201)
band = math.sqrt(math.log(2 / 0.05) / (2 * n_null))
fig, axes = plt.subplots(1, len(METHODS), figsize=(11, 3.6), sharex=True,
                         sharey=True, layout="constrained")
for ax, method in zip(axes, METHODS, strict=True):
    p = np.sort(pvalues[method])
    rate = np.mean(p <= 0.05)
    print(f"{method:>15}: rejects {rate:.3f} of the time at alpha = 0.05")
    ax.fill_between(levels, levels - band, levels + band, color="0.85",
                    label="95 % band")
    ax.plot(levels, levels, "k--", lw=1)
    ax.step(p, np.arange(1, n_null + 1) / n_null, where="post", color="C0",
            label="p-values")
    ax.set_title(f"{method.replace('_', ' ')}\n{rate:.1%} below 0.05")
    ax.set_xlabel(r"level $\alpha$")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
axes[0].set_ylabel(r"fraction of p-values $\leq \alpha$")
axes[0].legend(loc="upper left")
fig.suptitle(f"Under the null, every method rejects at the rate it should "
             f"({n_null} tests, n = m = {null_size})")
plt.show()

# %%
# 3. Power against the sample size
# --------------------------------
# Three alternatives in which :math:`P \ne Q`, harder and harder for a
# kernel whose bandwidth is the median distance between the points (what
# ``gamma=None`` means for the single-kernel tests):
#
# - **mean shift**: :math:`N(0, I)` against :math:`N(0.5\, e_1, I)` in two
#   dimensions;
# - **Gaussian vs. Laplace**: a standard Gaussian against independent
#   Laplace coordinates of scale :math:`1/\sqrt{2}` in five dimensions, with
#   the same mean and covariance: only the shape (the tails) differs;
# - **blobs** [2]_: a 3 x 3 grid of Gaussian blobs 10 apart in the plane;
#   in :math:`X` each blob is a standard Gaussian, in :math:`Y` its
#   covariance has eigenvalues in the ratio 16 (the same trace) and is
#   rotated by 45 degrees. The mean and the covariance of the whole are
#   again the same; the difference is at the scale of a blob, ten times
#   smaller than the distances between most points.
#
# The figure shows 300 points of each sample (the first two coordinates).


def mean_shift(n, alternative):
    """X and Y of `n` points each, Y shifted if `alternative`."""
    X = rng.standard_normal((n, 2))
    Y = rng.standard_normal((n, 2))
    if alternative:
        Y[:, 0] += 0.5
    return X, Y


def gauss_laplace(n, alternative, dim=5):
    """X Gaussian and Y Laplace (if `alternative`, else Gaussian), with
    independent coordinates of mean 0 and variance 1."""
    X = rng.standard_normal((n, dim))
    Y = (rng.laplace(scale=1 / np.sqrt(2), size=(n, dim)) if alternative
         else rng.standard_normal((n, dim)))
    return X, Y


def blobs(n, alternative, grid=3, spacing=10.0, ratio=16.0):
    """Gretton et al.'s blobs: points at the nodes of a `grid` x `grid`
    lattice `spacing` apart, plus Gaussian noise, isotropic in X; in Y of
    eigenvalues ``1 + c`` and ``1 - c`` along the diagonals, whose ratio is
    `ratio` (the same trace, 2, as in X)."""
    c = (ratio - 1) / (ratio + 1) if alternative else 0.0
    root = np.linalg.cholesky([[1.0, c], [c, 1.0]])

    def sample(root):
        nodes = rng.integers(grid, size=(n, 2)) * spacing
        return nodes + rng.standard_normal((n, 2)) @ root.T

    return sample(np.eye(2)), sample(root)


ALTERNATIVES = {
    "mean shift": mean_shift,
    "Gaussian vs. Laplace (d = 5)": gauss_laplace,
    "blobs": blobs,
}

fig, axes = plt.subplots(1, len(ALTERNATIVES), figsize=(11, 3.4),
                         layout="constrained")
for ax, (name, draw) in zip(axes, ALTERNATIVES.items(), strict=True):
    X_alt, Y_alt = draw(300, alternative=True)
    ax.scatter(*X_alt[:, :2].T, s=4, alpha=0.6, label="X")
    ax.scatter(*Y_alt[:, :2].T, s=4, alpha=0.6, label="Y")
    ax.set_title(name)
    ax.set_xlabel("first coordinate")
    ax.set_aspect("equal", adjustable="datalim")
axes[0].set_ylabel("second coordinate")
axes[0].legend(loc="upper left", markerscale=3)
plt.show()

# %%
# For each alternative and sample size we run the four tests on the same 12
# pairs of samples and plot how often each rejects at :math:`\alpha = 0.05`.
# So few repetitions keep the example fast but make the curves noisy (a
# rejection rate of 0.5 is known to about ±0.15); the ranking of the methods
# is what to read.

sizes = np.array([25, 50, 100, 200])
n_power, alpha = 12, 0.05
power = {name: np.zeros((len(METHODS), len(sizes))) for name in ALTERNATIVES}
for name, draw in ALTERNATIVES.items():
    for j, n in enumerate(sizes):
        for r in range(n_power):
            X_alt, Y_alt = draw(n, alternative=True)
            for i, method in enumerate(METHODS):
                power[name][i, j] += run_test(X_alt, Y_alt, method, r).reject
        power[name][:, j] /= n_power
    print(f"{name}: rejection rates at n = {sizes.tolist()}")
    for i, method in enumerate(METHODS):
        print(f"    {method:>15}: {np.round(power[name][i], 2).tolist()}")

# %%
# With the median bandwidth, the permutation and wild bootstrap tests see the
# mean shift well: that is a difference at the scale of the whole
# distribution. But they are nearly blind to the two others, whose
# differences lie at a shorter range than the median distance. The
# aggregated test, which tries bandwidths down to the small distances, finds
# them, and loses little or nothing on the mean shift (its level correction
# for 20 kernels is mild, as they are strongly dependent). The linear test
# on random features (the MMD of an approximation of the kernel, its null
# from its asymptotic law) has less power at a given size on these small
# samples, but it can use far more points in the same time.

fig, axes = plt.subplots(1, len(ALTERNATIVES), figsize=(11, 3.8),
                         sharey=True, layout="constrained")
markers = dict(zip(METHODS, "osD^", strict=True))
for ax, name in zip(axes, ALTERNATIVES, strict=True):
    for i, method in enumerate(METHODS):
        ax.plot(sizes, power[name][i], marker=markers[method],
                label=method.replace("_", " "))
    ax.axhline(alpha, color="k", ls=":", lw=1)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(name)
    ax.set_xlabel("points per sample, n = m")
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel(rf"rejection rate at $\alpha$ = {alpha}")
axes[0].legend(loc="upper left")
plt.show()

# %%
# 4. The cost of a test
# ---------------------
# Recomputing the MMD for each of 999 permutations would cost 1000 times
# one MMD. :func:`kernelmaps.mmd_test` computes the kernel matrix of the
# pooled points once and evaluates the resampled statistics 256 at a time,
# each block by one matrix product with that matrix. We time the
# permutation and wild bootstrap tests with 999 resamples, and the linear
# test, on samples of 50 to 400 points in two dimensions, and divide each
# time by that of one :func:`kernelmaps.mmd` of the same two samples (all
# kernel sums, unbiased), on one thread (``workers=1``). Each time is the
# best of three rounds, the methods measured in turn within a round, each
# measurement repeating the call for at least 20 ms, so that a burst of load
# from other programs slows every method alike.


def best_times(calls, repeat=3, min_seconds=0.02):
    """Seconds per call of each of `calls` (name: function): the fastest of
    `repeat` interleaved rounds, each measuring enough calls to last at
    least `min_seconds`."""
    best, numbers = {}, {}
    for name, f in calls.items():
        best[name] = timeit.timeit(f, number=1)
        numbers[name] = max(1, math.ceil(min_seconds / best[name]))
    for _ in range(repeat - 1):
        for name, f in calls.items():
            seconds = timeit.timeit(f, number=numbers[name]) / numbers[name]
            best[name] = min(best[name], seconds)
    return best


TIMED = ("permutation", "wild_bootstrap", "linear")
time_sizes = np.array([50, 100, 200, 400])
ratios = np.empty((len(TIMED), len(time_sizes)))
for j, n in enumerate(time_sizes):
    X_time, Y_time = mean_shift(n, alternative=True)
    calls = {"mmd": partial(kernelmaps.mmd, [X_time], [Y_time], squared=True,
                            unbiased=True, workers=1)}
    for method in TIMED:
        calls[method] = partial(kernelmaps.mmd_test, X_time, Y_time,
                                method=method, rng=0, workers=1)
    seconds = best_times(calls)
    ratios[:, j] = [seconds[method] / seconds["mmd"] for method in TIMED]
    print(f"n = m = {n}: one MMD {seconds['mmd'] * 1e3:.2f} ms; "
          + ", ".join(f"{method} {ratio:.1f} x" for method, ratio in
                      zip(TIMED, ratios[:, j], strict=True)))

# %%
# A permutation test with 999 resamples costs a few to a few tens of MMDs,
# not a thousand; the ratio grows with the size as the matrix products
# (:math:`2 N^2` multiply-adds per resample, :math:`N = n + m`) take over
# from the fixed costs of a call. The wild bootstrap's matrix has a quarter
# of the entries (:math:`n \times n`), and it costs about a quarter as
# much. The linear test costs a few MMDs at these sizes, mostly fixed
# costs (its features and their covariance); it grows linearly with the
# points, where one MMD grows quadratically.

fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
# Each line labelled at its right end (a legend would cover a line), the
# labels at least a factor 1.6 apart (a line of text on this log scale),
# wherever the measured times put the lines' ends.
ends = ratios[:, -1]
label_at = ends.copy()
order = np.argsort(ends)
for below, here in itertools.pairwise(order):
    label_at[here] = max(label_at[here], 1.6 * label_at[below])
for i, method in enumerate(TIMED):
    color = f"C{METHODS.index(method)}"
    ax.plot(time_sizes, ratios[i], marker=markers[method], color=color)
    ax.annotate(method.replace("_", " "), (time_sizes[-1], ends[i]),
                xytext=(time_sizes[-1] * 1.1, label_at[i]), textcoords="data",
                va="center", color=color)
ax.axhline(1000, color="k", ls="--", lw=1)
ax.annotate("recomputing the MMD for each resample", (time_sizes[0], 1000),
            xytext=(0, 4), textcoords="offset points", va="bottom")
ax.set_xscale("log")
ax.set_yscale("log")
ax.xaxis.set_major_locator(FixedLocator(time_sizes))
ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xlim(time_sizes[0] / 1.2, time_sizes[-1] * 3)
ax.set_ylim(0.5, 3000)
y_ticks = [1, 10, 100, 1000]
ax.set_yticks(y_ticks, [f"{y:g}" for y in y_ticks])
ax.yaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel("points per sample, n = m (d = 2)")
ax.set_ylabel("time of a test / time of one MMD")
ax.set_title("A test with 999 resamples costs tens of MMDs")
ax.grid(True, which="major", alpha=0.3)
plt.show()

# %%
# 5. Which test to use
# --------------------
#
# - ``"permutation"`` (the default): samples of any sizes; exact; one kernel
#   and bandwidth (``gamma``, by default the median heuristic, good for
#   differences at the scale of the whole distribution). Memory: about the
#   pooled kernel matrix in float64, :math:`8 N^2` bytes
#   (``dtype=np.float32`` halves the time of the products).
# - ``"wild_bootstrap"``: samples of equal size; exact too, for a quarter of
#   the work of the permutations.
# - ``"aggregated"``: no bandwidth to choose: it adapts to the alternative,
#   far above a single test whose bandwidth is wrong (the blobs), at the
#   price of testing 20 kernels at once (its power is below that of the
#   best bandwidth known in hindsight, the mean shift's widest); its 20
#   kernels cost about 20 single tests, with 2000 + 2000 resamples by
#   default. The test to use when nothing is known of the difference to
#   look for.
# - ``"linear"``: millions of points, or samples in a Dask array larger than
#   memory: one pass over the points, with the power of the permutation
#   test on the same features and a level that is asymptotic (close at some
#   hundreds of points).
