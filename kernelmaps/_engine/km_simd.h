/*
 * The shared base of the compiled engines: portable SIMD helpers on GCC/Clang
 * vector extensions, the code paths (instruction sets) and their runtime
 * dispatch, and the tile geometry.
 *
 * The helpers exist for three vector widths, 16 bytes (SSE2, NEON: the
 * baseline), 32 bytes (AVX2) and 64 bytes (AVX-512), with the width in their
 * names: km_vd_16, km_exp2_d_32, ... (km_simd_impl.h is their template). A
 * kernel is written once, as a template header, and compiled for every
 * element type and code path by km_instantiate.h; its dispatcher
 * (KM_DISPATCH) calls the build of the code path the caller passes: the
 * engine's one switch, `isa_level` of kernelmaps/_engine/_runtime.pyx.
 *
 * Every helper is `static inline` and always inlined, so it is compiled for
 * the target of the kernel that uses it. No -ffast-math is needed: the
 * transcendental functions are written out here, and the callers guarantee
 * finite, range-checked arguments.
 *
 * Fused multiply-adds are written out (km_fma_d_32, ...): the build turns
 * floating-point contraction off (meson.build), so that which operations
 * round once is fixed by this source, not chosen by the compiler, and the
 * paths and kernels that promise the same bits give them with any
 * compiler.
 */
#ifndef KM_SIMD_H
#define KM_SIMD_H

#include <stddef.h>
#include <string.h>

#define KM_INLINE static inline __attribute__((always_inline))
#define KM_CAT_(a, b) a##_##b
#define KM_CAT(a, b) KM_CAT_(a, b)
#define KM_PASTE_(a, b) a##b
#define KM_PASTE(a, b) KM_PASTE_(a, b)

/* The code paths, by level (macros, so that templates can test them). */
#define KM_ISA_BASELINE 0
#define KM_ISA_AVX2 1
#define KM_ISA_AVX512 2

/* Builds of every kernel for AVX2+FMA and for AVX-512 (F, DQ, VL, BW: the
 * x86-64-v4 level) on x86-64 GCC/Clang. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(KM_NO_DISPATCH)
#define KM_DISPATCH_X86 1
#define KM_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define KM_TARGET_AVX512                                                       \
    __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>
#endif

/* The best code path of this CPU (and of this build). GCC's and Clang's
 * __builtin_cpu_supports report AVX-512 only where the operating system
 * saves the 512-bit registers. */
static inline int km_best_isa(void)
{
#ifdef KM_DISPATCH_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return KM_ISA_BASELINE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
        return KM_ISA_AVX512;
    return KM_ISA_AVX2;
#else
    return KM_ISA_BASELINE;
#endif
}

/* The code path of the last dispatch of this extension module (a static
 * per module: each includes this header once), -1 before the first: the
 * tests read it (`last_isa` of each engine) to check that every engine
 * runs the path of the switch, which its results need not show (paths may
 * give the same bits). Written only where it changes, with relaxed atomics:
 * the dispatchers run on every thread. */
static int km_isa_ran __attribute__((unused)) = -1;

KM_INLINE int km_note_isa(int isa, int level)
{
    if (__atomic_load_n(&km_isa_ran, __ATOMIC_RELAXED) != level)
        __atomic_store_n(&km_isa_ran, level, __ATOMIC_RELAXED);
    return isa;
}

/* KM_DISPATCH(isa, name, (args)): call name_avx512, name_avx2 or name_base,
 * by the level `isa` (the caller passes the engine's switch), noting the
 * path taken in km_isa_ran; KM_DISPATCH_VALUE: the same call as an
 * expression, its value. */
#ifdef KM_DISPATCH_X86
#define KM_DISPATCH(isa, name, args)                                           \
    do {                                                                       \
        if ((isa) >= KM_ISA_AVX512) {                                          \
            km_note_isa(isa, KM_ISA_AVX512);                                   \
            KM_CAT(name, avx512) args;                                         \
        } else if ((isa) >= KM_ISA_AVX2) {                                     \
            km_note_isa(isa, KM_ISA_AVX2);                                     \
            KM_CAT(name, avx2) args;                                           \
        } else {                                                               \
            km_note_isa(isa, KM_ISA_BASELINE);                                 \
            KM_CAT(name, base) args;                                           \
        }                                                                      \
    } while (0)
#define KM_DISPATCH_VALUE(isa, name, args)                                     \
    ((isa) >= KM_ISA_AVX512                                                    \
         ? (km_note_isa(isa, KM_ISA_AVX512), KM_CAT(name, avx512) args)        \
     : (isa) >= KM_ISA_AVX2                                                    \
         ? (km_note_isa(isa, KM_ISA_AVX2), KM_CAT(name, avx2) args)            \
         : (km_note_isa(isa, KM_ISA_BASELINE), KM_CAT(name, base) args))
#else
#define KM_DISPATCH(isa, name, args)                                           \
    do {                                                                       \
        km_note_isa(isa, KM_ISA_BASELINE);                                     \
        KM_CAT(name, base) args;                                               \
    } while (0)
#define KM_DISPATCH_VALUE(isa, name, args)                                     \
    (km_note_isa(isa, KM_ISA_BASELINE), KM_CAT(name, base) args)
#endif

/* The tile geometry of the tile engines (km_tile.h, km_additive.h): a tile
 * call covers KM_MR rows, and the caller pads the columns to a multiple of
 * KM_NR_D (float64) or KM_NR_F (float32): 64 bytes, which the column step
 * of every code path divides (KM_NV vectors of KM_VB bytes; see
 * km_instantiate.h). kernelmaps/_engine/layout.py packs the points to
 * match. */
#define KM_MR 4
#define KM_NR_D 8
#define KM_NR_F 16

#define KM_VB 16
#include "km_simd_impl.h"
#undef KM_VB

#define KM_VB 32
#include "km_simd_impl.h"
#undef KM_VB

#define KM_VB 64
#include "km_simd_impl.h"
#undef KM_VB

#endif /* KM_SIMD_H */
