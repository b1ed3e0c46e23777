"""The tile kernels of km_tile.h, shared by the engines of the set kernels
(_pair_sums_impl) and of the kNN divergences (_knn_impl)."""
from libc.stddef cimport ptrdiff_t

ctypedef fused floating:
    float
    double

cdef extern from "km_tile.h" nogil:
    int KM_MR
    int KM_NR_D
    int KM_NR_F
    int KM_RBF
    int KM_LAPLACIAN
    int KM_POLYNOMIAL
    int KM_SQEUCLIDEAN
    int KM_COS

    ctypedef struct km_tile_args:
        ptrdiff_t d
        ptrdiff_t ldy
        ptrdiff_t ldo
        int kind
        int degree
        int sum_rows
        double gamma
        double coef0

    void km_tile_d(const km_tile_args *a, const double *x, const double *xn,
                   const double *yt, const double *yn, ptrdiff_t ncols,
                   double *out)
    void km_tile_f(const km_tile_args *a, const float *x, const float *xn,
                   const float *yt, const float *yn, ptrdiff_t ncols,
                   float *out)
    void km_cos_row_d(double *v, const double *b, ptrdiff_t n, double scale)
    void km_cos_row_f(float *v, const float *b, ptrdiff_t n, float scale)
    double km_sum_d(const double *v, ptrdiff_t n)
    double km_sum_f(const float *v, ptrdiff_t n)
    int km_isa_avx2()
    void km_select_isa(int allow_avx2)


cdef inline void tile(const km_tile_args *args, const floating *x,
                      const floating *xn, const floating *yt,
                      const floating *yn, ptrdiff_t ncols,
                      floating *out) noexcept nogil:
    if floating is double:
        km_tile_d(args, x, xn, yt, yn, ncols, out)
    else:
        km_tile_f(args, x, xn, yt, yn, ncols, out)


cdef inline void cos_row(floating *v, const floating *b, ptrdiff_t n,
                         floating scale) noexcept nogil:
    if floating is double:
        km_cos_row_d(v, b, n, scale)
    else:
        km_cos_row_f(v, b, n, scale)


cdef inline str select_isa(allow_avx2):
    """The code path of the tile kernels ("avx2" or "baseline") in the
    calling module; with `allow_avx2` given, select it first."""
    if allow_avx2 is not None:
        km_select_isa(1 if allow_avx2 else 0)
    return "avx2" if km_isa_avx2() else "baseline"
