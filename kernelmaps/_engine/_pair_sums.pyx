"""Sums of kernel values over pairs of sets: the arithmetic of the set kernels.

Points are cut into *segments* (a set, or a piece of a large set) and
consecutive segments into *groups* of at most a few hundred points. A task
(an *item*) is a row group against a run of column groups; it computes the
point-level kernel values in tiles of KM_MR rows (km_tile.h) and reduces
them at once to one sum per pair of segments, which it writes to `out`.
Every entry of `out` is written by exactly one task, so results do not
depend on the number of threads, bit for bit. The driver (pair_sums.py)
plans the groups and items, and folds segment sums back into set sums.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t
from libc.math cimport fabs, ldexp, sqrt
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

import numpy as np

from ._products cimport products
from ._runtime cimport KM_MR, KM_NR_D, KM_NR_F, floating, isa_level, km_isa_ran
from ._tile cimport (
    KM_ENERGY,
    KM_LAPLACIAN,
    KM_POLYNOMIAL,
    KM_RBF,
    KM_SQEUCLIDEAN,
    km_poly_row_d,
    km_rbf_row_d,
    km_tile_args,
    sum_run,
    tile,
)

KINDS = {
    "rbf": KM_RBF,
    "laplacian": KM_LAPLACIAN,
    "polynomial": KM_POLYNOMIAL,
    "sqeuclidean": KM_SQEUCLIDEAN,
    "energy": KM_ENERGY,
}


def plan_segments(const int64_t[::1] offsets, int64_t max_points,
                  int64_t max_segments, bint combine):
    """Cut sets into segments and gather segments into groups.

    A set larger than `max_points` is cut into near-equal pieces, each a
    group of its own; smaller sets are segments, gathered (if `combine`) into
    groups of at most `max_points` points and `max_segments` segments.

    Returns ``seg_ptr`` (point offsets of the segments), ``seg_set`` (the set
    of each segment) and ``group_ptr`` (segment offsets of the groups).
    """
    cdef Py_ssize_t n_sets = offsets.shape[0] - 1
    cdef int64_t total = offsets[n_sets]
    cdef Py_ssize_t bound = n_sets + total // max_points + 1
    seg_ptr_a = np.empty(bound + 1, dtype=np.int64)
    seg_set_a = np.empty(bound, dtype=np.int64)
    group_ptr_a = np.empty(bound + 1, dtype=np.int64)
    cdef int64_t[::1] seg_ptr = seg_ptr_a
    cdef int64_t[::1] seg_set = seg_set_a
    cdef int64_t[::1] group_ptr = group_ptr_a
    cdef Py_ssize_t i, p, n_seg = 0, n_groups = 0
    cdef int64_t n, pieces, start, group_points = 0, group_segs = 0

    with nogil:
        for i in range(n_sets):
            start = offsets[i]
            n = offsets[i + 1] - start
            pieces = (n + max_points - 1) // max_points
            if pieces > 1:
                for p in range(pieces):
                    group_ptr[n_groups] = n_seg
                    n_groups += 1
                    seg_ptr[n_seg] = start + (n * p) // pieces
                    seg_set[n_seg] = i
                    n_seg += 1
                group_points = max_points  # the next set starts a group
                continue
            if (not combine or group_segs == 0 or group_segs >= max_segments
                    or group_points + n > max_points):
                group_ptr[n_groups] = n_seg
                n_groups += 1
                group_points = 0
                group_segs = 0
            seg_ptr[n_seg] = start
            seg_set[n_seg] = i
            n_seg += 1
            group_points += n
            group_segs += 1
        seg_ptr[n_seg] = total
        group_ptr[n_groups] = n_seg

    return (seg_ptr_a[:n_seg + 1], seg_set_a[:n_seg],
            group_ptr_a[:n_groups + 1])


cdef inline double _weighted_run(const floating *v, const double *w,
                                 ptrdiff_t n) noexcept nogil:
    """Sum of v[i] w[i] over i < n, in float64 (four running sums, added
    in a fixed order): a run of kernel values dotted with the weights of
    their columns."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef ptrdiff_t i = 0
    while i + 4 <= n:
        s0 = s0 + <double>v[i] * w[i]
        s1 = s1 + <double>v[i + 1] * w[i + 1]
        s2 = s2 + <double>v[i + 2] * w[i + 2]
        s3 = s3 + <double>v[i + 3] * w[i + 3]
        i = i + 4
    while i < n:
        s0 = s0 + <double>v[i] * w[i]
        i = i + 1
    return (s0 + s1) + (s2 + s3)


cdef void _group_pair(const km_tile_args *shared_args, const floating *x,
                      const int64_t *xseg, int64_t s0, int64_t s1,
                      const floating *yt, const floating *phases,
                      const int64_t *yseg, int64_t t0, int64_t t1,
                      bint diagonal, floating *buf, double *acc,
                      const floating *xw, const double *yw,
                      const floating *xn) noexcept nogil:
    """acc[s - s0, t - t0] = sum of k(x, y) over x in segment s, y in t.

    `xn`: NULL, or the norms of the row points (the energy kernel: `phases`
    holds those of the columns), padded as the rows are.

    With weights (`xw` and `yw` not NULL), the sum of xw[x] yw[y] k(x, y):
    `xw` the weights of the row points, in the element type, padded as the
    rows are, and `yw` those of the column points, in float64, both
    indexed as the points: each row's values multiplied by its weight in
    the tile (`row_w`), the runs of each column segment dotted with the
    column weights.

    `diagonal`: the two groups are the same (X against itself), and only
    the pairs t >= s are needed: a strip of rows starting in segment s
    computes the columns of t >= s only (the others are left 0). A column's
    values do not depend on where the strip's columns start, so the sums
    are bit for bit those of the whole strip.
    """
    cdef km_tile_args args = shared_args[0]
    cdef int64_t p0 = xseg[s0], p1 = xseg[s1]
    cdef int64_t q0 = yseg[t0], q1 = yseg[t1]
    cdef ptrdiff_t n_t = t1 - t0, d = args.d, ldo = args.ldo
    cdef int64_t r0 = p0, row, row_end, s = s0, t, tfirst = t0, c0 = q0
    cdef double *acc_row
    cdef const floating *buf_row

    memset(acc, 0, (s1 - s0) * n_t * sizeof(double))
    while r0 < p1:
        while xseg[s + 1] <= r0:
            s += 1
        if diagonal:
            tfirst = s
            c0 = yseg[s]
        # A strip of rows in one segment needs only its column sums.
        args.sum_rows = xseg[s + 1] >= r0 + KM_MR
        if xw != NULL:
            args.row_w = xw + r0
        if xn != NULL:
            args.row_n = xn + r0
        tile(&args, x + r0 * d, yt + c0, phases + c0, q1 - c0, buf)
        row_end = r0 + 1 if args.sum_rows else min(r0 + KM_MR, p1)
        for row in range(r0, row_end):
            while xseg[s + 1] <= row:
                s += 1
            acc_row = acc + (s - s0) * n_t
            buf_row = buf + (row - r0) * ldo
            if yw == NULL:
                for t in range(tfirst, t1):
                    acc_row[t - t0] += sum_run(buf_row + (yseg[t] - c0),
                                               yseg[t + 1] - yseg[t])
            else:
                for t in range(tfirst, t1):
                    acc_row[t - t0] += _weighted_run(
                        buf_row + (yseg[t] - c0), yw + yseg[t],
                        yseg[t + 1] - yseg[t])
        r0 += KM_MR


def tile_sums(const floating[:, ::1] xrows, const int64_t[::1] xseg,
              const int64_t[::1] xgroups, const floating[:, ::1] ycols,
              const floating[::1] phases, const floating[::1] xnorms,
              const int64_t[::1] yseg,
              const int64_t[::1] ygroups, const int64_t[:, ::1] items,
              const int64_t[::1] rowbase, const int64_t[::1] colidx,
              double[::1] out, bint mirror,
              floating[:, ::1] tile_buffers, double[:, ::1] acc_buffers,
              str kind, double gamma, double coef0, int degree,
              const floating[::1] xw, const double[::1] yw, bint weighted,
              Py_ssize_t start, Py_ssize_t stop, int n_threads):
    """Sums over segment pairs for the items ``start <= it < stop``: item
    (g, h0, h1) is row group g against the column groups h0 <= h < h1.

    The sum over row segment s and column segment t goes to
    out[rowbase[s] + colidx[t]], and with `mirror` (symmetric case: h >= g,
    segments of both sides the same) also to out[rowbase[t] + colidx[s]].
    Every entry of `out` belongs to one item.

    xrows: row points, padded with KM_MR - 1 rows; ycols: column points
    transposed, padded to a multiple of the tile width; phases: the tiles'
    column values, of the padded width: the norms of the column points for
    "energy" (xnorms those of the rows, padded as xrows), zeros for the
    other kinds (xnorms then ignored).
    tile_buffers: (n_threads, KM_MR * ldo) with ldo the padded size of the
    largest column group; acc_buffers: (n_threads, largest row group
    segments * largest column group segments). With `weighted`, the sums
    are weighted (`_group_pair`): xw the weights of the row points in
    their element type, padded as xrows, yw those of the column points in
    float64; otherwise both are ignored.
    """
    cdef km_tile_args args
    cdef Py_ssize_t it, g, h, tid
    cdef int64_t s, t, s0, s1, t0, t1
    cdef double value
    cdef double *acc
    cdef const floating *xw_p = &xw[0] if weighted else NULL
    cdef const double *yw_p = &yw[0] if weighted else NULL
    cdef bint energy = KINDS[kind] == KM_ENERGY
    cdef const floating *xn_p = &xnorms[0] if energy else NULL

    if energy and xnorms.shape[0] < xrows.shape[0]:
        raise ValueError("tile_sums: norms shorter than the rows")
    args.d = xrows.shape[1]
    args.ldy = ycols.shape[1]
    args.ldo = tile_buffers.shape[1] // KM_MR
    args.kind = KINDS[kind]
    args.degree = degree
    args.sum_rows = 0
    args.row_w = NULL
    args.row_n = NULL
    args.gamma = gamma
    args.coef0 = coef0

    for it in prange(start, stop, nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        acc = &acc_buffers[tid, 0]
        g = items[it, 0]
        s0 = xgroups[g]
        s1 = xgroups[g + 1]
        for h in range(items[it, 1], items[it, 2]):
            t0 = ygroups[h]
            t1 = ygroups[h + 1]
            _group_pair(&args, &xrows[0, 0], &xseg[0], s0, s1, &ycols[0, 0],
                        &phases[0], &yseg[0], t0, t1, mirror and h == g,
                        &tile_buffers[tid, 0], acc, xw_p, yw_p, xn_p)
            for s in range(s0, s1):
                # With mirror, the pair (s, t) stands for (t, s) too: on the
                # diagonal group pair, only t >= s is used (exact symmetry).
                for t in range(s if mirror and h == g else t0, t1):
                    value = acc[(s - s0) * (t1 - t0) + (t - t0)]
                    out[rowbase[s] + colidx[t]] = value
                    if mirror:
                        out[rowbase[t] + colidx[s]] = value


cdef int _norms(const floating *p, ptrdiff_t n, ptrdiff_t d, ptrdiff_t ld,
                bint transposed, floating *out) noexcept nogil:
    """out[i] = |p_i| for the n points of a packed array: of d features,
    point i at p[i ld] (rows) or, `transposed`, at p[i] with features ld
    apart (columns). The squares are summed in float64 in the order of the
    features either way (the same bits for the same point in rows and in
    columns), the square root rounded to the element type. Returns -1
    where out of memory."""
    cdef ptrdiff_t i, k
    cdef double v, total
    cdef double *acc
    if not transposed:
        for i in range(n):
            total = 0.0
            for k in range(d):
                v = p[i * ld + k]
                total = total + v * v
            out[i] = <floating>sqrt(total)
        return 0
    acc = <double *>calloc(max(n, 1), sizeof(double))
    if acc == NULL:
        return -1
    for k in range(d):
        for i in range(n):
            v = p[k * ld + i]
            acc[i] = acc[i] + v * v
    for i in range(n):
        out[i] = <floating>sqrt(acc[i])
    free(acc)
    return 0


def packed_norms(const floating[:, ::1] packed, bint transposed):
    """The norms of the points of `packed` (`_norms`), in its dtype: of
    its rows (`layout.pack_rows`), or `transposed` of its columns
    (`layout.pack_cols`); the padding's are 0. For the tiles of the energy
    kernel: the row norms and the column values (`phases`) of
    `tile_sums`."""
    cdef Py_ssize_t n = packed.shape[1] if transposed else packed.shape[0]
    cdef Py_ssize_t d = packed.shape[0] if transposed else packed.shape[1]
    out_a = np.zeros(n, dtype=np.float32 if floating is float else np.float64)
    cdef floating[::1] out = out_a
    cdef int status = 0
    if n > 0 and d > 0:
        with nogil:
            status = _norms(&packed[0, 0], n, d, packed.shape[1], transposed,
                            &out[0])
    if status:
        raise MemoryError()
    return out_a


def one_group(const floating[:, ::1] xp, const int64_t[::1] xseg,
              const floating[:, ::1] yp, const int64_t[::1] yseg, int e,
              bint mirror, str kind, double gamma, double coef0, int degree,
              bint normalize=False, const floating[::1] xw=None,
              const double[::1] yw=None):
    """`tile_sums` of one row group against one column group, the whole of
    a small call: the sums over segment pairs, float64 of shape
    ``(len(xseg) - 1, len(yseg) - 1)``, bit for bit those of `tile_sums`
    with the item (0, 0, 1), on the calling thread, with no planning.

    xp, yp: the points, not packed (packed here times 2**e, as by
    `layout.pack_rows` and `layout.pack_cols`). With `mirror` (X against
    itself) the pairs (s, t), t < s, are those of (t, s), as in `tile_sums`.
    With `normalize`, each sum is divided by the product of the two
    segments' sizes (in float64, as `pair_sums.pair_sums` divides).
    With `xw` and `yw` (the weights of the row points in their element
    type, padded with KM_MR zeros, and of the column points in float64),
    the weighted sums of `_group_pair`, never divided. For "energy", the
    norms of the packed points are computed here (`_norms`), as
    `packed_norms` computes them for `tile_sums`.
    """
    cdef Py_ssize_t n_s = xseg.shape[0] - 1, n_t = yseg.shape[0] - 1
    cdef Py_ssize_t n = xp.shape[0], m = yp.shape[0], d = xp.shape[1]
    cdef Py_ssize_t nr = KM_NR_D if floating is double else KM_NR_F
    cdef Py_ssize_t ldo = (m + nr - 1) // nr * nr, ldy = m + nr
    out_a = np.empty((n_s, n_t))
    cdef double[:, ::1] out = out_a
    cdef km_tile_args args
    cdef Py_ssize_t i, k, s, t
    cdef double scale
    cdef bint weighted = xw is not None
    cdef const floating *xw_p = &xw[0] if weighted else NULL
    cdef const double *yw_p = &yw[0] if weighted else NULL
    cdef bint energy = KINDS[kind] == KM_ENERGY
    cdef floating *xn = NULL
    cdef int status = 0
    if weighted and (xw.shape[0] < n + KM_MR or yw.shape[0] < m):
        raise ValueError("one_group: weights shorter than the points")
    args.d = d
    args.ldy = ldy
    args.ldo = ldo
    args.kind = KINDS[kind]
    args.degree = degree
    args.sum_rows = 0
    args.row_w = NULL
    args.row_n = NULL
    args.gamma = gamma
    args.coef0 = coef0
    # One zeroed block: rows (n + KM_MR, d), columns (d, ldy), the phases
    # (ldy), the tile buffer (KM_MR, ldo) and, for "energy", the row norms
    # (n + KM_MR; the phases are the column norms).
    cdef floating *rows
    cdef floating *cols
    cdef floating *block = <floating *>calloc(
        (n + KM_MR) * d + (d + 1) * ldy + KM_MR * ldo
        + (n + KM_MR if energy else 0), sizeof(floating))

    if block == NULL:
        raise MemoryError()
    rows = block
    cols = rows + (n + KM_MR) * d
    with nogil:
        if -1000 < e < 1000:  # 2**e a normal number: a product, exact as ldexp
            scale = ldexp(1.0, e)
            for i in range(n):
                for k in range(d):
                    rows[i * d + k] = <floating>(xp[i, k] * scale)
            for i in range(m):
                for k in range(d):
                    cols[k * ldy + i] = <floating>(yp[i, k] * scale)
        else:
            for i in range(n):
                for k in range(d):
                    rows[i * d + k] = ldexp(xp[i, k], e)
            for i in range(m):
                for k in range(d):
                    cols[k * ldy + i] = ldexp(yp[i, k], e)
        if energy:
            xn = cols + (d + 1) * ldy + KM_MR * ldo
            status = _norms(rows, n, d, d, False, xn)
            status = status or _norms(cols, m, d, ldy, True, cols + d * ldy)
        if n_s > 0 and n_t > 0 and status == 0:
            _group_pair(&args, rows, &xseg[0], 0, n_s, cols, cols + d * ldy,
                        &yseg[0], 0, n_t, mirror, cols + (d + 1) * ldy,
                        &out[0, 0], xw_p, yw_p, xn)
        free(block)
        if mirror:
            for s in range(n_s):
                for t in range(s):
                    out[s, t] = out[t, s]
        if normalize and not weighted:
            for s in range(n_s):
                for t in range(n_t):
                    out[s, t] = out[s, t] / (<double>(xseg[s + 1] - xseg[s])
                                             * <double>(yseg[t + 1] - yseg[t]))
    if status:
        raise MemoryError()
    return out_a


# How `product_sums` computes the sums of a group pair (C and Python names).
cdef enum:
    FORM_PRODUCTS = 0
    FORM_EXACT = 1
    FORM_CENTRED = 2
PRODUCTS, EXACT, CENTRED = FORM_PRODUCTS, FORM_EXACT, FORM_CENTRED

cdef void _product_pair(const floating *xa, const double *xn,
                        const int64_t *xseg, int64_t s0, int64_t s1,
                        const floating *ya, const double *yn,
                        const int64_t *yseg, int64_t t0, int64_t t1,
                        int d, bint diagonal, int kind, double gamma,
                        double coef0, int degree, int chunk, double *G,
                        floating *C, double *acc, const floating *xw,
                        const double *yw) noexcept nogil:
    """acc[s - s0, t - t0] = sum of k(x, y) over x in segment s, y in t, from
    the dot products of the points of the two groups (`products`, one
    matrix G) and the kernel applied to them row by row (rbf: from the
    squared norms xn, yn too).

    `diagonal`: the groups are the same, and only the pairs t >= s are
    needed, as in `_group_pair`: the products of j >= i are computed, and
    those of each segment with itself completed by symmetry. Each row's
    values are summed over each column segment, and those sums over the
    rows of each segment, in the order of the rows: the result does not
    depend on the threads. With weights (`xw`, `yw` not NULL, as in
    `_group_pair`), each row's values are dotted with the column weights of
    each segment and the result multiplied by the row's weight.
    """
    cdef int64_t p0 = xseg[s0], p1 = xseg[s1], q0 = yseg[t0], q1 = yseg[t1]
    cdef int64_t n_t = t1 - t0, ncols = q1 - q0
    cdef int64_t row, srow, t, c0, j
    # exp(-x) = 2**(-x log2 e)
    cdef double exp2_scale = -gamma * 1.4426950408889634
    cdef double *g
    cdef double *acc_row

    memset(acc, 0, (s1 - s0) * n_t * sizeof(double))
    products(xa + p0 * d, ya + q0 * d, d, <int>(p1 - p0), <int>ncols,
             diagonal, chunk, G, <int>ncols, C)
    if diagonal:  # each segment with itself: below the diagonal, by symmetry
        srow = s0
        for row in range(p0, p1):
            while xseg[srow + 1] <= row:
                srow += 1
            for j in range(yseg[srow] - q0, row - p0):
                G[(row - p0) * ncols + j] = G[j * ncols + (row - p0)]
    srow = s0
    for row in range(p0, p1):
        while xseg[srow + 1] <= row:
            srow += 1
        g = G + (row - p0) * ncols
        # The columns of the segments t >= srow on the diagonal, else all.
        c0 = yseg[srow] - q0 if diagonal else 0
        if kind == KM_RBF:
            km_rbf_row_d(isa_level, g + c0, yn + q0 + c0, xn[row], exp2_scale,
                         ncols - c0)
        else:
            km_poly_row_d(isa_level, g + c0, gamma, coef0, degree, ncols - c0)
        acc_row = acc + (srow - s0) * n_t
        if yw == NULL:
            for t in range(srow if diagonal else t0, t1):
                acc_row[t - t0] += sum_run(g + (yseg[t] - q0),
                                           yseg[t + 1] - yseg[t])
        else:
            for t in range(srow if diagonal else t0, t1):
                acc_row[t - t0] += <double>xw[row] * _weighted_run(
                    g + (yseg[t] - q0), yw + yseg[t], yseg[t + 1] - yseg[t])


def power_rows(double[:, ::1] out, const double[:, ::1] half_log, double c,
               Py_ssize_t row0, Py_ssize_t row1, int n_threads):
    """out[i] = exp(2 c half_log[i]) for the rows row0 <= i < row1, in
    parallel, by the engine's exp: half_log is half the logarithm of a
    kernel matrix (<= 0, -inf where it is 0) and c > 0, so that out is the
    matrix to the power c (the kernel at c times its scale)."""
    cdef Py_ssize_t i, n = half_log.shape[1]
    cdef double[::1] zeros = np.zeros(max(n, 1))
    # exp(2 c h) = 2**(-c log2(e) max(-2 h, 0)) for h <= 0
    cdef double exp2_scale = -c * 1.4426950408889634
    if n == 0:
        return
    for i in prange(row0, row1, nogil=True, schedule="static",
                    num_threads=n_threads):
        memcpy(&out[i, 0], &half_log[i, 0], n * sizeof(double))
        km_rbf_row_d(isa_level, &out[i, 0], &zeros[0], 0.0, exp2_scale, n)


def shifted_rows(const double[:, ::1] K, double shift, floating[:, ::1] out,
                 double[::1] row_sums, double[::1] row_squares,
                 double[::1] row_top, unsigned char[::1] row_finite,
                 Py_ssize_t row0,
                 Py_ssize_t row1, int n_threads):
    """One pass over the rows row0 <= i < row1 of a kernel matrix K, in
    parallel: out = K - shift (in out's dtype; out may be K itself), and
    each row's sum, sum of squares (float64, in a fixed order), largest
    absolute value and whether it is finite."""
    cdef Py_ssize_t i, j, n = K.shape[1], n4 = n - n % 4
    cdef double a, b, c, e, bad, top, s0, s1, s2, s3, q0, q1, q2, q3
    for i in prange(row0, row1, nogil=True, schedule="static",
                    num_threads=n_threads):
        # four partial sums (in a fixed order): the additions overlap
        s0 = s1 = s2 = s3 = q0 = q1 = q2 = q3 = bad = top = 0.0
        for j in range(0, n4, 4):
            a = K[i, j]
            b = K[i, j + 1]
            c = K[i, j + 2]
            e = K[i, j + 3]
            bad = bad + ((a - a) + (b - b)) + ((c - c) + (e - e))  # NaN: inf
            s0 = s0 + a
            s1 = s1 + b
            s2 = s2 + c
            s3 = s3 + e
            q0 = q0 + a * a
            q1 = q1 + b * b
            q2 = q2 + c * c
            q3 = q3 + e * e
            top = max(top, max(max(fabs(a), fabs(b)), max(fabs(c), fabs(e))))
            out[i, j] = <floating>(a - shift)
            out[i, j + 1] = <floating>(b - shift)
            out[i, j + 2] = <floating>(c - shift)
            out[i, j + 3] = <floating>(e - shift)
        for j in range(n4, n):
            a = K[i, j]
            bad = bad + (a - a)
            s0 = s0 + a
            q0 = q0 + a * a
            top = max(top, fabs(a))
            out[i, j] = <floating>(a - shift)
        row_sums[i] = (s0 + s1) + (s2 + s3)
        row_top[i] = top
        row_squares[i] = (q0 + q1) + (q2 + q3)
        row_finite[i] = bad == 0.0


def product_sums(const floating[:, ::1] xa, const double[::1] xn,
                 const floating[:, ::1] xc, const double[::1] xcn,
                 const int64_t[::1] xseg, const int64_t[::1] xgroups,
                 const floating[:, ::1] ya, const double[::1] yn,
                 const floating[:, ::1] yc, const double[::1] ycn,
                 const int64_t[::1] yseg, const int64_t[::1] ygroups,
                 const int64_t[:, ::1] items, double[:, ::1] out, bint mirror,
                 const floating[:, ::1] xrows, const floating[:, ::1] ycols,
                 const floating[::1] phases, str kind, double gamma,
                 double tile_gamma, double coef0, int degree, int chunk,
                 const floating[::1] xw, const double[::1] yw, bint weighted,
                 Py_ssize_t start, Py_ssize_t stop, int n_threads):
    """Sums over segment pairs for the items start <= it < stop, each (g,
    h, form): row group g against column group h, ``out[s, t]`` = the sum
    of k(x, y) over x in segment s, y in t; with `mirror` (X against
    itself, h >= g) ``out[t, s]`` too.

    Items of form PRODUCTS take the products (`_product_pair`) of xa and
    ya, the points, with xn, yn their squared norms in float64, and
    `gamma`; of form CENTRED, those of xc and yc, the points centred (rbf),
    with xcn, ycn (empty when no item needs them). Items of form EXACT take
    the difference tiles (`_group_pair`): xrows, ycols the points packed
    for them (empty when no item needs them), phases zeros of the padded
    width, with `tile_gamma` (the tiles' points are in units of the
    bandwidth). Every entry of `out` belongs to one item. The BLAS must run
    on one thread (the caller's): the items run in parallel, one per
    thread. With `weighted`, the weighted sums (`xw`, `yw` as in
    `tile_sums`; xw also gives the rows' weights of the products).
    """
    cdef Py_ssize_t it
    cdef int64_t max_rows = 0, max_cols = 0, max_segs = 0, g, h, s, t
    cdef int64_t s0, s1, t0, t1, ldo
    cdef int d = xa.shape[1], kind_code = KINDS[kind]
    cdef Py_ssize_t nr = KM_NR_D if floating is double else KM_NR_F
    cdef bint any_exact = False, diagonal
    cdef int failed = 0
    cdef int *failed_at = &failed  # shared: the threads' own variables are private
    cdef double value
    cdef double *G
    cdef double *acc
    cdef floating *C
    cdef floating *tilebuf
    cdef km_tile_args args
    cdef const floating *xw_p = &xw[0] if weighted else NULL
    cdef const double *yw_p = &yw[0] if weighted else NULL

    for it in range(start, stop):
        g, h = items[it, 0], items[it, 1]
        max_rows = max(max_rows, xseg[xgroups[g + 1]] - xseg[xgroups[g]])
        max_cols = max(max_cols, yseg[ygroups[h + 1]] - yseg[ygroups[h]])
        max_segs = max(max_segs, (xgroups[g + 1] - xgroups[g])
                       * (ygroups[h + 1] - ygroups[h]))
        any_exact = any_exact or items[it, 2] == FORM_EXACT
    ldo = (max_cols + nr - 1) // nr * nr
    args.d = d
    args.ldy = ycols.shape[1]
    args.ldo = ldo
    args.kind = kind_code
    args.degree = degree
    args.sum_rows = 0
    args.row_w = NULL
    args.row_n = NULL
    args.gamma = tile_gamma
    args.coef0 = coef0

    with nogil, parallel(num_threads=n_threads):
        G = <double *>malloc(max_rows * max_cols * sizeof(double))
        acc = <double *>malloc(max_segs * sizeof(double))
        C = <floating *>malloc((max_rows * max_cols if floating is float else 1)
                               * sizeof(floating))
        tilebuf = <floating *>malloc((KM_MR * ldo if any_exact else 1)
                                     * sizeof(floating))
        # Every thread takes part in the loop (a work-sharing construct).
        for it in prange(start, stop, schedule="dynamic"):
            if G == NULL or acc == NULL or C == NULL or tilebuf == NULL:
                failed_at[0] = 1
            else:
                g = items[it, 0]
                h = items[it, 1]
                s0 = xgroups[g]
                s1 = xgroups[g + 1]
                t0 = ygroups[h]
                t1 = ygroups[h + 1]
                diagonal = mirror and g == h
                if items[it, 2] == FORM_EXACT:
                    _group_pair(&args, &xrows[0, 0], &xseg[0], s0, s1,
                                &ycols[0, 0], &phases[0], &yseg[0], t0, t1,
                                diagonal, tilebuf, acc, xw_p, yw_p, NULL)
                elif items[it, 2] == FORM_CENTRED:
                    _product_pair(&xc[0, 0], &xcn[0], &xseg[0], s0, s1,
                                  &yc[0, 0], &ycn[0], &yseg[0], t0, t1, d,
                                  diagonal, kind_code, gamma, coef0, degree,
                                  chunk, G, C, acc, xw_p, yw_p)
                else:
                    _product_pair(&xa[0, 0], &xn[0], &xseg[0], s0, s1,
                                  &ya[0, 0], &yn[0], &yseg[0], t0, t1, d,
                                  diagonal, kind_code, gamma, coef0, degree,
                                  chunk, G, C, acc, xw_p, yw_p)
                for s in range(s0, s1):
                    for t in range(s if diagonal else t0, t1):
                        value = acc[(s - s0) * (t1 - t0) + (t - t0)]
                        out[s, t] = value
                        if mirror:
                            out[t, s] = value
        free(G)
        free(acc)
        free(C)
        free(tilebuf)
    if failed:
        raise MemoryError()


def prepare_points(const floating[:, ::1] x, const double[::1] centre,
                   floating[:, ::1] out, double[::1] norms, int chunk,
                   int n_threads):
    """For the products of `_products.pxd`: with `centre` non-empty,
    ``out = x - centre`` (in float64, rounded to the element type); then
    ``norms`` = the squared norms of the rows of `out` (or of `x` when
    `centre` is empty), in float64, summed over chunks of `chunk` features
    (four running sums in each; the chunks' sums added in order)."""
    cdef Py_ssize_t n = x.shape[0], d = x.shape[1], i, k, k0, k1
    cdef bint centring = centre.shape[0] > 0
    cdef const floating *row
    cdef double total, s0, s1, s2, s3, v
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        if centring:
            for k in range(d):
                out[i, k] = <floating>(x[i, k] - centre[k])
            row = &out[i, 0]
        else:
            row = &x[i, 0]
        total = 0.0
        k0 = 0
        while k0 < d:
            k1 = min(k0 + chunk, d)
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            k = k0
            while k + 4 <= k1:
                s0 = s0 + <double>row[k] * row[k]
                s1 = s1 + <double>row[k + 1] * row[k + 1]
                s2 = s2 + <double>row[k + 2] * row[k + 2]
                s3 = s3 + <double>row[k + 3] * row[k + 3]
                k = k + 4
            while k < k1:
                v = row[k]
                s0 = s0 + v * v
                k = k + 1
            total = total + ((s0 + s1) + (s2 + s3))
            k0 = k1
        norms[i] = total


def last_isa():
    """The code path of this engine's last SIMD call: 0 baseline, 1 AVX2, 2
    AVX-512 (-1 before any), for the tests that every engine follows the
    switch (`_runtime.select_isa`)."""
    return km_isa_ran
