/*
 * Branch-free k-smallest selection for the element type KM_T (vector KM_V of
 * KM_W lanes, mask KM_M) and one target; included by km_knn_body.h only.
 */
#ifndef KM_VMIN
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
        for (int q = 0; q < k; ++q) memcpy(&t[q], top + q * KM_W, sizeof(KM_V));
        for (ptrdiff_t j = 0; j < ncols; j += KM_W) KM_NET(t, KM_LOADX(v, j, ncols), k);
        for (int q = 0; q < k; ++q) memcpy(top + q * KM_W, &t[q], sizeof(KM_V));
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
        for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
            KM_V x = KM_LOADX(v, j, ncols);
            for (int q = 0; q < k; ++q) {
                KM_V t;
                memcpy(&t, top + q * KM_W, sizeof t);
                const KM_V lo = KM_VMIN(t, x);
                x = KM_VMAX(t, x);
                memcpy(top + q * KM_W, &lo, sizeof lo);
            }
        }
    }
}

/* The columns: a vector of columns' lists loaded once per block of rows. */
KM_ATTR KM_INLINE void KM_CAT(KM_COLS, k)(const KM_T *dist, ptrdiff_t ldd, int nrows,
                                  ptrdiff_t ncols, int k, KM_T *coltop,
                                  ptrdiff_t ldc)
{
    KM_V t[16];
    for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
        for (int q = 0; q < k; ++q) memcpy(&t[q], coltop + q * ldc + j, sizeof(KM_V));
        for (int r = 0; r < nrows; ++r) KM_NET(t, KM_LOADX(dist + r * ldd, j, ncols), k);
        for (int q = 0; q < k; ++q) memcpy(coltop + q * ldc + j, &t[q], sizeof(KM_V));
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
    for (ptrdiff_t j = 0; j < ncols; j += KM_W) {
        for (int r = 0; r < nrows; ++r) {
            KM_V x = KM_LOADX(dist + r * ldd, j, ncols);
            for (int q = 0; q < k; ++q) {
                KM_V t;
                memcpy(&t, coltop + q * ldc + j, sizeof t);
                const KM_V lo = KM_VMIN(t, x);
                x = KM_VMAX(t, x);
                memcpy(coltop + q * ldc + j, &lo, sizeof lo);
            }
        }
    }
}
