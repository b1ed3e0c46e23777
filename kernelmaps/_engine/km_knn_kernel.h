/*
 * Branch-free k-smallest selection, and the log terms of the kNN
 * estimator, for one element type KM_T and one code path: a template of
 * km_instantiate.h, included by km_knn.h only. The lists are vectors of
 * the path (KM_V: 64 bytes on AVX-512, 32 on AVX2, 16 on the
 * baseline). The AVX2 and AVX-512 paths take their min and max with one
 * instruction each.
 */
#define KM_ROWS KM_FN(km_knn_rows)
#define KM_COLS KM_FN(km_knn_cols)
#define KM_NET KM_FN(km_knn_net)
#define KM_LOADX KM_FN(km_knn_loadx)
#define KM_BLOCK KM_FN(km_knn_block)
#if KM_ISA >= KM_ISA_AVX512 && KM_IS_DOUBLE
#define KM_VMIN(a, b) ((KM_V)_mm512_min_pd((__m512d)(a), (__m512d)(b)))
#define KM_VMAX(a, b) ((KM_V)_mm512_max_pd((__m512d)(a), (__m512d)(b)))
#elif KM_ISA >= KM_ISA_AVX512
#define KM_VMIN(a, b) ((KM_V)_mm512_min_ps((__m512)(a), (__m512)(b)))
#define KM_VMAX(a, b) ((KM_V)_mm512_max_ps((__m512)(a), (__m512)(b)))
#elif KM_ISA >= KM_ISA_AVX2 && KM_IS_DOUBLE
#define KM_VMIN(a, b) ((KM_V)_mm256_min_pd((__m256d)(a), (__m256d)(b)))
#define KM_VMAX(a, b) ((KM_V)_mm256_max_pd((__m256d)(a), (__m256d)(b)))
#elif KM_ISA >= KM_ISA_AVX2
#define KM_VMIN(a, b) ((KM_V)_mm256_min_ps((__m256)(a), (__m256)(b)))
#define KM_VMAX(a, b) ((KM_V)_mm256_max_ps((__m256)(a), (__m256)(b)))
#else
/* Portable min/max by bit selection; both arguments are never NaN. */
#define KM_VMIN(a, b) KM_CAT(KM_NET, bsel)((a) < (b), (a), (b))
#define KM_VMAX(a, b) KM_CAT(KM_NET, bsel)((a) < (b), (b), (a))
KM_ATTR KM_INLINE KM_V KM_CAT(KM_NET, bsel)(KM_M m, KM_V a, KM_V b)
{
    return (KM_V)((m & (KM_M)a) | (~m & (KM_M)b));
}
#endif

/* Insert the lanes of x into the k sorted lane lists t[0..k). */
KM_ATTR KM_INLINE void KM_NET(KM_V *t, KM_V x, int k)
{
    for (int q = 0; q < k; ++q) {
        const KM_V lo = KM_VMIN(t[q], x);
        x = KM_VMAX(t[q], x);
        t[q] = lo;
    }
}

/* Insert the lanes of x into k sorted lane lists kept in memory (L1), list
 * q at top + q ld: for k too large for registers. */
KM_ATTR KM_INLINE void KM_CAT(KM_NET, mem)(KM_T *top, ptrdiff_t ld, KM_V x, int k)
{
    for (int q = 0; q < k; ++q) {
        KM_V t;
        memcpy(&t, top + q * ld, sizeof t);
        const KM_V lo = KM_VMIN(t, x);
        x = KM_VMAX(t, x);
        memcpy(top + q * ld, &lo, sizeof lo);
    }
}

/* dist[j .. j + KM_W), lanes at or past n replaced by +inf. */
KM_ATTR KM_INLINE KM_V KM_LOADX(const KM_T *dist, ptrdiff_t j, ptrdiff_t n)
{
    KM_V x;
    memcpy(&x, dist + j, sizeof x);
    if (j + KM_W <= n) return x;
    KM_V lane, inf;
    for (int l = 0; l < KM_W; ++l) {
        lane[l] = (KM_T)l;
        inf[l] = (KM_T)INFINITY;
    }
    const KM_M keep = lane < (KM_T)(n - j);
    return (KM_V)((keep & (KM_M)x) | (~keep & (KM_M)inf));
}

/* The rows: with k a constant after inlining, the lists live in registers. */
KM_ATTR KM_INLINE void KM_CAT(KM_ROWS, k)(const KM_T *dist, ptrdiff_t ldd, int nrows,
                                  ptrdiff_t ncols, int k, KM_T *rowtop)
{
    KM_V t[16];
    for (int r = 0; r < nrows; ++r) {
        KM_T *top = rowtop + (ptrdiff_t)r * k * KM_W;
        const KM_T *v = dist + r * ldd;
        for (int q = 0; q < k; ++q) t[q] = KM_OP(load)(top + q * KM_W);
        for (ptrdiff_t j = 0; j < ncols; j += KM_W) KM_NET(t, KM_LOADX(v, j, ncols), k);
        for (int q = 0; q < k; ++q) KM_OP(store)(top + q * KM_W, t[q]);
    }
}

KM_ATTR static void KM_ROWS(const KM_T *dist, ptrdiff_t ldd, int nrows,
                            ptrdiff_t ncols, int k, KM_T *rowtop)
{
    switch (k) { /* constant k: unrolled, in registers */
    case 1: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 1, rowtop); return;
    case 2: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 2, rowtop); return;
    case 3: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 3, rowtop); return;
    case 4: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 4, rowtop); return;
    case 5: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 5, rowtop); return;
    case 6: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 6, rowtop); return;
    case 7: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 7, rowtop); return;
    case 8: KM_CAT(KM_ROWS, k)(dist, ldd, nrows, ncols, 8, rowtop); return;
    default: break;
    }
    /* Larger k: the lists stay in memory (L1). */
    for (int r = 0; r < nrows; ++r) {
        KM_T *top = rowtop + (ptrdiff_t)r * k * KM_W;
        const KM_T *v = dist + r * ldd;
        for (ptrdiff_t j = 0; j < ncols; j += KM_W)
            KM_CAT(KM_NET, mem)(top, KM_W, KM_LOADX(v, j, ncols), k);
    }
}

/* The columns: a vector of columns' lists loaded once per block of rows. */
KM_ATTR KM_INLINE void KM_CAT(KM_COLS, k)(const KM_T *dist, ptrdiff_t ldd, int nrows,
                                  ptrdiff_t ncols, int k, KM_T *coltop,
                                  ptrdiff_t ldc)
{
    KM_V t[16];
    for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
        for (int q = 0; q < k; ++q) t[q] = KM_OP(load)(coltop + q * ldc + j);
        for (int r = 0; r < nrows; ++r) KM_NET(t, KM_LOADX(dist + r * ldd, j, ncols), k);
        for (int q = 0; q < k; ++q) KM_OP(store)(coltop + q * ldc + j, t[q]);
    }
}

KM_ATTR static void KM_COLS(const KM_T *dist, ptrdiff_t ldd, int nrows,
                            ptrdiff_t ncols, int k, KM_T *coltop, ptrdiff_t ldc)
{
    switch (k) {
    case 1: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 1, coltop, ldc); return;
    case 2: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 2, coltop, ldc); return;
    case 3: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 3, coltop, ldc); return;
    case 4: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 4, coltop, ldc); return;
    case 5: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 5, coltop, ldc); return;
    case 6: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 6, coltop, ldc); return;
    case 7: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 7, coltop, ldc); return;
    case 8: KM_CAT(KM_COLS, k)(dist, ldd, nrows, ncols, 8, coltop, ldc); return;
    default: break;
    }
    for (ptrdiff_t j = 0; j < ncols; j += KM_W)
        for (int r = 0; r < nrows; ++r)
            KM_CAT(KM_NET, mem)(coltop + j, ldc, KM_LOADX(dist + r * ldd, j, ncols), k);
}

/* The columns of a block computed on the fly: the squared distances from
 * each of ncols column points (transposed at yt, leading dimension ldy) to
 * each of nrows row points (rows of d features at x), as sums of squared
 * differences in the order of the tile kernel (the same bits), go through
 * new lists for the columns (as in km_knn_cols, but filled here with +inf
 * first) without being stored. For small
 * sets in few dimensions, where a tile call and a pass over its output
 * would cost more than the distances themselves. yt must be readable for
 * a whole vector past the last column (as the packed columns are), and
 * the lanes of the lists past the last column, up to a whole vector, are
 * overwritten. */
KM_ATTR KM_INLINE KM_V KM_CAT(KM_BLOCK, dist)(const KM_T *x, const KM_T *yt,
                                          ptrdiff_t ldy, ptrdiff_t d)
{
    KM_V s = (KM_V){0};
    for (ptrdiff_t f = 0; f < d; ++f) {
        KM_V b;
        memcpy(&b, yt + f * ldy, sizeof b);
        const KM_V t = b - x[f];
        s = KM_OP(fma)(t, t, s); /* as the tiles (km_tile_kernel.h) */
    }
    return s;
}

KM_ATTR KM_INLINE void KM_CAT(KM_BLOCK, k)(const KM_T *x, const KM_T *yt, ptrdiff_t ldy,
                                   ptrdiff_t d, int nrows, ptrdiff_t ncols, int k,
                                   KM_T *coltop, ptrdiff_t ldc)
{
    KM_V t[16];
    for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
        for (int q = 0; q < k; ++q) t[q] = (KM_V){0} + (KM_T)INFINITY;
        for (int r = 0; r < nrows; ++r)
            KM_NET(t, KM_CAT(KM_BLOCK, dist)(x + r * d, yt + j, ldy, d), k);
        for (int q = 0; q < k; ++q) KM_OP(store)(coltop + q * ldc + j, t[q]);
    }
}

KM_ATTR static void KM_BLOCK(const KM_T *x, const KM_T *yt, ptrdiff_t ldy, ptrdiff_t d,
                             int nrows, ptrdiff_t ncols, int k, KM_T *coltop,
                             ptrdiff_t ldc)
{
    switch (k) {
    case 1: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 1, coltop, ldc); return;
    case 2: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 2, coltop, ldc); return;
    case 3: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 3, coltop, ldc); return;
    case 4: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 4, coltop, ldc); return;
    case 5: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 5, coltop, ldc); return;
    case 6: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 6, coltop, ldc); return;
    case 7: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 7, coltop, ldc); return;
    case 8: KM_CAT(KM_BLOCK, k)(x, yt, ldy, d, nrows, ncols, 8, coltop, ldc); return;
    default: break;
    }
    /* Larger k: the lists stay in memory (L1). */
    for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
        const KM_V inf = (KM_V){0} + (KM_T)INFINITY;
        for (int q = 0; q < k; ++q) memcpy(coltop + q * ldc + j, &inf, sizeof inf);
        for (int r = 0; r < nrows; ++r)
            KM_CAT(KM_NET, mem)(coltop + j, ldc,
                                KM_CAT(KM_BLOCK, dist)(x + r * d, yt + j, ldy, d), k);
    }
}

#if KM_IS_DOUBLE
/* The sums of the estimator over n >= 1 points: with
 *     u_p = log_rho[p] - max(log nu_p, floor)
 * (nu_p^2 = nu2[p] >= 0, log 0 = -inf below every floor; floor finite),
 * out[a * stride] = log(sum_p exp(coef[a] u_p)), shifted by its largest
 * exponent so that nothing overflows. The points go in groups of 8, each
 * lane of a group summed on its own and the 8 sums added in order at the
 * end, whatever the vector width: the same bits on every path with FMA.
 * nu2 and log_rho are read in whole groups (up to 8 values past the n-th
 * must be readable: those lanes are ignored); u receives the u_p (room
 * for n rounded up to 8; u may be nu2). Subnormal nu2 are scaled by 2**64
 * first (km_log2 takes normal numbers). */
KM_ATTR static void KM_FN(km_knn_logsums)(const double *nu2, const double *log_rho,
                                          double floor, ptrdiff_t n, double *u,
                                          const double *coef, ptrdiff_t n_coef,
                                          double *out, ptrdiff_t stride)
{
    enum { W = KM_W, G = 8 / KM_W };
    const double half_ln2 = 0.34657359027997264, log2e = 1.4426950408889634;
    const KM_V fl = (KM_V){0} + floor;
    KM_V lane, lo = (KM_V){0} + INFINITY, hi = (KM_V){0} - INFINITY;
    for (int l = 0; l < W; ++l) lane[l] = (double)l;
    for (ptrdiff_t p = 0; p < n; p += W) {
        KM_V z, rho;
        memcpy(&z, nu2 + p, sizeof z);
        memcpy(&rho, log_rho + p, sizeof rho);
        const KM_M tiny = z < 0x1p-1022;
        z = (KM_V)(((KM_M)(z * 0x1p64) & tiny) | ((KM_M)z & ~tiny));
        const KM_V lg = (KM_OP(log2)(z) - (KM_V)((KM_M)((KM_V){0} + 64.0) & tiny))
                        * half_ln2;
        const KM_M above = (lg > fl) & (z > 0.0);
        KM_V t = rho - (KM_V)(((KM_M)lg & above) | ((KM_M)fl & ~above));
        memcpy(u + p, &t, sizeof t);
        /* lanes past n leave lo and hi as they are */
        const KM_M keep = lane < (double)(n - p);
        const KM_M less = (t < lo) & keep, more = (t > hi) & keep;
        lo = (KM_V)(((KM_M)t & less) | ((KM_M)lo & ~less));
        hi = (KM_V)(((KM_M)t & more) | ((KM_M)hi & ~more));
    }
    double umin = lo[0], umax = hi[0];
    for (int l = 1; l < W; ++l) {
        umin = lo[l] < umin ? lo[l] : umin;
        umax = hi[l] > umax ? hi[l] : umax;
    }
    for (ptrdiff_t a = 0; a < n_coef; ++a) {
        const double c = coef[a], top = c >= 0 ? c * umax : c * umin;
        KM_V sum[G];
        for (int g = 0; g < G; ++g) sum[g] = (KM_V){0};
        for (ptrdiff_t p = 0; p < n; p += 8) {
            for (int g = 0; g < G; ++g) {
                KM_V v;
                memcpy(&v, u + p + g * W, sizeof v);
                /* c u <= top exactly (rounding is monotone): exponents <= 0 */
                KM_V e = KM_OP(exp2)((c * v - top) * log2e);
                e = (KM_V)((KM_M)e & (lane < (double)(n - p - g * W)));
                sum[g] += e;
            }
        }
        double total = 0.0;
        for (int l = 0; l < 8; ++l) total += sum[l / W][l % W];
        out[a * stride] = top + log(total);
    }
}
#endif

#undef KM_ROWS
#undef KM_COLS
#undef KM_NET
#undef KM_LOADX
#undef KM_BLOCK
#undef KM_VMIN
#undef KM_VMAX
