/*
 * One additive-kernel tile for one element type KM_T and one code path
 * (vectors KM_V of KM_W lanes, masks KM_M): a template of km_instantiate.h,
 * included by km_additive.h only. Register blocking: KM_MR rows x KM_NV
 * vectors of columns; one loop per kind (KM_ADD_LOOP), so the term is
 * inlined into it.
 */
#define KM_NAME KM_FN(km_additive)
#define KM_H(name) KM_CAT(KM_NAME, name)
/* unsigned lanes of the width of KM_T (km_simd_impl.h) */
#define KM_BITS KM_CAT(KM_PASTE(KM_PASTE(km_v, KM_TC), u), KM_VB)
#if KM_IS_DOUBLE
#define KM_JS_G km_js_g_d
#define KM_JS_DEGREE KM_JS_G_DEGREE_D
#define KM_JS_SCALE KM_JS_SCALE_D
#define KM_EXP_SHIFT 52
#define KM_EXP_BITS 0x4330000000000000LL /* 2**52 */
#define KM_NO_SIGN 0x7fffffffffffffffLL
#else
#define KM_JS_G km_js_g_f
#define KM_JS_DEGREE KM_JS_G_DEGREE_F
#define KM_JS_SCALE KM_JS_SCALE_F
#define KM_EXP_SHIFT 23
#define KM_EXP_BITS 0x4b000000 /* 2**23 */
#define KM_NO_SIGN 0x7fffffff
#endif

/* where(m, a, b) by bit selection. */
KM_ATTR KM_INLINE KM_V KM_H(where)(KM_M m, KM_V a, KM_V b)
{
    return (KM_V)((m & (KM_M)a) | (~m & (KM_M)b));
}

/* E(v) of km_additive.h: 2**52 (float32: 2**23) plus the exponent bits of
 * v >= 0, the sign bit cleared first (-0.0 is 0). The shift is on unsigned
 * lanes: a logical shift, one instruction on AVX2 (which has no 64-bit
 * arithmetic shift; emulating it made the AVX2 float64 tile 1.5x slower). */
KM_ATTR KM_INLINE KM_V KM_H(exponent)(KM_V v)
{
    return (KM_V)((((KM_BITS)v & KM_NO_SIGN) >> KM_EXP_SHIFT) | KM_EXP_BITS);
}

/* min(a, b) (both are >= 0, never NaN). */
KM_ATTR KM_INLINE KM_V KM_H(min)(KM_V a, KM_V b)
{
    return KM_H(where)(b < a, b, a);
}

/*
 * Twice the Jensen-Shannon terms (km_additive.h) of one feature of the
 * KM_MR rows of x (broadcast: x and its parts xp, planes xplane apart,
 * row stride d) against KM_NV vectors of columns y and their parts (E from
 * the bits of y; M and I loaded), added to s: a (log2(b / a) + g(a / b))
 * with a = min, b = max, a / b as (a KM_JS_SCALE) I(b): no division, and
 * 0 where a = 0 (I(0) = 0; the parts of 0 are finite). The KM_MR x KM_NV
 * terms step through the polynomial side by side: independent chains of
 * multiply-adds next to each other, for the out-of-order core (one term
 * after the other ran 1.3x slower on AVX2, the 4 or 8 chains could not
 * overlap).
 */
KM_ATTR KM_INLINE void KM_H(js)(const KM_T *x, const KM_T *xp, ptrdiff_t xplane,
                                ptrdiff_t d, const KM_V *y, const KM_V *ye,
                                const KM_V *ym, const KM_V *yi,
                                KM_V s[KM_MR][KM_NV])
{
    KM_V a[KM_MR][KM_NV], u[KM_MR][KM_NV], g[KM_MR][KM_NV];
    for (int r = 0; r < KM_MR; ++r) {
        /* x - 0 = x: a broadcast, no addition */
        const KM_V xv = x[r * d] - (KM_V){0};
        const KM_V xi = xp[2 * xplane + r * d] - (KM_V){0};
        for (int c = 0; c < KM_NV; ++c) {
            const KM_M less = xv < y[c];
            a[r][c] = KM_H(where)(less, xv, y[c]);
            u[r][c] = KM_OP(fma)(a[r][c] * (KM_T)KM_JS_SCALE,
                                 KM_H(where)(less, yi[c], xi), (KM_V){0} - (KM_T)0.5);
            g[r][c] = (KM_V){0} + KM_JS_G[0];
        }
    }
#pragma GCC unroll 32
    for (int i = 1; i <= KM_JS_DEGREE; ++i)
        for (int r = 0; r < KM_MR; ++r)
            for (int c = 0; c < KM_NV; ++c)
                g[r][c] = KM_OP(fma)(g[r][c], u[r][c], KM_JS_G[i] - (KM_V){0});
    for (int r = 0; r < KM_MR; ++r) {
        const KM_V xe = xp[r * d] - (KM_V){0};
        const KM_V xm = xp[xplane + r * d] - (KM_V){0};
        for (int c = 0; c < KM_NV; ++c) {
            const KM_V ratio = KM_OP(abs)((ye[c] - xe) + (ym[c] - xm)); /* log2(b/a) */
            s[r][c] = KM_OP(fma)(a[r][c], ratio + g[r][c], s[r][c]);
        }
    }
}

#if KM_IS_DOUBLE
/*
 * Twice the sum of the Jensen-Shannon terms of the pairs (a[p], b[p]),
 * p < n, all > 0 (the common non-zeros of two sparse histograms): with
 * lo = min, hi = max and r = lo / hi in (0, 1], each is lo (g(r) - log2 r)
 * (km_additive.h), both parts >= 0; r below the normal range is scaled by
 * 2**64 for km_log2, and floored at the smallest subnormal number where it
 * underflows to 0 (digits lost: the caller takes the pairs of rows whose
 * values are that far apart again where it matters, additive.py). The
 * pairs go in groups of 8, each lane of a group summed on its own and the
 * 8 sums added in order at the end, whatever the vector width: the same
 * bits on every path with FMA. Up to 8 values past n are read (their
 * lanes ignored).
 */
KM_ATTR static double KM_FN(km_js_pairs)(const double *a, const double *b,
                                         ptrdiff_t n)
{
    enum { W = KM_W, G = 8 / KM_W };
    KM_V lane, sum[G];
    for (int l = 0; l < W; ++l) lane[l] = (double)l;
    for (int g = 0; g < G; ++g) sum[g] = (KM_V){0};
    for (ptrdiff_t p = 0; p < n; p += 8) {
        for (int g = 0; g < G; ++g) {
            KM_V av, bv;
            memcpy(&av, a + p + g * W, sizeof av);
            memcpy(&bv, b + p + g * W, sizeof bv);
            const KM_M valid = lane < (double)(n - p - g * W), less = av < bv;
            /* lanes past n: lo = 0, hi = 1, a term of 0 */
            const KM_V lo = KM_H(where)(less & valid, av, KM_H(where)(valid, bv, (KM_V){0}));
            const KM_V hi = KM_H(where)(less & valid, bv,
                                        KM_H(where)(valid, av, (KM_V){0} + 1.0));
            KM_V r = lo / hi;
            r = KM_H(where)(r > 0.0, r, (KM_V){0} + 0x1p-1074);
            const KM_M tiny = r < 0x1p-1022;
            const KM_V l2 = KM_OP(log2)(KM_H(where)(tiny, r * 0x1p64, r))
                            - KM_H(where)(tiny, (KM_V){0} + 64.0, (KM_V){0});
            const KM_V u = r - 0.5;
            KM_V gv = (KM_V){0} + KM_JS_G[0];
            for (int i = 1; i <= KM_JS_DEGREE; ++i)
                gv = KM_OP(fma)(gv, u, KM_JS_G[i] - (KM_V){0});
            sum[g] = KM_OP(fma)(lo, gv - l2, sum[g]);
        }
    }
    double total = 0.0;
    for (int l = 0; l < 8; ++l) total += sum[l / W][l % W];
    return total;
}
#endif

KM_ATTR static void KM_NAME(int kind, const KM_T *x, const KM_T *xp,
                            ptrdiff_t xplane, ptrdiff_t d, const KM_T *yt,
                            const KM_T *yp, ptrdiff_t yplane, ptrdiff_t ldy,
                            ptrdiff_t ncols, double *out, ptrdiff_t ldo)
{
    enum { W = KM_W };
    /* float64 sums every feature in one run; float32 in runs. */
    const ptrdiff_t run = sizeof(KM_T) == 8 ? d : KM_ADD_RUN;

    for (ptrdiff_t j = 0; j < ncols; j += KM_NV * W) {
        for (int r = 0; r < KM_MR; ++r)
            for (int c = 0; c < KM_NV * W; ++c) out[r * ldo + j + c] = 0.0;
        for (ptrdiff_t k0 = 0; k0 < d; k0 += run) {
            const ptrdiff_t k1 = k0 + run < d ? k0 + run : d;
            KM_V s[KM_MR][KM_NV];
            for (int r = 0; r < KM_MR; ++r)
                for (int c = 0; c < KM_NV; ++c) s[r][c] = (KM_V){0};
#define KM_ADD_LOOP(NEXT) /* the new sum, of the sum acc and av, b */         \
    do {                                                                       \
        const KM_T *y = yt + k0 * ldy + j;                                     \
        for (ptrdiff_t k = k0; k < k1; ++k, y += ldy) {                        \
            KM_V bc[KM_NV];                                                    \
            for (int c = 0; c < KM_NV; ++c)                                    \
                bc[c] = KM_OP(load)(y + c * W);                                \
            for (int r = 0; r < KM_MR; ++r) {                                  \
                const KM_V av = x[r * d + k] - (KM_V){0}; /* broadcast */      \
                for (int c = 0; c < KM_NV; ++c) {                              \
                    const KM_V b = bc[c], acc = s[r][c];                       \
                    s[r][c] = (NEXT);                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    } while (0)
            switch (kind) {
            case KM_ADD_CHI2:
                /* x and yt hold 2 / x and 2 / y (km_additive.h) */
                KM_ADD_LOOP(acc + (KM_T)2 / (av + b));
                break;
            case KM_ADD_INTERSECTION:
                KM_ADD_LOOP(acc + KM_H(min)(av, b));
                break;
            case KM_ADD_PRODUCT:
                KM_ADD_LOOP(KM_OP(fma)(av, b, acc));
                break;
            default: { /* KM_ADD_JS: twice the terms, halved below */
                const KM_T *y = yt + k0 * ldy + j, *ym = yp + k0 * ldy + j;
                for (ptrdiff_t k = k0; k < k1; ++k, y += ldy, ym += ldy) {
                    /* a feature that is 0 in every row adds nothing (a term
                     * is 0 where x or y is): skipped, which on histograms
                     * with many zeros (bags of words) skips most features */
                    int nonzero = 0;
                    for (int r = 0; r < KM_MR; ++r) nonzero |= x[r * d + k] != 0;
                    if (!nonzero) continue;
                    KM_V bc[KM_NV], be[KM_NV], bm[KM_NV], bi[KM_NV];
                    for (int c = 0; c < KM_NV; ++c) {
                        bc[c] = KM_OP(load)(y + c * W);
                        bm[c] = KM_OP(load)(ym + c * W);
                        bi[c] = KM_OP(load)(ym + yplane + c * W);
                        be[c] = KM_H(exponent)(bc[c]);
                    }
                    KM_H(js)(x + k, xp + k, xplane, d, bc, be, bm, bi, s);
                }
                break;
            }
            }
#undef KM_ADD_LOOP
            const double half = kind == KM_ADD_JS ? 0.5 : 1.0;
            for (int r = 0; r < KM_MR; ++r)
                for (int c = 0; c < KM_NV; ++c)
                    for (int l = 0; l < W; ++l)
                        out[r * ldo + j + c * W + l] += half * (double)s[r][c][l];
        }
    }
}

/*
 * Whether one of the n values v is outside the band [low, high) of the
 * tiles (additive.py), 0 aside: 0 < v < low or v >= high; in vectors (the
 * tail one by one).
 */
KM_ATTR static int KM_FN(km_outside)(const KM_T *v, ptrdiff_t n, KM_T low, KM_T high)
{
    /* (each mask as unsigned lanes before they are combined: combined
     * masks made GCC normalise every lane on the baseline path, 3.5x
     * slower) */
    KM_BITS any = {0};
    ptrdiff_t k = 0;
    for (ptrdiff_t k1 = n - KM_W; k <= k1; k += KM_W) {
        KM_V x;
        memcpy(&x, v + k, sizeof x);
        any |= ((KM_BITS)(x > (KM_T)0) & (KM_BITS)(x < low)) | (KM_BITS)(x >= high);
    }
    int out = 0;
    for (int l = 0; l < KM_W; ++l) out |= any[l] != 0;
    for (; k < n; ++k) out |= ((v[k] > 0) & (v[k] < low)) | (v[k] >= high);
    return out;
}

#undef KM_H
#undef KM_BITS
#undef KM_NAME
#undef KM_JS_G
#undef KM_JS_DEGREE
#undef KM_JS_SCALE
#undef KM_EXP_SHIFT
#undef KM_EXP_BITS
#undef KM_NO_SIGN
