/*
 * Branch-free k-smallest selection for one element type KM_T and one code
 * path: a template of km_instantiate.h, included by km_knn.h only. The lists
 * are 32-byte vectors on every path (KM_KNN_V of KM_KNN_W lanes, mask
 * KM_KNN_M); the AVX2 and AVX-512 paths take their min and max with the
 * AVX instructions.
 */
#define KM_KNN_V KM_VEC(32)
#define KM_KNN_M KM_MASK(32)
#define KM_KNN_W (32 / (int)sizeof(KM_T))
#define KM_ROWS KM_FN(km_knn_rows)
#define KM_COLS KM_FN(km_knn_cols)
#define KM_NET KM_FN(km_knn_net)
#define KM_LOADX KM_FN(km_knn_loadx)
#if KM_ISA >= KM_ISA_AVX2 && KM_IS_DOUBLE
#define KM_KNN_VMIN(a, b) __builtin_ia32_minpd256((a), (b))
#define KM_KNN_VMAX(a, b) __builtin_ia32_maxpd256((a), (b))
#elif KM_ISA >= KM_ISA_AVX2
#define KM_KNN_VMIN(a, b) __builtin_ia32_minps256((a), (b))
#define KM_KNN_VMAX(a, b) __builtin_ia32_maxps256((a), (b))
#else
/* Portable min/max by bit selection; both arguments are never NaN. */
#define KM_KNN_VMIN(a, b) KM_CAT(KM_NET, bsel)((a) < (b), (a), (b))
#define KM_KNN_VMAX(a, b) KM_CAT(KM_NET, bsel)((a) < (b), (b), (a))
KM_ATTR KM_INLINE KM_KNN_V KM_CAT(KM_NET, bsel)(KM_KNN_M m, KM_KNN_V a, KM_KNN_V b)
{
    return (KM_KNN_V)((m & (KM_KNN_M)a) | (~m & (KM_KNN_M)b));
}
#endif

/* Insert the lanes of x into the k sorted lane lists t[0..k). */
KM_ATTR KM_INLINE void KM_NET(KM_KNN_V *t, KM_KNN_V x, int k)
{
    for (int q = 0; q < k; ++q) {
        const KM_KNN_V lo = KM_KNN_VMIN(t[q], x);
        x = KM_KNN_VMAX(t[q], x);
        t[q] = lo;
    }
}

/* dist[j .. j + KM_KNN_W), lanes at or past n replaced by +inf. */
KM_ATTR KM_INLINE KM_KNN_V KM_LOADX(const KM_T *dist, ptrdiff_t j, ptrdiff_t n)
{
    KM_KNN_V x;
    memcpy(&x, dist + j, sizeof x);
    if (j + KM_KNN_W <= n) return x;
    KM_KNN_V lane, inf;
    for (int l = 0; l < KM_KNN_W; ++l) {
        lane[l] = (KM_T)l;
        inf[l] = (KM_T)INFINITY;
    }
    const KM_KNN_M keep = lane < (KM_T)(n - j);
    return (KM_KNN_V)((keep & (KM_KNN_M)x) | (~keep & (KM_KNN_M)inf));
}

/* The rows: with k a constant after inlining, the lists live in registers. */
KM_ATTR KM_INLINE void KM_CAT(KM_ROWS, k)(const KM_T *dist, ptrdiff_t ldd, int nrows,
                                  ptrdiff_t ncols, int k, KM_T *rowtop)
{
    KM_KNN_V t[16];
    for (int r = 0; r < nrows; ++r) {
        KM_T *top = rowtop + (ptrdiff_t)r * k * KM_KNN_W;
        const KM_T *v = dist + r * ldd;
        for (int q = 0; q < k; ++q) memcpy(&t[q], top + q * KM_KNN_W, sizeof(KM_KNN_V));
        for (ptrdiff_t j = 0; j < ncols; j += KM_KNN_W) KM_NET(t, KM_LOADX(v, j, ncols), k);
        for (int q = 0; q < k; ++q) memcpy(top + q * KM_KNN_W, &t[q], sizeof(KM_KNN_V));
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
        KM_T *top = rowtop + (ptrdiff_t)r * k * KM_KNN_W;
        const KM_T *v = dist + r * ldd;
        for (ptrdiff_t j = 0; j < ncols; j += KM_KNN_W) {
            KM_KNN_V x = KM_LOADX(v, j, ncols);
            for (int q = 0; q < k; ++q) {
                KM_KNN_V t;
                memcpy(&t, top + q * KM_KNN_W, sizeof t);
                const KM_KNN_V lo = KM_KNN_VMIN(t, x);
                x = KM_KNN_VMAX(t, x);
                memcpy(top + q * KM_KNN_W, &lo, sizeof lo);
            }
        }
    }
}

/* The columns: a vector of columns' lists loaded once per block of rows. */
KM_ATTR KM_INLINE void KM_CAT(KM_COLS, k)(const KM_T *dist, ptrdiff_t ldd, int nrows,
                                  ptrdiff_t ncols, int k, KM_T *coltop,
                                  ptrdiff_t ldc)
{
    KM_KNN_V t[16];
    for (ptrdiff_t j = 0; j < ncols; j += KM_KNN_W) {
        for (int q = 0; q < k; ++q) memcpy(&t[q], coltop + q * ldc + j, sizeof(KM_KNN_V));
        for (int r = 0; r < nrows; ++r) KM_NET(t, KM_LOADX(dist + r * ldd, j, ncols), k);
        for (int q = 0; q < k; ++q) memcpy(coltop + q * ldc + j, &t[q], sizeof(KM_KNN_V));
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
    for (ptrdiff_t j = 0; j < ncols; j += KM_KNN_W) {
        for (int r = 0; r < nrows; ++r) {
            KM_KNN_V x = KM_LOADX(dist + r * ldd, j, ncols);
            for (int q = 0; q < k; ++q) {
                KM_KNN_V t;
                memcpy(&t, coltop + q * ldc + j, sizeof t);
                const KM_KNN_V lo = KM_KNN_VMIN(t, x);
                x = KM_KNN_VMAX(t, x);
                memcpy(coltop + q * ldc + j, &lo, sizeof lo);
            }
        }
    }
}

#undef KM_KNN_V
#undef KM_KNN_M
#undef KM_KNN_W
#undef KM_ROWS
#undef KM_COLS
#undef KM_NET
#undef KM_LOADX
#undef KM_KNN_VMIN
#undef KM_KNN_VMAX
