"""
=========================================================
Nystroem features of set and histogram kernels
=========================================================

A kernel machine needs the kernel of every pair of objects; a linear model
needs explicit features :math:`z(x)` with :math:`z(x) \\cdot z(y) \\approx
k(x, y)`. Random features build them from the kernel's formula, one random
frequency at a time: :class:`kernelmaps.RandomDistributionFeatures` (RDF)
for the mean map kernel of sets, the homogeneous and direct maps for the
additive kernels of histograms. The Nystroem method [1]_ builds them from
the data instead: with m *landmarks* :math:`L` taken among the training
objects and :math:`K_{LL} = U \\Lambda U^\\top`,

.. math::

    z(x) = k(x, L)\\, U \\Lambda_+^{-1/2} U^\\top,

so that :math:`z(x) \\cdot z(y) = k(x, L) K_{LL}^+ k(L, y)`, the kernel
projected on the span of the landmarks: exact between landmarks, and good
wherever the training objects span most of the kernel's range.
:class:`kernelmaps.NystroemMap` does this for any exact kernel of the
package, computing :math:`k(x, L)` with the exact engine. It needs nothing
but the kernel's values, so it also maps kernels that have no random
features at all, such as the kernel of kNN Renyi divergences between sets.

This example measures the kernel error of the features against their width
for three kernels: the mean map kernel of sets (Nystroem against RDF), the
Renyi divergence kernel of sets (Nystroem alone, with the accuracy of a
linear SVM on the features beside the exact kernel's SVM), and the additive
chi2 kernel of histograms (Nystroem against the Vedaldi-Zisserman map and
the direct series). The landmarks are chosen by each of the three rules of
``NystroemMap``: uniformly, by k-means++ seeding on a cheap embedding [3]_,
and by approximate ridge leverage scores [4]_.

.. [1] C. K. I. Williams and M. Seeger, "Using the Nystroem Method to Speed
   Up Kernel Machines", NIPS 2001.
.. [2] T. Yang, Y.-F. Li, M. Mahdavi, R. Jin and Z.-H. Zhou, "Nystroem
   Method vs Random Fourier Features: A Theoretical and Empirical
   Comparison", NIPS 2012.
.. [3] D. Arthur and S. Vassilvitskii, "k-means++: The Advantages of Careful
   Seeding", SODA 2007.
.. [4] C. Musco and C. Musco, "Recursive Sampling for the Nystroem Method",
   NIPS 2017.
"""

# %%
# The mean map kernel: Nystroem against random features
# -----------------------------------------------------
# 300 sets of 50 points in 5-D, drawn from Gaussians whose means gather
# around four class centres and whose scales differ per set and coordinate;
# the maps are fitted on 200 of them and the error is that of the kernel
# matrix of the other 100 (the held-out sets, none of them a landmark),
# averaged over all pairs and two random draws. The point kernel is the
# Gaussian with the median heuristic's gamma. RDF is shown with each
# frequency draw and feature form.
#
# Nystroem has at most as many features as there are training sets (200
# here): beyond that width it stays at the projection on all of them.

import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsOneClassifier
from sklearn.svm import SVC, LinearSVC

import kernelmaps

RULES = ("uniform", "kmeans++", "leverage")
RULE_STYLES = {"uniform": dict(color="C0", marker="o"),
               "kmeans++": dict(color="C1", marker="s"),
               "leverage": dict(color="C2", marker="^")}


def rdf_variants():
    """(label, keyword arguments) of RDF with each frequency draw and
    feature form."""
    names = {"sincos": "sin/cos", "offset": "cos+offset"}
    return [(f"RDF, {draw}, {names[form]}", {"draw": draw, "form": form})
            for draw in ("iid", "orthogonal", "qmc") for form in names]


def class_sets(rng, n_sets, n_points=50, dim=5, n_classes=4):
    """Sets from Gaussians around class centres, with their own scales."""
    centres = 2.0 * rng.standard_normal((n_classes, dim))
    labels = rng.integers(n_classes, size=n_sets)
    means = centres[labels] + 0.5 * rng.standard_normal((n_sets, dim))
    scales = np.exp(rng.uniform(-0.5, 0.5, size=(n_sets, dim)))
    return kernelmaps.Bags.from_list(
        [m + s * rng.standard_normal((n_points, dim))
         for m, s in zip(means, scales, strict=True)])


def mean_abs_error(Z, K):
    return np.abs(Z @ Z.T - K).mean()


n_train, n_draws = 200, 2
widths = np.array([10, 20, 50, 100, 200, 400])
variants = rdf_variants()
set_errors = {name: np.zeros(len(widths))
              for name in [*RULES, *(label for label, _ in variants)]}
for draw in range(n_draws):
    rng = np.random.default_rng(draw)
    bags = class_sets(rng, 300)
    train, test = bags[:n_train], bags[n_train:]
    gamma = kernelmaps.median_heuristic(train)
    K_test = kernelmaps.sum_match_kernel(test, gamma=gamma)
    every_set = {}  # the error with every training set a landmark
    for i, t in enumerate(widths):
        for rule in RULES:
            if t > n_train:  # (the same features as at t = n_train)
                set_errors[rule][i] += every_set[rule]
                continue
            nys = kernelmaps.NystroemMap(t, kernel="mean_map",
                                         kernel_params={"gamma": gamma},
                                         landmarks=rule, rng=draw).fit(train)
            error = mean_abs_error(nys.transform(test), K_test)
            set_errors[rule][i] += error
            every_set[rule] = error
        for label, kwargs in variants:
            rdf = kernelmaps.RandomDistributionFeatures(
                t, gamma=gamma, rng=draw, **kwargs).fit(train)
            set_errors[label][i] += mean_abs_error(rdf.transform(test), K_test)
set_errors = {name: e / n_draws for name, e in set_errors.items()}
print(f"mean |k| of the held-out pairs: {np.abs(K_test).mean():.3f}")
for name, e in set_errors.items():
    print(f"{name:>24}: " + " ".join(f"{v:.1e}" for v in e))


def log_axis(axis):
    """Ticks at 1, 2 and 5 times each power of ten, all labelled."""
    axis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())


fig, ax = plt.subplots(figsize=(9, 4.6), layout="constrained")
for rule in RULES:
    ax.plot(widths, set_errors[rule], label=f"Nystroem, {rule}",
            **RULE_STYLES[rule])
for k, (label, _) in enumerate(variants):
    ax.plot(widths, set_errors[label], color=f"C{3 + k}", ls="--", marker="x",
            label=label)
ax.axvline(n_train, color="0.5", lw=1, ls=":")
ax.set_xscale("log")
ax.set_yscale("log")
log_axis(ax.xaxis)
ax.set_xlabel("feature width (Nystroem: landmarks, at most 200)")
ax.set_ylabel("mean |kernel error|, held-out sets")
ax.set_title("Mean map kernel: Nystroem errs far less than RDF")
# Beside the axes: with every RDF draw and form the legend has 9 entries.
fig.legend(loc="outside right upper")
ax.grid(True, which="major", alpha=0.3)
plt.show()

# %%
# The mean map kernel of these sets has a low *effective rank*: the sets
# differ by a mean and a few scales, and the kernel's spectrum falls fast.
# A few dozen landmarks span it, and the Nystroem error falls much faster
# than the :math:`t^{-1/2}` of random features, which spend their width on
# the whole space of frequencies whatever the data [2]_. With all 200
# training sets as landmarks the held-out error is what the span of the
# training sets cannot hold; random features never stop improving, but
# slowly. The three landmark rules give about the same error here: the sets
# fill their clusters evenly, and a uniform sample covers them.
#
# The cost differs in kind. RDF costs :math:`O(n_i\\, d\\, t)` per set of
# :math:`n_i` points and needs no training data. Nystroem's ``transform``
# computes the exact kernel between each set and the m landmarks, about
# :math:`O(n_i\\, \\bar n\\, d\\, m)` for landmarks of :math:`\\bar n`
# points, plus an :math:`m \\times m` product per set; its ``fit`` computes
# the :math:`m \\times m` landmark kernel and its eigendecomposition
# (:math:`O(m^3)`), and with ``landmarks="leverage"`` about one more pass
# over the training sets.

start = time.perf_counter()
nys = kernelmaps.NystroemMap(100, kernel="mean_map",
                             kernel_params={"gamma": gamma}, rng=0).fit(train)
Z = nys.transform(test)
seconds_nystroem = time.perf_counter() - start
start = time.perf_counter()
rdf = kernelmaps.RandomDistributionFeatures(100, gamma=gamma, rng=0).fit(train)
F = rdf.transform(test)
seconds_rdf = time.perf_counter() - start
print(f"width 100, 100 sets of 50 points: Nystroem fit + transform "
      f"{seconds_nystroem / seconds_rdf:.0f} times the time of RDF's, for "
      f"{mean_abs_error(F, K_test) / mean_abs_error(Z, K_test):.0f} times "
      f"less error")

# %%
# The Renyi divergence kernel: no random features, Nystroem features
# -------------------------------------------------------------------
# The kernel :math:`\\exp(-\\gamma S^2)` of the symmetrised kNN Renyi
# divergences :math:`S` between sets (:func:`kernelmaps.renyi_divergence`,
# :func:`kernelmaps.divergence_kernel`) sees the *shape* of the
# distributions, but it has no random features, and it is not positive
# semi-definite: a kernel machine uses its projection on the PSD cone
# (:func:`kernelmaps.project_psd`). ``NystroemMap(kernel="renyi")`` clips
# the spectrum of the landmarks' kernel and maps every object through the
# same eigenvectors; it also drops the positive eigenvalues below a quarter
# of the largest negative one's magnitude, whose roots, for an indefinite
# kernel, would blow up the features of the other sets.
#
# Four classes of sets of 30 to 70 points in 2-D, whose coordinates all have
# mean 0 and variance 1 (Gaussian, uniform, Laplace, a mixture of two
# Gaussians), each set shifted and scaled a little at random: only the
# shape tells the classes apart. We fit on 300 sets and classify 200 others
# with a linear SVM on the features (``LinearSVC``, one classifier per pair
# of classes as ``SVC`` does), beside the SVM on the projected exact kernel
# (test rows projected by :class:`kernelmaps.PSDProjector`); C is
# chosen by cross-validation on the training sets, once for the kernel SVM
# and once for the linear SVM (on the features of all training sets as
# landmarks), and kept for every m. gamma is fixed from the training
# divergences, so that the map and the exact kernel are the same kernel.


def mixture(rng, size):
    return rng.choice([-0.9, 0.9], size=size) + np.sqrt(0.19) * rng.normal(size=size)


SHAPES = (lambda rng, size: rng.normal(size=size),
          lambda rng, size: rng.uniform(-np.sqrt(3), np.sqrt(3), size=size),
          lambda rng, size: rng.laplace(scale=np.sqrt(0.5), size=size),
          mixture)
rng = np.random.default_rng(10)
labels = rng.integers(len(SHAPES), size=500)
bags = kernelmaps.Bags.from_list(
    [0.3 * rng.standard_normal(2)
     + np.exp(rng.uniform(-0.15, 0.15)) * SHAPES[c](rng, (rng.integers(30, 71), 2))
     for c in labels])
n_train = 300
train, test = bags[:n_train], bags[n_train:]
y_train, y_test = labels[:n_train], labels[n_train:]

D = kernelmaps.renyi_divergence(bags, alpha=0.99, k=5)
S = np.maximum((D + D.T) / 2, 0.0)
gamma = 1.0 / np.median(S[:n_train, :n_train][~np.eye(n_train, dtype=bool)]) ** 2
K = kernelmaps.divergence_kernel(D, gamma=gamma)
projector = kernelmaps.PSDProjector("clip").fit(K[:n_train, :n_train])
P_train = projector.transform(K[:n_train, :n_train])
P_test = projector.transform(K[n_train:, :n_train])
grid = GridSearchCV(SVC(kernel="precomputed"), {"C": 2.0 ** np.arange(-2, 11, 2)},
                    cv=3).fit(P_train, y_train)
C = grid.best_params_["C"]
exact_accuracy = np.mean(grid.best_estimator_.predict(P_test) == y_test)
print(f"{np.sum(np.linalg.eigvalsh(K[:n_train, :n_train]) < 0)} negative "
      f"eigenvalues clipped; SVM on the projected exact kernel: accuracy "
      f"{exact_accuracy:.3f} (C = {C:g})")



def renyi_features(m, rule):
    """Nystroem features of the training and test sets, m landmarks."""
    nys = kernelmaps.NystroemMap(
        m, kernel="renyi", kernel_params={"alpha": 0.99, "k": 5, "gamma": gamma},
        landmarks=rule, rng=0).fit(train)
    return nys.transform(train), nys.transform(test)


Z_train, Z_test = renyi_features(n_train, "uniform")
print(f"all {n_train} training sets as landmarks: mean |Z Z^T - P| = "
      f"{mean_abs_error(Z_train, P_train):.1e}")
linear_svm = OneVsOneClassifier(LinearSVC(dual=False, max_iter=10_000))
linear_svm = GridSearchCV(linear_svm, {"estimator__C": 2.0 ** np.arange(-2, 11, 2)},
                          cv=3).fit(Z_train, y_train).best_estimator_

landmarks = np.array([10, 30, 100, 300])
renyi_errors = {rule: [] for rule in RULES}
renyi_accuracy = {rule: [] for rule in RULES}
for m in landmarks:
    for rule in RULES:
        Z_train, Z_test = renyi_features(m, rule)
        renyi_errors[rule].append(mean_abs_error(Z_train, P_train))
        model = linear_svm.fit(Z_train, y_train)
        renyi_accuracy[rule].append(np.mean(model.predict(Z_test) == y_test))
for rule in RULES:
    print(f"{rule:>9}, m = {', '.join(map(str, landmarks))}: accuracy "
          + " ".join(f"{a:.3f}" for a in renyi_accuracy[rule]))

fig, (ax_error, ax_accuracy) = plt.subplots(1, 2, figsize=(10, 4.4),
                                            layout="constrained")
for rule in RULES:
    ax_error.plot(landmarks, renyi_errors[rule], label=f"Nystroem, {rule}",
                  **RULE_STYLES[rule])
    ax_accuracy.plot(landmarks, renyi_accuracy[rule],
                     label=f"linear SVM, Nystroem {rule}", **RULE_STYLES[rule])
ax_accuracy.axhline(exact_accuracy, color="k", ls="--",
                    label="kernel SVM, projected exact kernel")
for ax in (ax_error, ax_accuracy):
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_xlabel("landmarks m (of 300 training sets)")
    ax.grid(True, which="major", alpha=0.3)
ax_error.set_yscale("log")
log_axis(ax_error.yaxis)
ax_error.set_ylabel("mean |error| vs projected kernel")
ax_error.set_title("Error on the training kernel")
ax_error.legend(loc="lower left")
ax_accuracy.set_ylabel("test accuracy (200 sets, 4 classes)")
ax_accuracy.set_title("Accuracy on held-out sets")
ax_accuracy.legend(loc="lower right")
fig.suptitle("Renyi divergence kernel of sets")
plt.show()

# %%
# This kernel is far from positive semi-definite (over half of its
# eigenvalues are negative: kNN estimates from 30 to 70 points are noisy).
# The Nystroem error against the projected kernel falls with the number of
# landmarks; with every training set a landmark it is what the dropped small
# eigenvalues held. The accuracy of the linear SVM rises with m towards that
# of the kernel SVM, up to the difference of the two learners' losses (200
# test sets: a point of accuracy is two sets). Mind the multi-class scheme:
# ``LinearSVC`` alone trains one classifier per class against the rest,
# which on these classes costs several points of accuracy whatever the
# features; wrapped in ``OneVsOneClassifier`` it matches ``SVC``'s one
# classifier per pair. The exact kernel costs the divergences of all pairs
# of sets; the features cost those between each set and the m landmarks, in
# both directions, and the linear model on them grows linearly with the
# data.

# %%
# The chi2 kernel of histograms: Nystroem against additive maps
# -------------------------------------------------------------
# 1300 word-count histograms (200 words each, over 64 bins; half the
# entries are zero) around 30 prototypes whose cluster sizes follow Zipf's
# law (a few large clusters, many rare ones); the maps are fitted on 1000
# and the error is that of the kernel matrix of the other 300. The additive
# maps give each bin a few features, so their width is a multiple of 64:
# :class:`kernelmaps.HomogeneousKernelMap` with :math:`2n + 1` features per
# bin (order n = 0 to 3), and :class:`kernelmaps.Chi2DirectMap` with 1 to 5
# terms.

rng = np.random.default_rng(20)
prototypes = rng.dirichlet(np.full(64, 0.5), size=30)
weights = 1.0 / np.arange(1, 31) ** 2
clusters = rng.choice(30, 1300, p=weights / weights.sum())
X = np.array([rng.multinomial(200, rng.dirichlet(50 * prototypes[c]))
              for c in clusters]) / 200
X_train, X_test = X[:1000], X[1000:]
K_test = kernelmaps.additive_chi2_kernel(X_test)

hist_widths = np.array([16, 32, 64, 128, 256, 512])
chi2_errors = {rule: [] for rule in RULES}
for m in hist_widths:
    for rule in RULES:
        nys = kernelmaps.NystroemMap(m, kernel="chi2", landmarks=rule,
                                     rng=0).fit(X_train)
        chi2_errors[rule].append(mean_abs_error(nys.transform(X_test), K_test))
additive = {
    "Vedaldi-Zisserman": [kernelmaps.HomogeneousKernelMap("chi2", n)
                          for n in range(4)],
    "direct series": [kernelmaps.Chi2DirectMap(n).fit(X_train) for n in range(1, 6)],
}
additive_errors = {}
for name, maps in additive.items():
    features = [f.transform(X_test) for f in maps]
    additive_errors[name] = ([Z.shape[1] for Z in features],
                             [mean_abs_error(Z, K_test) for Z in features])

fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
for rule in RULES:
    ax.plot(hist_widths, chi2_errors[rule], label=f"Nystroem, {rule}",
            **RULE_STYLES[rule])
for (name, (w, e)), style in zip(additive_errors.items(),
                                 [dict(color="C3", marker="D"),
                                  dict(color="C4", marker="v")], strict=True):
    ax.plot(w, e, ls="--", label=name, **style)
ax.set_xscale("log")
ax.set_yscale("log")
log_axis(ax.xaxis)
ax.set_xlabel("feature width")
ax.set_ylabel("mean |kernel error|, held-out histograms")
ax.set_title("Additive chi2 kernel of clustered histograms")
ax.legend(loc="lower left")
ax.grid(True, which="major", alpha=0.3)
plt.show()
for name, (w, e) in additive_errors.items():
    print(f"{name:>18}: " + ", ".join(f"{a} features {b:.1e}"
                                      for a, b in zip(w, e, strict=True)))
for rule in RULES:
    print(f"Nystroem {rule:>9}: " + ", ".join(
        f"{a} features {b:.1e}" for a, b in zip(hist_widths, chi2_errors[rule],
                                                strict=True)))

# %%
# The additive maps are data-free; the direct series, its parameters fitted
# to the bin values, improves fastest with each term, but an additive map's
# width is a multiple of the number of bins. At one feature per bin (64)
# Nystroem is more accurate than both, at three to four features per bin
# it runs level with the direct series, it takes any width, and with 512
# of the 1000 training histograms as landmarks its error is near 1e-7.
# Leverage scores favour the histograms the others do not explain (here,
# those of the rare clusters) and k-means++ spreads the landmarks over the
# clusters; on the error averaged over all pairs neither beats uniform
# landmarks on these data.
#
# When to choose Nystroem over random features:
#
# - the kernel has no random features (the Renyi divergence kernel and
#   other kernels of divergences, any callable kernel), or only slow ones;
# - the kernel matrix of the data has a low effective rank, so that a few
#   hundred landmarks span it (sets or histograms that gather in clusters or
#   vary along a few directions), and a representative training set is at
#   hand;
# - and the exact kernel between an object and m landmarks is affordable:
#   for large sets, RDF's cost per feature (linear in the points) is lower
#   than Nystroem's (the exact kernel against every landmark's points).
#
# Random features remain the choice without training data, for streams of
# objects whose distribution drifts, and when the width must grow past the
# number of training objects.
