"""Per-set means of point features, for the set feature maps (RDF, EMK).

Sets are gathered into *groups* of consecutive whole sets (a few hundred
points) and the feature columns cut into *panels*. A task is a pair
(group, panel): it walks the group's points in strips of KM_MR rows, gets the
features of a strip against the panel from the tile kernels (km_tile.h;
summed over the strip when it lies in one set), accumulates them per set in
float64 and writes their sums, times a factor per set (1 / n times the
scale: the means), on its panel. Weighted sets pass each point's weight
divided by its set's total (row_w of the tiles): the sums are then the
weighted means, and the factors the scale. The driver cuts very large sets
into pieces, summed afterwards. Every output entry is written by exactly
one task in a fixed order, so results do not depend on the number of
threads, bit for bit.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stddef cimport ptrdiff_t
from libc.string cimport memset

import numpy as np

from ._runtime cimport KM_MR, KM_NR_D, KM_NR_F, floating, km_isa_ran
from ._tile cimport (
    KM_COS,
    KM_LAPLACIAN,
    KM_RBF,
    add_row,
    csr_row,
    cos_row,
    km_tile_args,
    tile,
)

KINDS = {"cos": KM_COS, "rbf": KM_RBF, "laplacian": KM_LAPLACIAN}


def plan_groups(const int64_t[::1] offsets, int64_t max_points,
                int64_t max_sets):
    """Set offsets of the groups: consecutive whole sets, a new group when
    the next set would bring it over `max_points` points or `max_sets`
    sets (a larger set is a group of its own)."""
    cdef Py_ssize_t n_sets = offsets.shape[0] - 1
    groups_a = np.empty(n_sets + 1, dtype=np.int64)
    cdef int64_t[::1] groups = groups_a
    cdef Py_ssize_t i, n_groups = 0
    cdef int64_t start = 0
    with nogil:
        for i in range(n_sets):
            if (i == 0 or i - groups[n_groups - 1] >= max_sets
                    or offsets[i + 1] - start > max_points):
                groups[n_groups] = i
                n_groups += 1
                start = offsets[i]
        groups[n_groups] = n_sets
    return groups_a[:n_groups + 1]


cdef void _task(const km_tile_args *args, const floating *rows,
                const floating *row_w, const int64_t *offsets,
                const double *factors, int64_t s0, int64_t s1,
                const floating *cols, const floating *phases, ptrdiff_t c0,
                ptrdiff_t c1, floating *buf, double *acc, floating *out,
                ptrdiff_t ldo) noexcept nogil:
    """out[s, c0:c1] = factors[s] * sum over the points x of set s of
    f(x, column c) (times the weight of x in `row_w` unless NULL), for the
    sets s0 <= s < s1."""
    cdef km_tile_args a = args[0]
    cdef ptrdiff_t width = c1 - c0, d = a.d, c
    cdef ptrdiff_t nr = KM_NR_D if floating is double else KM_NR_F
    cdef ptrdiff_t padded = (width + nr - 1) // nr * nr
    cdef int64_t r0 = offsets[s0], end = offsets[s1], row, s = s0
    cdef double *acc_row
    cdef double factor

    a.ldo = padded
    memset(acc, 0, (s1 - s0) * width * sizeof(double))
    while r0 < end:
        while offsets[s + 1] <= r0:
            s += 1
        # A strip of rows in one set needs only its column sums.
        a.sum_rows = offsets[s + 1] >= r0 + KM_MR
        if row_w != NULL:
            a.row_w = row_w + r0
        tile(&a, rows + r0 * d, cols + c0, phases + c0, padded, buf)
        for row in range(r0, r0 + 1 if a.sum_rows else min(r0 + KM_MR, end)):
            while offsets[s + 1] <= row:
                s += 1
            add_row(acc + (s - s0) * width, buf + (row - r0) * padded, width)
        r0 += KM_MR
    for s in range(s0, s1):
        factor = factors[s]
        acc_row = acc + (s - s0) * width
        for c in range(width):
            out[s * ldo + c0 + c] = <floating>(acc_row[c] * factor)


def set_means(const floating[:, ::1] rows, const floating[::1] row_weights,
              const int64_t[::1] offsets, const double[::1] factors,
              const int64_t[::1] groups,
              const floating[:, ::1] cols, const floating[::1] phases,
              floating[:, ::1] out, Py_ssize_t panel,
              floating[:, ::1] tile_buffers, double[:, ::1] acc_buffers,
              str kind, double gamma, Py_ssize_t task0, Py_ssize_t task1,
              int n_threads):
    """out[s, c] = factors[s] * sum over the points x of set s of
    f(x, column c), for the tasks task0 <= task < task1: task = g * n_panels
    + p is group g on the panel p of columns [p * panel, (p + 1) * panel).

    rows: the points, padded with KM_MR - 1 rows. row_weights: empty, or
    the weight of each row (padded alike, with zeros) multiplying its
    features. cols: the columns transposed (d, ldy), ldy at least the
    column count rounded up to the tile width; phases: their phases (cos)
    or zeros, padded alike. groups: set offsets of the groups
    (plan_groups). panel: columns per task, a multiple of the tile width.
    tile_buffers: (n_threads, KM_MR * panel); acc_buffers: (n_threads,
    largest group's sets * panel).
    """
    cdef km_tile_args args
    cdef Py_ssize_t n_cols = out.shape[1], n_panels, task, tid
    cdef Py_ssize_t g, c0
    cdef const floating *row_w = NULL

    args.d = rows.shape[1]
    args.ldy = cols.shape[1]
    args.ldo = panel
    args.kind = KINDS[kind]
    args.degree = 1
    args.sum_rows = 0
    args.row_w = NULL
    args.gamma = gamma
    args.coef0 = 0.0
    n_panels = (n_cols + panel - 1) // panel
    if groups.shape[0] < 2 or n_cols == 0:
        return
    if row_weights.shape[0] > 0:
        row_w = &row_weights[0]

    for task in prange(task0, task1, nogil=True, schedule="dynamic",
                       num_threads=n_threads):
        tid = threadid()
        g = task // n_panels
        c0 = (task % n_panels) * panel
        _task(&args, &rows[0, 0], row_w, &offsets[0], &factors[0],
              groups[g], groups[g + 1], &cols[0, 0], &phases[0], c0,
              min(c0 + panel, n_cols), &tile_buffers[tid, 0],
              &acc_buffers[tid, 0], &out[0, 0], n_cols)


def cos_rows(floating[:, ::1] Z, const floating[::1] phases, double scale,
             Py_ssize_t row0, Py_ssize_t row1, int n_threads):
    """Z[i] = scale * cos(Z[i] + phases), in place, for the rows
    row0 <= i < row1, in parallel."""
    cdef Py_ssize_t i
    if Z.shape[0] == 0 or Z.shape[1] == 0:
        return
    for i in prange(row0, row1, nogil=True, schedule="static",
                    num_threads=n_threads):
        cos_row(&Z[i, 0], &phases[0], Z.shape[1], <floating>scale)


def csr_cos(const floating[::1] data, const int64_t[::1] indices,
            const int64_t[::1] indptr, const floating[:, ::1] W,
            const floating[::1] phases, double scale, floating[:, ::1] out,
            double[:, ::1] acc_buffers, Py_ssize_t rows_per_task,
            Py_ssize_t row0, Py_ssize_t row1, int n_threads):
    """out[i] = scale * cos(X[i] @ W + phases) for the rows row0 <= i < row1
    of the CSR matrix X (data, indices, indptr): random Fourier features of
    sparse rows, without a sparse product or a second pass.

    A task is `rows_per_task` consecutive rows; it walks the columns in
    blocks of acc_buffers.shape[1] (W's block stays in cache across its
    rows), sums the products of a row's nonzeros in float64 (acc_buffers:
    one row per thread; km_csr_row), then takes the cosine in the dtype.
    Every output entry is written by one task in a fixed order: the result
    does not depend on the number of threads.
    """
    cdef Py_ssize_t t = W.shape[1], block = acc_buffers.shape[1]
    cdef Py_ssize_t n_tasks, task, i, c0, width, j
    cdef int64_t k
    cdef double *acc
    if row1 <= row0 or t == 0:
        return
    n_tasks = (row1 - row0 + rows_per_task - 1) // rows_per_task
    for task in prange(n_tasks, nogil=True, schedule="dynamic",
                       num_threads=n_threads):
        acc = &acc_buffers[threadid(), 0]
        c0 = 0
        while c0 < t:
            width = min(block, t - c0)
            for i in range(row0 + task * rows_per_task,
                           min(row0 + (task + 1) * rows_per_task, row1)):
                k = indptr[i]
                csr_row(acc, &data[k], &indices[k], indptr[i + 1] - k,
                        &W[0, c0], t, width)
                for j in range(width):
                    out[i, c0 + j] = <floating>acc[j]
                cos_row(&out[i, c0], &phases[c0], width, <floating>scale)
            c0 = c0 + block


def last_isa():
    """The code path of this engine's last SIMD call: 0 baseline, 1 AVX2, 2
    AVX-512 (-1 before any), for the tests that every engine follows the
    switch (`_runtime.select_isa`)."""
    return km_isa_ran
