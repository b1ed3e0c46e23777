/*
 * Row and column selection for one target, included by km_knn.h with
 * KM_ATTR, KM_SUFFIX and KM_X86_MINMAX (1: use the AVX min/max
 * instructions) defined; instantiated here for float64 and float32.
 */
#define KM_T double
#define KM_V km_vd_32
#define KM_M km_vdm_32
#define KM_W KM_KW_D
#define KM_ROWS KM_CAT(km_knn_rows_d, KM_SUFFIX)
#define KM_COLS KM_CAT(km_knn_cols_d, KM_SUFFIX)
#define KM_NET KM_CAT(km_knn_net_d, KM_SUFFIX)
#define KM_LOADX KM_CAT(km_knn_loadx_d, KM_SUFFIX)
#if KM_X86_MINMAX
#define KM_VMIN(a, b) __builtin_ia32_minpd256((a), (b))
#define KM_VMAX(a, b) __builtin_ia32_maxpd256((a), (b))
#endif
#include "km_knn_kernel.h"
#undef KM_T
#undef KM_V
#undef KM_M
#undef KM_W
#undef KM_ROWS
#undef KM_COLS
#undef KM_NET
#undef KM_LOADX
#undef KM_VMIN
#undef KM_VMAX

#define KM_T float
#define KM_V km_vf_32
#define KM_M km_vfm_32
#define KM_W KM_KW_F
#define KM_ROWS KM_CAT(km_knn_rows_f, KM_SUFFIX)
#define KM_COLS KM_CAT(km_knn_cols_f, KM_SUFFIX)
#define KM_NET KM_CAT(km_knn_net_f, KM_SUFFIX)
#define KM_LOADX KM_CAT(km_knn_loadx_f, KM_SUFFIX)
#if KM_X86_MINMAX
#define KM_VMIN(a, b) __builtin_ia32_minps256((a), (b))
#define KM_VMAX(a, b) __builtin_ia32_maxps256((a), (b))
#endif
#include "km_knn_kernel.h"
#undef KM_T
#undef KM_V
#undef KM_M
#undef KM_W
#undef KM_ROWS
#undef KM_COLS
#undef KM_NET
#undef KM_LOADX
#undef KM_VMIN
#undef KM_VMAX
