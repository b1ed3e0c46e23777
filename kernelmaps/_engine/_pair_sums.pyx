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
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t
from libc.math cimport ldexp
from libc.stdlib cimport calloc, free
from libc.string cimport memset

import numpy as np

from ._runtime cimport KM_MR, KM_NR_D, KM_NR_F, floating, isa_level
from ._tile cimport (
    KM_LAPLACIAN,
    KM_POLYNOMIAL,
    KM_RBF,
    KM_SQEUCLIDEAN,
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


cdef void _group_pair(const km_tile_args *shared_args, const floating *x,
                      const int64_t *xseg, int64_t s0, int64_t s1,
                      const floating *yt, const floating *phases,
                      const int64_t *yseg, int64_t t0, int64_t t1,
                      bint diagonal, floating *buf, double *acc) noexcept nogil:
    """acc[s - s0, t - t0] = sum of k(x, y) over x in segment s, y in t.

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
        tile(&args, x + r0 * d, yt + c0, phases + c0, q1 - c0, buf)
        row_end = r0 + 1 if args.sum_rows else min(r0 + KM_MR, p1)
        for row in range(r0, row_end):
            while xseg[s + 1] <= row:
                s += 1
            acc_row = acc + (s - s0) * n_t
            buf_row = buf + (row - r0) * ldo
            for t in range(tfirst, t1):
                acc_row[t - t0] += sum_run(buf_row + (yseg[t] - c0),
                                           yseg[t + 1] - yseg[t])
        r0 += KM_MR


def pair_sums(const floating[:, ::1] xrows, const int64_t[::1] xseg,
              const int64_t[::1] xgroups, const floating[:, ::1] ycols,
              const floating[::1] phases, const int64_t[::1] yseg,
              const int64_t[::1] ygroups, const int64_t[:, ::1] items,
              const int64_t[::1] rowbase, const int64_t[::1] colidx,
              double[::1] out, bint mirror,
              floating[:, ::1] tile_buffers, double[:, ::1] acc_buffers,
              str kind, double gamma, double coef0, int degree, int n_threads):
    """Sums over segment pairs for the items: item (g, h0, h1) is row group
    g against the column groups h0 <= h < h1.

    The sum over row segment s and column segment t goes to
    out[rowbase[s] + colidx[t]], and with `mirror` (symmetric case: h >= g,
    segments of both sides the same) also to out[rowbase[t] + colidx[s]].
    Every entry of `out` belongs to one item.

    xrows: row points, padded with KM_MR - 1 rows; ycols: column points
    transposed, padded to a multiple of the tile width; phases: zeros of the
    padded width (the tiles' column values; no kernel here uses them).
    tile_buffers: (n_threads, KM_MR * ldo) with ldo the padded size of the
    largest column group; acc_buffers: (n_threads, largest row group
    segments * largest column group segments).
    """
    cdef km_tile_args args
    cdef Py_ssize_t it, g, h, tid
    cdef int64_t s, t, s0, s1, t0, t1
    cdef double value
    cdef double *acc

    args.d = xrows.shape[1]
    args.ldy = ycols.shape[1]
    args.ldo = tile_buffers.shape[1] // KM_MR
    args.kind = KINDS[kind]
    args.degree = degree
    args.sum_rows = 0
    args.gamma = gamma
    args.coef0 = coef0

    for it in prange(items.shape[0], nogil=True, schedule="dynamic",
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
                        &tile_buffers[tid, 0], acc)
            for s in range(s0, s1):
                # With mirror, the pair (s, t) stands for (t, s) too: on the
                # diagonal group pair, only t >= s is used (exact symmetry).
                for t in range(s if mirror and h == g else t0, t1):
                    value = acc[(s - s0) * (t1 - t0) + (t - t0)]
                    out[rowbase[s] + colidx[t]] = value
                    if mirror:
                        out[rowbase[t] + colidx[s]] = value


def one_group(const floating[:, ::1] xp, const int64_t[::1] xseg,
              const floating[:, ::1] yp, const int64_t[::1] yseg, int e,
              bint mirror, str kind, double gamma, double coef0, int degree,
              bint normalize=False):
    """`pair_sums` of one row group against one column group, the whole of
    a small call: the sums over segment pairs, float64 of shape
    ``(len(xseg) - 1, len(yseg) - 1)``, bit for bit those of `pair_sums`
    with the item (0, 0, 1), on the calling thread, with no planning.

    xp, yp: the points, not packed (packed here times 2**e, as by
    `layout.pack_rows` and `layout.pack_cols`). With `mirror` (X against
    itself) the pairs (s, t), t < s, are those of (t, s), as in `pair_sums`.
    With `normalize`, each sum is divided by the product of the two
    segments' sizes (in float64, as `pair_sums.pair_sums` divides).
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
    args.d = d
    args.ldy = ldy
    args.ldo = ldo
    args.kind = KINDS[kind]
    args.degree = degree
    args.sum_rows = 0
    args.gamma = gamma
    args.coef0 = coef0
    # One zeroed block: rows (n + KM_MR, d), columns (d, ldy), the phases
    # (ldy) and the tile buffer (KM_MR, ldo).
    cdef floating *rows
    cdef floating *cols
    cdef floating *block = <floating *>calloc(
        (n + KM_MR) * d + (d + 1) * ldy + KM_MR * ldo, sizeof(floating))

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
        if n_s > 0 and n_t > 0:
            _group_pair(&args, rows, &xseg[0], 0, n_s, cols, cols + d * ldy,
                        &yseg[0], 0, n_t, mirror, cols + (d + 1) * ldy,
                        &out[0, 0])
        free(block)
        if mirror:
            for s in range(n_s):
                for t in range(s):
                    out[s, t] = out[t, s]
        if normalize:
            for s in range(n_s):
                for t in range(n_t):
                    out[s, t] = out[s, t] / (<double>(xseg[s + 1] - xseg[s])
                                             * <double>(yseg[t + 1] - yseg[t]))
    return out_a


cdef inline Py_ssize_t _segment_of(const int64_t *seg, Py_ssize_t n,
                                   Py_ssize_t i) noexcept nogil:
    """The s with seg[s] <= i < seg[s + 1] (seg increasing, n segments)."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if seg[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


def rbf_from_products(double[:, ::1] G, const double[::1] nx,
                      const double[::1] ny, const int64_t[::1] xseg,
                      const int64_t[::1] yseg, double gamma, bint mirror,
                      bint diagonal, double[:, ::1] rowsums,
                      double[:, ::1] out, int64_t s0, int64_t t0,
                      int n_threads):
    """Sums of the rbf kernel over segment pairs of one block pair, from the
    dot products of its points: ``out[s0 + s, t0 + t]`` = sum over the rows
    i of segment s and the columns j of segment t of
    ``exp(-gamma max(nx[i] + ny[j] - 2 G[i, j], 0))``.

    xseg, yseg: the segments' offsets in the rows and columns of G (from
    0). With `mirror` (X against itself) ``out[t0 + t, s0 + s]`` gets the
    same value, as in `pair_sums`; with `diagonal` (a block against itself)
    only t >= s is computed.
    G is overwritten; rowsums is a buffer of at least (rows, segments of
    the columns). Rows in parallel, then the sums of each segment's rows in
    order: the result does not depend on the number of threads. Empty
    segments are not allowed.
    """
    cdef Py_ssize_t n_s = xseg.shape[0] - 1, n_t = yseg.shape[0] - 1
    cdef Py_ssize_t i, s, t, tfirst, c0, n_rows = xseg[n_s]
    cdef double gl = -gamma * 1.4426950408889634  # exp(-x) = 2**(-x log2 e)
    cdef double total

    for i in prange(n_rows, nogil=True, schedule="static",
                    num_threads=n_threads):
        tfirst = 0
        if diagonal:  # the segment of row i
            tfirst = _segment_of(&xseg[0], n_s, i)
        c0 = yseg[tfirst]
        km_rbf_row_d(isa_level, &G[i, c0], &ny[c0], nx[i], gl, yseg[n_t] - c0)
        for t in range(tfirst, n_t):
            rowsums[i, t] = sum_run(&G[i, yseg[t]], yseg[t + 1] - yseg[t])
    with nogil:
        for s in range(n_s):
            for t in range(s if diagonal else 0, n_t):
                total = 0.0
                for i in range(xseg[s], xseg[s + 1]):
                    total = total + rowsums[i, t]
                out[s0 + s, t0 + t] = total
                if mirror:
                    out[t0 + t, s0 + s] = total
