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
    "CKSVD_BLOCK_ROWS",
    "EXPECTED_BLOCK_BYTES",
    "KNN_PAIRS_PER_CALL",
    "MEANS_GEMM_DIM",
    "MEANS_GROUP_POINTS",
    "MEANS_GROUP_SETS",
    "PAIR_MAX_SEGMENTS",
    "TILE_COLS",
    "TILE_ROWS",
    "additive_panel",
    "centre_scale",
    "means_panel",
    "pack_cols",
    "pack_rows",
    "panel_points",
    "round_up",
    "squared_norms",
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
# kNN search: pairs of sets per engine call (memory per call).
KNN_PAIRS_PER_CALL = 1 << 15
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
# Expected kernels: bytes of output per chunk of rows (progress bar steps).
EXPECTED_BLOCK_BYTES = 1 << 26
# CKSVD objective: rows of the data per block of kernel values.
CKSVD_BLOCK_ROWS = 4096


def round_up(n, dtype):
    """`n` rounded up to a multiple of the tile width of `dtype`."""
    nr = TILE_COLS[np.dtype(dtype).name]
    return -(-int(n) // nr) * nr


def panel_points(d, dtype):
    """Points of `d` features in a column panel of PANEL_BYTES."""
    n = PANEL_BYTES // (d * np.dtype(dtype).itemsize)
    return int(min(max(n, PANEL_MIN_POINTS), PANEL_MAX_POINTS))


def additive_panel(d, dtype):
    """Columns (histograms of `d` bins) per block of the additive tiles: a
    panel of PANEL_BYTES, a multiple of the tile width."""
    nr = TILE_COLS[np.dtype(dtype).name]
    block = PANEL_BYTES // (max(d, 1) * np.dtype(dtype).itemsize)
    return max(nr, min(PANEL_MAX_POINTS, block // nr * nr))


def means_panel(dtype):
    """Columns per task of the set means (a multiple of the tile width)."""
    return MEANS_PANEL_BYTES // np.dtype(dtype).itemsize


def pack_rows(points):
    """Row points, padded with zero rows so that every tile is whole."""
    rows = np.zeros((points.shape[0] + TILE_ROWS, points.shape[1]),
                    dtype=points.dtype)
    rows[: points.shape[0]] = points
    return rows


def pack_cols(points):
    """Column points, transposed and padded to a multiple of the tile width."""
    pad = TILE_COLS[points.dtype.name]
    cols = np.zeros((points.shape[1], points.shape[0] + pad), dtype=points.dtype)
    cols[:, : points.shape[0]] = points.T
    return cols


def squared_norms(points, kernel, size):
    """Squared norms padded to `size` (zeros for kernels that need none)."""
    norms = np.zeros(size, dtype=points.dtype)
    if kernel in ("rbf", "sqeuclidean"):
        norms[: points.shape[0]] = np.square(points, dtype=np.float64).sum(axis=1)
    return norms


def centre_scale(x, y=None):
    """Centre the points (of both collections together) on the midpoint of
    their range and scale them by a power of two (exact) into [-1, 1].

    Returns ``(x, y, exponent)``: distances in the new units are those of
    the input times ``2**-exponent``, exactly. Squared norms then cannot
    overflow, however large the input, and float32 loses less to
    cancellation in ``|x|^2 + |y|^2 - 2 <x, y>``.
    """
    dtype = x.dtype
    both = (x,) if y is None else (x, y)
    lo = np.min([a.min(axis=0) for a in both], axis=0).astype(np.float64)
    hi = np.max([a.max(axis=0) for a in both], axis=0).astype(np.float64)
    centre = lo / 2 + hi / 2
    half_span = float(np.max(hi / 2 - lo / 2))
    # half_span < 2**exponent; the floor keeps the scale finite for
    # subnormal data (which then stays below 1 rather than reaching it).
    exponent = max(math.frexp(half_span)[1], -1000)
    scale = math.ldexp(1.0, -exponent)
    x = ((x - centre) * scale).astype(dtype, copy=False)
    if y is not None:
        y = ((y - centre) * scale).astype(dtype, copy=False)
    return x, y, exponent
