"""Generated data for the demo, the benchmarks and the examples."""

import numpy as np

__all__ = ["bag_of_words"]


def bag_of_words(n, d=300, density=0.135, seed=0):
    """`n` L1-normalised word-count histograms over a vocabulary of `d`
    words, float64 of shape (n, d): word j occurs in a document with a
    Zipf-like probability (on average a share `density` of the words), with
    1 + Poisson(1.5) counts. About 13.5 % of the entries are non-zero."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / (np.arange(d) + 10.0) ** 0.8
    p = np.minimum(popularity * density * d / popularity.sum(), 1.0)
    present = rng.random((n, d)) < p
    counts = present * (1 + rng.poisson(1.5, size=(n, d)))
    counts[counts.sum(axis=1) == 0, 0] = 1
    return counts / counts.sum(axis=1, keepdims=True)
