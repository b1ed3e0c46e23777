"""The tile kernels of km_tile.h, shared by the engines of the set kernels
(_pair_sums.pyx), of the kNN divergences (_knn.pyx) and of the set means
(_set_means.pyx); every call runs the code path of the engine's switch."""
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t

from ._runtime cimport floating, isa_level

cdef extern from "km_tile.h" nogil:
    int KM_RBF
    int KM_LAPLACIAN
    int KM_POLYNOMIAL
    int KM_SQEUCLIDEAN
    int KM_COS
    int KM_ENERGY

    ctypedef struct km_tile_args:
        ptrdiff_t d
        ptrdiff_t ldy
        ptrdiff_t ldo
        int kind
        int degree
        int sum_rows
        double gamma
        double coef0
        const void *row_w
        const void *row_n

    void km_tile_d(int isa, const km_tile_args *a, const double *x,
                   const double *yt, const double *phases, ptrdiff_t ncols,
                   double *out)
    void km_tile_f(int isa, const km_tile_args *a, const float *x,
                   const float *yt, const float *phases, ptrdiff_t ncols,
                   float *out)
    void km_cos_row_d(int isa, double *v, const double *b, ptrdiff_t n,
                      double scale)
    void km_cos_row_f(int isa, float *v, const float *b, ptrdiff_t n,
                      float scale)
    void km_rbf_row_d(int isa, double *g, const double *b, double a,
                      double exp2_scale, ptrdiff_t n)
    void km_poly_row_d(int isa, double *g, double gamma, double coef0,
                       int degree, ptrdiff_t n)
    void km_csr_row_d(int isa, double *acc, const double *a,
                      const int64_t *idx, ptrdiff_t nnz, const double *w,
                      ptrdiff_t ldw, ptrdiff_t n)
    void km_csr_row_f(int isa, double *acc, const float *a,
                      const int64_t *idx, ptrdiff_t nnz, const float *w,
                      ptrdiff_t ldw, ptrdiff_t n)
    void km_add_row_d(int isa, double *acc, const double *v, ptrdiff_t n)
    void km_add_row_f(int isa, double *acc, const float *v, ptrdiff_t n)
    double km_sum_d(const double *v, ptrdiff_t n)
    double km_sum_f(const float *v, ptrdiff_t n)


cdef inline void tile(const km_tile_args *args, const floating *x,
                      const floating *yt, const floating *phases,
                      ptrdiff_t ncols, floating *out) noexcept nogil:
    if floating is double:
        km_tile_d(isa_level, args, x, yt, phases, ncols, out)
    else:
        km_tile_f(isa_level, args, x, yt, phases, ncols, out)


cdef inline void cos_row(floating *v, const floating *b, ptrdiff_t n,
                         floating scale) noexcept nogil:
    if floating is double:
        km_cos_row_d(isa_level, v, b, n, scale)
    else:
        km_cos_row_f(isa_level, v, b, n, scale)


cdef inline void add_row(double *acc, const floating *v,
                         ptrdiff_t n) noexcept nogil:
    """acc[0:n] += v[0:n], in float64."""
    if floating is double:
        km_add_row_d(isa_level, acc, v, n)
    else:
        km_add_row_f(isa_level, acc, v, n)


cdef inline void csr_row(double *acc, const floating *a, const int64_t *idx,
                         ptrdiff_t nnz, const floating *w, ptrdiff_t ldw,
                         ptrdiff_t n) noexcept nogil:
    """acc[c] = sum over q < nnz of a[q] w[idx[q] * ldw + c], c < n."""
    if floating is double:
        km_csr_row_d(isa_level, acc, a, idx, nnz, w, ldw, n)
    else:
        km_csr_row_f(isa_level, acc, a, idx, nnz, w, ldw, n)


cdef inline double sum_run(const floating *v, ptrdiff_t n) noexcept nogil:
    """Sum of v[0:n] in float64."""
    if floating is double:
        return km_sum_d(v, n)
    else:
        return km_sum_f(v, n)
