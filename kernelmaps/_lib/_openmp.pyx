"""Thread counts from the OpenMP runtime (1 when built without OpenMP)."""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int km_max_threads(void) { return omp_get_max_threads(); }
    static int km_num_procs(void) { return omp_get_num_procs(); }
    static int km_have_openmp(void) { return 1; }
    #else
    static int km_max_threads(void) { return 1; }
    static int km_num_procs(void) { return 1; }
    static int km_have_openmp(void) { return 0; }
    #endif
    """
    int km_max_threads() nogil
    int km_num_procs() nogil
    int km_have_openmp() nogil


def max_threads():
    """Threads an OpenMP region would use now (honours OMP_NUM_THREADS and
    threadpoolctl limits)."""
    return km_max_threads()


def num_procs():
    """Processors available to the OpenMP runtime."""
    return km_num_procs()


def have_openmp():
    """Whether the extensions were built with OpenMP."""
    return bool(km_have_openmp())
