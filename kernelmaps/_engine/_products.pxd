"""Dot products of many points by SciPy's BLAS, for the engines of the set
kernels (_pair_sums.pyx) and of the kNN divergences (_knn.pyx): called from
an engine thread, the BLAS on one thread (the caller's business)."""
from libc.string cimport memset

from ._runtime cimport (
    blas_dgemm,
    blas_dsyrk,
    blas_sgemm,
    blas_ssyrk,
    floating,
)
from ._tile cimport add_row


cdef inline void products(const floating *x, const floating *y, int d, int n,
                          int m, bint same, int chunk, double *G, int ldg,
                          floating *C) noexcept nogil:
    """G[i * ldg + j] = <x_i, y_j> for i < n, j < m (x, y: rows of d
    features, row stride d), summed over the features in chunks of `chunk`:
    each chunk one BLAS product, the chunks added in float64 (float32
    products go through C, a buffer of n * m). With `same` (y is x, m = n)
    only j >= i is computed (a symmetric rank-k update)."""
    cdef char trans = b'T', notrans = b'N', lower = b'L'
    cdef int k0 = 0, kk, i, j0
    cdef double one = 1.0, beta
    cdef float fone = 1.0, fzero = 0.0
    while k0 < d:
        kk = min(chunk, d - k0)
        # Column-major: G^T (m x n) = y (d x m)^T x (d x n); its lower
        # triangle is the upper one of G.
        if floating is double:
            beta = 0.0 if k0 == 0 else 1.0
            if same:
                blas_dsyrk(&lower, &trans, &n, &kk, &one, x + k0, &d, &beta, G,
                           &ldg)
            else:
                blas_dgemm(&trans, &notrans, &m, &n, &kk, &one, y + k0, &d,
                           x + k0, &d, &beta, G, &ldg)
        else:
            if same:
                blas_ssyrk(&lower, &trans, &n, &kk, &fone, x + k0, &d, &fzero,
                           C, &m)
            else:
                blas_sgemm(&trans, &notrans, &m, &n, &kk, &fone, y + k0, &d,
                           x + k0, &d, &fzero, C, &m)
            for i in range(n):
                j0 = i if same else 0
                if k0 == 0:
                    memset(G + i * ldg + j0, 0, (m - j0) * sizeof(double))
                add_row(G + i * ldg + j0, C + i * m + j0, m - j0)
        k0 += kk
