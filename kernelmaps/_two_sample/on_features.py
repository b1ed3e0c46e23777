"""The permutation test and the wild bootstrap on explicit features: with
the linear kernel of the features of `feature_map`, in one pass over the
samples (`features.feature_pass`)."""

import numpy as np

from .._engine.progress import progress_bar
from . import features
from .cost import budget_message, warn_long_call
from .result import pvalue, result


def test(iv):
    """The permutation test or the wild bootstrap with the linear kernel of
    the features of the `Checked` call's feature_map (`feature_pass`): one
    pass over the samples X and Y, memory O(r B) for r features and B
    resamples. Reads also its method, sizes, resamples, unbiased,
    generator, n_threads, budget, progress and alpha."""
    fmap, name, gamma = features.fitted_map(iv)
    n, m = iv.n, iv.N - iv.n
    samples = (iv.X, iv.Y)
    shift = features.feature_shift(fmap, iv.X)
    warn_long_call(iv, shift.size)

    def mapped(sample, start, stop):
        with features.as_sample("XY"[sample]):
            F = fmap.transform(
                features.as_numpy(samples[sample][start:stop]), workers=1)
        F = np.asarray(F, dtype=np.float64) - shift
        if not np.isfinite(F).all():
            raise ValueError(NOT_FINITE)
        return F

    mode = "wild" if iv.method == "wild_bootstrap" else "permutation"
    n_threads = threads_within(iv, shift.size, iv.n_threads, iv.budget)
    steps = features.pass_steps((n, m), mode)
    with progress_bar(iv.progress, steps, "mmd_test") as bar:
        out = features.feature_pass(mapped, (n, m), iv.B, mode, iv.generator,
                                    n_threads, bar)
    return conclude(iv, out, mode, name, gamma)


# The error of features that are not finite.
NOT_FINITE = ("the features of X or Y are not finite (NaN or infinity in the "
              "points?)")


def threads_within(iv, width, n_threads, budget):
    """The threads of a feature pass of `width` features whose memory
    (`features.pass_bytes`) fits the `budget`, at most `n_threads`; a
    ValueError that says what it needs where even one does not. Reads the
    `Checked` call's sizes and resamples."""
    rows = max(iv.n, iv.N - iv.n)
    while n_threads > 1 and (features.pass_bytes(width, iv.B, n_threads, rows)
                             > budget):
        n_threads -= 1
    need = features.pass_bytes(width, iv.B, n_threads, rows)
    if need > budget:
        raise ValueError(budget_message(
            iv, need, f"the sums of n_resamples={iv.B} resamples of {width} "
                      f"features", "or use fewer features or resamples"))
    return n_threads


def conclude(iv, out, mode, name, gamma):
    """The test's result from the feature pass's sums `out`
    (`features.feature_pass`), in `mode` ("wild" or "permutation"), for
    the map's `name` and `gamma`. Reads the `Checked` call's sizes,
    unbiased, method and alpha."""
    n, m = iv.n, iv.N - iv.n
    if mode == "wild":
        sd, dd, observed = out
        null = (np.einsum("ij,ij->j", sd, sd) - dd) / (n * (n - 1))
        statistic = float((observed @ observed - dd) / (n * (n - 1)))
    else:
        sx, dx, total, norms, (s, d) = out
        null = features.split_mmd2(sx, dx, total, norms, n, m, iv.unbiased)
        statistic = float(features.split_mmd2(
            s[:, None], np.array([d]), total, norms, n, m, iv.unbiased)[0])
    return result(statistic, pvalue(statistic, null, iv.resolution), null, iv.alpha,
                  iv.method, name, gamma)
