/*
 * One tile kernel, for the element type KM_T / vector type KM_V of width
 * KM_W, the target KM_ATTR and KM_PASS rows per register block (KM_MR is a
 * multiple of it). Included by km_tile_body.h only.
 */

KM_ATTR static void KM_TILE(const km_tile_args *a, const KM_T *x, const KM_T *xn,
                            const KM_T *yt, const KM_T *yn, ptrdiff_t ncols,
                            KM_T *out)
{
    const ptrdiff_t d = a->d, ldy = a->ldy, ldo = a->ldo;
    const KM_T g = (KM_T)a->gamma, c0 = (KM_T)a->coef0;
    /* exp(-gamma z) = 2**(gl z) */
    const KM_T gl = (KM_T)(-a->gamma * 1.4426950408889634);
    const int kind = a->kind, degree = a->degree, sum_rows = a->sum_rows;

    for (ptrdiff_t j = 0; j < ncols; j += 2 * KM_W) {
        const KM_V yn0 = KM_LOAD(yn + j), yn1 = KM_LOAD(yn + j + KM_W);
        KM_V rowsum0 = {0}, rowsum1 = {0};
        for (int r0 = 0; r0 < KM_MR; r0 += KM_PASS) {
            const KM_T *xr = x + r0 * d, *y = yt + j;
            KM_V s[KM_PASS][2];
            for (int r = 0; r < KM_PASS; ++r) s[r][0] = s[r][1] = (KM_V){0};

            if (kind == KM_LAPLACIAN) {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    const KM_V b0 = KM_LOAD(y), b1 = KM_LOAD(y + KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        s[r][0] += KM_ABS(b0 - xr[r * d + k]);
                        s[r][1] += KM_ABS(b1 - xr[r * d + k]);
                    }
                }
            } else {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    const KM_V b0 = KM_LOAD(y), b1 = KM_LOAD(y + KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        s[r][0] += xr[r * d + k] * b0;
                        s[r][1] += xr[r * d + k] * b1;
                    }
                }
            }

            for (int r = 0; r < KM_PASS; ++r) {
                KM_V v0 = s[r][0], v1 = s[r][1];
                const KM_T xnr = xn[r0 + r];
                switch (kind) {
                case KM_RBF:
                    v0 = KM_EXP2(gl * KM_POS((xnr + yn0) - 2 * v0));
                    v1 = KM_EXP2(gl * KM_POS((xnr + yn1) - 2 * v1));
                    break;
                case KM_LAPLACIAN:
                    v0 = KM_EXP2(gl * v0);
                    v1 = KM_EXP2(gl * v1);
                    break;
                case KM_POLYNOMIAL:
                    v0 = KM_POWI(g * v0 + c0, degree);
                    v1 = KM_POWI(g * v1 + c0, degree);
                    break;
                case KM_COS:
                    v0 = KM_COSINE(v0 + yn0);
                    v1 = KM_COSINE(v1 + yn1);
                    break;
                default: /* KM_SQEUCLIDEAN */
                    v0 = KM_POS((xnr + yn0) - 2 * v0);
                    v1 = KM_POS((xnr + yn1) - 2 * v1);
                    break;
                }
                if (sum_rows) {
                    rowsum0 += v0;
                    rowsum1 += v1;
                } else {
                    KM_STORE(out + (r0 + r) * ldo + j, v0);
                    KM_STORE(out + (r0 + r) * ldo + j + KM_W, v1);
                }
            }
        }
        if (sum_rows) {
            KM_STORE(out + j, rowsum0);
            KM_STORE(out + j + KM_W, rowsum1);
        }
    }
}
