"""scikit-learn estimators that return kernel matrices over objects, for
``SVC(kernel="precomputed")`` and other kernel machines in a ``Pipeline``.

`SetKernel` gives the exact kernels between sets of vectors, `ExpectedKernel`
the expected kernels between Gaussians given by their moments: each stores
its training objects at ``fit``, and ``transform`` gives the kernel between
new objects and them. Importing this module needs scikit-learn; the rest of
kernelmaps does not (its feature maps follow scikit-learn's estimator
protocol themselves, and need no adapter).

Sets are a list (or object array) of ``(n_i, d)`` arrays, one per sample,
which scikit-learn's cross-validation splits like any list; a 3-D array or
a `kernelmaps.Bags` also works in ``fit`` and ``transform``.
"""

import datetime

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data as _sk_validate_data

from ._base import check_weights_kept, fit_weighted
from ._gamma import resolve_gamma
from ._parallel import resolve_workers
from ._spec import SPECS, check_kernel_params, kernel_names, spec_for
from ._validation import check_choice, check_rng, check_scalar, check_sets
from .distributions import gaussian_expected_kernel
from .psd import PSDProjector

__all__ = ["ExpectedKernel", "SetKernel"]


def _taken(params, spec):
    """The items of `params` that the kernel of `spec` takes."""
    return {name: value for name, value in params.items() if name in spec.takes}


# dtype kinds that are not numbers: strings, bytes, void, datetimes and
# timedeltas (scikit-learn's check_array refuses strings; datetimes would be
# silently read as numbers of days or seconds)
_NOT_NUMERIC_KINDS = "USVMm"
_NOT_NUMERIC_TYPES = (str, bytes, np.datetime64, np.timedelta64, datetime.date,
                      datetime.time, datetime.timedelta)


def _check_numeric(X, name="X"):
    """Refuse, before scikit-learn converts them to numbers, arrays of
    strings (even numeric ones), bytes, datetimes and timedeltas: a
    TypeError naming `name`. Other input is left to `validate_data`."""
    if scipy.sparse.issparse(X):
        dtypes = [X.dtype]
    else:
        try:
            arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        except (TypeError, ValueError):
            return  # scikit-learn's own error follows
        dtypes = [arr.dtype]
        if arr.dtype == object:
            bad = next((v for v in arr.flat if isinstance(v, _NOT_NUMERIC_TYPES)),
                       None)
            if bad is not None:
                raise TypeError(
                    f"{name} must hold real numbers, got an element of type "
                    f"{type(bad).__name__}: {bad!r}"
                )
    for dtype in dtypes:
        if dtype.kind in _NOT_NUMERIC_KINDS:
            raise TypeError(
                f"{name} must hold real numbers, got an array of dtype {dtype}; "
                f"convert your data to numeric values explicitly instead"
            )


def validate_data(estimator, X, **kwargs):
    """scikit-learn's `validate_data`, without the RuntimeWarning its fast
    finiteness test (``isfinite(sum(X))``) raises where the sum of finite
    values is inf - inf: it then checks value by value, as it does for an
    overflowing sum."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _sk_validate_data(estimator, X, **kwargs)


def _check_test_sets(estimator, X, check=check_sets):
    """The sets of `X` as a Bags (`check`), with the point dimension seen
    in fit."""
    bags = check(X, "X")
    if bags.dim != estimator.n_features_in_:
        raise ValueError(
            f"X has {bags.dim} features per point, but {type(estimator).__name__} "
            f"is expecting {estimator.n_features_in_} features as input"
        )
    return bags


class SetKernel(TransformerMixin, BaseEstimator):
    """Exact kernels between sets and the training sets, for
    ``SVC(kernel="precomputed")`` in a `Pipeline`.

    ``fit_transform(X_train)`` gives the symmetric training kernel (each
    unordered pair once); ``transform(X)`` gives the kernel between the sets
    of `X` and the training sets, ``(len(X), n_train)``, with every
    parameter fixed at fit.

    Parameters
    ----------
    kernel : {"mean_map", "mmd", "renyi", "sliced_wasserstein"}, default="mean_map"
        ``"mean_map"``: `kernelmaps.sum_match_kernel` (normalised, rbf
        points); ``"mmd"``: `kernelmaps.mmd_kernel`; ``"renyi"``:
        `kernelmaps.divergence_kernel` of the symmetrised kNN Renyi
        divergences, made positive semi-definite by a `PSDProjector` fitted
        on the training kernel and applied to test rows alike;
        ``"sliced_wasserstein"``: `kernelmaps.sliced_wasserstein_kernel`,
        its directions drawn at fit from `rng`.
    gamma : float, optional
        Point kernel scale ("mean_map", "mmd"; None: the median heuristic on
        the pooled training points, kept in ``gamma_``), or the scale of
        the divergence kernel ("renyi"; None: the median heuristic of
        `divergence_kernel` on the training divergences, kept in
        ``gamma_``, with the median divergence in ``scale_``: the kernel is
        computed from the scale, stably, even where ``gamma_`` is beyond
        the float range), or of "sliced_wasserstein" (None: ``1 / median``
        of the squared distances between the training sets).
    gamma2 : float, default=1.0
        Level-2 scale of "mmd".
    alpha, k, power : float, int, float
        Renyi order, neighbours (at most ``2**31 - 1``) and the power of the
        divergence ("renyi").
    psd : {"clip", "flip", "shift", "square"}, default="clip"
        PSD projection of "renyi" (see `kernelmaps.PSDProjector`).
    n_projections : int, default=100
        Directions of "sliced_wasserstein".
    kernel_params : dict, optional
        The kernel function's other keyword arguments, checked as the
        function checks them: the point kernel of "mean_map" and "mmd"
        (``{"kernel": "laplacian"}``, ``{"kernel": "energy"}``, with
        ``degree``, ``coef0``), ``min_dist`` or ``clamp`` of "renyi",
        ``draw`` or ``projections`` of "sliced_wasserstein". The
        parameters above are given as arguments, not here.
    rng : int or numpy.random.Generator, optional
        Seed or generator of the directions of "sliced_wasserstein", drawn
        by `fit`.
    workers : int, optional
        Threads; None or -1 means all cores, -2 all but one.

    Attributes
    ----------
    train_ : Bags
        The training sets.
    gamma_ : float
        The scale used (see `gamma`).
    scale_ : float or None
        "renyi" with ``gamma=None``: the median symmetrised divergence
        (None otherwise).
    params_ : dict
        The kernel's parameters as `transform` computes with them (its
        scale fixed at fit).
    psd_ : PSDProjector
        "renyi": the projection fitted on the training kernel.
    projections_ : ndarray of shape (n_projections, d)
        "sliced_wasserstein": the directions.
    n_features_in_ : int
        Dimension of the points seen during `fit`.

    Notes
    -----
    Every parameter is validated at fit (whatever the kernel), with a
    ValueError or TypeError naming it.

    *Weighted sets.* ``kernel="mean_map"`` and ``"mmd"`` take a `Bags`
    with point weights (the weighted kernels of `kernelmaps.sum_match_kernel`
    and `kernelmaps.mmd_kernel`, weights normalised per set; ``gamma=None``
    the weighted median heuristic of the training sets), and so does
    ``"sliced_wasserstein"`` (`kernelmaps.sliced_wasserstein_kernel` of
    the weighted sets); ``"renyi"`` refuses them (a ValueError).

    References
    ----------
    .. [1] See `kernelmaps.sum_match_kernel`, `kernelmaps.mmd_kernel` and
       `kernelmaps.divergence_kernel`; Chen et al., "Similarity-based
       classification", JMLR 2009, for the projection of test rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.svm import SVC
    >>> from kernelmaps.sklearn import SetKernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=c, size=(20, 2)) for c in (0, 0, 3, 3)]
    >>> model = make_pipeline(SetKernel(), SVC(kernel="precomputed"))
    >>> model.fit(sets, [0, 0, 1, 1]).predict(sets).tolist()
    [0, 0, 1, 1]
    """

    def __init__(self, kernel="mean_map", *, gamma=None, gamma2=1.0, alpha=0.99,
                 k=5, power=2, psd="clip", n_projections=100, kernel_params=None,
                 rng=None, workers=None):
        self.kernel = kernel
        self.gamma = gamma
        self.gamma2 = gamma2
        self.alpha = alpha
        self.k = k
        self.power = power
        self.psd = psd
        self.n_projections = n_projections
        self.kernel_params = kernel_params
        self.rng = rng
        self.workers = workers

    def fit(self, X, y=None):
        """Keep the training sets (and fit the projection of "renyi")."""
        self.fit_transform(X)
        return self

    def _checked_spec(self):
        """The kernel's spec with its parameters among this estimator's,
        checked by the kernel's own checks; the parameters of the other
        set kernels checked alike (every parameter is validated, whatever
        the kernel)."""
        names = kernel_names("sets")
        kernel = check_choice(self.kernel, "kernel", names)
        given = {"kernel": "rbf", "gamma": self.gamma, "gamma2": self.gamma2,
                 "alpha": self.alpha, "k": self.k, "power": self.power,
                 "n_projections": self.n_projections}
        check_choice(self.psd, "psd", ("clip", "flip", "shift", "square"))
        resolve_workers(self.workers)
        extra = check_kernel_params(self.kernel_params, SPECS[kernel](kernel))
        own = sorted(set(extra) & (set(given) - {"kernel"}))
        if own:
            raise ValueError(f"kernel_params has {own[0]!r}, an argument of "
                             f"SetKernel: give it as {own[0]}=")
        spec = spec_for(kernel, {**_taken(given, SPECS[kernel]), **extra})
        for other in names:
            for name, value in _taken(given, SPECS[other]).items():
                if name not in spec.takes:
                    spec_for(other, {name: value})
        return spec

    def fit_transform(self, X, y=None):
        """The symmetric kernel between the training sets of `X`."""
        spec = self._checked_spec()
        rng = check_rng(self.rng)
        self.train_ = spec.check(X, "X")
        self.n_features_in_ = self.train_.dim
        self._fit_weighted = fit_weighted(X)["_fit_weighted"]
        params = spec.function_params(spec.params, self.train_, rng=rng)
        spec = spec_for(self.kernel, params)
        n_threads = resolve_workers(self.workers)
        K, self.params_ = spec.function_gram(self.train_, params, n_threads,
                                             "sets of X")
        self.gamma_ = spec.fitted_gamma(self.params_)
        self.scale_ = self.params_.get("scale")
        if self.params_.get("projections") is not None:
            self.projections_ = self.params_["projections"]
        if not spec.positive_definite:
            self.psd_ = PSDProjector(self.psd)
            return self.psd_.fit_transform(K, workers=n_threads)
        return K

    def transform(self, X):
        """The kernel between the sets of `X` and the training sets."""
        check_is_fitted(self, "train_")
        check_weights_kept(self, X)
        spec = spec_for(self.kernel, self.params_)
        sets = _check_test_sets(self, X, spec.check)
        K = spec.function_block(sets, self.train_, self.params_,
                                resolve_workers(self.workers))
        return K if spec.positive_definite else self.psd_.transform(K)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.pairwise = False
        return tags


class ExpectedKernel(TransformerMixin, BaseEstimator):
    """Expected kernels between Gaussian distributions and the training
    ones: the support measure machine with ``SVC(kernel="precomputed")``.

    Each row of `X` is one distribution ``N(m, S)``: its mean, then its
    covariance, as ``[m, S.ravel()]`` (``covariance="full"``, ``d + d * d``
    columns), ``[m, diag(S)]`` (``"diag"``, ``2 d``) or ``[m, s2]`` with
    ``S = s2 I`` (``"iso"``, ``d + 1``). Zero covariances give the ordinary
    kernel between the means.

    Parameters
    ----------
    covariance : {"full", "diag", "iso"}, default="diag"
        The covariance's columns in each row.
    kernel : {"rbf", "linear", "polynomial"}, default="rbf"
        The kernel between points whose expectation is taken.
    gamma : float, optional
        Kernel scale; None means the median heuristic on the training
        means ("rbf", kept in ``gamma_``), ``1 / d`` ("polynomial").
    degree : int, default=2
        Degree of the polynomial kernel (2 or 3).
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    workers : int, optional
        Threads; None or -1 means all cores, -2 all but one.

    Attributes
    ----------
    train_ : ndarray
        The training distributions' rows.
    gamma_ : float
        The kernel scale used.
    n_features_in_ : int
        Number of columns seen during `fit`.

    References
    ----------
    .. [1] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning
       from distributions via support measure machines", NIPS 2012; see
       `kernelmaps.gaussian_expected_kernel`.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import ExpectedKernel
    >>> X = np.array([[0.0, 0.0, 1.0, 1.0], [3.0, 0.0, 0.5, 0.5]])  # d = 2
    >>> ExpectedKernel().fit_transform(X).shape
    (2, 2)
    """

    def __init__(self, covariance="diag", *, kernel="rbf", gamma=None, degree=2,
                 coef0=1.0, workers=None):
        self.covariance = covariance
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.workers = workers

    def _split(self, X):
        """Means (n, d) and covariances of the rows of `X`."""
        p = X.shape[1]
        if self.covariance == "full":
            d = round((np.sqrt(1 + 4 * p) - 1) / 2)
            if d * (d + 1) != p:
                raise ValueError(f"X has {p} columns: not d + d * d for any d")
            return X[:, :d], X[:, d:].reshape(-1, d, d)
        if self.covariance == "diag":
            if p % 2:
                raise ValueError(f"X has {p} columns: not 2 d for any d")
            return X[:, : p // 2], X[:, p // 2 :]
        if p < 2:
            raise ValueError(f"X has {p} feature(s): at least d + 1 = 2 needed")
        return X[:, :-1], X[:, -1]

    def _check_variances(self, covs):
        variances = (np.diagonal(covs, axis1=1, axis2=2)
                     if self.covariance == "full" else covs)
        if np.any(variances < 0):
            raise ValueError("Negative values in data passed to X: the "
                             "variances must be >= 0")

    def _kernel(self, A, B):
        means, covs = self._split(A)
        self._check_variances(covs)
        means2, covs2 = (None, None) if B is None else self._split(B)
        try:
            return gaussian_expected_kernel(
                means, covs, means2, covs2, kernel=self.kernel, gamma=self.gamma_,
                degree=self.degree, coef0=self.coef0, workers=self.workers)
        except ValueError as err:
            if "overflow" not in str(err):
                raise
            # means and covs are the columns of X (and of the training X)
            raise ValueError(
                f"the {self.kernel} expected kernel values of the distributions "
                f"of X overflow float64; scale X down (or use a smaller gamma or "
                f"coef0)"
            ) from None

    def fit(self, X, y=None):
        """Keep the training distributions."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """The symmetric kernel between the training distributions."""
        check_choice(self.covariance, "covariance", ("full", "diag", "iso"))
        _check_numeric(X)
        X = validate_data(self, X, dtype=np.float64)
        self.train_ = X
        self.gamma_ = None if self.gamma is None else check_scalar(
            self.gamma, "gamma", low=0.0, low_inclusive=False)
        if self.gamma_ is None and self.kernel in ("rbf", "polynomial"):
            self.gamma_ = resolve_gamma(None, self.kernel, self._split(X)[0])
        return self._kernel(X, None)

    def transform(self, X):
        """The kernel between the distributions of `X` and the training
        ones, ``(n, n_train)``."""
        check_is_fitted(self, "train_")
        _check_numeric(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self._kernel(X, self.train_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # variances
        return tags
