/*
 * The k smallest squared distances along the rows and the columns of a
 * block of distances, for the kNN divergence engine (_knn_impl.pyx).
 *
 * km_knn_select_d / _f scan a block of nrows x ncols squared distances
 * (leading dimension ldd) once and update
 *   - rowtop: nrows lists of k values, ascending (row r at rowtop + r k);
 *   - coltop (unless NULL): ncols lists of k values, ascending, stored with
 *     stride ldc (value q of column j at coltop[q ldc + j]), so that the
 *     column thresholds coltop[(k-1) ldc + j] are contiguous.
 * Lists start filled with +inf. Once warm, a new distance rarely enters a
 * list: each vector of distances is compared with the row threshold and the
 * column thresholds at once, and only a hit goes to the scalar insertion.
 */
#ifndef KM_KNN_H
#define KM_KNN_H

#include "km_simd.h"

#define KM_T double
#define KM_V km_vd_16
#define KM_M km_vdm_16
#define KM_W 2
#define KM_SELECT km_knn_select_d
#define KM_INSERT km_knn_insert_d
#include "km_knn_select.h"
#undef KM_T
#undef KM_V
#undef KM_M
#undef KM_W
#undef KM_SELECT
#undef KM_INSERT

#define KM_T float
#define KM_V km_vf_16
#define KM_M km_vfm_16
#define KM_W 4
#define KM_SELECT km_knn_select_f
#define KM_INSERT km_knn_insert_f
#include "km_knn_select.h"
#undef KM_T
#undef KM_V
#undef KM_M
#undef KM_W
#undef KM_SELECT
#undef KM_INSERT

#endif /* KM_KNN_H */
