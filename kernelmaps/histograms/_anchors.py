"""Additive nearest-neighbour feature maps (ANNFM, k-ANNFM): per-dimension
anchors, an exact factorisation of each anchor kernel matrix, and table
lookup."""

import numpy as np
import scipy.sparse

from .. import _array_api
from .._base import FeatureMap
from .._engine import anchors as engine
from .._engine import lapack
from .._parallel import resolve_workers
from .._probes import as_float_array
from .._transforms import blocked_rows, checked_rows
from .._validation import check_choice, check_histograms, check_scalar
from . import _array_maps

__all__ = ["AnchorMap"]


def _chi2(x, y):
    s = x + y
    return np.where(s > 0, 2 * x * (y / np.where(s > 0, s, 1.0)), 0.0)


def _js(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        s = x + y
        tx = np.where(x > 0, x / 2 * np.log2(s / np.where(x > 0, x, 1.0)), 0.0)
        ty = np.where(y > 0, y / 2 * np.log2(s / np.where(y > 0, y, 1.0)), 0.0)
    return tx + ty


KERNELS = {
    "chi2": _chi2,
    "js": _js,
    "intersection": np.minimum,
    "hellinger": lambda x, y: np.sqrt(x) * np.sqrt(y),
}

# Dimensions whose largest value is outside [2**-_SAFE, 2**_SAFE] are fitted
# on their values divided by a power of 4 (exact), so that the k-means sums
# of squares and the kernel values neither overflow nor underflow: the
# named kernels are homogeneous of degree 1, k(p x, p y) = p k(x, y).
_SAFE = 256
# Anchors per dimension at most: each dimension's anchor kernel matrix is
# n_anchors**2 and its eigendecomposition n_anchors**3 (and codes fit uint16).
_MAX_ANCHORS = 2**16


def _power_of_4_scales(top):
    """Per dimension, 1, or the power of 4 nearest `top` when `top` is
    outside [2**-_SAFE, 2**_SAFE]."""
    exponent = np.frexp(top)[1]  # top in [2**(exponent - 1), 2**exponent)
    scale = np.ones_like(top)
    far = (exponent > _SAFE) | (exponent < -_SAFE)
    scale[far] = np.ldexp(1.0, 2 * ((exponent[far] - 1) // 2))  # top / scale in [1, 4)
    return scale


class AnchorMap(FeatureMap):
    r"""Additive nearest-neighbour feature map (ANNFM and k-ANNFM).

    For an additive kernel :math:`K(x, y) = \sum_j k(x_j, y_j)` whose
    one-dimensional kernel k is a Mercer kernel, each dimension j gets N
    anchors :math:`a_1 < \dots < a_N` (0 included) and the exact
    factorisation of their kernel matrix, :math:`K_j = V L V^T`, truncated
    to the smallest rank holding `energy` of the spectrum:
    :math:`Q_j = V_r L_r^{1/2}`, one row of features per anchor (section 3
    of [1]_). A value then takes the features of its nearest anchor
    (ANNFM), or a weighted sum of those of its `n_neighbors` nearest
    (k-ANNFM), found by binary search. The error is controlled by how well
    the anchors cover the values (Theorem 1 of [1]_: O(eps) for an
    eps-cover, O(eps^2) with linear interpolation for a smooth k).

    `fit` places the anchors and factorises their kernel matrices.

    Parameters
    ----------
    kernel : {"chi2", "js", "intersection", "hellinger"} or callable, default="chi2"
        The one-dimensional kernel: ``2xy/(x+y)``, the Jensen-Shannon term,
        ``min(x, y)``, ``sqrt(xy)``, or a vectorised ``k(x, y)`` on arrays
        of non-negative values (a Mercer kernel).
    n_anchors : int, default=50
        Anchors per dimension, 2 <= N <= 65536, 0 included.
    anchors : {"uniform", "kmeans"}, default="uniform"
        "uniform": N equally spaced points from 0 to the largest training
        value of the dimension. "kmeans": 0 and the N - 1 centres of the
        optimal 1-D k-means of the dimension's non-zero training values
        (exact dynamic programming, no random restarts).
    energy : float, default=0.99
        In (0, 1]: each dimension keeps the fewest eigenvalues whose sum
        reaches this share of the trace (1.0: all positive ones, the exact
        factorisation).
    n_neighbors : int, default=1
        Anchors per value: 1 is ANNFM, more is k-ANNFM.
    weights : {"uniform", "distance"}, default="uniform"
        Weights of the neighbours: equal (the paper's k-ANNFM), or
        inversely proportional to the distance. With 2 neighbours,
        "distance" takes the two anchors bracketing the value and
        interpolates linearly between them.

    Attributes
    ----------
    anchors_ : ndarray, shape (d, n_anchors)
        The anchors of each dimension.
    rank_ : ndarray of int, shape (d,)
        Features kept per dimension.
    table_ : ndarray, shape (``sum(n_anchors * rank_)``,)
        The anchor features of all dimensions, concatenated: dimension j's
        ``(n_anchors, rank_[j])`` block, row-major, at ``table_offsets_[j]``.
    table_offsets_ : ndarray of int, shape (d + 1,)
    feature_offsets_ : ndarray of int, shape (d + 1,)
        Output columns ``feature_offsets_[j]:feature_offsets_[j + 1]`` hold
        the ``rank_[j]`` features of input dimension j.
    n_features_in_ : int
        Width d of the training histograms.
    n_features_out_ : int
        ``sum(rank_)``.
    feature_names_in_ : ndarray of str
        The column names of a DataFrame `X` (only then).

    See Also
    --------
    HomogeneousKernelMap, Chi2DirectMap : Analytic maps.
    additive_chi2_kernel, intersection_kernel, js_kernel, hellinger_kernel

    Notes
    -----
    `fit` handles values of any magnitude:
    for the named kernels, homogeneous of degree 1, a dimension whose
    values are beyond ``2**256`` (or below ``2**-256``) is fitted on its
    values divided by a power of 4 and its features scaled back, exactly.

    References
    ----------
    .. [1] Z. Wang, X.-T. Yuan, Q. Liu and S. Yan, "Additive Nearest
       Neighbor Feature Maps", IEEE International Conference on Computer
       Vision (ICCV), 2015, sections 3-4.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import AnchorMap, additive_chi2_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 16))
    >>> X /= X.sum(axis=1, keepdims=True)
    >>> annfm = AnchorMap("chi2", n_anchors=50, energy=0.99).fit(X)
    >>> int(annfm.rank_.max()), annfm.n_features_out_
    (2, 32)
    >>> K = additive_chi2_kernel(X)
    >>> Z = annfm.transform(X)
    >>> print(f"{np.abs(Z @ Z.T - K).mean():.0e}")
    4e-03
    >>> codes = annfm.codes(X)  # one uint8 per value
    >>> print(codes.dtype, np.abs(annfm.decode(codes) - Z).max())
    uint8 0.0
    """

    _takes_sparse = True
    _positive_only = True

    def __init__(self, kernel="chi2", n_anchors=50, *, anchors="uniform",
                 energy=0.99, n_neighbors=1, weights="uniform"):
        self.kernel = kernel
        self.n_anchors = n_anchors
        self.anchors = anchors
        self.energy = energy
        self.n_neighbors = n_neighbors
        self.weights = weights

    def _fit(self, X, workers, progress):
        return self._fit_checked(X, lambda X: check_histograms(X, "X"))

    def _array_fit(self, library, X, n_threads):
        """`fit` on histograms of `library`, checked on their device, whose
        largest value per dimension is computed there: all that uniform
        anchors read of the data (k-means anchors learn from a copy of the
        values on the host, as the compiled engine places them)."""
        def check(X):
            X = _array_api.check_rows(library, X, "X", nonnegative=True)
            return (check_histograms(library.to_numpy(X), "X")
                    if self.anchors == "kmeans" else X)

        return self._fit_checked(X, check)

    def _fit_checked(self, X, check):
        """`fit` on `X`, checked by ``check(X)`` (after the parameters)."""
        kernel = self.kernel if callable(self.kernel) else check_choice(
            self.kernel, "kernel", tuple(KERNELS))  # a name, or a callable
        n_anchors = check_scalar(self.n_anchors, "n_anchors", kind="int", low=2,
                                 high=_MAX_ANCHORS)
        rule = check_choice(self.anchors, "anchors", ("uniform", "kmeans"))
        energy = check_scalar(self.energy, "energy", low=0.0, low_inclusive=False,
                              high=1.0)
        n_neighbors = check_scalar(self.n_neighbors, "n_neighbors", kind="int",
                                   low=1, high=n_anchors)
        weights = check_choice(self.weights, "weights", ("uniform", "distance"))
        names = self._check_names(X, reset=True)
        X = check(X)
        X = scipy.sparse.csc_matrix(X) if scipy.sparse.issparse(X) else X
        d = X.shape[1]
        top = np.asarray(_column_max(X), dtype=np.float64).ravel()
        fallback = top.max() if top.max() > 0 else 1.0
        top[top == 0] = fallback
        named = isinstance(kernel, str)
        # Named kernels: each dimension at a safe scale (1 at ordinary ones).
        scale = _power_of_4_scales(top) if named else np.ones(d)
        grid = np.linspace(0.0, 1.0, n_anchors)
        A = (top / scale)[:, None] * grid[None, :]
        if rule == "kmeans":
            for j in range(d):
                column = (X[:, j].data if scipy.sparse.issparse(X) else X[:, j])
                column = column[column > 0]
                A[j] = engine.kmeans_anchors(
                    column if scale[j] == 1 else column / scale[j], n_anchors,
                    top[j] / scale[j])
        final = A * scale[:, None]  # the anchors, at the scale of the data
        if not np.all(np.diff(final, axis=1) > 0):
            j = int(np.flatnonzero(~np.all(np.diff(final, axis=1) > 0, axis=1))[0])
            raise ValueError(
                f"X: dimension {j} has too few distinct values at the scale of "
                f"its largest ({top[j]:.6g}; values below {top[j] * 2**-52:.3g} "
                f"count as 0 there) to place n_anchors={n_anchors} distinct "
                f"anchors"
            )
        f = KERNELS[kernel] if named else kernel
        K = np.asarray(f(A[:, :, None], A[:, None, :]), dtype=np.float64)
        if K.shape != (d, n_anchors, n_anchors) or not np.isfinite(K).all():
            raise ValueError(
                "kernel must be a vectorised callable giving finite values, "
                f"of shape {(d, n_anchors, n_anchors)} here; got shape {K.shape}"
            )
        K = (K + K.transpose(0, 2, 1)) / 2
        with lapack.one_blas_thread():  # d small matrices (see lapack)
            lam, V = np.linalg.eigh(K)  # ascending, per dimension
        lam, V = lam[:, ::-1], V[:, :, ::-1]
        np.maximum(lam, 0.0, out=lam)
        cum = np.cumsum(lam, axis=1)
        total = cum[:, -1:]
        rank = 1 + np.sum(cum < energy * total * (1 - 1e-12), axis=1)
        rank = np.minimum(rank, np.maximum(np.sum(lam > 0, axis=1), 1))
        blocks = [V[j, :, : rank[j]] * np.sqrt(lam[j, : rank[j]]) for j in range(d)]
        if named:  # k(0, y) = 0: the features of 0 are 0
            for j, block in enumerate(blocks):
                block[0] = 0.0
                if scale[j] != 1:  # back to the scale of the data (exact)
                    block *= np.sqrt(scale[j])
        table = np.concatenate([block.ravel() for block in blocks])
        return {**_anchor_state(final, table, rank), **names,
                "_n_neighbors": n_neighbors, "_distance": weights == "distance"}

    @blocked_rows(check=check_histograms)
    def transform(self, X, *, workers=None, progress=False):
        """Features of the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n, d)
            Non-negative histograms. Values beyond the largest anchor of
            their dimension take the features of that anchor (clamped).
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.

        Returns
        -------
        Z : ndarray or CSR matrix, shape (n, ``n_features_out_``)
            The dtype of `X`. CSR input gives CSR output when the features
            of 0 are zero (the named kernels): exact zeros stay zero.
        """
        self._check_precision(X.dtype == np.float32)
        if scipy.sparse.issparse(X) and not self._zero_features:
            X = np.ascontiguousarray(X.toarray())
        return engine.features(
            X, self.anchors_, self._inv_step, self._n_neighbors, self._distance,
            self.table_, self.table_offsets_, self.rank_, self.feature_offsets_,
            resolve_workers(workers))

    def _check_precision(self, float32):
        """Refuse float32 input (`float32`) where the anchor features exceed
        the float32 range."""
        if float32 and self._table_max > float(np.finfo(np.float32).max):
            raise ValueError(
                "X is float32 but this map's anchor features exceed the float32 "
                "range: pass X as float64"
            )

    def _array_features(self, library, X):
        """`transform` of the rows of X of `library`, computed there
        (`_array_maps.anchor_features`), dense; the anchors and the table
        move to its device once."""
        X = _array_api.check_rows(library, X, "X", nonnegative=True)
        self._check_width(X.shape[1])
        float32 = X.dtype == library.xp.float32
        self._check_precision(float32)
        anchors, table = self._on_device(library, np.float32 if float32 else
                                         np.float64, "anchors_", "table_")
        # each output column's input column, offset in the table and rank
        column = np.repeat(np.arange(self.n_features_in_), self.rank_)
        within = np.arange(self.n_features_out_) - self.feature_offsets_[column]
        plan = [library.from_numpy(a) for a in (
            column, self.table_offsets_[column] + within, self.rank_[column])]
        return _array_maps.anchor_features(library, X, anchors, table, plan,
                                           self._n_neighbors, self._distance)

    def codes(self, X, *, workers=None):
        """The compact form of the features of `X`: anchor indices.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n, d)
        workers : int, optional

        Returns
        -------
        codes : ndarray of shape (n, d), or tuple of ndarrays
            With one neighbour, the index of each value's anchor, in the
            smallest unsigned integer type that holds ``n_anchors - 1``
            (uint8 up to 256 anchors). With more, ``(indices, weights)`` of
            shape ``(n, d, n_neighbors)``, weights in float32. Values of 0
            give the index of the anchor 0 (weight 1).
        """
        X = checked_rows(self, X, check_histograms)
        if scipy.sparse.issparse(X):
            X = np.ascontiguousarray(X.toarray())
        idx, w = engine.neighbours(X, self.anchors_, self._inv_step,
                                    self._n_neighbors, self._distance,
                                    resolve_workers(workers))
        n, d = X.shape
        index = np.min_scalar_type(self.anchors_.shape[1] - 1)
        indices = idx.astype(index).reshape(n, d, self._n_neighbors)
        if self._n_neighbors == 1:
            return indices[:, :, 0]
        return indices, w.reshape(n, d, self._n_neighbors)

    def decode(self, codes):
        """Features from `codes` (the output of `codes`), dense, float64.

        Parameters
        ----------
        codes : ndarray of int, shape (n, d), or tuple of ndarrays
            Anchor indices (any integer dtype), or ``(indices, weights)`` of
            shape ``(n, d, k)``, the weights real and finite.

        Returns
        -------
        Z : ndarray of float64, shape (n, ``n_features_out_``)
        """
        self._check_fitted()
        d = self.n_features_in_
        what = f"codes must come from AnchorMap.codes for {d} features"
        if isinstance(codes, tuple):
            if len(codes) != 2:
                raise ValueError(f"{what}: a tuple (indices, weights)")
            indices = np.asarray(codes[0])
            weights = as_float_array(codes[1], "codes weights")
        else:
            indices = np.asarray(codes)
            if indices.ndim != 2:
                raise ValueError(f"{what}: an array (n, {d})")
            indices = indices[:, :, None]
            weights = np.ones(indices.shape, dtype=np.float32)
        if indices.dtype.kind not in "iu":
            raise TypeError(
                f"codes must hold integer anchor indices, got dtype {indices.dtype}"
            )
        if indices.ndim != 3 or indices.shape[1] != d or weights.shape != indices.shape:
            raise ValueError(what)
        if not np.isfinite(weights).all():
            raise ValueError("codes weights contain NaN or infinity")
        n_anchors = self.anchors_.shape[1]
        if indices.size and (indices.min() < 0 or indices.max() >= n_anchors):
            raise ValueError(
                f"codes hold anchor indices out of range [0, {n_anchors - 1}] "
                f"(codes from another map?)"
            )
        return engine.decode(indices, weights, self.table_, self.table_offsets_,
                              self.rank_, self.feature_offsets_,
                              resolve_workers(None))


def _anchor_state(anchors, table, rank):
    """The fitted attributes of an `AnchorMap`: the anchors (d, n_anchors),
    the concatenated anchor features and the ranks that `fit` found, and
    what `transform` derives from them."""
    n_anchors = anchors.shape[1]
    table_offsets = np.concatenate([[0], np.cumsum(n_anchors * rank)])
    # Uniform grids from 0 are indexed directly, others searched.
    step = anchors[:, 1] - anchors[:, 0]
    with np.errstate(over="ignore"):  # a grid beyond float64: not uniform
        grid = step[:, None] * np.arange(n_anchors)
        uniform = (anchors[:, 0] == 0) & np.all(
            np.abs(anchors - grid) <= 1e-12 * anchors[:, -1:], axis=1)
        inv = 1.0 / step  # steps > 0: the anchors are increasing
    feature_offsets = np.concatenate([[0], np.cumsum(rank)])
    return {
        "anchors_": np.ascontiguousarray(anchors, dtype=np.float64),
        "table_": np.ascontiguousarray(table, dtype=np.float64),
        "rank_": np.asarray(rank, dtype=np.int64),
        "table_offsets_": table_offsets,
        # (a step so small that its inverse overflows is searched)
        "_inv_step": np.where(uniform & np.isfinite(inv), inv, 0.0),
        "feature_offsets_": feature_offsets,
        "n_features_in_": anchors.shape[0],
        "n_features_out_": int(feature_offsets[-1]),
        # Whether the features of the anchor 0 of every dimension (first:
        # the data are >= 0) are all zero (then CSR input gives CSR output).
        "_zero_features": not any(table[a : a + r].any() for a, r in
                                  zip(table_offsets[:-1], rank, strict=True)),
        "_table_max": float(np.abs(table).max()) if table.size else 0.0,
    }


def _column_max(X):
    """The largest value of each column of checked histograms `X` (a CSC
    matrix, an array, or an array of another library: computed there)."""
    if scipy.sparse.issparse(X):
        return X.max(axis=0).todense()
    if _array_api.is_foreign(X):
        library = _array_api.library_of(X=X)
        return library.to_numpy(library.xp.max(X, axis=0))
    return X.max(axis=0)
