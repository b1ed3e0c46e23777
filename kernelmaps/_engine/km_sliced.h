/* The cost of one step of a sliced-Wasserstein merge over all directions:
 * the sum over l < L of |a[l] - b[l]|^p (mode 2: p = 2, mode 1: p = 1,
 * mode 0: any p), in float64, vectorised over the directions (an OpenMP
 * simd reduction: its order is fixed by the code, not by the threads). */
#ifndef KM_SLICED_H
#define KM_SLICED_H

#include <math.h>
#include <stddef.h>

#define KM_SW_COST(NAME, T)                                                   \
static inline double NAME(const T *a, const T *b, ptrdiff_t L, int mode,      \
                          double p)                                           \
{                                                                             \
    double s = 0.0;                                                           \
    ptrdiff_t l;                                                              \
    if (mode == 2) {                                                          \
        _Pragma("omp simd reduction(+:s)")                                    \
        for (l = 0; l < L; l++) {                                             \
            double x = (double)a[l] - (double)b[l];                           \
            s += x * x;                                                       \
        }                                                                     \
    } else if (mode == 1) {                                                   \
        _Pragma("omp simd reduction(+:s)")                                    \
        for (l = 0; l < L; l++)                                               \
            s += fabs((double)a[l] - (double)b[l]);                           \
    } else {                                                                  \
        for (l = 0; l < L; l++)                                               \
            s += pow(fabs((double)a[l] - (double)b[l]), p);                   \
    }                                                                         \
    return s;                                                                 \
}

KM_SW_COST(km_sw_cost_d, double)
KM_SW_COST(km_sw_cost_f, float)

#endif
