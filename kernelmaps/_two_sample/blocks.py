"""The resampled statistics of the two-sample tests from blocks of the
kernel: memory proportional to the number of objects times the resamples,
not to its square.

The pooled objects (X then Y) are cut into ranges of `size` objects; a
*task* is one pair of ranges (i <= j: each unordered pair once, a kernel
being symmetric) and one batch of resamples. It computes the kernel's
block at every scale (the work shared between the scales done once, by
the kernel's spec) and returns its *contributions*: for each resample of
the batch, the block's part of the quadratic form of the statistic (a
product of the block with the batch's draws), and its row and column sums.
Every contribution goes to a key (a quantity and a range of rows), and the
contributions to a key are added in the order of the tasks, so that the
result does not depend on how the tasks ran: on threads here
(`run_blocks`), or as Dask tasks (the same functions).

Two layouts:

- "pooled" (permutations): ranges of the N pooled objects; the quadratic
  form ``t' K0 t`` of the centred indicators ``t = N s - n`` of the first
  sample (s: 1 on its n objects, 0 on the others; K0: the pooled matrix
  with its diagonal 0), the row sums r of K0 and its diagonal. (The
  statistic needs ``s' K0 s = (t' K0 t + 2 n N r' s - n^2 1' K0 1) /
  N^2``: the part of ``s' K0 s`` common to every split is summed exactly
  from r, and the product carries only the small part that varies, so
  that it keeps its accuracy in float32. The entries of t are integers,
  exact in float32 up to 2^24 objects. As 1' t = 0, the product takes ``K0
  - c`` for a constant c of each scale, the layout's `shifts`, near the
  kernel's mean: its entries, rounded to float32, keep the digits that
  vary between objects, which a kernel near 1 everywhere would lose.)
- "pairs" (the wild bootstrap, and the swaps of paired points of the
  aggregated test): ranges of the p = min(n, m) pairs (x_a, y_a), x_a the
  object a of X and y_a the object a of Y; the quadratic form ``e' H e`` of
  the signs e, ``H = Kxx + Kyy - Kxy - Kyx`` with its diagonal 0, from the
  four blocks of a pair of ranges. For samples of unequal sizes, the row
  sums of K0 over the paired and the unpaired columns too, from the blocks
  between pairs and unpaired objects, and between unpaired objects (no
  product: they enter the statistic linearly). With a `band` R (the
  incomplete U-statistic of MMDAggInc), H keeps only the pairs (a, b) of
  pairs with 0 < |a - b| <= R: ranges of R pairs (or more), and only the
  tasks of a range with itself and with the next one.

The products are in the layout's `dtype` (float32 or float64), each
product's dot products with the draws summed in float64.
"""

import numpy as np

from .._engine import lapack
from .._engine.pair_sums import FLOAT32_REACH, shifted_matrix
from .._engine.schedule import check_cancelled, thread_map


class Layout:
    """The tasks of one pass: the ranges of objects, the pairs of ranges
    and, for each task, the ranges of the draws it multiplies.

    `mode` is "pooled" or "pairs" (see the module's docstring); n and N
    the sizes of the first sample and of the pooled one; `size` the
    objects per range; `linear` whether the pairs layout needs the row
    sums (samples of unequal sizes); `dtype` that of the products,
    `shifts` the constant c of each scale (pooled layout; None: 0) and
    `band` the R of an incomplete U-statistic (pairs layout; `size` at
    least R)."""

    def __init__(self, mode, n, N, size, linear=False, dtype=np.float64,
                 shifts=None, band=None):
        self.mode, self.n, self.N, self.size = mode, n, N, int(size)
        self.dtype = np.dtype(dtype)
        self.shifts, self.band, self.linear = shifts, band, linear
        self.p = min(n, N - n)
        count = N if mode == "pooled" else self.p
        self.ranges = _ranges(0, count, self.size)
        extra = (self.p, n) if n > N - n else (n + self.p, N)
        self.unpaired = (_ranges(*extra, self.size)
                         if mode == "pairs" and linear else [])
        reach = 1 if band is not None else len(self.ranges)
        self.tasks = [("pp", i, j) for i in range(len(self.ranges))
                      for j in range(i, min(i + reach + 1, len(self.ranges)))]
        # the pairs (a, b), a < b, of the statistic
        self.pairs = (self.p * (self.p - 1) // 2 if band is None
                      else band * self.p - band * (band + 1) // 2)
        if self.unpaired:
            self.tasks += [("pu", i, v) for i in range(len(self.ranges))
                           for v in range(len(self.unpaired))]
            self.tasks += [("uu", v, w) for v in range(len(self.unpaired))
                           for w in range(v, len(self.unpaired))]

    def objects(self, task):
        """The ranges of pooled objects a task reads: (rows, cols), and in
        the pairs layout their pairs' partners in Y (of rows; and of cols
        but for unpaired cols)."""
        kind, i, j = task
        if self.mode == "pooled":
            return self.ranges[i], self.ranges[j]
        if kind == "uu":
            return self.unpaired[i], self.unpaired[j]
        rows = self.ranges[i]
        cols = self.ranges[j] if kind == "pp" else self.unpaired[j]
        return rows, cols, *(slice(self.n + s.start, self.n + s.stop)
                             for s in ((rows, cols) if kind == "pp" else (rows,)))

    def draw_rows(self, task):
        """The rows of the draws a task multiplies: (rows, cols), or None
        for a task without a product."""
        kind, i, j = task
        if kind != "pp":
            return None
        return self.ranges[i], self.ranges[j]


def product_draws(draws, mode, n, N, dtype):
    """The draws (int8, or already in `dtype`: returned as they are) as the
    products take them, in `dtype`: the centred indicators ``N s - n`` of
    the pooled layout (`mode` "pooled"), the signs of the pairs."""
    if draws is None or draws.dtype == dtype:
        return draws
    out = draws.astype(dtype)
    if mode == "pooled":
        out *= N
        out -= n
    return out


def _ranges(start, stop, size):
    return [slice(a, min(a + size, stop)) for a in range(start, stop, size)]


def block_task(spec, Z, scales, layout, task, draws_i, draws_j, n_threads,
               take=None):
    """The contributions of one task: a list of (key, value), in a fixed
    order: ``("flags",)`` and the flags of each scale (`_flags`), then the
    fields of its parts (one dict a scale) stacked, by `task_keys`.
    `draws_i` and `draws_j` are the rows of the batch's draws (int8, or as
    `product_draws` gives them) of the task's two ranges (None where it
    multiplies none); ``take(Z, range)`` gives the objects of a range
    (None: ``spec.take``)."""
    kind, i, j = task
    draws_i, draws_j = (product_draws(d, layout.mode, layout.n, layout.N,
                                      layout.dtype) for d in (draws_i, draws_j))
    rows, cols, *partners = layout.objects(task)
    same = kind != "pu" and i == j
    take = take or spec.take
    if layout.mode == "pooled" or kind == "uu":
        A = take(Z, rows)
        B = None if same else take(Z, cols)
        blocks = map(spec.finite, spec.blocks(A, B, scales, n_threads))
        resampled = layout.mode == "pooled"
        shifts = (layout.shifts if resampled and layout.shifts is not None
                  else [0.0] * len(scales))
        parts = [_pooled_part(K, same, draws_i, draws_j, resampled, c)
                 for K, c in zip(blocks, shifts, strict=True)]
    elif kind == "pu":
        U = take(Z, cols)
        kx, ky = (map(spec.finite, spec.blocks(take(Z, r), U, scales, n_threads))
                  for r in (rows, *partners))
        parts = [{"one": bool((a == 1).all() and (b == 1).all()),
                  "nonzero": bool(a.any() or b.any()), "rx": a.sum(axis=1),
                  "ry": b.sum(axis=1), "ru": a.sum(axis=0) + b.sum(axis=0)}
                 for a, b in zip(kx, ky, strict=True)]
    else:
        xi, yi = take(Z, rows), take(Z, partners[0])
        xj = None if same else take(Z, cols)
        yj = None if same else take(Z, partners[1])
        kxx = map(spec.finite, spec.blocks(xi, xj, scales, n_threads))
        kyy = map(spec.finite, spec.blocks(yi, yj, scales, n_threads))
        kxy = map(spec.finite, spec.blocks(xi, take(Z, partners[1]), scales,
                                           n_threads))
        kyx = None if same else map(spec.finite,
                                    spec.blocks(yi, xj, scales, n_threads))
        parts = []
        for a, b, c in zip(kxx, kyy, kxy, strict=True):
            d = c.T if same else next(kyx)
            parts.append(_pairs_part(a, b, c, d, same, draws_i, draws_j,
                                     layout.linear,
                                     _band_mask(layout, rows, cols)))
    return [(("flags",), _flags(parts)),
            *((key, np.stack([p[field] for p in parts]))
              for key, field in task_keys(layout, task))]


def task_keys(layout, task):
    """The ``(key, field)`` of the contributions of `task` after its
    flags, in their order: the fields its parts hold (`_pooled_part`,
    `_pairs_part`, the unpaired rows' sums) and the keys they are added
    to (the same for the threaded pass and the Dask one)."""
    kind, i, j = task
    if kind == "pu":
        return [(("rUx", i), "rx"), (("rUy", i), "ry"), (("rPu", j), "ru")]
    if layout.mode == "pooled":
        table = [("quad", i, "quad"), ("diag", i, "diag"), ("fro", i, "fro"),
                 ("r", i, "rows"), ("r", j, "cols")]
    elif kind == "uu":
        table = [("rUu", i, "rows"), ("rUu", j, "cols")]
    else:
        table = [("quad", i, "quad"), ("trd", i, "trd"), ("rPx", i, "rx"),
                 ("rPy", i, "ry"), ("rPx", j, "cx"), ("rPy", j, "cy")]
    # a diagonal block has a diagonal, and no columns apart from its rows
    skip = {"cols", "cx", "cy"} if i == j else {"diag", "trd"}
    if layout.mode == "pairs" and not layout.linear:
        skip |= {"rx", "ry", "cx", "cy"}
    return [((name, k), field) for name, k, field in table if field not in skip]


def column_dots(A, B):
    """The dot products of the columns of A and B, in their dtype (float32
    for products in float32: sums of a few hundred terms, as accurate as
    the product's own), returned in float64 for the sums across blocks."""
    return np.einsum("ij,ij->j", A, B).astype(np.float64, copy=False)


def products_dtype(dtype, A):
    """`dtype`, or float64 where the values of A exceed `FLOAT32_REACH`
    (float32 products of them could overflow)."""
    if dtype == np.float32 and A.size and max(A.max(), -A.min()) > FLOAT32_REACH:
        return np.dtype(np.float64)
    return np.dtype(dtype)


def _quadratic(M, draws_i, draws_j, same):
    """``diag(E_i' M E_j)`` for each resample (twice for a block off the
    diagonal: its mirror adds the same), the draws as `product_draws`
    gives them: the product in their dtype (float64 for an M in float64
    beyond float32's reach). (A task stopped before it: Ctrl-C waits for
    one product, not for the task's others.)"""
    check_cancelled()
    dtype = (draws_i.dtype if M.dtype == draws_i.dtype
             else products_dtype(draws_i.dtype, M))
    M = M.astype(dtype, copy=False)
    Ei = draws_i.astype(dtype, copy=False)
    Ej = Ei if same else draws_j.astype(dtype, copy=False)
    q = column_dots(Ei, M @ Ej)
    return q if same else 2.0 * q


def _pooled_part(K, same, draws_i, draws_j, resampled, shift):
    """One scale's share of a pooled task (K is changed: its diagonal set
    to 0 on a diagonal block); the products with ``K - shift``."""
    K = np.ascontiguousarray(K, dtype=np.float64)
    part = {"one": bool((K == 1).all())}
    if same:
        part["diag"] = np.diag(K).copy()
        np.fill_diagonal(K, 0.0)
    part["nonzero"] = bool(K.any())
    if not same:
        part["cols"] = np.ones(K.shape[0]) @ K
    if not resampled:
        part["rows"] = K.sum(axis=1)
        return part
    # K - shift in the products' dtype (K itself in float64), the row sums
    # and the squares of K, in one pass
    M, part["rows"], squares, _ = shifted_matrix(K, shift, draws_i.dtype)
    part["quad"] = _quadratic(M, draws_i, draws_j, same)
    part["fro"] = squares * (1.0 if same else 2.0)
    return part


def _band_mask(layout, rows, cols):
    """Where the block of pairs `rows` x `cols` is outside the band (True
    for the pairs (a, b) with |a - b| > R), or None without a band."""
    if layout.band is None:
        return None
    a = np.arange(rows.start, rows.stop)[:, None]
    b = np.arange(cols.start, cols.stop)[None, :]
    return np.abs(b - a) > layout.band


def _pairs_part(kxx, kyy, kxy, kyx, same, draws_i, draws_j, linear, outside):
    """One scale's share of a task of pairs: H's quadratic form (H 0 where
    `outside` is True), the trace of the paired blocks and, with `linear`,
    the row sums."""
    part = {"one": bool((kxx == 1).all() and (kyy == 1).all()
                        and (kxy == 1).all() and (same or (kyx == 1).all()))}
    if same:
        part["trd"] = -2.0 * np.trace(kxy)
        np.fill_diagonal(kxx, 0.0)
        np.fill_diagonal(kyy, 0.0)
    part["nonzero"] = bool(kxx.any() or kyy.any() or kxy.any()
                           or (not same and kyx.any()))
    if linear:
        part["rx"] = kxx.sum(axis=1) + kxy.sum(axis=1)
        part["ry"] = kyx.sum(axis=1) + kyy.sum(axis=1)
        if not same:
            part["cx"] = kxx.sum(axis=0) + kyx.sum(axis=0)
            part["cy"] = kxy.sum(axis=0) + kyy.sum(axis=0)
    H = kxx + kyy  # (in float64: the terms cancel; cast for the product)
    H -= kxy
    H -= kyx
    if same:
        np.fill_diagonal(H, 0.0)
    if outside is not None:
        H[outside] = 0.0
    part["quad"] = _quadratic(H, draws_i, draws_j, same)
    return part


def _flags(parts):
    """(one, nonzero) of each scale: whether its kernel was 1 everywhere in
    the block, and whether it was non-zero somewhere between distinct
    objects."""
    return np.array([[p["one"], p["nonzero"]] for p in parts], dtype=bool)


def add_contribution(totals, key, value):
    """Add one contribution to `totals` (a dict), in the order given."""
    if key not in totals:
        totals[key] = value.copy() if key != ("flags",) else value
    elif key == ("flags",):
        totals[key] = np.stack([totals[key][:, 0] & value[:, 0],
                                totals[key][:, 1] | value[:, 1]], axis=1)
    else:
        totals[key] = totals[key] + value


def run_blocks(spec, Z, scales, layout, draws, n_threads, bar):
    """The totals of one pass (a dict by key), its tasks on `n_threads`
    threads (each on one engine and one BLAS thread), their contributions
    added in the order of the tasks. `draws` are the batch's draws (int8:
    a row per pooled object, or per pair), or None."""

    def run(task):
        rows = layout.draw_rows(task)
        di, dj = ((None, None) if rows is None or draws is None
                  else (draws[rows[0]], draws[rows[1]]))
        return block_task(spec, Z, scales, layout, task, di, dj, 1)

    totals = {}
    with lapack.one_blas_thread():
        for contributions in thread_map(run, layout.tasks, n_threads):
            for key, value in contributions:
                add_contribution(totals, key, value)
            bar.update(1)
    return totals


def pooled_vectors(totals, name, count):
    """The vectors of `name` ("r", "diag", ...) of the `count` ranges of a
    pass, end to end: shape (scales, objects)."""
    return np.concatenate([totals[(name, i)] for i in range(count)], axis=1)


def degenerate_kinds(flags):
    """How each scale's kernel is degenerate ("one", "zero" or None) from
    the flags of a pass."""
    return ["one" if one else "zero" if not nonzero else None
            for one, nonzero in flags]


def range_total(totals, name, n_ranges):
    """A quantity kept per range ("quad": the quadratic forms, scales x
    resamples; "fro", "trd": one value per scale) added over the ranges in
    their order."""
    return sum((totals[(name, i)] for i in range(1, n_ranges)),
               totals[(name, 0)])
