"""k-th nearest-neighbour distances between sets, for the kNN divergences.

A task (an *item*) is a block of rows of one set (points of X) against all
points of one column set. It computes the squared distances in tiles of
KM_MR rows (km_tile.h, columns in panels that stay in cache) and keeps, in
one pass over each tile, the k smallest along every row and, for `both`
items, along every column (km_knn.h): one distance block per unordered pair
of sets serves both directions. No distance matrix is ever stored.

- `self_kth`: the k-th neighbour distance of every point within its own set
  (the point itself excluded): rho.
- `divergence_sums`: for each item, the log of
  sum_t exp(c_a (log rho(t) - log nu(t))) over its row points t (and its
  column points, for `both` items), one value per coefficient c_a. Every
  output slot has one writer: results do not depend on the thread count.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, exp, log
from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t

from ._runtime cimport KM_MR, floating, isa_level
from ._tile cimport KM_SQEUCLIDEAN, km_tile_args, tile

cdef extern from "km_knn.h" nogil:
    int KM_KW_D
    int KM_KW_F
    void km_knn_rows_d(int isa, const double *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, double *rowtop)
    void km_knn_rows_f(int isa, const float *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, float *rowtop)
    void km_knn_cols_d(int isa, const double *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, double *coltop, ptrdiff_t ldc)
    void km_knn_cols_f(int isa, const float *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, float *coltop, ptrdiff_t ldc)
    double km_knn_lanes_kth_d(const double *top, int k, int w)
    double km_knn_lanes_kth_f(const float *top, int k, int w)

# Lanes of the row lists (km_knn.h): a row's lists take k * LANES values.
LANES = {"float64": KM_KW_D, "float32": KM_KW_F}

# Columns of the int64 item table.
ITEM_FIELDS = ("row_set", "col_set", "r0", "r1", "c0", "c1", "both",
               "row_slot", "col_slot")
cdef enum:
    ROW_SET = 0
    COL_SET = 1
    R0 = 2
    R1 = 3
    C0 = 4
    C1 = 5
    BOTH = 6
    ROW_SLOT = 7
    COL_SLOT = 8


cdef inline int _lanes(floating *dummy) noexcept nogil:
    """Lanes of the row lists for the element type."""
    if floating is double:
        return KM_KW_D
    else:
        return KM_KW_F


cdef void _tops(const km_tile_args *args, const floating *rows,
                const floating *cols, const floating *zeros, int64_t r0,
                int64_t r1, int64_t c0, int64_t c1, bint by_rows,
                bint both, bint exclude_self, int k, ptrdiff_t col_block,
                floating *buf, floating *rowtop, floating *coltop,
                ptrdiff_t ldc) noexcept nogil:
    """The k smallest squared distances of rows [r0, r1) to the columns
    [c0, c1) into the lane lists rowtop ((r1 - r0) x k x lanes; unless not
    `by_rows`) and, with `both`, of the columns to the rows into coltop
    (k x ldc); `exclude_self` skips row p == column p."""
    cdef ptrdiff_t d = args.d, ldo = args.ldo, i, n
    cdef int64_t b0 = c0, b1, r, p
    cdef int nr, w = _lanes(coltop if rowtop == NULL else rowtop)
    if by_rows:
        n = (r1 - r0) * k * w
        for i in range(n):
            rowtop[i] = INFINITY
    if both:
        for i in range(k * ldc):
            coltop[i] = INFINITY
    while b0 < c1:
        b1 = min(b0 + col_block, c1)
        r = r0
        while r < r1:
            nr = <int>min(<int64_t>KM_MR, r1 - r)
            tile(args, rows + r * d, cols + b0, zeros, b1 - b0, buf)
            if exclude_self:
                for p in range(r, r + nr):
                    if b0 <= p < b1:
                        buf[(p - r) * ldo + (p - b0)] = INFINITY
            if floating is double:
                if by_rows:
                    km_knn_rows_d(isa_level, buf, ldo, nr, b1 - b0, k,
                                  rowtop + (r - r0) * k * w)
                if both:
                    km_knn_cols_d(isa_level, buf, ldo, nr, b1 - b0, k,
                                  coltop + (b0 - c0), ldc)
            else:
                if by_rows:
                    km_knn_rows_f(isa_level, buf, ldo, nr, b1 - b0, k,
                                  rowtop + (r - r0) * k * w)
                if both:
                    km_knn_cols_f(isa_level, buf, ldo, nr, b1 - b0, k,
                                  coltop + (b0 - c0), ldc)
            r += KM_MR
        b0 = b1


cdef inline double _row_kth(const floating *rowtop, int64_t row,
                            int k) noexcept nogil:
    """The k-th smallest squared distance of a row, from its lane lists."""
    cdef int w = _lanes(rowtop)
    if floating is double:
        return km_knn_lanes_kth_d(rowtop + row * k * w, k, w)
    else:
        return km_knn_lanes_kth_f(rowtop + row * k * w, k, w)


cdef void _log_sums(const double *t, ptrdiff_t n, const double *coef,
                    Py_ssize_t n_coef, double *out,
                    ptrdiff_t stride) noexcept nogil:
    """out[a * stride] = log(sum_i exp(coef[a] t[i])), without overflow."""
    cdef double lo = t[0], hi = t[0], top, s, c
    cdef ptrdiff_t i
    cdef Py_ssize_t a
    for i in range(1, n):
        lo = min(lo, t[i])
        hi = max(hi, t[i])
    for a in range(n_coef):
        c = coef[a]
        top = c * hi if c >= 0 else c * lo
        s = 0
        for i in range(n):
            s += exp(c * t[i] - top)
        out[a * stride] = top + log(s)


cdef void _set_args(km_tile_args *args, Py_ssize_t d, Py_ssize_t ldy,
                    Py_ssize_t ldo) noexcept:
    args.d = d
    args.ldy = ldy
    args.ldo = ldo
    args.kind = KM_SQEUCLIDEAN
    args.degree = 1
    args.sum_rows = 0
    args.gamma = 1.0
    args.coef0 = 0.0


def self_kth(const floating[:, ::1] rows, const floating[:, ::1] cols,
             const floating[::1] zeros, const int64_t[:, ::1] items, int k,
             Py_ssize_t col_block, double[::1] out,
             floating[:, ::1] tile_buffers, floating[:, ::1] row_buffers,
             int n_threads):
    """out[p] = squared distance from point p to its k-th nearest neighbour
    in its own set, the point itself excluded, for the rows of every item.

    rows / cols: the points, padded as for the tile kernels (cols
    transposed); zeros: zeros of the padded width of cols; items: rows of
    the item table (ITEM_FIELDS; both and the slots unused). tile_buffers:
    (n_threads, KM_MR * ldo), ldo >= col_block rounded up to the tile width;
    row_buffers: (n_threads, largest r1 - r0 times k * LANES).
    """
    cdef km_tile_args args
    cdef Py_ssize_t it, tid
    cdef int64_t p, r0, r1
    cdef floating *rowtop
    _set_args(&args, rows.shape[1], cols.shape[1],
              tile_buffers.shape[1] // KM_MR)
    for it in prange(items.shape[0], nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        rowtop = &row_buffers[tid, 0]
        r0 = items[it, R0]
        r1 = items[it, R1]
        _tops(&args, &rows[0, 0], &cols[0, 0], &zeros[0], r0, r1,
              items[it, C0], items[it, C1], True, False, True, k, col_block,
              &tile_buffers[tid, 0], rowtop, NULL, 0)
        for p in range(r0, r1):
            out[p] = _row_kth(rowtop, p - r0, k)


def divergence_sums(const floating[:, ::1] rows, const floating[:, ::1] cols,
                    const floating[::1] zeros, const int64_t[:, ::1] items,
                    int k, Py_ssize_t col_block,
                    const double[::1] row_log_rho, const double[::1] col_log_rho,
                    const double[::1] row_log_floor,
                    const double[::1] col_log_floor, const double[::1] coef,
                    double[:, ::1] out, floating[:, ::1] tile_buffers,
                    floating[:, ::1] row_buffers, floating[:, ::1] col_buffers,
                    double[:, ::1] log_buffers, Py_ssize_t small_sets,
                    int n_threads):
    """For every item, out[a, row_slot] = log sum_t exp(coef[a] u(t)) over
    its rows t, with u(t) = log rho(t) - max(log nu(t), row_log_floor[row
    set]) and nu(t) the k-th neighbour distance of t among the columns; for
    `both` items, out[a, col_slot] likewise over its columns among the rows.

    row_log_rho / col_log_rho: log rho (floored) of the row / column points.
    col_buffers: (n_threads, k * ldc) with ldc the largest c1 - c0 of a
    `both` item plus LANES; log_buffers: (n_threads, largest r1 - r0 or c1 - c0).
    small_sets: `both` items of at most this many rows and columns find the
    rows' k-th distances as the columns of the transposed block (rows and
    cols must then pack the same points, as for Y=None): one list per row,
    in the lanes of the column selection, where the lane lists of
    `km_knn_rows` would cost a merge per row about as much as their
    selection; row_buffers then need k * ldc values too.
    Other arguments as in `self_kth`.
    """
    cdef km_tile_args args
    cdef Py_ssize_t it, tid, n_coef = coef.shape[0], n_slots = out.shape[1]
    cdef ptrdiff_t ldc = col_buffers.shape[1] // k
    cdef int64_t p, r0, r1, c0, c1
    cdef bint both, flip
    cdef double floor
    cdef floating *rowtop
    cdef floating *coltop
    cdef double *u
    _set_args(&args, rows.shape[1], cols.shape[1],
              tile_buffers.shape[1] // KM_MR)
    for it in prange(items.shape[0], nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        rowtop = &row_buffers[tid, 0]
        coltop = &col_buffers[tid, 0]
        u = &log_buffers[tid, 0]
        r0 = items[it, R0]
        r1 = items[it, R1]
        c0 = items[it, C0]
        c1 = items[it, C1]
        both = items[it, BOTH] != 0
        flip = both and r1 - r0 <= small_sets and c1 - c0 <= small_sets
        _tops(&args, &rows[0, 0], &cols[0, 0], &zeros[0], r0, r1, c0, c1,
              not flip, both, False, k, col_block, &tile_buffers[tid, 0],
              rowtop, coltop, ldc)
        if flip:  # rows of the transposed block: columns c0.., rows r0..
            _tops(&args, &rows[0, 0], &cols[0, 0], &zeros[0], c0, c1, r0, r1,
                  False, True, False, k, col_block, &tile_buffers[tid, 0],
                  NULL, rowtop, ldc)
        floor = row_log_floor[items[it, ROW_SET]]
        for p in range(r0, r1):
            if flip:
                u[p - r0] = row_log_rho[p] - max(
                    0.5 * log(<double>rowtop[(k - 1) * ldc + p - r0]), floor)
            else:
                u[p - r0] = row_log_rho[p] - max(
                    0.5 * log(_row_kth(rowtop, p - r0, k)), floor)
        _log_sums(u, r1 - r0, &coef[0], n_coef, &out[0, items[it, ROW_SLOT]],
                  n_slots)
        if both:
            floor = col_log_floor[items[it, COL_SET]]
            for p in range(c0, c1):
                u[p - c0] = col_log_rho[p] - max(
                    0.5 * log(<double>coltop[(k - 1) * ldc + p - c0]), floor)
            _log_sums(u, c1 - c0, &coef[0], n_coef,
                      &out[0, items[it, COL_SLOT]], n_slots)
