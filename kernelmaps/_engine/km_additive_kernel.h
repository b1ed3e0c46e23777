/*
 * One additive-kernel tile for one element type KM_T and one code path
 * (vectors KM_V of KM_W lanes, masks KM_M): a template of km_instantiate.h,
 * included by km_additive.h only. Register blocking: KM_MR rows x 2 vectors
 * of columns; one loop per kind (KM_ADD_LOOP), so the term is inlined into
 * it.
 */
#define KM_NAME KM_FN(km_additive)
#define KM_H(name) KM_CAT(KM_NAME, name)
#if KM_IS_DOUBLE
#define KM_TINY DBL_MIN
#else
#define KM_TINY FLT_MIN
#endif

/* min(a, b) by bit selection (both are >= 0, never NaN). */
KM_ATTR KM_INLINE KM_V KM_H(min)(KM_V a, KM_V b)
{
    const KM_M less = b < a;
    return (KM_V)((less & (KM_M)b) | (~less & (KM_M)a));
}

KM_ATTR static void KM_NAME(int kind, const KM_T *x, ptrdiff_t d, const KM_T *yt,
                            ptrdiff_t ldy, ptrdiff_t ncols, double *out,
                            ptrdiff_t ldo)
{
    enum { W = KM_W };
    /* float64 sums every feature in one run; float32 in runs. */
    const ptrdiff_t run = sizeof(KM_T) == 8 ? d : KM_ADD_RUN;
    const KM_T tiny = KM_TINY;

    for (ptrdiff_t j = 0; j < ncols; j += 2 * W) {
        for (int r = 0; r < KM_MR; ++r)
            for (int c = 0; c < 2 * W; ++c) out[r * ldo + j + c] = 0.0;
        for (ptrdiff_t k0 = 0; k0 < d; k0 += run) {
            const ptrdiff_t k1 = k0 + run < d ? k0 + run : d;
            KM_V s[KM_MR][2];
            for (int r = 0; r < KM_MR; ++r) s[r][0] = s[r][1] = (KM_V){0};
#define KM_ADD_LOOP(TERM)                                                      \
    do {                                                                       \
        const KM_T *y = yt + k0 * ldy + j;                                     \
        for (ptrdiff_t k = k0; k < k1; ++k, y += ldy) {                        \
            KM_V b0, b1;                                                       \
            memcpy(&b0, y, sizeof b0);                                         \
            memcpy(&b1, y + W, sizeof b1);                                     \
            for (int r = 0; r < KM_MR; ++r) {                              \
                const KM_T a = x[r * d + k];                                   \
                const KM_V av = (KM_V){0} + a;                                 \
                KM_V b = b0;                                                   \
                s[r][0] += (TERM);                                             \
                b = b1;                                                        \
                s[r][1] += (TERM);                                             \
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
            default: /* KM_ADD_XLOGX */
                KM_ADD_LOOP(((av + b) + tiny) * KM_OP(log2)((av + b) + tiny));
                break;
            }
#undef KM_ADD_LOOP
            for (int r = 0; r < KM_MR; ++r)
                for (int c = 0; c < 2; ++c)
                    for (int l = 0; l < W; ++l)
                        out[r * ldo + j + c * W + l] += (double)s[r][c][l];
        }
    }
}

#undef KM_H
#undef KM_NAME
#undef KM_TINY
