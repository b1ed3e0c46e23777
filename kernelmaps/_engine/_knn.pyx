"""k-th nearest-neighbour distances between sets, for the kNN divergences.

The squared distances between two sets are computed in tiles of KM_MR rows
(km_tile.h, columns in panels that stay in cache), and the k smallest are
kept along the rows and, where both directions are wanted, along the
columns, in one pass over each tile (km_knn.h). No distance matrix is ever
stored beyond one block of small sets.

- `self_kth`: the k-th neighbour distance of every point within its own set
  (the point itself excluded): rho.
- `divergence_sums`: for *items*, blocks of rows of one set of X against
  all points of one set of Y, the log of sum_t exp(c_a (log rho(t) - log
  nu(t))) over the item's rows t, one value per coefficient c_a.
- `pair_log_sums`: the same sums in both directions from one block per pair of
  sets (X_i's points among Y_j's and Y_j's among X_i's), for every pair of
  a range of sets of X (with X = Y, the pairs j > i).

With many features the distances come from dot products instead
(`products`, BLAS): |x - c|^2 + |y - c|^2 - 2 <x - c, y - c> of the points
centred, a strip of rows against a panel of columns per product, and the
same selection. Every list is then checked: a row (a column) whose k-th
distance nu^2 the rounding bound of the expansion does not certify, c1 r R
+ c2 (r + R)^2 <= tol nu^2 with r its radius and R the largest of the other
side, is computed again by the tiles (`ProductArgs`).

Every output slot has one writer: results do not depend on the thread
count.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, sqrt
from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t
from libc.stdlib cimport free, malloc

from ._products cimport products
from ._runtime cimport KM_MR, floating, isa_level, km_isa_ran
from ._tile cimport KM_SQEUCLIDEAN, km_tile_args, tile

cdef extern from "km_knn.h" nogil:
    int KM_KW_D
    int KM_KW_F
    int km_knn_lanes(int isa, int is_double)
    void km_knn_rows_d(int isa, const double *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, double *rowtop)
    void km_knn_rows_f(int isa, const float *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, float *rowtop)
    void km_knn_cols_d(int isa, const double *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, double *coltop, ptrdiff_t ldc)
    void km_knn_cols_f(int isa, const float *dist, ptrdiff_t ldd, int nrows,
                       ptrdiff_t ncols, int k, float *coltop, ptrdiff_t ldc)
    void km_knn_block_d(int isa, const double *x, const double *yt,
                        ptrdiff_t ldy, ptrdiff_t d, int nrows, ptrdiff_t ncols,
                        int k, double *coltop, ptrdiff_t ldc)
    void km_knn_block_f(int isa, const float *x, const float *yt, ptrdiff_t ldy,
                        ptrdiff_t d, int nrows, ptrdiff_t ncols, int k,
                        float *coltop, ptrdiff_t ldc)
    double km_knn_lanes_kth_d(const double *top, int k, int w)
    double km_knn_lanes_kth_f(const float *top, int k, int w)
    void km_knn_logsums_d(int isa, const double *nu2, const double *log_rho,
                          double floor, ptrdiff_t n, double *u,
                          const double *coef, ptrdiff_t n_coef, double *out,
                          ptrdiff_t stride)

# Lanes of the row lists at most (km_knn.h): buffers of k * LANES values
# per row serve every code path; LANES values past the last column leave
# room for a whole vector of a column list.
LANES = {"float64": KM_KW_D, "float32": KM_KW_F}

# Columns of the int64 item table.
ITEM_FIELDS = ("row_set", "col_set", "r0", "r1", "c0", "c1", "slot")
cdef enum:
    ROW_SET = 0
    COL_SET = 1
    R0 = 2
    R1 = 3
    C0 = 4
    C1 = 5
    SLOT = 6


cdef inline int _lanes(floating *dummy) noexcept nogil:
    """Lanes of the row lists on the engine's code path."""
    return km_knn_lanes(isa_level, floating is double)


# Rows of a strip and columns of a panel of the products path.
cdef enum:
    STRIP_ROWS = 256
    PANEL_COLS = 512
    # Values past the end of a row of a products block: room for a vector.
    PAD = 16

# float64 values of a thread's buffer for the products path: the products
# (G), the float32 products of a chunk (C) and the squared distances (D).
PRODUCT_BUFFER = 3 * STRIP_ROWS * (PANEL_COLS + PAD)


ctypedef struct ProductArgs:
    const void *x       # row points, centred, row-major (NULL: tiles only)
    const double *xn    # their squared norms
    const void *y       # column points, likewise
    const double *yn
    int chunk           # features per product (`products`)
    double c1, c2, tol  # the bound of the expansion (module docstring)


cdef inline bint _certified(const ProductArgs *pa, double r, double R,
                            double nu2) noexcept nogil:
    return pa.c1 * r * R + pa.c2 * (r + R) * (r + R) <= pa.tol * nu2


cdef void _product_lists(const ProductArgs *pa, ptrdiff_t d, int64_t r0,
                         int64_t r1, int64_t c0, int64_t c1, bint by_rows,
                         bint both, bint exclude_self, int k, int w,
                         floating *rowtop, floating *coltop, ptrdiff_t ldc,
                         double *buffer) noexcept nogil:
    """The lists of `_tops` from products of strips of rows and panels of
    columns (lists already filled with +inf); buffer: PRODUCT_BUFFER
    values."""
    cdef const floating *x = <const floating *>pa.x
    cdef const floating *y = <const floating *>pa.y
    cdef int64_t a0, a1, b0, b1, i, j, p
    cdef ptrdiff_t ldd = PANEL_COLS + PAD
    cdef double v
    cdef double *G = buffer
    cdef floating *C = <floating *>(buffer + STRIP_ROWS * ldd)
    cdef floating *D = <floating *>(buffer + 2 * STRIP_ROWS * ldd)
    a0 = r0
    while a0 < r1:
        a1 = min(a0 + STRIP_ROWS, r1)
        b0 = c0
        while b0 < c1:
            b1 = min(b0 + PANEL_COLS, c1)
            products(x + a0 * d, y + b0 * d, <int>d, <int>(a1 - a0),
                     <int>(b1 - b0), False, pa.chunk, G, <int>(b1 - b0), C)
            for i in range(a1 - a0):
                for j in range(b1 - b0):
                    v = pa.xn[a0 + i] + pa.yn[b0 + j] - 2.0 * G[i * (b1 - b0) + j]
                    D[i * ldd + j] = <floating>(v if v > 0.0 else 0.0)
            if exclude_self:
                for p in range(max(a0, b0), min(a1, b1)):
                    D[(p - a0) * ldd + (p - b0)] = INFINITY
            if by_rows:
                _select_rows(D, ldd, <int>(a1 - a0), b1 - b0, k,
                             rowtop + (a0 - r0) * k * w)
            if both:
                _select_cols(D, ldd, <int>(a1 - a0), b1 - b0, k,
                             coltop + (b0 - c0), ldc)
            b0 = b1
        a0 = a1


cdef void _tops(const km_tile_args *args, const ProductArgs *pa,
                const floating *rows, const floating *cols,
                const floating *zeros, int64_t r0, int64_t r1, int64_t c0,
                int64_t c1, bint by_rows, bint both, bint exclude_self, int k,
                ptrdiff_t col_block, floating *buf, floating *rowtop,
                floating *coltop, ptrdiff_t ldc, double *product_buffer,
                double *row_kth) noexcept nogil:
    """The k smallest squared distances of rows [r0, r1) to the columns
    [c0, c1) into the lane lists rowtop ((r1 - r0) x k x lanes; unless not
    `by_rows`) and, with `both`, of the columns to the rows into coltop
    (k x ldc); `exclude_self` skips row p == column p. From products where
    `pa.x` is set (the lists the bound does not certify again by the
    tiles), else by the tiles. With `row_kth` (and `by_rows`), the k-th
    smallest of each row there too."""
    cdef ptrdiff_t d = args.d, ldo = args.ldo, i, n
    cdef int64_t b0 = c0, b1, r, p, q
    cdef int nr, w = _lanes(coltop if rowtop == NULL else rowtop)
    cdef double rmax = 0.0, cmax = 0.0, kth
    cdef floating *tmp
    if by_rows:
        n = (r1 - r0) * k * w
        for i in range(n):
            rowtop[i] = INFINITY
    if both:
        for i in range(k * ldc):
            coltop[i] = INFINITY
    if pa != NULL and pa.x != NULL:
        _product_lists(pa, d, r0, r1, c0, c1, by_rows, both, exclude_self, k,
                       w, rowtop, coltop, ldc, product_buffer)
        for p in range(r0, r1):
            rmax = max(rmax, pa.xn[p])
        for q in range(c0, c1):
            cmax = max(cmax, pa.yn[q])
        rmax = sqrt(rmax)
        cmax = sqrt(cmax)
        if by_rows:
            for p in range(r0, r1):
                kth = _row_kth(rowtop, p - r0, k)
                if not _certified(pa, sqrt(pa.xn[p]), cmax, kth):
                    _tops(args, NULL, rows, cols, zeros, p, p + 1, c0, c1,
                          True, False, exclude_self, k, col_block, buf,
                          rowtop + (p - r0) * k * w, NULL, 0, NULL, &kth)
                if row_kth != NULL:
                    row_kth[p - r0] = kth
        if both:
            tmp = NULL
            for q in range(c0, c1):
                if not _certified(pa, rmax, sqrt(pa.yn[q]),
                                  coltop[(k - 1) * ldc + (q - c0)]):
                    if tmp == NULL:
                        tmp = <floating *>malloc(k * PAD * sizeof(floating))
                    if tmp != NULL:  # column q alone, by the tiles
                        _tops(args, NULL, rows, cols, zeros, r0, r1, q, q + 1,
                              False, True, exclude_self, k, col_block, buf,
                              NULL, tmp, PAD, NULL, NULL)
                        for i in range(k):
                            coltop[i * ldc + (q - c0)] = tmp[i * PAD]
            free(tmp)
        return
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
            if by_rows:
                _select_rows(buf, ldo, nr, b1 - b0, k, rowtop + (r - r0) * k * w)
            if both:
                _select_cols(buf, ldo, nr, b1 - b0, k, coltop + (b0 - c0), ldc)
            r += KM_MR
        b0 = b1
    if by_rows and row_kth != NULL:
        for p in range(r0, r1):
            row_kth[p - r0] = _row_kth(rowtop, p - r0, k)


cdef inline void _select_rows(const floating *dist, ptrdiff_t ldd, int nrows,
                              ptrdiff_t ncols, int k,
                              floating *rowtop) noexcept nogil:
    if floating is double:
        km_knn_rows_d(isa_level, dist, ldd, nrows, ncols, k, rowtop)
    else:
        km_knn_rows_f(isa_level, dist, ldd, nrows, ncols, k, rowtop)


cdef inline void _select_cols(const floating *dist, ptrdiff_t ldd, int nrows,
                              ptrdiff_t ncols, int k, floating *coltop,
                              ptrdiff_t ldc) noexcept nogil:
    if floating is double:
        km_knn_cols_d(isa_level, dist, ldd, nrows, ncols, k, coltop, ldc)
    else:
        km_knn_cols_f(isa_level, dist, ldd, nrows, ncols, k, coltop, ldc)


cdef void _block_tops(const floating *x, const floating *yt, ptrdiff_t ldy,
                      ptrdiff_t d, int64_t nrows, int64_t ncols, int k,
                      floating *coltop, ptrdiff_t ldc) noexcept nogil:
    """The k smallest squared distances of each of ncols columns (yt) to
    the nrows rows (x) into coltop (k x ldc), the block computed on the
    fly (km_knn_block)."""
    if floating is double:
        km_knn_block_d(isa_level, x, yt, ldy, d, <int>nrows, ncols, k, coltop, ldc)
    else:
        km_knn_block_f(isa_level, x, yt, ldy, d, <int>nrows, ncols, k, coltop, ldc)


cdef inline double _row_kth(const floating *rowtop, int64_t row,
                            int k) noexcept nogil:
    """The k-th smallest squared distance of a row, from its lane lists."""
    cdef int w = _lanes(rowtop)
    if floating is double:
        return km_knn_lanes_kth_d(rowtop + row * k * w, k, w)
    else:
        return km_knn_lanes_kth_f(rowtop + row * k * w, k, w)


cdef void _sums(double *u, const floating *tops, bint lane_lists,
                ptrdiff_t ldc, int k, ptrdiff_t n, const double *log_rho,
                double floor, const double *coef, Py_ssize_t n_coef,
                double *out, ptrdiff_t stride) noexcept nogil:
    """out[a * stride] = log sum_p exp(coef[a] u_p) over n points, with
    u_p = log_rho[p] - max(log nu_p, floor) and nu_p^2 the k-th smallest
    of point p's lane lists in `tops` (`lane_lists`) or its column list
    (value q at tops[q * ldc + p]), or already in u (`tops` NULL). u: room
    for n + LANES values; log_rho readable for LANES values past n
    (km_knn_logsums)."""
    cdef ptrdiff_t p
    cdef const double *nu2 = u
    if tops == NULL:
        pass
    elif lane_lists:
        for p in range(n):
            u[p] = _row_kth(tops, p, k)
    elif floating is double:
        nu2 = tops + (k - 1) * ldc
    else:
        for p in range(n):
            u[p] = tops[(k - 1) * ldc + p]
    km_knn_logsums_d(isa_level, nu2, log_rho, floor, n, u, coef, n_coef, out,
                     stride)


cdef void _set_products(ProductArgs *pa, const floating[:, ::1] x,
                        const double[::1] xn, const floating[:, ::1] y,
                        const double[::1] yn, tuple bound) noexcept:
    """`pa` for the products path of the points x (norms xn) against y, or
    the tiles only where x is empty. bound: (chunk, c1, c2, tol)."""
    pa.x = NULL
    if x.shape[0] > 0:
        pa.x = &x[0, 0]
        pa.xn = &xn[0]
        pa.y = &y[0, 0]
        pa.yn = &yn[0]
        pa.chunk = bound[0]
        pa.c1, pa.c2, pa.tol = bound[1], bound[2], bound[3]


cdef void _set_args(km_tile_args *args, Py_ssize_t d, Py_ssize_t ldy,
                    Py_ssize_t ldo) noexcept:
    args.d = d
    args.ldy = ldy
    args.ldo = ldo
    args.kind = KM_SQEUCLIDEAN
    args.degree = 1
    args.sum_rows = 0
    args.row_w = NULL
    args.gamma = 1.0
    args.coef0 = 0.0


def self_kth(const floating[:, ::1] rows, const floating[:, ::1] cols,
             const floating[::1] zeros, const int64_t[:, ::1] items, int k,
             Py_ssize_t col_block, double[::1] out,
             floating[:, ::1] tile_buffers, floating[:, ::1] row_buffers,
             const floating[:, ::1] centred, const double[::1] norms,
             tuple bound, double[:, ::1] product_buffers, Py_ssize_t start,
             Py_ssize_t stop, int n_threads):
    """out[p] = squared distance from point p to its k-th nearest neighbour
    in its own set, the point itself excluded, for the rows of the items
    start <= it < stop.

    rows / cols: the points, padded as for the tile kernels (cols
    transposed); zeros: zeros of the padded width of cols; items: rows of
    the item table (ITEM_FIELDS; the slot unused). tile_buffers:
    (n_threads, KM_MR * ldo), ldo >= col_block rounded up to the tile width;
    row_buffers: (n_threads, largest r1 - r0 times k * LANES). centred,
    norms, bound: the products path (`_set_products`; no rows: the tiles
    only).
    """
    cdef km_tile_args args
    cdef ProductArgs pa
    cdef Py_ssize_t it, tid
    cdef int64_t r0, r1
    cdef floating *rowtop
    _set_args(&args, rows.shape[1], cols.shape[1],
              tile_buffers.shape[1] // KM_MR)
    _set_products(&pa, centred, norms, centred, norms, bound)
    for it in prange(start, stop, nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        rowtop = &row_buffers[tid, 0]
        r0 = items[it, R0]
        r1 = items[it, R1]
        _tops(&args, &pa, &rows[0, 0], &cols[0, 0], &zeros[0], r0, r1,
              items[it, C0], items[it, C1], True, False, True, k,
              col_block, &tile_buffers[tid, 0], rowtop, NULL, 0,
              &product_buffers[tid, 0], &out[r0])


def divergence_sums(const floating[:, ::1] rows, const floating[:, ::1] cols,
                    const floating[::1] zeros, const int64_t[:, ::1] items,
                    int k, Py_ssize_t col_block, const double[::1] log_rho,
                    const double[::1] log_floor, const double[::1] coef,
                    double[:, ::1] out, floating[:, ::1] tile_buffers,
                    floating[:, ::1] row_buffers, double[:, ::1] log_buffers,
                    const floating[:, ::1] x_centred,
                    const double[::1] x_norms,
                    const floating[:, ::1] y_centred,
                    const double[::1] y_norms, tuple bound,
                    double[:, ::1] product_buffers, Py_ssize_t start,
                    Py_ssize_t stop, int n_threads):
    """For the items start <= it < stop, out[a, slot] = log sum_t
    exp(coef[a] u(t)) over its rows t, with u(t) = log rho(t) - max(log
    nu(t), log_floor[row set]) and nu(t) the k-th neighbour distance of t
    among the columns.

    log_rho: log rho (floored) of the row points, padded with LANES
    values; log_buffers: (n_threads, largest r1 - r0 plus LANES);
    x_centred, x_norms (the rows), y_centred, y_norms (the columns), bound:
    the products path (`_set_products`). Other arguments as in `self_kth`.
    """
    cdef km_tile_args args
    cdef ProductArgs pa
    cdef Py_ssize_t it, tid, n_coef = coef.shape[0], n_slots = out.shape[1]
    cdef int64_t r0, r1
    cdef floating *rowtop
    _set_args(&args, rows.shape[1], cols.shape[1],
              tile_buffers.shape[1] // KM_MR)
    _set_products(&pa, x_centred, x_norms, y_centred, y_norms, bound)
    for it in prange(start, stop, nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        rowtop = &row_buffers[tid, 0]
        r0 = items[it, R0]
        r1 = items[it, R1]
        _tops(&args, &pa, &rows[0, 0], &cols[0, 0], &zeros[0], r0, r1,
              items[it, C0], items[it, C1], True, False, False, k,
              col_block, &tile_buffers[tid, 0], rowtop, NULL, 0,
              &product_buffers[tid, 0], &log_buffers[tid, 0])
        _sums(&log_buffers[tid, 0], <floating *>NULL, True, 0, k, r1 - r0,
              &log_rho[r0], log_floor[items[it, ROW_SET]], &coef[0], n_coef,
              &out[0, items[it, SLOT]], n_slots)


def pair_log_sums(const floating[:, ::1] x_rows, const floating[:, ::1] x_cols,
                  const floating[:, ::1] y_rows, const floating[:, ::1] y_cols,
                  const floating[::1] zeros, const int64_t[::1] xoff,
                  const int64_t[::1] yoff, const int64_t[:, ::1] tasks,
                  int k, Py_ssize_t col_block, Py_ssize_t ldo,
                  const double[::1] x_log_rho, const double[::1] y_log_rho,
                  const double[::1] x_log_floor, const double[::1] y_log_floor,
                  const double[::1] coef, double[:, ::1] out_xy,
                  double[:, ::1] out_yx, floating[:, ::1] tile_buffers,
                  floating[:, ::1] row_buffers, floating[:, ::1] col_buffers,
                  double[:, ::1] log_buffers, Py_ssize_t small_sets, bint both,
                  const floating[:, ::1] x_centred, const double[::1] x_norms,
                  const floating[:, ::1] y_centred, const double[::1] y_norms,
                  tuple bound, double[:, ::1] product_buffers, Py_ssize_t start,
                  Py_ssize_t stop, int n_threads):
    """Both directions (or, unless `both`, the first only) of the pairs
    (i, j) of the tasks start <= t < stop, a task (i, j0, j1) for j in
    [j0, j1), from one block of distances per pair:

    - out_xy[a, i * ny + j] = log sum_t exp(coef[a] u(t)) over t in X_i,
      u(t) = log rho(t) - max(log nu(t), x_log_floor[i]), nu(t) the k-th
      neighbour distance of t in Y_j;
    - out_yx[a, i * ny + j] likewise over Y_j among X_i (y_log_rho,
      y_log_floor): laid out as out_xy, so that a task writes both in
      runs (the caller transposes).

    x_rows / y_rows: the points packed as tile rows, x_cols / y_cols as
    tile columns, all at one scale; zeros: zeros of the width of the wider
    of x_cols and y_cols. Pairs of at most `small_sets` points on each side
    compute their block twice on the fly, once transposed, without tiles
    (km_knn_block): both directions then keep one list per point, where a
    row's lane lists would cost a merge as large as their selection. Other
    pairs go through tiles of tile_buffers (n_threads, KM_MR * ldo), ldo at
    least col_block rounded up to the tile width. row_buffers: (n_threads,
    k * max(LANES * largest set of X, ldc)); col_buffers: (n_threads, k *
    ldc), ldc the largest set of X or Y plus LANES; log_buffers:
    (n_threads, ldc). x_log_rho and y_log_rho are padded with LANES
    values. x_centred, x_norms, y_centred, y_norms, bound: the products
    path for the pairs that go through tiles (`_set_products`).
    """
    cdef km_tile_args xy
    cdef ProductArgs pa
    cdef Py_ssize_t t, i, j, tid, n_coef = coef.shape[0]
    cdef Py_ssize_t ny = yoff.shape[0] - 1
    cdef ptrdiff_t d = x_rows.shape[1]
    cdef Py_ssize_t ldc = col_buffers.shape[1] // k
    cdef int64_t r0, r1, c0, c1
    cdef bint flip
    cdef floating *rowtop
    cdef floating *coltop
    cdef floating *buf
    _set_args(&xy, x_rows.shape[1], y_cols.shape[1], ldo)
    _set_products(&pa, x_centred, x_norms, y_centred, y_norms, bound)
    for t in prange(start, stop, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        i = tasks[t, 0]
        rowtop = &row_buffers[tid, 0]
        coltop = &col_buffers[tid, 0]
        buf = &tile_buffers[tid, 0]
        r0 = xoff[i]
        r1 = xoff[i + 1]
        for j in range(tasks[t, 1], tasks[t, 2]):
            c0 = yoff[j]
            c1 = yoff[j + 1]
            flip = r1 - r0 <= small_sets and c1 - c0 <= small_sets
            if flip:  # the block and its transpose, computed on the fly
                if both:
                    _block_tops(&x_rows[r0, 0], &y_cols[0, c0], y_cols.shape[1],
                                d, r1 - r0, c1 - c0, k, coltop, ldc)
                _block_tops(&y_rows[c0, 0], &x_cols[0, r0], x_cols.shape[1], d,
                            c1 - c0, r1 - r0, k, rowtop, ldc)
            else:
                _tops(&xy, &pa, &x_rows[0, 0], &y_cols[0, 0], &zeros[0], r0,
                      r1, c0, c1, True, both, False, k, col_block, buf, rowtop,
                      coltop, ldc, &product_buffers[tid, 0],
                      &log_buffers[tid, 0])
            # Flipped, rowtop holds column lists; else the k-th are in u.
            _sums(&log_buffers[tid, 0], rowtop if flip else <floating *>NULL,
                  False, ldc, k, r1 - r0, &x_log_rho[r0], x_log_floor[i],
                  &coef[0], n_coef, &out_xy[0, i * ny + j], out_xy.shape[1])
            if both:
                _sums(&log_buffers[tid, 0], coltop, False, ldc, k, c1 - c0,
                      &y_log_rho[c0], y_log_floor[j], &coef[0], n_coef,
                      &out_yx[0, i * ny + j], out_yx.shape[1])


def last_isa():
    """The code path of this engine's last SIMD call: 0 baseline, 1 AVX2, 2
    AVX-512 (-1 before any), for the tests that every engine follows the
    switch (`_runtime.select_isa`)."""
    return km_isa_ran
