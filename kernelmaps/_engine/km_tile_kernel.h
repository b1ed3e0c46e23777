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
    /* exp(-gamma z) = 2**(exp2_scale z) */
    const KM_T exp2_scale = (KM_T)(-a->gamma * 1.4426950408889634);
    const int kind = a->kind, degree = a->degree, sum_rows = a->sum_rows;
    const KM_T *row_w = (const KM_T *)a->row_w;
    const KM_T *row_n = kind == KM_ENERGY ? (const KM_T *)a->row_n : NULL;

    for (ptrdiff_t j = 0; j < ncols; j += KM_NV * KM_W) {
        KM_V ph[KM_NV], rowsum[KM_NV];
        for (int c = 0; c < KM_NV; ++c) {
            ph[c] = KM_OP(load)(phases + j + c * KM_W);
            rowsum[c] = (KM_V){0};
        }
        for (int r0 = 0; r0 < KM_MR; r0 += KM_PASS) {
            const KM_T *xr = x + r0 * d, *y = yt + j;
            KM_V s[KM_PASS][KM_NV];
            for (int r = 0; r < KM_PASS; ++r)
                for (int c = 0; c < KM_NV; ++c) s[r][c] = (KM_V){0};

            if (kind == KM_LAPLACIAN) {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    KM_V b[KM_NV];
                    for (int c = 0; c < KM_NV; ++c) b[c] = KM_OP(load)(y + c * KM_W);
                    for (int r = 0; r < KM_PASS; ++r)
                        for (int c = 0; c < KM_NV; ++c)
                            s[r][c] += KM_OP(abs)(b[c] - xr[r * d + k]);
                }
            } else if (kind == KM_RBF || kind == KM_SQEUCLIDEAN || kind == KM_ENERGY) {
                /* Sums of squared differences, not |x|^2 + |y|^2 - 2 <x, y>:
                 * no cancellation, and exactly 0 for coincident points. */
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    KM_V b[KM_NV];
                    for (int c = 0; c < KM_NV; ++c) b[c] = KM_OP(load)(y + c * KM_W);
                    for (int r = 0; r < KM_PASS; ++r)
                        for (int c = 0; c < KM_NV; ++c) {
                            const KM_V t = b[c] - xr[r * d + k];
                            s[r][c] = KM_OP(fma)(t, t, s[r][c]);
                        }
                }
            } else {
                for (ptrdiff_t k = 0; k < d; ++k, y += ldy) {
                    KM_V b[KM_NV];
                    for (int c = 0; c < KM_NV; ++c) b[c] = KM_OP(load)(y + c * KM_W);
                    for (int r = 0; r < KM_PASS; ++r) {
                        const KM_V a = xr[r * d + k] - (KM_V){0}; /* broadcast */
                        for (int c = 0; c < KM_NV; ++c)
                            s[r][c] = KM_OP(fma)(a, b[c], s[r][c]);
                    }
                }
            }

            if (kind == KM_ENERGY) /* the norms: row_n and the phases */
                for (int r = 0; r < KM_PASS; ++r)
                    for (int c = 0; c < KM_NV; ++c)
                        s[r][c] = KM_OP(pos)(((row_n[r0 + r] + ph[c]) - KM_OP(sqrt)(s[r][c]))
                                             * (KM_T)0.5);
            for (int r = 0; r < KM_PASS; ++r) {
                for (int c = 0; c < KM_NV; ++c) {
                    KM_V v = s[r][c];
                    switch (kind) {
                    case KM_RBF:
                    case KM_LAPLACIAN:
                        v = KM_OP(exp2)(exp2_scale * v);
                        break;
                    case KM_POLYNOMIAL:
                        v = KM_OP(powi)(KM_OP(fma)(g - (KM_V){0}, v, c0 - (KM_V){0}),
                                        degree);
                        break;
                    case KM_COS:
                        v = KM_OP(cos)(v + ph[c]);
                        break;
                    default: /* KM_SQEUCLIDEAN: the sums themselves; KM_ENERGY: done */
                        break;
                    }
                    if (row_w)
                        v *= row_w[r0 + r];
                    if (sum_rows)
                        rowsum[c] += v;
                    else
                        KM_OP(store)(out + (r0 + r) * ldo + j + c * KM_W, v);
                }
            }
        }
        if (sum_rows)
            for (int c = 0; c < KM_NV; ++c) KM_OP(store)(out + j + c * KM_W, rowsum[c]);
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

/* g[j] = 2**(exp2_scale * max(a + b[j] - 2 g[j], 0)) for j < n, in place: the rbf
 * kernel values of one row from its dot products g with the columns, its
 * squared norm a and theirs b (exp2_scale = -gamma log2(e)); the tail in a padded
 * copy. */
KM_ATTR static void KM_FN(km_rbf_row)(KM_T *g, const KM_T *b, KM_T a, KM_T exp2_scale,
                                      ptrdiff_t n)
{
    KM_T tg[KM_W], tb[KM_W];
    ptrdiff_t j = 0;
    for (; j + KM_W <= n; j += KM_W) {
        const KM_V z = KM_OP(pos)((KM_OP(load)(b + j) + a) - 2 * KM_OP(load)(g + j));
        KM_OP(store)(g + j, KM_OP(exp2)(exp2_scale * z));
    }
    if (j < n) {
        memset(tg, 0, sizeof tg);
        memset(tb, 0, sizeof tb);
        memcpy(tg, g + j, (size_t)(n - j) * sizeof(KM_T));
        memcpy(tb, b + j, (size_t)(n - j) * sizeof(KM_T));
        const KM_V z = KM_OP(pos)((KM_OP(load)(tb) + a) - 2 * KM_OP(load)(tg));
        KM_OP(store)(tg, KM_OP(exp2)(exp2_scale * z));
        memcpy(g + j, tg, (size_t)(n - j) * sizeof(KM_T));
    }
}

/* g[j] = (gamma g[j] + coef0) ** degree for j < n, in place: polynomial
 * kernel values of one row from its dot products g; the tail in a padded
 * copy. */
KM_ATTR static void KM_FN(km_poly_row)(KM_T *g, KM_T gamma, KM_T coef0, int degree,
                                       ptrdiff_t n)
{
    KM_T tg[KM_W];
    const KM_V gv = gamma - (KM_V){0}, cv = coef0 - (KM_V){0};
    ptrdiff_t j = 0;
    for (; j + KM_W <= n; j += KM_W)
        KM_OP(store)(g + j, KM_OP(powi)(KM_OP(fma)(gv, KM_OP(load)(g + j), cv), degree));
    if (j < n) {
        memset(tg, 0, sizeof tg);
        memcpy(tg, g + j, (size_t)(n - j) * sizeof(KM_T));
        KM_OP(store)(tg, KM_OP(powi)(KM_OP(fma)(gv, KM_OP(load)(tg), cv), degree));
        memcpy(g + j, tg, (size_t)(n - j) * sizeof(KM_T));
    }
}

/* acc[c] = sum over q < nnz of a[q] * w[idx[q] * ldw + c] for c < n, in
 * float64: a sparse row times a block of columns of a dense matrix,
 * KM_CSR_ACC vectors of sums held in registers across the nonzeros, in the
 * order of q (float32: in float32 over runs of KM_CSR_RUN nonzeros, then in
 * float64). */
#define KM_CSR_ACC 8
#define KM_CSR_RUN 16
#define KM_CSR_AHEAD 8
/* The cache lines of a block of KM_CSR_ACC vectors of float64 columns. */
#define KM_CSR_PREFETCH(p)                                                 \
    for (int line = 0; line < KM_CSR_ACC * KM_VB / 8 * (int)sizeof(KM_T); line += 64) \
        __builtin_prefetch((const char *)(p) + line)
KM_ATTR static void KM_FN(km_csr_row)(double *acc, const KM_T *a, const int64_t *idx,
                                      ptrdiff_t nnz, const KM_T *w, ptrdiff_t ldw,
                                      ptrdiff_t n)
{
    typedef double km_wide __attribute__((vector_size(KM_VB)));
    typedef KM_T km_narrow __attribute__((vector_size(KM_VB * sizeof(KM_T) / 8)));
    const ptrdiff_t lanes = KM_VB / 8;
    ptrdiff_t c = 0;
#define KM_FMA_WIDE KM_CAT(km_fma_d, KM_VB) /* on km_wide */
#if KM_IS_DOUBLE
    for (; c + KM_CSR_ACC * lanes <= n; c += KM_CSR_ACC * lanes) {
        km_wide s[KM_CSR_ACC];
        for (int v = 0; v < KM_CSR_ACC; ++v) s[v] = (km_wide){0};
        for (ptrdiff_t q = 0; q < nnz; ++q) {
            const KM_T *row = w + idx[q] * ldw + c;
            const km_wide aq = (double)a[q] - (km_wide){0};
            if (q + KM_CSR_AHEAD < nnz) /* rows in a random order */
                KM_CSR_PREFETCH(w + idx[q + KM_CSR_AHEAD] * ldw + c);
            for (int v = 0; v < KM_CSR_ACC; ++v) {
                km_narrow x;
                memcpy(&x, row + v * lanes, sizeof x);
                s[v] = KM_FMA_WIDE(aq, __builtin_convertvector(x, km_wide), s[v]);
            }
        }
        memcpy(acc + c, s, sizeof s);
    }
#else
    /* float32: runs of KM_CSR_RUN nonzeros summed in float32 (twice the
     * lanes), each run's sums then added in float64. */
    for (; c + KM_CSR_ACC * lanes <= n; c += KM_CSR_ACC * lanes) {
        km_wide s[KM_CSR_ACC];
        for (int v = 0; v < KM_CSR_ACC; ++v) s[v] = (km_wide){0};
        for (ptrdiff_t q0 = 0; q0 < nnz; q0 += KM_CSR_RUN) {
            const ptrdiff_t q1 = q0 + KM_CSR_RUN < nnz ? q0 + KM_CSR_RUN : nnz;
            KM_V r[KM_CSR_ACC / 2];
            for (int v = 0; v < KM_CSR_ACC / 2; ++v) r[v] = (KM_V){0};
            for (ptrdiff_t q = q0; q < q1; ++q) {
                const KM_T *row = w + idx[q] * ldw + c;
                if (q + KM_CSR_AHEAD < nnz)
                    KM_CSR_PREFETCH(w + idx[q + KM_CSR_AHEAD] * ldw + c);
                const KM_V aq = a[q] - (KM_V){0};
                for (int v = 0; v < KM_CSR_ACC / 2; ++v)
                    r[v] = KM_OP(fma)(aq, KM_OP(load)(row + v * KM_W), r[v]);
            }
            for (int v = 0; v < KM_CSR_ACC / 2; ++v) {
                km_narrow half[2];
                memcpy(half, &r[v], sizeof half);
                s[2 * v] += __builtin_convertvector(half[0], km_wide);
                s[2 * v + 1] += __builtin_convertvector(half[1], km_wide);
            }
        }
        memcpy(acc + c, s, sizeof s);
    }
#endif
    for (; c + lanes <= n; c += lanes) {
        km_wide s = (km_wide){0};
        for (ptrdiff_t q = 0; q < nnz; ++q) {
            km_narrow x;
            memcpy(&x, w + idx[q] * ldw + c, sizeof x);
            s = KM_FMA_WIDE((double)a[q] - (km_wide){0},
                            __builtin_convertvector(x, km_wide), s);
        }
        memcpy(acc + c, &s, sizeof s);
    }
    for (; c < n; ++c) {
        double s = 0.0;
        for (ptrdiff_t q = 0; q < nnz; ++q) s += (double)a[q] * (double)w[idx[q] * ldw + c];
        acc[c] = s;
    }
}
#undef KM_FMA_WIDE
#undef KM_CSR_ACC
#undef KM_CSR_RUN
#undef KM_CSR_AHEAD
#undef KM_CSR_PREFETCH

/* acc[i] += v[i] for i < n, in float64 (float32 values widened exactly):
 * the per-set sums of the set means, KM_VB / 8 lanes at a time. */
KM_ATTR static void KM_FN(km_add_row)(double *acc, const KM_T *v, ptrdiff_t n)
{
    typedef double km_wide __attribute__((vector_size(KM_VB)));
    typedef KM_T km_narrow __attribute__((vector_size(KM_VB * sizeof(KM_T) / 8)));
    const ptrdiff_t lanes = KM_VB / 8;
    ptrdiff_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        km_narrow x;
        km_wide a;
        memcpy(&x, v + i, sizeof x);
        memcpy(&a, acc + i, sizeof a);
        a += __builtin_convertvector(x, km_wide);
        memcpy(acc + i, &a, sizeof a);
    }
    for (; i < n; ++i) acc[i] += (double)v[i];
}

#undef KM_PASS
