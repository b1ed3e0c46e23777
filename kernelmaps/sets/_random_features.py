"""Random Fourier features of points and of sets: RFF, RDF (also EMK-Fourier)
and DRDF."""


import scipy.sparse

from .. import _array_api
from .._base import FeatureMap
from .._draws import check_draw, fourier_state, resolve_draw
from .._gamma import resolve_gamma
from .._parallel import resolve_workers
from .._probes import as_float_array
from .._transforms import (
    array_fourier_features,
    blocked_rows,
    blocked_sets,
    fourier_features,
)
from .._validation import (
    check_choice,
    check_points,
    check_rng,
    check_rows,
    check_scalar,
    check_sets,
    check_size,
    reshape_hint,
)
from ._array_sets import check_array_sets

__all__ = [
    "DoublyRandomDistributionFeatures",
    "RandomDistributionFeatures",
    "RandomFourierFeatures",
]

_KERNELS = ("rbf", "laplacian")


def _check_vectors(X):
    """The points of `X`, a 2-D array or a sparse matrix (then CSR)."""
    if scipy.sparse.issparse(X):
        return check_rows(X, "X")
    X = as_float_array(X, "X")  # ragged X: an error naming X
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}"
                         f"{reshape_hint(X, 'X')}")
    return check_points(X, "X")


class _Fourier(FeatureMap):
    """Frequencies and phases, drawn by `fit` for a shift-invariant kernel
    of the scale `gamma` (None: the median heuristic on the training
    points), by the method `draw` (None: chosen by the dimension of the
    points, see `_draws.resolve_draw`) for the feature `form`."""

    def _fit_draw(self, dim, reference, gamma_name="gamma"):
        """The fitted attributes for points of `dim` features: the scale
        (given, or the heuristic on `reference`) and W and b drawn for it."""
        kernel = check_choice(self.kernel, "kernel", _KERNELS)
        t = check_scalar(self.n_components, "n_components", kind="int", low=1)
        draw, form = check_draw(self.draw, self.form, kernel)
        rng = check_rng(self.rng)
        gamma = resolve_gamma(self.gamma, kernel, reference, gamma_name)
        # (the frequencies and phases, and the draw's temporaries)
        check_size(**{"(dim + 1)": dim + 1, "n_components": t}, copies=3)
        draw = resolve_draw(draw, kernel, dim, t, form)
        state = fourier_state(dim, t, kernel, gamma, rng,
                              f"{gamma_name}={gamma!r}", draw, form)
        return {**state, "gamma_": gamma, "draw_": draw, "n_features_in_": dim,
                "n_features_out_": t}


class RandomFourierFeatures(_Fourier):
    r"""Random Fourier features of the Gaussian or Laplacian kernel [1]_.

    .. math::

        z(x) = \sqrt{2/t}\, \cos(x W + b), \qquad
        z(x) \cdot z(y) \approx k(x - y)

    with :math:`b_j \sim U[0, 2\pi)` and the columns of W drawn from the
    Fourier transform of the kernel: :math:`N(0, 2\gamma I)` for the
    Gaussian ``"rbf"`` kernel :math:`\exp(-\gamma \|x - y\|^2)`, independent
    Cauchy entries of scale :math:`\gamma` for the ``"laplacian"`` kernel
    :math:`\exp(-\gamma \|x - y\|_1)`. The error of the inner products is
    :math:`O(t^{-1/2})`.

    `fit` draws W and b for the width of the training data (and, with
    ``gamma=None``, takes the median heuristic on them).

    Parameters
    ----------
    n_components : int, default=100
        Number t of features.
    kernel : {"rbf", "laplacian"}, default="rbf"
    gamma : float, optional
        Positive scale of the kernel; None means `median_heuristic` of the
        training points (with its fixed seed), computed by `fit`.
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        How the frequencies are drawn: independently (``"iid"``); in
        blocks of orthogonal directions with chi-distributed norms
        (``"orthogonal"``, [3]_; ``"rbf"`` only); or as scrambled Sobol
        points through the inverse CDF of the spectrum (``"qmc"``, [4]_).
        None chooses by the dimension d of the points: ``"qmc"`` for
        d <= 8 (``"rbf"``) or d <= 64 (``"laplacian"``), else
        ``"orthogonal"`` (``"rbf"``) or ``"iid"`` (``"laplacian"``): the
        least kernel error measured at equal t (see Notes); ``"rbf"``
        takes ``"iid"`` too with fewer than d / 4 frequencies (where the
        orthogonal draw gains little) or where its QRs would take more
        than a few seconds.
    form : {"sincos", "offset"}, default="sincos"
        ``"sincos"``: the cosine and the sine of t // 2 frequencies (and
        for odd t one cosine with a random phase) [2]_; ``"offset"``:
        :math:`\cos(x w_j + b_j)` of t frequencies with random phases.
    rng : int or numpy.random.Generator, optional
        Seed or generator for W and b, drawn by `fit`; the same seed gives
        the same map.

    Attributes
    ----------
    weights_ : ndarray, shape (``n_features_in_``, n_components)
        The frequencies W.
    offsets_ : ndarray, shape (n_components,)
        The phases b.
    gamma_ : float
        The scale used.
    draw_ : str
        The frequency draw used.
    n_features_in_ : int
        Dimension d of the points.
    n_features_out_ : int
        Number t of features, `n_components`.
    feature_names_in_ : ndarray of str
        The column names of a DataFrame `X` (only then).

    See Also
    --------
    RandomDistributionFeatures : The mean of these features over a set.

    Notes
    -----
    `transform` computes :math:`xW + b` and the cosine in one pass over tiles
    of points and columns (SIMD, OpenMP): float32 input stays float32. A
    sparse (CSR) `X` is taken as it is: its non-zeros times the rows of W,
    summed in float64 (the output is dense).
    A `gamma` so large that the frequencies overflow float64, and points so
    large that :math:`xW` could overflow the dtype of `X`, raise a
    ValueError (as in `RandomDistributionFeatures`).

    **Draws and forms.** Every draw gives frequencies each marginally
    distributed as the kernel's spectrum, and every form scales its t
    features by :math:`\sqrt{2/t}`, so :math:`z(x) \cdot z(y)` is an
    unbiased estimate of :math:`k(x, y)` in all six combinations. The
    sine of a pair is computed as :math:`\cos(x w + 3\pi/2)`: `weights`
    holds each frequency of a pair twice and `offsets` the phases 0 and
    :math:`3\pi/2`. ``"sincos"`` has less variance than ``"offset"`` for
    the Gaussian kernel [2]_. The orthogonal draw takes blocks of d
    directions from the QR of a Gaussian matrix (signs fixed: uniform
    rotations), each scaled by an independent :math:`\chi(d)` norm [3]_;
    for t < d one d x t QR. The QMC draw takes the first points of a
    scrambled Sobol sequence (``random_base2`` of `scipy.stats.qmc`, cut to
    length: no warning for any t; Sobol, not Halton, because at widths
    that are not powers of 2 both gave the same error and at powers of 2
    Sobol's was lower), with the phases as one more coordinate [4]_.
    Measured (``studies/fourier_draws/study.py``, 300 points of
    :math:`N(0, I_d)`): orthogonal draws about halve the error of iid ones
    at d >= 16 in the sincos form (15 % less in the offset form), and the
    QMC error falls as :math:`t^{-1.04}` at d = 2, :math:`t^{-0.87}` at
    d = 4 and :math:`t^{-0.8}` at d = 8 (Monte Carlo: :math:`t^{-1/2}`).

    References
    ----------
    .. [1] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", NIPS 2007.
    .. [2] D. J. Sutherland and J. Schneider, "On the Error of Random
       Fourier Features", Conference on Uncertainty in Artificial
       Intelligence (UAI), 2015.
    .. [3] F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice and
       S. Kumar, "Orthogonal Random Features", NIPS 2016.
    .. [4] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney, "Quasi-Monte
       Carlo Feature Maps for Shift-Invariant Kernels", Journal of Machine
       Learning Research 17(120), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> rff = RandomFourierFeatures(5000, gamma=0.5, rng=0).fit(X)
    >>> Z = rff.transform(X)
    >>> Z.shape
    (40, 5000)
    >>> K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.1)
    True
    """

    _takes_sparse = True

    def __init__(self, n_components=100, *, kernel="rbf", gamma=None, draw=None,
                 form="sincos", rng=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.draw = draw
        self.form = form
        self.rng = rng

    def _fit(self, X, workers, progress):
        names = self._check_names(X, reset=True)
        X = _check_vectors(X)
        return {**self._fit_draw(X.shape[1], X), **names}

    def _array_fit(self, library, X, n_threads):
        """`fit` on rows of `library`, checked on their device (the median
        heuristic's sample alone comes to the host)."""
        names = self._check_names(X, reset=True)
        X = _array_api.check_rows(library, X, "X")
        return {**self._fit_draw(X.shape[1], X), **names}

    @blocked_rows(check=_check_vectors)
    def transform(self, X, *, workers=None, progress=False):
        """Features of the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n, d)
            Points, one per row.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of rows (needs tqdm).

        Returns
        -------
        Z : ndarray, shape (n, n_components)
            In the dtype of `X` (float32 or float64).
        """
        return fourier_features(self, X, resolve_workers(workers))

    def _array_features(self, library, X):
        """`transform` of the rows of X of `library`, computed there."""
        X = _array_api.check_rows(library, X, "X")
        self._check_width(X.shape[1], "X")
        return array_fourier_features(self, library, X)


class RandomDistributionFeatures(_Fourier):
    r"""Random distribution features (RDF) [1]_: the mean of random Fourier
    features over a set, also known as EMK-Fourier [2]_.

    .. math::

        \Phi(X_i) = \frac{1}{n_i} \sum_{x \in X_i} \sqrt{2/t}\,
        \cos(x W + b), \qquad
        \Phi(X_i) \cdot \Phi(Y_j) \approx
        \frac{1}{n_i m_j} \sum_{x \in X_i, y \in Y_j} k(x, y)

    so inner products approximate `sum_match_kernel` (``normalize=True``)
    and distances :math:`\|\Phi(X_i) - \Phi(Y_j)\|` approximate `mmd`, with
    error :math:`O(n_i^{-1/2} + m_j^{-1/2} + t^{-1/2})` against the kernels
    of the distributions the sets are drawn from ([1]_, Theorem 1) and
    :math:`O(t^{-1/2})` against the kernels of the sets themselves.

    `fit` draws the frequencies for the width of the training sets (and,
    with ``gamma=None``, takes the median heuristic on their points).

    Parameters
    ----------
    n_components : int, default=100
        Number t of features.
    gamma : float, optional
        Positive scale of the point kernel; None means `median_heuristic`
        of the pooled training points (with its fixed seed), computed by
        `fit`, as in `sum_match_kernel`.
    kernel : {"rbf", "laplacian"}, default="rbf"
        The point kernel (see `RandomFourierFeatures`).
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        The frequency draw [4]_ [5]_ of `RandomFourierFeatures`
        (None: chosen by the dimension of the points).
    form : {"sincos", "offset"}, default="sincos"
        The feature form [3]_ of `RandomFourierFeatures`.
    rng : int or numpy.random.Generator, optional
        Seed or generator, used by `fit`; the same seed gives the same map.

    Attributes
    ----------
    weights_ : ndarray, shape (``n_features_in_``, n_components)
        The frequencies.
    offsets_ : ndarray, shape (n_components,)
        The phases.
    gamma_ : float
        The scale used.
    draw_ : str
        The frequency draw used.
    n_features_in_ : int
        Dimension d of the points.
    n_features_out_ : int
        Number t of features, `n_components`.

    See Also
    --------
    sum_match_kernel, mmd : The exact kernels approximated.
    DoublyRandomDistributionFeatures : Features of `mmd_kernel`.

    Notes
    -----
    `transform` never forms the (points x t) matrix of point features: it
    walks tiles of points and columns, computes :math:`xW + b`, the cosine
    and the per-set sums in registers (SIMD, OpenMP over tiles), and sums
    in float64. The result is the same, bit for bit, for any `workers`.

    This map is also EMK-Fourier, the Fourier mode of the efficient match
    kernel [2]_ (`EMKFeatures` is its learned-basis mode, EMK-CKSVD, which
    draws no frequencies).

    **Weighted sets.** For a `Bags` with point weights :math:`w_x`, the
    feature of a set is the weighted mean of the point features, the
    weights normalised per set (:math:`W_i` the total weight of set i):

    .. math::

        \Phi(X_i) = \sum_{x \in X_i} \frac{w_x}{W_i} \sqrt{2/t}\,
        \cos(x W + b), \qquad
        \Phi(X_i) \cdot \Phi(Y_j) \approx \sum_{x \in X_i, y \in Y_j}
        \frac{w_x v_y}{W_i V_j} k(x, y),

    the weighted mean map kernel (`sum_match_kernel` with
    ``normalize=True`` of the weighted sets): integer weights count as
    repeated points, points of weight 0 as absent ones, and weights
    scaled by a constant change nothing. The tiles multiply each point's
    features by its share of its set's weight (in the dtype of the points,
    a number in [0, 1]) before summing them. `fit` takes weighted sets too:
    with ``gamma=None`` its scale is the weighted median heuristic of
    `median_heuristic` on the training sets (pairs of points of positive
    weight, each pair weighing the product of their weights).

    **Draws and forms** are those of `RandomFourierFeatures` (all
    unbiased; see its Notes for the measured errors): the set means of
    orthogonal or QMC frequencies, in the sincos form, approximate the
    kernel with less error at equal t [3]_ [4]_ [5]_.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 3 and Theorem 1.
    .. [2] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", Advances in Neural Information
       Processing Systems (NIPS), 2009.
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
    >>> from kernelmaps import RandomDistributionFeatures, sum_match_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(50, 2)) for i in range(6)]
    >>> rdf = RandomDistributionFeatures(4000, gamma=0.5, rng=0)
    >>> F = rdf.fit_transform(sets)
    >>> F.shape
    (6, 4000)
    >>> K = sum_match_kernel(sets, gamma=0.5)
    >>> bool(np.abs(F @ F.T - K).max() < 0.05)
    True
    """

    _takes_sets = True

    def __init__(self, n_components=100, *, gamma=None, kernel="rbf", draw=None,
                 form="sincos", rng=None):
        self.n_components = n_components
        self.gamma = gamma
        self.kernel = kernel
        self.draw = draw
        self.form = form
        self.rng = rng

    def _fit(self, X, workers, progress):
        bags = check_sets(X, "X", weighted=True)
        return self._fit_draw(bags.dim, bags)

    def _array_fit(self, library, X, n_threads):
        """`fit` on sets of `library`, checked on their device (the median
        heuristic's sample alone comes to the host)."""
        sets = check_array_sets(library, X, "X", weighted=True)
        return self._fit_draw(sets.dim, sets)

    @blocked_sets(weighted=True, checked=True)
    def transform(self, X, *, workers=None, progress=False):
        """Features of the sets of `X`.

        Parameters
        ----------
        X : sequence of array_like of shape (n_i, d), or Bags
            The sets; a weighted `Bags` gives the weighted means (see
            Notes).
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of sets (needs tqdm).

        Returns
        -------
        F : ndarray, shape (len(X), n_components)
            In the dtype of the points (float32 or float64).
        """
        return fourier_features(self, X, resolve_workers(workers))

    def _array_features(self, library, X):
        """`transform` of the sets X of `library` (weighted: their weighted
        means), computed there."""
        sets = check_array_sets(library, X, "X", weighted=True)
        self._check_width(sets.dim, "X")
        return array_fourier_features(self, library, sets.padded, sets.shares)


class DoublyRandomDistributionFeatures(FeatureMap):
    r"""Doubly randomized distribution features (DRDF) [1]_: random Fourier
    features of the RDF vectors, approximating `mmd_kernel`.

    With :math:`\Phi` the `RandomDistributionFeatures` of the point kernel
    (scale `gamma`, t features), :math:`\|\Phi(X_i) - \Phi(Y_j)\|^2`
    approximates :math:`\mathrm{MMD}^2(X_i, Y_j)`, so Gaussian random
    features of scale `gamma2` (t2 features) of :math:`\Phi` give

    .. math::

        \Psi(X_i) \cdot \Psi(Y_j) \approx
        \exp(-\gamma_2\, \mathrm{MMD}^2(X_i, Y_j)).

    `fit` fits the first level on the training sets, then draws the second.

    Parameters
    ----------
    n_components : int, default=100
        Number t of first-level (RDF) features.
    n_components2 : int, default=100
        Number t2 of output features.
    gamma : float, optional
        Scale of the point kernel; None means `median_heuristic` of the
        pooled training points (as in `RandomDistributionFeatures`).
    gamma2 : float or None, default=1.0
        Scale of the level-2 Gaussian kernel (as in `mmd_kernel`); None
        means the median heuristic on the RDF features of the training
        sets (their squared distances approximate the squared MMDs).
    draw : {"iid", "orthogonal", "qmc"} or None, default=None
        The frequency draw [3]_ [4]_ of `RandomFourierFeatures`
        of both levels (the first chosen by the dimension of the points,
        the second by t when None).
    form : {"sincos", "offset"}, default="sincos"
        The feature form [2]_ of `RandomFourierFeatures`.
    rng : int or numpy.random.Generator, optional
        Seed or generator, used by `fit`; the first level is drawn first.

    Attributes
    ----------
    rdf_ : RandomDistributionFeatures
        The first level, fitted.
    rff_ : RandomFourierFeatures
        The second level, of dimension `n_components2`, fitted on the
        first level's features.
    gamma_, gamma2_ : float
        The scales used.
    draw_, draw2_ : str
        The frequency draws used by the first and the second level.
    n_features_in_ : int
        Dimension d of the points.
    n_features_out_ : int
        Number t2 of output features, `n_components2`.

    See Also
    --------
    mmd_kernel : The kernel approximated.

    Notes
    -----
    Both levels draw their frequencies by `draw` in the `form` given (see
    `RandomFourierFeatures`): unbiased in every combination; with
    ``draw=None`` the first level chooses by the dimension of the points
    and the second by t, so a DRDF of points in few dimensions has a QMC
    first level and an orthogonal second one.

    Weighted sets (a `Bags` with point weights) are taken by `fit` and
    `transform`: the first level gives their weighted RDF means (see
    `RandomDistributionFeatures`), whose distances approximate the weighted
    MMD, and the second level the features of those means, so the inner
    products approximate `mmd_kernel` of the weighted sets. With
    ``gamma2=None`` the heuristic is that of the weighted means of the
    training sets.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 3.
    .. [2] D. J. Sutherland and J. Schneider, "On the Error of Random
       Fourier Features", Conference on Uncertainty in Artificial
       Intelligence (UAI), 2015.
    .. [3] F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice and
       S. Kumar, "Orthogonal Random Features", NIPS 2016.
    .. [4] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney, "Quasi-Monte
       Carlo Feature Maps for Shift-Invariant Kernels", Journal of Machine
       Learning Research 17(120), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import DoublyRandomDistributionFeatures, mmd_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(50, 2)) for i in range(6)]
    >>> drdf = DoublyRandomDistributionFeatures(1000, 3000, gamma=0.5,
    ...                                         gamma2=2.0, rng=0)
    >>> F = drdf.fit_transform(sets)
    >>> F.shape
    (6, 3000)
    >>> K = mmd_kernel(sets, gamma=0.5, gamma2=2.0)
    >>> bool(np.abs(F @ F.T - K).max() < 0.1)
    True
    """

    _takes_sets = True

    def __init__(self, n_components=100, n_components2=100, *, gamma=None,
                 gamma2=1.0, draw=None, form="sincos", rng=None):
        self.n_components = n_components
        self.n_components2 = n_components2
        self.gamma = gamma
        self.gamma2 = gamma2
        self.draw = draw
        self.form = form
        self.rng = rng

    def _fit(self, X, workers, progress):
        # The second level's parameters, named as here (the first level
        # checks the others); both levels draw from one generator, the
        # first level first.
        t2 = check_scalar(self.n_components2, "n_components2", kind="int", low=1)
        rng = check_rng(self.rng)
        rdf = RandomDistributionFeatures(self.n_components, gamma=self.gamma,
                                         draw=self.draw, form=self.form,
                                         rng=rng).fit(X)
        check_size(n_components=rdf.n_features_out_, n_components2=t2)
        F = None if self.gamma2 is not None else rdf.transform(X, workers=workers)
        rff = RandomFourierFeatures(t2, gamma=self.gamma2, draw=self.draw,
                                    form=self.form, rng=rng)
        rff._set_fitted(rff._fit_draw(rdf.n_features_out_, F,
                                      gamma_name="gamma2"))
        return {"rdf_": rdf, "rff_": rff, "gamma_": rdf.gamma_,
                "gamma2_": rff.gamma_, "draw_": rdf.draw_, "draw2_": rff.draw_,
                "n_features_in_": rdf.n_features_in_, "n_features_out_": t2}

    def _array_fit(self, library, X, n_threads):
        """`fit` on sets of `library`: both levels fitted there (the median
        heuristics' samples alone come to the host)."""
        return self._fit(X, n_threads, False)

    @blocked_sets(weighted=True, checked=True)
    def transform(self, X, *, workers=None, progress=False):
        """Features of the sets of `X`, shape (len(X), n_components2), in
        the dtype of the points (see `RandomDistributionFeatures.transform`;
        weighted sets as there).
        `progress` shows a progress bar over blocks of sets (needs tqdm)."""
        return self.rff_.transform(
            fourier_features(self.rdf_, X, resolve_workers(workers)),
            workers=workers)

    def _array_features(self, library, X):
        """`transform` of the sets X of `library`, computed there: the
        second level's features of the first level's."""
        sets = check_array_sets(library, X, "X", weighted=True)
        self._check_width(sets.dim, "X")
        F = array_fourier_features(self.rdf_, library, sets.padded, sets.shares)
        return array_fourier_features(self.rff_, library, F)
