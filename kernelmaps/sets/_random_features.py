"""Random Fourier features of points and of sets: RFF, RDF (also EMK-Fourier)
and DRDF."""

import math

import numpy as np

from .._bags import Bags
from .._dask import lazy_rows, lazy_sets
from .._draws import draw_fourier
from .._engine.layout import max_abs
from .._engine.set_means import set_means
from .._frozen import Frozen
from .._parallel import resolve_workers
from .._probes import as_float_array
from .._validation import (
    check_choice,
    check_fourier_range,
    check_points,
    check_rng,
    check_scalar,
    check_sets,
    check_size,
)

__all__ = [
    "DoublyRandomDistributionFeatures",
    "RandomDistributionFeatures",
    "RandomFourierFeatures",
]

_KERNELS = ("rbf", "laplacian")


def _check_width(name, width, dim):
    if width != dim:
        raise ValueError(
            f"{name} has {width} features, but these features were drawn for "
            f"dim={dim}"
        )


class _Fourier(Frozen):
    """Frequencies and phases drawn for a shift-invariant kernel."""

    def __init__(self, dim, n_components, *, kernel, gamma, rng):
        dim = check_scalar(dim, "dim", kind="int", low=1)
        n_components = check_scalar(n_components, "n_components", kind="int", low=1)
        self.kernel = check_choice(kernel, "kernel", _KERNELS)
        check_size(dim=dim, n_components=n_components)  # first: 1 / dim below
        if gamma is None:
            gamma = 1.0 / dim
        self.gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)
        with np.errstate(over="ignore", invalid="ignore"):  # checked below
            self.weights, self.offsets, self._draw = draw_fourier(
                dim, n_components, self.kernel, self.gamma, check_rng(rng))
            self._weight_norm = float(np.abs(self.weights).sum(axis=0).max())
        if not np.isfinite(self.weights).all():
            raise ValueError(
                f"gamma={self.gamma!r} is too large: the random frequencies "
                f"overflow float64"
            )
        self._freeze()

    @property
    def n_features_in(self):
        """Dimension of the points, ``dim``."""
        return self.weights.shape[0]

    @property
    def n_features_out(self):
        """Number t of random features."""
        return self.weights.shape[1]

    def _means(self, bags, workers, name="X"):
        """sqrt(2/t) times the mean of cos(x W + b) over each set."""
        top = max_abs(bags.points)
        norm = getattr(self, "_weight_norm", None)  # None: pickled before it
        if norm is None:
            norm = float(np.abs(self.weights).sum(axis=0).max())
        check_fourier_range(top, norm, bags.dtype, name)
        return set_means(bags, self.weights, self.offsets, kind="cos",
                         scale=math.sqrt(2.0 / self.n_features_out),
                         n_threads=resolve_workers(workers))

    def __repr__(self):
        return (f"{type(self).__name__}(dim={self.n_features_in}, "
                f"n_components={self.n_features_out}, kernel={self.kernel!r}, "
                f"gamma={self.gamma:.6g})")


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

    Parameters
    ----------
    dim : int
        Dimension d of the points.
    n_components : int
        Number t of features.
    kernel : {"rbf", "laplacian"}, default="rbf"
    gamma : float or None, default=1.0
        Positive scale of the kernel; None means ``1 / dim`` (as in
        `RandomDistributionFeatures` and `sum_match_kernel`).
    rng : int or numpy.random.Generator, optional
        Seed or generator for W and b; the same seed gives the same map.

    Attributes
    ----------
    weights : ndarray, shape (dim, n_components)
        The frequencies W (read-only).
    offsets : ndarray, shape (n_components,)
        The phases b (read-only).
    kernel, gamma
    n_features_in, n_features_out

    See Also
    --------
    RandomDistributionFeatures : The mean of these features over a set.

    Notes
    -----
    `transform` computes :math:`xW + b` and the cosine in one pass over tiles
    of points and columns (SIMD, OpenMP): float32 input stays float32.
    A `gamma` so large that the frequencies overflow float64, and points so
    large that :math:`xW` could overflow the dtype of `X`, raise a
    ValueError (as in `RandomDistributionFeatures`).

    References
    ----------
    .. [1] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", NIPS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomFourierFeatures
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> rff = RandomFourierFeatures(3, 5000, gamma=0.5, rng=0)
    >>> Z = rff.transform(X)
    >>> Z.shape
    (40, 5000)
    >>> K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.1)
    True
    """

    def __init__(self, dim, n_components, *, kernel="rbf", gamma=1.0, rng=None):
        super().__init__(dim, n_components, kernel=kernel, gamma=gamma, rng=rng)

    @lazy_rows
    def transform(self, X, *, workers=None):
        """Features of the rows of `X`.

        Parameters
        ----------
        X : array_like, shape (n, dim)
            Points, one per row.
        workers : int, optional
            Threads; None or -1 means all cores.

        Returns
        -------
        Z : ndarray, shape (n, n_components)
            In the dtype of `X` (float32 or float64).
        """
        X = as_float_array(X, "X")  # ragged or sparse X: an error naming X
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, dim), got shape {X.shape}")
        points = check_points(X, "X")
        _check_width("X", points.shape[1], self.n_features_in)
        # Each point is a set of its own.
        return self._means(Bags(points, np.arange(points.shape[0] + 1)), workers)


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

    Parameters
    ----------
    dim : int
        Dimension d of the points.
    n_components : int
        Number t of features.
    gamma : float, optional
        Positive scale of the point kernel; None means ``1 / dim`` (as in
        `sum_match_kernel`).
    kernel : {"rbf", "laplacian"}, default="rbf"
        The point kernel (see `RandomFourierFeatures`).
    rng : int or numpy.random.Generator, optional
        Seed or generator; the same seed gives the same map.

    Attributes
    ----------
    weights : ndarray, shape (dim, n_components)
    offsets : ndarray, shape (n_components,)
    kernel, gamma
    n_features_in, n_features_out

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

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 3 and Theorem 1.
    .. [2] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", Advances in Neural Information
       Processing Systems (NIPS), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import RandomDistributionFeatures, sum_match_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(50, 2)) for i in range(6)]
    >>> rdf = RandomDistributionFeatures(2, 4000, gamma=0.5, rng=0)
    >>> F = rdf.transform(sets)
    >>> F.shape
    (6, 4000)
    >>> K = sum_match_kernel(sets, gamma=0.5)
    >>> bool(np.abs(F @ F.T - K).max() < 0.05)
    True
    """

    def __init__(self, dim, n_components, *, gamma=None, kernel="rbf", rng=None):
        super().__init__(dim, n_components, kernel=kernel, gamma=gamma, rng=rng)

    @lazy_sets()
    def transform(self, X, *, workers=None):
        """Features of the sets of `X`.

        Parameters
        ----------
        X : sequence of array_like of shape (n_i, dim), or Bags
            The sets.
        workers : int, optional
            Threads; None or -1 means all cores.

        Returns
        -------
        F : ndarray, shape (len(X), n_components)
            In the dtype of the points (float32 or float64).
        """
        bags = check_sets(X, "X")
        _check_width("X", bags.dim, self.n_features_in)
        return self._means(bags, workers)


class DoublyRandomDistributionFeatures(Frozen):
    r"""Doubly randomized distribution features (DRDF) [1]_: random Fourier
    features of the RDF vectors, approximating `mmd_kernel`.

    With :math:`\Phi` the `RandomDistributionFeatures` of the point kernel
    (scale `gamma`, t features), :math:`\|\Phi(X_i) - \Phi(Y_j)\|^2`
    approximates :math:`\mathrm{MMD}^2(X_i, Y_j)`, so Gaussian random
    features of scale `gamma2` (t2 features) of :math:`\Phi` give

    .. math::

        \Psi(X_i) \cdot \Psi(Y_j) \approx
        \exp(-\gamma_2\, \mathrm{MMD}^2(X_i, Y_j)).

    Parameters
    ----------
    dim : int
        Dimension d of the points.
    n_components : int
        Number t of first-level (RDF) features.
    n_components2 : int
        Number t2 of output features.
    gamma : float, optional
        Scale of the point kernel; None means ``1 / dim``.
    gamma2 : float or None, default=1.0
        Scale of the level-2 Gaussian kernel; None means
        ``1 / n_components``, the default of the second level, a
        `RandomFourierFeatures` of the ``n_components`` RDF features.
    rng : int or numpy.random.Generator, optional
        Seed or generator; the first level is drawn first.

    Attributes
    ----------
    rdf : RandomDistributionFeatures
        The first level.
    rff : RandomFourierFeatures
        The second level, of dimension ``n_components``.
    gamma, gamma2
    n_features_in, n_features_out

    See Also
    --------
    mmd_kernel : The kernel approximated.

    References
    ----------
    .. [1] H. Shan and J. Zhang, "Randomized Distribution Feature for Image
       Classification", European Conference on Artificial Intelligence
       (ECAI), 2016, section 3.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import DoublyRandomDistributionFeatures, mmd_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=i % 3, size=(50, 2)) for i in range(6)]
    >>> drdf = DoublyRandomDistributionFeatures(2, 4000, 4000, gamma=0.5,
    ...                                         gamma2=2.0, rng=0)
    >>> F = drdf.transform(sets)
    >>> F.shape
    (6, 4000)
    >>> K = mmd_kernel(sets, gamma=0.5, gamma2=2.0)
    >>> bool(np.abs(F @ F.T - K).max() < 0.1)
    True
    """

    def __init__(self, dim, n_components, n_components2, *, gamma=None,
                 gamma2=1.0, rng=None):
        # The second level's parameters, named as here (the first level
        # checks dim, n_components and gamma).
        n_components2 = check_scalar(n_components2, "n_components2", kind="int",
                                     low=1)
        if gamma2 is not None:
            gamma2 = check_scalar(gamma2, "gamma2", low=0.0, low_inclusive=False)
        n_components = check_scalar(n_components, "n_components", kind="int",
                                    low=1)
        check_size(n_components=n_components, n_components2=n_components2)
        rng = check_rng(rng)
        self.rdf = RandomDistributionFeatures(dim, n_components, gamma=gamma,
                                              rng=rng)
        try:
            self.rff = RandomFourierFeatures(n_components, n_components2,
                                             gamma=gamma2, rng=rng)
        except ValueError:  # the only one left: frequencies that overflow
            raise ValueError(
                f"gamma2={gamma2!r} is too large: the random frequencies of the "
                f"second level overflow float64"
            ) from None
        self._freeze()

    @property
    def gamma(self):
        return self.rdf.gamma

    @property
    def gamma2(self):
        return self.rff.gamma

    @property
    def n_features_in(self):
        return self.rdf.n_features_in

    @property
    def n_features_out(self):
        return self.rff.n_features_out

    @lazy_sets()
    def transform(self, X, *, workers=None):
        """Features of the sets of `X`, shape (len(X), n_components2), in
        the dtype of the points (see `RandomDistributionFeatures.transform`)."""
        return self.rff.transform(self.rdf.transform(X, workers=workers),
                                  workers=workers)

    def __repr__(self):
        return (f"DoublyRandomDistributionFeatures(dim={self.n_features_in}, "
                f"n_components={self.rdf.n_features_out}, "
                f"n_components2={self.n_features_out}, gamma={self.gamma:.6g}, "
                f"gamma2={self.gamma2:.6g})")
