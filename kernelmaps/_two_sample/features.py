"""The feature passes of `mmd_test`: the feature map of the linear test and
of the resampling tests on features (`fitted_map`), and the sums of the
permutation test and the wild bootstrap with the linear kernel of its
features, in one pass over the samples, a block of rows at a time
(`feature_pass`).

With the linear kernel of features ``phi``, every statistic of a split of
the pooled sample is a function of two sums over its first part: of the
features, ``s = sum phi(z_i)``, and of their squared norms (`split_mmd2`).
A permutation is a uniform random subset of n of the N objects, drawn a
block of rows at a time: first how many of each block's rows it takes (a
multivariate hypergeometric draw, for every block at once), then which
(a shuffle of the block's rows, from the block's own seed). Each block
then adds its part of every resample's sums, ``F' I`` for its features F
(k x r) and indicators I (k x B): memory O(r B) for r features and B
resamples, not O(N r) or O(N B); time O(N r B). The blocks are
independent (threads, each product on one BLAS thread), and their parts
are added in block order, so the result does not depend on the threads.
The wild bootstrap (samples of equal size) does the same with the
differences ``phi(x_i) - phi(y_i)`` and a block of Rademacher signs.

The draws depend on `rng` and on the draw blocks (`FEATURE_TEST_ROWS`
rows), not on the threads or the working memory.
"""

import contextlib
import copy

import numpy as np

from .._base import FeatureMap
from .._engine import lapack
from .._engine.schedule import thread_map
from .._probes import is_dask_array
from .._spec import BANDWIDTH_SAMPLE, pool_any, spec_for, value_sample
from .._validation import check_scalar

# Rows of a draw block: the product of a block's features with its draws
# (k r B multiply-adds, 2e9 for r = B = 1000) takes tens of milliseconds,
# the latency of Ctrl-C; the shuffles of its indicators (k B) cost less.
FEATURE_TEST_ROWS = 2048


def split_statistic(sxx, rs, dx, off_total, diag_total, n, m, unbiased):
    """The MMD^2 of splits of the pooled sample (n objects in the first
    part, m in the second) from the kernel's sums: ``sxx`` over the pairs
    i != j of the first part, ``rs`` over the pairs (i in it, j != i), ``dx``
    over its diagonal, ``off_total`` over all pairs i != j, ``diag_total``
    over the whole diagonal: unbiased (the U-statistic) or biased (the
    V-statistic). Shared by the kernel's and the features' tests."""
    sxy = rs - sxx
    syy = off_total - 2 * rs + sxx
    if unbiased:
        return sxx / (n * (n - 1)) + syy / (m * (m - 1)) - 2 * sxy / (n * m)
    dy = diag_total - dx
    return (sxx + dx) / n**2 + (syy + dy) / m**2 - 2 * sxy / (n * m)


def split_mmd2(sx, dx, total, norms, n, m, unbiased):
    """The MMD^2 of the linear kernel of features for splits of the pooled
    sample, from the sums over each split's first part of the features
    ``sx`` (r x b) and of their squared norms ``dx`` (b,), the sums over
    the pooled sample ``total`` (r,) and ``norms`` (a float)."""
    sxx = np.einsum("ij,ij->j", sx, sx) - dx  # pairs i != j within x
    rs = total @ sx - dx  # pairs (i in x, j != i)
    return split_statistic(sxx, rs, dx, total @ total - norms, norms, n, m,
                           unbiased)


def _blocks(sizes):
    """(sample, start, stop) of each draw block: the rows of each sample
    (sizes: its number of rows), `FEATURE_TEST_ROWS` at a time."""
    return [(sample, start, min(start + FEATURE_TEST_ROWS, size))
            for sample, size in enumerate(sizes)
            for start in range(0, size, FEATURE_TEST_ROWS)]


def pass_bytes(width, B, n_threads, rows):
    """Bytes the pass holds: the sums of the resamples, and for each task
    in flight (two per thread) a block's features, its draws (as float64)
    and its part of the sums (`rows`: the rows of the larger sample)."""
    k = min(FEATURE_TEST_ROWS, rows)
    return 8.0 * (width * B + 2 * n_threads * (k * width + 2 * k * B
                                                + width * B + B))


def feature_pass(features, sizes, B, mode, generator, n_threads, bar):
    """Sums of the features of every resample's first part, one pass.

    `features(sample, start, stop)` gives the float64 features (k x r) of
    the rows start:stop of sample 0 (X) or 1 (Y), shifted alike. `mode`
    "permutation": returns ``(sx, dx, total, norms, observed)`` with the
    sums over each permutation's first n objects (r x B, B), over the
    pooled sample (r,), (float), and the observed split's ``(s, d)``.
    "wild" (equal sizes): the sums of the signed differences ``sum e_i
    (phi(x_i) - phi(y_i))`` of each resample (r x B), the sum of their
    squared norms (float), and the observed (all signs +1) one (r,).
    """
    blocks, draw = resampling_draws(sizes, B, mode, generator)

    def permutation_part(j):
        """The block's (F' I, q' I, F' 1, q' 1) for its features F, their
        squared norms q and the indicators I of the permutations' first
        parts among its rows."""
        sample, start, stop = blocks[j]
        F = features(sample, start, stop)
        q = np.einsum("ij,ij->i", F, F)
        draws = draw(j)
        return F.T @ draws, q @ draws, F.sum(axis=0), np.sum(q)

    def wild_part(j):
        """The block's (D' E, |D|^2, D' 1) for the differences D of its
        pairs and the signs E."""
        _, start, stop = blocks[j]
        D = features(0, start, stop) - features(1, start, stop)
        return D.T @ draw(j), np.einsum("ij,ij->", D, D), D.sum(axis=0)

    sums = observed = None
    with lapack.one_blas_thread():
        parts = thread_map(wild_part if mode == "wild" else permutation_part,
                           range(len(blocks)), n_threads)
        for (sample, _, _), part in zip(blocks, parts, strict=True):
            if sums is None:
                sums = [np.zeros_like(value) for value in part]
                observed = [np.zeros_like(value) for value in part[2:]]
            for total, value in zip(sums, part, strict=True):
                total += value
            if sample == 0 and mode != "wild":  # a block of X
                for total, value in zip(observed, part[2:], strict=True):
                    total += value
            bar.update(1)
    return pass_result(sums, observed, mode)


def pass_result(sums, observed, mode):
    """`feature_pass`'s result from the sums of its blocks' parts (NumPy)
    and of those of X's blocks (`observed`; permutations)."""
    if mode == "wild":
        sd, dd, s = sums
        return sd, float(dd), s
    sx, dx, total, norms = sums
    return sx, dx, total, float(norms), (observed[0], float(observed[1]))


def resampling_draws(sizes, B, mode, generator):
    """``(blocks, draw)``: the blocks of rows of `feature_pass` ((sample,
    start, stop): of X and Y for permutations, of the pairs for the wild
    bootstrap) and ``draw(j)``, the B resamples' draws among the rows of
    block j (float64, rows x B): the indicators of the permutations' first
    parts (their counts per block drawn first, hypergeometric), or the
    signs of the pairs; drawn from `generator` in this order."""
    n = sizes[0]
    if mode == "wild":
        blocks = [(0, a, b) for _, a, b in _blocks([n])]
    else:
        blocks = _blocks(sizes)
        rows = np.array([b - a for _, a, b in blocks])
        counts = generator.multivariate_hypergeometric(rows, n, size=B,
                                                       method="marginals")
    seeds = generator.integers(2**63, size=len(blocks))

    def draw(j):
        _, start, stop = blocks[j]
        generator = np.random.default_rng(seeds[j])
        if mode == "wild":
            signs = generator.integers(0, 2, size=(stop - start, B),
                                       dtype=np.int8)
            return 2.0 * signs - 1.0
        chosen = np.arange(stop - start) < counts[:, j, None]  # (B, k)
        return generator.permuted(chosen, axis=1).T.astype(np.float64)

    return blocks, draw


def pass_steps(sizes, mode):
    """The bar's steps of `feature_pass`: its blocks."""
    return len(_blocks(sizes[:1] if mode == "wild" else sizes))


def fitted_map(iv, host=None, sample=None):
    """``(fmap, name, gamma)``: the fitted map of `feature_map` (an int:
    that many random Fourier features of the point kernel, at the default
    gamma where none is given; a map: fitted, as a copy, on the pooled
    objects where it is not), the name the result reports and the map's
    gamma. Reads the `Checked` call's feature_map, kind, samples X and Y,
    method, kernels, gamma and generator; the points it reads are
    ``host(rows)`` (NumPy; `as_numpy` by default) and ``sample()``, the
    `value_sample` of the first `HEAD_ROWS` points of X and of Y (by
    default of theirs on the host)."""
    host = host or as_numpy
    feature_map = iv.feature_map
    if isinstance(feature_map, FeatureMap):
        fmap = feature_map
        if not fmap.__sklearn_is_fitted__():  # (a copy: the user's stays)
            fmap = copy.deepcopy(fmap).fit(
                np.concatenate([host(iv.X), host(iv.Y)])
                if iv.kind == "points" else pool_any(iv.X, iv.Y))
            # Each sample is transformed as given, weighted or not (the
            # pooled sample holds the weights of either): no warning for a
            # sample without.
            fmap._fit_weighted = False
        return fmap, type(fmap).__name__, getattr(fmap, "gamma_", None)
    if iv.kind != "points":
        raise TypeError(
            f"method={iv.method!r} on objects other than points needs "
            f"feature_map, a feature map of this package that takes them "
            f"(e.g. RandomDistributionFeatures for sets, Chi2DirectMap for "
            f"histograms)")
    width = (linear_width(iv.X.shape[0] + iv.Y.shape[0], iv.X.shape[1])
             if feature_map is None
             else check_scalar(feature_map, "feature_map", kind="int", low=1))
    kernel = iv.kernels[0]
    fmap = spec_for(kernel).random_features(
        width, iv.gamma, host(iv.X[:2, :]), sample or (lambda: value_sample(
            np.concatenate([host(iv.X[:HEAD_ROWS]), host(iv.Y[:HEAD_ROWS])]),
            BANDWIDTH_SAMPLE)), iv.generator)
    if fmap is None:
        raise TypeError(f"method='linear' with the {kernel!r} kernel needs "
                        f"feature_map, a feature map of this package (the "
                        f"kernel has no random features of its own)")
    return fmap, kernel, fmap.gamma_


def feature_shift(fmap, X):
    """The mean features of the first objects of X, about which the tests
    sum the features (no cancellation where their mean is far from 0 next
    to their spread)."""
    return np.asarray(fmap.transform(as_numpy(X[:2])),
                      dtype=np.float64).mean(axis=0)


@contextlib.contextmanager
def as_sample(name):
    """A map's ValueError about its input, which it calls X, said of the
    sample `name`."""
    try:
        yield
    except ValueError as err:
        message = str(err)
        if name == "Y" and message.startswith("X "):
            message = "Y " + message[2:]
        raise ValueError(message) from None


def as_numpy(A):
    return A.compute() if is_dask_array(A) else A


def linear_width(N, d):
    """The default number of random features of the linear test: it grows
    with the pooled sample N (and the dimension d), from 100 to 1000."""
    return int(min(1000, max(100, 4 * d, N // 10)))


# The first points of each sample whose value sample gives the linear
# test's default gamma (of large or lazy samples: their heads).
HEAD_ROWS = 4 * BANDWIDTH_SAMPLE
# The rows of each sample whose features estimate their covariance in the
# linear test (its null distribution's weights): the rest add to the means
# only (time O(N r + r^2 LINEAR_COVARIANCE_ROWS), not O(N r^2)).
LINEAR_COVARIANCE_ROWS = 1 << 16
