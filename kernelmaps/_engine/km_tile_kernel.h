/*
 * The tile kernel and the cosine of rows, for one element type KM_T and one
 * code path (vectors KM_V of KM_W lanes): a template of km_instantiate.h,
 * included by km_tile.h only. KM_PASS rows share a register block (KM_MR is
 * a multiple of it).
 */
#define KM_PASS 4

KM_ATTR static void KM_FN(km_tile)(const km_tile_args *a, const KM_T *x,
                                   const KM_T *yt, const KM_T *phases,
                                   ptrdiff_t ncols, KM_T *out)
{
    const ptrdiff_t d = a->d, ldy = a->ldy, ldo = a->ldo;
    const KM_T g = (KM_T)a->gamma, c0 = (KM_T)a->coef0;
    /* exp(-gamma z) = 2**(gl z) */
    const KM_T gl = (KM_T)(-a->gamma * 1.4426950408889634);
    const int kind = a->kind, degree = a->degree, sum_rows = a->sum_rows;

    for (ptrdiff_t j = 0; j < ncols; j += 2 * KM_W) {
        const KM_V ph0 = KM_OP(load)(phases + j), ph1 = KM_OP(load)(phases + j + KM_W);
        KM_V rowsum0 = {0}, rowsum1 = {0};
        for (int r0 = 0; r0 < KM_MR; r0 += KM_PASS) {
            const KM_T *xr = x + r0 * d, *y = yt + j;
            KM_V s[KM_PASS][2];
            for (int r = 0; r < KM_PASS; ++r) s[r][0] = s[r][1] = (KM_V){0};

            if (kind == KM_LAPLACIAN) {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    const KM_V b0 = KM_OP(load)(y), b1 = KM_OP(load)(y + KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        s[r][0] += KM_OP(abs)(b0 - xr[r * d + k]);
                        s[r][1] += KM_OP(abs)(b1 - xr[r * d + k]);
                    }
                }
            } else if (kind == KM_RBF || kind == KM_SQEUCLIDEAN) {
                /* Sums of squared differences, not |x|^2 + |y|^2 - 2 <x, y>:
                 * no cancellation, and exactly 0 for coincident points. */
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    const KM_V b0 = KM_OP(load)(y), b1 = KM_OP(load)(y + KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        const KM_V t0 = b0 - xr[r * d + k], t1 = b1 - xr[r * d + k];
                        s[r][0] += t0 * t0;
                        s[r][1] += t1 * t1;
                    }
                }
            } else {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    const KM_V b0 = KM_OP(load)(y), b1 = KM_OP(load)(y + KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        s[r][0] += xr[r * d + k] * b0;
                        s[r][1] += xr[r * d + k] * b1;
                    }
                }
            }

            for (int r = 0; r < KM_PASS; ++r) {
                KM_V v0 = s[r][0], v1 = s[r][1];
                switch (kind) {
                case KM_RBF:
                case KM_LAPLACIAN:
                    v0 = KM_OP(exp2)(gl * v0);
                    v1 = KM_OP(exp2)(gl * v1);
                    break;
                case KM_POLYNOMIAL:
                    v0 = KM_OP(powi)(g * v0 + c0, degree);
                    v1 = KM_OP(powi)(g * v1 + c0, degree);
                    break;
                case KM_COS:
                    v0 = KM_OP(cos)(v0 + ph0);
                    v1 = KM_OP(cos)(v1 + ph1);
                    break;
                default: /* KM_SQEUCLIDEAN: the sums themselves */
                    break;
                }
                if (sum_rows) {
                    rowsum0 += v0;
                    rowsum1 += v1;
                } else {
                    KM_OP(store)(out + (r0 + r) * ldo + j, v0);
                    KM_OP(store)(out + (r0 + r) * ldo + j + KM_W, v1);
                }
            }
        }
        if (sum_rows) {
            KM_OP(store)(out + j, rowsum0);
            KM_OP(store)(out + j + KM_W, rowsum1);
        }
    }
}

/* v[i] = scale * cos(v[i] + b[i]) for i < n; the tail in a padded copy. */
KM_ATTR static void KM_FN(km_cos_row)(KM_T *v, const KM_T *b, ptrdiff_t n, KM_T scale)
{
    KM_T tv[KM_W], tb[KM_W];
    ptrdiff_t i = 0;
    for (; i + KM_W <= n; i += KM_W)
        KM_OP(store)(v + i, KM_OP(cos)(KM_OP(load)(v + i) + KM_OP(load)(b + i)) * scale);
    if (i < n) {
        memset(tv, 0, sizeof tv);
        memset(tb, 0, sizeof tb);
        memcpy(tv, v + i, (size_t)(n - i) * sizeof(KM_T));
        memcpy(tb, b + i, (size_t)(n - i) * sizeof(KM_T));
        KM_OP(store)(tv, KM_OP(cos)(KM_OP(load)(tv) + KM_OP(load)(tb)) * scale);
        memcpy(v + i, tv, (size_t)(n - i) * sizeof(KM_T));
    }
}

#undef KM_PASS
