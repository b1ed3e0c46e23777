"""
==========================================================
Support measure machines: learning from Gaussian inputs
==========================================================

A support measure machine (SMM) is a support vector machine whose training
examples are probability distributions rather than points [1]_. The kernel
between two distributions :math:`P` and :math:`Q` is the expected kernel
:math:`K(P, Q) = E_{x \\sim P,\\, y \\sim Q}\\, k(x, y)`, the inner product of
their kernel mean embeddings. For Gaussians :math:`P = N(m_1, S_1)`,
:math:`Q = N(m_2, S_2)` and the Gaussian RBF kernel
:math:`k(x, y) = \\exp(-\\gamma \\|x - y\\|^2)` it has a closed form: with
:math:`\\Delta m = m_1 - m_2` and :math:`S = S_1 + S_2`,

.. math::

   K(P, Q) = \\det(I + 2 \\gamma S)^{-1/2}
   \\exp\\left(-\\gamma\\, \\Delta m^T (I + 2 \\gamma S)^{-1} \\Delta m\\right),

which :func:`kernelmaps.gaussian_expected_kernel` computes for whole
collections of means and (full, diagonal or isotropic) covariances, ready for
``sklearn.svm.SVC(kernel="precomputed")``; the adapter
:class:`kernelmaps.sklearn.ExpectedKernel` does the same inside a
scikit-learn ``Pipeline``.

Following the toy experiments of the paper, we train three classifiers on
labelled 2-D Gaussians whose two classes differ in their covariances and
only partly in their means:

* **SVM on the means**: an ordinary RBF SVM that sees one point, the mean,
  per distribution;
* **augmented SVM (ASVM)**: an RBF SVM on 30 points sampled from each
  distribution, every point carrying the label of its distribution;
* **SMM**: an SVM on the expected kernel between the distributions.

We draw their decision boundaries over the training distributions, measure
the accuracy on new test distributions, and repeat with a growing number of
training distributions, timing the three.

.. [1] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning from
   Distributions via Support Measure Machines", NIPS 2012.
"""

# %%
# Two classes of Gaussian distributions
# -------------------------------------
# Each distribution :math:`N(m_i, S_i)` gets a random mean and a random
# covariance. The means of class +1 scatter around :math:`(-0.5, 0)` and those
# of class -1 around :math:`(0.5, 0)`, both with unit variance, so the means
# alone overlap a lot. The covariances are what really tells the classes
# apart: they are drawn from Wishart distributions (10 degrees of freedom)
# centred on :math:`\mathrm{diag}(1, 0.05)` for class +1, distributions
# stretched along the first axis, and on :math:`\mathrm{diag}(0.05, 1)` for
# class -1, stretched along the second.

import math
import timeit

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import Ellipse
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC

import kernelmaps
from kernelmaps.sklearn import ExpectedKernel

rng = np.random.default_rng(0)
dim, dof = 2, 10
class_centres = {1: np.array([-0.5, 0.0]), -1: np.array([0.5, 0.0])}
class_scales = {1: np.array([1.0, 0.05]), -1: np.array([0.05, 1.0])}


def draw_distributions(n, rng):
    """Means (n, 2), full covariances (n, 2, 2) and labels of n Gaussians."""
    labels = np.resize([1, -1], n)
    means = rng.standard_normal((n, dim))
    covs = np.empty((n, dim, dim))
    for label in (1, -1):
        idx = np.flatnonzero(labels == label)
        means[idx] += class_centres[label]
        # Wishart(dof, diag(scale) / dof): the mean covariance is diag(scale)
        z = rng.standard_normal((len(idx), dof, dim)) * np.sqrt(class_scales[label])
        covs[idx] = z.transpose(0, 2, 1) @ z / dof
    return means, covs, labels


def sample_points(means, covs, n_samples, rng):
    """n_samples points of each Gaussian: (n, n_samples, 2)."""
    factors = np.linalg.cholesky(covs + 1e-12 * np.eye(dim))
    noise = rng.standard_normal((len(means), n_samples, dim))
    return means[:, None, :] + noise @ factors.transpose(0, 2, 1)


n_train, n_test, n_samples = 40, 300, 30
means, covs, y = draw_distributions(n_train, rng)
test_means, test_covs, y_test = draw_distributions(n_test, rng)
print(f"{n_train} training and {n_test} test distributions in {dim} dimensions")

# %%
# The expected kernel, and the flexible SVM
# -----------------------------------------
# The closed form agrees with a Monte Carlo estimate: the mean of
# :math:`k(x, y)` over samples of the two distributions, which is the
# normalised sum-match (mean map) kernel of :func:`kernelmaps.sum_match_kernel`
# between the two samples.
#
# With zero covariances, every distribution is a point mass at its mean and
# the expected kernel is the ordinary RBF kernel between the means: the SMM
# contains the SVM on the means as a special case. Between a Gaussian
# :math:`N(m_i, S_i)` and a point mass at :math:`x`, the expected kernel is
# a Gaussian bump in :math:`x` around :math:`m_i`, with covariance
# :math:`S_i + I / (2\gamma)`: an SMM is an SVM that places a different,
# data-dependent kernel on each training example, the *flexible SVM* of [1]_.

gamma, C = 0.5, 10.0
K = kernelmaps.gaussian_expected_kernel(means, covs, gamma=gamma)

a, b = sample_points(means[:2], covs[:2], 2000, rng)
monte_carlo = kernelmaps.sum_match_kernel([a], [b], gamma=gamma)[0, 0]
print(f"K[0, 1] = {K[0, 1]:.4f} in closed form, {monte_carlo:.4f} by Monte Carlo")

K_points = kernelmaps.gaussian_expected_kernel(means, np.zeros(n_train), gamma=gamma)
print("zero covariances vs rbf_kernel of the means, max difference: "
      f"{np.abs(K_points - rbf_kernel(means, gamma=gamma)).max():.1e}")

# %%
# Training the three classifiers
# ------------------------------
# All three use the same :math:`\gamma = 0.5` and :math:`C = 10`, as in the
# paper's toy experiment, which used one kernel for all algorithms. The SMM
# is a ``Pipeline`` of :class:`~kernelmaps.sklearn.ExpectedKernel`, whose
# input rows are ``[mean, covariance.ravel()]``, and a precomputed-kernel
# ``SVC``. A test distribution :math:`Q` is classified by the SMM through
# :math:`K(Q, P_i)` and by the SVM on the means through its mean. The ASVM
# is a classifier of points,
# :math:`f(x) = \sum_j \alpha_j y_j k(x, s_j) + b` over its support vectors
# :math:`s_j`; we classify :math:`Q` by the average
# :math:`E_{x \sim Q} f(x) = \sum_j \alpha_j y_j K(Q, \delta_{s_j}) + b`, the
# expected kernel between :math:`Q` and point masses at the support vectors.
# That is the exact limit of averaging :math:`f` over many points sampled
# from :math:`Q`, and much faster. Everything runs on one thread (libsvm is
# serial, and ``workers=1`` for the expected kernels, in ``fit`` and
# ``transform``), so that the timings below compare like with like.


def as_rows(means, covs):
    """One row [mean, covariance.ravel()] per distribution."""
    return np.hstack([means, covs.reshape(len(means), -1)])


def asvm_decision(asvm, means, covs):
    """E_Q f(x) for the Gaussians Q = N(means, covs) and the point classifier f."""
    support = asvm.support_vectors_
    K = kernelmaps.gaussian_expected_kernel(
        means, covs, support, np.zeros(len(support)), gamma=gamma, workers=1)
    return K @ asvm.dual_coef_[0] + asvm.intercept_[0]


def svm_on_means(means, covs, y, test_means, test_covs, y_test, rng):
    """The model, and its test accuracy."""
    svm = SVC(kernel="rbf", gamma=gamma, C=C).fit(means, y)
    return svm, np.mean(svm.predict(test_means) == y_test)


def augmented_svm(means, covs, y, test_means, test_covs, y_test, rng):
    """The model and its training points, and its test accuracy."""
    points = sample_points(means, covs, n_samples, rng).reshape(-1, dim)
    asvm = SVC(kernel="rbf", gamma=gamma, C=C).fit(points, np.repeat(y, n_samples))
    decision = asvm_decision(asvm, test_means, test_covs)
    return (asvm, points), np.mean(np.where(decision > 0, 1, -1) == y_test)


def support_measure_machine(means, covs, y, test_means, test_covs, y_test, rng):
    """The model, and its test accuracy."""
    smm = make_pipeline(ExpectedKernel("full", gamma=gamma),
                        SVC(kernel="precomputed", C=C))
    smm.fit(as_rows(means, covs), y, expectedkernel__workers=1)
    # (the pipeline's predict, with the kernel's transform on one thread)
    K = smm[0].transform(as_rows(test_means, test_covs), workers=1)
    return smm, np.mean(smm[-1].predict(K) == y_test)


CLASSIFIERS = {"SVM on means": svm_on_means, "ASVM": augmented_svm,
               "SMM": support_measure_machine}
models, accuracy = {}, {}
for name, classifier in CLASSIFIERS.items():
    models[name], accuracy[name] = classifier(means, covs, y, test_means,
                                              test_covs, y_test, rng)
    print(f"{name:>12}: test accuracy {accuracy[name]:.3f}")

# %%
# Decision boundaries
# -------------------
# The ellipses are the 1-sigma contours of the training distributions, the
# black line each classifier's decision boundary and the background the class
# it gives to a single point :math:`x` (for the SMM: to the point mass
# :math:`\delta_x`, a Gaussian with zero covariance, through
# :math:`f(\delta_x) = \sum_i \alpha_i y_i K(P_i, \delta_x) + b`). The SMM
# classifies a whole distribution :math:`Q` by :math:`E_{x \sim Q}\,
# f(\delta_x)`, so these maps show the function it averages, not the class it
# gives to a wide test distribution centred at :math:`x`.
#
# Trained on the means only, the SVM can do little more than separate left
# from right. The SMM's decision function is a sum of bumps shaped like the
# training distributions: :math:`K(P_i, \delta_x)` is a Gaussian bump in
# :math:`x` with covariance :math:`S_i + I / (2\gamma)`, stretched sideways
# for class +1 and upwards for class -1, and its boundary follows those
# shapes. The ASVM sees the same shapes through its samples, but it needs 30
# times as many training points and builds its boundary from individual
# samples, so it follows the sampling noise (islands and wiggles).

grid_x, grid_y = np.meshgrid(np.linspace(-4, 4, 161), np.linspace(-4, 4, 161))
grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
dirac_rows = as_rows(grid, np.zeros((len(grid), dim, dim)))
decisions = {
    "SVM on means": models["SVM on means"].decision_function(grid),
    "ASVM": models["ASVM"][0].decision_function(grid),
    "SMM": models["SMM"].decision_function(dirac_rows),
}
colours = {1: "tab:red", -1: "tab:blue"}
shades = ["#c6dbef", "#fcd5c4"]  # light blue (class -1), light red (class +1)


def draw_ellipses(ax, means, covs, labels):
    """1-sigma ellipses of the Gaussians, coloured by class."""
    variances, vectors = np.linalg.eigh(covs)  # ascending eigenvalues
    angles = np.degrees(np.arctan2(vectors[:, 1, 1], vectors[:, 0, 1]))
    widths = 2 * np.sqrt(np.maximum(variances, 0))
    edges = [colours[label] for label in labels]
    ellipses = [Ellipse(mean, major, minor, angle=angle)
                for mean, (minor, major), angle in zip(means, widths, angles,
                                                       strict=True)]
    ax.add_collection(PatchCollection(ellipses, facecolors="none",
                                      edgecolors=edges, linewidths=1.2))


fig, axes = plt.subplots(1, 3, figsize=(12, 5.2), sharex=True, sharey=True,
                         layout="constrained")
for ax, (name, values) in zip(axes, decisions.items(), strict=True):
    values = values.reshape(grid_x.shape)
    ax.contourf(grid_x, grid_y, values, levels=[-np.inf, 0, np.inf], colors=shades)
    ax.contour(grid_x, grid_y, values, levels=[0], colors="k", linewidths=2)
    draw_ellipses(ax, means, covs, y)
    ax.set_title(f"{name}: test accuracy {accuracy[name]:.2f}")
    ax.set_xlabel("$x_1$")
    ax.set_aspect("equal")
axes[0].set_ylabel("$x_2$")
axes[0].set_xlim(-4, 4)
axes[0].set_ylim(-4, 4)
handles = [
    plt.Line2D([], [], color=colours[1], label="class +1 (wide)"),
    plt.Line2D([], [], color=colours[-1], label="class -1 (tall)"),
    plt.Line2D([], [], color="k", lw=2, label="decision boundary"),
]
fig.legend(handles=handles, loc="outside lower center", ncols=3)
fig.suptitle(f"The SMM, which sees the shapes of the {n_train} training Gaussians "
             "(1-sigma ellipses), classifies new ones best")
plt.show()

# %%
# Same mean, different covariance
# -------------------------------
# A test distribution is classified by averaging the decision function over
# its extent, so two Gaussians with the same mean can land in different
# classes. In the middle of the overlap, at the origin, the SMM puts a
# horizontal Gaussian in class +1 and a vertical one in class -1. The ASVM
# ranks them the same way but, here, puts both in class +1; the SVM on the
# means gives both the same value, by construction.

same_mean = np.zeros((2, dim))
shapes = np.array([np.diag(class_scales[1]), np.diag(class_scales[-1])])
probe = {
    "SVM on means": models["SVM on means"].decision_function(same_mean),
    "ASVM": asvm_decision(models["ASVM"][0], same_mean, shapes),
    "SMM": models["SMM"].decision_function(as_rows(same_mean, shapes)),
}
print("decision values at mean (0, 0), covariance diag(1, 0.05) / diag(0.05, 1):")
for name, (horizontal, vertical) in probe.items():
    print(f"{name:>12}: {horizontal:+.2f} / {vertical:+.2f}")

# %%
# More training distributions
# ---------------------------
# We repeat the experiment with 10 to 80 training distributions (five draws
# each, the same 300 test distributions) and record the test accuracy.

sizes = [10, 20, 40, 80]
n_draws = 5
names = list(CLASSIFIERS)
curve = {name: np.empty((len(sizes), n_draws)) for name in names}
draws = {}  # the first draw of each size, timed below
for i, n in enumerate(sizes):
    for r in range(n_draws):
        train = draw_distributions(n, rng)
        draws.setdefault(n, train)
        for name, classifier in CLASSIFIERS.items():
            curve[name][i, r] = classifier(*train, test_means, test_covs, y_test,
                                           rng)[1]

for name in names:
    row = "  ".join(f"{m:.3f}" for m in curve[name].mean(axis=1))
    print(f"{name:>12}: mean test accuracy for {sizes} distributions: {row}")

fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
for k, (name, marker) in enumerate(zip(names, "osD", strict=True)):
    # Each method's points a little apart, so that the error bars (one
    # standard deviation over the draws) do not hide one another.
    shifted = np.array(sizes) * 1.06 ** (k - 1)
    ax.errorbar(shifted, curve[name].mean(axis=1), yerr=curve[name].std(axis=1),
                marker=marker, capsize=3, label=name)
ax.set_xscale("log")
ax.set_xticks(sizes, [str(n) for n in sizes])
ax.set_xticks([], minor=True)
ax.set_xlabel("number of training distributions")
ax.set_ylabel(f"test accuracy ({n_test} distributions)")
ax.set_title(f"SMM and ASVM beat the SVM on the means ({n_draws} draws)")
ax.legend(loc="lower right")
ax.grid(True, alpha=0.3)
plt.show()

# %%
# Cost
# ----
# We time the training and the prediction of each classifier on the first
# draw of each size, each the best of five measurements taken in turn
# (``best_times`` below), and divide by the time of the SMM.
# The ASVM solves a problem 30 times larger, and its kernel grows with the
# square of that: its cost relative to the SMM grows with the number of
# training distributions.


def best_times(pipelines, repeat=5, min_seconds=0.02):
    """Seconds per call of each of `pipelines` (name: function): the fastest
    of `repeat` measurements, a first call and then measurements of enough
    calls to last `min_seconds` (one call of a millisecond is mostly timer
    noise). The pipelines are measured in turn, round after round, so that a
    burst of load from other programs slows all of them, not one."""
    best, numbers = {}, {}
    for name, f in pipelines.items():
        best[name] = timeit.timeit(f, number=1)
        numbers[name] = max(1, math.ceil(min_seconds / best[name]))
    for _ in range(repeat - 1):
        for name, f in pipelines.items():
            seconds = timeit.timeit(f, number=numbers[name]) / numbers[name]
            best[name] = min(best[name], seconds)
    return best


def classifier_run(name, train):
    """One fit and prediction of the classifier `name` on `train`."""
    # A fresh generator per run, so that every run samples the same points.
    return lambda: CLASSIFIERS[name](*train, test_means, test_covs, y_test,
                                     np.random.default_rng(1))


runs = [best_times({name: classifier_run(name, draws[n]) for name in names})
        for n in sizes]
cost = {name: np.array([run[name] for run in runs]) for name in names}
relative = {name: cost[name] / cost["SMM"] for name in names}
for name in names:
    row = "  ".join(f"{r:.2f}" for r in relative[name])
    print(f"{name:>12}: time relative to the SMM for {sizes} distributions: {row}")

fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
for name, marker in zip(names, "osD", strict=True):
    ax.plot(sizes, relative[name], marker=marker, label=name)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xticks(sizes, [str(n) for n in sizes])
ax.set_xticks([], minor=True)
ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
ax.yaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel("number of training distributions")
ax.set_ylabel("fit + predict time / SMM's time")
ax.set_title("The ASVM's cost grows fastest (best of 5 runs)")
ax.legend(loc="upper left")
ax.grid(True, which="major", alpha=0.3)
plt.show()

# %%
# What the experiment shows
# -------------------------
# On these data the SMM beats the SVM on the means at every training size:
# the means carry only part of the label, and the SVM on the means cannot
# use the rest. The ASVM recovers much of the covariance information from
# its samples: with 10 to 40 training distributions it is about as accurate
# as the SMM (ahead with 10, behind with 20, level with 40, each time within
# the spread between draws); with 80 the SMM is clearly ahead, by about
# seven points, while the ASVM levels off. The ASVM also costs several
# times more than the SMM, and the gap grows with the
# number of distributions. So the claim of the paper's toy experiments
# reproduces: the SMM beats the SVM on the means when the classes differ in
# covariance, and matches or beats the ASVM at a fraction of the cost. One
# caveat: all three share one :math:`(\gamma, C)`, as in the paper's toy
# figure, rather than being tuned separately by cross-validation.
