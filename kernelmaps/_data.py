"""Generated data for the demo (``python -m kernelmaps``), the histograms
on which the tests and the study of `Chi2DirectMap` measure its
convergence, and the weighted point clouds of digit images on which those
of `SlicedWassersteinFeatures` measure its error."""

import numpy as np

__all__ = ["CHI2_KINDS", "SHAPES", "beta_sets", "chi2_histograms",
           "class_histograms", "digit_clouds", "shaped_sets"]


# Zero mean and unit variance per feature: only the shape differs.
SHAPES = {
    "gaussian": lambda rng, size: rng.normal(size=size),
    "uniform": lambda rng, size: rng.uniform(-np.sqrt(3), np.sqrt(3), size=size),
    "laplace": lambda rng, size: rng.laplace(scale=np.sqrt(0.5), size=size),
    "mixture": lambda rng, size: (
        rng.choice([-0.9, 0.9], size=size) + np.sqrt(1 - 0.81) * rng.normal(size=size)
    ),
}


def shaped_sets(n_per_class, n_points, dim, seed=0):
    """`n_per_class` sets of each distribution of `SHAPES` (equal mean and
    variance, different shapes), shuffled, with ``n_points`` points +- 50 %
    in `dim` dimensions; and their labels (indices into `SHAPES`)."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(len(SHAPES)), n_per_class))
    draws = list(SHAPES.values())
    sizes = rng.integers(n_points // 2, n_points * 3 // 2 + 1, size=len(labels))
    sets = [draws[c](rng, (n, dim)) for c, n in zip(labels, sizes, strict=True)]
    return sets, labels


def beta_sets(n_sets, n_points, seed=0):
    """Samples of `n_points` from Beta(a, 3), a uniform in [1, 3], as
    ``(n_points, 1)`` arrays, and the skewness of each distribution (the
    distribution regression task of Shan and Zhang, after Poczos et al.)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(1.0, 3.0, n_sets)
    b = 3.0
    skewness = 2 * (b - a) * np.sqrt(a + b + 1) / ((a + b + 2) * np.sqrt(a * b))
    sets = [rng.beta(ai, b, size=(n_points, 1)) for ai in a]
    return sets, skewness


def class_histograms(n, d=50, seed=0):
    """`n` histograms over `d` bins from six classes, and their labels.

    Three mean profiles; each has two classes, whose histograms scatter
    little or much around it (Dirichlet concentrations ``1.5 d p`` and
    ``30 d p``), so no linear function of the histogram separates them.
    Each histogram is 100 to 300 counts, normalised to sum 1 (as in the
    out-of-core gallery example)."""
    rng = np.random.default_rng(seed)
    profiles = np.random.default_rng(0).dirichlet(np.full(d, 10.0), size=3)
    concentrations = np.array([s * d * p for p in profiles for s in (1.5, 30.0)])
    labels = rng.integers(len(concentrations), size=n)
    p = rng.standard_gamma(concentrations[labels])
    p /= p.sum(axis=1, keepdims=True)
    counts = rng.integers(100, 301, size=n)
    return rng.multinomial(counts, p) / counts[:, None], labels


# The kinds of `chi2_histograms`.
CHI2_KINDS = ("sparse-0.02", "sparse-0.05", "dense-uniform", "dense-dirichlet",
              "skewed-one", "skewed-two", "multiscale-rows", "multiscale-bins")


def chi2_histograms(kind, seed=0, n=200):
    """`n` histograms of a kind of `CHI2_KINDS`, on which the direct chi2
    map must converge: sparse (Dirichlet 0.02 and 0.05 over 300 bins: 72 %
    and 47 % of the values below 1e-8, down to about 1e-250 and 1e-110, and
    zeros), dense (uniform, Dirichlet 1), skewed (one or two bins holding
    95 % or 98 %) and multi-scale (rows or bins scaled by 1e-6 to 1e6),
    over 100 bins but the sparse ones."""
    if kind not in CHI2_KINDS:
        raise ValueError(f"kind must be one of {CHI2_KINDS}, got {kind!r}")
    rng = np.random.default_rng(seed)
    d = 100
    if kind.startswith("sparse"):
        alpha = float(kind.split("-")[1])
        return rng.dirichlet(np.full(300, alpha), size=n)
    if kind == "dense-uniform":
        X = rng.random((n, d))
        return X / X.sum(axis=1, keepdims=True)
    if kind == "dense-dirichlet":
        return rng.dirichlet(np.ones(d), size=n)
    if kind in ("skewed-one", "skewed-two"):
        shares = [0.95] if kind == "skewed-one" else [0.6, 0.38]
        X = (1 - sum(shares)) * rng.dirichlet(np.ones(d), size=n)
        for share in shares:
            X[np.arange(n), rng.integers(0, d, n)] += share
        return X
    X = rng.dirichlet(np.full(d, 0.3), size=n)
    if kind == "multiscale-rows":
        return X * 10.0 ** rng.uniform(-6, 6, (n, 1))
    return X * np.logspace(-6, 6, d)


def digit_clouds(n_sets, seed=0, *, translation=2.0, dtype=np.float64):
    """`n_sets` of scikit-learn's 8 x 8 digit images (``load_digits``, drawn
    with replacement) as weighted 2-D point clouds: the coordinates of the
    non-zero pixels (centred on the image's centre, in pixels), each
    weighted by its intensity (1 to 16), rotated by a uniform random angle
    and translated by a normal vector of standard deviation `translation`
    per coordinate. Returns a weighted `Bags` (points in `dtype`) and the
    digits' labels. Needs scikit-learn."""
    from sklearn.datasets import load_digits

    from ._bags import Bags

    digits = load_digits()
    rng = np.random.default_rng(seed)
    chosen = rng.integers(len(digits.images), size=n_sets)
    rows, cols = np.mgrid[0:8, 0:8]
    grid = np.stack([cols.ravel(), 7 - rows.ravel()], axis=1) - 3.5
    sets, weights = [], []
    for index in chosen:
        image = digits.images[index].ravel()
        on = image > 0
        angle = rng.uniform(0.0, 2 * np.pi)
        c, s = np.cos(angle), np.sin(angle)
        rotation = np.array([[c, -s], [s, c]])
        shift = rng.normal(scale=translation, size=2)
        sets.append((grid[on] @ rotation.T + shift).astype(dtype))
        weights.append(image[on])
    return Bags.from_list(sets, weights=weights), digits.target[chosen]
