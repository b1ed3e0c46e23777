"""Data generators shared by the test modules.

Each function makes exactly the random draws, in the same order, that the
test modules made with their own copies, so the test data (and so every
tolerance and expected value) is unchanged. Import with
``from ._helpers import ...``; test modules never import each other.
"""

import numpy as np

# ---------------------------------------------------------------- histograms


def dirichlet_histograms(n, d, seed, *, alpha, cutoff):
    """`n` L1-normalised Dirichlet(`alpha`) histograms of `d` bins, with
    zeros: values below `cutoff` are dropped before normalising."""
    rng = np.random.default_rng(seed)
    hists = rng.dirichlet(np.full(d, alpha), size=n)
    hists[hists < cutoff] = 0.0
    return hists / hists.sum(axis=1, keepdims=True)


def gamma_histograms(n, d, seed):
    """`n` L1-normalised histograms of `d` bins with Gamma(0.5) counts, no
    zeros."""
    X = np.random.default_rng(seed).gamma(0.5, size=(n, d))
    return X / X.sum(axis=1, keepdims=True)


def sparse_histograms(rng, n, d, density=0.4, dtype=np.float64):
    """Unnormalised uniform(0, 1) histograms from `rng`, a fraction `density`
    of the bins non-zero; the first row is all zeros (an empty histogram)."""
    A = rng.random((n, d)) * (rng.random((n, d)) < density)
    A[0] = 0.0  # an empty histogram
    return A.astype(dtype)


# Pixel values 0..16 with the frequencies of scikit-learn's digits (49 %
# zeros, many 16s): 64-bin histograms like the L1-normalised digits.
DIGIT_LEVELS = np.array([0.489, 0.036, 0.029, 0.026, 0.028, 0.024, 0.022, 0.023,
                         0.03, 0.022, 0.024, 0.025, 0.032, 0.031, 0.031, 0.037,
                         0.091])


def digits_like(n, seed=0):
    """`n` L1-normalised 64-bin histograms of pixel values drawn with the
    frequencies of scikit-learn's digits (`DIGIT_LEVELS`)."""
    rng = np.random.default_rng(seed)
    X = rng.choice(17, size=(n, 64), p=DIGIT_LEVELS / DIGIT_LEVELS.sum())
    X = X.astype(np.float64)
    return X / X.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- ragged sets


def random_sets(rng, n_sets, d, dtype, *, low=1, high=50, shift=0.0):
    """`n_sets` sets of standard normal `d`-dimensional points plus `shift`,
    as `dtype`, from `rng`; each size uniform in low..high (inclusive)."""
    return [
        (rng.normal(size=(rng.integers(low, high + 1), d)) + shift).astype(dtype)
        for _ in range(n_sets)
    ]


def sets_of_sizes(sizes, d, dtype, seed):
    """Sets of standard normal `d`-dimensional points, as `dtype`, of the
    given `sizes`."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)).astype(dtype) for n in sizes]


def sets_with_random_means(n_sets, seed):
    """`n_sets` sets of 2-D normal points, each around its own standard
    normal mean; sizes uniform in 1..19, all drawn first."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, size=n_sets)
    return [rng.normal(loc=rng.normal(size=2), size=(s, 2)) for s in sizes]
