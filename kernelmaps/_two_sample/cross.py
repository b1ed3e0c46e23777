"""The cross test, cross-MMD of Shekhar, Kim and Ramdas (2022): the
samples' first halves against the witness function of their second
halves, studentised, with a standard normal null: one pass over a quarter
of the pooled kernel matrix, no resampling."""

import math

import numpy as np
import scipy.stats

from .._engine import lapack
from .._engine.layout import power_of_two_exponent
from .._engine.progress import progress_bar
from .._engine.schedule import thread_map
from .cost import warn_long_call
from .dask_pass import cross_dask, cross_part
from .resampling import MIN_BLOCK
from .result import result


def test(iv):
    """Cross-MMD: the witness function of the second halves (X2, Y2),
    ``g(z) = mean k(z, X2) - mean k(z, Y2)``, at the first halves' objects,
    from the blocks of the kernel between the first and the second halves
    (tasks of a block each, their parts added in order); the statistic
    ``(mean g(X1) - mean g(Y1)) / sqrt(var g(X1) / n1 + var g(Y1) / m1)``,
    standard normal under the null. Reads the `Checked` call's specs,
    pooled objects Z, sizes, gamma, budget, lazy, n_threads, progress and
    alpha."""
    warn_long_call(iv)
    spec = iv.specs[0]
    value = spec.scales(iv.Z, iv.gamma, None, iv.n_threads)[0]
    size = max(MIN_BLOCK, min(CROSS_BLOCK, int(math.sqrt(
        iv.budget / (8.0 * 6 * iv.n_threads)))))
    firsts, seconds = halves(iv.n, iv.N)
    rows = [(a, min(a + size, b)) for a, b in firsts
            for a in range(a, b, size)]
    cols = [(a, min(a + size, b), weight) for a, b, weight in seconds
            for a in range(a, b, size)]

    def part(task):
        (r0, r1), (c0, c1, weight) = rows[task[0]], task[1]
        return cross_part((spec, value), spec.take(iv.Z, slice(r0, r1)),
                          spec.take(iv.Z, slice(c0, c1)), weight)

    g = np.zeros(sum(b - a for a, b in firsts))
    starts = np.cumsum([0] + [b - a for a, b in rows])
    tasks = [(i, c) for i in range(len(rows)) for c in cols]
    if iv.lazy:  # Dask input: a task per pair of ranges
        g = np.concatenate(cross_dask(spec, iv.Z, value, rows, cols))
    else:
        with progress_bar(iv.progress, len(tasks), "mmd_test") as bar, \
                lapack.one_blas_thread(), np.errstate(invalid="ignore"):
            for (i, _), values in zip(tasks, thread_map(part, tasks,
                                                        iv.n_threads),
                                      strict=True):
                g[starts[i]:starts[i + 1]] += values
                bar.update(1)
    return conclude(iv, g, spec, value)


def halves(n, N):
    """The ranges (start, stop) of the pooled objects (n of X, then those
    of Y) in the first halves, X1 and Y1, and, with the weights of their
    means in the witness function, in the second halves, X2 and Y2."""
    m = N - n
    n1, m1 = n // 2, m // 2
    return (((0, n1), (n, n + m1)),
            ((n1, n, 1.0 / (n - n1)), (n + m1, N, -1.0 / (m - m1))))


def conclude(iv, g, spec, value):
    """The cross test's result from the witness function's values `g` (a
    NumPy vector) at the first halves' objects, those of X first: the
    studentised difference of their means (0 where g is constant, with
    p-value 1), for the `Checked` call's sizes and alpha, the kernel of
    `spec` at scale `value`; a ValueError where g is not finite (the
    kernel's values, or their sums, beyond float64). The statistic does
    not change with g's scale: g is taken near 1 by a power of two
    (exact), so that its variance neither overflows nor vanishes (the
    energy kernel of points at 1e160 or 1e-200 gave a statistic of 0)."""
    n1, m1 = iv.n // 2, (iv.N - iv.n) // 2
    g = spec.finite(g)
    g = np.ldexp(g, power_of_two_exponent(np.abs(g).max(initial=0.0)))
    gx, gy = g[:n1], g[n1:]
    statistic = gx.mean() - gy.mean()
    scale = math.sqrt(gx.var(ddof=1) / n1 + gy.var(ddof=1) / m1)
    if scale == 0.0:  # g constant: no evidence either way
        statistic, pvalue = 0.0, 1.0
    else:
        statistic = float(statistic / scale)
        pvalue = float(scipy.stats.norm.sf(statistic))
    return result(statistic, pvalue, None, iv.alpha, "cross", spec.name,
                  spec.report(value))


# The largest blocks of the cross test, a side (tasks of some 10 ms).
CROSS_BLOCK = 2048
