/*
 * The k smallest squared distances along the rows and the columns of a
 * block of distances, for the kNN divergence engine (_knn.pyx).
 *
 * Each list of k smallest values is kept sorted in vector registers, one
 * list per vector lane (km_knn_lanes: the vectors of the code path, 64,
 * 32 or 16 bytes), and a new vector of distances goes through it with
 * k (min, max) steps: no branch, so its cost does not depend on how often a
 * distance enters a list (in random order, k (1 + log(m / k)) times out of
 * m: far too often for a compare-and-branch filter to predict).
 *
 * - km_knn_rows_d/_f: rowtop holds, for each of the nrows rows, w lane
 *   lists of k values (w = km_knn_lanes(isa, is_double); vector q of row r
 *   at rowtop + (r k + q) w); the row's k smallest overall are the k
 *   smallest of its lanes' lists (km_knn_lanes_kth_d/_f).
 * - km_knn_block_d/_f: as km_knn_cols, on a block it computes itself from
 *   the points (small sets in few dimensions; see km_knn_kernel.h).
 * - km_knn_cols_d/_f: coltop holds one list per column, value q of column j
 *   at coltop[q ldc + j]; ldc must leave room for a whole vector (64 bytes)
 *   past the last column (the extra lanes are updated with +inf: left
 *   unchanged).
 * Lists start filled with +inf; the distances are finite and >= 0.
 *
 * The sums of the estimator from the k-th distances, vectorised with the
 * exp2/log2 of km_simd.h (float64): km_knn_logsums_d (log sum exp(c u),
 * u = log rho - max(log nu, floor)).
 *
 * The selection is compiled from km_knn_kernel.h for every element type and
 * code path (km_instantiate.h); the first argument of each dispatcher is the
 * code path.
 */
#ifndef KM_KNN_H
#define KM_KNN_H

#include <math.h>

#include "km_simd.h"
#ifdef KM_DISPATCH_X86
#include <immintrin.h>
#endif

/* The most lanes of a list on any path (64-byte vectors): buffers sized
 * for these serve every path. */
#define KM_KW_D 8
#define KM_KW_F 16

/* Lanes of the lists on the code path `isa`. */
static inline int km_knn_lanes(int isa, int is_double)
{
#ifdef KM_DISPATCH_X86
    const int bytes = isa >= KM_ISA_AVX512 ? 64 : isa >= KM_ISA_AVX2 ? 32 : 16;
#else
    const int bytes = 16;
    (void)isa;
#endif
    return bytes / (is_double ? 8 : 4);
}

/* km_knn_{rows,cols}_{d,f}_{base,avx2,avx512} */
#define KM_KERNEL "km_knn_kernel.h"
#include "km_instantiate.h"

static inline void km_knn_rows_d(int isa, const double *dist, ptrdiff_t ldd,
                                 int nrows, ptrdiff_t ncols, int k, double *rowtop)
{
    KM_DISPATCH(isa, km_knn_rows_d, (dist, ldd, nrows, ncols, k, rowtop));
}

static inline void km_knn_rows_f(int isa, const float *dist, ptrdiff_t ldd,
                                 int nrows, ptrdiff_t ncols, int k, float *rowtop)
{
    KM_DISPATCH(isa, km_knn_rows_f, (dist, ldd, nrows, ncols, k, rowtop));
}

static inline void km_knn_cols_d(int isa, const double *dist, ptrdiff_t ldd,
                                 int nrows, ptrdiff_t ncols, int k, double *coltop,
                                 ptrdiff_t ldc)
{
    KM_DISPATCH(isa, km_knn_cols_d, (dist, ldd, nrows, ncols, k, coltop, ldc));
}

static inline void km_knn_cols_f(int isa, const float *dist, ptrdiff_t ldd,
                                 int nrows, ptrdiff_t ncols, int k, float *coltop,
                                 ptrdiff_t ldc)
{
    KM_DISPATCH(isa, km_knn_cols_f, (dist, ldd, nrows, ncols, k, coltop, ldc));
}

static inline void km_knn_block_d(int isa, const double *x, const double *yt,
                                  ptrdiff_t ldy, ptrdiff_t d, int nrows,
                                  ptrdiff_t ncols, int k, double *coltop,
                                  ptrdiff_t ldc)
{
    KM_DISPATCH(isa, km_knn_block_d, (x, yt, ldy, d, nrows, ncols, k, coltop, ldc));
}

static inline void km_knn_block_f(int isa, const float *x, const float *yt,
                                  ptrdiff_t ldy, ptrdiff_t d, int nrows,
                                  ptrdiff_t ncols, int k, float *coltop,
                                  ptrdiff_t ldc)
{
    KM_DISPATCH(isa, km_knn_block_f, (x, yt, ldy, d, nrows, ncols, k, coltop, ldc));
}

static inline void km_knn_logsums_d(int isa, const double *nu2,
                                    const double *log_rho, double floor,
                                    ptrdiff_t n, double *u, const double *coef,
                                    ptrdiff_t n_coef, double *out, ptrdiff_t stride)
{
    KM_DISPATCH(isa, km_knn_logsums_d,
                (nu2, log_rho, floor, n, u, coef, n_coef, out, stride));
}

/* The k-th smallest of the lane lists of one row (w <= 16 lanes of k sorted
 * values each, lane l's value q at top[q w + l]): k steps of a w-way merge,
 * each taking the smallest head (a lane is used up only at the last step). */
#define KM_LANES_KTH(name, T)                                                  \
    static inline double name(const T *top, int k, int w)                      \
    {                                                                          \
        int pos[16] = {0};                                                      \
        T head = 0;                                                            \
        for (int step = 0; step < k; ++step) {                                 \
            int lane = 0;                                                      \
            head = top[pos[0] * w];                                            \
            for (int l = 1; l < w; ++l) {                                      \
                const T h = top[pos[l] * w + l];                               \
                lane = h < head ? l : lane;                                    \
                head = h < head ? h : head;                                    \
            }                                                                  \
            ++pos[lane];                                                       \
        }                                                                      \
        return (double)head;                                                   \
    }
KM_LANES_KTH(km_knn_lanes_kth_d, double)
KM_LANES_KTH(km_knn_lanes_kth_f, float)
#undef KM_LANES_KTH

#endif /* KM_KNN_H */
