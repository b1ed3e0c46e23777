/*
 * One additive-kernel tile for one element type KM_T and one code path
 * (vectors KM_V of KM_W lanes, masks KM_M): a template of km_instantiate.h,
 * included by km_additive.h only. Register blocking: KM_MR rows x KM_NV
 * vectors of columns; one loop per kind (KM_ADD_LOOP), so the term is
 * inlined into it.
 */
#define KM_NAME KM_FN(km_additive)
#define KM_H(name) KM_CAT(KM_NAME, name)
#if KM_IS_DOUBLE
#define KM_TINY DBL_MIN
#define KM_SUBNORMAL_MIN 0x1p-1074
#else
#define KM_TINY FLT_MIN
#define KM_SUBNORMAL_MIN 0x1p-149f
#endif

/* where(m, a, b) by bit selection. */
KM_ATTR KM_INLINE KM_V KM_H(where)(KM_M m, KM_V a, KM_V b)
{
    return (KM_V)((m & (KM_M)a) | (~m & (KM_M)b));
}

/* min(a, b) (both are >= 0, never NaN). */
KM_ATTR KM_INLINE KM_V KM_H(min)(KM_V a, KM_V b)
{
    return KM_H(where)(b < a, b, a);
}

/* log2(z) for finite z > 0, subnormal z included (scaled by 2**64). */
KM_ATTR KM_INLINE KM_V KM_H(log2)(KM_V z)
{
    const KM_M small = z < KM_TINY;
    const KM_V scaled = KM_H(where)(small, z * (KM_T)0x1p64, z);
    return KM_OP(log2)(scaled) - KM_H(where)(small, (KM_V){0} + 64, (KM_V){0});
}

/*
 * The Jensen-Shannon term x/2 log2((x + y)/x) + y/2 log2((x + y)/y) of
 * x, y >= 0, without cancellation: with a = min, b = max, s = a + b,
 *   a log2(s / a) = -a log2(a / s)    (a / s in (0, 1/2]: no overflow)
 *   b log2(s / b) = b log2(1 + a / b) = a log2(u) / (u - 1)
 * with u = 1 + a / b rounded (Kahan's log1p: the rounding of u cancels;
 * the limit 1 / ln 2 when u = 1). Both parts are >= 0; 0 when a = 0.
 */
KM_ATTR KM_INLINE KM_V KM_H(js)(KM_V x, KM_V y)
{
    const KM_V one = (KM_V){0} + 1;
    const KM_M less = x < y;
    const KM_V lo = KM_H(where)(less, x, y), hi = KM_H(where)(less, y, x);
    const KM_M pos = lo > 0;
    const KM_V a = KM_H(where)(pos, lo, one), b = KM_H(where)(pos, hi, one);
    const KM_V p = a / (a + b), u = one + a / b;
    const KM_M grown = u > one;
    const KM_V u1 = KM_H(where)(grown, u, one + one);
    const KM_V ratio = KM_H(where)(grown, KM_OP(log2)(u1) / (u1 - one),
                                   (KM_V){0} + (KM_T)1.4426950408889634);
    const KM_V lp = KM_H(log2)(KM_H(where)(p > 0, p, (KM_V){0} + KM_SUBNORMAL_MIN));
    return KM_H(where)(pos, (KM_T)0.5 * a * (ratio - lp), (KM_V){0});
}

KM_ATTR static void KM_NAME(int kind, const KM_T *x, ptrdiff_t d, const KM_T *yt,
                            ptrdiff_t ldy, ptrdiff_t ncols, double *out,
                            ptrdiff_t ldo)
{
    enum { W = KM_W };
    /* float64 sums every feature in one run; float32 in runs. */
    const ptrdiff_t run = sizeof(KM_T) == 8 ? d : KM_ADD_RUN;
    const KM_T tiny = KM_TINY;

    for (ptrdiff_t j = 0; j < ncols; j += KM_NV * W) {
        for (int r = 0; r < KM_MR; ++r)
            for (int c = 0; c < KM_NV * W; ++c) out[r * ldo + j + c] = 0.0;
        for (ptrdiff_t k0 = 0; k0 < d; k0 += run) {
            const ptrdiff_t k1 = k0 + run < d ? k0 + run : d;
            KM_V s[KM_MR][KM_NV];
            for (int r = 0; r < KM_MR; ++r)
                for (int c = 0; c < KM_NV; ++c) s[r][c] = (KM_V){0};
#define KM_ADD_LOOP(TERM)                                                      \
    do {                                                                       \
        const KM_T *y = yt + k0 * ldy + j;                                     \
        for (ptrdiff_t k = k0; k < k1; ++k, y += ldy) {                        \
            KM_V bc[KM_NV];                                                    \
            for (int c = 0; c < KM_NV; ++c)                                    \
                memcpy(&bc[c], y + c * W, sizeof(KM_V));                      \
            for (int r = 0; r < KM_MR; ++r) {                                  \
                const KM_V av = (KM_V){0} + x[r * d + k];                      \
                for (int c = 0; c < KM_NV; ++c) {                              \
                    const KM_V b = bc[c];                                      \
                    s[r][c] += (TERM);                                         \
                }                                                              \
            }                                                                  \
        }                                                                      \
    } while (0)
            switch (kind) {
            case KM_ADD_CHI2:
                /* + tiny: 0 / tiny = 0, and x + y is unchanged unless it is
                 * below the normal range; y / (x + y) <= 1 cannot overflow. */
                KM_ADD_LOOP(av * (b / ((av + b) + tiny)));
                break;
            case KM_ADD_INTERSECTION:
                KM_ADD_LOOP(KM_H(min)(av, b));
                break;
            case KM_ADD_PRODUCT:
                KM_ADD_LOOP(av * b);
                break;
            default: /* KM_ADD_JS */
                KM_ADD_LOOP(KM_H(js)(av, b));
                break;
            }
#undef KM_ADD_LOOP
            for (int r = 0; r < KM_MR; ++r)
                for (int c = 0; c < KM_NV; ++c)
                    for (int l = 0; l < W; ++l)
                        out[r * ldo + j + c * W + l] += (double)s[r][c][l];
        }
    }
}

#undef KM_H
#undef KM_NAME
#undef KM_TINY
#undef KM_SUBNORMAL_MIN
