/*
 * Portable SIMD helpers on GCC/Clang vector extensions.
 *
 * The helpers exist for two vector widths, 16 bytes (SSE2, NEON: the
 * baseline) and 32 bytes (AVX2), with the width in their names: km_vd_16,
 * km_exp2_d_32, ... (km_simd_impl.h is the template). A kernel is written
 * once against the KM_W* macros of km_simd_select.h and compiled once per
 * target, with runtime dispatch on x86-64 (KM_DISPATCH_X86).
 *
 * Every helper is `static inline` and always inlined, so it is compiled for
 * the target of the kernel that uses it. No -ffast-math is needed: the
 * transcendental functions are written out here, and the callers guarantee
 * finite, range-checked arguments.
 */
#ifndef KM_SIMD_H
#define KM_SIMD_H

#include <stddef.h>
#include <string.h>

#define KM_INLINE static inline __attribute__((always_inline))
#define KM_CAT_(a, b) a##_##b
#define KM_CAT(a, b) KM_CAT_(a, b)

/* Runtime dispatch to an AVX2+FMA build of a kernel on x86-64 GCC/Clang. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(KM_NO_DISPATCH)
#define KM_DISPATCH_X86 1
#define KM_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

#define KM_VB 16
#include "km_simd_impl.h"
#undef KM_VB

#define KM_VB 32
#include "km_simd_impl.h"
#undef KM_VB

/*
 * Runtime dispatch: KM_DISPATCH(name, (args)) calls name_avx2 or name_base.
 * The choice is made once per extension module, on first use, and can be
 * forced with km_select_isa (the tests run both paths).
 */
#ifdef KM_DISPATCH_X86
/* -1: not decided yet; 0: baseline; 1: AVX2+FMA. */
static int km_use_avx2 = -1;

static void km_select_isa(int allow_avx2)
{
    __builtin_cpu_init();
    km_use_avx2 = allow_avx2 && __builtin_cpu_supports("avx2")
                  && __builtin_cpu_supports("fma");
}
#define KM_DISPATCH(name, args)                                                \
    do {                                                                       \
        if (km_use_avx2 < 0) km_select_isa(1);                                 \
        if (km_use_avx2) KM_CAT(name, avx2) args;                              \
        else KM_CAT(name, base) args;                                          \
    } while (0)
#else
static int km_use_avx2 = 0;
static void km_select_isa(int allow_avx2) { (void)allow_avx2; }
#define KM_DISPATCH(name, args) KM_CAT(name, base) args
#endif

static inline int km_isa_avx2(void)
{
    if (km_use_avx2 < 0) km_select_isa(1);
    return km_use_avx2;
}

#endif /* KM_SIMD_H */
