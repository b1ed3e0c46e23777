/*
 * The sliced-Wasserstein merges for one element type KM_T and one code path
 * (vectors of KM_VB bytes): a template of km_instantiate.h, included by
 * km_sliced.h only. The costs are summed in float64 (float32 values widened
 * exactly), KM_VB / 8 lanes of them per vector.
 */
#define KM_SW_LANES (KM_VB / 8)
#define KM_SW_WIDE KM_CAT(km_vd, KM_VB)
#define KM_SW_FMA KM_CAT(km_fma_d, KM_VB)
#define KM_SW_ABS KM_CAT(km_abs_d, KM_VB)
/* The weighted merges: the code path's target, and no vectorisation of the
 * directions walked side by side (GCC's SLP pass packs their scalars into
 * vectors one insert at a time, 1.5 times slower). */
#if defined(__GNUC__) && !defined(__clang__)
#define KM_SW_ATTR KM_ATTR __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define KM_SW_ATTR KM_ATTR
#endif

/* a[l:l + KM_SW_LANES] - b[l:...] in float64. */
KM_ATTR KM_INLINE KM_SW_WIDE KM_FN(km_sw_diff)(const KM_T *a, const KM_T *b)
{
#if KM_IS_DOUBLE
    KM_SW_WIDE x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return x - y;
#else
    typedef float km_narrow __attribute__((vector_size(KM_VB / 2)));
    km_narrow x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return __builtin_convertvector(x, KM_SW_WIDE) - __builtin_convertvector(y, KM_SW_WIDE);
#endif
}

/* The cost of one step of a merge over all directions: the sum over l < L
 * of |a[l] - b[l]|^p (mode 2: p = 2, mode 1: p = 1), in float64: two
 * vector accumulators, then the lanes in order, then the tail; the order is
 * fixed by the code path. */
KM_ATTR KM_INLINE double KM_FN(km_sw_cost)(const KM_T *a, const KM_T *b, ptrdiff_t L,
                                           int mode)
{
    double s = 0.0;
    ptrdiff_t l = 0;
    KM_SW_WIDE s0 = {0}, s1 = {0};
    if (mode == 2) {
        for (; l + 2 * KM_SW_LANES <= L; l += 2 * KM_SW_LANES) {
            const KM_SW_WIDE x0 = KM_FN(km_sw_diff)(a + l, b + l);
            const KM_SW_WIDE x1 = KM_FN(km_sw_diff)(a + l + KM_SW_LANES, b + l + KM_SW_LANES);
            s0 = KM_SW_FMA(x0, x0, s0);
            s1 = KM_SW_FMA(x1, x1, s1);
        }
        for (; l + KM_SW_LANES <= L; l += KM_SW_LANES) {
            const KM_SW_WIDE x0 = KM_FN(km_sw_diff)(a + l, b + l);
            s0 = KM_SW_FMA(x0, x0, s0);
        }
    } else {
        for (; l + 2 * KM_SW_LANES <= L; l += 2 * KM_SW_LANES) {
            s0 += KM_SW_ABS(KM_FN(km_sw_diff)(a + l, b + l));
            s1 += KM_SW_ABS(KM_FN(km_sw_diff)(a + l + KM_SW_LANES, b + l + KM_SW_LANES));
        }
        for (; l + KM_SW_LANES <= L; l += KM_SW_LANES)
            s0 += KM_SW_ABS(KM_FN(km_sw_diff)(a + l, b + l));
    }
    s0 += s1;
    for (int k = 0; k < KM_SW_LANES; k++) s += s0[k];
    for (; l < L; l++) {
        const double x = (double)a[l] - (double)b[l];
        s += mode == 2 ? x * x : fabs(x);
    }
    return s;
}

/* The sum over the L directions of W_p^p between the uniform distributions
 * on the rank-major sorted a (n ranks of L values) and b (m ranks): the
 * breakpoints (i + 1) / n and (j + 1) / m, the same for every direction,
 * walked once in integer units of 1 / (n m) (exact); equal sizes pair the
 * ranks directly. The cost over the directions is its inner loop. */
KM_ATTR static double KM_FN(km_sw_pair)(const KM_T *a, int64_t n, const KM_T *b,
                                        int64_t m, ptrdiff_t L, int mode)
{
    int64_t i = 0, j = 0, u = 0, t, ta = m, tb = n;
    double acc = 0.0;
    if (n == m) {
        for (i = 0; i < n; i++) acc += KM_FN(km_sw_cost)(a + i * L, b + i * L, L, mode);
        return acc / (double)n;
    }
    while (i < n && j < m) {
        t = ta < tb ? ta : tb;
        acc += (double)(t - u) * KM_FN(km_sw_cost)(a + i * L, b + j * L, L, mode);
        u = t;
        if (ta <= t) {
            i++;
            ta += m;
        }
        if (tb <= t) {
            j++;
            tb += n;
        }
    }
    return acc / ((double)n * (double)m);
}

/* |x|^p of mode 2 (p = 2) or 1 (p = 1). */
KM_ATTR KM_INLINE double KM_FN(km_sw_one)(double x, int mode)
{
    return mode == 2 ? x * x : fabs(x);
}

/* W_p^p summed over `width` directions walked side by side (their
 * dependency chains, load, compare, advance, overlapping), between weighted
 * distributions: direction q of a holds n sorted values at a + q n with their
 * cumulative normalised weights at ca + q n (the last exactly 1), and alike
 * for b (m). Each direction's merge of the two step quantile functions is
 * walked n + m times, a fixed count: each step moves past a breakpoint of
 * one side or both, the first at 1 excepted, where the index stays (the
 * largest double below 1 bounds the advance), so that the steps after the
 * last add segments of length 0 and no index passes its side's end.
 *
 * `mode` is a constant where it is inlined (km_sw_weighted): the step has no
 * branch and no call, and its state stays in registers. The cumulative
 * weights, in [0, 1], are compared as the integers of their bits (the same
 * order for non-negative doubles; the integer compares and selects are
 * shorter on the chain of an index than their floating-point forms), and a
 * float64 side walks one pointer, its value at a fixed distance from its
 * weight (one register per side and direction). The sums are those of the
 * floating-point form, bit for bit. */
KM_SW_ATTR KM_INLINE double KM_FN(km_sw_walk)(const KM_T *a, const double *ca, int64_t n,
                                              const KM_T *b, const double *cb, int64_t m,
                                              const int width, const int mode)
{
    const int64_t below_one = 0x3fefffffffffffffLL; /* its bits */
    double u[KM_SW_CHAINS], acc[KM_SW_CHAINS], total = 0.0;
    int64_t s;
    int q;
#if KM_IS_DOUBLE
    /* a and ca (b and cb) are one allocation (the sorted layout): the
     * distance from a weight to its value is the same for every point */
    const ptrdiff_t da = (const char *)a - (const char *)ca;
    const ptrdiff_t db = (const char *)b - (const char *)cb;
    const char *x[KM_SW_CHAINS], *y[KM_SW_CHAINS];
    for (q = 0; q < width; q++) {
        x[q] = (const char *)(ca + q * n);
        y[q] = (const char *)(cb + q * m);
        u[q] = acc[q] = 0.0;
    }
#define KM_SW_XA(q) (x[q] + da)
#define KM_SW_YB(q) (y[q] + db)
#define KM_SW_XC(q) (x[q])
#define KM_SW_YC(q) (y[q])
#define KM_SW_ADVANCE(q, ax, ay) (x[q] += 8 * (ax), y[q] += 8 * (ay))
#else
    int64_t i[KM_SW_CHAINS], j[KM_SW_CHAINS];
    for (q = 0; q < width; q++) {
        i[q] = q * n; /* absolute indices: no offset per step */
        j[q] = q * m;
        u[q] = acc[q] = 0.0;
    }
#define KM_SW_XA(q) (a + i[q])
#define KM_SW_YB(q) (b + j[q])
#define KM_SW_XC(q) (ca + i[q])
#define KM_SW_YC(q) (cb + j[q])
#define KM_SW_ADVANCE(q, ax, ay) (i[q] += (ax), j[q] += (ay))
#endif
    for (s = n + m; s > 0; s--) {
        for (q = 0; q < width; q++) {
            int64_t xb, yb;
            KM_T va, vb;
            double t;
            memcpy(&xb, KM_SW_XC(q), 8);
            memcpy(&yb, KM_SW_YC(q), 8);
            memcpy(&va, KM_SW_XA(q), sizeof va);
            memcpy(&vb, KM_SW_YB(q), sizeof vb);
            const int64_t tb = xb < yb ? xb : yb;               /* t = min(x, y) */
            const int64_t stop = tb < below_one ? tb : below_one; /* min(t, below 1) */
            memcpy(&t, &tb, 8);
            acc[q] += (t - u[q]) * KM_FN(km_sw_one)((double)va - (double)vb, mode);
            u[q] = t;
            KM_SW_ADVANCE(q, xb <= stop, yb <= stop);
        }
    }
#undef KM_SW_XA
#undef KM_SW_YB
#undef KM_SW_XC
#undef KM_SW_YC
#undef KM_SW_ADVANCE
    for (q = 0; q < width; q++) total += acc[q];
    return total;
}

/* The sum over the L directions of W_p^p between weighted distributions in
 * the direction-major sorted layout (km_sw_walk), KM_SW_CHAINS directions at
 * a time, for mode the constant MODE. */
#define KM_SW_DIRECTIONS(MODE)                                                       \
    do {                                                                             \
        for (; l + KM_SW_CHAINS <= L; l += KM_SW_CHAINS)                             \
            total += KM_FN(km_sw_walk)(a + l * n, ca + l * n, n, b + l * m,          \
                                       cb + l * m, m, KM_SW_CHAINS, MODE);           \
        for (; l < L; l++)                                                           \
            total += KM_FN(km_sw_walk)(a + l * n, ca + l * n, n, b + l * m,          \
                                       cb + l * m, m, 1, MODE);                      \
    } while (0)

KM_SW_ATTR static double KM_FN(km_sw_weighted)(const KM_T *a, const double *ca, int64_t n,
                                               const KM_T *b, const double *cb, int64_t m,
                                               ptrdiff_t L, int mode)
{
    double total = 0.0;
    ptrdiff_t l = 0;
    if (mode == 2)
        KM_SW_DIRECTIONS(2);
    else
        KM_SW_DIRECTIONS(1);
    return total;
}

#undef KM_SW_DIRECTIONS

/* -- any other p: the differences over their largest ---------------------
 *
 * A pair's costs at p other than 1 and 2 are summed in two passes over the
 * same merges: the first finds `top`, the largest |a - b| over its steps of
 * positive length (and all the directions); the second sums the powers of
 * t = |a - b| / top, in [0, 1], which neither overflow nor, where it
 * matters, underflow (the steps at top give 1, whatever p). */

/* One difference over the largest, t in [0, 1], at p: A += t^p and, for p <
 * 1 (U not NULL), U += (t^p - 1) / p, the form that keeps its digits as p
 * tends to 0 (t^p - 1 = expm1(p log t), and (t^p - 1) / p = log t times
 * expm1(x) / x, x = p log t, which tends to log t; t = 0 gives -1 / p).
 * Where t^p is below 1/2, t^p - 1 = exp(x) - 1 loses no digits (one call
 * less); above, t^p = 1 + expm1(x) neither. */
KM_ATTR KM_INLINE void KM_FN(km_sw_power)(double t, double p, double *A, double *U)
{
    if (U == NULL) {
        *A += pow(t, p);
        return;
    }
    if (t == 0.0) {
        *U -= 1.0 / p;
        return;
    }
    const double lt = log(t), x = p * lt;
    double power, less;  /* t^p, t^p - 1 */
    if (x < -0.6931471805599453) {  /* log(1/2) */
        power = exp(x);
        less = power - 1.0;
    } else {
        less = expm1(x);
        power = 1.0 + less;
    }
    *A += power;
    *U += x == 0.0 ? lt : lt * (less / x);
}

/* The largest |a[l] - b[l]| over l < L, at least `top`. */
KM_ATTR KM_INLINE double KM_FN(km_sw_top)(const KM_T *a, const KM_T *b, ptrdiff_t L, double top)
{
    for (ptrdiff_t l = 0; l < L; l++) {
        const double d = fabs((double)a[l] - (double)b[l]);
        top = d > top ? d : top;
    }
    return top;
}

/* The sums of km_sw_power over l < L of |a[l] - b[l]| / top, times w. */
KM_ATTR KM_INLINE void KM_FN(km_sw_powers)(const KM_T *a, const KM_T *b, ptrdiff_t L, double top,
                                           double p, double w, double *A, double *U)
{
    double sa = 0.0, su = 0.0;
    for (ptrdiff_t l = 0; l < L; l++)
        KM_FN(km_sw_power)(fabs((double)a[l] - (double)b[l]) / top, p, &sa,
                           U == NULL ? NULL : &su);
    *A += w * sa;
    if (U != NULL) *U += w * su;
}

/* The merge of km_sw_pair (uniform distributions, rank-major), at any p:
 * `first` returns top, the largest difference over its steps and the L
 * directions; else A (and U, not NULL) += the sums of km_sw_power over its
 * steps and the directions, each step weighted by its length (the lengths
 * of a direction sum to 1), and returns top. */
KM_ATTR static double KM_FN(km_sw_pair_any)(const KM_T *a, int64_t n, const KM_T *b, int64_t m,
                                            ptrdiff_t L, double p, int first, double top,
                                            double *A, double *U)
{
    int64_t i = 0, j = 0, u = 0, t, ta = m, tb = n;
    double sa = 0.0, su = 0.0, *pu = U == NULL ? NULL : &su;
    if (n == m) {
        for (i = 0; i < n; i++) {
            if (first)
                top = KM_FN(km_sw_top)(a + i * L, b + i * L, L, top);
            else
                KM_FN(km_sw_powers)(a + i * L, b + i * L, L, top, p, 1.0, &sa, pu);
        }
    } else {
        while (i < n && j < m) {
            t = ta < tb ? ta : tb;
            if (first)
                top = KM_FN(km_sw_top)(a + i * L, b + j * L, L, top);
            else
                KM_FN(km_sw_powers)(a + i * L, b + j * L, L, top, p, (double)(t - u), &sa, pu);
            u = t;
            if (ta <= t) {
                i++;
                ta += m;
            }
            if (tb <= t) {
                j++;
                tb += n;
            }
        }
    }
    if (!first) {  /* the lengths in units of 1 / n (equal sizes) or 1 / (n m) */
        const double units = n == m ? (double)n : (double)n * (double)m;
        *A += sa / units;
        if (U != NULL) *U += su / units;
    }
    return top;
}

/* The merges of km_sw_weighted (direction-major, cumulative weights), one
 * direction at a time, at any p: as km_sw_pair_any, the steps of length 0
 * (points of negligible weight) left out. */
KM_ATTR static double KM_FN(km_sw_weighted_any)(const KM_T *a, const double *ca, int64_t n,
                                                const KM_T *b, const double *cb, int64_t m,
                                                ptrdiff_t L, double p, int first, double top,
                                                double *A, double *U)
{
    const double below_one = 0x1.fffffffffffffp-1;
    double sa = 0.0, su = 0.0;
    for (ptrdiff_t l = 0; l < L; l++) {
        const KM_T *al = a + l * n, *bl = b + l * m;
        const double *cal = ca + l * n, *cbl = cb + l * m;
        int64_t i = 0, j = 0, s;
        double u = 0.0;
        for (s = 0; s < n + m; s++) {  /* the walk of km_sw_walk */
            const double x = cal[i], y = cbl[j];
            const double t = x < y ? x : y;
            const double stop = t < below_one ? t : below_one;
            if (t > u) {
                const double d = fabs((double)al[i] - (double)bl[j]);
                if (first) {
                    top = d > top ? d : top;
                } else {
                    double pa = 0.0, pu = 0.0;
                    KM_FN(km_sw_power)(d / top, p, &pa, U == NULL ? NULL : &pu);
                    sa += (t - u) * pa;
                    su += (t - u) * pu;
                }
            }
            u = t;
            i += x <= stop;
            j += y <= stop;
        }
    }
    if (!first) {
        *A += sa;
        if (U != NULL) *U += su;
    }
    return top;
}

#undef KM_SW_LANES
#undef KM_SW_WIDE
#undef KM_SW_FMA
#undef KM_SW_ABS
#undef KM_SW_ATTR
