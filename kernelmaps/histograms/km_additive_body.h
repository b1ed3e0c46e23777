/*
 * The additive tiles for float64 and float32 on one target: included by
 * km_additive.h with KM_ATTR (function attributes), KM_SUFFIX (name suffix)
 * and KM_VB (vector bytes) defined.
 */
#define KM_T double
#define KM_TINY DBL_MIN
#define KM_NAME KM_CAT(km_additive_d, KM_SUFFIX)
#define KM_V KM_CAT(km_vd, KM_VB)
#define KM_M KM_CAT(km_vdm, KM_VB)
#define KM_LOG2 KM_CAT(km_log2_d, KM_VB)
#include "km_additive_kernel.h"
#undef KM_T
#undef KM_TINY
#undef KM_NAME
#undef KM_V
#undef KM_M
#undef KM_LOG2

#define KM_T float
#define KM_TINY FLT_MIN
#define KM_NAME KM_CAT(km_additive_f, KM_SUFFIX)
#define KM_V KM_CAT(km_vf, KM_VB)
#define KM_M KM_CAT(km_vfm, KM_VB)
#define KM_LOG2 KM_CAT(km_log2_f, KM_VB)
#include "km_additive_kernel.h"
#undef KM_T
#undef KM_TINY
#undef KM_NAME
#undef KM_V
#undef KM_M
#undef KM_LOG2
