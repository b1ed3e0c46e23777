"""Sliced-Wasserstein distances and quantile features between sets of points.

The sets' projections on a block of directions are sorted once per set and
direction (`sort_projections`), into a *sorted layout*. Weighted sets: set
s holds its ``n_s`` values for each of the block's ``L`` directions at
``offsets[s] * L + l * n_s``, ascending, and the cumulative normalised
weights beside them (the last exactly 1); a pair of sets costs one merge of
the two step quantile functions per direction, O(n + m). Unweighted sets
(*rank-major*): the values of rank k along every direction at ``offsets[s]
* L + k * L``; their quantile functions step at i / n whatever the
direction, so a pair's merge is the same for all directions: it is walked
once (in exact integer units of 1 / (n m)), each step costing a vectorised
sum over the directions (km_sliced.h). A set's quantile features are one
merge with the grid of levels (`quantile_features`). Every output value is
written by one task, in a fixed order: the results do not depend on the
threads, bit for bit.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.string cimport memcpy

from ._runtime cimport floating, isa_level, km_isa_ran


cdef extern from "km_sliced.h" nogil:
    double km_sw_pair_d(int isa, const double *a, int64_t n, const double *b,
                        int64_t m, Py_ssize_t L, int mode)
    double km_sw_pair_f(int isa, const float *a, int64_t n, const float *b,
                        int64_t m, Py_ssize_t L, int mode)
    double km_sw_weighted_d(int isa, const double *a, const double *ca,
                            int64_t n, const double *b, const double *cb,
                            int64_t m, Py_ssize_t L, int mode)
    double km_sw_weighted_f(int isa, const float *a, const double *ca,
                            int64_t n, const float *b, const double *cb,
                            int64_t m, Py_ssize_t L, int mode)
    double km_sw_pair_any_d(int isa, const double *a, int64_t n,
                            const double *b, int64_t m, Py_ssize_t L, double p,
                            int first, double top, double *A, double *U)
    double km_sw_pair_any_f(int isa, const float *a, int64_t n,
                            const float *b, int64_t m, Py_ssize_t L, double p,
                            int first, double top, double *A, double *U)
    double km_sw_weighted_any_d(int isa, const double *a, const double *ca,
                                int64_t n, const double *b, const double *cb,
                                int64_t m, Py_ssize_t L, double p, int first,
                                double top, double *A, double *U)
    double km_sw_weighted_any_f(int isa, const float *a, const double *ca,
                                int64_t n, const float *b, const double *cb,
                                int64_t m, Py_ssize_t L, double p, int first,
                                double top, double *A, double *U)

# The cost function |x - y|^p: p = 2 or p = 1 (any other p: pair_block_any).
DEF P_TWO = 2
DEF P_ONE = 1
# Runs shorter than this are sorted by insertion.
DEF RUN = 16


# -- sorting ----------------------------------------------------------------


cdef void _insertion(floating *v, double *w, Py_ssize_t n) noexcept nogil:
    """Sort v[0:n] ascending, carrying w (NULL: none)."""
    cdef Py_ssize_t i, j
    cdef floating x
    cdef double y = 0.0
    for i in range(1, n):
        x = v[i]
        if w != NULL:
            y = w[i]
        j = i - 1
        while j >= 0 and v[j] > x:
            v[j + 1] = v[j]
            if w != NULL:
                w[j + 1] = w[j]
            j -= 1
        v[j + 1] = x
        if w != NULL:
            w[j + 1] = y


cdef void _sort(floating *v, double *w, Py_ssize_t n, floating *tv,
                double *tw) noexcept nogil:
    """Sort v[0:n] ascending, carrying w (NULL: none): a bottom-up merge
    sort over runs sorted by insertion, through the buffers tv, tw (n
    values each)."""
    cdef Py_ssize_t start, width, a, mid, end, i, j, k, take
    cdef floating *src = v
    cdef floating *dst = tv
    cdef double *wsrc = w
    cdef double *wdst = tw
    cdef floating *swap
    cdef double *wswap
    for start in range(0, n, RUN):
        _insertion(v + start, NULL if w == NULL else w + start,
                   min(RUN, n - start))
    width = RUN
    while width < n:
        a = 0
        while a < n:
            mid = min(a + width, n)
            end = min(a + 2 * width, n)
            i, j, k = a, mid, a
            # branch-free: the comparison of random values is a coin toss
            if w == NULL:
                while i < mid and j < end:
                    take = src[j] < src[i]
                    dst[k] = src[j] if take else src[i]
                    j += take
                    i += 1 - take
                    k += 1
            else:
                while i < mid and j < end:
                    take = src[j] < src[i]
                    dst[k] = src[j] if take else src[i]
                    wdst[k] = wsrc[j] if take else wsrc[i]
                    j += take
                    i += 1 - take
                    k += 1
            while i < mid:
                dst[k] = src[i]
                if w != NULL:
                    wdst[k] = wsrc[i]
                i += 1
                k += 1
            while j < end:
                dst[k] = src[j]
                if w != NULL:
                    wdst[k] = wsrc[j]
                j += 1
                k += 1
            a = end
        swap = src
        src = dst
        dst = swap
        wswap = wsrc
        wsrc = wdst
        wdst = wswap
        width *= 2
    if src != v:
        memcpy(v, src, n * sizeof(floating))
        if w != NULL:
            memcpy(w, wsrc, n * sizeof(double))


def sort_projections(const floating[:, ::1] P, const int64_t[::1] offsets,
                     const double[::1] weights, bint weighted,
                     floating[::1] values, double[::1] cum,
                     floating[:, ::1] vbuf, double[:, ::1] wbuf,
                     Py_ssize_t s0, Py_ssize_t s1, int n_threads):
    """The sorted layout of the projections P (points, L) of the sets
    s0 <= s < s1 into `values` (and, `weighted`, the cumulative weights,
    normalised per set and direction, into `cum`; `weights`: one per
    point), the unweighted rank-major. vbuf: (n_threads, 2 * largest
    set), wbuf: (n_threads, largest set) buffers."""
    cdef Py_ssize_t L = P.shape[1], s, dl, k, n, tid
    cdef int64_t base
    cdef double total
    cdef floating *v
    cdef double *c
    if s1 <= s0 or L == 0:
        return
    for s in prange(s0, s1, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        n = offsets[s + 1] - offsets[s]
        for dl in range(L):
            base = offsets[s] * L + dl * n
            c = NULL
            if weighted:
                v = &values[base]
                for k in range(n):
                    v[k] = P[offsets[s] + k, dl]
                c = &cum[base]
                for k in range(n):
                    c[k] = weights[offsets[s] + k]
            else:  # sorted in the buffer, then rank-major
                v = &vbuf[tid, 0]
                for k in range(n):
                    v[k] = P[offsets[s] + k, dl]
                _sort(v, NULL, n, &vbuf[tid, n], NULL)
                for k in range(n):
                    values[offsets[s] * L + k * L + dl] = v[k]
                continue
            _sort(v, c, n, &vbuf[tid, 0], &wbuf[tid, 0])
            if weighted:
                total = 0.0
                for k in range(n):
                    total = total + c[k]
                    c[k] = total
                for k in range(n):
                    c[k] = c[k] / total  # the last: exactly 1


# -- distances --------------------------------------------------------------


cdef inline double _pair_uniform(int isa, const floating *a, int64_t n,
                                 const floating *b, int64_t m, Py_ssize_t L,
                                 int mode) noexcept nogil:
    """The sum over the L directions of W_p^p between the uniform
    distributions on the rank-major sorted a and b (km_sliced.h)."""
    if floating is double:
        return km_sw_pair_d(isa, a, n, b, m, L, mode)
    else:
        return km_sw_pair_f(isa, a, n, b, m, L, mode)


cdef inline double _pair_weighted(int isa, const floating *a,
                                  const double *ca,
                                  int64_t n, const floating *b,
                                  const double *cb, int64_t m, Py_ssize_t L,
                                  int mode) noexcept nogil:
    """The sum over the L directions of W_p^p between the weighted
    distributions of the sorted layouts a, ca and b, cb (km_sliced.h)."""
    if floating is double:
        return km_sw_weighted_d(isa, a, ca, n, b, cb, m, L, mode)
    else:
        return km_sw_weighted_f(isa, a, ca, n, b, cb, m, L, mode)


cdef inline double _pair_any(int isa, const floating *a, const double *ca,
                             int64_t n, const floating *b, const double *cb,
                             int64_t m, Py_ssize_t L, double p, bint weighted,
                             bint first, double top, double *A,
                             double *U) noexcept nogil:
    """The pass `first` (the pair's largest difference, at least top) or
    second (A, U += the sums of the powers of the differences over top)
    of the merges of a pair at any p (km_sliced_kernel.h); returns top."""
    if floating is double:
        if weighted:
            return km_sw_weighted_any_d(isa, a, ca, n, b, cb, m, L, p, first,
                                        top, A, U)
        return km_sw_pair_any_d(isa, a, n, b, m, L, p, first, top, A, U)
    else:
        if weighted:
            return km_sw_weighted_any_f(isa, a, ca, n, b, cb, m, L, p, first,
                                        top, A, U)
        return km_sw_pair_any_f(isa, a, n, b, m, L, p, first, top, A, U)


def pair_block(const floating[::1] vx, const double[::1] cx,
               const int64_t[::1] ox, const floating[::1] vy,
               const double[::1] cy, const int64_t[::1] oy,
               double[:, ::1] out, Py_ssize_t L, double p, bint weighted,
               bint symmetric, Py_ssize_t row_width, Py_ssize_t n_col_blocks,
               Py_ssize_t col_width, Py_ssize_t task0, Py_ssize_t task1,
               int n_threads):
    """out[i, j] += the sum over the L directions of the sorted layouts of
    W_p^p(X[i], Y[j]) (`weighted`: from the cumulative weights cx, cy),
    for the tasks task0 <= task < task1: task = r * n_col_blocks + b is
    the rows [r * row_width, (r + 1) * row_width) against the columns [b *
    col_width, (b + 1) * col_width), each column against all the rows in
    turn (in cache), the pairs above the diagonal when `symmetric` (Y is
    X)."""
    cdef Py_ssize_t task, i, j, r0, r1, c0, c1
    cdef Py_ssize_t n_rows = out.shape[0], n_cols = out.shape[1]
    cdef int64_t n, m
    cdef int mode = P_TWO if p == 2.0 else P_ONE
    cdef int isa = isa_level  # the engine's code path (_runtime.pyx)
    if task1 <= task0 or L == 0:
        return
    for task in prange(task0, task1, nogil=True, schedule="dynamic",
                       num_threads=n_threads):
        r0 = (task // n_col_blocks) * row_width
        r1 = min(r0 + row_width, n_rows)
        c0 = (task % n_col_blocks) * col_width
        c1 = min(c0 + col_width, n_cols)
        if symmetric and c0 < r0 + 1:
            c0 = r0 + 1
        for j in range(c0, c1):
            m = oy[j + 1] - oy[j]
            for i in range(r0, min(r1, j) if symmetric else r1):
                n = ox[i + 1] - ox[i]
                if weighted:
                    out[i, j] += _pair_weighted(isa, &vx[ox[i] * L],
                                                &cx[ox[i] * L], n,
                                                &vy[oy[j] * L],
                                                &cy[oy[j] * L], m, L, mode)
                else:
                    out[i, j] += _pair_uniform(isa, &vx[ox[i] * L], n,
                                               &vy[oy[j] * L], m, L, mode)


def pair_block_any(const floating[::1] vx, const double[::1] cx,
                   const int64_t[::1] ox, const floating[::1] vy,
                   const double[::1] cy, const int64_t[::1] oy,
                   double[:, ::1] top, double[:, ::1] A, double[:, ::1] U,
                   Py_ssize_t L, double p, bint weighted, bint symmetric,
                   bint first, Py_ssize_t row_width, Py_ssize_t n_col_blocks,
                   Py_ssize_t col_width, Py_ssize_t task0, Py_ssize_t task1,
                   int n_threads):
    """`pair_block` at any p other than 1 and 2, in two passes over the
    blocks of directions: `first`, top[i, j] = the largest difference of
    the projections of X[i] and Y[j] over the steps of positive length of
    their merges (at least its value before); else, where top[i, j] > 0,
    A[i, j] += the sum over the block's directions of the integral of t^p,
    t the difference over top[i, j], and for p < 1 U[i, j] += that of (t^p
    - 1) / p (U unused for p > 1)."""
    cdef Py_ssize_t task, i, j, r0, r1, c0, c1
    cdef Py_ssize_t n_rows = top.shape[0], n_cols = top.shape[1]
    cdef int64_t n, m
    cdef bint small = p < 1.0
    cdef int isa = isa_level
    cdef double t
    if task1 <= task0 or L == 0:
        return
    for task in prange(task0, task1, nogil=True, schedule="dynamic",
                       num_threads=n_threads):
        r0 = (task // n_col_blocks) * row_width
        r1 = min(r0 + row_width, n_rows)
        c0 = (task % n_col_blocks) * col_width
        c1 = min(c0 + col_width, n_cols)
        if symmetric and c0 < r0 + 1:
            c0 = r0 + 1
        for j in range(c0, c1):
            m = oy[j + 1] - oy[j]
            for i in range(r0, min(r1, j) if symmetric else r1):
                n = ox[i + 1] - ox[i]
                t = top[i, j]
                if first:
                    top[i, j] = _pair_any(
                        isa, &vx[ox[i] * L],
                        &cx[ox[i] * L] if weighted else NULL, n,
                        &vy[oy[j] * L], &cy[oy[j] * L] if weighted else NULL,
                        m, L, p, weighted, True, t, NULL, NULL)
                elif t > 0:
                    _pair_any(isa, &vx[ox[i] * L],
                              &cx[ox[i] * L] if weighted else NULL, n,
                              &vy[oy[j] * L],
                              &cy[oy[j] * L] if weighted else NULL, m, L, p,
                              weighted, False, t, &A[i, j],
                              &U[i, j] if small else NULL)


# -- quantile features ------------------------------------------------------


cdef void _cells(const floating *v, const double *c, int64_t n,
                 Py_ssize_t stride, int64_t Q, const double *edges,
                 const double *cell_scale, floating *out) noexcept nogil:
    """out[k] = cell_scale[k] * the integral over the cell [edges[k],
    edges[k + 1]] (edges[Q] exactly 1) of the quantile function of the
    distribution on the sorted v[0], v[stride], ... (n values) with the
    cumulative normalised weights c (the last 1; NULL: uniform, (i + 1) /
    n): one merge of its steps with the cells."""
    cdef int64_t i = 0, k = 0
    cdef double u = 0.0, t, x, g, cell = 0.0
    while k < Q:
        x = c[i] if c != NULL else <double>(i + 1) / <double>n
        g = edges[k + 1]
        t = x if x < g else g
        cell += (t - u) * <double>v[i * stride]
        u = t
        if g <= t:
            out[k] = <floating>(cell * cell_scale[k])
            cell = 0.0
            k += 1
        if x <= t and i < n - 1:
            i += 1


cdef void _midpoints(const floating *v, const double *c, int64_t n,
                     Py_ssize_t stride, int64_t Q, const double *levels,
                     const double *cell_scale, floating *out) noexcept nogil:
    """out[k] = cell_scale[k] * the quantile function at levels[k]
    (ascending: the smallest value whose cumulative weight reaches it; c
    NULL: uniform, the values `stride` apart)."""
    cdef int64_t i = 0, k
    for k in range(Q):
        if c == NULL:
            while <double>(i + 1) < n * levels[k] and i < n - 1:
                i += 1
        else:
            while c[i] < levels[k] and i < n - 1:
                i += 1
        out[k] = <floating>(<double>v[i * stride] * cell_scale[k])


def quantile_features(const floating[::1] values, const double[::1] cum,
                      const int64_t[::1] offsets, bint weighted,
                      Py_ssize_t L, Py_ssize_t l0, const double[::1] edges,
                      const double[::1] cell_scale, bint midpoint,
                      floating[:, ::1] out, Py_ssize_t s0, Py_ssize_t s1,
                      int n_threads):
    """out[s, (l0 + dl) * Q + k] = cell_scale[k] * the integral of the
    quantile function of set s along the block's direction dl over the
    cell [edges[k], edges[k + 1]] (`midpoint`: its value at edges[k], the
    levels), Q = len(cell_scale), from the sorted layout of a block of L
    directions, for the sets s0 <= s < s1."""
    cdef Py_ssize_t s, dl, stride, Q = cell_scale.shape[0]
    cdef int64_t n, base
    if s1 <= s0 or L == 0 or Q == 0:
        return
    for s in prange(s0, s1, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        n = offsets[s + 1] - offsets[s]
        for dl in range(L):
            if weighted:
                base = offsets[s] * L + dl * n
                stride = 1
            else:  # rank-major
                base = offsets[s] * L + dl
                stride = L
            if midpoint:
                _midpoints(&values[base], &cum[base] if weighted else NULL, n,
                           stride, Q, &edges[0], &cell_scale[0],
                           &out[s, (l0 + dl) * Q])
            else:
                _cells(&values[base], &cum[base] if weighted else NULL, n,
                       stride, Q, &edges[0], &cell_scale[0],
                       &out[s, (l0 + dl) * Q])


def last_isa():
    """The code path of this engine's last SIMD call: 0 baseline, 1 AVX2, 2
    AVX-512 (-1 before any), for the tests that every engine follows the
    switch (`_runtime.select_isa`)."""
    return km_isa_ran
