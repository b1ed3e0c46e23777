/*
 * Tiles of additive kernels between histograms, for the exact histogram
 * kernels (_additive.pyx).
 *
 * km_additive_d / _f compute, for KM_MR consecutive rows x (row-major,
 * d features each) and the columns [0, ncols) of yt (the transposed column
 * histograms: d rows with leading dimension ldy; ncols a multiple of
 * KM_NR_D / KM_NR_F, the caller pads), the sum over the features of
 *   KM_ADD_CHI2:         x y / (x + y)        (0 when x or y is 0)
 *   KM_ADD_INTERSECTION: min(x, y)
 *   KM_ADD_PRODUCT:      x y
 *   KM_ADD_JS:           x/2 log2((x + y)/x) + y/2 log2((x + y)/y)
 *                        (0 log 0 = 0; see the form below)
 * into out (float64; KM_MR rows, leading dimension ldo). float32 input
 * is summed in float32 over runs of KM_ADD_RUN features, and the runs in
 * float64. Inputs are finite and >= 0 (the caller checks).
 *
 * KM_ADD_CHI2 takes x' = 2 / x and y' = 2 / y in place of x and y (+inf
 * for 0), and sums 2 / (x' + y') = x y / (x + y): one addition and one
 * division a term, and no intermediate overflows or underflows for any
 * pair of values from 2**-1021 (float32: 2**-125) up (x' and y' lose at
 * most a bit near the top of the range), so that each pair's value is
 * accurate to a few units in the last place at every scale, whatever the
 * other rows hold.
 *
 * Each kind is exact to rounding for the values of a band (additive.py:
 * `BANDS`), where no term, sum or part overflows or is subnormal; the
 * caller takes the pairs of rows with a value outside it again, in
 * float64 (float32 tiles) or from km_additive_robust (float64).
 *
 * KM_ADD_JS also reads parts of every value v, computed once per value
 * (km_log_exponent_*, km_log_mantissa_*, km_inverse_*): E, M and I beside
 * the rows x (planes of the same layout, xplane apart) and M and I beside
 * yt (yplane apart; E comes from the bits of y), with
 *   E(v) = 2**52 + (the biased exponent bits of v) (float32: 2**23 + ..),
 *   M(v) = log2(v) - (those bits - the bias),   I(v) = 1 / (s v),
 * so that log2(y / x) = (E(y) - E(x)) + (M(y) - M(x)): the exponents
 * subtract exactly and |M| < 1 for normal v (no error of the size of the
 * logs themselves), and the ratio of the smaller to the larger value is a
 * product (a s) I(b), no division. The other kinds take NULL.
 *
 * The tiles are compiled from km_additive_kernel.h for every element type
 * and code path (km_instantiate.h); the first argument of each dispatcher
 * is the code path.
 */
#ifndef KM_ADDITIVE_H
#define KM_ADDITIVE_H

#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "km_simd.h"

enum { KM_ADD_CHI2 = 0, KM_ADD_INTERSECTION = 1, KM_ADD_PRODUCT = 2, KM_ADD_JS = 3 };

#define KM_ADD_RUN 64

/*
 * The Jensen-Shannon term with a = min(x, y) > 0, b = max(x, y),
 * r = a / b in (0, 1]:
 *   x/2 log2((x + y)/x) + y/2 log2((x + y)/y)
 *     = a/2 (log2(b / a) + log2(1 + r)) + b/2 log2(1 + r)
 *     = a/2 (log2(b / a) + g(r)),   g(r) = (1 + r) log2(1 + r) / r,
 * both parts >= 0 (no cancellation), g in [1 / ln 2, 2]. The tiles take
 * log2(b / a) from the parts above (no logarithm per pair), and g from a
 * polynomial in u = r - 1/2 (Chebyshev interpolant on [0, 1] with mpmath,
 * in the power basis of u): relative error 7.7e-15 evaluated in float64,
 * degree 15; 3.3e-7 in float32, degree 6. Each term is >= 0, so the sum
 * keeps that relative error: over 100x inside the 1e-12 (float32: 1e-5)
 * the kernels promise, and 3 (float32: 2) multiply-adds fewer per term
 * than the full-precision fit.
 */
#define KM_JS_G_DEGREE_D 15
#define KM_JS_G_DEGREE_F 6
/* The coefficients of g, the highest degree first. */
static const double km_js_g_d[KM_JS_G_DEGREE_D + 1] = {
    2.8042997311972647e-05, -4.765429458256283e-05, 5.362942428843629e-05,
    -9.369632366158411e-05, 0.00017715373307906432, -0.00031697964560384616,
    0.0005746827241629125, -0.0010690558741880902, 0.002042429803958297,
    -0.004036849788818356, 0.008351237166119602, -0.018424458260452834,
    0.04483432907340444, -0.12928346386458978, 0.5455400788932975,
    1.7548875021634762,
};
static const float km_js_g_f[KM_JS_G_DEGREE_F + 1] = {
    -0.004551884718239307f, 0.009330620057880878f, -0.01835823431611061f,
    0.04470856487751007f, -0.1292855590581894f, 0.5455440282821655f,
    1.7548874616622925f,
};

/* The parts E(v), M(v) of log2(v) (above) of a value v >= 0, E(0) = 2**52
 * (float32: 2**23) and M(0) = 0; M from the fraction f in [1/2, 1) of
 * frexp, log2(v) = log2(f) + e, so that it has the error of log2(f) only. */
static inline int km_exponent_bits_d(double v)
{
    unsigned long long bits;
    memcpy(&bits, &v, sizeof bits);
    return (int)((bits >> 52) & 0x7ff); /* -0.0: 0, as +0.0 */
}
static inline int km_exponent_bits_f(float v)
{
    unsigned int bits;
    memcpy(&bits, &v, sizeof bits);
    return (int)((bits >> 23) & 0xff);
}
static inline double km_log_exponent_d(double v) { return 0x1p52 + km_exponent_bits_d(v); }
static inline float km_log_exponent_f(float v) { return 0x1p23f + km_exponent_bits_f(v); }
/* I(v) = 1 / (s v) with s = KM_JS_SCALE, I(0) = 0: finite and normal for
 * every v > 0 below 2**958 (float32: 2**94; the caller takes the pairs
 * with larger values again), so that a / b = (a s) I(b) within an ulp,
 * subnormal a and b included. */
#define KM_JS_SCALE_D 0x1p64
#define KM_JS_SCALE_F 0x1p32f
static inline double km_inverse_d(double v) { return v > 0 ? 1.0 / KM_JS_SCALE_D / v : 0.0; }
static inline float km_inverse_f(float v) { return v > 0 ? 1.0f / KM_JS_SCALE_F / v : 0.0f; }
static inline double km_log_mantissa_d(double v)
{
    int e;
    return v > 0 ? log2(frexp(v, &e)) + (e - (km_exponent_bits_d(v) - 1023)) : 0.0;
}
static inline float km_log_mantissa_f(float v)
{
    int e;
    return v > 0 ? (float)(log2(frexp(v, &e)) + (e - (km_exponent_bits_f(v) - 127)))
                 : 0.0f;
}

/*
 * The sum over the n pairs (a[p], b[p]) of positive values (the common
 * non-zeros of two histograms) of the one-dimensional kernel `kind`, as
 * the tiles sum it (KM_ADD_CHI2: a b / (a + b); KM_ADD_JS: the whole
 * term), at any magnitude, subnormal values included: for the pairs the
 * tiles cannot take (additive.py). Every term is at most 2**11 lo (lo =
 * min(a, b); KM_ADD_PRODUCT: a b) and is taken times 2**s, s = -(the
 * largest exponent of lo, or of a b) within +-1000 (an exact power of
 * two), from a form with no intermediate that overflows or underflows:
 *   KM_ADD_CHI2:         (lo 2**s) / (1 + lo / hi)
 *   KM_ADD_INTERSECTION: lo 2**s
 *   KM_ADD_PRODUCT:      (ma mb) 2**(ea + eb + s), a = ma 2**ea (frexp)
 *   KM_ADD_JS:           (lo 2**s) / 2 (log2(hi / lo) + g(lo / hi)),
 *                        log2(hi / lo) = (eh - el) + log2(mh) - log2(ml)
 * so that the sum is of normal numbers and the result is rounded once
 * more, by the final 2**-s (where it is subnormal, to the subnormal
 * spacing). Exactly symmetric in a and b; the same bits for the same
 * pairs in the same order.
 */
static inline double km_additive_robust(int kind, const double *a, const double *b,
                                        ptrdiff_t n)
{
    if (n == 0) return 0.0;
    int top = INT_MIN;
    for (ptrdiff_t p = 0; p < n; ++p) {
        int ea, eb;
        if (kind == KM_ADD_PRODUCT) {
            frexp(a[p], &ea);
            frexp(b[p], &eb);
            ea += eb;
        } else {
            frexp(a[p] < b[p] ? a[p] : b[p], &ea);
        }
        if (ea > top) top = ea;
    }
    const int s = top > 1000 ? -1000 : top < -1000 ? 1000 : -top;
    const double scale = ldexp(1.0, s);
    double sum = 0.0;
    for (ptrdiff_t p = 0; p < n; ++p) {
        const double lo = a[p] < b[p] ? a[p] : b[p], hi = a[p] < b[p] ? b[p] : a[p];
        double t;
        if (kind == KM_ADD_CHI2) {
            t = (lo * scale) / (1.0 + lo / hi);
        } else if (kind == KM_ADD_INTERSECTION) {
            t = lo * scale;
        } else if (kind == KM_ADD_PRODUCT) {
            int ea, eb;
            const double ma = frexp(a[p], &ea), mb = frexp(b[p], &eb);
            t = ldexp(ma * mb, ea + eb + s);
        } else {
            int el, eh;
            const double ml = frexp(lo, &el), mh = frexp(hi, &eh);
            const double ratio = (double)(eh - el) + (log2(mh) - log2(ml));
            const double r = lo / hi; /* g(r) = (1 + r) log2(1 + r) / r */
            const double g = r > 0 ? (1.0 + r) * (log1p(r) / r) / 0.6931471805599453
                                   : 1.0 / 0.6931471805599453;
            t = 0.5 * (lo * scale) * (ratio + g);
        }
        sum += t;
    }
    return ldexp(sum, -s);
}

/* km_additive_{d,f}_{base,avx2,avx512} */
#define KM_KERNEL "km_additive_kernel.h"
#include "km_instantiate.h"

static inline void km_additive_d(int isa, int kind, const double *x,
                                 const double *xp, ptrdiff_t xplane, ptrdiff_t d,
                                 const double *yt, const double *yp,
                                 ptrdiff_t yplane, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(isa, km_additive_d,
                (kind, x, xp, xplane, d, yt, yp, yplane, ldy, ncols, out, ldo));
}

/* Twice the Jensen-Shannon sum of n pairs of positive values (km_js_pairs
 * of km_additive_kernel.h); a and b readable for 8 values past n. */
static inline double km_js_pairs_d(int isa, const double *a, const double *b,
                                   ptrdiff_t n)
{
    return KM_DISPATCH_VALUE(isa, km_js_pairs_d, (a, b, n));
}

/* Whether one of the n values v is outside [low, high), 0 aside (km_outside
 * of km_additive_kernel.h, on the code path `isa`). */
static inline int km_outside_d(int isa, const double *v, ptrdiff_t n, double low,
                               double high)
{
    return KM_DISPATCH_VALUE(isa, km_outside_d, (v, n, low, high));
}
static inline int km_outside_f(int isa, const float *v, ptrdiff_t n, float low,
                               float high)
{
    return KM_DISPATCH_VALUE(isa, km_outside_f, (v, n, low, high));
}

static inline void km_additive_f(int isa, int kind, const float *x,
                                 const float *xp, ptrdiff_t xplane, ptrdiff_t d,
                                 const float *yt, const float *yp,
                                 ptrdiff_t yplane, ptrdiff_t ldy, ptrdiff_t ncols,
                                 double *out, ptrdiff_t ldo)
{
    KM_DISPATCH(isa, km_additive_f,
                (kind, x, xp, xplane, d, yt, yp, yplane, ldy, ncols, out, ldo));
}

#endif /* KM_ADDITIVE_H */
