"""Random Fourier features of the exp-chi2 kernel on top of an additive
chi2 map."""

import copy

from .. import _array_api
from .._base import FeatureMap
from .._draws import check_draw, fourier_state, resolve_draw
from .._parallel import resolve_workers
from .._transforms import array_fourier_features, blocked_rows, fourier_features
from .._validation import (
    check_histograms,
    check_rng,
    check_scalar,
    check_size,
)
from ._maps import Chi2DirectMap, _AdditiveMap
from ._specs import check_beta

__all__ = ["ExpChi2Features"]


def _check_chi2_map(chi2_map):
    """`chi2_map`, an additive map of the chi2 kernel."""
    if not isinstance(chi2_map, _AdditiveMap):
        raise TypeError(
            "chi2_map must be a Chi2DirectMap, Chi2ChebyshevMap or "
            f"HomogeneousKernelMap, got {type(chi2_map).__name__}"
        )
    if getattr(chi2_map, "kernel", "chi2") != "chi2":
        raise ValueError(
            f"chi2_map must approximate the chi2 kernel, got a "
            f"HomogeneousKernelMap of the {chi2_map.kernel!r} kernel"
        )
    return chi2_map


class ExpChi2Features(FeatureMap):
    r"""Random Fourier features of the exp-chi2 kernel (Algorithm 2 of
    [1]_).

    For an additive chi2 map :math:`\phi` (exact in the limit),
    :math:`\|\phi(x) - \phi(y)\|^2 = \sum_k (x_k - y_k)^2/(x_k + y_k) =
    2 D(x, y)` with D the `chi2_distance`, so :math:`\exp(-\beta D)` is a
    Gaussian kernel of :math:`\phi(x)` with :math:`\gamma = \beta / 2`, and

    .. math::

        z(x) = \sqrt{2/t}\, \cos(\phi(x) W + b), \quad
        W_{ij} \sim N(0, 2\gamma) = N(0, \beta), \ b_j \sim U[0, 2\pi)

    gives :math:`z(x) \cdot z(y) \to \exp(-\beta D(x, y))` as the number t
    of components grows (error :math:`O(t^{-1/2})`).

    `fit` fits the chi2 map on the training data (unless it is fitted
    already) and draws the random frequencies.

    Parameters
    ----------
    n_components : int, default=1000
        Number t of random features.
    beta : float, default=1.0
        Positive scale of `exp_chi2_kernel` (as scikit-learn's
        ``chi2_kernel``: histograms that sum to 1 have chi2 distances in
        [0, 1]).
    chi2_map : Chi2DirectMap, Chi2ChebyshevMap or HomogeneousKernelMap, optional
        The additive chi2 map :math:`\phi`: a fitted map is used as it is
        (a copy), another is fitted on the training data (a clone). None
        means ``Chi2DirectMap(n_terms=5)``. scikit-learn's ``clone`` (and
        so ``GridSearchCV``) gives an unfitted copy, fitted by `fit`.
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        The frequency draw [4]_ [5]_ of `RandomFourierFeatures`
        (None: chosen by the width of the chi2 features).
    form : {"sincos", "offset"}, default="sincos"
        The feature form [3]_ of `RandomFourierFeatures`.
    rng : int or numpy.random.Generator, optional
        Seed or generator for the frequencies and offsets.

    Attributes
    ----------
    chi2_map_ : Chi2DirectMap, Chi2ChebyshevMap or HomogeneousKernelMap
        The fitted chi2 map.
    weights_ : ndarray, shape (``chi2_map_.n_features_out_``, t)
        The frequencies W.
    offsets_ : ndarray, shape (t,)
        The phases b.
    draw_ : str
        The frequency draw used.
    n_features_in_ : int
        Width d of the training histograms.
    n_features_out_ : int
        Number t of features, `n_components`.
    feature_names_in_ : ndarray of str
        The column names of a DataFrame `X` (only then).

    See Also
    --------
    exp_chi2_kernel : The kernel approximated.

    Notes
    -----
    The draws and forms are those of `RandomFourierFeatures`, all unbiased.
    The orthogonal draw needs one QR of a d x t Gaussian matrix when t < d
    (never a d x d one), about 0.4 s at d = 5000, t = 1000 in the sincos
    form (6x the iid draw's time) and 1 s in the offset form, on one core
    of the reference machine; it is done again when the map is unpickled.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       Algorithm 2.
    .. [2] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", NIPS 2007.
    .. [3] D. J. Sutherland and J. Schneider, "On the Error of Random
       Fourier Features", Conference on Uncertainty in Artificial
       Intelligence (UAI), 2015.
    .. [4] F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice and
       S. Kumar, "Orthogonal Random Features", NIPS 2016.
    .. [5] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney, "Quasi-Monte
       Carlo Feature Maps for Shift-Invariant Kernels", Journal of Machine
       Learning Research 17(120), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import ExpChi2Features, exp_chi2_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((50, 8))
    >>> X /= X.sum(axis=1, keepdims=True)
    >>> features = ExpChi2Features(n_components=4000, beta=2.0, rng=0)
    >>> Z = features.fit_transform(X)
    >>> Z.shape
    (50, 4000)
    >>> bool(np.abs(Z @ Z.T - exp_chi2_kernel(X, beta=2.0)).max() < 0.1)
    True
    """

    _takes_sparse = True
    _positive_only = True

    def __init__(self, n_components=1000, *, beta=1.0, chi2_map=None, draw=None,
                 form="sincos", rng=None):
        self.n_components = n_components
        self.beta = beta
        self.chi2_map = chi2_map
        self.draw = draw
        self.form = form
        self.rng = rng

    def _fit(self, X, workers, progress):
        return self._fit_checked(X, check_histograms)

    def _array_fit(self, library, X, n_threads):
        """`fit` on histograms of `library`, checked on their device (and
        `chi2_map` fitted on them as its own `fit` takes them)."""
        return self._fit_checked(X, lambda X, name: _array_api.check_rows(
            library, X, name, nonnegative=True))

    def _fit_checked(self, X, check):
        """`fit` on `X` checked by ``check(X, "X")``."""
        t = check_scalar(self.n_components, "n_components", kind="int", low=1)
        beta = check_beta(self.beta)
        draw, form = check_draw(self.draw, self.form, "rbf")
        rng = check_rng(self.rng)
        chi2_map = (Chi2DirectMap(n_terms=5) if self.chi2_map is None
                    else _check_chi2_map(self.chi2_map))
        names = self._check_names(X, reset=True)
        X = check(X, "X")
        if hasattr(chi2_map, "n_features_in_"):  # fitted: used as it is
            chi2_map = copy.deepcopy(chi2_map)
            if chi2_map.n_features_in_ != X.shape[1]:
                raise ValueError(
                    f"X has {X.shape[1]} features, but chi2_map was fitted for "
                    f"{chi2_map.n_features_in_}"
                )
        else:
            try:
                chi2_map = type(chi2_map)(**chi2_map.get_params(deep=False)).fit(X)
            except ValueError as err:
                raise ValueError(f"chi2_map cannot be fitted on X: {err}") from None
        width = chi2_map.n_features_out_
        # (the frequencies and phases, and the draw's temporaries)
        check_size(**{"(width + 1)": width + 1, "n_components": t}, copies=3)
        # exp(-beta D) is the Gaussian kernel of gamma = beta / 2 on phi.
        draw = resolve_draw(draw, "rbf", width, t, form)
        state = fourier_state(width, t, "rbf", beta / 2, rng, f"beta={beta!r}",
                              draw, form)
        return {**state, **names, "chi2_map_": chi2_map, "draw_": draw,
                "n_features_in_": X.shape[1], "n_features_out_": t}

    @blocked_rows(check=check_histograms)
    def transform(self, X, *, workers=None, progress=False):
        """Random features of the rows of `X`, shape (n, t), in the dtype
        of `X` (float32 or float64); CSR input is taken as it is.
        `progress` shows a progress bar over blocks of rows (needs tqdm)."""
        n_threads = resolve_workers(workers)
        return fourier_features(
            self, self.chi2_map_.transform(X, workers=n_threads), n_threads)

    def _array_features(self, library, X):
        """`transform` of the rows of X of `library`, computed there: the
        chi2 map's features, then their random Fourier features."""
        X = _array_api.check_rows(library, X, "X", nonnegative=True)
        self._check_width(X.shape[1])
        return array_fourier_features(self, library,
                                      self.chi2_map_._array_expand(library, X))
