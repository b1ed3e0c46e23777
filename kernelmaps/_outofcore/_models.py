"""Out-of-core PCA and ridge regression on random features (Li, Lebanon and
Sminchisescu, section 6, Algorithms 3-5).

The data are read one block of rows at a time; each block is mapped, its
features reduced to float64 moments (count, means, centred cross-products
with themselves and with the targets; `_moments`) and
dropped. Moments of two blocks combine exactly, in any order, so the same
code serves a stream of blocks read once (`_reduce`) and the blocks of a
Dask array reduced in parallel on a cluster (`_reduce_dask`).
"""

import functools
import itertools
from types import SimpleNamespace

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse

from .._bags import Bags
from .._engine import lapack
from .._engine.progress import progress_bar
from .._parallel import check_progress
from .._probes import as_float_array, is_dask_array
from .._transforms import is_lazy
from .._validation import check_scalar
from ._moments import add_all, block_moments, reduce_tree

__all__ = ["RandomFeaturePCA", "RandomFeatureRidge", "rf_pca", "rf_ridge"]


def _block_stats(X, y, fmaps, pcas, block_name, map_name):
    """Moments of one block: of each map's features (with `y` if given) when
    `pcas` is None, else of the PCA projections of all maps side by side.

    The block is `block_name` in messages; a map that refuses it raises an
    error naming both (the map is argument `map_name`, the block's data are
    its X), and a block without a map is checked as features."""
    Z = []
    for i, f in enumerate(fmaps):
        if f is None:
            Z.append(_features(None, X, None, block_name))
            continue
        try:
            Z.append(f.transform(X))
        except (ValueError, TypeError) as err:
            label = map_name if len(fmaps) == 1 else f"{map_name}[{i}]"
            raise type(err)(
                f"{label} cannot transform {block_name} (its X): {err}"
            ) from None
    with np.errstate(over="ignore", invalid="ignore"):  # see _check_moments
        if pcas is None:
            return block_moments(Z, y)
        projected = [_coordinates(p, z) for p, z in zip(pcas, Z, strict=True)]
        return block_moments([np.hstack(projected)], y)


def _check_y(y, n_rows, name):
    """`y` as float64 (n_rows, c)."""
    y = np.asarray(y)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {y.dtype}")
    if y.ndim not in (1, 2) or y.shape[0] != n_rows:
        raise ValueError(
            f"{name} has shape {y.shape}, but its block of data has {n_rows} rows"
        )
    y = y.astype(np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return y


def _n_rows(X, name="chunks"):
    """Rows (or sets) of the block `X` (argument `name`)."""
    if isinstance(X, (Bags, list, tuple)):
        return len(X)
    shape = getattr(X, "shape", None)
    if not shape:
        raise TypeError(
            f"{name} must be an array, a sparse matrix or a collection of sets, "
            f"got {type(X).__name__}"
        )
    return shape[0]


# Rows (or sets) per block when one in-memory data set is given.
OUTOFCORE_BLOCK_ROWS = 8192


def _blocks(chunks, name):
    """The blocks of `chunks` and their number (None if unknown): slices of
    consecutive rows (or sets) when it is one array, sparse matrix or Bags,
    else its items."""
    if isinstance(chunks, (np.ndarray, Bags)) or scipy.sparse.issparse(chunks):
        if scipy.sparse.issparse(chunks):
            chunks = scipy.sparse.csr_matrix(chunks)
        starts = range(0, _n_rows(chunks), OUTOFCORE_BLOCK_ROWS)
        return (chunks[i : i + OUTOFCORE_BLOCK_ROWS] for i in starts), len(starts)
    if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise TypeError(
            f"{name} must be an iterable of blocks of rows, an array or a Dask "
            f"array, got {type(chunks).__name__}"
        )
    return chunks, getattr(chunks, "__len__", lambda: None)()


class _Targets:
    """Target blocks aligned with data blocks: slices of one array, or the
    items of an iterable of blocks."""

    def __init__(self, y, name):
        self.name, self.start, self.ndim, self.width = name, 0, None, None
        whole = isinstance(y, np.ndarray) or (
            isinstance(y, (list, tuple)) and len(y) > 0 and np.ndim(y[0]) == 0)
        if whole:
            self.whole, self.items = np.asarray(y), None
        elif isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
            raise TypeError(
                f"{name} must be an array or an iterable of blocks, got "
                f"{type(y).__name__}"
            )
        else:
            self.whole, self.items = None, iter(y)

    def next(self, n, k):
        if self.items is None:
            block = self.whole[self.start : self.start + n]
            name = self.name
            if block.shape[0] < n:
                raise ValueError(f"{name} has {self.whole.shape[0]} rows, fewer "
                                 f"than the data")
        else:
            block = next(self.items, None)
            name = f"{self.name} block {k}"
            if block is None:
                raise ValueError(f"{self.name} has fewer blocks than the data")
        self.start += n
        self.ndim = np.ndim(block) if self.ndim is None else self.ndim
        y = _check_y(block, n, name)
        if self.width is not None and y.shape[1] != self.width:
            raise ValueError(
                f"{name} has {y.shape[1]} target column(s), the first block "
                f"{self.width}: the blocks must have the same number of columns"
            )
        self.width = y.shape[1]
        return y

    def finish(self):
        if self.items is None:
            if self.start != self.whole.shape[0]:
                raise ValueError(f"{self.name} has {self.whole.shape[0]} rows, "
                                 f"but the data have {self.start}")
        elif next(self.items, None) is not None:
            raise ValueError(f"{self.name} has more blocks than the data")


def _reduce(chunks, y, fmaps, pcas, names, progress):
    """Moments of all blocks of `chunks` (and `y`): see `_block_stats`.
    `names`: the arguments of the data, the targets and the maps."""
    if is_lazy(chunks):
        return _reduce_dask(chunks, y, fmaps, pcas, names)
    name, y_name, map_name = names
    targets = None if y is None else _Targets(y, y_name)
    blocks, total = _blocks(chunks, name)
    acc = None
    with progress_bar(progress, total, "blocks") as bar:
        for k, X in enumerate(blocks):
            n = _n_rows(X, f"{name} block {k}")
            yk = None if targets is None else targets.next(n, k)
            if n == 0:
                continue
            stats = _block_stats(X, yk, fmaps, pcas, f"{name} block {k}", map_name)
            if acc is None:
                acc = stats
            else:
                widths = [s.mean.shape[0] for s in stats]
                if widths != [a.mean.shape[0] for a in acc]:
                    raise ValueError(
                        f"{name}: block {k} has a different number of "
                        f"columns than block 0 (its features are {widths} "
                        f"wide, those of block 0 "
                        f"{[a.mean.shape[0] for a in acc]})"
                    )
                with np.errstate(over="ignore", invalid="ignore"):
                    add_all(acc, stats)
            bar.update()
    if acc is None:
        raise ValueError(f"{name} holds no data")
    if targets is not None:
        targets.finish()
    _check_moments(acc, name, y_name if targets is not None else None)
    return acc, (None if targets is None else targets.ndim)


def _reduce_dask(chunks, y, fmaps, pcas, names):
    """The same over the blocks of a Dask array (or lazy sets): one task per
    block, a tree of pairwise combinations, computed by the active Dask
    scheduler (a distributed Client when one is set up)."""
    import dask
    import dask.array as da

    name, y_name, _ = names
    Z = [chunks if f is None else f.transform(chunks) for f in fmaps]
    if not all(is_dask_array(z) and z.ndim == 2 for z in Z):
        raise TypeError(f"{name}: the feature maps must return 2-D Dask arrays "
                        f"for Dask input")
    rows = Z[0].chunks[0]
    if pcas is not None:
        Z = [da.concatenate([_coordinates(p, z) for p, z in
                             zip(pcas, Z, strict=True)], axis=1)]
    Z = [z.rechunk({0: rows, 1: -1}).to_delayed().ravel() for z in Z]
    ndim = None
    if y is None:
        ys = [None] * len(rows)
    else:
        if not is_dask_array(y):
            y = np.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != sum(rows):
            raise ValueError(
                f"{y_name} has shape {y.shape}, but the data have {sum(rows)} "
                f"rows"
            )
        ndim = y.ndim
        y = da.asarray(y).rechunk({0: rows, **({1: -1} if ndim == 2 else {})})
        check = dask.delayed(_check_y, pure=True)
        blocks = y.to_delayed().ravel()
        ys = [check(b, n, y_name) for b, n in zip(blocks, rows, strict=True)]
    stats = dask.delayed(_block_moments_one_thread, pure=True)
    parts = [stats(list(zs), yk)
             for zs, yk in zip(zip(*Z, strict=True), ys, strict=True)]
    moments = reduce_tree(parts, dask.delayed(add_all, pure=True)).compute()
    if moments[0].n == 0:
        raise ValueError(f"{name} holds no data")
    _check_moments(moments, name, y_name if y is not None else None)
    return moments, ndim


def _block_moments_one_thread(Z, y):
    """`block_moments` in a Dask task: on one BLAS thread (Dask runs the
    blocks in parallel)."""
    with lapack.one_blas_thread():
        return block_moments(Z, y)


def _check_moments(moments, name="chunks", y_name=None):
    """A ValueError naming the data (argument `name`) and the targets
    (`y_name`, None: none) where the accumulated moments (one or a list,
    one per map) overflowed float64."""
    for m in (moments if isinstance(moments, (list, tuple)) else [moments]):
        parts = [m.mean, m.M2] + [
            a for a in (m.y_mean, m.Czy) if a is not None]
        if not all(np.isfinite(a).all() for a in parts):
            targets = "" if y_name is None else f" (or of them and {y_name})"
            scale = name if y_name is None else f"{name} or {y_name}"
            raise ValueError(
                f"the cross-products of the features of {name}{targets} "
                f"overflow float64: scale {scale} down"
            )


def _features(fmap, X, width, name="X"):
    """The features of `X` (argument `name`) by `fmap`, or `X` itself
    checked as features when `fmap` is None: a 2-D real, finite array of
    `width` columns (None: any) and at least one row (float32 kept), a
    sparse matrix of them, or a Dask array (checked as far as it can be
    without computing it)."""
    if fmap is not None:
        return fmap.transform(X)
    if is_dask_array(X):
        if X.ndim != 2 or X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be a 2-D array of real numbers, got "
                            f"a Dask array of shape {X.shape}, dtype {X.dtype}")
        Z = X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
    elif scipy.sparse.issparse(X):
        Z = scipy.sparse.csr_matrix(X)
        if Z.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {Z.dtype}")
        if Z.dtype not in (np.float32, np.float64):
            Z = Z.astype(np.float64)
        if not np.isfinite(Z.data).all():
            raise ValueError(f"{name} contains NaN or infinity")
    else:
        Z = as_float_array(X, name)
        if Z.ndim != 2:
            raise ValueError(f"{name} must be 2-D (rows of features), got shape "
                             f"{Z.shape}")
        if not np.isfinite(Z).all():
            raise ValueError(f"{name} contains NaN or infinity")
    if Z.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {Z.shape})")
    if width is not None and Z.shape[1] != width:
        raise ValueError(f"{name} has {Z.shape[1]} features, but the model was "
                         f"fitted on {width}")
    return Z


def _check_maps(feature_maps, name):
    if feature_maps is None or hasattr(feature_maps, "transform"):
        return (_check_fitted(feature_maps, name),)
    try:
        maps = tuple(feature_maps)
    except TypeError:
        raise TypeError(
            f"{name} must be a feature map (an object with a transform method), "
            f"a sequence of them, or None, got {type(feature_maps).__name__}"
        ) from None
    if not maps:
        raise ValueError(f"{name} is empty")
    for i, f in enumerate(maps):
        if not hasattr(f, "transform"):
            raise TypeError(f"{name}[{i}] has no transform method: "
                            f"{type(f).__name__}")
        _check_fitted(f, f"{name}[{i}]")
    return maps


def _check_fitted(feature_map, name):
    """`feature_map`, refused when it is a kernelmaps map not fitted yet."""
    if not getattr(feature_map, "__sklearn_is_fitted__", lambda: True)():
        raise ValueError(
            f"{name} is not fitted: fit it first on training rows (e.g. on the "
            f"first block: {type(feature_map).__name__}(...).fit(X_block))"
        )
    return feature_map


def _check_n_components(n_components, width, name):
    if n_components is None:
        return width
    n_components = check_scalar(n_components, name, kind="int", low=1)
    if n_components > width:
        raise ValueError(
            f"{name}={n_components} is larger than the number of features "
            f"({width})"
        )
    return n_components


class _Frozen:
    """A result: immutable once made, its arrays read-only views."""

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} objects are immutable")
        object.__setattr__(self, name, value)

    def __setstate__(self, state):
        vars(self).update(state, _frozen=False)
        self._freeze()

    def _freeze(self):
        for name, value in list(vars(self).items()):
            if isinstance(value, np.ndarray):
                view = value.view()
                view.flags.writeable = False
                object.__setattr__(self, name, view)
        object.__setattr__(self, "_frozen", True)


class RandomFeaturePCA(_Frozen):
    """Principal components of features computed out of core; made by
    `rf_pca`, which returns it (not constructed directly).

    Parameters
    ----------
    feature_map, moments, n_components
        Given by `rf_pca`: the map, the streaming moments of its features
        and the number of components.

    Attributes
    ----------
    feature_map : object or None
        The map the data go through (None: the data are the features).
    components_ : ndarray, shape (n_components, n_features)
        Principal axes in feature space, by decreasing variance; the sign of
        each makes its largest entry (in absolute value) positive.
    explained_variance_ : ndarray, shape (n_components,)
        Variance along each axis (the eigenvalues of the covariance, with the
        ``n - 1`` denominator).
    explained_variance_ratio_ : ndarray, shape (n_components,)
        Share of the total variance.
    mean_ : ndarray, shape (n_features,)
        Mean of the features.
    n_samples_ : int
        Number of rows seen.
    y_mean_ : ndarray of shape (n_targets,), or None
        Mean of the targets, when `rf_pca` was given `y`.
    projected_target_ : ndarray of shape (n_components, n_targets), or None
        ``components_ @ Zc^T yc``: the centred cross-product of the projected
        features and the targets (``v'`` of Algorithm 4), when given `y`.

    See Also
    --------
    rf_pca : Makes it.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures, rf_pca
    >>> X = np.random.default_rng(0).normal(size=(600, 3))
    >>> fmap = RandomFourierFeatures(50, gamma=0.5, rng=0).fit(X)
    >>> pca = rf_pca([X[:300], X[300:]], fmap, 5)
    >>> type(pca).__name__, pca.n_samples_, pca.transform(X[:4]).shape
    ('RandomFeaturePCA', 600, (4, 5))
    """

    def __init__(self, feature_map, moments, n_components):
        self.feature_map = feature_map
        self.n_samples_ = int(moments.n)
        _check_moments(moments)
        p = moments.M2.shape[0]
        total = float(np.trace(moments.M2))
        vals, vecs = scipy.linalg.eigh(moments.M2,
                                       subset_by_index=[p - n_components, p - 1])
        vals, vecs = np.maximum(vals[::-1], 0.0), vecs[:, ::-1]
        signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(n_components)])
        vecs *= np.where(signs == 0, 1.0, signs)
        denom = max(self.n_samples_ - 1, 1)
        self.components_ = np.ascontiguousarray(vecs.T)
        self.explained_variance_ = vals / denom
        self.explained_variance_ratio_ = vals / total if total > 0 else vals * 0.0
        self.mean_ = moments.mean
        self.y_mean_ = moments.y_mean
        self.projected_target_ = (None if moments.Czy is None
                                  else self.components_ @ moments.Czy)
        self._freeze()

    @property
    def n_components(self):
        return self.components_.shape[0]

    def _project(self, Z):
        """PCA coordinates of features Z (array, CSR or Dask array)."""
        C = self.components_.T
        if Z.dtype == np.float32:
            C = C.astype(np.float32)
        out = Z @ C
        return out - (self.mean_ @ self.components_.T).astype(out.dtype)

    def transform(self, X):
        """PCA coordinates ``(map(X) - mean_) @ components_.T`` of the rows
        (or sets) of `X`, a block as the map takes it or a Dask array (then
        lazy). float32 features give float32 coordinates."""
        return self._project(_features(self.feature_map, X, self.mean_.shape[0]))

    def __repr__(self):
        return (f"RandomFeaturePCA(n_components={self.n_components}, "
                f"n_features={self.mean_.shape[0]}, n_samples={self.n_samples_})")


def rf_pca(chunks, feature_map, n_components, *, y=None, progress=False):
    r"""Principal component analysis of random features, out of core.

    One pass over the data, a block of rows at a time: each block goes
    through `feature_map` and is reduced to float64 moments, the count,
    the mean and the centred cross-product :math:`Z^T Z - n \bar z \bar z^T`
    (and with `y`, :math:`Z^T y` centred), then dropped. The principal axes
    are the top eigenvectors of the covariance (Algorithm 3 of Li et al.).
    Memory is that of one block of features plus the
    ``(n_features, n_features)`` cross-product, whatever the number of rows.

    Parameters
    ----------
    chunks : iterable of blocks, array, sparse matrix, Bags or Dask array
        The data. An iterable (a list, a generator reading files, ...)
        yields blocks of rows, each what `feature_map.transform` takes: 2-D
        arrays or CSR matrices, or collections of sets for a map on sets.
        One NumPy array, sparse matrix or `Bags` is split into blocks of
        8192 rows (or sets). A Dask array (rows), or a `Bags` with Dask
        points (sets), is reduced block by block in parallel by the active
        Dask scheduler, e.g. on a ``dask.distributed`` cluster.
    feature_map : object with a ``transform`` method, or None
        Any map of kernelmaps (or other object) turning a block into a 2-D
        array of features. None: the blocks are the features.
    n_components : int or None
        Number of principal components kept, at most the number of
        features; None keeps them all.
    y : array_like or iterable of blocks, optional
        Targets, ``(n,)`` or ``(n, n_targets)``: one array aligned with all
        rows, or blocks aligned with the blocks of `chunks`. Their centred
        cross-product with the features is accumulated in the same pass
        (``projected_target_``), the input of `rf_ridge`.
    progress : bool, default=False
        Show a progress bar over the blocks (needs tqdm; not for Dask input,
        which has Dask's own diagnostics).

    Returns
    -------
    pca : RandomFeaturePCA
        An immutable, picklable object with

        - ``components_`` (n_components, n_features): the principal axes
          in feature space by decreasing variance, each signed so that its
          largest entry in absolute value is positive;
        - ``explained_variance_`` (n_components,): the variance along each
          (eigenvalues of the covariance, ``n - 1`` denominator), and
          ``explained_variance_ratio_``, its share of the total;
        - ``mean_`` (n_features,), ``n_samples_``, ``feature_map``;
        - ``y_mean_`` and ``projected_target_`` (``components_ @ Zc^T yc``,
          (n_components, n_targets)) when given `y`, else None;
        - ``transform(X)``: ``(feature_map.transform(X) - mean_) @
          components_.T`` for a block, or lazily for a Dask array.

    Raises
    ------
    ValueError
        Blocks of different widths, `y` not aligned with the data,
        `n_components` larger than the number of features, non-finite
        features or targets, no data.

    See Also
    --------
    rf_ridge : Ridge regression on the principal components, in the same pass.
    sklearn.decomposition.IncrementalPCA : Minibatch PCA by incremental SVD.

    Notes
    -----
    Block moments are combined by the pairwise update of Chan, Golub and
    LeVeque, which equals the moments of all rows up to rounding, for any
    blocking and in any order. Centring each block on its own mean keeps
    the covariance accurate for features with a large mean, where the
    one-line update of the paper (``H - m m^T / n``) cancels.

    Ctrl-C stops the pass over the blocks; the eigendecomposition at its end
    is one LAPACK call which, as in SciPy, Ctrl-C cannot stop once it has
    started. It is of the ``(n_features, n_features)`` covariance, whatever
    the number of rows.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A linear approximation to
       the chi2 kernel with geometric convergence", arXiv:1206.4074, 2012,
       section 6, Algorithm 3.
    .. [2] T. F. Chan, G. H. Golub and R. J. LeVeque, "Updating formulae and
       a pairwise algorithm for computing sample variances", COMPSTAT, 1982.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import ExpChi2Features, rf_pca
    >>> rng = np.random.default_rng(0)
    >>> X = rng.dirichlet(np.ones(20), size=3000)
    >>> fmap = ExpChi2Features(200, rng=0).fit(X[:500])
    >>> blocks = (X[i:i + 1000] for i in range(0, 3000, 1000))
    >>> pca = rf_pca(blocks, fmap, 10)
    >>> pca.components_.shape, pca.transform(X[:5]).shape
    ((10, 200), (5, 10))
    >>> bool(np.all(np.diff(pca.explained_variance_) <= 0))
    True
    """
    progress = check_progress(progress)
    maps = _check_maps(feature_map, "feature_map")
    if len(maps) != 1:
        raise TypeError("feature_map must be one map (for several, see rf_ridge)")
    (moments,), _ = _reduce(chunks, y, maps, None, ("chunks", "y", "feature_map"),
                            progress)
    n_components = _check_n_components(n_components, moments.mean.shape[0],
                                       "n_components")
    return RandomFeaturePCA(maps[0], moments, n_components)


# H + alpha I is solved by Cholesky where LAPACK's estimate of its reciprocal
# condition number exceeds this many times p * eps, far from the directions
# the pseudo-inverse drops (lambda + alpha below p * eps times the largest):
# there the two solutions agree to rounding. Below, by eigendecomposition.
_CHOLESKY_MARGIN = 1e3


def _ridge_weights(H, v, alpha):
    """``(H + alpha I)^+ v`` for symmetric PSD H (p x p): by Cholesky when
    H + alpha I is well conditioned, else by `_pseudo_solve` on the
    eigendecomposition of H."""
    p = H.shape[0]
    A = H.copy()
    A.flat[:: p + 1] += alpha
    try:
        factor = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:  # not numerically positive definite
        factor = None
    if factor is not None:
        rcond, info = scipy.linalg.lapack.dpocon(
            factor[0], np.abs(A).sum(axis=0).max(), uplo="L")
        if info == 0 and rcond > _CHOLESKY_MARGIN * p * np.finfo(np.float64).eps:
            return scipy.linalg.cho_solve(factor, v, check_finite=False)
    return _pseudo_solve(*scipy.linalg.eigh(H), v, alpha)


def _pseudo_solve(lam, Q, v, alpha):
    """``(Q diag(lam) Q^T + alpha I)^+ v`` (Q None: the identity); directions
    with ``lambda + alpha`` below roundoff get no weight."""
    lam = np.maximum(lam, 0.0) + alpha
    tol = lam.shape[0] * np.finfo(np.float64).eps * max(lam.max(), 0.0)
    inv = np.divide(1.0, lam, out=np.zeros_like(lam), where=lam > tol)
    if Q is None:
        return inv[:, None] * v
    return Q @ (inv[:, None] * (Q.T @ v))


def _coordinates(pca, Z):
    """The coordinates of features Z on which the joint ridge is solved:
    their PCA projection, or Z itself (dense) for a map keeping every
    feature (`pca` None), which ridge regression treats alike: the
    projection on all components is a rotation."""
    if pca is not None:
        return pca._project(Z)
    return Z.toarray() if scipy.sparse.issparse(Z) else Z


class RandomFeatureRidge(_Frozen):
    """Ridge regression on the principal components of random features,
    computed out of core; made by `rf_ridge`, which returns it (not
    constructed directly).

    The weights act on the unprojected features: ``predict(X)`` is
    ``sum_l feature_maps[l].transform(X) @ coef_[l] + intercept_``, with no
    projection at test time.

    Parameters
    ----------
    maps, parts, w, y_mean, alpha, n_samples, y_ndim
        Given by `rf_ridge`.

    Attributes
    ----------
    feature_maps : tuple
        The maps, in order.
    pca_ : tuple of RandomFeaturePCA
        The principal components of each map. For a map keeping all its
        features they are not needed by the fit, and are computed when
        first read.
    alpha : float
        The ridge penalty.
    coef_ : ndarray, shape (n_features,) or (n_features, n_targets)
        Weights on the concatenated features of all maps (1-D for 1-D `y`).
    intercept_ : float or ndarray of shape (n_targets,)
    coef_projected_ : ndarray, shape (n_components_total, n_targets)
        The weights ``w`` on the principal components (computed when first
        read, as ``pca_``).
    n_samples_ : int

    See Also
    --------
    rf_ridge : Makes it.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures, rf_ridge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(800, 1))
    >>> y = np.sin(X[:, 0])
    >>> fmap = RandomFourierFeatures(40, gamma=0.5, rng=0).fit(X)
    >>> model = rf_ridge([X[:400], X[400:]], [y[:400], y[400:]], fmap, 20,
    ...                  alpha=1e-3)
    >>> type(model).__name__, model.predict(X[:3]).shape
    ('RandomFeatureRidge', (3,))
    """

    def __init__(self, maps, parts, w, y_mean, alpha, n_samples, y_ndim):
        # parts: for each map, its RandomFeaturePCA, or the moments of its
        # features where it keeps them all (solved on unprojected features).
        self.feature_maps = tuple(maps)
        self.alpha = alpha
        self.n_samples_ = n_samples
        self._widths = tuple(_width(p) for p in parts)
        self._parts = tuple(
            p if isinstance(p, RandomFeaturePCA)
            else (p.n, p.mean, p.M2, p.y_mean, p.Czy) for p in parts)
        self._w = w
        ranks = np.cumsum([0] + [_rank(p) for p in parts])
        coef = np.vstack([
            p.components_.T @ w[a:b] if isinstance(p, RandomFeaturePCA)
            else w[a:b]
            for p, (a, b) in zip(parts, itertools.pairwise(ranks), strict=True)])
        intercept = y_mean - sum(_mean(p) @ c for p, c in
                                 zip(parts, self._split(coef), strict=True))
        if y_ndim == 1:
            coef, intercept = coef[:, 0], float(intercept[0])
        self.coef_ = coef
        self.intercept_ = intercept
        self._freeze()

    @functools.cached_property
    def pca_(self):
        return tuple(
            p if isinstance(p, RandomFeaturePCA) else RandomFeaturePCA(
                f, SimpleNamespace(n=p[0], mean=p[1], M2=p[2], y_mean=p[3],
                                   Czy=p[4]), p[1].shape[0])
            for f, p in zip(self.feature_maps, self._parts, strict=True))

    @functools.cached_property
    def coef_projected_(self):
        ranks = np.cumsum([0] + [_rank(p) for p in self._parts])
        w = np.vstack([
            self._w[a:b] if isinstance(p, RandomFeaturePCA)
            else pca.components_ @ self._w[a:b]  # all components: rotated
            for p, pca, (a, b) in zip(self._parts, self.pca_,
                                      itertools.pairwise(ranks), strict=True)])
        w.flags.writeable = False
        return w

    def _split(self, coef):
        widths = np.cumsum([0, *self._widths])
        return [coef[a:b] for a, b in itertools.pairwise(widths)]

    def predict(self, X):
        """Predictions for the rows (or sets) of `X`, a block as the maps
        take it or a Dask array (then lazy): ``(n,)`` or ``(n, n_targets)``.
        """
        out = self.intercept_
        for f, c in zip(self.feature_maps, self._split(self.coef_), strict=True):
            Z = _features(f, X, c.shape[0])
            out = Z @ c.astype(Z.dtype, copy=False) + out
        return out

    def __repr__(self):
        return (f"RandomFeatureRidge(n_maps={len(self.feature_maps)}, "
                f"n_components={[_rank(p) for p in self._parts]}, "
                f"alpha={self.alpha:.6g}, n_samples={self.n_samples_})")


def _width(part):
    """Features of a map, from its PCA or its moments (or their tuple)."""
    if isinstance(part, RandomFeaturePCA):
        return part.mean_.shape[0]
    return part[1].shape[0] if isinstance(part, tuple) else part.mean.shape[0]


def _rank(part):
    """Coordinates of a map in the joint ridge: its components, or all its
    features."""
    return part.n_components if isinstance(part, RandomFeaturePCA) else _width(part)


def _mean(part):
    return part.mean_ if isinstance(part, RandomFeaturePCA) else part.mean


def rf_ridge(chunks, y_chunks, feature_maps, n_components, *, alpha=1.0,
             progress=False):
    r"""Ridge regression on the principal components of random features,
    out of core.

    With one feature map, one pass (Algorithm 4 of Li et al.): `rf_pca`
    with the targets, then, the projected Hessian being diagonal, the ridge
    weights in closed form. With several maps (Algorithm 5), two passes: the
    first finds each map's principal components, the second accumulates the
    cross-products of all projected features side by side, so the model
    weighs the kernels jointly. Many targets (one-vs-all classification
    with many classes) cost one solve.

    Parameters
    ----------
    chunks : iterable of blocks, array, sparse matrix, Bags or Dask array
        The data, as for `rf_pca`. With several maps an iterable is read
        twice, so it must not be a one-shot iterator (a list of arrays or of
        memory-mapped files is fine).
    y_chunks : array_like or iterable of blocks
        Targets ``(n,)`` or ``(n, n_targets)``: one array aligned with all
        rows (NumPy or Dask), or blocks aligned with the blocks of `chunks`.
        For classification, one column per class, e.g. ``+1`` for the class
        and ``-1`` otherwise.
    feature_maps : feature map, sequence of feature maps, or None
        Objects with a ``transform`` method; None means the data are the
        features.
    n_components : int, sequence of int, or None
        Principal components kept per map (one int for all maps); None
        keeps every feature, giving plain ridge regression.
    alpha : float, default=1.0
        Ridge penalty, >= 0; 0 gives least squares (minimum norm).
    progress : bool, default=False
        Show a progress bar over the blocks of each pass (needs tqdm).

    Returns
    -------
    model : RandomFeatureRidge
        An immutable, picklable object with

        - ``coef_`` (n_features,) or (n_features, n_targets): the weights
          on the unprojected features of all maps side by side (1-D for
          1-D targets), and ``intercept_``;
        - ``predict(X)``: ``sum_l feature_maps[l].transform(X) @ coef_l +
          intercept_`` for a block, or lazily for a Dask array: no
          projection at test time;
        - ``pca_``: one `rf_pca` result per map; ``coef_projected_``, the
          weights on the principal components; ``feature_maps``,
          ``alpha``, ``n_samples_``.

    Raises
    ------
    ValueError
        As `rf_pca`; also a one-shot iterator with several maps, or a
        negative `alpha`.

    See Also
    --------
    rf_pca : The principal components alone.
    sklearn.linear_model.Ridge : The in-memory counterpart (``fit_intercept``).

    Notes
    -----
    The model minimises :math:`\|\tilde Z w - (y - \bar y)\|^2 +
    \alpha \|w\|^2` over the centred principal-component coordinates
    :math:`\tilde Z = (Z - \bar z) U`; the returned weights are
    ``coef_ = U w`` and ``intercept_ = y_mean - z_mean @ coef_``. With
    ``n_components=None`` this is ridge regression with an unpenalised
    intercept on all features.

    Ctrl-C stops the passes over the blocks; the solves after them
    (`rf_pca`'s eigendecomposition, the factorisation of the joint system)
    are LAPACK calls which, as in SciPy, Ctrl-C cannot stop once they have
    started. Their size is the number of features or components, whatever
    the number of rows.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A linear approximation to
       the chi2 kernel with geometric convergence", arXiv:1206.4074, 2012,
       section 6, Algorithms 4 and 5.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures, rf_ridge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(4000, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=4000)
    >>> fmap = RandomFourierFeatures(100, gamma=0.5, rng=0).fit(X[:1000])
    >>> model = rf_ridge([X[:2000], X[2000:]], [y[:2000], y[2000:]], fmap, 20,
    ...                  alpha=1e-3)
    >>> grid = np.linspace(-2, 2, 5)[:, None]
    >>> bool(np.abs(model.predict(grid) - np.sin(grid[:, 0])).max() < 0.05)
    True
    """
    progress = check_progress(progress)
    maps = _check_maps(feature_maps, "feature_maps")
    alpha = check_scalar(alpha, "alpha", low=0.0)
    if n_components is None or np.ndim(n_components) == 0:
        n_components = [n_components] * len(maps)
    elif len(n_components) != len(maps):
        raise ValueError(
            f"n_components has {len(n_components)} entries for {len(maps)} maps"
        )
    names = ("chunks", "y_chunks", "feature_maps")
    if y_chunks is None:
        raise ValueError("y_chunks is required")
    if len(maps) == 1:
        (moments,), ndim = _reduce(chunks, y_chunks, maps, None, names, progress)
        width = moments.mean.shape[0]
        k = _check_n_components(n_components[0], width, "n_components")
        if k == width:  # plain ridge: one solve, no PCA needed
            w = _ridge_weights(moments.M2, moments.Czy, alpha)
            return RandomFeatureRidge(maps, [moments], w, moments.y_mean, alpha,
                                      moments.n, ndim)
        pca = RandomFeaturePCA(maps[0], moments, k)
        lam = pca.explained_variance_ * max(moments.n - 1, 1)
        w = _pseudo_solve(lam, None, pca.projected_target_, alpha)
        return RandomFeatureRidge(maps, [pca], w, moments.y_mean, alpha,
                                  moments.n, ndim)
    if not is_lazy(chunks) and iter(_blocks(chunks, "chunks")[0]) is chunks:
        raise ValueError(
            "chunks is a one-shot iterator, but several feature maps need two "
            "passes over the data: give a list (or another re-iterable)"
        )
    moments, _ = _reduce(chunks, None, maps, None, names, progress)
    # A map keeping all its features enters the joint ridge unprojected.
    parts = []
    for i, (f, m, k) in enumerate(zip(maps, moments, n_components, strict=True)):
        k = _check_n_components(k, m.mean.shape[0], f"n_components[{i}]")
        parts.append(m if k == m.mean.shape[0] else RandomFeaturePCA(f, m, k))
    pcas = [p if isinstance(p, RandomFeaturePCA) else None for p in parts]
    (joint,), ndim = _reduce(chunks, y_chunks, maps, pcas, names, progress)
    w = _ridge_weights(joint.M2, joint.Czy, alpha)
    return RandomFeatureRidge(maps, parts, w, joint.y_mean, alpha, joint.n, ndim)
