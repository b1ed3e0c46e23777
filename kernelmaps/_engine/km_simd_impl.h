/*
 * SIMD helpers for one vector width KM_VB (bytes); included by km_simd.h
 * once per width. Names end in _<KM_VB>.
 */
#define KM_N(name) KM_CAT(name, KM_VB)

typedef double KM_N(km_vd) __attribute__((vector_size(KM_VB)));
typedef long long KM_N(km_vdm) __attribute__((vector_size(KM_VB)));          /* mask */
typedef unsigned long long KM_N(km_vdu) __attribute__((vector_size(KM_VB))); /* bits */
typedef float KM_N(km_vf) __attribute__((vector_size(KM_VB)));
typedef int KM_N(km_vfm) __attribute__((vector_size(KM_VB)));
typedef unsigned int KM_N(km_vfu) __attribute__((vector_size(KM_VB)));

#define vd KM_N(km_vd)
#define vdm KM_N(km_vdm)
#define vdu KM_N(km_vdu)
#define vf KM_N(km_vf)
#define vfm KM_N(km_vfm)
#define vfu KM_N(km_vfu)

KM_INLINE vd KM_N(km_load_d)(const double *p) { vd v; memcpy(&v, p, sizeof v); return v; }
KM_INLINE vf KM_N(km_load_f)(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
KM_INLINE void KM_N(km_store_d)(double *p, vd v) { memcpy(p, &v, sizeof v); }
KM_INLINE void KM_N(km_store_f)(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* The target of the helpers that use FMA instructions: that of the code
 * path of the width (a function with a target can only be inlined into
 * one with it, and the helpers of a width serve the kernels of its path). */
#if KM_VB == 32 && defined(KM_DISPATCH_X86)
#define KM_VT KM_TARGET_AVX2
#elif KM_VB == 64 && defined(KM_DISPATCH_X86)
#define KM_VT KM_TARGET_AVX512
#else
#define KM_VT
#endif

/*
 * a * b + c, rounded once (an FMA instruction) on the paths that have one,
 * AVX2 and AVX-512 on x86-64 and the baseline (NEON) on arm64; rounded
 * twice on x86-64's baseline (SSE2).
 */
#if KM_VB == 32 && defined(KM_DISPATCH_X86)
KM_VT KM_INLINE vd KM_N(km_fma_d)(vd a, vd b, vd c)
{
    return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
}
KM_VT KM_INLINE vf KM_N(km_fma_f)(vf a, vf b, vf c)
{
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
#elif KM_VB == 64 && defined(KM_DISPATCH_X86)
KM_VT KM_INLINE vd KM_N(km_fma_d)(vd a, vd b, vd c)
{
    return (vd)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
}
KM_VT KM_INLINE vf KM_N(km_fma_f)(vf a, vf b, vf c)
{
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
#elif KM_VB == 16 && defined(__aarch64__) && defined(__GNUC__)
KM_INLINE vd KM_N(km_fma_d)(vd a, vd b, vd c)
{
    return (vd)vfmaq_f64((float64x2_t)c, (float64x2_t)a, (float64x2_t)b);
}
KM_INLINE vf KM_N(km_fma_f)(vf a, vf b, vf c)
{
    return (vf)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
}
#else
KM_INLINE vd KM_N(km_fma_d)(vd a, vd b, vd c) { return a * b + c; }
KM_INLINE vf KM_N(km_fma_f)(vf a, vf b, vf c) { return a * b + c; }
#endif
#define FMA_D KM_N(km_fma_d)
#define FMA_F KM_N(km_fma_f)
/* a scalar in every lane */
#define KM_SD(x) ((x) - (vd){0}) /* x - 0 = x, -0.0 too: a broadcast */
#define KM_SF(x) ((x) - (vf){0})

KM_INLINE vd KM_N(km_abs_d)(vd v) { return (vd)((vdu)v & 0x7fffffffffffffffULL); }
KM_INLINE vf KM_N(km_abs_f)(vf v) { return (vf)((vfu)v & 0x7fffffffU); }

/* max(v, 0); also maps -0.0 to +0.0. */
KM_INLINE vd KM_N(km_pos_d)(vd v) { return (vd)((vdu)v & (vdu)(v > 0.0)); }
KM_INLINE vf KM_N(km_pos_f)(vf v) { return (vf)((vfu)v & (vfu)(v > 0.0f)); }

/* min(a, b) for a, b not NaN. */
KM_INLINE vd KM_N(km_min_d)(vd a, vd b)
{
    const vdu less = (vdu)(a < b);
    return (vd)(((vdu)a & less) | ((vdu)b & ~less));
}
KM_INLINE vf KM_N(km_min_f)(vf a, vf b)
{
    const vfu less = (vfu)(a < b);
    return (vf)(((vfu)a & less) | ((vfu)b & ~less));
}

/*
 * 2**y for y <= 0, float64: round y to n, 2**f for f = y - n in [-1/2, 1/2]
 * by a degree-11 polynomial (Chebyshev fit, error 3e-18, Estrin's scheme),
 * n added to the exponent bits. Results below 2**-1020 (1e-307) are
 * flushed to 0: no subnormal is ever produced.
 *
 * Callers compute exp(-z) as 2**(-z log2(e)) with log2(e) folded into their
 * scale factor. Rounding y costs a relative error of |y| * 1.1e-16, i.e. an
 * absolute error below 0.4 ulp(1) for every z: no more than the error z
 * itself carries, and cheaper than a Cody-Waite reduction.
 */
KM_VT KM_INLINE vd KM_N(km_exp2_d)(vd y)
{
    const double shifter = 0x1.8p52, lowest = -1020.0;
    const vdu keep = (vdu)(y > lowest);
    y = (vd)(((vdu)y & keep) | ((vdu)((vd){0} + lowest) & ~keep));
    const vd t = y + shifter; /* round(y) in the low mantissa bits */
    const vd f = y - (t - shifter);
    const vd f2 = f * f, f4 = f2 * f2;
    const vd q0 = FMA_D(f, KM_SD(0x1.62e42fefa39efp-1), KM_SD(1.0));
    const vd q1 = FMA_D(f, KM_SD(0x1.c6b08d704a0c6p-5), KM_SD(0x1.ebfbdff82c5aep-3));
    const vd q2 = FMA_D(f, KM_SD(0x1.5d87fe78a3f9cp-10), KM_SD(0x1.3b2ab6fb9f1a5p-7));
    const vd q3 = FMA_D(f, KM_SD(0x1.ffcbfc6da6ed1p-17),
                        KM_SD(0x1.430913112c61bp-13));
    const vd q4 = FMA_D(f, KM_SD(0x1.b524ebd13a55fp-24),
                        KM_SD(0x1.62bfc2c86d700p-20));
    const vd q5 = FMA_D(f, KM_SD(0x1.e9ec1fcb69a7fp-32),
                        KM_SD(0x1.e6228acd1c6e5p-28));
    /* (q0 + q1 f2) + ((q2 + q3 f2) + (q4 + q5 f2) f4) f4 */
    const vd p = FMA_D(FMA_D(FMA_D(q5, f2, q4), f4, FMA_D(q3, f2, q2)), f4,
                       FMA_D(q1, f2, q0));
    return (vd)(((vdu)p + ((vdu)t << 52)) & keep);
}

/*
 * 2**y for y <= 0, float32: the same scheme with a degree-6 polynomial
 * (error 2e-9); results below 2**-124 (5e-38) are flushed to 0.
 */
KM_VT KM_INLINE vf KM_N(km_exp2_f)(vf y)
{
    const float shifter = 0x1.8p23f, lowest = -124.0f;
    const vfu keep = (vfu)(y > lowest);
    y = (vf)(((vfu)y & keep) | ((vfu)((vf){0} + lowest) & ~keep));
    const vf t = y + shifter;
    const vf f = y - (t - shifter);
    const vf f2 = f * f;
    const vf q0 = FMA_F(f, KM_SF(0.6931472067028326f), KM_SF(1.0f));
    const vf q1 = FMA_F(f, KM_SF(0.05550327226670302f), KM_SF(0.24022650922288757f));
    const vf q2 = FMA_F(f, KM_SF(0.0013400428177615838f),
                        KM_SF(0.009618056678524637f));
    /* (q0 + q1 f2) + (q2 + c f2) f2**2 */
    const vf p = FMA_F(FMA_F(KM_SF(0.0001546144469856913f), f2, q2), f2 * f2,
                       FMA_F(q1, f2, q0));
    return (vf)(((vfu)p + ((vfu)t << 23)) & keep);
}

/*
 * log2(z) for normal z > 0 (callers floor z at the smallest normal number):
 * z = m 2^e with m in [sqrt(1/2), sqrt(2)), then log(m) = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| < 0.172, by its series (to s^21 in float64,
 * error < 3e-17 relative; to s^9 in float32).
 */
KM_VT KM_INLINE vd KM_N(km_log2_d)(vd z)
{
    const vdu bits = (vdu)z;
    vd m = (vd)((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    const vdu big = (vdu)(m > 1.4142135623730951);
    m = (vd)((vdu)m - (big & 0x0010000000000000ULL)); /* halve */
    /* The biased exponent as a double: its bits below those of 2**52. */
    const vdu e_bits = (bits >> 52) + (big & 1);
    const vd e = (vd)(e_bits | 0x4330000000000000ULL) - (0x1p52 + 1023.0);
    const vd s = (m - 1.0) / (m + 1.0), s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
    /* sum_i s2**i / (2 i + 1), i <= 10, by Estrin's scheme */
    const vd q0 = FMA_D(s2, KM_SD(1.0 / 3), KM_SD(1.0));
    const vd q1 = FMA_D(s2, KM_SD(1.0 / 7), KM_SD(1.0 / 5));
    const vd q2 = FMA_D(s2, KM_SD(1.0 / 11), KM_SD(1.0 / 9));
    const vd q3 = FMA_D(s2, KM_SD(1.0 / 15), KM_SD(1.0 / 13));
    const vd q4 = FMA_D(s2, KM_SD(1.0 / 19), KM_SD(1.0 / 17));
    /* (q0 + q1 s4) + ((q2 + q3 s4) + (q4 + s4 / 21) s8) s8 */
    const vd p = FMA_D(FMA_D(FMA_D(s4, KM_SD(1.0 / 21), q4), s8, FMA_D(q3, s4, q2)),
                       s8, FMA_D(q1, s4, q0));
    return FMA_D(s * 2.8853900817779268, p, e); /* 2 / ln 2 */
}
KM_VT KM_INLINE vf KM_N(km_log2_f)(vf z)
{
    const vfu bits = (vfu)z;
    vf m = (vf)((bits & 0x007fffffU) | 0x3f800000U);
    const vfu big = (vfu)(m > 1.41421356f);
    m = (vf)((vfu)m - (big & 0x00800000U));
    const vfu e_bits = (bits >> 23) + (big & 1);
    const vf e = (vf)(e_bits | 0x4b000000U) - (0x1p23f + 127.0f);
    const vf s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    vf p = FMA_F(s2, KM_SF(1.0f / 9), KM_SF(1.0f / 7));
    p = FMA_F(p, s2, KM_SF(1.0f / 5));
    p = FMA_F(p, s2, KM_SF(1.0f / 3));
    p = FMA_F(p, s2, KM_SF(1.0f));
    return FMA_F(s * 2.88539008f, p, e);
}

/*
 * cos(v), float64: v = q pi + r with q = round(v / pi) and r in
 * [-pi/2, pi/2] (Cody-Waite: pi in three parts, the first two with few
 * enough bits that q times them is exact for |q| < 2**26), then
 * cos(v) = (-1)**q cos(r) with cos(r) by its Taylor series in r**2 to r**20
 * (truncation error 2e-17 on [-pi/2, pi/2], 5e-16 at the clamp below).
 * The absolute error is a few ulp(1) for |v| < 1e5 and grows like
 * |v| * 1e-16 beyond. q may be off by one where v / pi rounds the wrong
 * way near a half-integer, so r may pass pi/2 a little; |r| is clamped at
 * pi/2 + 1/4 only to keep the result in [-1, 1] for any finite v.
 */
KM_VT KM_INLINE vd KM_N(km_cos_d)(vd v)
{
    const double shifter = 0x1.8p52, bound = 1.8207963267948966;
    /* round(v / pi) */
    const vd t = FMA_D(v, KM_SD(0.3183098861837907), KM_SD(shifter));
    const vd q = t - shifter;
    vd r = FMA_D(q, KM_SD(-3.14159250259399414062), v);
    r = FMA_D(q, KM_SD(-1.50995788317231927067e-7), r);
    r = FMA_D(q, KM_SD(-1.07806057163162381058e-14), r);
    r = KM_N(km_min_d)(KM_N(km_abs_d)(r), (vd){0} + bound); /* cos is even */
    const vd s = r * r;
    vd p = FMA_D(s, KM_SD(1.0 / 2432902008176640000.0),
                 KM_SD(-1.0 / 6402373705728000.0));
    p = FMA_D(p, s, KM_SD(1.0 / 20922789888000.0));
    p = FMA_D(p, s, KM_SD(-1.0 / 87178291200.0));
    p = FMA_D(p, s, KM_SD(1.0 / 479001600.0));
    p = FMA_D(p, s, KM_SD(-1.0 / 3628800.0));
    p = FMA_D(p, s, KM_SD(1.0 / 40320.0));
    p = FMA_D(p, s, KM_SD(-1.0 / 720.0));
    p = FMA_D(p, s, KM_SD(1.0 / 24.0));
    p = FMA_D(p, s, KM_SD(-0.5));
    p = FMA_D(p, s, KM_SD(1.0));
    return (vd)((vdu)p ^ ((vdu)t << 63)); /* the sign of (-1)**q */
}

/* cos(v), float32: the same scheme, pi in three parts exact for
 * |q| < 2**13, the series to r**12 (error 7e-9, 5e-8 at the clamp). */
KM_VT KM_INLINE vf KM_N(km_cos_f)(vf v)
{
    const float shifter = 0x1.8p23f, bound = 1.82079637f;
    const vf t = FMA_F(v, KM_SF(0.318309886f), KM_SF(shifter));
    const vf q = t - shifter;
    vf r = FMA_F(q, KM_SF(-3.140625f), v);
    r = FMA_F(q, KM_SF(-9.67502593994140625e-4f), r);
    r = FMA_F(q, KM_SF(-1.509957990978376432e-7f), r);
    r = KM_N(km_min_f)(KM_N(km_abs_f)(r), (vf){0} + bound);
    const vf s = r * r;
    vf p = FMA_F(s, KM_SF(1.0f / 479001600.0f), KM_SF(-1.0f / 3628800.0f));
    p = FMA_F(p, s, KM_SF(1.0f / 40320.0f));
    p = FMA_F(p, s, KM_SF(-1.0f / 720.0f));
    p = FMA_F(p, s, KM_SF(1.0f / 24.0f));
    p = FMA_F(p, s, KM_SF(-0.5f));
    p = FMA_F(p, s, KM_SF(1.0f));
    return (vf)((vfu)p ^ ((vfu)t << 31));
}

/* sqrt(v) for v >= 0, correctly rounded (IEEE 754): the same bits on
 * every path. The instruction where the width has one, else lane by lane. */
#if KM_VB == 16 && defined(KM_DISPATCH_X86)
KM_INLINE vd KM_N(km_sqrt_d)(vd v) { return (vd)_mm_sqrt_pd((__m128d)v); }
KM_INLINE vf KM_N(km_sqrt_f)(vf v) { return (vf)_mm_sqrt_ps((__m128)v); }
#elif KM_VB == 32 && defined(KM_DISPATCH_X86)
KM_VT KM_INLINE vd KM_N(km_sqrt_d)(vd v) { return (vd)_mm256_sqrt_pd((__m256d)v); }
KM_VT KM_INLINE vf KM_N(km_sqrt_f)(vf v) { return (vf)_mm256_sqrt_ps((__m256)v); }
#elif KM_VB == 64 && defined(KM_DISPATCH_X86)
KM_VT KM_INLINE vd KM_N(km_sqrt_d)(vd v) { return (vd)_mm512_sqrt_pd((__m512d)v); }
KM_VT KM_INLINE vf KM_N(km_sqrt_f)(vf v) { return (vf)_mm512_sqrt_ps((__m512)v); }
#elif KM_VB == 16 && defined(__aarch64__) && defined(__GNUC__)
KM_INLINE vd KM_N(km_sqrt_d)(vd v) { return (vd)vsqrtq_f64((float64x2_t)v); }
KM_INLINE vf KM_N(km_sqrt_f)(vf v) { return (vf)vsqrtq_f32((float32x4_t)v); }
#else
KM_INLINE vd KM_N(km_sqrt_d)(vd v)
{
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); ++i) v[i] = __builtin_sqrt(v[i]);
    return v;
}
KM_INLINE vf KM_N(km_sqrt_f)(vf v)
{
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); ++i) v[i] = __builtin_sqrtf(v[i]);
    return v;
}
#endif

/* v ** e for an integer e >= 0 by repeated squaring. */
KM_INLINE vd KM_N(km_powi_d)(vd v, int e)
{
    vd result = (vd){0} + 1.0;
    while (e > 0) {
        if (e & 1) result *= v;
        e >>= 1;
        if (e) v *= v;
    }
    return result;
}
KM_INLINE vf KM_N(km_powi_f)(vf v, int e)
{
    vf result = (vf){0} + 1.0f;
    while (e > 0) {
        if (e & 1) result *= v;
        e >>= 1;
        if (e) v *= v;
    }
    return result;
}

#undef KM_VT
#undef FMA_D
#undef FMA_F
#undef KM_SD
#undef KM_SF
#undef vd
#undef vdm
#undef vdu
#undef vf
#undef vfm
#undef vfu
#undef KM_N
