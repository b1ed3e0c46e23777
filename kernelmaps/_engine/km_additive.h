/*
 * Tiles of additive kernels between histograms, for the exact histogram
 * kernels (_additive.pyx).
 *
 * km_additive_d / _f compute, for KM_MR consecutive rows x (row-major,
 * d features each) and the columns [0, ncols) of yt (the transposed column
 * histograms: d rows with leading dimension ldy; ncols a multiple of
 * KM_NR_D / KM_NR_F, the caller pads), the sum over the features of
 *   KM_ADD_CHI2:         x (y / (x + y))      (0 when x + y = 0)
 *   KM_ADD_INTERSECTION: min(x, y)
 *   KM_ADD_PRODUCT:      x y
 *   KM_ADD_JS:           x/2 log2((x + y)/x) + y/2 log2((x + y)/y)
 *                        (0 log 0 = 0; no cancellation, see the template)
 * into out (float64; KM_MR rows, leading dimension ldo). float32 input
 * is summed in float32 over runs of KM_ADD_RUN features, and the runs in
 * float64. Inputs are finite and >= 0 (the caller checks).
 *
 * The tiles are compiled from km_additive_kernel.h for every element type
 * and code path (km_instantiate.h); the first argument of each dispatcher
 * is the code path.
 */
#ifndef KM_ADDITIVE_H
#define KM_ADDITIVE_H

#include <float.h>

#include "km_simd.h"

enum { KM_ADD_CHI2 = 0, KM_ADD_INTERSECTION = 1, KM_ADD_PRODUCT = 2, KM_ADD_JS = 3 };

#define KM_ADD_RUN 64

/* km_additive_{d,f}_{base,avx2,avx512} */
#define KM_KERNEL "km_additive_kernel.h"
#include "km_instantiate.h"

static inline void km_additive_d(int isa, int kind, const double *x, ptrdiff_t d,
                                 const double *yt, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(isa, km_additive_d, (kind, x, d, yt, ldy, ncols, out, ldo));
}

static inline void km_additive_f(int isa, int kind, const float *x, ptrdiff_t d,
                                 const float *yt, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(isa, km_additive_f, (kind, x, d, yt, ldy, ncols, out, ldo));
}

#endif /* KM_ADDITIVE_H */
