"""Generated data for the demo (``python -m kernelmaps``)."""

import numpy as np

__all__ = ["SHAPES", "beta_sets", "class_histograms", "shaped_sets"]


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
