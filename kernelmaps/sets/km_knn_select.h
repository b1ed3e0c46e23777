/*
 * Selection of the k smallest values for one element type KM_T (vector
 * KM_V of KM_W lanes, mask KM_M); included by km_knn.h only.
 */

/* Insert v into the ascending list top[0], top[s], ..., top[(k-1) s],
 * dropping its largest value; v is smaller than that value. */
KM_INLINE void KM_INSERT(KM_T *top, int k, ptrdiff_t s, KM_T v)
{
    ptrdiff_t i = (ptrdiff_t)(k - 1) * s;
    while (i > 0 && top[i - s] > v) {
        top[i] = top[i - s];
        i -= s;
    }
    top[i] = v;
}

static void KM_SELECT(const KM_T *dist, ptrdiff_t ldd, int nrows, ptrdiff_t ncols,
                      int k, KM_T *rowtop, KM_T *coltop, ptrdiff_t ldc)
{
    /* Without coltop, the column thresholds are +inf: never a hit. */
    const KM_T *colthr = coltop ? coltop + (ptrdiff_t)(k - 1) * ldc : NULL;
    for (int r = 0; r < nrows; ++r) {
        const KM_T *v = dist + r * ldd;
        KM_T *top = rowtop + (ptrdiff_t)r * k;
        KM_T thr = top[k - 1];
        ptrdiff_t j = 0, end;
        while (j < ncols) {
            if (j + KM_W <= ncols) {
                KM_V x;
                memcpy(&x, v + j, sizeof x);
                KM_M hit = x < thr;
                if (colthr) {
                    KM_V c;
                    memcpy(&c, colthr + j, sizeof c);
                    hit |= x < c;
                }
                int any = 0;
                for (int l = 0; l < KM_W; ++l) any |= hit[l] != 0;
                if (!any) {
                    j += KM_W;
                    continue;
                }
                end = j + KM_W;
            } else {
                end = ncols;
            }
            for (; j < end; ++j) {
                const KM_T x = v[j];
                if (x < thr) {
                    KM_INSERT(top, k, 1, x);
                    thr = top[k - 1];
                }
                if (colthr && x < colthr[j]) KM_INSERT(coltop + j, k, ldc, x);
            }
        }
    }
}
