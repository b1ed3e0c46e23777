"""The permutation test and the wild bootstrap of points computed by the
arrays' own library, on their device (`mmd_test` of arrays that
`ArrayLibrary.native` says the library computes: another device than the
CPU, a gradient asked, array-api-strict).

The statistics are those of the NumPy path (`resampling`, `blocks`' algebra):
the quadratic forms ``q = t' K0 t`` of the centred indicators ``t = N s - n``
(permutations; K0 the pooled kernel matrix with its diagonal 0) or ``e' H e``
of the signs of the pairs (wild bootstrap). Here the kernel is computed on
the device a block of rows of the upper triangle at a time, each block
multiplied there with the draws of a batch of resamples; the draws are
those of the NumPy path, from the call's generator on the host
(`draws.drawer`), moved to the device (a byte an entry), and only the
vectors of the B resamples and of the N objects (the row sums, the
diagonal) come back, with a few scalars. The NumPy path's own code then
finishes the statistics and the result (`permutation.finish`,
`wild_bootstrap.finish`, `permutation.conclude`): the same p-value as the
same NumPy input, the statistics equal to rounding.
"""

import math

import numpy as np

from .. import _array_api
from .._engine.layout import power_of_two_exponent
from .._engine.pair_sums import FLOAT32_REACH
from .._engine.progress import progress_bar
from .._engine.schedule import thread_map
from .._spec import BANDWIDTH_SAMPLE
from .._warnings import CONSTANT_RTOL
from . import aggregated, draws, fuse, permutation, wild_bootstrap
from .checks import check_input

# The point kernels computed here, and the methods; the other kernels,
# methods and options (feature_map, incomplete) are tested on the host.
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
    (`native`), a resampling test (`CONCLUDE`) of two 2-D arrays of points
    with point kernels (`KERNELS`), without `feature_map` or
    `incomplete`."""
    names = (kernel,) if kernel is None or isinstance(kernel, str) else kernel
    return (library.native and feature_map is None and incomplete is None
            and isinstance(method, str) and method in CONCLUDE
            and isinstance(names, (list, tuple)) and all(
                k is None or (isinstance(k, str) and k in KERNELS) for k in names)
            and all(_array_api.is_foreign(A) and getattr(A, "ndim", None) == 2
                    for A in (X, Y)))


def test(library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
         kernel_params, dtype, rng, workers, progress, working_memory):
    """`mmd_test` of the points X and Y of `library` (`takes`) on their
    device: the `MMDTestResult` of the same NumPy input, p-value included.
    The options are checked by the NumPy path's `check_input` (on stand-ins
    of the samples' sizes), the samples by `_array_api.check_rows`."""
    xp = library.xp
    X, Y = (_values(library, A, name) for A, name in ((X, "X"), (Y, "Y")))
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, "
                         f"got {X.shape[1]} and {Y.shape[1]}")
    if X.dtype != Y.dtype:  # (NumPy's result type of float32 and float64)
        X, Y = xp.astype(X, xp.float64), xp.astype(Y, xp.float64)
    iv = check_input(*(_stand_in(library, A) for A in (X, Y)), kernel, gamma,
                     method, n_resamples, None, alpha, unbiased, None,
                     kernel_params, dtype, rng, workers, progress,
                     working_memory)
    seeds = draws.block_seeds(iv.generator, iv.total)  # (first, as NumPy's)
    Z = xp.concat([X, Y])
    budget = _budget(library, iv.budget, working_memory)
    kernels = _kernels(library, iv, Z, budget / 4)
    batches, ranges = _plan(iv, len(seeds), budget)
    draw = draws.drawer(seeds, iv.n, iv.N, iv.mode, np.int8)
    statistics = np.empty((len(kernels), iv.total))
    found, finishes = [], []  # (of each kernel, from the first batch)
    steps = len(batches) * len(ranges) * len(kernels)
    with progress_bar(iv.progress, steps, "mmd_test") as bar:
        for batch in batches:
            S = np.concatenate(list(thread_map(draw, batch,
                                               min(iv.n_threads, 2))), axis=1)
            column, first = batch[0] * draws.RESAMPLE_BLOCK, batch is batches[0]
            for k, (spec, _, kernel, products) in enumerate(kernels):
                q, values = _pass(library, kernel, iv, S, ranges, products,
                                  first and iv.mode != "swap", bar)
                if first:
                    if iv.mode == "swap":  # (a pass over the whole matrix)
                        values = _swap_pass(library, kernel, iv, budget)
                    found.append(values)
                    finishes.append(_finish(library, iv, spec, kernel, values))
                statistics[k, column:column + S.shape[1]] = finishes[k](
                    S, library.to_numpy(q))
    kinds = tuple(_degenerate_kind(library, iv, spec, Z, values)
                  for (spec, *_), values in zip(kernels, found, strict=True))
    norms = np.array([values.get("norm") for values in found])
    names = np.array([spec.name for spec, *_ in kernels])
    reported = [spec.report(scale) for spec, scale, *_ in kernels]
    gammas = np.array(reported, dtype=object if None in reported
                      else np.float64)
    return CONCLUDE[iv.method](iv, statistics, names, gammas, kinds, norms)


def _kernels(library, iv, Z, budget):
    """(spec, scale, `_Kernel`, products) of each kernel and scale of the
    `Checked` call `iv` on the pooled points Z, in its order: the scales as
    the NumPy path finds them (from the points of `_value_sample` where
    gamma is None), the products' dtype and shift (`_products_dtype`)."""
    xp = library.xp
    Z64 = xp.astype(Z, xp.float64, copy=False)
    sample = None
    if iv.gamma is None and any(spec.scale is not None for spec in iv.specs):
        sample = _value_sample(library, Z)
    out = []
    for spec in iv.specs:
        for scale in spec.scales(sample, iv.gamma, iv.grid, iv.n_threads):
            kernel = _Kernel(library, spec.name, scale, Z64, budget)
            out.append((spec, scale, kernel,
                        _products_dtype(library, iv, spec, Z, kernel, scale)))
    return out


def _plan(iv, count, budget):
    """The batches of the `count` blocks of resamples (ranges of their
    indices; their draws on the device in half the `budget`, a block at
    least) and the blocks of rows of the kernel (start, stop: their
    temporaries in a quarter)."""
    rows = iv.N if iv.mode == "permutation" else min(iv.n, iv.N - iv.n)
    per_batch = _step(budget / 2, rows * draws.RESAMPLE_BLOCK * DRAW_BYTES)
    batches = [range(a, min(a + per_batch, count))
               for a in range(0, count, per_batch)]
    width = min(iv.total, per_batch * draws.RESAMPLE_BLOCK)
    step = _step(budget / 4, 8.0 * (BLOCK_COPIES[iv.mode] * rows + 3 * width))
    return batches, [(a, min(a + step, rows)) for a in range(0, rows, step)]


def _values(library, A, name):
    """The points `A` (argument `name`) checked (`_array_api.check_rows`),
    without a gradient (the test returns none); a ValueError where the
    library holds no values (a PyTorch meta tensor, a JAX array under
    jit)."""
    values = library.host_values(A)
    if values is None:
        raise ValueError(f"mmd_test needs the values of {name}, which this "
                         f"array does not hold (a PyTorch meta tensor, a JAX "
                         f"array under jit): give an array with values")
    return _array_api.check_rows(library, values, name)


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
    host (at most `BANDWIDTH_SAMPLE` points): the projections of the points
    (as the NumPy path computes them) and their ranks on the device, the
    points chosen copied."""
    xp = library.xp
    N = Z.shape[0]
    if N <= BANDWIDTH_SAMPLE:
        return library.to_numpy(Z)
    direction = library.from_numpy(
        np.random.default_rng(0).normal(size=Z.shape[1]))
    top = xp.max(xp.abs(Z))
    scaled = Z / top if library.scalar(top) > 0 else Z
    projections = xp.sum(xp.astype(scaled, xp.float64) * direction, axis=1)
    ranks = np.linspace(0, N - 1, BANDWIDTH_SAMPLE).astype(np.int64)
    order = xp.argsort(projections, stable=True)
    rows = xp.take(order, library.from_numpy(ranks), axis=0)
    return library.to_numpy(xp.take(Z, rows, axis=0))


class _Kernel:
    """The point kernel `name` at `scale` between rows of the pooled points
    Z of `library`, on their device, in float64 (`block`: the package's
    `_array_api.point_kernel`), a block of columns at a time within
    `budget` bytes, on the points times a power of two (exact) that takes
    them near 1 where they are far from it: their squares neither overflow
    nor vanish, the scale times its power of two (rbf: 1 between equal
    points, whatever the scale; 0 where a distance overflows), the values
    of the homogeneous "energy" scaled back."""

    def __init__(self, library, name, scale, Z, budget):
        xp = library.xp
        self.library, self.budget = library, budget
        Z = xp.astype(Z, xp.float64)
        top = library.scalar(xp.max(xp.abs(Z)))
        e = 0 if 2.0**-400 < top < 2.0**400 else power_of_two_exponent(top)
        self.Z = _array_api.times_power_of_two(Z, e)
        self.params = {"kernel": name, "gamma": None if scale is None else
                       _array_api.times_power_of_two(
                           float(scale), -e * (2 if name == "rbf" else 1))}
        self.factor = math.ldexp(1.0, -e) if name == "energy" else 1.0

    def diagonal(self, library):
        """k(z, z) of the pooled points, on the host."""
        if self.params["kernel"] != "energy":
            return np.ones(self.Z.shape[0])
        return library.to_numpy(_array_api.row_norms(library.xp, self.Z)
                                ) * self.factor

    def block(self, rows, cols):
        """k(Z[rows], Z[cols]) for slices `rows` and `cols`."""
        xp, A, B = self.library.xp, self.Z[rows, :], self.Z[cols, :]
        step = _step(self.budget, 24.0 * A.shape[0] * A.shape[1])
        parts = [_array_api.point_kernel(self.library, A,
                                         B[c:min(c + step, B.shape[0]), :],
                                         self.params)
                 for c in range(0, B.shape[0], step)]
        K = parts[0] if len(parts) == 1 else xp.concat(parts, axis=1)
        return K * self.factor if self.factor != 1.0 else K


def _products_dtype(library, iv, spec, Z, kernel, scale):
    """The products' dtype on the device (the call's dtype, float64 where
    float32 could overflow: `FLOAT32_REACH`) and the constant the
    permutations' products take from the pooled matrix
    (`permutation.shifts`, of the first pooled points, copied), as the
    NumPy path chooses them."""
    xp = library.xp
    shift = 0.0
    if iv.mode == "permutation":
        head = library.to_numpy(Z[:min(permutation.SHIFT_OBJECTS, iv.N), :])
        shift = permutation.shifts(spec, head, iv.N, [scale])[0]
    if iv.dtype != np.float32:
        return xp.float64, shift
    reach = 1.0 if kernel.params["kernel"] != "energy" else 4.0 * library.scalar(
        xp.max(_array_api.row_norms(xp, kernel.Z))) * kernel.factor
    return (xp.float64 if reach + abs(shift) > FLOAT32_REACH
            else xp.float32), shift


def _pass(library, kernel, iv, S, ranges, products, first, bar):
    """The quadratic forms of the host's draws S of a batch (int8, a row
    per pooled object or pair), a float64 vector of the device, from the
    blocks of rows `ranges` of the upper triangle of the pooled matrix with
    its diagonal 0 (permutations; in the products' dtype, less their
    shift: `products`) or of H (the wild bootstrap); and on the `first`
    pass what the kernel's values tell (`_found`; permutations: also the
    row sums "r"; the fused test: the Frobenius "norm" of the pooled matrix
    with its diagonal 0, a float)."""
    xp = library.xp
    dtype, shift = products
    pooled = iv.mode == "permutation"
    T = xp.astype(library.from_numpy(S), dtype)
    if pooled:  # the centred indicators
        T = T * iv.N - iv.n
    rows = T.shape[0]
    q = xp.zeros((T.shape[1],), dtype=xp.float64, device=library.device)
    found = None
    if first:
        found = dict(low=[], high=[], off=[])
        if pooled:
            found.update(r=xp.zeros((rows,), dtype=xp.float64,
                                    device=library.device))
        if iv.method == "fuse":
            found["squares"] = []
    n = iv.n
    for a, b in ranges:
        here, rest = slice(a, b), slice(a, rows)
        diagonal = (xp.arange(b - a, device=library.device)[:, None]
                    == xp.arange(rows - a, device=library.device)[None, :])
        if pooled:
            K = kernel.block(here, rest)
            M = xp.where(diagonal, 0.0, K)
            values, off = [K], [M]
        else:  # H = Kxx + Kyy - Kxy - Kyx, the diagonal 0
            xx, yy = (kernel.block(slice(s + a, s + b), slice(s + a, s + rows))
                      for s in (0, n))
            xy = kernel.block(here, slice(n + a, n + rows))
            yx = kernel.block(slice(n + a, n + b), rest)
            M = xp.where(diagonal, 0.0, xx + yy - xy - yx)
            values = [xx, yy, xy, yx]
            off = [xp.where(diagonal, 0.0, xx), xp.where(diagonal, 0.0, yy),
                   xy, yx]
        if first:
            _found(xp, found, values, off, a == 0)
            if pooled:
                zeros = xp.zeros((a,), dtype=xp.float64, device=library.device)
                found["r"] = found["r"] + xp.concat(
                    [zeros, xp.sum(M, axis=1), xp.sum(M[:, b - a:], axis=0)])
            if iv.method == "fuse":  # (the block's mirror counts twice)
                with np.errstate(over="ignore"):  # (inf where it overflows)
                    squares = M * M
                    found["squares"].append(xp.sum(squares[:, :b - a])
                                            + 2 * xp.sum(squares[:, b - a:]))
        del values, off
        if shift:
            M = M - shift
        M = xp.astype(M, dtype)
        # the rows i = a:b of the upper triangle of the symmetric matrix:
        # t_i' M_ii t_i + 2 t_i' M_ij t_j over the columns j = b:
        Ti = T[a:b, :]
        part = xp.sum(Ti * (M @ T[a:, :]), axis=0)
        if b < rows:
            part = 2 * part - xp.sum(Ti * (M[:, :b - a] @ Ti), axis=0)
        q = q + xp.astype(part, xp.float64)
        bar.update(1)
    if first:
        found = _stacked(xp, found)
        if iv.method == "fuse":
            found["norm"] = math.sqrt(library.scalar(found["squares"]))
    return q, found


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


def _stacked(xp, found):
    """`found` with its lists of reductions summed ("squares", "trd") or
    stacked (the others): arrays of the device."""
    return {key: xp.sum(xp.stack(value)) if key in ("squares", "trd")
            else xp.stack(value) if isinstance(value, list) else value
            for key, value in found.items()}


def _swap_pass(library, kernel, iv, budget):
    """What the first pass of the aggregated test of samples of unequal
    sizes finds (`_found`), over the whole pooled matrix, a block of rows
    at a time, and its vectors and constants of `aggregated.swap_form`
    (on the host): "w" and "q" (P' K0 c and P' K0 1, of the pairs) and
    "constants" (1' K0 1, c' K0 c, 1' K0 c and -2 sum k(x_i, y_i))."""
    xp, n, N = library.xp, iv.n, iv.N
    p = min(n, N - n)
    c = np.full(N, 0.5)
    if n > N - n:
        c[p:n] = 1.0
    else:
        c[n + p:] = 0.0
    weights = library.from_numpy(c)
    columns = xp.arange(N, device=library.device)[None, :]
    found = dict(low=[], high=[], off=[], trd=[])
    r, Kc = [], []
    step = _step(budget / 4, 8.0 * 4 * N)
    for a in range(0, N, step):
        b = min(a + step, N)
        K = kernel.block(slice(a, b), slice(0, N))
        rows = xp.arange(a, b, device=library.device)[:, None]
        K0 = xp.where(rows == columns, 0.0, K)
        _found(xp, found, [K], [K0], a == 0)
        found["trd"].append(xp.sum(xp.where((rows + n == columns) & (rows < p),
                                            K0, 0.0)))
        r.append(xp.sum(K0, axis=1))
        Kc.append(K0 @ weights)
    found = _stacked(xp, found)
    r, Kc = (library.to_numpy(xp.concat(v)) for v in (r, Kc))
    found["w"], found["q"] = Kc[:p] - Kc[n:n + p], r[:p] - r[n:n + p]
    found["constants"] = (math.fsum(r), math.fsum(c * Kc), math.fsum(c * r),
                          -2.0 * library.scalar(found["trd"]))
    return found


def _finish(library, iv, spec, kernel, found):
    """The host's ``finish(S, q)`` of the statistics of a batch (the
    permutation test's, from the row sums and the diagonal; the wild
    bootstrap's; the swaps' of the aggregated test, from `_swap_pass`); a
    ValueError where a kernel value overflowed, as on the host."""
    xp = library.xp
    spec.finite(np.array([library.scalar(xp.min(found["low"])),
                          library.scalar(xp.max(found["high"]))]))
    if iv.mode == "permutation":
        return permutation.finish(library.to_numpy(found["r"]),
                                  kernel.diagonal(library), iv.n, iv.N - iv.n,
                                  iv.unbiased)
    if iv.mode == "swap":
        return aggregated.swap_finish(found["w"], found["q"],
                                      found["constants"], iv.n, iv.N - iv.n)
    return wild_bootstrap.finish(iv.n * (iv.n - 1) // 2)


def _degenerate_kind(library, iv, spec, Z, found):
    """How the pooled kernel matrix is degenerate, as the NumPy path finds
    it (`resampling.degenerate_kind`) from the values `found` by the first
    pass: "zero" (0 off the diagonal), "one" (1 everywhere), "constant"
    (the same everywhere to `CONSTANT_RTOL`, or 1 everywhere at the median
    heuristic's scale or on equal points), or None; a kind of the scale
    only for a kernel with one."""
    xp = library.xp
    low, high, off, first = (library.scalar(v) for v in (
        xp.min(found["low"]), xp.max(found["high"]), xp.max(found["off"]),
        found["first"]))
    kind = None
    if off == 0:
        kind = "zero"
    elif low == 1 and high == 1:
        equal = library.holds(xp.all(Z[:1, :] == Z))
        median_scale = iv.gamma is None and not iv.grid
        kind = "constant" if median_scale or equal else "one"
    elif math.isfinite(first) and max(high - first, first - low) <= (
            CONSTANT_RTOL * abs(first)):
        kind = "constant"
    return kind if spec.degenerate_scale or kind == "constant" else None
