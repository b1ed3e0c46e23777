"""Exact additive kernels between histograms: sums over the features of a
one-dimensional kernel, for every pair of rows.

- `dense`: rows of X against rows of Y, both dense, in tiles of KM_MR
  rows against column panels that stay in cache (km_additive.h), OpenMP over
  items (a block of rows against a run of column panels); with `symmetric`,
  only the pairs j >= i are computed.
- `sparse`: each row of X (dense, or CSR scattered into a dense scratch row)
  against the non-zeros of the CSR rows of Y: the one-dimensional kernels
  here are 0 where either value is 0, so only common non-zeros count.
- `robust_pairs`: listed pairs of CSR rows, one by one, at any magnitude
  (km_additive_robust), for the pairs the other two cannot take;
  `outside` finds the rows that hold such values.
Every output entry has one writer: results do not depend on the threads.
"""
from cython.parallel cimport prange, threadid

from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t

from ._runtime cimport (
    KM_MR,
    KM_NR_D,
    KM_NR_F,
    floating,
    index_t,
    isa_level,
    km_isa_ran,
)

cdef extern from "km_additive.h" nogil:
    int KM_ADD_CHI2
    int KM_ADD_INTERSECTION
    int KM_ADD_PRODUCT
    int KM_ADD_JS
    void km_additive_d(int isa, int kind, const double *x, const double *xp,
                       ptrdiff_t xplane, ptrdiff_t d, const double *yt,
                       const double *yp, ptrdiff_t yplane, ptrdiff_t ldy,
                       ptrdiff_t ncols, double *out, ptrdiff_t ldo)
    void km_additive_f(int isa, int kind, const float *x, const float *xp,
                       ptrdiff_t xplane, ptrdiff_t d, const float *yt,
                       const float *yp, ptrdiff_t yplane, ptrdiff_t ldy,
                       ptrdiff_t ncols, double *out, ptrdiff_t ldo)
    double km_log_exponent_d(double v)
    float km_log_exponent_f(float v)
    double km_log_mantissa_d(double v)
    float km_log_mantissa_f(float v)
    double km_inverse_d(double v)
    float km_inverse_f(float v)
    double km_js_pairs_d(int isa, const double *a, const double *b, ptrdiff_t n)
    double km_additive_robust(int kind, const double *a, const double *b,
                              ptrdiff_t n)
    int km_outside_d(int isa, const double *v, ptrdiff_t n, double low,
                     double high)
    int km_outside_f(int isa, const float *v, ptrdiff_t n, float low,
                     float high)

KINDS = {"chi2": KM_ADD_CHI2, "intersection": KM_ADD_INTERSECTION,
         "product": KM_ADD_PRODUCT, "js": KM_ADD_JS}


def js_parts(const floating[:, ::1] v, floating[:, :, ::1] parts,
             Py_ssize_t row0, Py_ssize_t row1, int n_threads):
    """The parts (E,) M and I (km_additive.h) of the values of the rows
    row0 <= i < row1 of `v`, into `parts` (3 or 2, *v.shape): E only when
    it has 3 planes."""
    cdef Py_ssize_t i, k
    cdef Py_ssize_t m = parts.shape[0] - 2
    for i in prange(row0, row1, nogil=True, schedule="static",
                    num_threads=n_threads):
        for k in range(v.shape[1]):
            if floating is double:
                if m:
                    parts[0, i, k] = km_log_exponent_d(v[i, k])
                parts[m, i, k] = km_log_mantissa_d(v[i, k])
                parts[m + 1, i, k] = km_inverse_d(v[i, k])
            else:
                if m:
                    parts[0, i, k] = km_log_exponent_f(v[i, k])
                parts[m, i, k] = km_log_mantissa_f(v[i, k])
                parts[m + 1, i, k] = km_inverse_f(v[i, k])


def dense(const floating[:, ::1] xrows, const floating[:, :, ::1] xparts,
          const floating[:, ::1] yt, const floating[:, :, ::1] yparts,
          Py_ssize_t n, Py_ssize_t m, str kind, bint symmetric,
          Py_ssize_t row_block, Py_ssize_t col_block,
          const int64_t[:, ::1] items, double[:, ::1] out,
          double[:, ::1] buffers, Py_ssize_t start, Py_ssize_t stop,
          int n_threads):
    """out[i, j] = sum_k f(X[i, k], Y[j, k]) for the items start <= it <
    stop: item (b, c0, c1) is the rows [b * row_block, (b + 1) * row_block)
    of X (below n) against the columns [c0, c1) of Y, c0 a multiple of
    col_block from the block's first column (0, or with `symmetric` its
    first row rounded down to the tile width: only the pairs j >= i are
    computed, and mirrored).

    xrows: X padded with KM_MR - 1 zero rows; yt: Y transposed, (d,
    ldy) with ldy >= m rounded up to the tile width (zero padding); for
    "chi2", both hold 2 / value (+inf for 0, padding included). For
    "js", xparts (3, rows, d): the parts E, M, I of xrows, and yparts (2,
    d, ldy) the parts M, I of yt (`js_parts`); else empty.
    col_block: a multiple of the tile width. buffers: (n_threads,
    KM_MR * col_block).
    """
    cdef int code = KINDS[kind]
    cdef Py_ssize_t d = xrows.shape[1], ldy = yt.shape[1]
    cdef Py_ssize_t nr = KM_NR_D if floating is double else KM_NR_F
    cdef Py_ssize_t it, b, r_lo, r_hi, c_end, cb, ncols, width, r0, r, c, tid
    cdef double value
    cdef double *buf
    cdef bint js = code == KM_ADD_JS
    cdef const floating *xp = &xparts[0, 0, 0] if js else NULL
    cdef const floating *yp = &yparts[0, 0, 0] if js else NULL
    cdef Py_ssize_t xplane = xrows.shape[0] * d, yplane = d * ldy
    for it in prange(start, stop, nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        tid = threadid()
        buf = &buffers[tid, 0]
        b = items[it, 0]
        r_lo = b * row_block
        r_hi = min(n, r_lo + row_block)
        cb = items[it, 1]
        c_end = items[it, 2]
        while cb < c_end:
            ncols = min(col_block, c_end - cb)
            width = (ncols + nr - 1) // nr * nr
            r0 = r_lo
            while r0 < r_hi:
                if floating is double:
                    km_additive_d(isa_level, code, &xrows[r0, 0],
                                  xp + r0 * d if js else NULL, xplane, d,
                                  &yt[0, cb], yp + cb if js else NULL, yplane,
                                  ldy, width, buf, col_block)
                else:
                    km_additive_f(isa_level, code, &xrows[r0, 0],
                                  xp + r0 * d if js else NULL, xplane, d,
                                  &yt[0, cb], yp + cb if js else NULL, yplane,
                                  ldy, width, buf, col_block)
                for r in range(r0, min(r0 + KM_MR, r_hi)):
                    for c in range(max(cb, r) if symmetric else cb, cb + ncols):
                        value = buf[(r - r0) * col_block + (c - cb)]
                        out[r, c] = value
                        if symmetric:
                            out[c, r] = value
                r0 = r0 + KM_MR
            cb = cb + col_block


cdef inline double _term(int kind, double a, double b) noexcept nogil:
    """The one-dimensional kernel at two positive values (not for
    Jensen-Shannon: see km_js_pairs)."""
    cdef double lo, hi
    if kind == KM_ADD_CHI2:
        # lo hi / (lo + hi): hi / (lo + hi) is in [1/2, 1] (no underflow
        # however far apart the values), taken from the halves (exact for
        # normal values) so that lo + hi cannot overflow
        lo = min(a, b)
        hi = max(a, b)
        return lo * ((0.5 * hi) / (0.5 * lo + 0.5 * hi))
    if kind == KM_ADD_INTERSECTION:
        return min(a, b)
    return a * b


def sparse(const floating[:, ::1] x_dense, const floating[::1] x_data,
           const index_t[::1] x_indices, const index_t[::1] x_indptr,
           const floating[::1] y_data, const index_t[::1] y_indices,
           const index_t[::1] y_indptr, str kind, bint symmetric,
           double[:, ::1] out, double[:, ::1] scratch, Py_ssize_t row0,
           Py_ssize_t row1, int n_threads):
    """out[i, j] = sum over the common non-zeros of f(X[i, k], Y[j, k]),
    with f as in `dense`, for the rows row0 <= i < row1.

    X is x_dense if it has rows (x_data etc. then unused), else the CSR
    arrays (d = x_dense.shape[1] features either way); Y is CSR. scratch:
    (n_threads, 3 d + 16), its first d zeros, left zero on return. The
    Jensen-Shannon terms gather each pair's common non-zeros (branch-free)
    into the rest of scratch and sum them in vectors (km_js_pairs), the
    others term by term.
    """
    cdef int code = KINDS[kind]
    cdef bint x_is_dense = x_dense.shape[0] > 0
    cdef Py_ssize_t m = out.shape[1], d = x_dense.shape[1]
    cdef Py_ssize_t i, j, k, tid, n_common
    cdef int64_t p
    cdef double a, bv, acc
    cdef double *row
    cdef double *pa
    cdef double *pb
    for i in prange(row0, row1, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        row = &scratch[tid, 0]
        pa = row + d
        pb = pa + d + 8
        if x_is_dense:
            for k in range(d):
                row[k] = x_dense[i, k]
        else:
            for p in range(x_indptr[i], x_indptr[i + 1]):
                row[x_indices[p]] = x_data[p]
        for j in range(i if symmetric else 0, m):
            acc = 0
            if code == KM_ADD_JS:
                n_common = 0
                for p in range(y_indptr[j], y_indptr[j + 1]):
                    a = row[y_indices[p]]
                    bv = y_data[p]
                    pa[n_common] = a
                    pb[n_common] = bv
                    n_common = n_common + ((a != 0) & (bv != 0))
                if n_common > 0:
                    acc = 0.5 * km_js_pairs_d(isa_level, pa, pb, n_common)
            else:
                for p in range(y_indptr[j], y_indptr[j + 1]):
                    a = row[y_indices[p]]
                    bv = y_data[p]
                    if a != 0 and bv != 0:
                        acc = acc + _term(code, a, bv)
            out[i, j] = acc
            if symmetric:
                out[j, i] = acc
        if x_is_dense:
            for k in range(d):
                row[k] = 0
        else:
            for p in range(x_indptr[i], x_indptr[i + 1]):
                row[x_indices[p]] = 0


def outside(const floating[:, ::1] values, double low, double high,
            unsigned char[::1] flags, Py_ssize_t row0, Py_ssize_t row1,
            int n_threads):
    """flags[i] = 1 where row i of `values` holds a value v with 0 < v <
    low or v >= high (outside the band of the tiles: additive.py), else 0,
    for the rows row0 <= i < row1 (low and high exact in float32 for
    float32 values)."""
    cdef Py_ssize_t i, d = values.shape[1]
    for i in prange(row0, row1, nogil=True, schedule="static",
                    num_threads=n_threads):
        if floating is double:
            flags[i] = km_outside_d(isa_level, &values[i, 0], d, low, high)
        else:
            flags[i] = km_outside_f(isa_level, &values[i, 0], d, <float>low,
                                    <float>high)


def robust_pairs(const double[::1] x_data, const index_t[::1] x_indices,
                 const index_t[::1] x_indptr, const double[::1] y_data,
                 const index_t[::1] y_indices, const index_t[::1] y_indptr,
                 str kind, const int64_t[::1] xr, const int64_t[::1] yr,
                 const int64_t[::1] rows, const int64_t[::1] cols,
                 bint mirror, double[:, ::1] out, double[:, ::1] scratch,
                 Py_ssize_t start, Py_ssize_t stop, int n_threads):
    """out[rows[p], cols[p]] (and out[cols[p], rows[p]] with `mirror`) for
    start <= p < stop: km_additive_robust of the common non-zeros of row
    xr[p] of X and row yr[p] of Y (float64 CSR, sorted indices), gathered
    into scratch (n_threads, 2 d)."""
    cdef int code = KINDS[kind]
    cdef Py_ssize_t p, tid, count, d = scratch.shape[1] // 2
    cdef int64_t a, a_end, b, b_end
    cdef double va, vb, value
    cdef double *pa
    cdef double *pb
    for p in prange(start, stop, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        pa = &scratch[tid, 0]
        pb = pa + d
        a = x_indptr[xr[p]]
        a_end = x_indptr[xr[p] + 1]
        b = y_indptr[yr[p]]
        b_end = y_indptr[yr[p] + 1]
        count = 0
        while a < a_end and b < b_end:
            if x_indices[a] < y_indices[b]:
                a = a + 1
            elif x_indices[a] > y_indices[b]:
                b = b + 1
            else:
                va = x_data[a]
                vb = y_data[b]
                if va > 0 and vb > 0:
                    pa[count] = va
                    pb[count] = vb
                    count = count + 1
                a = a + 1
                b = b + 1
        value = km_additive_robust(code, pa, pb, count)
        out[rows[p], cols[p]] = value
        if mirror:
            out[cols[p], rows[p]] = value


def last_isa():
    """The code path of this engine's last SIMD call: 0 baseline, 1 AVX2, 2
    AVX-512 (-1 before any), for the tests that every engine follows the
    switch (`_runtime.select_isa`)."""
    return km_isa_ran
