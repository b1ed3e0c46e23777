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

from .._parallel import resolve_workers

__all__ = ["set_means"]

# Points per block of the NumPy path.
_BLOCK = 2048


def set_means(X, centres, phases=None, *, kind, gamma=1.0, workers=None):
    """Mean of the point features of each set of the `Bags` `X`.

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
    workers : int, optional

    Returns
    -------
    ndarray, shape (len(X), t), dtype of `X`; sums accumulated in float64.
    """
    resolve_workers(workers)
    points = X.points
    dtype = points.dtype
    centres = np.asarray(centres, dtype=dtype)
    sums = np.zeros((len(X), centres.shape[1]))
    owner = np.repeat(np.arange(len(X)), X.sizes)
    for start in range(0, points.shape[0], _BLOCK):
        x = points[start:start + _BLOCK]
        if kind == "cos":
            f = np.cos(x @ centres + np.asarray(phases, dtype=dtype))
        elif kind == "rbf":
            sq = (np.square(x).sum(1)[:, None] + np.square(centres).sum(0)
                  - 2 * (x @ centres))
            f = np.exp(-gamma * np.maximum(sq, 0))
        else:
            f = np.exp(-gamma * np.abs(x[:, :, None] - centres).sum(1))
        np.add.at(sums, owner[start:start + _BLOCK], f)
    sums /= X.sizes[:, None]
    return sums.astype(dtype, copy=False)
