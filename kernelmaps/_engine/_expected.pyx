"""Expected RBF kernels between Gaussians with full covariances, and with
diagonal ones (`rbf_diagonal`, at the end).

For a pair (i, j) the value is ``det(A)^(-1/2) exp(-gamma q)`` with
``A = I + 2 gamma (S_i + S'_j)`` and ``q = dm^T A^-1 dm``, ``dm = m_i - m'_j``.
Both come from one Cholesky factorisation, square-root free (A = L D L^T),
of the augmented symmetric matrix

    M = [[A,    dm],
         [dm^T,  0]],

eliminated on its first d pivots: the pivots are the entries of D (their
product is det A; they are > 0 when A is positive definite), the eliminated
last column is y, the forward solve ``L y = dm`` (L unit lower triangular),
and the last diagonal entry ends as ``0 - sum_k y_k^2 / D_k = -q``.

M is kept as its packed upper triangle, row by row (row r holds columns r to
d), so that it is the sum of two precomputed packed arrays, one per
Gaussian: ``P[i] = packed [[I + 2 gamma S_i, m_i], [0, 0]]`` and
``Q[j] = packed [[2 gamma S'_j, -m'_j], [0, 0]]`` (see `pack`). Pairs go in
batches of LANES consecutive columns j, their matrices interleaved entry by
entry, so that every inner loop runs over LANES independent pairs
(vectorised by the compiler) and over contiguous row segments. Pivots are
eliminated four at a time: the trailing rows are read and written once per
block, with the same operations in the same order as four rank-one updates.

Every entry of the output is computed by one thread, and every pair with the
same operations whatever its lane: results do not depend on the number of
threads, bit for bit.
"""
from cython.parallel cimport prange, threadid
from libc.float cimport DBL_MAX
from libc.math cimport exp, fabs, log, log1p
from libc.stdint cimport int64_t

import numpy as np

cdef enum:
    B = 4  # pairs per batch (lanes)
    T = 64  # tile of the mirror copy
    L = 8  # pairs per batch of rbf_diagonal (lanes)
    G = 16  # factors t per logarithm of their product in rbf_diagonal

LANES = B
MIRROR_ROWS = T
DIAGONAL_LANES = L

# A pivot outside [1 / _BIG, _BIG] goes to the log sum at once; the running
# product of the others goes there when it leaves [1 / _FLUSH, _FLUSH]. The
# product thus stays within [1e-300, 1e300], and det A never overflows.
cdef double _BIG = 1e100
cdef double _FLUSH = 1e200


def packed_size(Py_ssize_t d):
    """Length of the packed upper triangle of the (d + 1) x (d + 1) matrix."""
    return (d + 1) * (d + 2) // 2


def pack(const double[:, :, ::1] S, const double[:, ::1] means, double scale,
         double diagonal, double sign, Py_ssize_t lanes):
    """Packed upper triangles of ``[[diagonal I + scale S_i, sign m_i],
    [0, 0]]`` in batches of `lanes` Gaussians, interleaved: shape
    (ceil(n / lanes), (d + 1) (d + 2) / 2, lanes), zero past the last."""
    cdef Py_ssize_t n = S.shape[0], d = S.shape[1], D = d + 1
    cdef Py_ssize_t nb = (n + lanes - 1) // lanes
    out_a = np.zeros((nb, packed_size(d), lanes))
    cdef double[:, :, ::1] out = out_a
    cdef Py_ssize_t i, b, a, r, c, s
    with nogil:
        for i in range(n):
            b = i // lanes
            a = i - b * lanes
            s = 0
            for r in range(d):
                out[b, s, a] = diagonal + scale * S[i, r, r]
                for c in range(r + 1, d):
                    out[b, s + c - r, a] = scale * S[i, r, c]
                out[b, s + d - r, a] = sign * means[i, r]
                s += D - r
    return out_a


cdef inline void _pivot(const double *row, double *inv, double *prod,
                        double *logdet, int *ok) noexcept nogil:
    """Take the pivots row[0:B]: inverses, and their product (in prod and
    logdet); a pivot that is not > 0 (or NaN) clears ok and counts as 1."""
    cdef Py_ssize_t a
    cdef double pv
    for a in range(B):
        pv = row[a]
        if not pv > 0.0:
            ok[a] = 0
            pv = 1.0
        if pv > _BIG or pv < 1.0 / _BIG:
            logdet[a] += log(pv)
        else:
            prod[a] *= pv
            if prod[a] > _FLUSH or prod[a] < 1.0 / _FLUSH:
                logdet[a] += log(prod[a])
                prod[a] = 1.0
        inv[a] = 1.0 / pv


cdef inline void _update(const double *rk, const double *inv, double *ri,
                         Py_ssize_t i, Py_ssize_t length) noexcept nogil:
    """One rank-one step on one row: ri (`length` entries, from column
    k + i) minus (rk[i] / pivot) rk[i:i + length]."""
    cdef Py_ssize_t j, a
    cdef double t[B]
    cdef const double *rs = rk + i * B
    for a in range(B):
        t[a] = rs[a] * inv[a]
    for j in range(length):
        for a in range(B):
            ri[j * B + a] = ri[j * B + a] - t[a] * rs[j * B + a]


cdef void _batch(const double *p, const double *q, double *w, Py_ssize_t D,
                 double gamma, double *out) noexcept nogil:
    """The values of B pairs into out[0:B] (-1 for a pair whose A is not
    numerically positive definite). p, q: the packed halves, interleaved
    (p the same for all lanes); w: scratch of the same size."""
    cdef Py_ssize_t size = D * (D + 1) // 2, k = 0, n, i, j, a, e, s
    cdef double inv0[B]
    cdef double inv1[B]
    cdef double inv2[B]
    cdef double inv3[B]
    cdef double t0[B]
    cdef double t1[B]
    cdef double t2[B]
    cdef double t3[B]
    cdef double prod[B]
    cdef double logdet[B]
    cdef int ok[B]
    cdef double *rk = w
    cdef double *r1
    cdef double *r2
    cdef double *r3
    cdef double *ri
    cdef const double *s0
    cdef const double *s1
    cdef const double *s2
    cdef const double *s3
    for a in range(B):
        prod[a] = 1.0
        logdet[a] = 0.0
        ok[a] = 1
    for s in range(size * B):
        w[s] = p[s] + q[s]
    while k + 4 < D:
        n = D - k  # length of row k
        r1 = rk + n * B
        r2 = r1 + (n - 1) * B
        r3 = r2 + (n - 2) * B
        _pivot(rk, inv0, prod, logdet, ok)
        _update(rk, inv0, r1, 1, n - 1)
        _update(rk, inv0, r2, 2, n - 2)
        _update(rk, inv0, r3, 3, n - 3)
        _pivot(r1, inv1, prod, logdet, ok)
        _update(r1, inv1, r2, 1, n - 2)
        _update(r1, inv1, r3, 2, n - 3)
        _pivot(r2, inv2, prod, logdet, ok)
        _update(r2, inv2, r3, 1, n - 3)
        _pivot(r3, inv3, prod, logdet, ok)
        ri = r3 + (n - 3) * B
        for i in range(4, n):
            s0 = rk + i * B
            s1 = r1 + (i - 1) * B
            s2 = r2 + (i - 2) * B
            s3 = r3 + (i - 3) * B
            for a in range(B):
                t0[a] = s0[a] * inv0[a]
                t1[a] = s1[a] * inv1[a]
                t2[a] = s2[a] * inv2[a]
                t3[a] = s3[a] * inv3[a]
            for j in range(n - i):
                for a in range(B):
                    e = j * B + a
                    ri[e] = (ri[e] - t0[a] * s0[e] - t1[a] * s1[e]
                             - t2[a] * s2[e] - t3[a] * s3[e])
            ri += (n - i) * B
        rk = r3 + (n - 3) * B
        k += 4
    # The last pivots (fewer than four) one at a time.
    while k < D - 1:
        n = D - k
        _pivot(rk, inv0, prod, logdet, ok)
        ri = rk + n * B
        for i in range(1, n):
            _update(rk, inv0, ri, i, n - i)
            ri += (n - i) * B
        rk += n * B
        k += 1
    # rk is now the last diagonal entry, -q.
    for a in range(B):
        if ok[a]:
            out[a] = exp(-0.5 * (logdet[a] + log(prod[a])) + gamma * rk[a])
        else:
            out[a] = -1.0


def rbf_full(const double[:, :, ::1] P, const double[:, :, ::1] Q,
             Py_ssize_t m, double gamma, bint symmetric, double[:, ::1] out,
             double[:, ::1] scratch, int64_t[::1] bad, Py_ssize_t row_start,
             Py_ssize_t row_stop, int n_threads):
    """Fill rows row_start..row_stop of out (n, m) with the expected RBF
    kernel, from P = pack(..., lanes=1) of the n Gaussians of the rows and
    Q = pack(..., lanes=LANES) of the m of the columns.

    With `symmetric` (Q packs the same Gaussians as P), only the entries
    j >= i are computed (see `mirror`). scratch: (n_threads, >= (2 size + 1)
    LANES). A pair whose matrix A is not numerically positive definite gets
    -1, and is counted in bad[i] (n, zeros before).
    """
    cdef Py_ssize_t size = P.shape[1], D = 1, nb = Q.shape[0]
    cdef Py_ssize_t i, j, b, a, s, tid
    cdef double *v
    cdef double *w
    cdef double *pb
    while D * (D + 1) // 2 < size:
        D += 1
    if (D * (D + 1) // 2 != size or P.shape[2] != 1 or Q.shape[1] != size
            or Q.shape[2] != B):
        raise ValueError("P and Q must come from pack, with lanes 1 and LANES")
    if (out.shape[0] != P.shape[0] or out.shape[1] != m or nb * B < m
            or (symmetric and m != P.shape[0]) or bad.shape[0] != P.shape[0]):
        raise ValueError("out must have shape (len(P), m), m <= len(Q) LANES; "
                         "bad (len(P),)")
    if not 0 <= row_start <= row_stop <= P.shape[0]:
        raise ValueError("rows out of range")
    if (n_threads < 1 or scratch.shape[0] < n_threads
            or scratch.shape[1] < (2 * size + 1) * B):
        raise ValueError("scratch must have shape (n_threads, (2 size + 1) LANES)")
    for i in prange(row_start, row_stop, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        v = &scratch[tid, 0]
        w = v + B
        pb = w + size * B
        for s in range(size):
            for a in range(B):
                pb[s * B + a] = P[i, s, 0]
        for b in range(i // B if symmetric else 0, nb):
            _batch(pb, &Q[b, 0, 0], w, D, gamma, v)
            for a in range(B):
                j = b * B + a
                if j < m and (j >= i or not symmetric):
                    out[i, j] = v[a]
                    if v[a] < 0.0:
                        bad[i] += 1


def mirror(double[:, ::1] out, Py_ssize_t start, Py_ssize_t stop, int n_threads):
    """Copy the upper triangle of the square `out` to its lower triangle,
    by tiles: the rows of the tiles ``start <= it < stop`` (of MIRROR_ROWS
    rows each; tile row it copies (it + 1) MIRROR_ROWS**2 values at
    most)."""
    cdef Py_ssize_t n = out.shape[0], it, jt, i, j
    if out.shape[1] != n:
        raise ValueError("out must be square")
    if not 0 <= start <= stop <= (n + T - 1) // T:
        raise ValueError("tile rows out of range")
    for it in prange(start, stop, nogil=True, schedule="dynamic",
                     num_threads=n_threads):
        for jt in range(it + 1):
            for i in range(it * T, min(it * T + T, n)):
                for j in range(jt * T, min(jt * T + T, i)):
                    out[i, j] = out[j, i]


# Diagonal covariances: per coordinate k, t = 1 + 2 gamma (v_k + v'_k) and
# the value is exp(-sum_k (log t_k) / 2 - gamma sum_k dm_k^2 / t_k). In
# batches, one log is taken per product of G factors t (each >= 1). A pair
# whose product or sum is not finite (a t or a dm_k^2 overflowed, or the
# product did) goes to `_diagonal_pair`, term by term; its value is then 0
# or tiny, so the extra cost is rare.
cdef double _LOG2 = 0.6931471805599453


cdef double _diagonal_pair(const double *m1, const double *v1, const double *m2,
                           const double *v2, Py_ssize_t stride, Py_ssize_t d,
                           double gamma) noexcept nogil:
    """The value of one pair, each term on its own and, where t or dm^2
    overflows, in logs: a value in [0, 1] at any finite scale. The second
    Gaussian's entries are `stride` apart. gamma (v + v') 2 in this order:
    2 gamma may overflow, and times a zero variance it would give NaN."""
    cdef Py_ssize_t k
    cdef double t, dm2, half, u, log_t, logs = 0.0, quad = 0.0
    for k in range(d):
        t = 1.0 + gamma * (v1[k] + v2[k * stride]) * 2.0
        dm2 = (m1[k] - m2[k * stride]) * (m1[k] - m2[k * stride])
        if t <= DBL_MAX and dm2 <= DBL_MAX:
            logs += log(t)
            quad += gamma * (dm2 / t)
            continue
        half = v1[k] / 2 + v2[k * stride] / 2  # (v + v') / 2, finite
        u = gamma * half * 4
        log_t = log1p(u) if u <= DBL_MAX else 2 * _LOG2 + log(gamma) + log(half)
        logs += log_t
        # gamma dm^2 / t from |dm| / 2 (log(0) = -inf gives 0)
        quad += exp(log(gamma) + 2 * (log(fabs(m1[k] / 2 - m2[k * stride] / 2))
                                      + _LOG2) - log_t)
    return exp(-0.5 * logs - quad)


cdef void _diagonal_batch(const double *m1, const double *v1, const double *M,
                          const double *V, Py_ssize_t d, double gamma,
                          double *out) noexcept nogil:
    """The values of L pairs into out[0:L]: one Gaussian (m1, v1) against L
    interleaved ones (M, V: (d, L)). Every loop over the lanes is
    independent, for the compiler to vectorise."""
    cdef Py_ssize_t k, k0 = 0, a
    cdef double t, dm
    cdef double prod[L]
    cdef double logs[L]
    cdef double quad[L]
    cdef int far[L]
    for a in range(L):
        logs[a] = 0.0
        quad[a] = 0.0
        far[a] = 0
    while k0 < d:
        for a in range(L):
            prod[a] = 1.0
        for k in range(k0, min(k0 + G, d)):
            for a in range(L):
                t = 1.0 + gamma * (v1[k] + V[k * L + a]) * 2.0
                dm = m1[k] - M[k * L + a]
                prod[a] = prod[a] * t
                quad[a] = quad[a] + dm * dm / t
        for a in range(L):
            far[a] = far[a] | (not prod[a] <= DBL_MAX)
            logs[a] = logs[a] + log(prod[a])
        k0 += G
    for a in range(L):
        if far[a] or not quad[a] <= DBL_MAX:
            out[a] = _diagonal_pair(m1, v1, M + a, V + a, L, d, gamma)
        else:
            out[a] = exp(-0.5 * logs[a] - gamma * quad[a])


cdef void _diagonal_row(const double *m1, const double *v1, const double *M,
                        const double *V, Py_ssize_t d, Py_ssize_t first,
                        Py_ssize_t m, double gamma, double *out) noexcept nogil:
    """out[first:m]: one Gaussian against the columns first to m - 1 (M, V
    as in `rbf_diagonal`)."""
    cdef Py_ssize_t b, a, j
    cdef double v[L]
    for b in range(first // L, (m + L - 1) // L):
        _diagonal_batch(m1, v1, M + b * d * L, V + b * d * L, d, gamma, v)
        for a in range(L):
            j = b * L + a
            if first <= j < m:
                out[j] = v[a]


def rbf_diagonal(const double[:, ::1] m1, const double[:, ::1] v1,
                 const double[:, :, ::1] M, const double[:, :, ::1] V,
                 Py_ssize_t m, double gamma, bint symmetric, double[:, ::1] out,
                 Py_ssize_t row_start, Py_ssize_t row_stop, int n_threads):
    """Fill rows row_start..row_stop of out (n, m) with the expected RBF
    kernel between the Gaussians (m1[i], diag v1[i]) and the m of the
    columns, given in batches of DIAGONAL_LANES, interleaved: M[b, k, a] and
    V[b, k, a] are coordinate k of Gaussian b DIAGONAL_LANES + a (zero past
    the last). With `symmetric` (the same Gaussians), only the entries
    j >= i are computed (see `mirror`)."""
    cdef Py_ssize_t n = m1.shape[0], d = m1.shape[1], nb = M.shape[0], i
    if (v1.shape[0] != n or v1.shape[1] != d or M.shape[1] != d
            or M.shape[2] != L or V.shape[0] != nb or V.shape[1] != d
            or V.shape[2] != L):
        raise ValueError("m1, v1 must be (n, d); M, V (nb, d, DIAGONAL_LANES)")
    if (out.shape[0] != n or out.shape[1] != m or nb * L < m
            or (symmetric and m != n)):
        raise ValueError("out must have shape (n, m), m <= nb DIAGONAL_LANES")
    if not 0 <= row_start <= row_stop <= n:
        raise ValueError("rows out of range")
    for i in prange(row_start, row_stop, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        _diagonal_row(&m1[i, 0], &v1[i, 0], &M[0, 0, 0], &V[0, 0, 0], d,
                      i if symmetric else 0, m, gamma, &out[i, 0])
