/*
 * The sliced-Wasserstein merges of pairs of sets (kernelmaps/_engine/_sliced.pyx).
 *
 * km_sw_pair_d / _f: the sum over the L directions of W_p^p between the
 * uniform distributions on the rank-major sorted a (n ranks of L values) and
 * b (m ranks), the cost of each step of the merge vectorised over the
 * directions (mode 2: p = 2, mode 1: p = 1).
 * km_sw_weighted_d / _f: the same between weighted distributions, from the
 * direction-major sorted values and their cumulative normalised weights.
 * km_sw_pair_any_d / _f, km_sw_weighted_any_d / _f: the same merges at any
 * other p, in two passes: the largest difference of the pair, then the sums
 * of the powers of the differences over it (km_sliced_kernel.h).
 *
 * The kernels are compiled from km_sliced_kernel.h for every element type
 * and code path (km_instantiate.h); the first argument of each dispatcher is
 * the code path (`isa_level` of kernelmaps/_engine/_runtime.pyx). Each
 * result is computed by one call, in an order fixed by the code path: the
 * results do not depend on the threads.
 */
#ifndef KM_SLICED_H
#define KM_SLICED_H

#include <math.h>
#include <stdint.h>

#include "km_simd.h"

/* Directions walked side by side by the weighted merge. */
#define KM_SW_CHAINS 4

/* km_sw_{pair,weighted}{,_any}_{d,f}_{base,avx2,avx512}. */
#define KM_KERNEL "km_sliced_kernel.h"
#include "km_instantiate.h"

static inline double km_sw_pair_d(int isa, const double *a, int64_t n, const double *b,
                                  int64_t m, ptrdiff_t L, int mode)
{
    return KM_DISPATCH_VALUE(isa, km_sw_pair_d, (a, n, b, m, L, mode));
}

static inline double km_sw_pair_f(int isa, const float *a, int64_t n, const float *b,
                                  int64_t m, ptrdiff_t L, int mode)
{
    return KM_DISPATCH_VALUE(isa, km_sw_pair_f, (a, n, b, m, L, mode));
}

static inline double km_sw_weighted_d(int isa, const double *a, const double *ca,
                                      int64_t n, const double *b, const double *cb,
                                      int64_t m, ptrdiff_t L, int mode)
{
    return KM_DISPATCH_VALUE(isa, km_sw_weighted_d, (a, ca, n, b, cb, m, L, mode));
}

static inline double km_sw_weighted_f(int isa, const float *a, const double *ca,
                                      int64_t n, const float *b, const double *cb,
                                      int64_t m, ptrdiff_t L, int mode)
{
    return KM_DISPATCH_VALUE(isa, km_sw_weighted_f, (a, ca, n, b, cb, m, L, mode));
}

static inline double km_sw_pair_any_d(int isa, const double *a, int64_t n, const double *b,
                                      int64_t m, ptrdiff_t L, double p, int first,
                                      double top, double *A, double *U)
{
    return KM_DISPATCH_VALUE(isa, km_sw_pair_any_d, (a, n, b, m, L, p, first, top, A, U));
}

static inline double km_sw_pair_any_f(int isa, const float *a, int64_t n, const float *b,
                                      int64_t m, ptrdiff_t L, double p, int first,
                                      double top, double *A, double *U)
{
    return KM_DISPATCH_VALUE(isa, km_sw_pair_any_f, (a, n, b, m, L, p, first, top, A, U));
}

static inline double km_sw_weighted_any_d(int isa, const double *a, const double *ca,
                                          int64_t n, const double *b, const double *cb,
                                          int64_t m, ptrdiff_t L, double p, int first,
                                          double top, double *A, double *U)
{
    return KM_DISPATCH_VALUE(isa, km_sw_weighted_any_d,
                             (a, ca, n, b, cb, m, L, p, first, top, A, U));
}

static inline double km_sw_weighted_any_f(int isa, const float *a, const double *ca,
                                          int64_t n, const float *b, const double *cb,
                                          int64_t m, ptrdiff_t L, double p, int first,
                                          double top, double *A, double *U)
{
    return KM_DISPATCH_VALUE(isa, km_sw_weighted_any_f,
                             (a, ca, n, b, cb, m, L, p, first, top, A, U));
}

#endif /* KM_SLICED_H */
