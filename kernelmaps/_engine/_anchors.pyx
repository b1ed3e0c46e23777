"""Additive nearest-neighbour feature maps: exact 1-D k-means for the
anchors, and the table lookup of the features.

- `kmeans_1d`: optimal k-means of weighted sorted values, by dynamic
  programming over the prefix sums, each layer by divide and conquer (the
  optimal split is monotone): O(k n log n).
- `neighbours`: for every value, its anchors and their weights (binary
  search in the sorted anchors of its dimension, then the k nearest).
- `lookup`: the features: the weighted sum of the neighbours' rows of the
  anchor feature table, written to dense rows or CSR data.
OpenMP over values; float32 input stays float32 in the output.
"""
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

import numpy as np

from ._runtime cimport floating, index_t


cdef inline double _cost(const double *s0, const double *s1, const double *s2,
                         Py_ssize_t j, Py_ssize_t i) noexcept nogil:
    """Within-cluster sum of squares of values j..i (inclusive)."""
    cdef double w = s0[i + 1] - s0[j], m = s1[i + 1] - s1[j]
    return (s2[i + 1] - s2[j]) - m * m / w


cdef void _layer(const double *prev, double *cur, Py_ssize_t *arg,
                 const double *s0, const double *s1, const double *s2,
                 Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t optlo,
                 Py_ssize_t opthi) noexcept nogil:
    """cur[i] = min over j in [optlo, min(i, opthi)] of prev[j - 1] +
    cost(j, i) for i in [lo, hi], by divide and conquer."""
    cdef Py_ssize_t mid, j, best
    cdef double value, best_value
    if lo > hi:
        return
    mid = (lo + hi) // 2
    best = optlo
    best_value = INFINITY
    for j in range(optlo, min(mid, opthi) + 1):
        value = (prev[j - 1] if j > 0 else 0.0) + _cost(s0, s1, s2, j, mid)
        if value < best_value:
            best_value = value
            best = j
    cur[mid] = best_value
    arg[mid] = best
    _layer(prev, cur, arg, s0, s1, s2, lo, mid - 1, optlo, best)
    _layer(prev, cur, arg, s0, s1, s2, mid + 1, hi, best, opthi)


def kmeans_1d(const double[::1] values, const double[::1] weights, Py_ssize_t k):
    """Centres of the optimal k-means of sorted distinct `values` with
    positive `weights` (k <= len(values)), ascending."""
    cdef Py_ssize_t n = values.shape[0], q, i, j
    s0_a = np.zeros(n + 1)
    s1_a = np.zeros(n + 1)
    s2_a = np.zeros(n + 1)
    np.cumsum(weights, out=s0_a[1:])
    np.cumsum(np.multiply(weights, values), out=s1_a[1:])
    np.cumsum(np.multiply(weights, np.square(values)), out=s2_a[1:])
    cost_a = np.empty((k, n))
    arg_a = np.zeros((k, n), dtype=np.intp)
    cdef double[::1] s0 = s0_a, s1 = s1_a, s2 = s2_a
    cdef double[:, ::1] cost = cost_a
    cdef Py_ssize_t[:, ::1] arg = arg_a
    with nogil:
        for i in range(n):
            cost[0, i] = _cost(&s0[0], &s1[0], &s2[0], 0, i)
        for q in range(1, k):
            # Layer q (q + 1 clusters): the last cluster starts at j >= q.
            _layer(&cost[q - 1, 0], &cost[q, 0], &arg[q, 0], &s0[0], &s1[0],
                   &s2[0], q, n - 1, q, n - 1)
    centres = np.empty(k)
    i = n - 1
    for q in range(k - 1, -1, -1):
        j = arg[q, i] if q > 0 else 0
        centres[q] = (s1[i + 1] - s1[j]) / (s0[i + 1] - s0[j])
        i = j - 1
    return centres


cdef inline void _neighbours(const double *a, Py_ssize_t n, double inv_step,
                             double x, int k, bint distance, Py_ssize_t *idx,
                             double *w) noexcept nogil:
    """The k anchors nearest to x (clamped to [a[0], a[n-1]]) and their
    weights: 1/k each, or inversely proportional to the distance; for k = 2
    with distance weights, the two anchors bracketing x, interpolated
    linearly. Weight 1 on an anchor hit exactly. inv_step > 0: the anchors
    are the uniform grid a[i] = i / inv_step, indexed directly."""
    cdef Py_ssize_t lo = 0, size = n, half, hi, left, right, t
    cdef double total = 0.0, dl, dr, frac
    if x <= a[0]:
        x = a[0]
    elif x >= a[n - 1]:
        x = a[n - 1]
    if inv_step > 0:
        # Uniform grid: the index directly, corrected for rounding.
        lo = min(<Py_ssize_t>(x * inv_step), n - 1)
        if a[lo] > x:
            lo -= 1
        elif lo + 1 < n and a[lo + 1] <= x:
            lo += 1
    else:
        # Largest lo with a[lo] <= x, by a binary search whose steps are
        # arithmetic (no branch on the data to mispredict).
        while size > 1:
            half = size // 2
            lo += half * <Py_ssize_t>(a[lo + half] <= x)
            size -= half
    hi = lo + <Py_ssize_t>(lo + 1 < n)
    if k == 1:
        idx[0] = lo + <Py_ssize_t>((a[hi] - x) < (x - a[lo]))
        w[0] = 1.0
        return
    if k == 2 and distance:
        if hi == lo:
            lo -= 1
        frac = (x - a[lo]) / (a[hi] - a[lo])
        idx[0] = lo
        idx[1] = hi
        w[0] = 1.0 - frac
        w[1] = frac
        return
    left = lo
    right = lo + 1
    for t in range(k):
        dl = x - a[left] if left >= 0 else INFINITY
        dr = a[right] - x if right < n else INFINITY
        if dl <= dr:
            idx[t] = left
            w[t] = dl
            left -= 1
        else:
            idx[t] = right
            w[t] = dr
            right += 1
    if not distance or w[0] == 0.0:
        for t in range(k):
            w[t] = (1.0 / k) if not distance else (1.0 if t == 0 else 0.0)
        return
    for t in range(k):
        w[t] = 1.0 / w[t]
        total += w[t]
    for t in range(k):
        w[t] /= total


def neighbours(const floating[::1] values, const index_t[::1] cols,
               Py_ssize_t d, const double[::1] anchors, Py_ssize_t n_anchors,
               const double[::1] inv_step, int k, bint distance,
               Py_ssize_t zero_index, int64_t[:, ::1] idx, float[:, ::1] w,
               Py_ssize_t start, Py_ssize_t stop, int n_threads):
    """idx[i], w[i] = the k neighbours of values[i] among the anchors of its
    dimension (anchors[j * n_anchors:(j + 1) * n_anchors], sorted) and their
    weights, for start <= i < stop; a value of exactly 0 takes the anchor
    zero_index alone (if zero_index >= 0). inv_step[j] > 0: dimension j's
    anchors are the uniform grid of that step. cols: the dimension of each
    value (CSR), or empty for dense input (value i is in dimension i % d)."""
    cdef Py_ssize_t i, j, t
    cdef bint dense = cols.shape[0] == 0
    cdef Py_ssize_t *ii
    cdef double *ww
    with nogil, parallel(num_threads=n_threads):
        ii = <Py_ssize_t *>malloc(k * sizeof(Py_ssize_t))
        ww = <double *>malloc(k * sizeof(double))
        for i in prange(start, stop, schedule="static"):
            j = i % d if dense else cols[i]
            if values[i] == 0 and zero_index >= 0:
                for t in range(k):
                    idx[i, t] = zero_index
                    w[i, t] = 1.0 if t == 0 else 0.0
                continue
            _neighbours(&anchors[j * n_anchors], n_anchors, inv_step[j],
                        values[i], k, distance, ii, ww)
            for t in range(k):
                idx[i, t] = ii[t]
                w[i, t] = <float>ww[t]
        free(ii)
        free(ww)


def lookup(const int64_t[:, ::1] idx, const float[:, ::1] w,
           const index_t[::1] cols, Py_ssize_t d, const double[::1] table,
           const int64_t[::1] table_off, const int64_t[::1] rank,
           const int64_t[::1] out_pos, floating[::1] out, Py_ssize_t start,
           Py_ssize_t stop, int n_threads):
    """out[out_pos[i] + c] = sum_t w[i, t] * Q_j[idx[i, t], c] for the
    values start <= i < stop and the components c < rank[j] of the
    dimension j of value i, where Q_j is the
    (n_anchors, rank[j]) table at table[table_off[j]:]; values with
    out_pos[i] < 0 are skipped (zeros of CSR input)."""
    cdef Py_ssize_t i, j, t, c, r, k = idx.shape[1]
    cdef bint dense = cols.shape[0] == 0
    cdef int64_t pos, base
    cdef double acc
    for i in prange(start, stop, nogil=True, schedule="static",
                    num_threads=n_threads):
        pos = out_pos[i]
        if pos < 0:
            continue
        j = i % d if dense else cols[i]
        r = rank[j]
        base = table_off[j]
        for c in range(r):
            acc = 0.0
            for t in range(k):
                acc = acc + w[i, t] * table[base + idx[i, t] * r + c]
            out[pos + c] = <floating>acc


def transform(const floating[::1] values, const index_t[::1] cols,
              const index_t[::1] indptr, Py_ssize_t d,
              const double[::1] anchors, Py_ssize_t n_anchors,
              const double[::1] inv_step, int k, bint distance,
              const double[::1] table,
              const int64_t[::1] table_off, const int64_t[::1] rank,
              const int64_t[::1] feature_off, floating[::1] out,
              index_t[::1] out_cols, const int64_t[::1] out_indptr,
              bint dense, Py_ssize_t row0, Py_ssize_t row1, int n_threads):
    """The features of the rows row0 <= r < row1, neighbours and lookup in
    one pass.

    Dense input (`dense`): `values` holds the rows (n x d), and row r's
    features go to out[r * width:(r + 1) * width], dimension j's at
    feature_off[j]; a 0 takes the features of the anchor 0. CSR input:
    values / cols / indptr; the non-zero values of row r write their
    features to out and their columns to out_cols from out_indptr[r] on,
    in order (zeros are skipped: their features are 0).
    """
    cdef Py_ssize_t width = feature_off[d]
    cdef Py_ssize_t r, p, p0, p1, j, t, c, rj
    cdef int64_t pos, base
    cdef double x, acc
    cdef Py_ssize_t *ii
    cdef double *ww
    with nogil, parallel(num_threads=n_threads):
        ii = <Py_ssize_t *>malloc(k * sizeof(Py_ssize_t))
        ww = <double *>malloc(k * sizeof(double))
        for r in prange(row0, row1, schedule="static"):
            if dense:
                p0 = r * d
                p1 = p0 + d
                pos = r * width
            else:
                p0 = indptr[r]
                p1 = indptr[r + 1]
                pos = out_indptr[r]
            for p in range(p0, p1):
                x = values[p]
                j = (p - p0) if dense else cols[p]
                rj = rank[j]
                base = table_off[j]
                if x == 0:
                    if not dense:
                        continue
                    ii[0] = 0
                    ww[0] = 1.0
                    for t in range(1, k):
                        ii[t] = 0
                        ww[t] = 0.0
                else:
                    _neighbours(&anchors[j * n_anchors], n_anchors,
                                inv_step[j], x, k, distance, ii, ww)
                if dense:
                    pos = r * width + feature_off[j]
                for c in range(rj):
                    acc = 0.0
                    for t in range(k):
                        acc = acc + ww[t] * table[base + ii[t] * rj + c]
                    out[pos + c] = <floating>acc
                    if not dense:
                        out_cols[pos + c] = <index_t>(feature_off[j] + c)
                if not dense:
                    pos = pos + rj
        free(ii)
        free(ww)


def row_widths(const floating[::1] values, const index_t[::1] cols,
               const index_t[::1] indptr, const int64_t[::1] rank,
               int64_t[::1] out, int n_threads):
    """out[r] = number of features of CSR row r: the ranks of the
    dimensions of its non-zero values."""
    cdef Py_ssize_t r, p
    cdef int64_t total
    for r in prange(indptr.shape[0] - 1, nogil=True, schedule="static",
                    num_threads=n_threads):
        total = 0
        for p in range(indptr[r], indptr[r + 1]):
            if values[p] != 0:
                total = total + rank[cols[p]]
        out[r] = total
