/*
 * Tiles of additive kernels between histograms, for the exact histogram
 * kernels (_exact_impl.pyx).
 *
 * km_additive_d / _f compute, for KM_ADD_MR consecutive rows x (row-major,
 * d features each) and the columns [0, ncols) of yt (the transposed column
 * histograms: d rows with leading dimension ldy; ncols a multiple of
 * KM_ADD_NR_D / _F, the caller pads), the sum over the features of
 *   KM_ADD_CHI2:         x (y / (x + y))      (0 when x + y = 0)
 *   KM_ADD_INTERSECTION: min(x, y)
 *   KM_ADD_PRODUCT:      x y
 *   KM_ADD_XLOGX:        (x + y) log2(x + y)  (0 log 0 = 0)
 * into out (float64; KM_ADD_MR rows, leading dimension ldo). float32 input
 * is summed in float32 over runs of KM_ADD_RUN features, and the runs in
 * float64. Inputs are finite and >= 0 (the caller checks).
 */
#ifndef KM_ADDITIVE_H
#define KM_ADDITIVE_H

#include <float.h>

#include "km_simd.h"

enum { KM_ADD_CHI2 = 0, KM_ADD_INTERSECTION = 1, KM_ADD_PRODUCT = 2, KM_ADD_XLOGX = 3 };

#define KM_ADD_MR 4
#define KM_ADD_NR_D 8
#define KM_ADD_NR_F 16
#define KM_ADD_RUN 64

/* Instantiations: both element types, baseline and AVX2 targets. */
#define KM_ATTR
#define KM_SUFFIX base
#define KM_VB 16
#include "km_additive_body.h"
#undef KM_ATTR
#undef KM_SUFFIX
#undef KM_VB

#ifdef KM_DISPATCH_X86
#define KM_ATTR KM_TARGET_AVX2
#define KM_SUFFIX avx2
#define KM_VB 32
#include "km_additive_body.h"
#undef KM_ATTR
#undef KM_SUFFIX
#undef KM_VB
#endif

static inline void km_additive_d(int kind, const double *x, ptrdiff_t d,
                                 const double *yt, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(km_additive_d, (kind, x, d, yt, ldy, ncols, out, ldo));
}

static inline void km_additive_f(int kind, const float *x, ptrdiff_t d,
                                 const float *yt, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(km_additive_f, (kind, x, d, yt, ldy, ncols, out, ldo));
}

#endif /* KM_ADDITIVE_H */
