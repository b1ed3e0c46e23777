"""Additive kernels between histograms, for every pair of rows: the driver
of ``_additive.pyx``. Dense rows go through the SIMD tiles, CSR rows
through their common non-zeros (as do dense float64 rows of the
Jensen-Shannon kernel with few non-zeros: its term is 0 where either value
is). Inputs
are validated (`check_histograms`): finite, non-negative, float32 or
float64, dense C-contiguous or canonical CSR.
"""

import math

import numpy as np
import scipy.sparse

from . import _additive as _impl
from .layout import (
    TILE_ROWS,
    additive_panel,
    pack_cols,
    pack_rows,
    row_blocks,
    tile_cols,
)
from .schedule import TASK_WORK, run_chunked, threads_for, touch_pages

__all__ = ["additive_sums"]


def additive_sums(X, Y, kind, n_threads, progress=False, desc=""):
    """Sum of the one-dimensional kernel `kind` over the features, for every
    pair of rows; Y=None: X against itself (symmetric). Float64 of shape
    ``(len(X), len(Y))``. With `progress`, a bar (`desc`) moves after every
    chunk of the pairs (the chunks are the same without it: the result
    does not depend on it).

    `kind` is "chi2" (x y / (x + y)), "intersection" (min(x, y)), "product"
    (x y) or "js" (the Jensen-Shannon term). Each pair's value depends on
    its two rows only, at every magnitude: the tiles and the CSR pass are
    exact to rounding for the values of a band (`BANDS`), and the pairs of
    rows with a value outside it are taken again (`_outside_the_band`), so
    that no value is lost to an overflow or an underflow on the way and a
    result below the normal range is rounded once, to the subnormal
    spacing. The result may hold inf where it overflows.
    """
    symmetric = Y is None
    if symmetric:
        Y = X
    n, m = X.shape[0], Y.shape[0]
    out = np.empty((n, m))
    if n == 0 or m == 0:
        return out
    if scipy.sparse.issparse(X) and not scipy.sparse.issparse(Y):
        # The kernels are symmetric in x and y: dense rows against CSR.
        return additive_sums(Y, X, kind, n_threads, progress, desc).T.copy()
    if (kind == "js" and Y.dtype == np.float64 and not scipy.sparse.issparse(Y)
            and (np.count_nonzero(Y) <= JS_SPARSE_DENSITY * Y.size
                 or _outside(X, _JS_TOP, n_threads).all()
                 or (Y is not X and _outside(Y, _JS_TOP, n_threads).all()))):
        # A term is 0 where either value is: the common non-zeros only
        # (float32 tiles, twice as wide, stay ahead: see JS_SPARSE_DENSITY);
        # so too where every row of X or Y holds a value beyond the top of
        # the "js" tiles' band: every pair would be taken again through the
        # common non-zeros (`_outside_the_band`), and is at once.
        Y = scipy.sparse.csr_array(Y)
    # (the steps run here, not in helpers: the compiled loops two calls
    # below the tools' blocks)
    steps = (_sparse if scipy.sparse.issparse(Y) else _dense)(
        X, Y, kind, symmetric, out, n_threads, progress, desc)
    for fn, plan, cost, options in steps:
        run_chunked(fn, plan, cost, **options)
    del steps, plan  # (the packed copies: not held through the band check)
    band = _band(X, Y, kind)
    if band is not None:
        fx = _outside(X, band, n_threads)
        fy = fx if symmetric else _outside(Y, band, n_threads)
        _outside_the_band(X, Y, kind, symmetric, out, n_threads, fx, fy)
    return out


# The Jensen-Shannon kernel of dense float64 histograms with at most this
# share of non-zero values runs through their common non-zeros (CSR),
# faster there than the tiles, which skip only the features that are 0 in
# all the rows of a tile; float32 tiles, twice as wide, are faster at every
# density (benchmarks/TUNING.md).
JS_SPARSE_DENSITY = 0.3
# Element operations per feature of a pair of rows, by kind.
_COST = {"chi2": 4, "intersection": 1, "product": 1, "js": 32}
# ... and per value of its parts for the "js" tiles.
_PARTS_COST = 20
# ... and per feature of a pair taken one by one (km_additive_robust).
_ROBUST_COST = 40

# The values v for which the float64 tiles and CSR pass (and the float32
# tiles: CSR computes float32 in float64) are exact to rounding, (low,
# high): v = 0 or low <= v < high; None, every value. Inside it no term,
# sum or part overflows, none is subnormal (a sum of normal terms), and
# float32 runs of KM_ADD_RUN terms stay finite (km_additive.h):
# - "chi2": 2 / v (the tiles) is at most 2**1022 (float32: 2**126), so
#   that 2 / x + 2 / y is finite; the CSR pass halves values (exactly);
# - "intersection": a minimum is exact, a sum of subnormal numbers too;
#   float32 runs of values below 2**121 stay finite;
# - "product" (of square roots: the Hellinger kernel): products of values
#   from 2**-511 (float32: 2**-63) are normal;
# - "js": the parts of values from the smallest normal number up to
#   2**958 (float32: 2**94) are finite and normal (I(v) = 2**-64 / v, v
#   times 2**64; km_additive.h).
BANDS = {
    np.dtype(np.float64): {"chi2": (2.0**-1021, math.inf), "intersection": None,
                           "product": (2.0**-511, math.inf),
                           "js": (2.0**-1022, 2.0**958)},
    np.dtype(np.float32): {"chi2": (2.0**-125, 2.0**121),
                           "intersection": (0.0, 2.0**121),
                           "product": (2.0**-63, 2.0**60),
                           "js": (2.0**-126, 2.0**94)},
}


def _band(X, Y, kind):
    """The band of `kind` (`BANDS`) for X and Y, or None where there is
    nothing to take again (float32 CSR computes in float64)."""
    if X.dtype == np.float32 and scipy.sparse.issparse(Y):
        return None
    return BANDS[X.dtype][kind]


def _outside_the_band(X, Y, kind, symmetric, out, n_threads, fx=None, fy=None):
    """The pairs of rows with a value outside the band of `kind` (`BANDS`)
    taken again: with float32 tiles, in float64 (whose band holds every
    float32 value); with float64 "js" tiles, the pairs of rows beyond its
    top through the common non-zeros (`_sparse`: exact up to about
    2**1012, its terms lo (g - log2(lo / hi))); then, in float64, those
    whose first value could still be off, one by one (`_one_by_one`), and
    there too the "js" pairs of the common non-zeros whose values are far
    apart (`_far_apart`). Each pair's value depends on its own rows only.
    `fx`, `fy`: the rows of X and Y outside the band (`_outside`), where
    known."""
    if fx is None:
        band = BANDS[X.dtype][kind]
        fx = _outside(X, band, n_threads)
        fy = fx if symmetric else _outside(Y, band, n_threads)
    far = (_far_apart(X, Y, symmetric, n_threads) if kind == "js"
           and X.dtype == np.float64 and scipy.sparse.issparse(Y) else None)
    if not (fx.any() or fy.any() or far is not None):
        return
    if X.dtype == np.float32:
        def wide(A, B):
            return additive_sums(A.astype(np.float64),
                                 None if B is None else B.astype(np.float64),
                                 kind, n_threads)

        _again(X, Y, fx, fy, symmetric, out, wide)
        return
    if kind == "js" and not scipy.sparse.issparse(Y):
        tx = _outside(X, _JS_TOP, n_threads)
        ty = tx if symmetric else _outside(Y, _JS_TOP, n_threads)
        if tx.any() or ty.any():
            def common(A, B):
                return _through_common_non_zeros(A, B, kind, n_threads)

            _again(X, Y, tx, ty, symmetric, out, common)
    _one_by_one(X, Y, kind, fx, fy, symmetric, out, n_threads, far)


def _again(X, Y, fx, fy, symmetric, out, compute):
    """The pairs of a row with a flag (`fx`, `fy`) from ``compute(A, B)``,
    the kernel of some rows of X and of Y (B None: A against itself,
    symmetric)."""
    rows, rest = np.flatnonzero(fx), np.flatnonzero(~fx)
    if symmetric:
        if rows.size:
            out[np.ix_(rows, rows)] = compute(X[rows], None)
        if rows.size and rest.size:
            block = compute(X[rows], X[rest])
            out[np.ix_(rows, rest)] = block
            out[np.ix_(rest, rows)] = block.T
        return
    if rows.size:
        out[rows] = compute(X[rows], Y)
    cols = np.flatnonzero(fy)
    if cols.size and rest.size:
        out[np.ix_(rest, cols)] = compute(X[rest], Y[cols])


# The top of the float64 "js" tiles' band, (0, top): the values beyond it.
_JS_TOP = (0.0, BANDS[np.dtype(np.float64)]["js"][1])


def _through_common_non_zeros(A, B, kind, n_threads):
    """The kernel `kind` of dense float64 rows A and B (None: A, symmetric)
    through their common non-zeros (`_sparse`)."""
    symmetric = B is None
    B = scipy.sparse.csr_array(A if symmetric else B)
    out = np.empty((A.shape[0], B.shape[0]))
    for fn, plan, cost, options in _sparse(A, B, kind, symmetric, out,
                                           n_threads):
        run_chunked(fn, plan, cost, **options)
    _outside_the_band(A, B, kind, symmetric, out, n_threads)
    return out


def _outside(A, band, n_threads):
    """Which rows of `A` hold a value outside `band` (a bool per row)."""
    low, high = band
    if scipy.sparse.issparse(A):
        data = A.data
        bad = ((data > 0) & (data < low)) | (data >= high)
        seen = np.concatenate(([0], np.cumsum(bad)))
        return seen[A.indptr[1:]] > seen[A.indptr[:-1]]
    flags = np.zeros(A.shape[0], dtype=np.uint8)
    if A.size <= SMALL_BAND_CHECK:  # (one call: a few microseconds of work)
        _impl.outside(A, low, high, flags, 0, A.shape[0], 1)
    else:
        run_chunked(_impl.outside, (A, low, high, flags), float(A.shape[1]),
                    n_tasks=A.shape[0],
                    n_threads=threads_for(n_threads, float(A.size), A.shape[0]))
    return flags.view(bool)


# Values up to which the band check is one compiled call on one thread,
# without chunks: about 10 microseconds of work (2000 x 300 values take 0.08
# ms), where the chunked call's planning cost as much again.
SMALL_BAND_CHECK = 1 << 16


def _one_by_one(X, Y, kind, fx, fy, symmetric, out, n_threads, far=None):
    """float64: the pairs of a row with a flag (`fx`, `fy`) whose value is
    below `tiny` or not finite, and the pairs whose rows span 2**_JS_SPAN
    (`far`: `_far_apart`, or None) whose value is below d 2**(e - 957), 2**e
    above their largest value, again from km_additive_robust. A value
    outside the band changes the first value by at most 2**-1021 a feature
    (a term of it dropped, or rounded to the subnormal spacing), below its
    rounding from d 2**-960 up; a value beyond the top of "js" gives inf
    or NaN; a ratio lo / hi below 2**-1022 in km_js_pairs is off by at
    most a factor 2**2100 (log2 r by 2100), lo at most 2**(e - 1022), its
    term by 2**(e - 1010)."""
    tiny = X.shape[1] * 2.0**-960
    cols = np.arange(out.shape[1])
    for a, b in row_blocks(out):  # (no temporary larger than a block)
        block = out[a:b]
        need = (fx[a:b, None] | fy[None, :]) & ~((block >= tiny) & (block < math.inf))
        if far is not None:
            top_x, low_x, top_y, low_y = far
            top = np.maximum.outer(top_x[a:b], top_y)
            spans = top - np.minimum.outer(low_x[a:b], low_y) >= _JS_SPAN
            need |= spans & ~(block >= np.ldexp(float(X.shape[1]), top - 957))
        if symmetric:  # each unordered pair once, mirrored
            need &= cols[None, :] >= np.arange(a, b)[:, None]
        i, j = np.nonzero(need)
        if i.size:
            _robust(X, Y, kind, i + a, j, symmetric, out, n_threads)


# The "js" pairs of the common non-zeros (km_js_pairs) take log2(lo / hi)
# from the ratio, which has lost digits below the normal range: a pair of
# rows whose values span 2**_JS_SPAN or more (the frexp exponents of the
# largest and of the smallest non-zero value of either row) is taken one
# by one, exactly, where its value is small enough for that to matter
# (`_one_by_one`).
_JS_SPAN = 1020


def _far_apart(X, Y, symmetric, n_threads):
    """None if no pair of rows of X and Y (dense or CSR; Y is X as CSR
    where `symmetric`) spans 2**_JS_SPAN, else the exponents
    (`_exponents`) of the largest and smallest non-zero values of each
    row of X and of Y."""
    arrays = (Y,) if symmetric else (X, Y)
    high = max(float(A.data.max(initial=0.0) if scipy.sparse.issparse(A)
                     else A.max(initial=0.0)) for A in arrays)
    if high == 0:
        return None
    # a value below this (0 where it underflows), and there is such a pair
    below = (math.ldexp(1.0, math.frexp(high)[1] - _JS_SPAN), math.inf)
    if not any(_outside(A, below, n_threads).any() for A in arrays):
        return None
    top_x, low_x = _exponents(X)
    top_y, low_y = (top_x, low_x) if symmetric else _exponents(Y)
    return top_x, low_x, top_y, low_y


def _exponents(A):
    """The frexp exponents of the largest and of the smallest non-zero
    value of each row of `A` (dense or CSR): -2000 and 2000 for a row of
    zeros, which then spans nothing."""
    if scipy.sparse.issparse(A):
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        top = np.zeros(A.shape[0])
        np.maximum.at(top, rows, A.data)
        low = np.full(A.shape[0], math.inf)
        positive = A.data > 0
        np.minimum.at(low, rows[positive], A.data[positive])
    else:
        top = A.max(axis=1, initial=0.0)
        low = np.min(A, axis=1, where=A > 0, initial=math.inf)
    some = np.isfinite(low)
    return (np.where(top > 0, np.frexp(top)[1], -2000),
            np.where(some, np.frexp(np.where(some, low, 1.0))[1], 2000))


def _robust(X, Y, kind, rows, cols, symmetric, out, n_threads):
    """out[rows[p], cols[p]] (mirrored with `symmetric`) from
    km_additive_robust, the rows as float64 CSR."""
    xi, xr = np.unique(rows, return_inverse=True)
    yi, yr = np.unique(cols, return_inverse=True)
    A, B = _csr_rows(X, xi), _csr_rows(Y, yi)
    n_tasks = len(rows)
    cost = float(X.shape[1]) * _ROBUST_COST
    n_threads = threads_for(n_threads, cost * n_tasks, n_tasks)
    scratch = np.empty((n_threads, 2 * X.shape[1]))
    index = (np.ascontiguousarray(a, dtype=np.int64) for a in (xr, yr, rows, cols))
    plan = (A.data, A.indices, A.indptr, B.data, B.indices, B.indptr, kind,
            *index, symmetric, out, scratch)
    run_chunked(_impl.robust_pairs, plan, cost, n_tasks=n_tasks,
                n_threads=n_threads)


def _csr_rows(A, rows):
    """The rows `rows` of `A` as float64 CSR with sorted int64 indices."""
    S = scipy.sparse.csr_matrix(A[rows], dtype=np.float64)
    S.sort_indices()  # (where they are not sorted yet)
    S.indices = S.indices.astype(np.int64)
    S.indptr = S.indptr.astype(np.int64)
    return S


# Rows per task of the tiles.
ADDITIVE_ROW_BLOCK = 64


def _dense(X, Y, kind, symmetric, out, n_threads, progress=False, desc=""):
    """The steps ``(fn, plan, cost, options of run_chunked)`` of the tiles
    of `additive_sums`, in order (for "js": the parts of the rows and
    columns first)."""
    n, d = X.shape
    m = Y.shape[0]
    block = additive_panel(d, X.dtype)
    items, cost = _dense_items(n, m, block, tile_cols(X.dtype), symmetric,
                               d * _COST[kind])
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    buffers = np.empty((n_threads, TILE_ROWS * block))
    if symmetric:  # the first row block writes a value in every row
        touch_pages(out, n_threads)
    rows, cols = pack_rows(X), pack_cols(Y)
    if kind == "chi2":
        _reciprocals(rows)
        _reciprocals(cols)
    steps = []
    if kind == "js":
        row_parts, col_parts = (_js_parts(A, planes, n_threads, steps)
                                for A, planes in ((rows, 3), (cols, 2)))
    else:
        row_parts = col_parts = np.empty((0, 0, 0), dtype=X.dtype)
    plan = (rows, row_parts, cols, col_parts, n, m, kind, symmetric,
            ADDITIVE_ROW_BLOCK, block, items, out, buffers)
    return [*steps, (_impl.dense, plan, cost, {
        "n_threads": n_threads, "progress": progress, "desc": desc})]


def _reciprocals(A):
    """2 / A in place, +inf where A is 0: what the "chi2" tiles take."""
    two = A.dtype.type(2)
    for a, b in row_blocks(A):
        with np.errstate(divide="ignore", over="ignore"):
            np.divide(two, A[a:b], out=A[a:b])
        np.abs(A[a:b], out=A[a:b])  # 2 / -0.0 = -inf


def _js_parts(A, planes, n_threads, steps):
    """The parts of the values of the 2-D array `A` that the "js" tiles
    read (`_additive.js_parts`): E, M, I (3 planes) or M, I (2), computed
    by the step appended to `steps`."""
    parts = np.empty((planes, *A.shape), dtype=A.dtype)
    steps.append((_impl.js_parts, (A, parts), float(A.shape[1]) * _PARTS_COST, {
        "n_tasks": A.shape[0], "n_threads": threads_for(
            n_threads, float(A.size) * _PARTS_COST, A.shape[0])}))
    return parts


def _dense_items(n, m, block, nr, symmetric, unit):
    """Items (b, c0, c1) of `_additive.dense`: row block b against runs of
    consecutive column panels of `block` columns, up to TASK_WORK each
    (rows x columns x `unit`); and the work of each item."""
    n_blocks = -(-n // ADDITIVE_ROW_BLOCK)
    b = np.arange(n_blocks, dtype=np.int64)
    r_lo = b * ADDITIVE_ROW_BLOCK
    rows = np.minimum(n, r_lo + ADDITIVE_ROW_BLOCK) - r_lo
    c_lo = (r_lo // nr) * nr if symmetric else np.zeros_like(b)
    panel_work = float(block) * unit * rows
    per_item = np.maximum(1, (TASK_WORK // panel_work).astype(np.int64)) * block
    counts = -(-(m - c_lo) // per_item)
    owner = np.repeat(b, counts)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    c0 = c_lo[owner] + k * per_item[owner]
    c1 = np.minimum(m, c0 + per_item[owner])
    items = np.ascontiguousarray(np.stack([owner, c0, c1], axis=1))
    return items, rows[owner] * (c1 - c0) * float(unit)


def _sparse(X, Y, kind, symmetric, out, n_threads, progress=False, desc=""):
    """The step of the common non-zeros of `additive_sums` (as `_dense`)."""
    index = np.int64 if Y.indices.dtype == np.int64 or (
        scipy.sparse.issparse(X) and X.indices.dtype == np.int64) else np.intc
    y_indices = Y.indices.astype(index, copy=False)
    y_indptr = Y.indptr.astype(index, copy=False)
    if scipy.sparse.issparse(X):
        x_dense = np.empty((0, X.shape[1]), dtype=X.dtype)
        x_data = X.data
        x_indices = X.indices.astype(index, copy=False)
        x_indptr = X.indptr.astype(index, copy=False)
    else:
        x_dense = np.ascontiguousarray(X)
        x_data = np.empty(0, dtype=X.dtype)
        x_indices = x_indptr = np.empty(0, dtype=index)
    n = out.shape[0]
    # Row i meets the stored values of the rows of Y from i (symmetric) or 0.
    after = Y.nnz - Y.indptr[:n] if symmetric else np.full(n, Y.nnz)
    cost = (after + X.shape[1]) * float(_COST[kind])
    n_threads = threads_for(n_threads, cost.sum(), n)
    scratch = np.zeros((n_threads, 3 * X.shape[1] + 16))
    if symmetric:  # the first row writes a value in every row
        touch_pages(out, n_threads)

    plan = (x_dense, x_data, x_indices, x_indptr, Y.data, y_indices, y_indptr,
            kind, symmetric, out, scratch)
    return [(_impl.sparse, plan, cost, {
        "n_threads": n_threads, "progress": progress, "desc": desc})]
