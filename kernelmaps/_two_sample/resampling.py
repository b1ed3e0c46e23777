"""The resampling tests of the kernel (the permutation test, the wild
bootstrap, the aggregated and fused tests): the statistics of every kernel
and scale on every resample, and the method's conclusion from them
(`resampled_test`).

Every resampled statistic comes from the kernel of the pooled sample, a
matrix per kernel and scale computed once where it fits the working memory
(`in_memory`), else blocks of it computed once per batch of resamples
(`on_blocks`, `blocks`); the resamples are evaluated together, a block of
them per matrix product: permutations (`permutation`), Rademacher signs of
the pairs (`wild_bootstrap`), swaps of the paired objects (`aggregated`,
samples of unequal sizes).

The kernels of the aggregated and fused tests share the work between their
scales (the specs: one distance block for every scale; the point kernels'
values at c times a gamma from their logarithm).
"""

import collections
import functools
import math

import numpy as np

from .._engine import lapack
from .._engine.pair_sums import shifted_matrix
from .._engine.progress import progress_bar
from .._engine.schedule import thread_map
from .._warnings import constant_value, degenerate
from . import blocks, draws, permutation, wild_bootstrap
from .aggregated import swap_finish, swap_form
from .cost import budget_message, warn_long_call
from .dask_pass import run_blocks_dask

# How the statistics are computed within the working memory (`make_plan`):
# whole matrices (`blocks` False), or blocks of `size` objects (`tasks` per
# pass) with the resamples in `batches` (lists of blocks of `block_seeds`).
Plan = collections.namedtuple("Plan", "blocks batches tasks size")


def resampled_test(conclude, iv):
    """A resampling test of the kernel: the statistics of every kernel and
    scale of the `Checked` call `iv` on its resamples (the observed sample
    first), and the method's result, ``conclude(iv, values, names, scales,
    kinds, norms)``: the statistics (L, total) of its L kernels and scales,
    the observed first, their names and reported scales, how each is
    degenerate (see `degenerate`; None where it is not) and the Frobenius
    norms of their pooled matrices with their diagonal 0 (permutations;
    None in the other modes).
    Reads the call's specs, pooled objects Z, sizes, gamma, grid, mode,
    generator, resamples, n_threads and progress.

    The kernel matrices are computed whole where they fit in the working
    memory (`in_memory`), else a block at a time (`on_blocks`; always for
    Dask input, whose passes are Dask tasks); the same draws either way
    (`block_seeds`), so the same p-values. (The kernels' matrices are
    computed here, one call below `mmd_test`: the table of methods binds
    `conclude`.)"""
    warn_long_call(iv)
    seeds = draws.block_seeds(iv.generator, iv.total)
    scales = []
    for spec in iv.specs:  # (a loop, not a comprehension: one call less)
        scales.append(spec.scales(iv.Z, iv.gamma, iv.grid, iv.n_threads))
    plan = make_plan(iv, sum(len(s) for s in scales))
    steps = (len(iv.specs) * plan.tasks * len(plan.batches) if plan.blocks
             else sum(1 + len(s) * len(seeds) for s in scales))
    found = []  # (statistics, name, reported scale, degenerate kind, norm)
    with progress_bar(iv.progress, steps, "mmd_test") as bar:
        for spec, values in zip(iv.specs, scales, strict=True):
            run = on_blocks if plan.blocks else in_memory
            for value, (statistics, kind, norm) in zip(
                    values, run(iv, spec, values, seeds, plan, bar), strict=True):
                found.append((statistics, spec.name, spec.report(value), kind
                              if spec.degenerate_scale or kind == "constant"
                              else None, norm))
    stats, names, reported, kinds, fro = zip(*found, strict=True)
    gammas = np.array(reported, dtype=object if None in reported else np.float64)
    return conclude(iv, np.array(stats), np.array(names), gammas, kinds,
                    np.array(fro))


def degenerate_kind(K, median_scale, Z):
    """How the pooled kernel matrix `K` of the objects `Z` carries no
    information: "zero" or "one" (`degenerate`: its scale), "constant"
    (the objects are equal as the kernel sees them: points all equal, or a
    kernel 1 everywhere at the scale of the median heuristic
    (`median_scale`), which is then arbitrary, or a kernel of objects
    constant on them), or None."""
    kind = degenerate(K, symmetric=True)
    if kind == "one" and (median_scale or (isinstance(Z, np.ndarray)
                                           and np.all(Z[:1] == Z))):
        return "constant"
    if kind is None and constant_value(K, True) is not None:
        return "constant"
    return kind


def in_memory(iv, spec, scales, seeds, plan, bar):
    """(statistics, degenerate kind, norm) of each scale from the whole
    pooled matrix, computed once per scale; the resamples a block at a
    time, each block one matrix product (`resampled`). Reads the
    `Checked` call's mode, sizes, pooled objects Z, gamma, grid, dtype,
    unbiased and n_threads."""
    n, N, mode = iv.n, iv.N, iv.mode
    rows = N if mode == "permutation" else min(n, N - n)
    draw = draws.shared_draws(seeds, n, N, mode, rows)
    shifts = (permutation.shifts(spec, iv.Z, N, scales) if mode == "permutation"
              else None)
    prepare = functools.partial(  # (the draws as the products take them)
        blocks.product_draws, n=n, N=N, dtype=iv.dtype,
        mode="pooled" if mode == "permutation" else "pairs")
    out, buffer = [], None
    for index, K in enumerate(spec.blocks(iv.Z, None, scales, iv.n_threads)):
        if index == 0:  # (the bar's step of the kernel matrices)
            bar.update(1)
        K = np.ascontiguousarray(K, dtype=np.float64)
        kind = degenerate_kind(K, iv.gamma is None and not iv.grid, iv.Z)
        diag = spec.finite(np.diag(K).copy())
        np.fill_diagonal(K, 0.0)
        norm = None
        if mode == "permutation":  # (the shift: see blocks' docstring)
            buffer, r, squares, finite = shifted_matrix(
                K, shifts[index], iv.dtype, buffer, iv.n_threads)
            if not finite:
                spec.finite(K)  # (raises)
            norm = math.sqrt(squares)
            form = (buffer, permutation.finish(r, diag, n, N - n, iv.unbiased))
        elif mode == "wild":
            K = spec.finite(K)
            H = wild_bootstrap.h_matrix(K, n)
            buffer = _in_dtype(H, blocks.products_dtype(iv.dtype, H), buffer)
            form = (buffer, wild_bootstrap.finish(n * (n - 1) // 2))
        else:
            K = spec.finite(K)
            form = swap_form(lambda r, K=K: K[r], n, N - n,
                             blocks.products_dtype(iv.dtype, K), iv.n_threads)
        del K
        out.append((resampled(form, draw, prepare, len(seeds), bar,
                              iv.n_threads),
                    kind, norm))
        del form
    return out


def _in_dtype(A, dtype, buffer):
    """A in `dtype`: A itself where it is of it, else a copy in `buffer`
    where that is an array of A's shape in `dtype` (the matrices of the
    scales of a test, one after the other: no page faults of a fresh array
    for each), else a new array."""
    if A.dtype == dtype:
        return A
    if buffer is None or buffer.shape != A.shape or buffer.dtype != dtype:
        buffer = np.empty(A.shape, dtype=dtype)
    np.copyto(buffer, A, casting="same_kind")
    return buffer


def on_blocks(iv, spec, scales, seeds, plan, bar):
    """(statistics, degenerate kind, norm) of each scale from blocks of
    the kernel (`blocks.run_blocks`), one pass per batch of resamples:
    memory for the draws of a batch and a few blocks, not the pooled
    matrix. Reads the `Checked` call's mode, sizes, pooled objects Z,
    dtype, incomplete, lazy, unbiased and n_threads."""
    n, N, m, mode = iv.n, iv.N, iv.N - iv.n, iv.mode
    layout = blocks.Layout(
        "pooled" if mode == "permutation" else "pairs", n, N, plan.size,
        linear=mode == "swap", dtype=iv.dtype, band=iv.incomplete,
        shifts=(permutation.shifts(spec, iv.Z, N, scales)
                if mode == "permutation" else None))
    draw = draws.drawer(seeds, n, N, mode, np.int8)
    L = len(scales)
    statistics = np.empty((L, sum(b for _, b in seeds)))
    kinds = norms = finishes = None
    for batch in plan.batches:
        if iv.lazy:  # Dask input: the pass (and the draws) as Dask tasks
            totals, drawn = run_blocks_dask(
                spec, iv.Z, scales, layout,
                [functools.partial(draw, i) for i in batch], bar)
        else:
            drawn = np.concatenate([draw(i) for i in batch], axis=1)
            totals = blocks.run_blocks(spec, iv.Z, scales, layout, drawn,
                                       iv.n_threads, bar)
        quad = blocks.range_total(totals, "quad", len(layout.ranges))
        if finishes is None:
            kinds = blocks.degenerate_kinds(totals[("flags",)])
            finishes, norms = _block_finish(totals, layout, mode, L, n, m,
                                            iv.unbiased)
        column = sum(seeds[i][1] for i in range(batch[0]))
        width = drawn.shape[1]
        for k, finish in enumerate(finishes):
            statistics[k, column:column + width] = finish(drawn, quad[k])
        del drawn, totals
    return list(zip(statistics, kinds, norms, strict=True))


def _block_finish(totals, layout, mode, L, n, m, unbiased):
    """The ``finish(draws, quad)`` of each scale (its statistics on a batch
    of int8 `draws`, from their quadratic forms), and the Frobenius norms,
    from the totals of a pass."""
    if mode == "wild":
        return [wild_bootstrap.finish(layout.pairs)] * L, [None] * L
    if mode == "permutation":
        count = len(layout.ranges)
        r = blocks.pooled_vectors(totals, "r", count)
        diag = blocks.pooled_vectors(totals, "diag", count)
        norms = np.sqrt(np.maximum(blocks.range_total(totals, "fro", count),
                                   0.0))
        return ([permutation.finish(r[k], diag[k], n, m, unbiased)
                 for k in range(L)], list(norms))
    trd = blocks.range_total(totals, "trd", len(layout.ranges))
    pairs, extra = len(layout.ranges), len(layout.unpaired)
    rPx, rPy = (blocks.pooled_vectors(totals, name, pairs)
                for name in ("rPx", "rPy"))
    rUx, rUy, rPu, rUu = (
        blocks.pooled_vectors(totals, name, count) if count else np.zeros((L, size))
        for name, count, size in (("rUx", extra and pairs, rPx.shape[1]),
                                  ("rUy", extra and pairs, rPx.shape[1]),
                                  ("rPu", extra, 0), ("rUu", extra, 0)))
    c_u = 1.0 if n > m else 0.0  # c of the unpaired objects
    finishes = []
    for k in range(L):
        r = (rPx[k] + rUx[k], rPy[k] + rUy[k], rPu[k] + rUu[k])
        u = (0.5 * rPx[k] + c_u * rUx[k], 0.5 * rPy[k] + c_u * rUy[k],
             0.5 * rPu[k] + c_u * rUu[k])
        T = math.fsum(math.fsum(v) for v in r)
        cKc = 0.5 * (math.fsum(u[0]) + math.fsum(u[1])) + c_u * math.fsum(u[2])
        rc = 0.5 * (math.fsum(r[0]) + math.fsum(r[1])) + c_u * math.fsum(r[2])
        finishes.append(swap_finish(u[0] - u[1], r[0] - r[1],
                                    (T, cKc, rc, float(trd[k])), n, m))
    return finishes, [None] * L


def make_plan(iv, L):
    """How the statistics are computed within the working memory: whole
    matrices, or blocks of `size` objects with the resamples in `batches`
    (lists of blocks of `block_seeds`), for `L` kernels and scales; a
    ValueError in the user's terms where even blocks do not fit. Reads the
    `Checked` call's mode, sizes, resamples, n_threads, incomplete, lazy,
    budget and dtype."""
    n, N, mode, total, n_threads = iv.n, iv.N, iv.mode, iv.total, iv.n_threads
    rows = N if mode == "permutation" else min(n, N - n)
    seeds_count = -(-total // draws.RESAMPLE_BLOCK)
    band = iv.incomplete  # (blocks of its size at least, always)
    if (band is None and not iv.lazy
            and _in_memory_bytes(iv) <= iv.budget):
        return Plan(False, [list(range(seeds_count))], 0, None)
    # a task: its kernel blocks, the draws of its two ranges as float64 and
    # one product (3 size width): a size**2 + b size
    a = 8.0 * (4 if mode == "permutation" else 13)

    def shared(width):
        """The bytes of a batch of `width` resamples outside the tasks
        running: its draws (int8) and their casts to float64 (rows at a
        time), and the contributions of the tasks run or waiting
        (thread_map: two per thread)."""
        casts = 8.0 * (min(rows, draws.CAST_ROWS) + 2) * width
        contributions = 8.0 * L * (width + 2 * rows / n_threads)
        return rows * width + casts + (2 * n_threads + 1) * contributions

    for per_batch in range(seeds_count, 0, -1):
        width = min(total, per_batch * draws.RESAMPLE_BLOCK)
        left, b = (iv.budget - shared(width)) / n_threads, 24.0 * width
        if left > 0:
            size = int((-b + math.sqrt(b * b + 4 * a * left)) / (2 * a))
            if size >= min(max(MIN_BLOCK, band or 0), rows):
                break
    else:
        width = draws.RESAMPLE_BLOCK
        need = shared(width) + n_threads * MIN_BLOCK * (a * MIN_BLOCK
                                                        + 24.0 * width)
        raise ValueError(budget_message(
            iv, need, f"the resampling draws of {draws.RESAMPLE_BLOCK} "
                      f"resamples, and blocks of {MIN_BLOCK} objects",
            "use method='linear' with feature_map (a linear-time test on "
            "explicit features), or test a random subsample of X and Y"))
    # tasks of about RESAMPLE_TASK_WORK multiply-adds (twice as many in
    # float32, as fast), and RESAMPLE_PRODUCT_WORK at most in one scale's
    # product, where memory allows
    rate = 2.0 if iv.dtype == np.float32 else 1.0
    work = min(math.sqrt(rate * RESAMPLE_TASK_WORK / max(1.0, L * width)),
               math.sqrt(rate * RESAMPLE_PRODUCT_WORK / width))
    size = int(max(min(MIN_BLOCK, rows), min(size, work, rows)))
    if band is not None:
        size = min(max(band, MIN_BLOCK), rows)
    batches = [list(range(a, min(a + per_batch, seeds_count)))
               for a in range(0, seeds_count, per_batch)]
    layout = blocks.Layout("pooled" if mode == "permutation" else "pairs", n,
                           N, size, linear=mode == "swap", band=band)
    return Plan(True, batches, len(layout.tasks), size)


def _in_memory_bytes(iv):
    """The peak memory of `in_memory`: the pooled matrix (and its log, or
    a copy in float32), H of the wild bootstrap or the swaps, the draws in
    flight and those kept for every kernel (`draws.shared_draws`). Reads
    the `Checked` call's mode, sizes, resamples, n_threads and dtype."""
    n, N, n_threads, mode, total = iv.n, iv.N, iv.n_threads, iv.mode, iv.total
    p = min(n, N - n)
    rows = N if mode == "permutation" else p
    matrix = 8.0 * N * N
    extra = {"permutation": 0.0, "wild": 8.0 * n * n, "swap": 8.0 * p * p}[mode]
    in_flight = (3 + 2 * n_threads) * rows * draws.RESAMPLE_BLOCK * 8
    kept = rows * total if rows * total <= draws.RESAMPLE_DRAWS_KEPT else 0
    copy = 4.0 * N * N if iv.dtype == np.float32 else 0.0
    return 2 * matrix + extra + in_flight + kept + copy


# Objects per range of a block pass, at least (below, the tasks' overhead
# outweighs their products).
MIN_BLOCK = 32
# Multiply-adds of a task of a block pass (its products with the draws of
# all its scales): about 1 s on one core, blocks large enough that their
# products run near the BLAS's speed; larger blocks gain little
# (benchmarks/TUNING.md). A task stops between two products (and between
# the chunks of its kernel) when its call stops: one product, at most
# RESAMPLE_PRODUCT_WORK (about 0.1 s), is the latency of Ctrl-C.
RESAMPLE_TASK_WORK = 16e9
RESAMPLE_PRODUCT_WORK = 1.5e9


def resampled(form, draw, prepare, n_blocks, bar, n_threads):
    """The statistics of every resample (the observed first), a block of
    draws at a time: for ``form = (M, finish)``, ``finish(S, diag(P' M
    P))`` for the `n_blocks` blocks ``S = draw(i)`` (int8), ``P =
    prepare(S)`` (in M's dtype).

    M is symmetric: a task of rows ``a:b`` of M adds ``P[a:b]' (M[a:b, a:b]
    P[a:b] + 2 M[a:b, b:] P[b:])``, the products of the upper triangle only
    (half the flops of ``M P``). The tasks are of about
    `RESAMPLE_TASK_FLOPS` each at the most (tens of milliseconds; their
    parts of ``P' M P`` are added in the order of their rows, whatever the
    threads). The
    tasks run on `n_threads` threads, each product on one BLAS thread, at
    most two tasks per thread in flight. (A product on several BLAS threads
    joins them at every call, which costs more than the product below about
    a millisecond, and much more on a machine where another process holds a
    core.) Small products stay on the calling thread. Ctrl-C stops after
    the tasks running, each short; the results do not depend on the number
    of threads."""
    M, finish = form
    rows = M.shape[0]
    if 2.0 * rows**2 * draws.RESAMPLE_BLOCK < RESAMPLE_THREADED_FLOPS:
        n_threads = 1
    step = max(1, int(RESAMPLE_TASK_FLOPS
                      // (2.0 * rows * draws.RESAMPLE_BLOCK)))
    starts = range(0, rows, step)

    def part(P, start):
        """The share of the rows start:start + step of M in diag(P' M P)."""
        end = start + step
        with np.errstate(over="ignore", invalid="ignore"):  # (statistics
            # beyond float64 refused: result.finite_statistics)
            D = M[start:end, start:end] @ P[start:end]
            if end < rows:
                F = M[start:end, end:] @ P[end:]
                F *= 2
                D += F
            return blocks.column_dots(P[start:end], D)

    def tasks():
        """(block, its products' draws, first row) of each task, the next
        block drawn on a thread of its own while the tasks of one run."""
        for S in thread_map(draw, range(n_blocks), min(n_threads, 2), in_flight=2):
            P = prepare(S)
            for start in starts:
                yield S, P, start

    out, total = [], None
    with lapack.one_blas_thread():
        for S, _, start, quadratic in thread_map(
                lambda task: (*task, part(*task[1:])), tasks(), n_threads):
            total = quadratic if start == 0 else total + quadratic
            if start == starts[-1]:  # the block is complete
                out.append(finish(S, total))
                bar.update(1)
    return np.concatenate(out)


# Flops of a block's product (about 0.3 ms) from which its tasks run on
# several threads: below, starting them costs more than they save.
RESAMPLE_THREADED_FLOPS = 2e7
# Flops of one task of a block's product (rows of the matrix times the
# block): about 20 ms on one core, the latency of Ctrl-C; smaller tasks
# lose time to their overhead (benchmarks/TUNING.md).
RESAMPLE_TASK_FLOPS = 1e9
