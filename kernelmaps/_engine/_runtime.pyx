"""What the machine offers the engines: threads (OpenMP), the code path of
the SIMD kernels, the tile geometry the packing must match, and SciPy's
BLAS products (for `_products.pxd`).

The code path is one switch for every extension of the engine: `isa_level`
(declared in _runtime.pxd), which the engines pass to their SIMD
dispatchers. `select_isa` changes it; the tests run every path this CPU has.
"""

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int km_max_threads(void) { return omp_get_max_threads(); }
    static int km_num_procs(void) { return omp_get_num_procs(); }
    #else
    static int km_max_threads(void) { return 1; }
    static int km_num_procs(void) { return 1; }
    #endif
    """
    int km_max_threads() nogil
    int km_num_procs() nogil


cdef void *_blas_function(str name) except NULL:
    from scipy.linalg import cython_blas
    capsule = cython_blas.__pyx_capi__[name]
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


blas_dgemm = <dgemm_t>_blas_function("dgemm")
blas_sgemm = <sgemm_t>_blas_function("sgemm")
blas_dsyrk = <dsyrk_t>_blas_function("dsyrk")
blas_ssyrk = <ssyrk_t>_blas_function("ssyrk")

# The code paths, by level (KM_ISA_BASELINE, KM_ISA_AVX2, KM_ISA_AVX512).
ISAS = ("baseline", "avx2", "avx512")

isa_level = km_best_isa()

# Rows per tile call, and the multiple the columns are padded to.
TILE_ROWS = KM_MR
TILE_COLS = {"float64": KM_NR_D, "float32": KM_NR_F}


def max_threads():
    """Threads an OpenMP region would use now (honours OMP_NUM_THREADS and
    threadpoolctl limits)."""
    return km_max_threads()


def num_procs():
    """Processors available to the OpenMP runtime."""
    return km_num_procs()


def available_isas():
    """The code paths this CPU (and this build) can run, as names."""
    return ISAS[: km_best_isa() + 1]


def simd_isa():
    """The code path every SIMD kernel runs now: "baseline", "avx2" or
    "avx512"."""
    return ISAS[isa_level]


def select_isa(name):
    """Make every SIMD kernel of the engine run the code path `name` (one of
    `available_isas()`); returns the name of the previous one."""
    global isa_level
    if name not in available_isas():
        raise ValueError(
            f"code path {name!r} is not available here; choose from "
            f"{available_isas()}"
        )
    previous = ISAS[isa_level]
    isa_level = ISAS.index(name)
    return previous
