"""
==================================================
Out-of-core ridge regression on exp-chi2 features
==================================================

This example classifies histograms with a linear model on random features of
the exponential chi2 kernel :math:`\\exp(-\\beta D(x, y))`, trained out of
core: :func:`kernelmaps.rf_ridge` reads the training data one block of rows
at a time, maps each block with :class:`kernelmaps.ExpChi2Features`, keeps
only its moments (a ``(t, t)`` cross-product and the cross-product with the
targets) and drops it [1]_. The features of all training rows never exist at
once, so the data can come from a generator reading files, or be larger than
memory.

Optionally, the features are first reduced to their leading principal
components, computed in the same pass (Algorithm 4 of [1]_): the model is
then fitted on a few dozen or hundred coordinates instead of all the
features.
We compare, on the same held-out histograms:

* linear ridge regression on the raw histograms;
* ridge regression on all ``t`` exp-chi2 random features;
* the same on their leading principal components, for several numbers of
  components;
* exact kernel ridge regression with :func:`kernelmaps.exp_chi2_kernel` on a
  subsample, what an in-memory kernel method can afford.

.. [1] F. Li, G. Lebanon and C. Sminchisescu, "A linear approximation to the
   chi2 kernel with geometric convergence", arXiv:1206.4074, 2012, section 6.
"""

# %%
# Histograms of six overlapping classes
# -------------------------------------
# Each class is a Dirichlet distribution over :math:`d = 50` bins with its own
# concentration vector :math:`s \, d \, p`: three mean profiles :math:`p`
# (themselves drawn from a Dirichlet), each with a low (:math:`s = 1.5`:
# sparse, peaked histograms) and a high (:math:`s = 30`: histograms close to
# the profile) concentration. A sample draws bin probabilities from its
# class's Dirichlet, then 100 to 300 counts from them, and is normalised to
# sum 1. Two classes with the same profile have the same mean histogram and
# differ only in how far samples scatter around it: no linear function of the
# histogram tells them apart, while a kernel on histograms can.

import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import kernelmaps

d, n_counts = 50, (100, 300)
profiles = np.random.default_rng(0).dirichlet(np.full(d, 10.0), size=3)
concentrations = np.array([s * d * p for p in profiles for s in (1.5, 30.0)])
n_classes = len(concentrations)


def draw(rng, n):
    """`n` histograms and their labels, from generator `rng`."""
    labels = rng.integers(n_classes, size=n)
    p = rng.standard_gamma(concentrations[labels])
    p /= p.sum(axis=1, keepdims=True)
    counts = rng.integers(n_counts[0], n_counts[1] + 1, size=n)
    return rng.multinomial(counts, p) / counts[:, None], labels


X_test, labels_test = draw(np.random.default_rng(1), 5000)

# %%
# A training set on disk
# ----------------------
# The training set is stored as it would be when too large for memory: one
# file of histograms and one of labels per block of rows. `histogram_blocks`
# and `target_blocks` are generators reading them one block at a time; each
# call starts a new pass over the files. The targets are one column per
# class, +1 for the class and -1 otherwise (one-vs-all); the predicted class
# is the column with the largest output.

n_blocks, block_rows = 8, 2000
folder = tempfile.TemporaryDirectory()
for k in range(n_blocks):
    X, labels = draw(np.random.default_rng([2, k]), block_rows)
    np.save(Path(folder.name, f"histograms_{k}.npy"), X)
    np.save(Path(folder.name, f"labels_{k}.npy"), labels)


def histogram_blocks():
    for k in range(n_blocks):
        yield np.load(Path(folder.name, f"histograms_{k}.npy"))


def target_blocks():
    for k in range(n_blocks):
        labels = np.load(Path(folder.name, f"labels_{k}.npy"))
        yield np.where(labels[:, None] == np.arange(n_classes), 1.0, -1.0)


print(
    f"training: {n_blocks} files of {block_rows} histograms over {d} bins; "
    f"test: {len(X_test)} histograms"
)


def accuracy(model):
    return np.mean(model.predict(X_test).argmax(axis=1) == labels_test)


# %%
# The feature map
# ---------------
# :class:`kernelmaps.ExpChi2Features` maps each histogram through a 5-term
# chi2 direct map (250 features) and then to ``t`` random Fourier features,
# whose inner products approximate :func:`kernelmaps.exp_chi2_kernel`. Both
# are fitted on the first block; :math:`\beta` is the inverse of the median
# chi2 distance between its histograms (the median heuristic).

first = next(histogram_blocks())
distances = kernelmaps.chi2_distance(first[:1000])
beta = 1 / np.median(distances[np.triu_indices_from(distances, k=1)])
n_features = 800
features = kernelmaps.ExpChi2Features(n_features, beta=beta, rng=0).fit(first)
print(f"beta = {beta:.2f}, t = {features.n_features_out_} random features")

# %%
# Out-of-core ridge regression
# ----------------------------
# `rf_ridge` takes the blocks of histograms and the aligned blocks of targets
# as two iterables. ``feature_maps=None`` fits the plain linear model on the
# histograms themselves; ``n_components=None`` keeps every feature. With one
# feature map the fit is a single pass over the data, holding one block of
# features (2000 x 800) and a few ``(800, 800)`` matrices at a time, never the
# 16000 x 800 features of all rows.

alpha = 0.1
results = {}


def fit(name, feature_maps, n_components):
    start = time.perf_counter()
    model = kernelmaps.rf_ridge(
        histogram_blocks(), target_blocks(), feature_maps, n_components, alpha=alpha
    )
    seconds = time.perf_counter() - start
    results[name] = accuracy(model)
    print(f"{name:>34}: accuracy {results[name]:.3f}  ({seconds:.2f} s)")
    return model


fit("linear, raw histograms", None, None)
fit(f"exp-chi2 features, all {n_features}", features, None)
component_counts = [10, 25, 50, 100, 200, 400]
for k in component_counts:
    model = fit(f"exp-chi2 features, {k} components", features, k)

# %%
# Exact kernel ridge regression on a subsample
# --------------------------------------------
# The exact kernel needs the ``(n, n)`` Gram matrix and a solve that grows as
# :math:`n^3`: for the 16000 training histograms the matrix alone would take
# 2 GB. Here it is fitted on the first file only (2000 histograms), with the
# same penalty as `rf_ridge` on centred targets.

X_sub, Y_sub = next(histogram_blocks()), next(target_blocks())
folder.cleanup()  # the training files are no longer needed
start = time.perf_counter()
K = kernelmaps.exp_chi2_kernel(X_sub, beta=beta)
K[np.diag_indices_from(K)] += alpha
dual = np.linalg.solve(K, Y_sub - Y_sub.mean(axis=0))
scores = kernelmaps.exp_chi2_kernel(X_test, X_sub, beta=beta) @ dual
exact_name = f"exact kernel, {len(X_sub)} samples"
results[exact_name] = np.mean(scores.argmax(axis=1) == labels_test)
print(
    f"{exact_name:>34}: accuracy {results[exact_name]:.3f}  "
    f"({time.perf_counter() - start:.2f} s)"
)

# %%
# Accuracy against the number of principal components
# ---------------------------------------------------
# The linear model on raw histograms stays near one half: it finds the three
# mean profiles, but cannot tell the two classes of a profile apart. The
# exp-chi2 features separate those too. Ten to fifty principal components do
# as well as all 800 features, within the noise of 5000 test histograms
# (about half a point): the fit then solves for a few dozen weights per class
# instead of 800 (the returned ``coef_`` still acts on the 800 features, with
# no projection at prediction time). The accuracy is not monotone in the
# number of components, though: components are ranked by variance, not by
# their use for the classes, and between 100 and 200 components the accuracy
# is a little lower; the number is best chosen on validation data. The right
# panel shows the cumulative share of the variance of the 800 features held
# by the leading components (of the model with 400).
#
# The exact kernel, even on 2000 samples only, beats the random features on
# all 16000: ``t`` random features approximate the kernel with an error of
# order :math:`t^{-1/2}`. More features narrow the gap, at a cost of
# :math:`t^2` per row for the cross-products.

ratio = model.pca_[0].explained_variance_ratio_
shares = ", ".join(f"{k}: {ratio[:k].sum():.2f}" for k in component_counts)
print(f"share of the variance in the leading components: {shares}")

fig, (ax, ax_var) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
ax.plot(
    component_counts,
    [results[f"exp-chi2 features, {k} components"] for k in component_counts],
    "o-",
    label="exp-chi2 features, PCA",
)
for name, style in [
    (f"exp-chi2 features, all {n_features}", "C0--"),
    (exact_name, "C2:"),
    ("linear, raw histograms", "C3-."),
]:
    ax.axhline(results[name], color=style[:2], linestyle=style[2:], label=name)
ax.set_xscale("log")
ax.set_xticks(component_counts, [str(k) for k in component_counts])
ax.set_xlabel("principal components")
ax.set_ylabel("test accuracy")
ax.set_title("One-vs-all ridge regression, 6 classes")
ax.legend(loc="center right")
ax.grid(True, alpha=0.3)

ax_var.plot(np.arange(1, len(ratio) + 1), np.cumsum(ratio))
ax_var.set_xscale("log")
ax_var.set_ylim(0, 1)
ax_var.set_xlabel("principal components")
ax_var.set_ylabel("cumulative share of the variance")
ax_var.set_title(f"Spectrum of the {n_features} exp-chi2 features")
ax_var.grid(True, which="both", alpha=0.3)
plt.show()
