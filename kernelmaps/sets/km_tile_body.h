/*
 * Body of the tile kernels for one target, included by km_tile.h with
 * KM_ATTR (function attributes), KM_SUFFIX (name suffix), KM_VB (vector
 * bytes) and KM_PASS (rows per register block) defined; instantiated here
 * for float64 and float32.
 */
#define KM_H(name) KM_CAT(name, KM_VB)

#define KM_T double
#define KM_V KM_H(km_vd)
#define KM_W (KM_VB / 8)
#define KM_LOAD KM_H(km_load_d)
#define KM_STORE KM_H(km_store_d)
#define KM_ABS KM_H(km_abs_d)
#define KM_POS KM_H(km_pos_d)
#define KM_EXP2 KM_H(km_exp2_d)
#define KM_POWI KM_H(km_powi_d)
#define KM_COSINE KM_H(km_cos_d)
#define KM_TILE KM_CAT(km_tile_d, KM_SUFFIX)
#include "km_tile_kernel.h"
#undef KM_T
#undef KM_V
#undef KM_W
#undef KM_LOAD
#undef KM_STORE
#undef KM_ABS
#undef KM_POS
#undef KM_EXP2
#undef KM_POWI
#undef KM_COSINE
#undef KM_TILE

#define KM_T float
#define KM_V KM_H(km_vf)
#define KM_W (KM_VB / 4)
#define KM_LOAD KM_H(km_load_f)
#define KM_STORE KM_H(km_store_f)
#define KM_ABS KM_H(km_abs_f)
#define KM_POS KM_H(km_pos_f)
#define KM_EXP2 KM_H(km_exp2_f)
#define KM_POWI KM_H(km_powi_f)
#define KM_COSINE KM_H(km_cos_f)
#define KM_TILE KM_CAT(km_tile_f, KM_SUFFIX)
#include "km_tile_kernel.h"
#undef KM_T
#undef KM_V
#undef KM_W
#undef KM_LOAD
#undef KM_STORE
#undef KM_ABS
#undef KM_POS
#undef KM_EXP2
#undef KM_POWI
#undef KM_COSINE
#undef KM_TILE

#undef KM_H
