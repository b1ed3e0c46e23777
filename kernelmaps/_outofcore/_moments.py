"""Streaming moments of feature blocks: what rf_pca and rf_ridge reduce to.

Each block of features is reduced to float64 moments (count, means, centred
cross-products with themselves and with the targets) and dropped. Moments
of two blocks combine exactly (Chan, Golub and LeVeque), in any order, so
the same code serves a stream of blocks read once and the blocks of a Dask
array reduced in parallel on a cluster. Centring each block on its own mean
before the product keeps the covariance accurate when the features have a
large mean (chi2 features are non-negative), where ``Z^T Z - n m m^T``
would cancel.
"""

import numpy as np
import scipy.sparse

from .._engine.layout import row_blocks

__all__ = ["DeviceMoments", "Moments", "add_all", "block_moments", "on_host",
           "reduce_tree"]


class Moments:
    """Count ``n``, column means and centred cross-products of features Z
    (n, p) and optional targets y (n, c): ``M2 = Zc^T Zc``, ``Czy = Zc^T yc``.
    """

    __slots__ = ("Czy", "M2", "mean", "n", "y_mean")

    def __init__(self, Z, y=None):
        if scipy.sparse.issparse(Z):
            Z = Z.toarray()
        Z = np.asanyarray(Z)
        if Z.ndim != 2:
            raise ValueError(f"features must be 2-D, got shape {Z.shape}")
        Z = _copy(Z)  # a copy, centred in place
        self.n = n = Z.shape[0]
        self.mean = Z.sum(axis=0) / max(n, 1)
        Z -= self.mean
        self.M2 = _gram(Z)
        self.y_mean = self.Czy = None
        if y is not None:
            self.y_mean = y.sum(axis=0) / max(n, 1)
            self.Czy = Z.T @ (y - self.y_mean)

    _fields = ("Czy", "M2", "mean", "n", "y_mean")

    def add(self, other):
        """Combine with the moments of other rows, in place (`_combine`)."""
        if other.n == 0:
            return self
        if self.n == 0:
            for name in self._fields:
                setattr(self, name, getattr(other, name))
            return self
        n = self.n + other.n
        self._combine(other, self.n * other.n / n, other.n / n)
        self.n = n
        return self

    def _combine(self, other, w, share):
        """The means and cross-products of both, in place: ``M2 += M2' + w
        d d^T``, ``mean += share d`` (d the difference of the means), and
        those of the targets alike."""
        delta = other.mean - self.mean
        for a, b in row_blocks(self.M2):  # (Ctrl-C stops between blocks)
            self.M2[a:b] += other.M2[a:b]
            self.M2[a:b] += w * np.outer(delta[a:b], delta)
        self.mean += delta * share
        if self.Czy is not None:
            dy = other.y_mean - self.y_mean
            self.Czy += other.Czy
            self.Czy += w * np.outer(delta, dy)
            self.y_mean += dy * share


class DeviceMoments(Moments):
    """`Moments` of features of another array library (`library`, a
    `kernelmaps._libraries.ArrayLibrary` that computes), kept on their
    device in float64, without their gradient: combined there (`add`) and
    copied to the host once (`on_host`), the p x p cross-products and the
    means, not the features."""

    __slots__ = ("library",)

    def __init__(self, library, Z, y=None):
        xp = library.xp
        self.library = library
        Z = xp.astype(library.host_values(Z), xp.float64)  # (a copy, centred)
        if not library.all_finite(Z):
            raise ValueError("the features of a block contain NaN or infinity")
        self.n = n = Z.shape[0]
        self.mean = xp.sum(Z, axis=0) / max(n, 1)
        Zc = Z - self.mean
        self.M2 = xp.matrix_transpose(Zc) @ Zc
        self.y_mean = self.Czy = None
        if y is not None:
            if isinstance(y, np.ndarray):  # (else the library's, checked)
                y = library.from_numpy(y)
            self.y_mean = xp.sum(y, axis=0) / max(n, 1)
            self.Czy = xp.matrix_transpose(Zc) @ (y - self.y_mean)

    def _combine(self, other, w, share):
        """`Moments._combine` on the device, by new arrays."""
        delta = other.mean - self.mean
        self.M2 = self.M2 + other.M2 + w * (delta[:, None] * delta[None, :])
        self.mean = self.mean + delta * share
        if self.Czy is not None:
            dy = other.y_mean - self.y_mean
            self.Czy = self.Czy + other.Czy + w * (delta[:, None] * dy[None, :])
            self.y_mean = self.y_mean + dy * share


def on_host(moments):
    """`Moments` (NumPy) of `DeviceMoments` (their arrays copied to the
    host), or the `Moments` given."""
    if not isinstance(moments, DeviceMoments):
        return moments
    host = Moments.__new__(Moments)
    host.n = moments.n
    for name in ("mean", "M2", "y_mean", "Czy"):
        value = getattr(moments, name)
        setattr(host, name, None if value is None else np.array(
            moments.library.to_numpy(value), dtype=np.float64))
    return host


def add_all(acc, stats):
    """Add the moments `stats` to `acc`, one by one, in place; returns `acc`."""
    for a, s in zip(acc, stats, strict=True):
        a.add(s)
    return acc


def block_moments(Z, y):
    """The moments of each feature block of the list `Z`, with targets `y`
    (float64 (n, c), or None)."""
    return [Moments(z, y) for z in Z]


def reduce_tree(parts, combine):
    """``combine`` the `parts` pairwise, level by level, down to one: a tree
    of depth log2(len(parts)) (for Dask, of delayed calls)."""
    while len(parts) > 1:
        parts = [combine(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


# Floating-point operations of one product of `_gram` (a tenth of a second).
MOMENTS_GRAM_FLOPS = 2e9


def _copy(Z):
    """The 2-D array `Z` as a new float64 array, checked finite, a block of
    rows at a time: a block of features is hundreds of MB, whose copy (the
    first touch of fresh memory) took half a second in one call, which
    Ctrl-C waited for."""
    out = np.empty(Z.shape, dtype=np.float64)
    for a, b in row_blocks(out):
        out[a:b] = Z[a:b]
        if not np.isfinite(out[a:b]).all():
            raise ValueError("the features of a block contain NaN or infinity")
    return out


def _gram(Z):
    """``Z^T Z``, summed over blocks of rows: each a BLAS call (syrk) short
    enough that Ctrl-C stops between two."""
    n, p = Z.shape
    step = max(1, int(MOMENTS_GRAM_FLOPS // max(2.0 * p * p, 1.0)))
    if step >= n:
        return Z.T @ Z
    out = np.zeros((p, p))
    for start in range(0, n, step):
        block = Z[start:start + step]
        out += block.T @ block
    return out
