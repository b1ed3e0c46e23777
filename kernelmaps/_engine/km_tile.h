/*
 * Tiles of kernel values between points, for the set-kernel engine.
 *
 * km_tile_d / km_tile_f compute, for KM_MR consecutive points x (row-major,
 * d features each) and the columns [0, ncols) of yt (the transposed column
 * points: d rows with leading dimension ldy), the kernel value of every
 * (row, column) pair into out (KM_MR rows, leading dimension ldo). ncols is
 * processed in steps of KM_NR_D / KM_NR_F: the caller pads yt and out.
 * With sum_rows set, only the column sums of the KM_MR rows go to out's
 * first row (summed in the working precision: KM_MR - 1 roundings). With
 * row_w set, each row's values are multiplied by its weight first (the
 * points of weighted sets).
 * km_sum_d / km_sum_f sum a run of values into a double.
 *
 * The loops have the GEMM shape, with register blocking: KM_MR x 2 vector
 * accumulators. KM_RBF and KM_SQEUCLIDEAN sum squared differences, and
 * KM_LAPLACIAN absolute differences, of the coordinates (never |x|^2 +
 * |y|^2 - 2 <x, y>, which cancels: coincident points give exactly 0);
 * KM_POLYNOMIAL and KM_COS take dot products; the kernel is applied in
 * registers. exp(-gamma z) is computed as 2**(-gamma log2(e) z): the caller
 * scales the points by a power of two so that gamma is about 1 (exact; see
 * bandwidth_scale in layout.py). KM_COS is the random Fourier feature
 * cos(x . y + phases[j]) of column j. KM_ENERGY is the distance-induced
 * kernel max((|x| + |y| - |x - y|) / 2, 0), |x - y| the square root of the
 * sum of squared differences (coincident points give exactly |x|), with
 * the norms given: phases[j] those of the columns, row_n those of the rows
 * (the caller scales the points so that the squares neither overflow nor
 * underflow; see squares_exponent in layout.py). The other kinds ignore
 * `phases`.
 *
 * km_add_row_d / _f: acc[i] += v[i] for i < n, in float64.
 *
 * km_csr_row_d / _f: acc[c] = sum over q of a[q] w[idx[q] * ldw + c] for
 * c < n, in float64: a sparse row times columns of a dense matrix.
 *
 * km_rbf_row_d: g[j] = 2**(exp2_scale * max(a + b[j] - 2 g[j], 0)) for
 * j < n, in place (exp2_scale = -gamma log2(e)): rbf kernel values of a
 * row from its dot products (BLAS computed them; the caller checked that
 * the expansion is exact enough).
 * km_poly_row_d: g[j] = (gamma g[j] + coef0)**degree for j < n, in place:
 * polynomial kernel values of a row from its dot products.
 *
 * km_cos_row_d / _f: v[i] = scale * cos(v[i] + b[i]) for i < n, in place:
 * the random Fourier features of rows whose products x W a BLAS GEMM
 * computed.
 *
 * The kernels are compiled from km_tile_kernel.h for every element type and
 * code path (km_instantiate.h); the first argument of each dispatcher is the
 * code path (kernelmaps/_engine/_runtime.pyx).
 */
#ifndef KM_TILE_H
#define KM_TILE_H

#include "km_simd.h"

enum {
    KM_RBF = 0,
    KM_LAPLACIAN = 1,
    KM_POLYNOMIAL = 2,
    KM_SQEUCLIDEAN = 3,
    KM_COS = 4,
    KM_ENERGY = 5
};

typedef struct {
    ptrdiff_t d;    /* features */
    ptrdiff_t ldy;  /* leading dimension of yt */
    ptrdiff_t ldo;  /* leading dimension of out */
    int kind;       /* KM_RBF, ... */
    int degree;     /* polynomial degree */
    int sum_rows;   /* write the sum of the rows only */
    double gamma;
    double coef0;
    const void *row_w; /* NULL, or the weights of the KM_MR rows (the
                        * element type): each row's values are multiplied
                        * by its weight */
    const void *row_n; /* KM_ENERGY: the norms of the KM_MR rows (the
                        * element type); the other kinds ignore it */
} km_tile_args;

/* km_tile_{d,f}_{base,avx2,avx512} and km_cos_row_{d,f}_{base,avx2,avx512}. */
#define KM_KERNEL "km_tile_kernel.h"
#include "km_instantiate.h"

static inline void km_tile_d(int isa, const km_tile_args *a, const double *x,
                             const double *yt, const double *phases,
                             ptrdiff_t ncols, double *out)
{
    KM_DISPATCH(isa, km_tile_d, (a, x, yt, phases, ncols, out));
}

static inline void km_tile_f(int isa, const km_tile_args *a, const float *x,
                             const float *yt, const float *phases,
                             ptrdiff_t ncols, float *out)
{
    KM_DISPATCH(isa, km_tile_f, (a, x, yt, phases, ncols, out));
}

static inline void km_cos_row_d(int isa, double *v, const double *b, ptrdiff_t n,
                                double scale)
{
    KM_DISPATCH(isa, km_cos_row_d, (v, b, n, scale));
}

static inline void km_cos_row_f(int isa, float *v, const float *b, ptrdiff_t n,
                                float scale)
{
    KM_DISPATCH(isa, km_cos_row_f, (v, b, n, scale));
}

static inline void km_rbf_row_d(int isa, double *g, const double *b, double a,
                                double exp2_scale, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_rbf_row_d, (g, b, a, exp2_scale, n));
}

static inline void km_poly_row_d(int isa, double *g, double gamma, double coef0,
                                 int degree, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_poly_row_d, (g, gamma, coef0, degree, n));
}

static inline void km_rbf_row_f(int isa, float *g, const float *b, float a,
                                float exp2_scale, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_rbf_row_f, (g, b, a, exp2_scale, n));
}

static inline void km_csr_row_d(int isa, double *acc, const double *a,
                                const int64_t *idx, ptrdiff_t nnz, const double *w,
                                ptrdiff_t ldw, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_csr_row_d, (acc, a, idx, nnz, w, ldw, n));
}

static inline void km_csr_row_f(int isa, double *acc, const float *a,
                                const int64_t *idx, ptrdiff_t nnz, const float *w,
                                ptrdiff_t ldw, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_csr_row_f, (acc, a, idx, nnz, w, ldw, n));
}

static inline void km_add_row_d(int isa, double *acc, const double *v, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_add_row_d, (acc, v, n));
}

static inline void km_add_row_f(int isa, double *acc, const float *v, ptrdiff_t n)
{
    KM_DISPATCH(isa, km_add_row_f, (acc, v, n));
}

/* Sum of v[0:n], two vector accumulators (16-byte vectors: native everywhere). */
static inline double km_sum_d(const double *v, ptrdiff_t n)
{
    km_vd_16 s0 = {0}, s1 = {0};
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += km_load_d_16(v + i);
        s1 += km_load_d_16(v + i + 2);
    }
    s0 += s1;
    double s = s0[0] + s0[1];
    for (; i < n; ++i) s += v[i];
    return s;
}

/* Sum of float32 v[0:n], accumulated in float64. */
static inline double km_sum_f(const float *v, ptrdiff_t n)
{
    typedef float km_vf2 __attribute__((vector_size(8)));
    km_vd_16 s0 = {0}, s1 = {0};
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        km_vf2 lo, hi;
        memcpy(&lo, v + i, sizeof lo);
        memcpy(&hi, v + i + 2, sizeof hi);
        s0 += __builtin_convertvector(lo, km_vd_16);
        s1 += __builtin_convertvector(hi, km_vd_16);
    }
    s0 += s1;
    double s = s0[0] + s0[1];
    for (; i < n; ++i) s += (double)v[i];
    return s;
}

#endif /* KM_TILE_H */
