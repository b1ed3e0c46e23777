"""Nystroem features of any exact kernel of the package: `NystroemMap`.

The map keeps m landmark objects L chosen from the training collection and
the matrix ``N = K_LL^{-1/2}`` (the inverse square root of the clipped
spectrum); the features of x are ``k(x, L) N``. Each kernel is its spec
(`kernelmaps._spec`): the input it takes (sets, histograms, Gaussians, or
anything for a callable), how to check and index that input, any block
``k(A, B)`` at the scale its public function takes, and a cheap embedding
of its objects for k-means++ landmarks.
"""

import numpy as np
import scipy.linalg
import scipy.sparse

from . import _array_api
from ._base import FeatureMap, check_weights_kept
from ._engine import lapack
from ._engine.layout import power_of_two_exponent
from ._lazy import is_lazy
from ._parallel import resolve_workers
from ._spec import check_kernel_params, kernel_names, spec_for
from ._transforms import blocked_rows, blocked_sets
from ._validation import check_choice, check_rng, check_scalar
from ._warnings import warn_caller

__all__ = ["NystroemMap"]

_LANDMARKS = ("uniform", "kmeans++", "leverage")
# Objects per block when the diagonal of a kernel is taken from its
# symmetric blocks (leverage scores of kernels without a cheap diagonal).
NYSTROEM_DIAGONAL_BLOCK = 32
# An indefinite kernel: where a landmark eigenvalue is small beside the
# negative ones, the kernel's values against the other objects are not
# bound by it (as they are for a positive semi-definite kernel), and
# dividing by its root blows their features up. Positive eigenvalues below
# this fraction of the largest negative one's magnitude are dropped
# (measured on the Renyi kernel: NystroemMap's Notes; 0.125 and 0.5 gave
# larger errors on held-out sets or on the training sets). For a positive
# semi-definite kernel this drops nothing beyond rounding.
_INDEFINITE_FLOOR = 0.25


# -- landmarks --------------------------------------------------------------


def _kmeans_plusplus(E, m, rng):
    """m row indices of E by k-means++ seeding (D^2 sampling; Arthur and
    Vassilvitskii 2007). Dense or CSR `E`."""
    n = E.shape[0]
    sparse = scipy.sparse.issparse(E)
    # D^2 sampling does not depend on the scale of E: at unit scale, the
    # squared norms neither overflow nor underflow.
    E = _at_unit_scale(E, np.abs(E.data if sparse else E).max(initial=0.0))[0]
    sq = np.asarray(E.multiply(E).sum(axis=1)).ravel() if sparse else \
        np.einsum("ij,ij->i", E, E)
    chosen = np.zeros(n, dtype=bool)
    first = int(rng.integers(n))
    chosen[first] = True
    d2 = np.full(n, np.inf)
    centre = first
    for _ in range(m - 1):
        row = E[centre]
        dots = (E @ row.T).toarray().ravel() if sparse else E @ row
        np.minimum(d2, np.maximum(sq + sq[centre] - 2 * dots, 0.0), out=d2)
        weights = np.where(chosen, 0.0, d2)
        total = weights.sum()
        if not total > 0:  # every object left duplicates a landmark
            weights = (~chosen).astype(np.float64)
            total = weights.sum()
        centre = int(rng.choice(n, p=weights / total))
        chosen[centre] = True
    return np.flatnonzero(chosen)


def _diagonal(kernel, X, params, workers):
    """k(x, x) of every object, from symmetric blocks of a few objects."""
    n = kernel.count(X)
    parts = []
    for start in range(0, n, NYSTROEM_DIAGONAL_BLOCK):
        block = kernel.take(X, slice(start, min(start + NYSTROEM_DIAGONAL_BLOCK,
                                                n)))
        parts.append(np.diagonal(kernel.function_block(block, None, params,
                                                       workers)))
    return np.concatenate(parts).astype(np.float64)


def _leverage(kernel, X, m, params, rng, workers):
    """m indices sampled without replacement, with probabilities half
    uniform and half in proportion to approximate ridge leverage scores
    (one step of the recursive scheme of Musco and Musco, 2017): the scores
    of the Nystroem approximation on m uniform landmarks, at their ridge
    for rank m / 2 (the spectrum's tail beyond it, over m / 2)."""
    n = kernel.count(X)
    first = np.sort(rng.choice(n, m, replace=False))
    S = kernel.take(X, first)
    K_SS, params = kernel.function_gram(S, params, workers, None)
    K_nS = kernel.function_block(X, S, params, workers)
    diag = _diagonal(kernel, X, params, workers)
    # The probabilities do not depend on the kernel's scale: at unit scale,
    # the squares below neither overflow nor underflow.
    top = max(np.abs(K_nS).max(), np.abs(diag).max())
    K_SS, K_nS, diag = (_at_unit_scale(A, top)[0] for A in (K_SS, K_nS, diag))
    values, vectors = _eigh(K_SS, workers)
    keep = values > _cutoff(values)
    P = lapack.matmul(K_nS, vectors)
    # The eigenvalues of the Nystroem approximation K_nS K_SS^+ K_Sn.
    B = P[:, keep] / np.sqrt(values[keep])
    top = np.linalg.eigvalsh(B.T @ B)[::-1]
    rank = max(1, m // 2)
    ridge = max((diag.sum() - top[:rank].sum()) / rank, _cutoff(values),
                np.finfo(np.float64).tiny)
    # k_ii - k_iS (K_SS + ridge I)^{-1} k_Si, through the eigenvectors.
    scores = diag - ((P * P) / (np.maximum(values, 0.0) + ridge)).sum(axis=1)
    scores = np.maximum(scores, 0.0)
    # Half uniform ("shrinkage leveraging", Ma, Mahoney and Yu, 2015): pure
    # leverage scores spend the landmarks on rare objects, whose share of
    # the mean error is small (chi2 kernel of clustered histograms: mean
    # error over all pairs 1.05 to 1.15 times uniform landmarks' at 100 to
    # 400 landmarks); half uniform, 0.99 to 1.03 times it, and still 0.63
    # to 0.88 times on the rare clusters and 0.69 to 0.94 times in spectral
    # norm (studies/nystroem/results.md). It keeps every object possible.
    total = scores.sum()
    p = np.full(n, 0.5 / n)
    p += 0.5 * scores / total if total > 0 else 0.5 / n
    return np.sort(rng.choice(n, m, replace=False, p=p / p.sum()))


def _eigh(K, workers):
    """Eigenvalues (ascending) and eigenvectors of the symmetric part of K,
    on one BLAS thread up to `SMALL_EIGH` rows, else on at most `workers`
    (threads, resolved)."""
    K = np.asarray(K, dtype=np.float64)
    with (lapack.one_blas_thread() if len(K) <= SMALL_EIGH
          else lapack.blas_threads(workers)):
        return scipy.linalg.eigh((K + K.T) / 2, check_finite=False)


# Rows of the landmarks' kernel up to which its eigendecomposition runs on
# one BLAS thread: tens of milliseconds, where threads gain little and,
# beside busy cores, lose much (300 rows on 2 loaded cores: 22 ms on one
# thread, 2.2 s on two; benchmarks/TUNING.md).
SMALL_EIGH = 512


def _at_unit_scale(A, top):
    """``A / 2**e`` and e, with ``2**e`` the power of 2 above `top` (exact:
    only the exponents change; e = 0 where `top` is 0)."""
    e = -power_of_two_exponent(top)
    if scipy.sparse.issparse(A):
        if e:
            A = A.astype(np.float64)
            A.data = np.ldexp(A.data, -e)
        return A, e
    return np.ldexp(np.asarray(A, dtype=np.float64), -e), e


def _normalization(K, workers):
    """Eigenvalues of K (ascending) and ``U Lambda_+^{-1/2} U^T``, computed
    at unit scale: right for kernels of any magnitude; a ValueError where
    the eigenvalues overflow float64 (entries near its largest value)."""
    unit, e = _at_unit_scale(K, np.abs(K).max(initial=0.0))
    values, vectors = _eigh(unit, workers)
    keep = values > _cutoff(values)
    U = vectors[:, keep]
    # 2**(-e/2) in two steps: e may be odd.
    N = np.ldexp((U / np.sqrt(values[keep])) @ U.T, -(e // 2))
    if e % 2:
        N /= np.sqrt(2.0)
    with np.errstate(over="ignore"):
        values = np.ldexp(values, e)
    if not np.isfinite(values).all():
        raise ValueError("the eigenvalues of the kernel between the landmarks "
                         "of X overflow float64; scale X down")
    return values, N


def _cutoff(values):
    """Eigenvalues (ascending) at or below this are dropped: zero by
    numpy.linalg.pinv's rule, and for an indefinite kernel those under
    `_INDEFINITE_FLOOR` times the largest negative one's magnitude."""
    return max(max(values[-1], 0.0) * len(values) * np.finfo(np.float64).eps,
               _INDEFINITE_FLOOR * max(-values[0], 0.0))


# -- the kernel ---------------------------------------------------------------



def width(X):
    """Dimension of the objects of checked input (None where it has none):
    of the points of a Bags, of rows, of the means of Gaussians."""
    X = X[0] if isinstance(X, tuple) else X
    shape = getattr(X, "shape", ())
    return getattr(X, "dim", shape[1] if len(shape) > 1 else None)


def output_dtype(X):
    """float32 for float32 sets or rows, else float64."""
    dtype = getattr(X, "dtype", None)
    return np.dtype(np.float32 if dtype == np.float32 else np.float64)


# -- the map ----------------------------------------------------------------


class NystroemMap(FeatureMap):
    r"""Nystroem features of any exact kernel of the package [1]_, [2]_.

    With m landmarks :math:`L = (l_1, \dots, l_m)` chosen among the
    training objects and :math:`K_{LL} = U \Lambda U^\top`,

    .. math::

        z(x) = k(x, L)\, U \Lambda_+^{-1/2} U^\top, \qquad
        z(x) \cdot z(y) = k(x, L)\, K_{LL}^{+}\, k(L, y) \approx k(x, y)

    where :math:`\Lambda_+^{-1/2}` inverts the positive eigenvalues and
    drops the others (the pseudo-inverse of the clipped spectrum). The
    inner products are the kernel projected on the span of the landmarks:
    exact between landmarks, and for every training object when all of
    them are landmarks.

    For an indefinite kernel (the Renyi divergence kernel) the landmarks'
    spectrum is clipped, and every other object goes through the same
    eigenvectors (as `PSDProjector` maps test rows). The positive
    eigenvalues below a quarter of the largest negative one's magnitude
    are dropped too: the values of an indefinite kernel against the other
    objects are not bound by them, and dividing by their roots would blow
    the features up (see Notes). The features of the landmarks then give
    the kernel with that spectrum, :math:`U \Lambda_c U^\top`.

    `fit` chooses the landmarks, computes their kernel with the exact
    engine and its inverse square root; `transform` computes the kernel
    between its objects and the landmarks, then applies it.

    Parameters
    ----------
    n_components : int, default=100
        Number m of landmarks, the width of the features. Beyond the number
        of training objects, every object is a landmark, with a warning (as
        in scikit-learn's ``Nystroem``).
    kernel : str or callable, default="mean_map"
        The kernel, and the input it takes:

        - sets of points (as `Bags` or a sequence of ``(n_i, d)`` arrays):
          ``"mean_map"`` (`sum_match_kernel`), ``"mmd"`` (`mmd_kernel`),
          ``"renyi"`` (`divergence_kernel` of the symmetrised
          `renyi_divergence`, ``(D + D.T) / 2``), ``"sliced_wasserstein"``
          (`sliced_wasserstein_kernel`: its directions drawn by `fit` from
          `rng`, gamma None fixed on the landmarks, ``1 / median`` of
          SW_2^2; k-means++ landmarks on its quantile features);
        - histograms (rows of a 2-D array or CSR matrix): ``"chi2"``
          (`additive_chi2_kernel`), ``"intersection"``, ``"hellinger"``,
          ``"js"``, ``"exp_chi2"`` (the ``*_kernel`` functions);
        - Gaussians, given as a pair ``(means, covs)``: ``"expected"``
          (`gaussian_expected_kernel`);
        - a callable ``kernel(A, B, **kernel_params)`` returning the
          ``(len(A), len(B))`` kernel matrix, where A and B are subsets of
          the input indexed as it is (rows of an array or sparse matrix,
          items of a sequence, sets of a `Bags`).
    gamma, degree, coef0 : float, int, float, optional
        The point kernel's parameters, as in `sum_match_kernel`, for the
        kernels that take them ("mean_map", "mmd", "expected"; ``gamma``
        also for "renyi") and for a callable; the same as giving them in
        `kernel_params` (as scikit-learn's ``Nystroem`` takes them), which
        must not give them too.
    kernel_params : dict, optional
        Keyword arguments of the kernel's function (e.g. ``gamma``,
        ``gamma2``, ``beta``; for "renyi" those of `renyi_divergence` and
        `divergence_kernel`: ``alpha``, ``k``, ``gamma``, ``power``, and
        ``scale``, the median divergence with ``gamma = 1 / scale **
        power``). A ``gamma`` left out (or None) is fixed by `fit`: the
        median heuristic on the training points, as the function's
        default, or for "renyi" the scale of the landmarks' divergences;
        `params` holds the values used, and can be given again.
    landmarks : {"uniform", "kmeans++", "leverage"} or array of int, default="uniform"
        How `fit` chooses the landmarks: uniformly without replacement;
        k-means++ seeding [3]_ on a cheap embedding (random distribution
        features of sets, square roots of histograms, means and standard
        deviations of Gaussians; not for callables); approximate ridge
        leverage scores [4]_, mixed half and half with uniform
        probabilities [5]_ (costs about one more `transform` of the
        training data); or the indices of the training objects to use.
    rng : int or numpy.random.Generator, optional
        Seed or generator for the landmarks (and the embedding).

    Attributes
    ----------
    components_ : Bags, ndarray, sparse matrix, tuple or list
        The landmarks.
    component_indices_ : ndarray of int
        Their indices in the training collection.
    normalization_ : ndarray, shape (m, m)
        :math:`U \Lambda_+^{-1/2} U^\top`.
    eigenvalues_ : ndarray, shape (m,)
        The spectrum of :math:`K_{LL}`, ascending (negative values are
        those the projection clips).
    params_ : dict
        The kernel's parameters used (with the defaults fixed by `fit`).
    n_features_in_ : int or None
        Dimension of the objects (d of the points, bins of the histograms;
        None for a callable on objects without one).
    n_features_out_ : int
        Number m of features (of landmarks).

    See Also
    --------
    RandomDistributionFeatures : Random features of the mean map kernel.
    PSDProjector : The clip projection of an indefinite kernel matrix.

    Notes
    -----
    The cost of `transform` is that of the exact kernel between its n
    objects and the m landmarks, plus an n x m x m product; `fit` computes
    the m x m landmark kernel and its eigendecomposition, of the landmarks
    only: a LAPACK call which, as in SciPy, Ctrl-C cannot stop once it has
    started (seconds for thousands of landmarks). Dask input to
    `transform` (sets with Dask points, or Dask histograms) gives a lazy
    result computed block by block.

    *Weighted sets.* The kernels "mean_map" and "mmd" take a `Bags` with
    point weights, in `fit` and `transform`: the weighted mean map kernel
    of `sum_match_kernel` (weights normalised per set), ``gamma=None``
    its weighted median heuristic on the training sets, and the landmarks
    keep their weights (``components_``). "sliced_wasserstein" takes them
    too: the weighted quantile functions of `sliced_wasserstein_kernel`,
    ``gamma=None`` ``1 / median`` of the weighted SW_2^2, and the
    k-means++ landmarks from the weighted quantile features. "renyi"
    refuses them (a ValueError). ``landmarks="kmeans++"`` embeds the sets
    by `RandomDistributionFeatures` (by `SlicedWassersteinFeatures` for
    "sliced_wasserstein"), and takes weighted sets only where it does.

    *Arrays of other libraries* (PyTorch, JAX, CuPy, array-api-strict):
    where the library computes (another device, a gradient asked, a
    library other than PyTorch and JAX), `fit` checks the objects there,
    gathers the landmarks there and copies to the host only them
    (``components_``) and the median heuristic's sample of points
    (``gamma=None``); the landmarks' kernel and its inverse square root
    are then computed as for NumPy input (the same attributes).
    "kmeans++" and "leverage" landmarks, which read every object (an
    embedding, the kernel's diagonal), and a callable kernel fit on a
    NumPy copy of the objects. `transform` computes in their library, on
    their device.

    The floor of an indefinite spectrum: on the Renyi divergence kernel of
    300 sets of 50 points (160 of its 300 eigenvalues negative), keeping
    every positive eigenvalue of the landmarks gave a mean error against
    the clipped kernel of 0.39, 1.04, 0.30, 0.19 and 0.08 at 10, 25, 50,
    100 and 200 landmarks, and features of held-out sets whose squared
    norms reached 7 times the largest kernel value; with the floor the
    error falls at every step (0.17, 0.12, 0.09, 0.06, 0.04; 0.03 with all
    300 sets as landmarks) and the norms stay at the kernel's size. With
    all training objects as landmarks, their features give the kernel with
    the positive spectrum above the floor (not the plain clip projection,
    whose features of held-out objects blow up the same way).

    References
    ----------
    .. [1] C. K. I. Williams and M. Seeger, "Using the Nystroem Method to
       Speed Up Kernel Machines", Advances in Neural Information Processing
       Systems (NIPS), 2001.
    .. [2] T. Yang, Y.-F. Li, M. Mahdavi, R. Jin and Z.-H. Zhou, "Nystroem
       Method vs Random Fourier Features: A Theoretical and Empirical
       Comparison", NIPS 2012.
    .. [3] D. Arthur and S. Vassilvitskii, "k-means++: The Advantages of
       Careful Seeding", ACM-SIAM Symposium on Discrete Algorithms (SODA),
       2007.
    .. [4] C. Musco and C. Musco, "Recursive Sampling for the Nystroem
       Method", NIPS 2017.
    .. [5] P. Ma, M. W. Mahoney and B. Yu, "A Statistical Perspective on
       Algorithmic Leveraging", Journal of Machine Learning Research
       16(27), 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import NystroemMap, sum_match_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(30, 2)) for i in range(40)]
    >>> nys = NystroemMap(20, kernel="mean_map", gamma=0.5, rng=0)
    >>> F = nys.fit_transform(sets)
    >>> F.shape
    (40, 20)
    >>> K = sum_match_kernel(sets, gamma=0.5)
    >>> bool(np.abs(F @ F.T - K).mean() < 1e-3)  # K has a low effective rank
    True
    """

    def __init__(self, n_components=100, *, kernel="mean_map", gamma=None,
                 degree=None, coef0=None, kernel_params=None, landmarks="uniform",
                 rng=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.landmarks = landmarks
        self.rng = rng

    @property
    def _takes_sets(self):
        return self._given_kind() == "sets"

    @property
    def _takes_sparse(self):  # histograms
        return self._given_kind() == "rows"

    _positive_only = _takes_sparse

    def _given_kind(self):
        """The kind of objects the kernel takes (None: not known yet)."""
        try:
            return self._given_spec().kind
        except (TypeError, ValueError):
            return None

    @property
    def _spec(self):
        """The spec of `kernel`, with the parameters used (or given)."""
        if hasattr(self, "params_"):
            return spec_for(self.kernel, self.params_)
        return self._given_spec()

    def _given_spec(self):
        """The spec of `kernel`, with the parameters given."""
        kernel = self.kernel
        if not (callable(kernel) or isinstance(kernel, str)):
            raise TypeError(f"kernel must be a name or a callable, got "
                            f"{type(kernel).__name__}")
        if not callable(kernel):
            # (the kernels of objects; the point kernels are
            # `RandomFourierFeatures`)
            check_choice(kernel, "kernel",
                         kernel_names("sets", "rows", "gaussians"))
        spec = spec_for(kernel, None)
        # What the kernel's function is given: kernel_params and the point
        # kernel's parameters given on their own.
        return spec_for(kernel, _with_point_params(
            check_kernel_params(self.kernel_params, spec), spec,
            {"gamma": self.gamma, "degree": self.degree, "coef0": self.coef0}))

    def _fit(self, X, workers, progress):
        kernel, m, landmarks, rng = self._fit_options()
        names = self._check_names(X, reset=True) if kernel.kind == "rows" else {}
        X = kernel.check(X)
        return {**self._fitted_landmarks(kernel, X, m, landmarks, rng, workers,
                                         lambda index: kernel.take(X, index)),
                **names}

    def _array_fit(self, library, X, n_threads):
        """`_fit` of objects of `library` that it computes
        (`FeatureMap._fitted`): checked there by the kernel's spec
        (``check_array``), the landmarks drawn on the host as `_fit` draws
        them, gathered there and copied to the host (``components_``), the
        median heuristic's gamma from its sample of points alone; the
        landmarks' kernel and its normalisation then as `_fit` computes
        them. "kmeans++" and "leverage" landmarks (an embedding, or the
        diagonal, of every object), a callable kernel and a kernel whose
        spec cannot check such objects are fitted on a NumPy copy of
        `X`."""
        kernel, m, landmarks, rng = self._fit_options()
        if (isinstance(landmarks, str) and landmarks != "uniform") or not hasattr(
                kernel, "check_array"):
            return self._fit(_array_api.numpy_objects(library, X), n_threads, False)
        Z = kernel.check_array(library, X, "X")
        return self._fitted_landmarks(kernel, Z, m, landmarks, rng, n_threads,
                                      lambda index: _host_objects(library, Z, index))

    def _fit_options(self):
        """The spec of `kernel` with the parameters given, and the checked
        `n_components`, landmark rule (or indices) and generator."""
        kernel = self._given_spec()
        m = check_scalar(self.n_components, "n_components", kind="int", low=1)
        landmarks = _check_landmarks(self.landmarks, kernel)
        return kernel, m, landmarks, check_rng(self.rng)

    def _fitted_landmarks(self, kernel, X, m, landmarks, rng, workers, take):
        """The fitted attributes from the checked objects `X` of the spec
        `kernel`: the landmarks chosen (``take(index)``: those objects as
        the NumPy path's checked objects), their kernel and its inverse
        square root."""
        n = kernel.count(X)
        if m > n and not isinstance(landmarks, np.ndarray):
            # (as scikit-learn's Nystroem: a fold of a search may be small)
            warn_caller(f"n_components={m} landmarks, but X has only {n} "
                        f"objects: every object is a landmark (n_components="
                        f"{n}), and the features are those of the exact "
                        f"kernel, at its cost", UserWarning)
            m = n
        params = kernel.function_params(kernel.params, X, rng=rng)
        kernel = spec_for(self.kernel, params)
        if isinstance(landmarks, np.ndarray):
            index = landmarks
            if index.size != m or (index.size and index.max() >= n):
                raise ValueError(
                    f"landmarks must hold n_components={m} distinct indices "
                    f"below {n}, got {index.size} up to {index.max()}"
                )
        elif landmarks == "uniform":
            index = np.sort(rng.choice(n, m, replace=False))
        elif landmarks == "kmeans++":
            index = _kmeans_plusplus(kernel.embedding(X, params, rng), m, rng)
        else:
            index = _leverage(kernel, X, m, params, rng, workers)
        L = take(index)
        K, params = kernel.function_gram(L, params, workers, "landmarks of X")
        values, normalization = _normalization(K, workers)
        return {"components_": L, "component_indices_": index,
                "normalization_": normalization, "eigenvalues_": values,
                "params_": params, "n_features_in_": width(L),
                "n_features_out_": m}

    def transform(self, X, *, workers=None, progress=False):
        """Nystroem features of the objects of `X`.

        Parameters
        ----------
        X : sets, histograms, (means, covs) or objects
            As `fit` took them (see `kernel`); Dask sets or histograms give
            a lazy Dask array.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of objects (needs tqdm; sets
            and histograms).

        Returns
        -------
        Z : ndarray, shape (n, n_components)
            float32 for float32 sets or histograms, else float64 (computed
            in float64).
        """
        self._check_fitted()
        library = _array_api.library_of_objects(X=X)
        if library is not None:
            return self._array_transform(library, X, workers)
        kind = self._spec.kind
        if kind == "rows":
            self._check_names(X, reset=False)
        if kind in ("sets", "rows") and (is_lazy(X) or progress):
            blocks = self._transform_sets if kind == "sets" else self._transform_rows
            return blocks(X, workers=workers, progress=progress)
        if kind == "sets":  # (the blocks of _transform_sets check it there)
            check_weights_kept(self, X)
        return self._transform(X, workers=workers)

    def _transform(self, X, *, workers=None):
        kernel = self._spec
        X = kernel.check(X)
        self._check_width(width(X))
        K = kernel.function_block(X, self.components_, self.params_,
                                  resolve_workers(workers))
        Z = lapack.matmul(K, self.normalization_)
        return Z.astype(output_dtype(X), copy=False)

    def _array_transform(self, library, X, workers):
        """`transform` of objects of `library` (`kernelmaps._array_api`):
        through NumPy, or (`library.native`) by the kernel's function in the
        library, on their device, between them and the landmarks, times
        the normalisation (both moved there)."""
        if not library.native:
            return library.from_numpy(self.transform(
                _array_api.numpy_objects(library, X), workers=workers))
        resolve_workers(workers)
        xp = library.xp
        K = self._spec.call(X, _array_api.library_objects(library, self.components_),
                            self.params_)
        (normalization,) = self._on_device(library, np.float64, "normalization_")
        return xp.astype(xp.astype(K, xp.float64) @ normalization, K.dtype)

    def _lazy_output(self, dtype):
        """Width and dtype of the features of input of `dtype` (for Dask)."""
        return self.n_features_out_, output_dtype(np.zeros(0, dtype))

    def _takes_weights(self):
        """Whether the fitted kernel takes weighted sets (its spec says)."""
        return bool(getattr(self._spec, "weighted", False))

    # (weighted sets in blocks where the kernel takes them)
    _transform_sets = blocked_sets(weighted=_takes_weights)(_transform)
    _transform_rows = blocked_rows(_transform)


def _host_objects(library, Z, index):
    """The objects `index` (NumPy integers) of the objects Z of `library`
    checked there (``Spec.check_array``: an array of rows, a pair (means,
    covs), or `ArraySets`), gathered there and copied to the host as the
    NumPy path's checked objects (a `Bags` for sets)."""
    if hasattr(Z, "bags"):  # (sets)
        return Z.take(index).bags()
    rows = library.from_numpy(np.asarray(index, dtype=np.int64))
    if isinstance(Z, tuple):
        return tuple(library.to_numpy(library.xp.take(a, rows, axis=0)) for a in Z)
    return library.to_numpy(library.xp.take(Z, rows, axis=0))


def _with_point_params(params, kernel, given):
    """`params` (checked `kernel_params`) with the parameters of `given`
    that are not None (gamma, degree, coef0, given as arguments of their
    own), each taken by the kernel (and checked by its spec), and not in
    `params`."""
    params = dict(params)
    for name, value in given.items():
        if value is None:
            continue
        if name in params:
            raise ValueError(
                f"{name} is given twice, as {name}={value!r} and in "
                f"kernel_params: give it once"
            )
        if kernel.takes is not None and name not in kernel.takes:
            raise ValueError(
                f"{name}={value!r}: the {kernel.name!r} kernel takes no {name}"
            )
        params[name] = value
    return params


def _check_landmarks(landmarks, kernel):
    """The landmark rule, or sorted distinct non-negative indices."""
    if isinstance(landmarks, str):
        check_choice(landmarks, "landmarks", _LANDMARKS)
        if landmarks == "kmeans++" and kernel.kind == "any":
            raise ValueError(
                "landmarks='kmeans++' needs an embedding of the objects, which "
                "a callable kernel does not give: use 'uniform' or 'leverage'"
            )
        return landmarks
    index = np.asarray(landmarks)
    if index.ndim != 1 or not (index.dtype.kind in "iu" or index.size == 0):
        raise TypeError("landmarks must be 'uniform', 'kmeans++', 'leverage' or "
                        "a 1-D array of integer indices")
    index = np.unique(index.astype(np.int64))
    if index.size != np.asarray(landmarks).size or (index.size and index[0] < 0):
        raise ValueError("landmarks must hold distinct non-negative indices")
    return index

