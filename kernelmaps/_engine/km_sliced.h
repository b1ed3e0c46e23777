/* The cost of one step of a sliced-Wasserstein merge over all directions:
 * the sum over l < L of |a[l] - b[l]|^p (mode 2: p = 2, mode 1: p = 1,
 * mode 0: any p), in float64, vectorised over the directions (an OpenMP
 * simd reduction: its order is fixed by the code, not by the threads). */
#ifndef KM_SLICED_H
#define KM_SLICED_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define KM_SW_COST(NAME, T)                                                   \
static inline __attribute__((always_inline)) double                           \
NAME(const T *a, const T *b, ptrdiff_t L, int mode,                           \
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

/* The sum over the L directions of W_p^p between the uniform distributions
 * on the rank-major sorted a (n ranks of L values) and b (m ranks): the
 * breakpoints (i + 1) / n and (j + 1) / m, the same for every direction,
 * walked once in integer units of 1 / (n m) (exact); equal sizes pair the
 * ranks directly. Compiled for AVX2 too (chosen at run time, the wheel
 * staying portable): the cost over the directions is its inner loop. */
#define KM_SW_PAIR(NAME, COST, T)                                             \
__attribute__((target_clones("avx2", "default")))                            \
static double NAME(const T *a, int64_t n, const T *b, int64_t m,              \
                   ptrdiff_t L, int mode, double p)                           \
{                                                                             \
    int64_t i = 0, j = 0, u = 0, t, ta = m, tb = n;                           \
    double acc = 0.0;                                                         \
    if (n == m) {                                                             \
        for (i = 0; i < n; i++)                                               \
            acc += COST(a + i * L, b + i * L, L, mode, p);                    \
        return acc / (double)n;                                               \
    }                                                                         \
    while (i < n && j < m) {                                                  \
        t = ta < tb ? ta : tb;                                                \
        acc += (double)(t - u) * COST(a + i * L, b + j * L, L, mode, p);      \
        u = t;                                                                \
        if (ta <= t) { i++; ta += m; }                                        \
        if (tb <= t) { j++; tb += n; }                                        \
    }                                                                         \
    return acc / ((double)n * (double)m);                                     \
}

KM_SW_PAIR(km_sw_pair_d, km_sw_cost_d, double)
KM_SW_PAIR(km_sw_pair_f, km_sw_cost_f, float)

static inline __attribute__((always_inline)) double
km_sw_one(double x, int mode, double p)
{
    return mode == 2 ? x * x : mode == 1 ? fabs(x) : pow(fabs(x), p);
}

/* The sum over the L directions of W_p^p between weighted distributions:
 * direction l of a holds n sorted values at a + l n with their cumulative
 * normalised weights at ca + l n (the last 1), and alike for b (m). Each
 * direction's merge of the two step quantile functions is walked n + m
 * times (each step moves past a breakpoint of one side or both; the steps
 * after the last add segments of length 0, their indices held at the last
 * value): a fixed count, so that KM_SW_CHAINS directions walk side by side,
 * their dependency chains (compare, advance, load) overlapping. */
#define KM_SW_CHAINS 4
#define KM_SW_WEIGHTED(NAME, T)                                               \
__attribute__((target_clones("avx2", "default")))                            \
static double NAME(const T *a, const double *ca, int64_t n, const T *b,       \
                   const double *cb, int64_t m, ptrdiff_t L, int mode,        \
                   double p)                                                  \
{                                                                             \
    double total = 0.0;                                                       \
    ptrdiff_t l0, q;                                                          \
    int64_t s, steps = n + m;                                                 \
    for (l0 = 0; l0 < L; l0 += KM_SW_CHAINS) {                                \
        ptrdiff_t width = L - l0 < KM_SW_CHAINS ? L - l0 : KM_SW_CHAINS;      \
        int64_t i[KM_SW_CHAINS] = {0}, j[KM_SW_CHAINS] = {0};                 \
        double u[KM_SW_CHAINS] = {0}, acc[KM_SW_CHAINS] = {0};                \
        for (s = 0; s < steps; s++) {                                         \
            for (q = 0; q < width; q++) {                                     \
                int64_t ii = i[q] < n ? i[q] : n - 1;                         \
                int64_t jj = j[q] < m ? j[q] : m - 1;                         \
                ptrdiff_t x0 = (l0 + q) * n + ii, y0 = (l0 + q) * m + jj;     \
                double x = ca[x0], y = cb[y0];                                \
                double t = x < y ? x : y;                                     \
                acc[q] += (t - u[q]) *                                        \
                    km_sw_one((double)a[x0] - (double)b[y0], mode, p);        \
                u[q] = t;                                                     \
                i[q] += x <= t;                                               \
                j[q] += y <= t;                                               \
            }                                                                 \
        }                                                                     \
        for (q = 0; q < width; q++)                                           \
            total += acc[q];                                                  \
    }                                                                         \
    return total;                                                             \
}

KM_SW_WEIGHTED(km_sw_weighted_d, double)
KM_SW_WEIGHTED(km_sw_weighted_f, float)

#endif
