"""How the engines lay out their work: the tile geometry the packed points
must match, the packing itself, the column panels the engines share, and
the row blocks of whole-array passes. A size that one module uses lives
in that module, beside its use; benchmarks/TUNING.md holds what the sizes
were measured at.
"""

import math

import numpy as np

from ._runtime import TILE_COLS, TILE_ROWS

__all__ = [
    "COPY_BLOCK_BYTES",
    "MATMUL_BLOCK_FLOPS",
    "PRODUCT_CHUNK",
    "TILE_COLS",
    "TILE_ROWS",
    "additive_panel",
    "bandwidth_scale",
    "max_abs",
    "means_panel",
    "pack_cols",
    "pack_rows",
    "panel_points",
    "power_of_two_exponent",
    "round_up",
    "row_blocks",
    "scaled",
    "squares_exponent",
    "tile_cols",
]

# A column panel (points transposed, or histograms) of this many bytes stays
# in the L2 cache while the row points stream past it: the column groups of
# the pair sums and the kNN search, the column blocks of the additive tiles.
PANEL_BYTES = 1 << 17
# ... holding between this many points (small d) and that many (large d).
PANEL_MIN_POINTS = 64
PANEL_MAX_POINTS = 1024
# The set means' panel: 128 float64 or 256 float32 columns per task.
MEANS_PANEL_BYTES = 1024
# The BLAS products of the pair sums and the kNN search sum over chunks of
# this many features (their error bound, `pair_sums.expansion_bound`,
# depends on it).
PRODUCT_CHUNK = {np.dtype(np.float64): 512, np.dtype(np.float32): 256}
# Floating-point operations of one block of `lapack.matmul` (tens of
# milliseconds).
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


def _times_power_of_two(src, e, out, dtype):
    """``out[...] = src * 2**e`` in `dtype` (`src` rounded to it first):
    one multiplication by 2**e where that is a normal number of `dtype`
    (several times faster than ldexp, and the same values: both round the
    exact product once), else ldexp: of `src` copied into `out` where
    `dtype` holds it exactly, of `src` in its own precision (then rounded
    once to `dtype`) where `dtype` is narrower (float64 to float32, which
    NumPy's ldexp has no loop for)."""
    info = np.finfo(dtype)
    if info.minexp <= e < info.maxexp:
        np.multiply(src, dtype.type(2.0**e), out=out, dtype=dtype,
                    casting="unsafe")
    elif np.can_cast(src.dtype, dtype, casting="safe"):
        np.copyto(out, src, casting="unsafe")
        np.ldexp(out, e, out=out)
    else:
        np.copyto(out, np.ldexp(src, e), casting="unsafe")


def pack_rows(points, e=0, dtype=None):
    """Row points times 2**e (exact) in `dtype` (default: theirs), padded
    with zero rows so that every tile is whole."""
    dtype = points.dtype if dtype is None else np.dtype(dtype)
    rows = np.zeros((points.shape[0] + TILE_ROWS, points.shape[1]), dtype=dtype)
    scaled(points, e, dtype, rows[:points.shape[0]])
    return rows


def pack_cols(points, e=0, dtype=None):
    """Column points times 2**e (exact) in `dtype` (default: theirs),
    transposed and padded to a multiple of the tile width."""
    dtype = points.dtype if dtype is None else np.dtype(dtype)
    cols = np.zeros((points.shape[1], points.shape[0] + tile_cols(dtype)),
                    dtype=dtype)
    for a, b in row_blocks(points):
        _times_power_of_two(points[a:b].T, e, cols[:, a:b], dtype)
    return cols


def scaled(points, e, dtype, out=None):
    """``points * 2**e`` in `dtype` (exact barring subnormal or overflowing
    values): a new array, or `out` (of that dtype and shape; `points`
    itself scales it in place)."""
    dtype = np.dtype(dtype)
    out = np.empty(points.shape, dtype=dtype) if out is None else out
    for a, b in row_blocks(points):
        _times_power_of_two(points[a:b], e, out[a:b], dtype)
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
    top = max_abs(x, y)
    for dtype in (x.dtype, np.dtype(np.float64)):
        limit = 1000 if dtype == np.float64 else 120
        e = math.floor(math.log2(gamma) / power) if 0 < gamma < math.inf else 0
        if top > 0:
            e = min(e, power_of_two_exponent(top, limit))
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


def power_of_two_exponent(top, target=0):
    """The exponent e of the power of two that takes the largest magnitude
    `top` of some data (`max_abs`) into ``[2**(target - 1), 2**target)``:
    ``e = target - frexp(top)[1]``; 0 where `top` is 0 (nothing to scale).

    The power-of-two scalings of the package choose their exponent here,
    each caller's rule being `target`: 0 for values at most 1 (the
    sliced-Wasserstein projections, the PSD projection's eigenproblems),
    480 for float64 distances that neither overflow nor underflow (the
    median heuristic), about half the dtype's exponent range for squared
    distances summed over the features (the kNN search), a dtype's limit
    beside the bandwidth (`bandwidth_scale`).

    `top` is a Python float, the largest |value| exactly (float32 values
    too: a float64 holds each of them), and e is exact at every magnitude:
    a subnormal `top` (5e-324 gives ``target + 1073``) or one near the
    float64 maximum (1.7e308 gives ``target - 1024``). Such an e is beyond
    the exponents of float64 numbers: scale by it with `scaled`,
    `pack_rows`, `pack_cols` or ``np.ldexp``, never by ``2.0**e``. Scaled
    so, the data keep every bit (a power of two is exact), except values
    more than the dtype's range below `top`, which stay subnormal or 0.
    """
    return target - math.frexp(top)[1] if top > 0 else 0


def squares_exponent(top, d, dtype):
    """The exponent e (`power_of_two_exponent`) that takes points of `d`
    features in `dtype`, of largest magnitude `top`, to about half the
    exponent range of `dtype` (2**510 in float64, 2**62 in float32, less
    for many features): the most with which their squared differences,
    summed over the features, cannot overflow (each is below 2**(maxexp -
    2) / d), so that the squares of the differences underflow only below
    2**-1000 (float64), 2**-120 (float32) times `top`. For the
    distances of the kNN search and of the energy kernel's tiles."""
    room = np.finfo(dtype).maxexp - 4 - math.ceil(math.log2(max(d, 1)))
    return power_of_two_exponent(top, room // 2)


def max_abs(*arrays):
    """max |a| over the `arrays` as a Python float (0 for None, empty
    arrays or none), in blocks of rows (no temporary array larger than a
    block)."""
    return max((_max_abs(a) for a in arrays if a is not None and a.size),
               default=0.0)


def _max_abs(a):
    if a.nbytes <= COPY_BLOCK_BYTES:
        return float(np.abs(a).max())  # (the method: less overhead than np.max)
    return max(max(-float(a[i:j].min()), float(a[i:j].max()))
               for i, j in row_blocks(a))
