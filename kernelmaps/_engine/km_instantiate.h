/*
 * Compile a kernel template for every element type and code path.
 *
 * An engine header defines KM_KERNEL as the file name of its template and
 * includes this file (no include guard: once per template):
 *
 *     #define KM_KERNEL "km_tile_kernel.h"
 *     #include "km_instantiate.h"
 *
 * The template is then included once for float64 and once for float32 on
 * the baseline path (16-byte vectors) and, on x86-64, on the AVX2 path
 * (32-byte vectors) and the AVX-512 path (64-byte vectors), with these
 * macros defined:
 *
 *   KM_T          the element type, double or float
 *   KM_TC         its letter in helper names, d or f
 *   KM_IS_DOUBLE  1 for double, 0 for float (for #if)
 *   KM_ISA        the code path, KM_ISA_BASELINE, KM_ISA_AVX2 or
 *                 KM_ISA_AVX512 (for #if)
 *   KM_ATTR       the code path's function attributes
 *   KM_VB         its vector bytes, 16, 32 or 64
 *   KM_NV         vectors per column step of a tile (KM_NV * KM_W columns):
 *                 1 on AVX-512, 2 otherwise; the 64 bytes of the tile
 *                 padding (KM_NR_D, KM_NR_F) are one step on AVX2 and
 *                 AVX-512, two on the baseline
 *   KM_V, KM_M    the vector and mask types of KM_T at KM_VB bytes
 *   KM_W          the lanes of KM_V
 *   KM_VEC(B), KM_MASK(B)  the vector and mask types at B bytes
 *   KM_OP(op)     the km_simd.h helper `op` for KM_T at KM_VB bytes:
 *                 KM_OP(exp2) is km_exp2_d_32 for float64 on AVX2
 *   KM_FN(name)   `name` for this type and path: KM_FN(km_tile) is
 *                 km_tile_d_avx2; the dispatcher KM_DISPATCH(isa,
 *                 km_tile_d, (...)) calls it
 *
 * A template must #undef every macro it defines itself. (This file includes
 * itself once per code path: the inner level, KM_INSTANTIATE_TYPES defined,
 * includes the template for both element types.)
 */
#ifndef KM_INSTANTIATE_TYPES
/* The outer level: each code path in turn, the inner level below for both
 * element types on it. */
#ifndef KM_KERNEL
#error "define KM_KERNEL, the template to compile, before including km_instantiate.h"
#endif

#define KM_VEC(bytes) KM_CAT(KM_PASTE(km_v, KM_TC), bytes)
#define KM_MASK(bytes) KM_CAT(KM_PASTE(KM_PASTE(km_v, KM_TC), m), bytes)
#define KM_V KM_VEC(KM_VB)
#define KM_M KM_MASK(KM_VB)
#define KM_W (KM_VB / (int)sizeof(KM_T))
#define KM_OP(op) KM_CAT(KM_CAT(KM_PASTE(km_, op), KM_TC), KM_VB)
#define KM_FN(name) KM_CAT(KM_CAT(name, KM_TC), KM_SFX)
#define KM_NV (KM_VB == 64 ? 1 : 2)
#define KM_INSTANTIATE_TYPES

#define KM_SFX base
#define KM_ISA KM_ISA_BASELINE
#define KM_ATTR
#define KM_VB 16
#include "km_instantiate.h"
#undef KM_SFX
#undef KM_ISA
#undef KM_ATTR
#undef KM_VB

#ifdef KM_DISPATCH_X86
#define KM_SFX avx2
#define KM_ISA KM_ISA_AVX2
#define KM_ATTR KM_TARGET_AVX2
#define KM_VB 32
#include "km_instantiate.h"
#undef KM_SFX
#undef KM_ISA
#undef KM_ATTR
#undef KM_VB

#define KM_SFX avx512
#define KM_ISA KM_ISA_AVX512
#define KM_ATTR KM_TARGET_AVX512
#define KM_VB 64
#include "km_instantiate.h"
#undef KM_SFX
#undef KM_ISA
#undef KM_ATTR
#undef KM_VB
#endif

#undef KM_INSTANTIATE_TYPES
#undef KM_VEC
#undef KM_MASK
#undef KM_V
#undef KM_M
#undef KM_W
#undef KM_OP
#undef KM_FN
#undef KM_NV
#undef KM_KERNEL

#else
/* The inner level: the template for both element types on one path. */
#define KM_T double
#define KM_TC d
#define KM_IS_DOUBLE 1
#include KM_KERNEL
#undef KM_T
#undef KM_TC
#undef KM_IS_DOUBLE

#define KM_T float
#define KM_TC f
#define KM_IS_DOUBLE 0
#include KM_KERNEL
#undef KM_T
#undef KM_TC
#undef KM_IS_DOUBLE
#endif
