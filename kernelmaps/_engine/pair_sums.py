"""Sums of a point kernel over all pairs of points of two sets.

The driver of the engine in ``_pair_sums.pyx``: it rescales the points,
plans segments and groups, packs the points for the tile kernels, runs the
group pairs (in chunks when a progress bar is shown) and folds segment sums
back into set sums. Inputs are validated `Bags` (anything with ``points``,
``offsets`` and ``dim``).
"""

import math

import numpy as np
import scipy.sparse

from . import _pair_sums as _impl
from .lapack import one_blas_thread
from .layout import (
    PRODUCT_CHUNK,
    TILE_ROWS,
    bandwidth_scale,
    max_abs,
    pack_cols,
    pack_rows,
    panel_points,
    round_up,
    row_blocks,
    scaled,
    squares_exponent,
)
from .schedule import TASK_WORK, run_chunked, threads_for, touch_pages
from .set_means import normalised_weights

__all__ = ["centred_points", "expansion_bound", "kernel_power", "pair_means",
           "pair_sums", "self_sums", "set_sums", "shifted_matrix"]


def pair_sums(X, Y=None, *, kernel, gamma=1.0, coef0=1.0, degree=2, n_threads=1,
              progress=False, desc="kernel sums", normalize=False):
    """``S[i, j]`` = sum of ``k(x, y)`` over ``x`` in ``X[i]``, ``y`` in
    ``Y[j]``, float64 of shape ``(len(X), len(Y))``; ``Y=None`` computes each
    unordered pair of sets once and returns the symmetric matrix.

    `kernel` is "rbf" (``exp(-gamma |x-y|^2)``), "laplacian"
    (``exp(-gamma |x-y|_1)``), "polynomial" (``(gamma <x,y> + coef0)^degree``),
    "sqeuclidean" (``|x-y|^2``), "energy" (``(|x| + |y| - |x-y|) / 2``,
    Euclidean norms: the distance-induced kernel, whose MMD^2 is half the
    energy distance; gamma, coef0 and degree unused) or "linear" (``<x,
    y>``: the products of the sets' sums of points, `set_sums`; an overflow
    gives inf). The sums
    are computed in chunks of about 50 ms (Ctrl-C stops between two), on at
    most `n_threads` threads.
    With `normalize`, ``S[i, j]`` is divided by ``len(X[i]) * len(Y[j])``
    (the mean of the kernel values).

    Weighted sets (X or Y a `Bags` with ``weights``; the other, if not,
    weighs 1 a point): the sum of ``w_x w_y k(x, y)``, or with
    `normalize` of ``(w_x / W_i) (w_y / W_j) k(x, y)`` (``W_i`` the total
    weight of ``X[i]``). Every path computes the normalised sums (weights
    divided by their set's total: the float32 tiles multiply by values in
    [0, 1]) and, without `normalize`, scales them by ``W_i W_j`` in
    float64.
    """
    weights = _pair_weights(X, Y)
    ux, uy = (None, None) if weights is None else weights
    gamma, coef0, degree = _used(kernel, gamma, coef0, degree)
    if kernel == "linear":
        sx = set_sums(X, ux)
        with np.errstate(over="ignore", invalid="ignore"):
            S = sx @ (sx if Y is None else set_sums(Y, uy)).T
        return _finished(S, X, Y, normalize, weights)
    symmetric = Y is None
    xp, yp = X.points, None if symmetric else Y.points
    e, gamma, dtype = _standardize(xp, yp, kernel, gamma)
    max_points = panel_points(X.dim, dtype)
    small = _one_group(X, max_points) and (symmetric or _one_group(Y, max_points))
    if (not small and kernel in ("rbf", "polynomial")
            and X.dim >= PAIR_GEMM_DIM[np.dtype(dtype)]):
        S = _by_products(X, Y, kernel, e, gamma, coef0, degree, dtype,
                         n_threads, progress, desc, weights)
        if S is not None:
            return _finished(S, X, Y, normalize, weights)
    if small:
        # A small call (a few milliseconds at most): one task, no planning
        # (products cost more than they save on a group this small).
        # (unweighted, it divides as `pair_means`; weighted: `_finished`)
        Z = X if symmetric else Y
        xw, yw = (None, None) if weights is None else (
            _row_weights(ux, dtype), ux if symmetric else uy)
        S = _impl.one_group(xp.astype(dtype, copy=False), X.offsets,
                            Z.points.astype(dtype, copy=False), Z.offsets,
                            e, symmetric, kernel, gamma, coef0, degree,
                            normalize and weights is None, xw, yw)
        S = _unscaled(S, kernel, e)
        return S if weights is None else _finished(S, X, Y, normalize, weights)
    xplan = _impl.plan_segments(X.offsets, max_points, PAIR_MAX_SEGMENTS, True)
    if symmetric:
        yp, yplan = xp, xplan
    else:
        yplan = _impl.plan_segments(Y.offsets, max_points, PAIR_MAX_SEGMENTS, True)
    # Threads share out the row groups: put the longer side on the rows.
    transposed = not symmetric and len(yplan[2]) > len(xplan[2])
    if transposed:
        xp, yp, xplan, yplan = yp, xp, yplan, xplan
        ux, uy = uy, ux
    if symmetric:
        uy = ux

    n_row_seg, n_col_seg = len(xplan[1]), len(yplan[1])
    n_row_groups, n_col_groups = len(xplan[2]) - 1, len(yplan[2]) - 1
    col_first = (np.arange(n_row_groups, dtype=np.int64) if symmetric
                 else np.zeros(n_row_groups, dtype=np.int64))
    col_stop = np.full(n_row_groups, n_col_groups, dtype=np.int64)
    out = np.empty(n_row_seg * n_col_seg)
    if symmetric:  # the first row group writes a value in every row
        touch_pages(out, n_threads)
    plan, cost, pairs, n_threads = _tiles(
        xp, xplan, yp, yplan, col_first, col_stop, e, dtype,
        rowbase=np.arange(n_row_seg, dtype=np.int64) * n_col_seg,
        colidx=np.arange(n_col_seg, dtype=np.int64), out=out, mirror=symmetric,
        kernel=kernel, gamma=gamma, coef0=coef0, degree=degree,
        n_threads=n_threads, weights=None if ux is None else (ux, uy))
    run_chunked(_impl.tile_sums, plan, cost, n_threads=n_threads,
                progress=progress, desc=desc, unit_cost=pairs)

    S = out.reshape(n_row_seg, n_col_seg)
    S = _fold_segments(S, xplan[1], axis=0)
    S = _fold_segments(S, yplan[1], axis=1)
    S = S.T.copy() if transposed else S
    return _finished(_unscaled(S, kernel, e), X, Y, normalize, weights)


def _finished(S, X, Y, normalize, weights):
    """The sums S of `pair_sums`: unweighted (`weights` None), divided by
    the numbers of pairs with `normalize`; weighted (normalised sums),
    times the products of the total weights without it."""
    if weights is None:
        return pair_means(S, X, Y) if normalize else S
    return S if normalize else _times_pair_weights(S, X, Y)


# Segments per group, at most.
PAIR_MAX_SEGMENTS = 128
# The rbf and polynomial kernels with at least this many features take
# their dot products from BLAS (`_by_products`), faster than the tiles.
PAIR_GEMM_DIM = {np.dtype(np.float64): 128, np.dtype(np.float32): 128}


def kernel_power(half_log, c, n_threads=1, out=None):
    """The kernel matrix to the power c > 0, ``exp(2 c half_log)``, from
    half its logarithm (float64, C order; -inf where the kernel is 0) by the
    engine's exp, a block of rows at a time (Ctrl-C stops between
    blocks): the kernel at c times its scale, for the rbf and laplacian
    kernels. Written into `out` where it is a float64 C-ordered array of
    the same shape (a fresh array of hundreds of MB costs its page faults,
    about as much as the exp)."""
    half_log = np.ascontiguousarray(half_log, dtype=np.float64)
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64
            and out.shape == half_log.shape and out.flags.c_contiguous):
        out = np.empty_like(half_log)
    for start, stop in row_blocks(half_log):
        _impl.power_rows(out, half_log, c, start, stop,
                         max(1, min(n_threads, stop - start)))
    return out


def shifted_matrix(K, shift, dtype, out=None, n_threads=1):
    """``(K - shift, row sums, sum of squares, finite)`` of a kernel matrix
    K (float64, C order) in one pass, a block of rows at a time on
    `n_threads` threads: K less a constant in `dtype` (into `out` where it
    is a C-ordered array of K's shape in `dtype`; for float64 into K itself
    where `out` is None), the row sums and the sum of the squares of K in
    float64 (inf where it overflows), and whether K is finite. Where
    ``|K - shift|`` exceeds `FLOAT32_REACH`, float32 is not used: K less
    the constant is then in float64."""
    rows = K.shape[0]
    if not (isinstance(out, np.ndarray) and out.dtype == dtype
            and out.shape == K.shape and out.flags.c_contiguous):
        out = K if dtype == np.float64 else np.empty(K.shape, dtype=dtype)
    sums, squares, top = np.empty(rows), np.empty(rows), np.empty(rows)
    finite = np.empty(rows, dtype=np.uint8)
    for start, stop in row_blocks(K):
        _impl.shifted_rows(K, shift, out, sums, squares, top, finite, start,
                           stop, max(1, min(n_threads, stop - start)))
    if out.dtype == np.float32 and rows and top.max() + abs(shift) > FLOAT32_REACH:
        return shifted_matrix(K, shift, np.float64, None, n_threads)
    with np.errstate(over="ignore"):
        total = float(squares.sum())
    return out, sums, total, bool(finite.all())


# The largest kernel values multiplied in float32: their products with
# integer draws up to 2^24, summed over up to 2^24 terms, stay below
# float32's largest number (2^128).
FLOAT32_REACH = 2.0**64


def pair_means(S, X, Y):
    """Sums over the pairs of sets of X and Y (None: X) divided, in place,
    by their numbers of pairs of points (as `one_group` divides: by the
    product of the two sizes, in float64); of weighted sets, by the
    products of their total weights (`Bags.set_weights`)."""
    return _by_set_totals(S, X, Y, np.divide)


def _by_set_totals(S, X, Y, op):
    """``op(S, W_i W_j)`` in place, W the set totals (`Bags.set_weights`:
    the sizes of unweighted sets) of X and Y (None: X), a block of rows
    at a time (not an N x M product: Ctrl-C between blocks)."""
    rows = X.set_weights()
    cols = (X if Y is None else Y).set_weights()
    for a, b in row_blocks(S):
        op(S[a:b], np.multiply.outer(rows[a:b], cols), out=S[a:b])
    return S


# Points per group of `_by_products`: one BLAS product per pair of groups.
PAIR_GEMM_BLOCK = 512
# Bounds on the relative error of each kernel value computed from dot
# products (`_by_products`); a group pair whose bound is larger takes the
# difference tiles. The contracts are 1e-12 (float64) and 1e-5 (float32);
# the sums and exp add a few units of 2**-53 more.
_PRODUCT_ERROR = {np.dtype(np.float64): 5e-13, np.dtype(np.float32): 9e-6}
# Points whose largest magnitude is within 2**(+-this) are multiplied as
# they are (their squares and sums neither overflow nor lose their largest
# terms to underflow); others in units of the bandwidth, if that brings them
# within it, else not from products.
_PRODUCT_RANGE = {np.dtype(np.float64): 300, np.dtype(np.float32): 30}
# The probabilistic bound on a float32 dot product of k terms, lambda
# sqrt(k) u times the sum of the terms' magnitudes (Higham and Mary,
# SIAM J. Sci. Comput. 41(5), 2019: it holds with probability at least
# 1 - 2k exp(-lambda**2 / 2) for rounding errors that are independent and
# of mean zero; the worst case, k u, is never met in practice). With
# lambda = 6 that is 1 - 3e-6 for k = 128.
_LAMBDA = 6.0


def _by_products(X, Y, kernel, e, gamma, coef0, degree, dtype, n_threads,
                 progress, desc, weights=None):
    """`pair_sums` of the rbf or polynomial kernel from the dot products
    of the points, computed by BLAS in groups of PAIR_GEMM_BLOCK points, the
    kernel then applied to the products of each group pair (`_impl.product_sums`).

    The rbf kernel uses the expansion |x - y|^2 = |x|^2 + |y|^2 - 2 <x,
    y>, of the points as they are where that is exact enough, else of the
    points centred (c the mean of them all). Its rounding error is bounded
    for each pair of groups from their radii r_g, r_h (the largest |x - c|
    of each; c = 0 uncentred): in float64, the products and norms summed
    over chunks of k features (PRODUCT_CHUNK) err by at most (k + d / k +
    1) u |x - c| |y - c| and (...) |x - c|^2, the centring and the
    expansion add 5 u (r_g + r_h)^2: the relative error of a kernel value
    is at most gamma (k + d / k + 6) u (r_g + r_h)^2. In float32 the
    chunks' products err by the probabilistic bound above (their sums, the
    norms and the expansion are float64), and the points, centred in
    float32, move by u32 |x - c| each. A group pair whose bound exceeds
    _PRODUCT_ERROR even centred (points several bandwidths from their
    centre) takes the exact difference tiles, as the other kernels. The
    polynomial kernel takes the products as they are: the tiles compute the
    same dot products. Returns None where the points are too far from 0
    for products (thousands of bandwidths): the tiles run. With `weights`
    (ux, uy of `_pair_weights`), the weighted sums.
    """
    symmetric = Y is None
    rbf = kernel == "rbf"
    dtype = np.dtype(dtype)
    d = X.dim
    chunk = PRODUCT_CHUNK[dtype]
    points = [X.points] if symmetric else [X.points, Y.points]
    top = max_abs(*points)
    limit = _PRODUCT_RANGE[dtype]
    if not rbf or top == 0 or -limit <= math.frexp(top)[1] <= limit:
        prepared = [np.ascontiguousarray(p, dtype=dtype) for p in points]
        product_gamma = math.ldexp(gamma, 2 * e) if rbf else gamma
    elif math.frexp(top)[1] + e <= limit:
        # Points at extreme scales: in units of the bandwidth (2**e, exact).
        prepared = [scaled(p, e, dtype) for p in points]
        product_gamma = gamma
    else:  # thousands of bandwidths from 0: the products would overflow
        return None
    norms = [np.zeros(len(p)) for p in prepared]
    for p, n in zip(prepared, norms, strict=True):  # norms (no centre, no copy)
        _impl.prepare_points(p, np.zeros(0), np.zeros((0, 0), dtype), n, chunk,
                             n_threads)

    xplan = _impl.plan_segments(X.offsets, PAIR_GEMM_BLOCK, PAIR_GEMM_BLOCK, True)
    yplan = xplan if symmetric else _impl.plan_segments(
        Y.offsets, PAIR_GEMM_BLOCK, PAIR_GEMM_BLOCK, True)
    xseg, xgroups = xplan[0], xplan[2]
    yseg, ygroups = yplan[0], yplan[2]
    n_g, n_h = len(xgroups) - 1, len(ygroups) - 1
    g, h = (np.triu_indices(n_g) if symmetric
            else np.indices((n_g, n_h)).reshape(2, -1))
    form = np.full(len(g), _impl.PRODUCTS)
    centred, centred_norms = [np.zeros((1, 1), dtype=dtype)], [np.zeros(1)]
    if rbf:
        form[_uncertified(norms, xplan, yplan, g, h, product_gamma, d,
                          dtype)] = _impl.EXACT
    if (form == _impl.EXACT).any():  # the pairs left, centred
        centred, centred_norms = centred_points(prepared, n_threads)
        certified = ~_uncertified(centred_norms, xplan, yplan, g, h,
                                  product_gamma, d, dtype)
        form[(form == _impl.EXACT) & certified] = _impl.CENTRED
    exact = form == _impl.EXACT
    rows = np.diff(xseg[xgroups])[g].astype(np.float64)
    cols = np.diff(yseg[ygroups])[h]
    cost = rows * cols * (d + _KERNEL_COST)
    if symmetric:
        cost[g == h] /= 2
    # The largest first: the threads end together.
    order = np.argsort(-cost, kind="stable")
    items = np.ascontiguousarray(np.stack([g, h, form]).T[order], dtype=np.int64)
    cost = cost[order]
    xa, ya = prepared[0], prepared[-1]
    xn, yn = norms[0], norms[-1]
    xc, yc = centred[0], centred[-1]
    xcn, ycn = centred_norms[0], centred_norms[-1]

    if exact.any():
        xrows = pack_rows(X.points, e, dtype)
        ycols = pack_cols(X.points if symmetric else Y.points, e, dtype)
    else:
        xrows = ycols = np.zeros((1, 1), dtype=dtype)
    phases = np.zeros(ycols.shape[1], dtype=dtype)
    out = np.zeros((len(xplan[1]), len(yplan[1])))
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    xw, yw, weighted = _weight_args(weights, symmetric, dtype)
    plan = (xa, xn, xc, xcn, xseg, xgroups, ya, yn, yc, ycn, yseg, ygroups, items,
            out, symmetric, xrows, ycols, phases, kernel, float(product_gamma),
            float(gamma), float(coef0), int(degree), chunk, xw, yw, weighted)
    with one_blas_thread():
        run_chunked(_impl.product_sums, plan, cost, n_threads=n_threads,
                    progress=progress, desc=desc)
    S = _fold_segments(out, xplan[1], axis=0)
    return _fold_segments(S, yplan[1], axis=1)


def centred_points(arrays, n_threads):
    """The points `arrays` (2-D, of one dtype) less the mean of all of them
    (summed in float64), in their dtype, and the squared norms of the
    centred points: two lists, an entry per array (the products paths
    centre the points where the norms alone would lose too much)."""
    centre = (sum(a.sum(axis=0, dtype=np.float64) for a in arrays)
              / max(sum(len(a) for a in arrays), 1))
    centred = [np.empty_like(a) for a in arrays]
    norms = [np.zeros(len(a)) for a in arrays]
    for a, c, n in zip(arrays, centred, norms, strict=True):
        _impl.prepare_points(a, centre, c, n, PRODUCT_CHUNK[a.dtype], n_threads)
    return centred, norms


def _uncertified(norms, xplan, yplan, g, h, gamma, d, dtype):
    """Which group pairs (g, h) the bound of `_by_products` does not
    certify, from the squared norms of the points as prepared."""
    radius = [np.sqrt(np.maximum.reduceat(n, plan[0][plan[2][:-1]]))
              for n, plan in zip((norms[0], norms[-1]), (xplan, yplan),
                                 strict=True)]
    return _product_error(radius[0][g], radius[1][h], gamma, d,
                          dtype) > _PRODUCT_ERROR[dtype]


def _product_error(rg, rh, gamma, d, dtype):
    """The bound of `_by_products` on the relative error of the rbf kernel
    values between groups of radii rg and rh (arrays)."""
    c1, c2 = expansion_bound(d, dtype)
    return gamma * (c1 * rg * rh + c2 * (rg + rh) ** 2)


def expansion_bound(d, dtype):
    """(c1, c2): the error of |x - c|^2 + |y - c|^2 - 2 <x - c, y - c> for
    points of `d` features in `dtype`, prepared by `_impl.prepare_points`
    and multiplied by `products` in chunks of PRODUCT_CHUNK features, is at
    most ``c1 r R + c2 (r + R)^2`` with r = |x - c|, R = |y - c|. float64:
    the products and norms err by (k + d / k + 1) u r R and (...) r^2, the
    centring and the expansion by 5 u (r + R)^2 more; float32: the chunks'
    products by the probabilistic bound, lambda sqrt(k) u32 r R (their
    sums, the norms and the expansion are float64), the points centred in
    float32 by u32 (r + R)^2. Shared by the set kernels and the kNN
    search."""
    u = 2.0**-53
    k = min(PRODUCT_CHUNK[np.dtype(np.float64)], d)
    if dtype == np.float64:
        return 0.0, (k + math.ceil(d / k) + 6) * u
    u32, k32 = 2.0**-24, min(PRODUCT_CHUNK[np.dtype(dtype)], d)
    return (2 * _LAMBDA * math.sqrt(k32) * u32,
            2 * u32 + (k + math.ceil(d / k32) + 6) * u)


def _one_group(bags, max_points):
    """Whether `plan_segments` makes one group of the sets of `bags`."""
    return bags.n_points <= max_points and len(bags) <= PAIR_MAX_SEGMENTS


def self_sums(X, *, kernel, gamma=1.0, coef0=1.0, degree=2, n_threads=1,
              normalize=False):
    """``s[i]`` = sum of ``k(x, x')`` over all ``x, x'`` in ``X[i]`` (the
    diagonal of ``pair_sums(X)`` at a fraction of its cost); of weighted
    sets, the sum of ``w_x w_x' k(x, x')``, computed normalised (the
    weights over their set's total) and returned so with `normalize`
    (weighted sets only), else scaled by the squared total weight in
    float64."""
    u = _unit_weights(X)
    gamma, coef0, degree = _used(kernel, gamma, coef0, degree)
    if u is not None:
        S = _self_sums(X, kernel, gamma, coef0, degree, n_threads, u)
        if normalize:
            return S
        with np.errstate(over="ignore", invalid="ignore"):
            return S * X.set_weights()**2
    return _self_sums(X, kernel, gamma, coef0, degree, n_threads)


def _self_sums(X, kernel, gamma, coef0, degree, n_threads, u=None):
    """`self_sums`, with the weights `u` (`_unit_weights`) where given."""
    if kernel == "linear":
        with np.errstate(over="ignore"):
            return np.square(set_sums(X, u)).sum(axis=1)
    xp = X.points
    e, gamma, dtype = _standardize(xp, None, kernel, gamma)
    max_points = panel_points(X.dim, dtype)
    plan = _impl.plan_segments(X.offsets, max_points, PAIR_MAX_SEGMENTS, False)
    seg_set = plan[1]
    # Every segment is a group here; a set cut into p pieces needs the p x p
    # pieces' pair sums, stored in a block of its own.
    first = np.searchsorted(seg_set, np.arange(len(X))).astype(np.int64)
    pieces = np.diff(np.append(first, len(seg_set)))
    base = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(pieces**2, out=base[1:])
    local = np.arange(len(seg_set), dtype=np.int64) - first[seg_set]
    out = np.empty(base[-1])
    plan, cost, _, n_threads = _tiles(
        xp, plan, xp, plan, e=e, dtype=dtype,
        col_first=np.arange(len(seg_set), dtype=np.int64),
        col_stop=(first + pieces)[seg_set],
        rowbase=base[seg_set] + local * pieces[seg_set], colidx=local,
        out=out, mirror=True, kernel=kernel, gamma=gamma, coef0=coef0,
        degree=degree, n_threads=n_threads,
        weights=None if u is None else (u, u))
    run_chunked(_impl.tile_sums, plan, cost, n_threads=n_threads)
    return _unscaled(np.add.reduceat(out, base[:-1]), kernel, e)


def set_sums(X, weights=None):
    """Sum of the points of each set, float64 of shape ``(len(X), d)``;
    with `weights` (float64, one per point), the weighted sums."""
    n_points = X.n_points
    indicator = scipy.sparse.csr_array(
        (np.ones(n_points) if weights is None else weights,
         np.arange(n_points), X.offsets),
        shape=(len(X), n_points),
    )
    return np.asarray(indicator @ X.points.astype(np.float64, copy=False))


def _standardize(x, y, kernel, gamma):
    """The exponent of the power of two the points are packed times, the
    matching gamma and the dtype to compute in: rbf and laplacian points in
    units of their bandwidth (`bandwidth_scale`), energy points at the
    scale of `squares_exponent` (their sums then `_unscaled`), others as
    they are."""
    if kernel == "energy":
        return squares_exponent(max_abs(x, y), x.shape[1], x.dtype), gamma, x.dtype
    if kernel not in ("rbf", "laplacian"):
        return 0, gamma, x.dtype
    return bandwidth_scale(x, y, kernel, gamma)


def _used(kernel, gamma, coef0, degree):
    """(gamma, coef0, degree) as the tiles take them: those given, or for
    "energy", which has none, placeholders (whatever the caller passed)."""
    return (1.0, 0.0, 1) if kernel == "energy" else (gamma, coef0, degree)


def _unscaled(S, kernel, e):
    """Sums S (float64) of the kernel between points packed times 2**e,
    in place, at the points' own scale: those of "energy" times 2**-e (the
    kernel is homogeneous of degree 1; exact, but where they overflow
    (inf) or become subnormal); of the other kinds, S as it is (their
    points are in units of their bandwidth, or not scaled)."""
    if kernel != "energy" or e == 0:
        return S
    with np.errstate(over="ignore", under="ignore"):
        for a, b in row_blocks(S):
            np.ldexp(S[a:b], -e, out=S[a:b])
    return S


# Element operations of a kernel value beyond the features (exp, powers).
_KERNEL_COST = 8


def _tiles(xp, xplan, yp, yplan, col_first, col_stop, e, dtype, *, rowbase, colidx,
           out, mirror, kernel, gamma, coef0, degree, n_threads, weights=None):
    """Row group g against the column groups col_first[g] <= h < col_stop[g],
    for every g, as items of at most TASK_WORK each: ``(plan, cost, pairs,
    n_threads)`` for `run_chunked`, the plan of `_impl.tile_sums`, the cost
    and the point pairs of each item, and the threads to run on. `weights`:
    None, or the float64 weights (ux, uy) of the row and column points."""
    xseg, _, xgroups = xplan
    yseg, _, ygroups = yplan
    xbounds, ybounds = xseg[xgroups], yseg[ygroups]
    row_points, col_points = xbounds[1:] - xbounds[:-1], ybounds[1:] - ybounds[:-1]
    items, cost, pairs = _plan_items(row_points, col_points, col_first, col_stop,
                                     xp.shape[1] + _KERNEL_COST)
    n_threads = threads_for(n_threads, cost.sum(), len(items))
    rows, cols = pack_rows(xp, e, dtype), pack_cols(yp, e, dtype)
    if kernel == "energy":  # the norms of the points, the columns' as phases
        xnorms, phases = (_impl.packed_norms(rows, False),
                          _impl.packed_norms(cols, True))
    else:
        xnorms, phases = np.zeros(1, dtype=dtype), np.zeros(cols.shape[1], dtype=dtype)
    ldo = round_up(col_points.max(), dtype)
    max_acc = (int((xgroups[1:] - xgroups[:-1]).max())
               * int((ygroups[1:] - ygroups[:-1]).max()))
    tile_buffers = np.empty((n_threads, TILE_ROWS * ldo), dtype=dtype)
    acc_buffers = np.empty((n_threads, max_acc))
    xw, yw, weighted = _weight_args(weights, False, dtype)
    plan = (rows, xseg, xgroups, cols, phases, xnorms, yseg, ygroups, items, rowbase,
            colidx, out, mirror, tile_buffers, acc_buffers, kernel, float(gamma),
            float(coef0), int(degree), xw, yw, weighted)
    return plan, cost, pairs, n_threads


def _unit_weights(bags):
    """The weights of the points of `bags` divided by the total of their
    set (`set_means.normalised_weights`: no total overflows), or None for
    unweighted sets."""
    w = bags.weights
    return None if w is None else normalised_weights(w, bags.offsets)


def _pair_weights(X, Y):
    """``(ux, uy)``: the `_unit_weights` of X and Y (uy None where Y is
    None), those of unweighted sets ``1 / n_i``, where either is
    weighted; None where neither is."""
    if X.weights is None and (Y is None or Y.weights is None):
        return None
    units = []
    for bags in (X, Y):
        if bags is None:
            units.append(None)
        elif bags.weights is None:
            sizes = bags.sizes
            units.append(np.repeat(1.0 / sizes.astype(np.float64), sizes))
        else:
            units.append(_unit_weights(bags))
    return tuple(units)


def _row_weights(u, dtype):
    """Weights of row points (float64) in `dtype`, padded with zeros as
    `pack_rows` pads the points (the tiles read the weights of whole
    strips)."""
    out = np.zeros(len(u) + TILE_ROWS, dtype=dtype)
    out[:len(u)] = u
    return out


def _weight_args(weights, symmetric, dtype):
    """``(xw, yw, weighted)`` for the engine's functions: the row weights
    (`_row_weights`) and column weights (float64) of `weights` = (ux, uy)
    (uy None, or `symmetric`: ux), or placeholders and False."""
    if weights is None:
        return np.zeros(1, dtype=dtype), np.zeros(1), False
    ux, uy = weights
    uy = ux if symmetric or uy is None else uy
    return (_row_weights(ux, dtype), np.ascontiguousarray(uy, dtype=np.float64),
            True)


def _times_pair_weights(S, X, Y):
    """Normalised sums of weighted sets times the products of their total
    weights, in place: the weighted sums (inf where they overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _by_set_totals(S, X, Y, np.multiply)


def _plan_items(row_points, col_points, col_first, col_stop, unit):
    """Items (g, h0, h1): row group g against the column groups h0 <= h < h1,
    consecutive column groups of the range col_first[g] <= h < col_stop[g] gathered up
    to TASK_WORK (row points x column points x `unit`). Returns the items,
    their work and their numbers of group pairs."""
    counts = col_stop - col_first
    if counts.sum() == 0:
        return np.empty((0, 3), dtype=np.int64), np.empty(0), np.empty(0)
    if len(counts) == 1:  # one row group (small calls): one item if it fits
        columns = col_points[col_first[0]:col_stop[0]]
        work = float(row_points[0]) * float(columns.sum()) * unit
        if work <= TASK_WORK:
            return (np.array([[0, col_first[0], col_stop[0]]], dtype=np.int64),
                    np.array([work]), np.array([counts[0]]))
    g = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    h = np.arange(len(g), dtype=np.int64) - np.repeat(first - col_first, counts)
    work = row_points[g].astype(np.float64) * col_points[h] * unit
    cum = np.cumsum(work)
    before = np.repeat(cum[first[counts > 0]] - work[first[counts > 0]],
                       counts[counts > 0])
    bucket = ((cum - before - work) // TASK_WORK).astype(np.int64)
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (bucket[1:] != bucket[:-1])
    starts = np.flatnonzero(new)
    stops = np.append(starts[1:], len(g))
    items = np.stack([g[starts], h[starts], h[stops - 1] + 1], axis=1)
    return (np.ascontiguousarray(items), np.add.reduceat(work, starts),
            stops - starts)


def _fold_segments(S, seg_set, axis):
    """Sum the rows (axis 0) or columns (axis 1) of the pieces of each set."""
    if len(seg_set) == 0 or seg_set[-1] == len(seg_set) - 1:
        return S  # one segment per set
    starts = np.flatnonzero(np.diff(seg_set, prepend=-1))
    return np.add.reduceat(S, starts, axis=axis)
