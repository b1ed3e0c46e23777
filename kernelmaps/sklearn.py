"""scikit-learn transformers over the feature maps of kernelmaps.

Each class stores its constructor arguments unchanged (``get_params`` /
``set_params`` / ``clone`` work), builds the map in ``fit`` (``map_``) and
applies it in ``transform``, so a map drops into a ``Pipeline`` in front of a
linear model and into ``GridSearchCV``. Importing this module needs
scikit-learn; the rest of kernelmaps does not.

Vectors and histograms are rows of a 2-D array (or a CSR matrix for the
histogram maps). Sets, for `RDFSampler`, `DRDFSampler` and `EMKSampler`, are
a list (or object array) of ``(n_i, d)`` arrays, one per sample, which
scikit-learn's cross-validation splits like any list; a 3-D array or a
`kernelmaps.Bags` also works in ``fit`` and ``transform``.
"""

import datetime
import numbers

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data as _sk_validate_data

from ._composite import NystroemMap, spec_for
from ._engine.knn import MAX_K as _MAX_K
from ._engine.scales import divergence_kernel_matrix, scale_gamma
from ._gamma import resolve_gamma
from ._parallel import resolve_workers
from ._validation import check_choice, check_scalar, check_sets
from .distributions import gaussian_expected_kernel
from .histograms import (
    AnchorMap,
    Chi2ChebyshevMap,
    Chi2DirectMap,
    ExpChi2Features,
    HomogeneousKernelMap,
)
from .psd import PSDProjector
from .sets import (
    DoublyRandomDistributionFeatures,
    EMKFeatures,
    RandomDistributionFeatures,
    RandomFourierFeatures,
)

__all__ = [
    "AnchorSampler",
    "Chi2ChebyshevSampler",
    "Chi2DirectSampler",
    "DRDFSampler",
    "EMKSampler",
    "ExpChi2Sampler",
    "ExpectedKernel",
    "HomogeneousKernelSampler",
    "NystroemSampler",
    "RDFSampler",
    "RFFSampler",
    "SetKernel",
]

VECTOR_INPUT = ("AnchorSampler", "Chi2ChebyshevSampler", "Chi2DirectSampler",
                "ExpChi2Sampler", "HomogeneousKernelSampler", "RFFSampler")


def _seed(random_state):
    """A seed for kernelmaps' `rng` from scikit-learn's `random_state`
    (None, an int in [0, 2**32 - 1] or a RandomState, as in
    `sklearn.utils.check_random_state`)."""
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(
            f"random_state must be None, an int or a numpy RandomState, got "
            f"{random_state!r}"
        )
    try:
        state = check_random_state(random_state)
    except (TypeError, ValueError) as err:
        raise ValueError(f"random_state: {err}") from None
    if random_state is None or isinstance(random_state, numbers.Integral):
        return None if random_state is None else int(random_state)
    return int(state.randint(np.iinfo(np.int32).max))


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


def _feature_names(estimator, width):
    """Names ``<classname><i>`` for the `width` output features."""
    prefix = type(estimator).__name__.lower()
    return np.asarray([f"{prefix}{i}" for i in range(width)], dtype=object)


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


def _validate_rows(estimator, X, reset, *, positive=True, sparse="csr"):
    """The rows of `X` validated for `estimator` (float32 or float64; CSR
    where `sparse`; non-negative where `positive`)."""
    _check_numeric(X)
    X = validate_data(estimator, X, accept_sparse=sparse,
                      dtype=[np.float64, np.float32], reset=reset)
    if positive:
        values = X.data if scipy.sparse.issparse(X) else X
        if np.any(values < 0):
            raise ValueError("Negative values in data passed to X")
    return X


class _MapTransformer(TransformerMixin, BaseEstimator):
    """Fit builds ``map_``, the kernelmaps map of the estimator's parameters
    (``_map()``), fitted on the validated training rows; transform applies
    it."""

    _positive = True  # histogram maps need non-negative input
    _sparse = "csr"  # and take CSR input

    def _validate(self, X, reset):
        return _validate_rows(self, X, reset, positive=self._positive,
                              sparse=self._sparse)

    def fit(self, X, y=None):
        """Fit the map on the training rows `X` (``y`` is ignored).

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        self
        """
        self.map_ = self._map().fit(self._validate(X, reset=True))
        return self

    def transform(self, X):
        """The features of the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray or sparse matrix, shape (n_samples, n_features_out)
            In the dtype of `X` (float32 or float64).
        """
        check_is_fitted(self, "map_")
        return self.map_.transform(self._validate(X, reset=False))

    def get_feature_names_out(self, input_features=None):
        """Names ``<classname><i>`` of the output features.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "map_")
        width = self.map_.n_features_out or self.n_features_in_ * self.map_.n_terms
        return _feature_names(self, width)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = bool(self._sparse)
        tags.input_tags.positive_only = self._positive
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


# The Attributes section of every adapter (numpydoc).
_ATTRIBUTES = """
    Attributes
    ----------
    map_ : kernelmaps.{map}
        The fitted map: this estimator's ``transform`` is its ``transform``.
    n_features_in_ : int
        Number of features seen during `fit`{what}.
"""
_FEATURE_NAMES = """    feature_names_in_ : ndarray of str
        Names of the features seen during `fit`, when `X` has feature names
        (a pandas DataFrame).
"""


def _attributes(cls):
    """Write the Attributes section into the docstring of an adapter of the
    map named first in it, before its References."""
    if cls.__doc__ is None:  # python -OO
        return cls
    rows = hasattr(cls, "_validate")  # else sets
    text = _ATTRIBUTES.format(map=cls.__doc__.split("`")[1],
                              what="" if rows else " (the dimension of the points)")
    if rows:
        text += _FEATURE_NAMES
    cls.__doc__ = cls.__doc__.replace("\n    References\n",
                                      text + "\n    References\n", 1)
    return cls


@_attributes
class Chi2DirectSampler(_MapTransformer):
    """`Chi2DirectMap` (chi2 features with geometric convergence) as a
    scikit-learn transformer.

    Parameters
    ----------
    n_terms : int, default=5
        Features per input feature.
    per_dimension : bool, default=False
        Fit one parameter vector per dimension.
    n_bins : int, default=100
        Points of the log-spaced grid on which the parameters are fitted,
        at most 1024.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import Chi2DirectSampler
    >>> X = np.random.default_rng(0).random((20, 4))
    >>> Chi2DirectSampler(n_terms=3).fit_transform(X).shape
    (20, 12)
    """

    def __init__(self, n_terms=5, *, per_dimension=False, n_bins=100):
        self.n_terms = n_terms
        self.per_dimension = per_dimension
        self.n_bins = n_bins

    def _map(self):
        return Chi2DirectMap(n_terms=self.n_terms, per_dimension=self.per_dimension,
                             n_bins=self.n_bins)


@_attributes
class Chi2ChebyshevSampler(_MapTransformer):
    """`Chi2ChebyshevMap` (the Chebyshev series of the chi2 kernel) as a
    scikit-learn transformer.

    Parameters
    ----------
    n_terms : int, default=5
        Features per input feature.
    scale : float or "median", default="median"
        The series' scale; "median": the median non-zero training value.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import Chi2ChebyshevSampler
    >>> X = np.random.default_rng(0).random((20, 4))
    >>> Chi2ChebyshevSampler(n_terms=3).fit_transform(X).shape
    (20, 12)
    """

    def __init__(self, n_terms=5, *, scale="median"):
        self.n_terms = n_terms
        self.scale = scale

    def _map(self):
        return Chi2ChebyshevMap(self.n_terms, scale=self.scale)


@_attributes
class HomogeneousKernelSampler(_MapTransformer):
    """`HomogeneousKernelMap` (Vedaldi-Zisserman) as a scikit-learn
    transformer.

    Parameters
    ----------
    kernel : {"chi2", "js", "intersection", "hellinger"}, default="chi2"
        The additive kernel approximated.
    order : int, default=2
        ``2 * order + 1`` features per input feature.
    period : float, optional
        Sampling period of the kernel's spectrum; None: the paper's choice
        for the kernel and order.

    References
    ----------
    .. [1] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE Transactions on Pattern Analysis and
       Machine Intelligence 34(3), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import HomogeneousKernelSampler
    >>> X = np.random.default_rng(0).random((20, 4))
    >>> HomogeneousKernelSampler(order=1).fit_transform(X).shape
    (20, 12)
    """

    def __init__(self, kernel="chi2", order=2, *, period=None):
        self.kernel = kernel
        self.order = order
        self.period = period

    def _map(self):
        return HomogeneousKernelMap(self.kernel, self.order, period=self.period)


@_attributes
class AnchorSampler(_MapTransformer):
    """`AnchorMap` (additive nearest-neighbour feature maps) as a
    scikit-learn transformer.

    Parameters
    ----------
    kernel : {"chi2", "js", "intersection", "hellinger"} or callable, default="chi2"
        The one-dimensional kernel.
    n_anchors : int, default=50
        Anchors per dimension.
    anchors : {"uniform", "kmeans"}, default="uniform"
        Placement of the anchors on the training values.
    energy : float, default=0.99
        Share of each anchor kernel's spectrum kept.
    n_neighbors : int, default=1
        Anchors per value (1: ANNFM, more: k-ANNFM).
    weights : {"uniform", "distance"}, default="uniform"
        Weights of the neighbours.

    References
    ----------
    .. [1] Z. Wang, X.-T. Yuan, Q. Liu and S. Yan, "Additive Nearest
       Neighbor Feature Maps", IEEE International Conference on Computer
       Vision (ICCV), 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import AnchorSampler
    >>> X = np.random.default_rng(0).random((20, 4))
    >>> AnchorSampler(n_anchors=10).fit_transform(X).shape[0]
    20
    """

    def __init__(self, kernel="chi2", n_anchors=50, *, anchors="uniform",
                 energy=0.99, n_neighbors=1, weights="uniform"):
        self.kernel = kernel
        self.n_anchors = n_anchors
        self.anchors = anchors
        self.energy = energy
        self.n_neighbors = n_neighbors
        self.weights = weights

    def _map(self):
        return AnchorMap(self.kernel, self.n_anchors, anchors=self.anchors,
                         energy=self.energy, n_neighbors=self.n_neighbors,
                         weights=self.weights)


@_attributes
class ExpChi2Sampler(_MapTransformer):
    """`ExpChi2Features` (random features of the exp-chi2 kernel) as a
    scikit-learn transformer.

    Parameters
    ----------
    n_components : int, default=1000
        Number of random features.
    beta : float, default=1.0
        Scale of the exp-chi2 kernel.
    n_terms : int, default=5
        Terms of the `Chi2DirectMap` under the random features.
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        How the random frequencies are drawn; None: the measured best for
        the kernel and dimension (see `kernelmaps.ExpChi2Features`).
    form : {"sincos", "offset"}, default="sincos"
        Cosine and sine of each frequency, or the cosine with a random
        phase.
    random_state : int, numpy.random.RandomState or None
        Seed of the random map (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       Algorithm 2.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import ExpChi2Sampler
    >>> X = np.random.default_rng(0).random((20, 4))
    >>> ExpChi2Sampler(n_components=50, random_state=0).fit_transform(X).shape
    (20, 50)
    """

    def __init__(self, n_components=1000, *, beta=1.0, n_terms=5, draw=None,
                 form="sincos", random_state=None):
        self.n_components = n_components
        self.beta = beta
        self.n_terms = n_terms
        self.draw = draw
        self.form = form
        self.random_state = random_state

    def _map(self):
        return ExpChi2Features(self.n_components, beta=self.beta,
                               chi2_map=Chi2DirectMap(n_terms=self.n_terms),
                               draw=self.draw, form=self.form,
                               rng=_seed(self.random_state))


@_attributes
class RFFSampler(_MapTransformer):
    """`RandomFourierFeatures` (of the Gaussian or Laplacian kernel) as a
    scikit-learn transformer; takes dense or CSR input, as scikit-learn's
    ``RBFSampler``.

    Parameters
    ----------
    n_components : int, default=100
        Number of random features.
    kernel : {"rbf", "laplacian"}, default="rbf"
        The kernel approximated.
    gamma : float, optional
        Scale of the kernel; None means the median heuristic on the
        training rows (`kernelmaps.median_heuristic`, fixed seed).
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        How the random frequencies are drawn; None: the measured best for
        the kernel and dimension (see `kernelmaps.RandomFourierFeatures`).
    form : {"sincos", "offset"}, default="sincos"
        Cosine and sine of each frequency, or the cosine with a random
        phase.
    random_state : int, numpy.random.RandomState or None
        Seed of the random map (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", Advances in Neural Information Processing Systems (NIPS),
       2007.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import RFFSampler
    >>> X = np.random.default_rng(0).normal(size=(20, 4))
    >>> RFFSampler(n_components=30, random_state=0).fit_transform(X).shape
    (20, 30)
    """

    _positive = False

    def __init__(self, n_components=100, *, kernel="rbf", gamma=None, draw=None,
                 form="sincos", random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.draw = draw
        self.form = form
        self.random_state = random_state

    def _map(self):
        return RandomFourierFeatures(self.n_components, kernel=self.kernel,
                                     gamma=self.gamma, draw=self.draw,
                                     form=self.form, rng=_seed(self.random_state))


class _SetTransformer(TransformerMixin, BaseEstimator):
    """Transformers of sets of vectors: `X` is a list (or object array) of
    ``(n_i, d)`` arrays, a 3-D array or a `kernelmaps.Bags`; one output row
    per set. ``n_features_in_`` is the dimension d of the points."""

    def fit(self, X, y=None):
        """Fit the map on the training sets `X` (``y`` is ignored).

        Parameters
        ----------
        X : list of array_like (n_i, d), 3-D array or Bags
            Training sets.
        y : None
            Ignored.

        Returns
        -------
        self
        """
        bags = check_sets(X, "X")
        self.n_features_in_ = bags.dim
        self.map_ = self._map().fit(bags)
        return self

    def transform(self, X):
        """One feature row per set of `X`.

        Parameters
        ----------
        X : list of array_like (n_i, d), 3-D array or Bags

        Returns
        -------
        ndarray, shape (len(X), n_features_out)
            In the dtype of the points (float32 or float64).
        """
        check_is_fitted(self, "map_")
        return self.map_.transform(_check_test_sets(self, X))

    def get_feature_names_out(self, input_features=None):
        """Names ``<classname><i>`` of the output features.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "map_")
        return _feature_names(self, self.map_.n_features_out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


@_attributes
class RDFSampler(_SetTransformer):
    """`RandomDistributionFeatures` (random features of the mean map
    kernel) of sets as a scikit-learn transformer.

    Parameters
    ----------
    n_components : int, default=100
        Number of random features.
    gamma : float, optional
        Scale of the point kernel; None means the median heuristic on the
        pooled training points (`kernelmaps.median_heuristic`, fixed seed).
    kernel : {"rbf", "laplacian"}, default="rbf"
        The point kernel.
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        How the random frequencies are drawn; None: the measured best for
        the kernel and dimension (see `kernelmaps.RandomDistributionFeatures`).
    form : {"sincos", "offset"}, default="sincos"
        Cosine and sine of each frequency, or the cosine with a random
        phase.
    random_state : int, numpy.random.RandomState or None
        Seed of the random map (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import RDFSampler
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(n, 3)) for n in (5, 8, 2)]
    >>> RDFSampler(n_components=16, random_state=0).fit_transform(sets).shape
    (3, 16)
    """

    def __init__(self, n_components=100, *, gamma=None, kernel="rbf", draw=None,
                 form="sincos", random_state=None):
        self.n_components = n_components
        self.gamma = gamma
        self.kernel = kernel
        self.draw = draw
        self.form = form
        self.random_state = random_state

    def _map(self):
        return RandomDistributionFeatures(self.n_components, gamma=self.gamma,
                                          kernel=self.kernel, draw=self.draw,
                                          form=self.form,
                                          rng=_seed(self.random_state))


@_attributes
class DRDFSampler(_SetTransformer):
    """`DoublyRandomDistributionFeatures` of sets (approximating the MMD
    kernel) as a scikit-learn transformer.

    Parameters
    ----------
    n_components : int, default=100
        Number of first-level (RDF) features.
    n_components2 : int, default=100
        Number of output features.
    gamma : float, optional
        Scale of the point kernel; None means the median heuristic on the
        pooled training points.
    gamma2 : float or None, default=1.0
        Scale of the level-2 Gaussian kernel; None means the median
        heuristic on the RDF features of the training sets.
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        How the random frequencies are drawn; None: the measured best for
        the kernel and dimension (see `kernelmaps.DoublyRandomDistributionFeatures`).
    form : {"sincos", "offset"}, default="sincos"
        Cosine and sine of each frequency, or the cosine with a random
        phase.
    random_state : int, numpy.random.RandomState or None
        Seed of the random map (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import DRDFSampler
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(n, 3)) for n in (5, 8, 2)]
    >>> DRDFSampler(16, 8, random_state=0).fit_transform(sets).shape
    (3, 8)
    """

    def __init__(self, n_components=100, n_components2=100, *, gamma=None,
                 gamma2=1.0, draw=None, form="sincos", random_state=None):
        self.n_components = n_components
        self.n_components2 = n_components2
        self.gamma = gamma
        self.gamma2 = gamma2
        self.draw = draw
        self.form = form
        self.random_state = random_state

    def _map(self):
        return DoublyRandomDistributionFeatures(
            self.n_components, self.n_components2, gamma=self.gamma,
            gamma2=self.gamma2, draw=self.draw, form=self.form,
            rng=_seed(self.random_state))


@_attributes
class EMKSampler(_SetTransformer):
    """`EMKFeatures` (efficient match kernel features, a basis learned on
    the pooled training points) as a scikit-learn transformer.

    Parameters
    ----------
    n_basis : int, default=50
        Number of basis vectors (output features).
    kernel : {"rbf", "laplacian"}, default="rbf"
        The point kernel.
    gamma : float, optional
        Scale of the point kernel; None means the median heuristic on the
        pooled training points.
    n_iter : int, default=300
        Gradient steps of the basis' fit.
    random_state : int, numpy.random.RandomState or None
        Seed of the random map (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", Advances in Neural Information
       Processing Systems (NIPS), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import EMKSampler
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(n, 3)) for n in (5, 8, 2)]
    >>> EMKSampler(4, n_iter=5, random_state=0).fit_transform(sets).shape
    (3, 4)
    """

    def __init__(self, n_basis=50, *, kernel="rbf", gamma=None, n_iter=300,
                 random_state=None):
        self.n_basis = n_basis
        self.kernel = kernel
        self.gamma = gamma
        self.n_iter = n_iter
        self.random_state = random_state

    def _map(self):
        return EMKFeatures(n_basis=self.n_basis, kernel=self.kernel, gamma=self.gamma,
                           n_iter=self.n_iter, rng=_seed(self.random_state))


_SET_KERNELS = ("mean_map", "mmd", "renyi")


@_attributes
class NystroemSampler(_SetTransformer):
    """`NystroemMap` (Nystroem features of an exact kernel of kernelmaps)
    as a scikit-learn transformer.

    `X` is a list of sets (as for `RDFSampler`) for the set kernels, and
    the rows of a 2-D array or CSR matrix of histograms for the histogram
    kernels. Gaussians and callable kernels: use `kernelmaps.NystroemMap`.

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks (of features).
    kernel : {"mean_map", "mmd", "renyi", "chi2", "intersection", \
"hellinger", "js", "exp_chi2"}, default="mean_map"
        The kernel (see `kernelmaps.NystroemMap`).
    gamma, degree, coef0 : float, int, float, optional
        The point kernel's parameters ("mean_map", "mmd"; ``gamma`` also
        "renyi"), as in scikit-learn's ``Nystroem``.
    kernel_params : dict, optional
        Other keyword arguments of the kernel's function (e.g.
        ``gamma2``).
    landmarks : {"uniform", "kmeans++", "leverage"}, default="uniform"
        How the landmarks are chosen.
    random_state : int, numpy.random.RandomState or None
        Seed of the landmarks (scikit-learn's name for kernelmaps' `rng`).

    References
    ----------
    .. [1] C. K. I. Williams and M. Seeger, "Using the Nystroem Method to
       Speed Up Kernel Machines", NIPS 2001; see `kernelmaps.NystroemMap`.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import NystroemSampler
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(n, 3)) for n in (5, 8, 2, 6)]
    >>> NystroemSampler(n_components=3, random_state=0).fit_transform(sets).shape
    (4, 3)
    >>> H = rng.random((6, 4))
    >>> NystroemSampler(4, kernel="chi2").fit_transform(H).shape
    (6, 4)
    """

    def __init__(self, n_components=100, *, kernel="mean_map", gamma=None,
                 degree=None, coef0=None, kernel_params=None, landmarks="uniform",
                 random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.landmarks = landmarks
        self.random_state = random_state

    def _map(self):
        if callable(self.kernel) or self.kernel == "expected":
            raise ValueError(
                f"kernel={self.kernel!r}: NystroemSampler takes sets or "
                f"histograms; use kernelmaps.NystroemMap for Gaussians and "
                f"callable kernels"
            )
        return NystroemMap(self.n_components, kernel=self.kernel, gamma=self.gamma,
                           degree=self.degree, coef0=self.coef0,
                           kernel_params=self.kernel_params,
                           landmarks=self.landmarks, rng=_seed(self.random_state))

    def fit(self, X, y=None):
        """Fit the map on the training sets or histograms `X`."""
        fmap = self._map()
        if self.kernel in _SET_KERNELS:
            return super().fit(X)
        self.map_ = fmap.fit(_validate_rows(self, X, reset=True))
        return self

    def transform(self, X):
        """The features of the sets or histograms of `X`."""
        check_is_fitted(self, "map_")
        if self.kernel in _SET_KERNELS:
            return super().transform(X)
        return self.map_.transform(_validate_rows(self, X, reset=False))


class SetKernel(TransformerMixin, BaseEstimator):
    """Exact kernels between sets and the training sets, for
    ``SVC(kernel="precomputed")`` in a `Pipeline`.

    ``fit_transform(X_train)`` gives the symmetric training kernel (each
    unordered pair once); ``transform(X)`` gives the kernel between the sets
    of `X` and the training sets, ``(len(X), n_train)``, with every
    parameter fixed at fit.

    Parameters
    ----------
    kernel : {"mean_map", "mmd", "renyi"}, default="mean_map"
        ``"mean_map"``: `kernelmaps.sum_match_kernel` (normalised, rbf
        points); ``"mmd"``: `kernelmaps.mmd_kernel`; ``"renyi"``:
        `kernelmaps.divergence_kernel` of the symmetrised kNN Renyi
        divergences, made positive semi-definite by a `PSDProjector` fitted
        on the training kernel and applied to test rows alike.
    gamma : float, optional
        Point kernel scale ("mean_map", "mmd"; None: the median heuristic on
        the pooled training points, kept in ``gamma_``), or the scale of
        the divergence kernel ("renyi"; None: the median heuristic of
        `divergence_kernel` on the training divergences, kept in
        ``gamma_``, with the median divergence in ``scale_``: the kernel is
        computed from the scale, stably, even where ``gamma_`` is beyond
        the float range).
    gamma2 : float, default=1.0
        Level-2 scale of "mmd".
    alpha, k, power : float, int, float
        Renyi order, neighbours (at most ``2**31 - 1``) and the power of the
        divergence ("renyi").
    psd : {"clip", "flip", "shift", "square"}, default="clip"
        PSD projection of "renyi" (see `kernelmaps.PSDProjector`).
    workers : int, optional
        Threads; None or -1 means all cores.

    Attributes
    ----------
    train_ : Bags
        The training sets.
    gamma_ : float
        The scale used (see `gamma`).
    scale_ : float or None
        "renyi" with ``gamma=None``: the median symmetrised divergence.
    psd_ : PSDProjector
        "renyi": the projection fitted on the training kernel.
    n_features_in_ : int
        Dimension of the points seen during `fit`.

    Notes
    -----
    Every parameter is validated at fit (whatever the kernel), with a
    ValueError or TypeError naming it.

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
                 k=5, power=2, psd="clip", workers=None):
        self.kernel = kernel
        self.gamma = gamma
        self.gamma2 = gamma2
        self.alpha = alpha
        self.k = k
        self.power = power
        self.psd = psd
        self.workers = workers

    def fit(self, X, y=None):
        """Keep the training sets (and fit the projection of "renyi")."""
        self.fit_transform(X)
        return self

    def _check_params(self):
        """Validate every parameter, naming it; the checked values of the
        kernel's (Python floats and ints)."""
        check_choice(self.kernel, "kernel", ("mean_map", "mmd", "renyi"))
        checked = {"gamma": None if self.gamma is None else check_scalar(
            self.gamma, "gamma", low=0.0, low_inclusive=False)}
        checked["gamma2"] = check_scalar(self.gamma2, "gamma2", low=0.0,
                                         low_inclusive=False)
        checked["alpha"] = check_scalar(self.alpha, "alpha", low=0.0,
                                        low_inclusive=False)
        if checked["alpha"] == 1:
            raise ValueError(
                "alpha must not be 1 (the Kullback-Leibler limit; use e.g. 0.99)"
            )
        checked["k"] = check_scalar(self.k, "k", kind="int", low=1, high=_MAX_K)
        checked["power"] = check_scalar(self.power, "power", low=0.0,
                                        low_inclusive=False)
        check_choice(self.psd, "psd", ("clip", "flip", "shift", "square"))
        resolve_workers(self.workers)
        return checked

    def fit_transform(self, X, y=None):
        """The symmetric kernel between the training sets of `X`."""
        self._checked = self._check_params()
        spec = self._spec(gamma=self._checked["gamma"])
        self.train_ = spec.check(X, "X")
        self.n_features_in_ = self.train_.dim
        n_threads = resolve_workers(self.workers)
        if self.kernel != "renyi":
            self.gamma_ = spec.function_params(spec.params, self.train_)["gamma"]
            spec = self._spec(gamma=self.gamma_)
            return spec.function_block(self.train_, None, spec.params, n_threads)
        D = spec.divergences(self.train_, None, n_threads)
        K, self.scale_ = divergence_kernel_matrix(D, power=spec.power,
                                                  gamma=spec.params["gamma"])
        self.gamma_ = (scale_gamma(self.scale_, spec.power)
                       if self.scale_ is not None else spec.params["gamma"])
        self.psd_ = PSDProjector(self.psd)
        return self.psd_.fit_transform(K)

    def transform(self, X):
        """The kernel between the sets of `X` and the training sets."""
        check_is_fitted(self, "train_")
        if self.kernel != "renyi":
            spec = self._spec(gamma=self.gamma_)
        else:  # the scale fixed at fit (computed from it, stably)
            spec = self._spec(gamma=None if self.scale_ is not None
                              else self.gamma_, scale=self.scale_)
        sets = _check_test_sets(self, X, spec.check)
        K = spec.function_block(sets, self.train_, spec.params,
                                resolve_workers(self.workers))
        return K if self.kernel != "renyi" else self.psd_.transform(K)

    def _spec(self, **scale):
        """The kernel's spec (`kernelmaps._composite`) with the parameters
        checked at fit and the `scale` given."""
        checked = self._checked
        if self.kernel == "renyi":
            params = {name: checked[name] for name in ("alpha", "k", "power")}
        else:
            params = {"kernel": "rbf"}
            if self.kernel == "mmd":
                params["gamma2"] = checked["gamma2"]
        return spec_for(self.kernel, {**params, **scale})

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
        Threads; None or -1 means all cores.

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
