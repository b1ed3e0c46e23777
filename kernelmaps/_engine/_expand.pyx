"""The additive histogram maps, value by value: each input value x expands
into the n_terms features of its dimension, written to one row of `out`.
Dense input is its flattened array (the dimension of value i is i % d),
CSR input its data array (the dimension is its column index). A value of 0
gives n_terms zeros, so CSR input gives CSR output with the same sparsity.
OpenMP over blocks of values; computed in float64, stored in the input
precision.
"""
from cython.parallel cimport prange
from libc.math cimport cos, log, sin, sqrt

from ._runtime cimport floating, index_t

cdef enum:
    DIRECT = 0
    CHEBYSHEV = 1
    HOMOGENEOUS = 2
    SQRT = 3

KINDS = {"direct": DIRECT, "chebyshev": CHEBYSHEV, "homogeneous": HOMOGENEOUS,
         "sqrt": SQRT}

cdef double PI = 3.141592653589793
cdef double SQRT2 = 1.4142135623730951


cdef inline void _direct(double x, const double *k, const double *c,
                         floating *out, Py_ssize_t n) noexcept nogil:
    """c_q(x) = prod_{p<q} (x - k_p)/(x + k_p) * 2 sqrt(k_q) x / (x + k_q),
    with c[q] = 2 sqrt(k_q)."""
    cdef double prod = 1.0
    cdef Py_ssize_t q
    for q in range(n):
        out[q] = <floating>(prod * c[q] * x / (x + k[q]))
        prod = prod * (x - k[q]) / (x + k[q])


cdef inline void _chebyshev(double x, double scale, floating *out,
                            Py_ssize_t n) noexcept nogil:
    """sqrt(s) d_q(x / s): d_0 = 2x/(x+1), d_1 = sqrt(2) a d_0,
    d_q = (2 a d_{q-1} - (q-2) d_{q-2}) / q with a = log(x)/pi."""
    cdef double z = x / scale, a = log(z) / PI, root = sqrt(scale)
    cdef double d0 = 2 * z / (z + 1), d1, d2
    cdef Py_ssize_t q
    out[0] = <floating>(root * d0)
    if n == 1:
        return
    d1 = SQRT2 * a * d0
    out[1] = <floating>(root * d1)
    for q in range(2, n):
        d2 = (2 * a * d1 - (q - 2) * d0) / q
        out[q] = <floating>(root * d2)
        d0 = d1
        d1 = d2


cdef inline void _homogeneous(double x, const double *c, double step,
                              floating *out, Py_ssize_t n) noexcept nogil:
    """Vedaldi-Zisserman: c[0] sqrt(x), then c[j] sqrt(x) (cos, sin)(j L
    log x) for j = 1 .. (n - 1) / 2, with c[j] = sqrt(2 L kappa(j L))."""
    cdef double root = sqrt(x), lx = log(x), t
    cdef Py_ssize_t j
    out[0] = <floating>(c[0] * root)
    for j in range(1, (n + 1) // 2):
        t = j * step * lx
        out[2 * j - 1] = <floating>(c[j] * root * cos(t))
        out[2 * j] = <floating>(c[j] * root * sin(t))


def expand(str kind, const floating[::1] values, const index_t[::1] cols,
           Py_ssize_t d, const double[:, ::1] params, double scale,
           floating[:, ::1] out, index_t[::1] out_cols, Py_ssize_t start,
           Py_ssize_t stop, int n_threads):
    """out[i] = the features of values[i] (see the module docstring), for
    start <= i < stop.

    params: one row of parameters per dimension, or a single shared row
    (direct: k_1..k_T then 2 sqrt(k_1)..2 sqrt(k_T); homogeneous: the
    coefficients c_j). cols: the column of each value (CSR), or empty for
    dense input. scale: Chebyshev's scale, or the homogeneous step L.
    out_cols: for CSR input, the output column of each feature,
    cols[i] * n_terms + q (empty for dense input).
    """
    cdef int code = KINDS[kind]
    cdef Py_ssize_t n = out.shape[1], i, q, row
    cdef bint shared = params.shape[0] == 1, dense = cols.shape[0] == 0
    cdef double x
    for i in prange(start, stop, nogil=True, schedule="static",
                    num_threads=n_threads):
        if not dense:
            for q in range(n):
                out_cols[i * n + q] = <index_t>(cols[i] * n + q)
        x = values[i]
        if x == 0:
            for q in range(n):
                out[i, q] = 0
            continue
        if shared:
            row = 0
        elif dense:
            row = i % d
        else:
            row = cols[i]
        if code == DIRECT:
            _direct(x, &params[row, 0], &params[row, n], &out[i, 0], n)
        elif code == CHEBYSHEV:
            _chebyshev(x, scale, &out[i, 0], n)
        elif code == HOMOGENEOUS:
            _homogeneous(x, &params[row, 0], scale, &out[i, 0], n)
        else:
            out[i, 0] = <floating>sqrt(x)
