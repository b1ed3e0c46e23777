# The declarations every compiled engine shares: the element types, the code
# path of the SIMD kernels, and the tile geometry (km_simd.h).

from cython cimport floating  # float32 or float64

# CSR index arrays: int32 or int64.
ctypedef fused index_t:
    int
    long long

cdef extern from "km_simd.h" nogil:
    int KM_ISA_BASELINE
    int KM_ISA_AVX2
    int KM_ISA_AVX512
    int KM_MR
    int KM_NR_D
    int KM_NR_F
    int km_best_isa()
    # The code path of the last SIMD call of the including module (-1
    # before any): each engine's `last_isa` reads its own, for the tests.
    int km_isa_ran

# The code path (KM_ISA_*) every SIMD kernel runs: the engine's one switch,
# set at import to the best this CPU runs and changed by select_isa.
# Engines pass it to the dispatchers of km_simd.h.
cdef int isa_level

# The BLAS matrix products of SciPy (scipy.linalg.cython_blas), for the
# engines' threads (the BLAS on one thread): Fortran order, 32-bit integers.
# Set when _runtime is imported.
ctypedef void (*dgemm_t)(char *transa, char *transb, int *m, int *n, int *k,
                         double *alpha, const double *a, int *lda,
                         const double *b, int *ldb, double *beta, double *c,
                         int *ldc) noexcept nogil
ctypedef void (*sgemm_t)(char *transa, char *transb, int *m, int *n, int *k,
                         float *alpha, const float *a, int *lda,
                         const float *b, int *ldb, float *beta, float *c,
                         int *ldc) noexcept nogil
ctypedef void (*dsyrk_t)(char *uplo, char *trans, int *n, int *k,
                         double *alpha, const double *a, int *lda,
                         double *beta, double *c, int *ldc) noexcept nogil
ctypedef void (*ssyrk_t)(char *uplo, char *trans, int *n, int *k,
                         float *alpha, const float *a, int *lda,
                         float *beta, float *c, int *ldc) noexcept nogil
cdef dgemm_t blas_dgemm
cdef sgemm_t blas_sgemm
cdef dsyrk_t blas_dsyrk
cdef ssyrk_t blas_ssyrk
