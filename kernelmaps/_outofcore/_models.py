"""Out-of-core PCA and ridge regression on random features (Li, Lebanon and
Sminchisescu, section 6, Algorithms 3-5): estimators fitted by passes over
blocks of data (`_passes`), and the functions that make and fit one.
"""

import functools
import itertools

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse

from .. import _array_api
from .._base import Estimator
from .._lazy import is_lazy
from .._parallel import check_progress
from .._validation import check_scalar
from ._passes import (
    check_maps,
    check_moments,
    check_n_components,
    features,
    host_features,
    in_library_of,
    reduce_moments,
    split_blocks,
)

__all__ = ["RandomFeaturePCA", "RandomFeatureRidge", "rf_pca", "rf_ridge"]


class _OutOfCore(Estimator):
    """The out-of-core models: fitted by passes over blocks of data; their
    fitted arrays are read-only views (the arrays themselves untouched)."""

    _takes_sparse = True  # (blocks of CSR rows, without a map or through one)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "n_samples_")

    def _set_fitted(self, state):
        return super()._set_fitted({k: _read_only(v) for k, v in state.items()})

    def __setstate__(self, state):
        super().__setstate__({k: _read_only(v) for k, v in state.items()})


def _read_only(value):
    """A read-only view of an array; other values as they are."""
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
    return value


class RandomFeaturePCA(_OutOfCore):
    """Principal components of features computed out of core: `rf_pca`
    as an estimator (``rf_pca(chunks, feature_map, n_components)`` is
    ``RandomFeaturePCA(feature_map, n_components).fit(chunks)``), of the
    maps' protocol (`get_params`, `set_params`, ``clone``); its fitted
    arrays are read-only. It takes a fitted map: ``clone`` clones it too,
    unfitted (set a fitted one before `fit`).

    Parameters
    ----------
    feature_map : object with a ``transform`` method, or None
        The map the data go through (None: the data are the features).
    n_components : int or None, default=None
        Principal components kept, at most the number of features; None
        keeps them all.

    Attributes
    ----------
    n_components_ : int
        Principal components kept.
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
    rf_pca : Makes and fits one.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures, rf_pca
    >>> X = np.random.default_rng(0).normal(size=(600, 3))
    >>> fmap = RandomFourierFeatures(50, gamma=0.5, rng=0).fit(X)
    >>> pca = rf_pca([X[:300], X[300:]], fmap, 5)
    >>> type(pca).__name__, pca.n_samples_, pca.transform(X[:4]).shape
    ('RandomFeaturePCA', 600, (4, 5))
    >>> from kernelmaps import RandomFeaturePCA
    >>> same = RandomFeaturePCA(fmap, 5).fit([X[:300], X[300:]])
    >>> bool(np.array_equal(same.components_, pca.components_))
    True
    """

    def __init__(self, feature_map=None, n_components=None):
        self.feature_map = feature_map
        self.n_components = n_components

    def fit(self, chunks, y=None, *, progress=False):
        """Find the principal components in one pass over `chunks` (see
        `rf_pca`).

        Parameters
        ----------
        chunks : iterable of blocks, array, sparse matrix, Bags or Dask array
        y : array_like or iterable of blocks, optional
        progress : bool, default=False

        Returns
        -------
        self
        """
        progress = check_progress(progress)
        maps = check_maps(self.feature_map, "feature_map")
        if len(maps) != 1:
            raise TypeError("feature_map must be one map (for several, see rf_ridge)")
        (moments,), _ = reduce_moments(chunks, y, maps, None,
                                       ("chunks", "y", "feature_map"), progress)
        k = check_n_components(self.n_components, moments.mean.shape[0],
                               "n_components")
        return self._set_fitted(_pca_state(maps[0], moments, k))

    def _project(self, Z):
        """PCA coordinates of features Z (array, CSR or Dask array; an
        array of another library: computed there)."""
        library = _array_api.library_of(Z=Z)
        if library is not None:  # (where it computes; else NumPy's, on a view)
            return (Z @ in_library_of(Z, self.components_.T) - in_library_of(
                Z, self.mean_ @ self.components_.T) if library.native else
                library.from_numpy(self._project(library.to_numpy(Z))))
        C = self.components_.T
        if Z.dtype == np.float32:
            C = C.astype(np.float32)
        out = Z @ C
        return out - (self.mean_ @ self.components_.T).astype(out.dtype)

    def transform(self, X):
        """PCA coordinates ``(map(X) - mean_) @ components_.T`` of the rows
        (or sets) of `X`, a block as the map takes it or a Dask array (then
        lazy). float32 features give float32 coordinates. Arrays of another
        library give its arrays, computed there (differentiably)."""
        self._check_fitted()
        return self._project(features(self._map, X, self.mean_.shape[0]))


def _pca_state(feature_map, moments, n_components):
    """The fitted attributes of the PCA of `feature_map`'s features with
    the streaming `moments`, keeping `n_components`."""
    n_samples = int(moments.n)
    check_moments(moments)
    p = moments.M2.shape[0]
    total = float(np.trace(moments.M2))
    vals, vecs = scipy.linalg.eigh(moments.M2,
                                   subset_by_index=[p - n_components, p - 1])
    vals, vecs = np.maximum(vals[::-1], 0.0), vecs[:, ::-1]
    signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(n_components)])
    vecs *= np.where(signs == 0, 1.0, signs)
    components = np.ascontiguousarray(vecs.T)
    return {"_map": feature_map, "n_components_": n_components,
            "n_samples_": n_samples, "components_": components,
            "explained_variance_": vals / max(n_samples - 1, 1),
            "explained_variance_ratio_": vals / total if total > 0 else vals * 0.0,
            "mean_": moments.mean, "y_mean_": moments.y_mean,
            "projected_target_": (None if moments.Czy is None
                                  else components @ moments.Czy)}


def _fitted_pca(feature_map, moments, n_components):
    return RandomFeaturePCA(feature_map, n_components)._set_fitted(
        _pca_state(feature_map, moments, n_components))


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
        8192 rows (or sets); so is one array of another library (PyTorch,
        JAX, CuPy: each block mapped there, its features copied to the
        host for the moments). A Dask array (rows), or a `Bags` with Dask
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
        Fitted (``RandomFeaturePCA(feature_map, n_components).fit(chunks,
        y)``), picklable, its arrays read-only, with

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
    return RandomFeaturePCA(feature_map, n_components).fit(chunks, y,
                                                            progress=progress)


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


class RandomFeatureRidge(_OutOfCore):
    """Ridge regression on the principal components of random features,
    computed out of core: `rf_ridge` as an estimator (``rf_ridge(chunks,
    y_chunks, feature_maps, n_components, alpha=a)`` is
    ``RandomFeatureRidge(feature_maps, n_components, alpha=a).fit(chunks,
    y_chunks)``), of the maps' protocol (`get_params`, `set_params`,
    ``clone``); its fitted arrays are read-only. It takes fitted maps:
    ``clone`` clones them too, unfitted (set fitted ones before `fit`).

    The weights act on the unprojected features: ``predict(X)`` is
    ``sum_l feature_maps[l].transform(X) @ coef_[l] + intercept_``, with no
    projection at test time.

    Parameters
    ----------
    feature_maps : feature map, sequence of feature maps, or None
        Objects with a ``transform`` method (`rf_ridge` gives the tuple of
        them); None (alone or in the sequence) means the data are the
        features.
    n_components : int, sequence of int, or None, default=None
        Principal components kept per map (one int for all maps); None
        keeps every feature, giving plain ridge regression.
    alpha : float, default=1.0
        Ridge penalty, >= 0; 0 gives least squares (minimum norm).

    Attributes
    ----------
    pca_ : tuple of RandomFeaturePCA
        The principal components of each map. For a map keeping all its
        features they are not needed by the fit, and are computed when
        first read.
    coef_ : ndarray, shape (n_features,) or (n_features, n_targets)
        Weights on the concatenated features of all maps (1-D for 1-D `y`).
    intercept_ : float or ndarray of shape (n_targets,)
    coef_projected_ : ndarray, shape (n_components_total, n_targets)
        The weights ``w`` on the principal components (computed when first
        read, as ``pca_``).
    n_samples_ : int

    See Also
    --------
    rf_ridge : Makes and fits one.

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

    def __init__(self, feature_maps=None, n_components=None, *, alpha=1.0):
        self.feature_maps = feature_maps
        self.n_components = n_components
        self.alpha = alpha

    def __sklearn_tags__(self):
        from sklearn.utils import RegressorTags

        tags = super().__sklearn_tags__()
        tags.estimator_type, tags.regressor_tags = "regressor", RegressorTags()
        tags.target_tags.required, tags.transformer_tags = True, None
        return tags

    def fit(self, chunks, y_chunks, *, progress=False):
        """Fit the weights in one pass over `chunks` and `y_chunks` (one
        map), or two (several maps); see `rf_ridge`.

        Parameters
        ----------
        chunks : iterable of blocks, array, sparse matrix, Bags or Dask array
        y_chunks : array_like or iterable of blocks
        progress : bool, default=False

        Returns
        -------
        self
        """
        progress = check_progress(progress)
        maps = check_maps(self.feature_maps, "feature_maps")
        alpha = check_scalar(self.alpha, "alpha", low=0.0)
        n_components = self.n_components
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
            (moments,), ndim = reduce_moments(chunks, y_chunks, maps, None, names,
                                              progress)
            width = moments.mean.shape[0]
            k = check_n_components(n_components[0], width, "n_components")
            if k == width:  # plain ridge: one solve, no PCA needed
                part = moments
                w = _ridge_weights(moments.M2, moments.Czy, alpha)
            else:
                part = _fitted_pca(maps[0], moments, k)
                lam = part.explained_variance_ * max(moments.n - 1, 1)
                w = _pseudo_solve(lam, None, part.projected_target_, alpha)
            return self._set_fitted(_ridge_state(maps, [part], w, moments.y_mean,
                                                 moments.n, ndim))
        if not is_lazy(chunks) and iter(split_blocks(chunks, "chunks")[0]) is chunks:
            raise ValueError(
                "chunks is a one-shot iterator, but several feature maps need two "
                "passes over the data: give a list (or another re-iterable)"
            )
        moments, _ = reduce_moments(chunks, None, maps, None, names, progress)
        # A map keeping all its features enters the joint ridge unprojected.
        parts = []
        for i, (f, m, k) in enumerate(zip(maps, moments, n_components, strict=True)):
            k = check_n_components(k, m.mean.shape[0], f"n_components[{i}]")
            parts.append(m if k == m.mean.shape[0] else _fitted_pca(f, m, k))
        pcas = [p if isinstance(p, RandomFeaturePCA) else None for p in parts]
        (joint,), ndim = reduce_moments(chunks, y_chunks, maps, pcas, names,
                                        progress)
        w = _ridge_weights(joint.M2, joint.Czy, alpha)
        return self._set_fitted(_ridge_state(maps, parts, w, joint.y_mean, joint.n,
                                             ndim))

    @functools.cached_property
    def pca_(self):
        return tuple(p if isinstance(p, RandomFeaturePCA)
                     else _fitted_pca(f, p, p.mean.shape[0])
                     for f, p in zip(self._maps, self._parts, strict=True))

    @functools.cached_property
    def coef_projected_(self):
        return _read_only(np.vstack([
            w if isinstance(p, RandomFeaturePCA)
            else pca.components_ @ w  # all components: rotated
            for p, pca, w in zip(self._parts, self.pca_,
                                 _pieces(self._w, map(_rank, self._parts)),
                                 strict=True)]))

    def predict(self, X):
        """Predictions for the rows (or sets) of `X`, a block as the maps
        take it or a Dask array (then lazy): ``(n,)`` or ``(n, n_targets)``.
        Arrays of another library give its arrays, computed there
        (differentiably).
        """
        self._check_fitted()
        out, library = self.intercept_, None
        for f, c in zip(self._maps, _pieces(self.coef_, map(_width, self._parts)),
                        strict=True):
            Z = features(f, X, c.shape[0])
            library = _array_api.library_of(Z=Z)
            if library is not None and library.native:  # (computed there)
                if not _array_api.is_foreign(out):
                    out = in_library_of(Z, out)
                out = Z @ in_library_of(Z, c) + out
            else:  # (NumPy's; features of another library: a view of them)
                Z = host_features(Z)
                out = Z @ c.astype(Z.dtype, copy=False) + out
        return (out if library is None or library.native
                else library.from_numpy(np.asarray(out)))


def _ridge_state(maps, parts, w, y_mean, n_samples, y_ndim):
    """The fitted attributes of the ridge weights `w` on the coordinates of
    `parts`: for each map, its RandomFeaturePCA, or the moments of its
    features where it keeps them all (solved on unprojected features)."""
    coef = np.vstack([
        p.components_.T @ wp if isinstance(p, RandomFeaturePCA) else wp
        for p, wp in zip(parts, _pieces(w, map(_rank, parts)), strict=True)])
    intercept = y_mean - sum(_mean(p) @ c for p, c in
                             zip(parts, _pieces(coef, map(_width, parts)), strict=True))
    if y_ndim == 1:
        coef, intercept = coef[:, 0], float(intercept[0])
    return {"_maps": tuple(maps), "n_samples_": n_samples, "_parts": tuple(parts),
            "_w": w, "coef_": coef, "intercept_": intercept}


def _pieces(A, sizes):
    """The consecutive row blocks of `A` of `sizes` rows."""
    ends = np.cumsum([0, *sizes])
    return [A[a:b] for a, b in itertools.pairwise(ends)]


def _mean(part):
    """The mean features of a map, from its PCA or its moments."""
    return part.mean_ if isinstance(part, RandomFeaturePCA) else part.mean


def _width(part):
    return _mean(part).shape[0]


def _rank(part):
    """Coordinates of a map in the joint ridge: its components, or all its
    features."""
    return part.n_components_ if isinstance(part, RandomFeaturePCA) else _width(part)


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
        Objects with a ``transform`` method; None (alone or in the
        sequence) means the data are the features.
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
        Fitted (``RandomFeatureRidge(feature_maps, n_components,
        alpha=alpha).fit(chunks, y_chunks)``, the maps as a tuple),
        picklable, its arrays read-only, with

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
    return RandomFeatureRidge(check_maps(feature_maps, "feature_maps"), n_components,
                              alpha=alpha).fit(chunks, y_chunks, progress=progress)
