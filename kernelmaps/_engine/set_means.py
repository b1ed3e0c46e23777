"""Per-set means of point features: the engine behind the set feature maps.

``set_means(X, centres, phases, kind=..., gamma=...)`` returns, for every
set ``X[i]``, the mean over its points ``x`` of ``f(x, c_j)`` for each
column ``c_j`` of `centres` (shape ``(d, t)``):

- ``"cos"``: ``cos(x . c_j + phases[j])`` (random Fourier features),
- ``"rbf"``: ``exp(-gamma |x - c_j|^2)``,
- ``"laplacian"``: ``exp(-gamma |x - c_j|_1)``.

The (points x t) matrix of point features is never formed.
"""

import numpy as np

from . import _set_means as _impl
from .layout import (
    MEANS_GEMM_DIM,
    MEANS_GROUP_POINTS,
    MEANS_GROUP_SETS,
    TILE_ROWS,
    means_panel,
    pack_cols,
    pack_rows,
    squared_norms,
)

__all__ = ["cos_in_place", "set_means"]


def set_means(X, centres, phases=None, *, kind, gamma=1.0, scale=1.0,
              n_threads=1):
    """`scale` times the mean of the point features of each set of the
    `Bags` `X`.

    Parameters
    ----------
    X : Bags
        Validated sets, float32 or float64, every set non-empty.
    centres : ndarray, shape (d, t)
        Frequencies ("cos") or centres ("rbf", "laplacian") as columns.
    phases : ndarray, shape (t,), optional
        The phases of "cos".
    kind : {"cos", "rbf", "laplacian"}
    gamma : float
        Scale of "rbf" and "laplacian".
    scale : float
        Factor applied to the means.
    n_threads : int

    Returns
    -------
    ndarray, shape (len(X), t), dtype of `X`; the features are summed over
    strips of 4 points in that dtype, then in float64.
    """
    points = X.points
    dtype = points.dtype
    centres = np.asarray(centres, dtype=dtype)
    if kind == "cos" and len(X) == X.n_points and points.shape[1] >= MEANS_GEMM_DIM:
        # Rows, many features: BLAS computes x W faster than the tiles; the
        # phases, cosine and scale follow in place.
        return cos_in_place(np.matmul(points, centres), phases, scale=scale,
                            n_threads=n_threads)
    rows, cols = pack_rows(points), pack_cols(centres.T)
    if kind == "cos":
        row_vec = np.zeros(rows.shape[0], dtype=dtype)
        col_vec = np.zeros(cols.shape[1], dtype=dtype)
        col_vec[: centres.shape[1]] = phases
    else:
        row_vec = squared_norms(points, kind, rows.shape[0])
        col_vec = squared_norms(centres.T, kind, cols.shape[1])
    groups = _impl.plan_groups(X.offsets, MEANS_GROUP_POINTS, MEANS_GROUP_SETS)
    panel = means_panel(dtype)
    out = np.empty((len(X), centres.shape[1]), dtype=dtype)
    tile_buffers = np.empty((n_threads, TILE_ROWS * panel), dtype=dtype)
    acc_buffers = np.empty((n_threads, int(np.diff(groups).max()) * panel))
    _impl.set_means(rows, row_vec, X.offsets, groups, cols, col_vec, out, panel,
                    tile_buffers, acc_buffers, kind, float(gamma), float(scale),
                    n_threads)
    return out


def cos_in_place(Z, phases, *, scale=1.0, n_threads=1):
    """``Z = scale * cos(Z + phases)`` for a C-contiguous float32 or float64
    ``(n, t)`` array `Z`, in place and vectorised; returns `Z`."""
    _impl.cos_rows(Z, np.asarray(phases, dtype=Z.dtype), float(scale), n_threads)
    return Z
