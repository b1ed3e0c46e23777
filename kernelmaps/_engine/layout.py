"""How the engines lay out and cut their work: the tile geometry the packed
points must match, the packing itself, and every panel and block size.

The sizes were tuned on the reference machines (AMD EPYC Zen 1 and Intel
Sapphire Rapids, 2 cores): change them here, and measure with the asv suite.
"""

import math

import numpy as np

from ._runtime import TILE_COLS, TILE_ROWS

__all__ = [
    "ADDITIVE_ROW_BLOCK",
    "CAST_BLOCK_VALUES",
    "CKSVD_BLOCK_ROWS",
    "COPY_BLOCK_BYTES",
    "CSR_MEANS_BLOCK_BYTES",
    "CSR_MEANS_TASK_ROWS",
    "EXPECTED_BLOCK_BYTES",
    "JS_SPARSE_DENSITY",
    "KNN_GEMM_DIM",
    "KNN_PAIRS_PER_CALL",
    "LINEAR_TEST_ROWS",
    "MATMUL_BLOCK_FLOPS",
    "MEANS_GEMM_DIM",
    "MEANS_GROUP_POINTS",
    "MEANS_GROUP_SETS",
    "MOMENTS_GRAM_FLOPS",
    "NYSTROEM_DIAGONAL_BLOCK",
    "OUTOFCORE_BLOCK_ROWS",
    "PAIR_GEMM_BLOCK",
    "PAIR_GEMM_DIM",
    "PAIR_MAX_SEGMENTS",
    "PROBE_BLOCK_VALUES",
    "PRODUCT_CHUNK",
    "RESAMPLE_BLOCK",
    "RESAMPLE_DRAWS_KEPT",
    "RESAMPLE_TASK_FLOPS",
    "RESAMPLE_THREADED_FLOPS",
    "TEST_MATRIX_ROWS",
    "TILE_COLS",
    "TILE_ROWS",
    "TRANSFORM_BLOCK_VALUES",
    "additive_panel",
    "bandwidth_scale",
    "distance_scale",
    "max_abs",
    "means_panel",
    "pack_cols",
    "pack_rows",
    "panel_points",
    "round_up",
    "row_blocks",
    "scaled",
    "tile_cols",
]

# A column panel (points transposed, or histograms) of this many bytes stays
# in the L2 cache while the row points stream past it: the column groups of
# the pair sums and the kNN search, the column blocks of the additive tiles.
PANEL_BYTES = 1 << 17
# ... holding between this many points (small d) and that many (large d).
PANEL_MIN_POINTS = 64
PANEL_MAX_POINTS = 1024
# Pair sums: segments per group, at most.
PAIR_MAX_SEGMENTS = 128
# Pair sums of the rbf and polynomial kernels with at least this many
# features: BLAS computes the dot products (in groups of PAIR_GEMM_BLOCK
# points, over chunks of PRODUCT_CHUNK features), where the expansion
# |x|^2 + |y|^2 - 2 <x, y> is exact enough (pair_sums.py).
PAIR_GEMM_DIM = {np.dtype(np.float64): 128, np.dtype(np.float32): 128}
PAIR_GEMM_BLOCK = 512
PRODUCT_CHUNK = {np.dtype(np.float64): 512, np.dtype(np.float32): 256}
# kNN search: pairs of sets per engine call (memory per call).
KNN_PAIRS_PER_CALL = 1 << 15
# kNN search with at least this many features: squared distances from
# BLAS products of the centred points where a bound certifies them (knn.py).
# Against the tiles (renyi_divergence, 2 threads, AMD Zen 4): float64 1.0x
# at d = 128, 0.9x at 512, 0.76x at 2048 on the AVX-512 path, 0.74x at 128
# and 512 on the AVX2 path; float32 1.17x at 128, 1.04x at 512, 0.59x at
# 2048 (AVX-512), 0.98x and 0.73x (AVX2).
KNN_GEMM_DIM = {np.dtype(np.float64): 128, np.dtype(np.float32): 512}
# Set means: a task's group of whole sets holds up to this many points (more
# for a larger set) and sets, against a panel of MEANS_PANEL_BYTES per
# feature (128 float64 or 256 float32 columns).
MEANS_GROUP_POINTS = 256
MEANS_GROUP_SETS = 64
MEANS_PANEL_BYTES = 1024
# Set means of singleton sets (rows) with at least this many features: BLAS.
MEANS_GEMM_DIM = 256
# Additive histogram tiles: rows per parallel task.
ADDITIVE_ROW_BLOCK = 64
# The Jensen-Shannon kernel of dense float64 histograms with at most this
# share of non-zero values runs through their common non-zeros (CSR), not
# the tiles (which skip a feature that is 0 in all the rows of a tile). On
# 2000 x 300 bags of words (`benchmarks.common.bag_of_words`, AMD Zen 4, one
# thread) the CSR path took 0.52x the time of the tiles at a density of
# 0.05, 0.60x at 0.135 and 0.88x at 0.29 on the AVX-512 path, 0.47x, 0.75x
# and 0.97x on the AVX2 path; 1.2x and 1.8x at 0.44. Float32 tiles take
# 0.4x to 0.25x the time of the CSR path at every density: they stay.
JS_SPARSE_DENSITY = 0.3
# Expected kernels: bytes of output per chunk of rows (progress bar steps).
EXPECTED_BLOCK_BYTES = 1 << 26
# CKSVD objective: rows of the data per block of kernel values.
CKSVD_BLOCK_ROWS = 4096


# -- the blocks of the layers above the engine, and of the engine's
# drivers in Python, each named for where it is used ---------------------
# (_transforms.py)
# A map's transform under a progress bar runs on blocks of rows (whole
# sets) of about this many input values, the same whatever the machine's
# speed (a row's features may depend on the rows it is computed with, by
# a few units in the last place, as BLAS products do): about one chunk
# (50 ms) of a map of a thousand features. Smaller blocks cost more calls:
# RandomFourierFeatures(1024) on 7812 x 512 float32 rows (AMD Zen 4, 2
# threads) took 1.8x the time of the call without a bar in blocks of
# 2**16 values, 1.3x in blocks of 2**18 (written into one output).
TRANSFORM_BLOCK_VALUES = 1 << 18
# (_validation.py)
# Values cast at a time by `cast_output` (a few hundred kB: in cache).
CAST_BLOCK_VALUES = 1 << 16
# (_composite/_nystroem.py)
# Objects per block when the diagonal of a kernel is taken from its
# symmetric blocks (leverage scores of kernels without a cheap diagonal).
NYSTROEM_DIAGONAL_BLOCK = 32
# (_composite/_two_sample.py)
# Resamples per matrix product: K0 @ S is (N, RESAMPLE_BLOCK).
RESAMPLE_BLOCK = 256
# (_composite/_two_sample.py)
# Bytes of resampling draws the aggregated test keeps for all its kernels.
RESAMPLE_DRAWS_KEPT = 1 << 28
# (_composite/_two_sample.py)
# Flops of a block's matrix product (about 0.3 ms) from which the blocks
# run on several threads.
RESAMPLE_THREADED_FLOPS = 2e7
# (_composite/_two_sample.py)
# Flops of one task of a block's product (rows of the matrix times the
# block): about 20 ms on one core, the latency of Ctrl-C (5e8 cost 5 % on
# one thread at 6000 points; 1e9 as fast as one product per block).
RESAMPLE_TASK_FLOPS = 1e9
# (_composite/_two_sample.py)
# Rows of a kernel matrix per task of the two-sample tests' preparation
# (exponentials of its logarithm, row sums of the pairs).
TEST_MATRIX_ROWS = 256
# (_composite/_two_sample.py)
# Rows of points mapped at a time by the linear test.
LINEAR_TEST_ROWS = 1 << 15
# (_probes.py)
# Whole-array checks go in blocks of about this many values: no temporary
# array is larger, and Ctrl-C stops between two blocks.
PROBE_BLOCK_VALUES = 1 << 21
# (_outofcore/_models.py)
# Rows (or sets) per block when one in-memory data set is given.
OUTOFCORE_BLOCK_ROWS = 8192
# (_outofcore/_moments.py)
# Floating-point operations of one product of `_gram` (a tenth of a second).
MOMENTS_GRAM_FLOPS = 2e9
# (_engine/set_means.py)
# csr_cos: a task's rows, and the bytes of W's column block it keeps in cache
# (L2).
CSR_MEANS_TASK_ROWS = 64
# (_engine/set_means.py)
CSR_MEANS_BLOCK_BYTES = 1 << 20
# (_engine/lapack.py)
# Floating-point operations of one block of `matmul` (tens of milliseconds).
MATMUL_BLOCK_FLOPS = 5e8


def tile_cols(dtype):
    """The tile width (column padding) of `dtype`, float32 or float64."""
    return TILE_COLS["float32" if dtype == np.float32 else "float64"]


def round_up(n, dtype):
    """`n` rounded up to a multiple of the tile width of `dtype`."""
    nr = tile_cols(dtype)
    return -(-int(n) // nr) * nr


def panel_points(d, dtype):
    """Points of `d` features in a column panel of PANEL_BYTES."""
    n = PANEL_BYTES // (d * np.dtype(dtype).itemsize)
    return int(min(max(n, PANEL_MIN_POINTS), PANEL_MAX_POINTS))


def additive_panel(d, dtype):
    """Columns (histograms of `d` bins) per block of the additive tiles: a
    panel of PANEL_BYTES, a multiple of the tile width."""
    nr = tile_cols(dtype)
    block = PANEL_BYTES // (max(d, 1) * np.dtype(dtype).itemsize)
    return max(nr, min(PANEL_MAX_POINTS, block // nr * nr))


def means_panel(dtype):
    """Columns per task of the set means (a multiple of the tile width)."""
    return MEANS_PANEL_BYTES // np.dtype(dtype).itemsize


# Whole-array passes (packing, scaling, reductions) go in blocks of rows of
# about this many bytes: each block takes milliseconds, so Ctrl-C stops
# between two, and no temporary array is larger.
COPY_BLOCK_BYTES = 1 << 24


def row_blocks(a):
    """(start, stop) ranges of rows of `a` of about COPY_BLOCK_BYTES."""
    n = a.shape[0]
    if a.nbytes <= COPY_BLOCK_BYTES:
        return ((0, n),)
    row_bytes = max(1, a.itemsize * (a.size // max(n, 1)))
    step = max(1, COPY_BLOCK_BYTES // row_bytes)
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def pack_rows(points, e=0, dtype=None):
    """Row points times 2**e (exact) in `dtype` (default: theirs), padded
    with zero rows so that every tile is whole."""
    dtype = points.dtype if dtype is None else np.dtype(dtype)
    rows = np.zeros((points.shape[0] + TILE_ROWS, points.shape[1]), dtype=dtype)
    for a, b in row_blocks(points):
        np.ldexp(points[a:b], e, out=rows[a:b], dtype=dtype, casting="unsafe")
    return rows


def pack_cols(points, e=0, dtype=None):
    """Column points times 2**e (exact) in `dtype` (default: theirs),
    transposed and padded to a multiple of the tile width."""
    dtype = points.dtype if dtype is None else np.dtype(dtype)
    cols = np.zeros((points.shape[1], points.shape[0] + tile_cols(dtype)),
                    dtype=dtype)
    for a, b in row_blocks(points):
        np.ldexp(points[a:b].T, e, out=cols[:, a:b], dtype=dtype,
                 casting="unsafe")
    return cols


def scaled(points, e, dtype):
    """``points * 2**e`` in `dtype`, a new array (exact barring subnormal
    or overflowing values)."""
    out = np.empty(points.shape, dtype=dtype)
    for a, b in row_blocks(points):
        np.ldexp(points[a:b], e, out=out[a:b], dtype=dtype, casting="unsafe")
    return out


def bandwidth_scale(x, y, kernel, gamma, names="X and Y"):
    """For the kernel exp(-gamma |x - y|^2) ("rbf") or exp(-gamma |x -
    y|_1) ("laplacian") of the points `x` (and `y`, or None): the exponent
    e that takes them to units of the kernel's bandwidth, the gamma in those
    units (about 1), and the dtype to compute in; the points are to be
    packed times 2**e (`pack_rows`, `pack_cols`).

    Multiplying by a power of two is exact: the kernel values are those of
    the unscaled points up to the rounding of the differences, and a pair's
    value does not depend on the other points. e is lowered where the points
    would overflow (beyond 2**1000 in float64, 2**120 in float32); float32
    points whose gamma then leaves the float32 range are computed in
    float64. Raises ValueError when gamma times the squared magnitude of
    the points is beyond float64, naming gamma and the points' arguments,
    `names`.
    """
    power = 2 if kernel == "rbf" else 1
    top = max(max_abs(x), max_abs(y))
    for dtype in (x.dtype, np.dtype(np.float64)):
        limit = 1000 if dtype == np.float64 else 120
        e = math.floor(math.log2(gamma) / power) if 0 < gamma < math.inf else 0
        if top > 0:
            e = min(e, limit - math.frexp(top)[1])
        try:
            scaled_gamma = math.ldexp(gamma, -power * e)
        except OverflowError:
            scaled_gamma = math.inf
        if scaled_gamma * 1.5 < float(np.finfo(dtype).max):
            return e, scaled_gamma, dtype
    raise ValueError(
        f"gamma={gamma:g} is too large for the points of {names}, of "
        f"magnitude {top:g}: gamma * |x|^{power} overflows float64; scale the "
        f"data down"
    )


def distance_scale(x, y=None):
    """The exponent e such that 2**e times the points (of both collections
    together) have their largest magnitude at about 2**limit, the largest
    with which squared distances summed over the features cannot overflow
    (about 2**505 in float64, 2**60 in float32, less for many features).

    Distances between the points times 2**e are those of the input times
    2**e, exactly (barring subnormal values), so ratios of distances are
    unchanged; no point of either collection underflows or overflows in
    squared distances unless the data span more than the floating-point
    range allows.
    """
    top = max(max_abs(x), max_abs(y))
    if top == 0:
        return 0
    max_exp = np.finfo(x.dtype).maxexp
    limit = (max_exp - 4 - math.ceil(math.log2(max(x.shape[1], 1)))) // 2
    return limit - math.frexp(top)[1]


def max_abs(a):
    """max |a| as a Python float (0 for None or an empty array), in blocks
    of rows (no temporary array larger than a block)."""
    if a is None or a.size == 0:
        return 0.0
    if a.nbytes <= COPY_BLOCK_BYTES:
        return float(np.abs(a).max())  # the method: 1 us less than np.max
    return max(max(-float(a[i:j].min()), float(a[i:j].max()))
               for i, j in row_blocks(a))
