"""The resampling draws of the tests of the kernel: one seed per block of
`RESAMPLE_BLOCK` resamples, drawn from the call's generator (the blocks can
be drawn again, alike, for each kernel and each batch of a block pass),
the draws of a block (the indicators of a permutation's first sample, or
Rademacher signs), and their products with vectors."""

import numpy as np


def block_seeds(generator, total):
    """One seed per block of `RESAMPLE_BLOCK` resamples (the first resample of the
    first block is the observed sample): the blocks can be drawn again,
    alike, for each kernel of the aggregated test."""
    n_blocks = -(-total // RESAMPLE_BLOCK)
    sizes = np.full(n_blocks, RESAMPLE_BLOCK)
    sizes[-1] = total - RESAMPLE_BLOCK * (n_blocks - 1)
    return list(zip(generator.integers(2**63, size=n_blocks), sizes,
                    strict=True))


# Resamples per block of draws (one seed each): a block's product K0 @ S is
# (N, RESAMPLE_BLOCK).
RESAMPLE_BLOCK = 256


def draw_block(seed, size, first, n, N, mode, dtype):
    """The resamples of one block, of samples of n and N - n objects: the
    indicators of the first sample (N x size) for permutations (`mode`
    "permutation"), else Rademacher signs of the min(n, N - n) pairs; for
    the `first` block, column 0 is the observed sample."""
    generator = np.random.default_rng(seed)
    if mode != "permutation":
        E = generator.integers(0, 2, size=(min(n, N - n), size), dtype=np.int8)
        E = (2 * E - 1).astype(dtype)
        if first:
            E[:, 0] = 1
        return E
    order = generator.permuted(np.tile(np.arange(N), (size, 1)), axis=1)
    S = np.zeros((N, size), dtype=dtype)
    S[order[:, :n].T, np.arange(size)] = 1
    if first:
        S[:, 0] = 0
        S[:n, 0] = 1
    return S


def drawer(seeds, n, N, mode, dtype):
    """A function of i giving the draws of block i (see `draw_block`)."""
    return lambda i: draw_block(*seeds[i], i == 0, n, N, mode, dtype)


def shared_draws(seeds, n, N, mode, rows):
    """A function of i giving the draws of block i (`draw_block`, int8),
    the same for every kernel: drawn once (1 byte an entry, `rows` of them
    per resample) and kept, unless they would take much memory (then drawn
    again for each kernel, alike)."""
    draw = drawer(seeds, n, N, mode, np.int8)
    if rows * sum(b for _, b in seeds) > RESAMPLE_DRAWS_KEPT:
        return draw
    return [draw(i) for i in range(len(seeds))].__getitem__


# Bytes of resampling draws the aggregated test keeps for all its kernels
# (beyond, it draws them again for each kernel).
RESAMPLE_DRAWS_KEPT = 1 << 28


def draw_projections(V, S):
    """``V @ S`` (float64) for vectors V (k x N) and draws S (N x b, float
    or int8), in blocks of rows of S."""
    out = np.zeros((V.shape[0], S.shape[1]))
    step = max(1, CAST_ROWS)
    for a in range(0, S.shape[0], step):
        out += V[:, a:a + step] @ S[a:a + step].astype(np.float64, copy=False)
    return out


# Rows of int8 draws cast to float64 at a time (a few MB).
CAST_ROWS = 1024
