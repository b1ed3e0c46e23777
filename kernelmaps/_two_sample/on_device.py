"""The resampling tests (the permutation test, the wild bootstrap, the
aggregated and fused tests; `incomplete` too) of points and of
precomputed kernel matrices computed by the arrays' own library, on their
device (`mmd_test` of arrays that `ArrayLibrary.native` says the library
computes: another device than the CPU, a gradient asked,
array-api-strict).

The statistics are those of the NumPy path (`resampling`, `blocks`' algebra):
the quadratic forms ``q = t' K0 t`` of the centred indicators ``t = N s - n``
(permutations; K0 the pooled kernel matrix with its diagonal 0) or ``e' H e``
of the signs of the pairs (wild bootstrap, and the swaps of paired points
of the aggregated test: `aggregated.swap_form`). Here the kernel is
computed on the device a block of rows of the upper triangle at a time
(`_Kernel` of points, its distances once for all its scales; `_Matrix` of
given matrices), each block multiplied there with the draws of a batch of
resamples; the draws are those of the NumPy path, from the call's
generator on the host (`draws.drawer`), moved to the device (a byte an
entry), and only the vectors of the B resamples and of the N objects (the
row sums, the diagonal) come back, with a few scalars. The NumPy path's
own code then finishes the statistics and the result
(`permutation.finish`, `wild_bootstrap.finish`, `aggregated.swap_finish`,
`CONCLUDE`): the same p-value as the same NumPy input, the statistics
equal to rounding.
"""

import dataclasses
import math

import numpy as np

from .. import _array_api
from .._engine.layout import power_of_two_exponent
from .._engine.pair_sums import FLOAT32_REACH
from .._engine.progress import progress_bar
from .._engine.schedule import thread_map
from .._spec import (
    BANDWIDTH_SAMPLE,
    PrecomputedSpec,
    asymmetry_message,
    sample_direction,
    sample_ranks,
)
from .._validation import check_array_matrix
from .._warnings import CONSTANT_RTOL
from . import aggregated, draws, fuse, permutation, wild_bootstrap
from .checks import _check_sizes, check_input, labels_order

# The point kernels computed here, and the methods (the others: the cross
# and linear tests, and the tests on features, `on_device_direct`).
KERNELS = ("rbf", "laplacian", "energy")
CONCLUDE = {"permutation": permutation.conclude,
            "wild_bootstrap": permutation.conclude,
            "aggregated": aggregated.conclude, "fuse": fuse.conclude}
# Bytes of an entry of the draws on the device (int8, and float64 three
# times while they are centred).
DRAW_BYTES = 25
# Temporaries of the size of a kernel block (pooled; pairs: four kernel
# blocks and H).
BLOCK_COPIES = {"permutation": 6, "wild": 10, "swap": 10}


def takes(library, X, Y, kernel, method, feature_map, incomplete):
    """Whether `mmd_test` runs on the device: a library that computes
    (`native`), a resampling test (`CONCLUDE`) without `feature_map`, of
    two 2-D arrays of points with point kernels (`KERNELS`; `incomplete`
    too), or of a precomputed kernel matrix (or a stack of them) of the
    library."""
    if not (library.native and feature_map is None
            and isinstance(method, str) and method in CONCLUDE):
        return False
    if isinstance(kernel, str) and kernel == "precomputed":
        return (incomplete is None and _array_api.is_foreign(X)
                and getattr(X, "ndim", None) in (2, 3))
    names = (kernel,) if kernel is None or isinstance(kernel, str) else kernel
    return (isinstance(names, (list, tuple)) and all(
                k is None or (isinstance(k, str) and k in KERNELS) for k in names)
            and all(_array_api.is_foreign(A) and getattr(A, "ndim", None) == 2
                    for A in (X, Y)))


def test(library, X, Y, kernel, gamma, method, n_resamples, incomplete, alpha,
         unbiased, kernel_params, dtype, rng, workers, progress, working_memory):
    """`mmd_test` of the samples X and Y of `library` (`takes`) on their
    device: the `MMDTestResult` of the same NumPy input, p-value included.
    The options are checked by the NumPy path's `check_input` (on stand-ins
    of the samples), the samples on the device (`_points`, `_matrices`)."""
    options = (method, n_resamples, incomplete, alpha, unbiased, None,
               kernel_params, dtype, rng, workers, progress, working_memory)
    if isinstance(kernel, str) and kernel == "precomputed":
        iv, K, order = _matrices(library, X, Y, gamma, options)
        budget = _budget(library, iv.budget, working_memory)
        return _resampled(library, iv, budget, [
            (iv.specs[0], list(range(K.shape[0])), _Matrix(library, K, order))],
            lambda: False)
    X, Y = _points(library, X, Y)
    iv = check_input(*(_stand_in(library, A) for A in (X, Y)), kernel, gamma,
                     *options)
    if X.shape[0] + Y.shape[0] > iv.N:  # (incomplete: the pairs only)
        X, Y = X[:iv.n, :], Y[:iv.n, :]
    Z = library.xp.concat([X, Y])
    budget = _budget(library, iv.budget, working_memory)
    return _resampled(library, iv, budget, _kernels(library, iv, Z, budget / 4),
                      lambda: library.holds(library.xp.all(Z[:1, :] == Z)))


def _resampled(library, iv, budget, kernels, equal):
    """The resampling test of the `Checked` call `iv` from the `kernels`
    ((spec, scales, kernel) of each kernel: its blocks on the device at
    each of its scales, `_Kernel` or `_Matrix`), the draws of the NumPy
    path from its generator, within `budget` bytes of the device; `equal()`
    tells whether the pooled objects are all equal. The result: the
    method's conclusion on the host (`CONCLUDE`)."""
    seeds = draws.block_seeds(iv.generator, iv.total)  # (first, as NumPy's)
    products = [[_products_dtype(library, iv, spec, kernel, index)
                 for index in range(len(scales))]
                for spec, scales, kernel in kernels]
    batches, ranges = _plan(iv, len(seeds), budget,
                            max(len(scales) for _, scales, _ in kernels))
    draw = draws.drawer(seeds, iv.n, iv.N, iv.mode, np.int8)
    statistics = np.empty((sum(len(s) for _, s, _ in kernels), iv.total))
    found, finishes = [], []  # (of each kernel and scale, the first batch)
    steps = len(batches) * len(ranges) * len(kernels)
    # (statistics beyond float64 refused: `result.finite_statistics`;
    # NumPy-backed libraries would warn of them first)
    with progress_bar(iv.progress, steps, "mmd_test") as bar, \
            np.errstate(over="ignore", invalid="ignore"):
        for batch in batches:
            S = np.concatenate(list(thread_map(draw, batch,
                                               min(iv.n_threads, 2))), axis=1)
            column, first = batch[0] * draws.RESAMPLE_BLOCK, batch is batches[0]
            row = 0
            for (spec, _, kernel), scale_products in zip(kernels, products,
                                                         strict=True):
                forms, values = _pass(library, kernel, iv, S, ranges,
                                      scale_products, first and iv.mode != "swap",
                                      bar)
                if first:
                    if iv.mode == "swap":  # (a pass over the whole matrix)
                        values = _swap_pass(library, kernel, iv, budget)
                    found += values
                    finishes += [_finish(library, iv, spec, kernel, index, v)
                                 for index, v in enumerate(values)]
                for q in forms:
                    statistics[row, column:column + S.shape[1]] = finishes[row](
                        S, library.to_numpy(q))
                    row += 1
    specs = [spec for spec, scales, _ in kernels for _ in scales]
    kinds = tuple(_degenerate_kind(library, iv, spec, equal, values)
                  for spec, values in zip(specs, found, strict=True))
    norms = np.array([values.get("norm") for values in found])
    names = np.array([spec.name for spec in specs])
    reported = [spec.report(scale) for spec, scales, _ in kernels
                for scale in scales]
    gammas = np.array(reported, dtype=object if None in reported
                      else np.float64)
    return CONCLUDE[iv.method](iv, statistics, names, gammas, kinds, norms)


def _points(library, X, Y):
    """The samples of points X and Y checked (`_values`), of one number of
    features and one dtype."""
    xp = library.xp
    X, Y = (_values(library, A, name) for A, name in ((X, "X"), (Y, "Y")))
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, "
                         f"got {X.shape[1]} and {Y.shape[1]}")
    if X.dtype != Y.dtype:  # (NumPy's result type of float32 and float64)
        X, Y = xp.astype(X, xp.float64), xp.astype(Y, xp.float64)
    return X, Y


def _matrices(library, X, Y, gamma, options):
    """``(iv, K, order)`` of a test of the precomputed kernel matrix X (or
    matrices (L, N, N)) of `library` and the labels Y of its rows: the
    `Checked` call (the options checked on a stand-in matrix of 4 rows),
    the matrices (L, N, N), checked on the device (`check_precomputed`'s
    checks: real, finite, square, symmetric to 1e-12 of the largest value;
    made exactly symmetric where they are not), and the pooled order of
    the rows (`labels_order`, on the host: a label per row)."""
    xp = library.xp
    X = _values(library, X, "X", rows=False)
    stacked = X.ndim == 3
    K = xp.stack([check_array_matrix(library, X[i, ...], f"X[{i}]")
                  for i in range(X.shape[0])]) if stacked else (
        check_array_matrix(library, X, "X")[None, ...])
    K = xp.astype(K, xp.float64, copy=False)
    top = library.scalar(xp.max(xp.abs(K)))
    asymmetry = max(library.scalar(xp.max(xp.abs(K[:, a:b, :] - xp.permute_dims(
        K[:, :, a:b], (0, 2, 1))))) for a, b in _array_api.row_blocks(
            K.shape[1], 16.0 * K.shape[0] * K.shape[1], library))
    if asymmetry > 1e-12 * top:
        raise ValueError(asymmetry_message(asymmetry, top))
    if asymmetry > 0:
        K = (K + xp.permute_dims(K, (0, 2, 1))) / 2
    labels = Y if not _array_api.is_foreign(Y) else library.to_numpy(Y)
    order, n = labels_order(labels, K.shape[1])
    stand_in = np.eye(4) if not stacked else np.stack([np.eye(4)] * K.shape[0])
    iv = check_input(stand_in, np.array([0, 0, 1, 1]), "precomputed", gamma,
                     *options)
    _check_sizes(iv.method, n, K.shape[1])
    return (dataclasses.replace(iv, n=n, N=K.shape[1], Z=None,
                                specs=(PrecomputedSpec(None),)), K, order)


def _kernels(library, iv, Z, budget):
    """(spec, scales, `_Kernel`) of each kernel of the `Checked` call `iv`
    on the pooled points Z, in its order: the scales as the NumPy path
    finds them (from the points of `_value_sample` where gamma is None)."""
    sample = None
    if iv.gamma is None and any(spec.scale is not None for spec in iv.specs):
        sample = _value_sample(library, Z)
    out = []
    for spec in iv.specs:
        scales = spec.scales(sample, iv.gamma, iv.grid, iv.n_threads)
        out.append((spec, scales, _Kernel(library, spec.name, scales, Z, budget)))
    return out


def _plan(iv, count, budget, scales):
    """The batches of the `count` blocks of resamples (ranges of their
    indices; their draws on the device in half the `budget`, a block at
    least) and the blocks of rows of the kernel (start, stop: their
    temporaries, of its blocks at each of at most `scales` scales, in a
    quarter)."""
    rows = iv.N if iv.mode == "permutation" else min(iv.n, iv.N - iv.n)
    per_batch = _step(budget / 2, rows * draws.RESAMPLE_BLOCK * DRAW_BYTES)
    batches = [range(a, min(a + per_batch, count))
               for a in range(0, count, per_batch)]
    width = min(iv.total, per_batch * draws.RESAMPLE_BLOCK)
    copies = BLOCK_COPIES[iv.mode] + scales * (1 if iv.mode == "permutation" else 4)
    step = _step(budget / 4, 8.0 * (copies * rows + 3 * width))
    return batches, [(a, min(a + step, rows)) for a in range(0, rows, step)]


def _values(library, A, name, rows=True):
    """The points `A` (argument `name`) checked (`_array_api.check_rows`;
    not `rows`: unchecked), without a gradient (the test returns none); a
    ValueError where the library holds no values (a PyTorch meta tensor, a
    JAX array under jit)."""
    values = library.host_values(A)
    if values is None:
        raise ValueError(f"mmd_test needs the values of {name}, which this "
                         f"array does not hold (a PyTorch meta tensor, a JAX "
                         f"array under jit): give an array with values")
    return _array_api.check_rows(library, values, name) if rows else values


def _stand_in(library, A):
    """Zeros of A's number of rows and float type, one column: what
    `check_input` reads of the checked samples (their sizes) on the host."""
    float32 = A.dtype == library.xp.float32
    return np.zeros((A.shape[0], 1), dtype=np.float32 if float32 else np.float64)


def _budget(library, budget, working_memory):
    """The bytes of the call's device temporaries: half the device's free
    memory where the library reports it (the call's `working_memory`
    where given and lower), else the working-memory `budget`."""
    free = _array_api.free_device_memory(library)
    if free is None:
        return budget
    return free / 2 if working_memory is None else min(budget, free / 2)


def _step(budget, unit_bytes):
    """How many units of `unit_bytes` the `budget` holds (at least one)."""
    return max(1, int(budget // max(unit_bytes, 1.0)))


def _value_sample(library, Z):
    """`_spec.value_sample` of the pooled points Z of `library`, on the
    host (at most `BANDWIDTH_SAMPLE` points, chosen by `sample_rows`),
    copied."""
    if Z.shape[0] <= BANDWIDTH_SAMPLE:
        return library.to_numpy(Z)
    rows = sample_rows(library, Z, sample_direction(Z.shape[1])[:, None])
    return library.to_numpy(library.xp.take(Z, library.from_numpy(rows), axis=0))


def sample_rows(library, keys, directions, sort=False):
    """The rows of `BANDWIDTH_SAMPLE` of the N keys (N, k) of `library`
    (all of them, in order, where there are no more) at evenly spaced
    ranks of their projections on `directions` (k, c) (ties of the first
    broken by the second): `_spec.value_rows` (one direction; in the
    order of their ranks) and `object_sample`'s (two; `sort`ed). The
    projections (of the keys over their largest magnitude, float64)
    computed on the device, copied, ordered on the host."""
    N = keys.shape[0]
    if N <= BANDWIDTH_SAMPLE:
        return np.arange(N)
    xp = library.xp
    top = xp.max(xp.abs(keys))
    scaled = xp.astype(keys / top if library.scalar(top) > 0 else keys,
                       xp.float64)
    projections = library.to_numpy(xp.stack([
        xp.sum(scaled * library.from_numpy(directions[:, c]), axis=1)
        for c in range(directions.shape[1])], axis=1))
    rows = np.lexsort(projections.T[::-1])[sample_ranks(N, BANDWIDTH_SAMPLE)]
    return np.sort(rows) if sort else rows


class _Kernel:
    """The point kernel `name` at its `scales` between rows of the pooled
    points Z of `library`, on their device, in float64 (`blocks`: the
    package's `_array_api.point_kernel`, its distances computed once for
    every scale), a block of columns at a time within `budget` bytes. rbf
    and laplacian in the points' units (1 between equal points, whatever
    the scale), rbf's squared distances from the differences where the
    points' squares could overflow or vanish (far from 1), else by its
    rule; a distance beyond float64 from the points times a power of two
    (exact) that takes them near 1, at the scale in those units (0 where
    it overflows). The homogeneous "energy" on the points times that power
    of two where they are far from 1, its values scaled back."""

    def __init__(self, library, name, scales, Z, budget):
        xp = library.xp
        self.library, self.name, self.budget = library, name, budget
        Z = xp.astype(Z, xp.float64, copy=False)
        top = library.scalar(xp.max(xp.abs(Z)))
        near = 2.0**-400 < top < 2.0**400
        e = 0 if near else power_of_two_exponent(top)
        scaled = _array_api.times_power_of_two(Z, e)
        self.points, self.Z = Z, scaled if name == "energy" else Z
        self.far = None if near or name == "energy" else scaled
        self.scales = list(scales)
        power = {"rbf": -2 * e, "laplacian": -e}.get(name, 0)  # (distances')
        with np.errstate(over="ignore", under="ignore"):
            self.far_gammas = [None if g is None else float(np.ldexp(float(g), power))
                               for g in self.scales]
            self.factor = float(np.ldexp(1.0, -e))  # (of "energy")
        self.direct = not near

    def diagonal(self, library, index):
        """k(z, z) of the pooled points, on the host."""
        if self.name != "energy":
            return np.ones(self.Z.shape[0])
        return library.to_numpy(_array_api.row_norms(library.xp, self.Z)
                                ) * self.factor

    def shift(self, library, spec, index, N):
        """`permutation.shifts` of the `spec` at scale `index` of the N
        pooled points, from the first of them, copied."""
        head = library.to_numpy(self.points[:min(permutation.SHIFT_OBJECTS, N), :])
        return permutation.shifts(spec, head, N, [self.scales[index]])[0]

    def reach(self, library, index):
        """The largest magnitude of the kernel's values."""
        if self.name != "energy":
            return 1.0
        return 4.0 * library.scalar(library.xp.max(
            _array_api.row_norms(library.xp, self.Z))) * self.factor

    def blocks(self, rows, cols):
        """k(Z[rows], Z[cols]) at each scale, for slices `rows` and
        `cols`."""
        xp, A, B = self.library.xp, self.Z[rows, :], self.Z[cols, :]
        if self.name == "energy":
            K = self._joined(lambda a, b: _array_api.point_kernel(
                self.library, a, b, {"kernel": "energy"}), A, B)
            return [K * self.factor if self.factor != 1.0 else K]
        S = self._joined(self._distances, A, B)
        values = [_array_api.exp_minus(xp, float(g), S) for g in self.scales]
        if self.far is None or self.library.all_finite(S):
            return values
        beyond = xp.isinf(S)  # (distances beyond float64: of the points scaled)
        S = self._joined(self._distances, self.far[rows, :], self.far[cols, :])
        return [xp.where(beyond, _array_api.exp_minus(xp, g, S), K)
                for g, K in zip(self.far_gammas, values, strict=True)]

    def _distances(self, A, B):
        return _array_api.point_distances(self.library, A, B, self.name,
                                          self.direct)

    def _joined(self, f, A, B):
        """``f(A, B)`` a block of columns of B at a time (within the
        budget), joined."""
        step = _step(self.budget, 24.0 * A.shape[0] * A.shape[1])
        parts = [f(A, B[c:min(c + step, B.shape[0]), :])
                 for c in range(0, B.shape[0], step)]
        return parts[0] if len(parts) == 1 else self.library.xp.concat(parts, axis=1)

    def block(self, rows, cols):
        """k(Z[rows], Z[cols]) at its first scale."""
        return self.blocks(rows, cols)[0]


class _Matrix:
    """Precomputed kernel matrices K (L, N, N, float64) of `library` of the
    pooled objects in the `order` of their rows (`labels_order`): their
    blocks gathered on the device (`blocks`), not a reordered copy."""

    def __init__(self, library, K, order):
        self.library, self.K = library, K
        self.order = library.from_numpy(order)

    def diagonal(self, library, index):
        """The diagonal of matrix `index` in the pooled order, on the
        host."""
        xp, N = library.xp, self.K.shape[1]
        return library.to_numpy(xp.take(xp.reshape(self.K[index, ...], (N * N,)),
                                        self.order * (N + 1), axis=0))

    def shift(self, library, spec, index, N):
        """`permutation.shifts` of matrix `index` (`head_shift`)."""
        return head_shift(library, self, index, N)

    def reach(self, library, index):
        """The largest magnitude of the values of matrix `index`."""
        return library.scalar(library.xp.max(library.xp.abs(self.K[index, ...])))

    def blocks(self, rows, cols):
        """Each matrix of the pooled objects `rows` and `cols` (slices)."""
        xp = self.library.xp
        K = xp.take(xp.take(self.K, self.order[rows], axis=1), self.order[cols],
                    axis=2)
        return [K[index, ...] for index in range(K.shape[0])]


def head_shift(library, kernel, index, N):
    """`permutation.shifts` of a kernel object's scale `index`, from its
    block of the first pooled objects (copied, its diagonal 0: the mean of
    the values off it, exactly 0 where they are)."""
    k = min(permutation.SHIFT_OBJECTS, N)
    head = library.to_numpy(kernel.blocks(slice(0, k), slice(0, k))[index])
    np.fill_diagonal(head, 0.0)
    return permutation.shifts(PrecomputedSpec(head[None, ...]), np.arange(k),
                              N, [0])[0]


def _products_dtype(library, iv, spec, kernel, index):
    """The products' dtype on the device (the call's dtype, float64 where
    float32 could overflow: `FLOAT32_REACH`) and the constant the
    permutations' products take from the pooled matrix (the kernel's
    `shift`), of the kernel at its scale `index`, as the NumPy path
    chooses them."""
    xp = library.xp
    shift = 0.0
    if iv.mode == "permutation":
        shift = kernel.shift(library, spec, index, iv.N)
    if iv.dtype != np.float32:
        return xp.float64, shift
    return (xp.float64 if kernel.reach(library, index) + abs(shift) > FLOAT32_REACH
            else xp.float32), shift


def _pass(library, kernel, iv, S, ranges, products, first, bar):
    """The quadratic forms of the host's draws S of a batch (int8, a row
    per pooled object or pair) at each scale of the `kernel` (a float64
    vector of the device each), from the blocks of rows `ranges` of the
    upper triangle of the pooled matrix with its diagonal 0 (permutations;
    in the products' dtype, less their shift: `products`, of each scale)
    or of H (the wild bootstrap); and on the `first` pass what each
    scale's values tell (`_found`; permutations: also the row sums "r";
    the fused test: the Frobenius "norm" of the pooled matrix with its
    diagonal 0, a float)."""
    xp = library.xp
    pooled = iv.mode == "permutation"
    draws_of = {}  # (the draws in each dtype of the products)
    for dtype, _ in products:
        if dtype not in draws_of:
            T = xp.astype(library.from_numpy(S), dtype)
            draws_of[dtype] = T * iv.N - iv.n if pooled else T  # (centred)
    rows = S.shape[0]
    forms = [xp.zeros((S.shape[1],), dtype=xp.float64, device=library.device)
             for _ in products]
    found = [_first_found(library, iv, rows) for _ in products] if first else None
    n, band = iv.n, iv.incomplete
    for a, b in ranges:
        # (the incomplete U-statistic: the pairs within `band` of each other)
        end = rows if band is None else min(rows, b + band)
        here, rest = slice(a, b), slice(a, end)
        offsets = (xp.arange(end - a, device=library.device)[None, :]
                   - xp.arange(b - a, device=library.device)[:, None])
        diagonal = offsets == 0 if band is None else (offsets == 0) | (
            xp.abs(offsets) > band)
        if pooled:
            groups = [[K] for K in kernel.blocks(here, rest)]
        else:  # H = Kxx + Kyy - Kxy - Kyx, the diagonal 0
            xx, yy = (kernel.blocks(slice(s + a, s + b), slice(s + a, s + end))
                      for s in (0, n))
            groups = [list(values) for values in zip(
                xx, yy, kernel.blocks(here, slice(n + a, n + end)),
                kernel.blocks(slice(n + a, n + b), rest), strict=True)]
        for index, values in enumerate(groups):
            if pooled:
                M = xp.where(diagonal, 0.0, values[0])
                off = [M]
            else:
                kxx, kyy, kxy, kyx = values
                M = xp.where(diagonal, 0.0, kxx + kyy - kxy - kyx)
                off = [xp.where(diagonal, 0.0, kxx), xp.where(diagonal, 0.0, kyy),
                       kxy, kyx]
            if first:
                _add_found(xp, found[index], values, off, M, a, b, pooled)
            del values, off
            dtype, shift = products[index]
            if shift:
                M = M - shift
            M, T = xp.astype(M, dtype), draws_of[dtype]
            # the rows i = a:b of the upper triangle of the symmetric
            # matrix: t_i' M_ii t_i + 2 t_i' M_ij t_j over the columns j = b:
            Ti = T[a:b, :]
            part = xp.sum(Ti * (M @ T[a:end, :]), axis=0)
            if b < end:
                part = 2 * part - xp.sum(Ti * (M[:, :b - a] @ Ti), axis=0)
            forms[index] = forms[index] + xp.astype(part, xp.float64)
        del groups
        bar.update(1)
    if first:
        found = [_stacked(library, values) for values in found]
    return forms, found


def _first_found(library, iv, rows):
    """The lists of what a first pass finds of one scale (`_pass`)."""
    found = dict(low=[], high=[], off=[])
    if iv.mode == "permutation":
        found["r"] = library.xp.zeros((rows,), dtype=library.xp.float64,
                                      device=library.device)
    if iv.method == "fuse":
        found["squares"] = []
    return found


def _add_found(xp, found, values, off, M, a, b, pooled):
    """Add what the kernel blocks of rows a:b tell to `found` (`_found`;
    permutations: their row sums, from M, the blocks with their diagonal
    0; the fused test: the sums of their squares)."""
    _found(xp, found, values, off, a == 0)
    if pooled:
        zeros = xp.zeros((a,), dtype=xp.float64, device=M.device)
        found["r"] = found["r"] + xp.concat(
            [zeros, xp.sum(M, axis=1), xp.sum(M[:, b - a:], axis=0)])
    if "squares" in found:  # (the block's mirror counts twice)
        with np.errstate(over="ignore"):  # (inf where it overflows)
            squares = M * M
            found["squares"].append(xp.sum(squares[:, :b - a])
                                    + 2 * xp.sum(squares[:, b - a:]))


def _found(xp, found, values, off, first):
    """Add what the kernel blocks `values` (and `off`, those less their
    diagonal) tell to the lists of `found`: their smallest ("low") and
    largest ("high") values, their largest magnitude ("off"), and on the
    `first` block its first value ("first")."""
    found["low"] += [xp.min(v) for v in values]
    found["high"] += [xp.max(v) for v in values]
    found["off"] += [xp.max(xp.abs(v)) for v in off]
    if first:
        found["first"] = values[0][0, 0]


def _stacked(library, found):
    """`found` with its lists of reductions summed ("squares", "trd") or
    stacked (the others): arrays of the device; with "squares", the
    Frobenius "norm" they give (a float)."""
    xp = library.xp
    found = {key: xp.sum(xp.stack(value)) if key in ("squares", "trd")
             else xp.stack(value) if isinstance(value, list) else value
             for key, value in found.items()}
    if "squares" in found:
        found["norm"] = math.sqrt(library.scalar(found["squares"]))
    return found


def _swap_pass(library, kernel, iv, budget):
    """What the first pass of the aggregated test of samples of unequal
    sizes finds at each scale of the `kernel` (`_found`), over the whole
    pooled matrix, a block of rows at a time, and its vectors and
    constants of `aggregated.swap_form` (on the host): "w" and "q" (P' K0
    c and P' K0 1, of the pairs) and "constants" (1' K0 1, c' K0 c, 1' K0
    c and -2 sum k(x_i, y_i))."""
    xp, n, N = library.xp, iv.n, iv.N
    p = min(n, N - n)
    c = np.full(N, 0.5)
    if n > N - n:
        c[p:n] = 1.0
    else:
        c[n + p:] = 0.0
    weights = library.from_numpy(c)
    columns = xp.arange(N, device=library.device)[None, :]
    found, r, Kc = None, None, None
    step = _step(budget / 4, 8.0 * 4 * N)
    for a in range(0, N, step):
        b = min(a + step, N)
        rows = xp.arange(a, b, device=library.device)[:, None]
        blocks = kernel.blocks(slice(a, b), slice(0, N))
        if found is None:
            found = [dict(low=[], high=[], off=[], trd=[]) for _ in blocks]
            r, Kc = [[] for _ in blocks], [[] for _ in blocks]
        for index, K in enumerate(blocks):
            K0 = xp.where(rows == columns, 0.0, K)
            _found(xp, found[index], [K], [K0], a == 0)
            found[index]["trd"].append(xp.sum(xp.where(
                (rows + n == columns) & (rows < p), K0, 0.0)))
            r[index].append(xp.sum(K0, axis=1))
            Kc[index].append(K0 @ weights)
    out = []
    for values, sums, products in zip(found, r, Kc, strict=True):
        values = _stacked(library, values)
        sums, products = (library.to_numpy(xp.concat(v)) for v in (sums, products))
        values["w"] = products[:p] - products[n:n + p]
        values["q"] = sums[:p] - sums[n:n + p]
        values["constants"] = (math.fsum(sums), math.fsum(c * products),
                               math.fsum(c * sums),
                               -2.0 * library.scalar(values["trd"]))
        out.append(values)
    return out


def _finish(library, iv, spec, kernel, index, found):
    """The host's ``finish(S, q)`` of the statistics of a batch at the
    kernel's scale `index` (the permutation test's, from the row sums and
    the diagonal; the wild bootstrap's; the swaps' of the aggregated test,
    from `_swap_pass`); a ValueError where a kernel value overflowed, as
    on the host."""
    xp = library.xp
    spec.finite(np.array([library.scalar(xp.min(found["low"])),
                          library.scalar(xp.max(found["high"]))]))
    if iv.mode == "permutation":
        return permutation.finish(library.to_numpy(found["r"]),
                                  kernel.diagonal(library, index), iv.n,
                                  iv.N - iv.n, iv.unbiased)
    if iv.mode == "swap":
        return aggregated.swap_finish(found["w"], found["q"],
                                      found["constants"], iv.n, iv.N - iv.n)
    pairs = (iv.n * (iv.n - 1) // 2 if iv.incomplete is None
             else iv.incomplete * iv.n - iv.incomplete * (iv.incomplete + 1) // 2)
    return wild_bootstrap.finish(pairs)


def _degenerate_kind(library, iv, spec, equal, found):
    """How the pooled kernel matrix is degenerate, as the NumPy path finds
    it (`resampling.degenerate_kind`) from the values `found` by the first
    pass: "zero" (0 off the diagonal), "one" (1 everywhere), "constant"
    (the same everywhere to `CONSTANT_RTOL`, or 1 everywhere at the median
    heuristic's scale or on equal objects: `equal()`), or None; a kind of
    the scale only for a kernel with one."""
    xp = library.xp
    low, high, off, first = (library.scalar(v) for v in (
        xp.min(found["low"]), xp.max(found["high"]), xp.max(found["off"]),
        found["first"]))
    kind = None
    if off == 0:
        kind = "zero"
    elif low == 1 and high == 1:
        median_scale = iv.gamma is None and not iv.grid
        kind = "constant" if median_scale or equal() else "one"
    elif math.isfinite(first) and max(high - first, first - low) <= (
            CONSTANT_RTOL * abs(first)):
        kind = "constant"
    return kind if spec.degenerate_scale or kind == "constant" else None
