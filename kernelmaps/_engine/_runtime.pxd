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

# The code path (KM_ISA_*) every SIMD kernel runs: the engine's one switch,
# set at import to the best this CPU runs and changed by select_isa.
# Engines pass it to the dispatchers of km_simd.h.
cdef int isa_level
