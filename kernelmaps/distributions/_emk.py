"""Efficient match kernels with a learned basis (EMK-CKSVD).

The basis ``Z`` is learned by minibatch stochastic gradient on the
constrained kernel SVD objective of Bo and Sminchisescu (seed paper 004,
section 3.1); a point maps to ``G k_Z(x)`` with ``G^T G = K_ZZ^+``, a set to
the mean over its points, and a spatial pyramid concatenates the set features
of the grid cells of several levels (Lazebnik et al.).
"""

import contextlib
import math
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.cluster.vq import kmeans2
from scipy.spatial.distance import cdist

from .._bags import Bags
from .._dask import lazy_sets
from .._frozen import Frozen
from .._parallel import check_progress, progress_bar, resolve_workers
from .._validation import check_choice, check_points, check_scalar, check_sets
from ..sets._set_features import set_means

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # optional: without it BLAS keeps its thread count
    threadpool_limits = None

__all__ = ["EMKFeatures"]

_KERNELS = ("rbf", "laplacian")
_INITS = ("sample", "kmeans")

# Ridge added to the diagonal of K_ZZ (whose diagonal is 1 for both kernels)
# in the objective and its gradient during the fit.
_RIDGE = 1e-8
# Eigenvalues of K_ZZ below this fraction of the largest are dropped from G.
_EIG_TOL = 1e-8
# Size of the monitor sample on which objective_ is evaluated.
_MONITOR = 4096
# Rows per block when evaluating the objective on many points.
_BLOCK = 4096


class EMKFeatures(Frozen):
    r"""Efficient match kernel features with a learned basis (EMK-CKSVD,
    section 3.1 of [1]_).

    A local kernel :math:`k` (``"rbf"``: :math:`\exp(-\gamma\|x-z\|^2)`,
    ``"laplacian"``: :math:`\exp(-\gamma\|x-z\|_1)`) is approximated by
    projecting :math:`\phi(x)` onto the span of :math:`\phi(z_1), \dots,
    \phi(z_D)` for the D basis vectors :math:`Z`:

    .. math::

        k(x, y) \approx k_Z(x)^T K_{ZZ}^{-1} k_Z(y) = \psi(x)^T \psi(y),
        \quad \psi(x) = G\, k_Z(x), \quad G^T G = K_{ZZ}^{-1},

    with :math:`(k_Z(x))_j = k(x, z_j)` and :math:`(K_{ZZ})_{jl} = k(z_j,
    z_l)`. The feature of a set is the mean :math:`\Psi(X) = \frac{1}{|X|}
    \sum_{x \in X} \psi(x)`, so :math:`\Psi(X)^T \Psi(Y)` approximates the
    normalised sum-match kernel (`sum_match_kernel` with
    ``normalize=True``). Use `fit` to learn the basis, or pass one.

    Parameters
    ----------
    basis : array_like, shape (n_basis, d)
        The basis vectors :math:`z_j`, one per row.
    kernel : {"rbf", "laplacian"}, default="rbf"
        The local kernel.
    gamma : float, optional
        Positive kernel parameter; None means ``1 / d``.
    objective : array_like, optional
        The training curve, stored as `objective_` (`fit` sets it; None
        gives an empty array).

    Attributes
    ----------
    basis : ndarray of float64, shape (n_basis, d)
        The basis vectors.
    kernel : str
        The local kernel.
    gamma : float
        The kernel parameter.
    projection : ndarray of float64, shape (n_basis, n_basis)
        :math:`G = \Lambda^{-1/2} U^T` from the eigendecomposition
        :math:`K_{ZZ} = U \Lambda U^T`; rows for eigenvalues below ``1e-8``
        times the largest are zero, so :math:`G^T G` is the pseudo-inverse of
        :math:`K_{ZZ}` truncated there.
    objective_ : ndarray of float64
        The CKSVD objective (mean residual :math:`k(x, x) - k_Z(x)^T
        K_{ZZ}^{-1} k_Z(x)` over the monitor sample) at the start of `fit`,
        after every `check_every` iterations and after the last one;
        non-increasing.
    n_features_in : int
        Dimension d of the points.
    n_features_out : int
        ``n_basis``, the width of `transform` without pyramid. With
        ``levels=L`` the width is ``n_basis * (4 ** (L + 1) - 1) // 3``.

    See Also
    --------
    sum_match_kernel : The kernel between sets that the features
        approximate.

    Notes
    -----
    Basis vectors closer than the kernel can resolve make :math:`K_{ZZ}`
    nearly singular; the truncation of its spectrum keeps `projection`
    finite, and the inner products are then those of the projection onto the
    span of the kept eigenvectors.

    References
    ----------
    .. [1] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", NIPS 2009 (seed paper 004 of
       kernelmaps), section 3.1.
    .. [2] S. Lazebnik, C. Schmid and J. Ponce, "Beyond Bags of Features:
       Spatial Pyramid Matching for Recognizing Natural Scene Categories",
       CVPR 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import EMKFeatures, sum_match_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(20, 3)) for _ in range(4)]
    >>> emk = EMKFeatures.fit(np.vstack(sets), n_basis=40, gamma=0.5, rng=0)
    >>> emk
    EMKFeatures(n_basis=40, n_features_in=3, kernel='rbf', gamma=0.5)
    >>> F = emk.transform(sets)
    >>> F.shape
    (4, 40)
    >>> K = sum_match_kernel(sets, gamma=0.5)
    >>> bool(np.abs(F @ F.T - K).max() < 0.01)
    True
    >>> bool(emk.objective_[-1] < emk.objective_[0])
    True

    A two-level spatial pyramid, from the positions of the points in the
    unit square:

    >>> positions = [rng.random((20, 2)) for _ in range(4)]
    >>> emk.transform(sets, positions, levels=2).shape
    (4, 840)
    """

    def __init__(self, basis, *, kernel="rbf", gamma=None, objective=None):
        basis = check_points(basis, "basis").astype(np.float64)
        kernel = check_choice(kernel, "kernel", _KERNELS)
        d = basis.shape[1]
        if d == 0 or basis.shape[0] == 0:
            raise ValueError(f"basis must be non-empty, got shape {basis.shape}")
        gamma = _check_gamma(gamma, d)
        self.basis = basis
        self.kernel = kernel
        self.gamma = gamma
        self.projection = _projection(_kernel_matrix(basis, basis, kernel, gamma))
        self.objective_ = (np.zeros(0) if objective is None
                           else np.array(objective, dtype=np.float64).ravel())
        self._freeze()

    @classmethod
    def fit(cls, points, n_basis, *, kernel="rbf", gamma=None, n_iter=300,
            batch_size=None, learning_rate=0.05, init="sample", check_every=10,
            rng=None, progress=False):
        r"""Learn the basis by stochastic gradient on the CKSVD objective.

        Minimises, over the basis :math:`Z`, eq. (11) of Bo and
        Sminchisescu divided by the number of points,

        .. math::

            R(Z) = \frac{1}{F} \sum_{i=1}^F k(x_i, x_i)
                   - k_Z(x_i)^T (K_{ZZ} + \epsilon I)^{-1} k_Z(x_i),

        the mean squared distance of :math:`\phi(x_i)` to the span of the
        :math:`\phi(z_j)`, with :math:`\epsilon = 10^{-8}` (relative to the
        unit diagonal of :math:`K_{ZZ}`) for numerical stability.

        Parameters
        ----------
        points : array_like, shape (n, d), or a collection of sets
            Training points (the rows of a 2-D array, or pooled from sets as
            `transform` takes them), e.g. a random sample of local features.
        n_basis : int
            Number D of basis vectors, ``1 <= n_basis <= n``.
        kernel : {"rbf", "laplacian"}, default="rbf"
            The local kernel.
        gamma : float, optional
            Positive kernel parameter; None means ``1 / d``.
        n_iter : int, default=300
            Number of minibatch gradient steps; 0 keeps the initial basis.
        batch_size : int, optional
            Points per minibatch; None means ``max(n_basis, 256)`` (the
            paper uses D), at most the number of training points.
        learning_rate : float, default=0.05
            Initial Adam step, in units of the length scale
            ``s = min(data scale, kernel scale)`` per coordinate (data
            scale: the root mean variance of the coordinates; kernel scale:
            ``1 / sqrt(2 gamma d)`` for "rbf", ``1 / (gamma d)`` for
            "laplacian").
        init : {"sample", "kmeans"}, default="sample"
            Initial basis: distinct points drawn at random, or k-means
            centres (`scipy.cluster.vq.kmeans2` with k-means++ seeding, run
            on at most ``max(50 * n_basis, 20000)`` random points).
        check_every : int, default=10
            Iterations between two evaluations of the monitor objective.
        rng : int or numpy.random.Generator, optional
            Seed or generator for the initial basis, the monitor sample and
            the minibatches.
        progress : bool, default=False
            Show a progress bar over the iterations (needs tqdm).

        Returns
        -------
        EMKFeatures

        Notes
        -----
        The gradient is analytic. With :math:`A = K_{BZ}` the kernel between
        a minibatch B (b points) and the basis, :math:`K = K_{ZZ} + \epsilon
        I`, :math:`Q = A K^{-1}`, :math:`M = 2 Q \circ A` and :math:`N = (Q^T
        Q) \circ K`, the gradient of :math:`f = \operatorname{tr}(A K^{-1}
        A^T)` with respect to :math:`z_j` is, for "rbf",

        .. math::

            2\gamma \sum_i M_{ij} (x_i - z_j)
            - 4\gamma \sum_l N_{jl} (z_l - z_j),

        and for "laplacian" (a subgradient where a coordinate difference is
        0) :math:`\gamma \sum_i M_{ij} \operatorname{sign}(x_i - z_j) -
        2\gamma \sum_l N_{jl} \operatorname{sign}(z_l - z_j)`;
        the minibatch objective is :math:`1 - f / b`. The steps are Adam's
        (default moments 0.9 and 0.999) with the step
        ``learning_rate * s / sqrt(1 + 10 t / n_iter)`` at iteration t.

        The objective stored in `objective_` is evaluated exactly on a
        monitor sample: 4096 random points that the minibatches and the
        initial basis never use (held out) when there are more than 8192
        points and at least ``4096 + 4 * n_basis``, otherwise all the
        points. It is evaluated at the start, every `check_every` iterations
        and at the end; when it has increased since the last check, the
        basis goes back to the previous one, the Adam moments restart and
        the step is halved, so `objective_` never increases.

        The work is ``O(n_iter * (b D d + D^3 + b D^2))``, independent of n
        beyond the initialisation, in float64 whatever the dtype of
        `points`. Its matrices are small, so the iterations run the BLAS on
        one thread (through threadpoolctl, when it is installed): on few
        cores a multithreaded BLAS mostly spins on them.
        """
        points = check_points(points, "points")
        n, d = points.shape
        if d == 0:
            raise ValueError("points have no feature (d == 0)")
        kernel = check_choice(kernel, "kernel", _KERNELS)
        gamma = _check_gamma(gamma, d)
        n_basis = check_scalar(n_basis, "n_basis", kind="int", low=1)
        if n_basis > n:
            raise ValueError(
                f"n_basis={n_basis} exceeds the number of points ({n})"
            )
        n_iter = check_scalar(n_iter, "n_iter", kind="int", low=0)
        if batch_size is not None:
            batch_size = check_scalar(batch_size, "batch_size", kind="int", low=1)
        learning_rate = check_scalar(learning_rate, "learning_rate", low=0.0,
                                     low_inclusive=False)
        init = check_choice(init, "init", _INITS)
        check_every = check_scalar(check_every, "check_every", kind="int", low=1)
        progress = check_progress(progress)
        rng = np.random.default_rng(rng)

        X = points.astype(np.float64, copy=False)
        order = rng.permutation(n)
        if n > 2 * _MONITOR and n - _MONITOR >= 4 * n_basis:
            monitor, train = X[order[:_MONITOR]], order[_MONITOR:]
        else:
            monitor, train = X, order
        if init == "kmeans":
            basis = _kmeans_init(X[train], n_basis, rng)
        else:
            basis = _sample_init(X, train, n_basis)
            if basis is None:
                basis = _sample_init(X, order, n_basis)
            if basis is None:
                raise ValueError(
                    f"n_basis={n_basis} exceeds the number of distinct points"
                )
        if n_iter == 0:
            return cls(basis, kernel=kernel, gamma=gamma,
                       objective=[_objective(monitor, basis, kernel, gamma)])

        if batch_size is None:
            batch_size = max(n_basis, 256)
        batch_size = min(batch_size, train.shape[0])
        scale = _length_scale(X, kernel, gamma)
        limits = (contextlib.nullcontext() if threadpool_limits is None
                  else threadpool_limits(1, user_api="blas"))
        with limits:
            basis, objective = _adam(
                X, train, monitor, basis, kernel, gamma, n_iter, batch_size,
                learning_rate * scale, check_every, rng, progress)
        return cls(basis, kernel=kernel, gamma=gamma, objective=objective)

    @property
    def n_features_in(self):
        return self.basis.shape[1]

    @property
    def n_features_out(self):
        return self.basis.shape[0]

    @lazy_sets(per_point=("positions",))
    def transform(self, sets, positions=None, levels=0, *, workers=None):
        r"""Set features: the mean of :math:`G k_Z(x)` over each set, or its
        spatial pyramid.

        Parameters
        ----------
        sets : sequence of array_like (n_i, d), or Bags
            Sets of points, each with at least one point.
        positions : sequence of array_like (n_i, 2), Bags or ndarray, optional
            Position of every point in the unit square :math:`[0, 1]^2`: the
            same structure as `sets` with 2 columns, or one array aligned
            with the points of all sets one after the other. Needed when
            ``levels > 0``, ignored otherwise.
        levels : int, default=0
            Pyramid depth L; 0 gives the plain set feature.
        workers : int, optional
            Threads; None or -1 means all cores.

        Returns
        -------
        F : ndarray, shape (len(sets), n_basis * (4 ** (L + 1) - 1) // 3)
            float32 for float32 points, else float64.

        Notes
        -----
        Level l of the pyramid splits the unit square into a ``2**l`` by
        ``2**l`` grid; a point at ``(p, q)`` falls in the cell of row
        ``min(floor(2**l p), 2**l - 1)`` and column
        ``min(floor(2**l q), 2**l - 1)``. The feature of a cell is the
        set feature of the set's points in it (their mean, as the pyramid
        EMK of Bo and Sminchisescu uses the normalised sum-match kernel in
        every cell),
        zero when the cell holds no point. The output concatenates, level
        after level and cell after cell (row-major), the cell features
        multiplied by the weights of Lazebnik et al.: ``1 / 2**L`` for level
        0 and
        ``1 / 2**(L - l + 1)`` for level l >= 1. Inner products of pyramid
        features hence weight the cell kernels by the squared weights.

        The kernel means are computed once, for the cells of the finest
        level; those of a coarser cell are the means of its sub-cells
        weighted by their numbers of points (exact up to rounding), so a
        pyramid costs little more than the plain feature.
        """
        bags = check_sets(sets, "sets")
        if bags.dim != self.n_features_in:
            raise ValueError(
                f"sets have {bags.dim} features, but the basis was learned for "
                f"{self.n_features_in}"
            )
        levels = check_scalar(levels, "levels", kind="int", low=0)
        resolve_workers(workers)
        if levels > 0:
            if positions is None:
                raise ValueError(
                    f"levels={levels} needs the positions of the points"
                )
            positions = _check_positions(positions, bags)
        dtype = bags.dtype
        # Centre on the basis mean: distances are unchanged, values smaller.
        centre = self.basis.mean(axis=0)
        shifted = Bags(bags.points - centre.astype(dtype), bags.offsets)
        centres = (self.basis - centre).T.astype(dtype)

        def means(sub):
            return set_means(sub, centres, None, kind=self.kernel,
                             gamma=self.gamma, workers=workers)

        if levels == 0:
            return (means(shifted) @ self.projection.T).astype(dtype, copy=False)
        return self._pyramid(shifted, positions, levels, means).astype(
            dtype, copy=False)

    def _pyramid(self, bags, positions, levels, means):
        """Weighted cell features of every level, from one call of `means`
        on the cells of the finest level."""
        n_sets, D, side = len(bags), self.n_features_out, 2**levels
        # finest cells: sub-bags of the points of each (set, cell) pair
        rc = np.minimum((positions * side).astype(np.int64), side - 1)
        owner = np.repeat(np.arange(n_sets), bags.sizes)
        key = owner * side**2 + rc[:, 0] * side + rc[:, 1]
        perm = np.argsort(key, kind="stable")
        ids, counts = np.unique(key[perm], return_counts=True)
        offsets = np.zeros(ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        fine = means(Bags(bags.points[perm], offsets)).astype(np.float64)
        owner, cell = np.divmod(ids, side**2)
        row, col = np.divmod(cell, side)
        # coarser cells: count-weighted sums of the means of the finest
        n_cells = (4 ** (levels + 1) - 1) // 3
        out = np.zeros((n_sets, n_cells, D))
        first = 0
        for level in range(levels + 1):
            shift, width = levels - level, 2**level
            parent = owner * width**2 + (row >> shift) * width + (col >> shift)
            keys, inverse = np.unique(parent, return_inverse=True)
            weights = scipy.sparse.csr_array(
                (counts.astype(np.float64), (inverse, np.arange(ids.shape[0]))),
                shape=(keys.shape[0], ids.shape[0]))
            cell_means = weights @ fine
            cell_means /= np.bincount(inverse, counts)[:, None]
            weight = 1.0 / 2 ** (levels if level == 0 else levels - level + 1)
            target = first + keys % width**2
            out[keys // width**2, target] = weight * (cell_means @ self.projection.T)
            first += width**2
        return out.reshape(n_sets, n_cells * D)

    def __repr__(self):
        return (f"EMKFeatures(n_basis={self.n_features_out}, "
                f"n_features_in={self.n_features_in}, kernel={self.kernel!r}, "
                f"gamma={self.gamma:.6g})")


def _check_gamma(gamma, d):
    if gamma is None:
        return 1.0 / d
    return check_scalar(gamma, "gamma", low=0.0, low_inclusive=False)


def _check_positions(positions, bags):
    """Positions as a (total, 2) float64 array aligned with `bags.points`."""
    arr = None
    if isinstance(positions, np.ndarray) and positions.dtype != object:
        arr = positions
    if arr is not None and arr.ndim == 2:
        pos = check_points(arr, "positions")
        if pos.shape[0] != bags.n_points:
            raise ValueError(
                f"positions has {pos.shape[0]} rows but the sets hold "
                f"{bags.n_points} points"
            )
    else:
        packed = check_sets(positions, "positions")
        if len(packed) != len(bags) or not np.array_equal(packed.sizes,
                                                          bags.sizes):
            raise ValueError(
                "positions must hold one position per point of every set "
                f"(sets of sizes {_brief(bags.sizes)}, positions of sizes "
                f"{_brief(packed.sizes)})"
            )
        pos = packed.points
    if pos.shape[1] != 2:
        raise ValueError(
            f"positions must have 2 columns (a point in the unit square), got "
            f"{pos.shape[1]}"
        )
    if pos.min() < 0 or pos.max() > 1:
        raise ValueError(
            f"positions must lie in [0, 1]^2, got values in "
            f"[{pos.min():.6g}, {pos.max():.6g}]"
        )
    return pos.astype(np.float64, copy=False)


def _brief(sizes):
    return np.array2string(sizes, threshold=6, edgeitems=2)


def _kernel_matrix(X, Z, kernel, gamma):
    """k(x_i, z_j) for float64 rows of X and Z."""
    if kernel == "rbf":
        sq = np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", Z, Z)
        sq -= 2 * (X @ Z.T)
        np.maximum(sq, 0, out=sq)
        sq *= -gamma
    else:
        sq = cdist(X, Z, "cityblock")
        sq *= -gamma
    return np.exp(sq, out=sq)


def _projection(K):
    """G with G^T G the pseudo-inverse of K, tiny eigenvalues dropped."""
    w, U = np.linalg.eigh(K)
    keep = w > _EIG_TOL * max(w[-1], 0.0)
    scale = np.zeros_like(w)
    scale[keep] = 1.0 / np.sqrt(w[keep])
    return scale[:, None] * U.T


def _cholesky(K):
    """Cholesky factor of K + ridge (more ridge if needed)."""
    ridge = _RIDGE
    while True:
        try:
            return scipy.linalg.cho_factor(
                K + ridge * np.eye(K.shape[0]), lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            ridge *= 10
            if ridge > 1e-2:
                raise


def _objective(X, basis, kernel, gamma, factor=None):
    """Mean CKSVD residual of the rows of X (k(x, x) = 1 for both kernels)."""
    if factor is None:
        factor = _cholesky(_kernel_matrix(basis, basis, kernel, gamma))
    total = 0.0
    for start in range(0, X.shape[0], _BLOCK):
        A = _kernel_matrix(X[start:start + _BLOCK], basis, kernel, gamma)
        W = scipy.linalg.solve_triangular(factor[0], A.T, lower=True,
                                          check_finite=False)
        total += A.shape[0] - np.einsum("ij,ij->", W, W)
    return total / X.shape[0]


def _objective_and_gradient(X, basis, kernel, gamma):
    """Mean CKSVD residual of the rows of X and its gradient w.r.t. basis."""
    K = _kernel_matrix(basis, basis, kernel, gamma)
    A = _kernel_matrix(X, basis, kernel, gamma)
    factor = _cholesky(K)
    Q = scipy.linalg.cho_solve(factor, A.T, check_finite=False).T
    b = X.shape[0]
    objective = 1.0 - np.einsum("ij,ij->", A, Q) / b
    M = 2 * Q * A
    N = (Q.T @ Q) * K
    if kernel == "rbf":
        grad = 2 * gamma * (M.T @ X - M.sum(0)[:, None] * basis)
        grad -= 4 * gamma * (N @ basis - N.sum(1)[:, None] * basis)
    else:
        # sum_i M_ij sign(x_i - z_j), one (b, d) slab per basis vector
        signs = np.sign(X[None, :, :] - basis[:, None, :])
        grad = gamma * (M.T[:, None, :] @ signs)[:, 0]
        signs = np.sign(basis[None, :, :] - basis[:, None, :])
        grad -= 2 * gamma * (N[:, None, :] @ signs)[:, 0]
    return objective, -grad / b


def _length_scale(X, kernel, gamma):
    """Per-coordinate length scale of the steps."""
    d = X.shape[1]
    data = math.sqrt(float(np.mean(np.var(X, axis=0))))
    width = (1.0 / math.sqrt(2 * gamma * d) if kernel == "rbf"
             else 1.0 / (gamma * d))
    return min(data, width) if data > 0 else width


def _sample_init(X, order, n_basis):
    """The first n_basis distinct rows of X in the random `order` (None if
    there are fewer)."""
    n = X.shape[0]
    pool = min(n, 2 * n_basis)
    while True:
        cand = X[order[:pool]]
        _, first = np.unique(cand, axis=0, return_index=True)
        if first.shape[0] >= n_basis or pool == n:
            break
        pool = min(n, 4 * pool)
    if first.shape[0] < n_basis:
        return None
    return cand[np.sort(first)[:n_basis]].copy()


def _kmeans_init(X, n_basis, rng):
    """k-means++ / Lloyd centres of a random sample of X."""
    n = X.shape[0]
    size = min(n, max(50 * n_basis, 20000))
    sample = X[rng.choice(n, size, replace=False)] if size < n else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty clusters keep their centre
        centres, _ = kmeans2(sample, n_basis, minit="++", rng=rng)
    centres = np.asarray(centres, dtype=np.float64)
    if np.unique(centres, axis=0).shape[0] < n_basis:
        raise ValueError(
            f"k-means found fewer than n_basis={n_basis} distinct centres; "
            "use init='sample' or a smaller n_basis"
        )
    return centres


def _adam(X, train, monitor, basis, kernel, gamma, n_iter, batch_size, step,
          check_every, rng, progress):
    """Adam on minibatches with a monitored, never-increasing objective."""
    beta1, beta2, eps = 0.9, 0.999, 1e-12
    best = basis.copy()
    objective = [_objective(monitor, best, kernel, gamma)]
    m = np.zeros_like(basis)
    v = np.zeros_like(basis)
    t_adam = 0
    halvings = 0
    with progress_bar(progress, n_iter, "EMK fit") as bar:
        for it in range(n_iter):
            batch = X[train[rng.integers(0, train.shape[0], batch_size)]]
            _, grad = _objective_and_gradient(batch, basis, kernel, gamma)
            t_adam += 1
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad * grad
            m_hat = m / (1 - beta1 ** t_adam)
            v_hat = v / (1 - beta2 ** t_adam)
            lr = step * 0.5 ** halvings / math.sqrt(1 + 10 * it / n_iter)
            basis = basis - lr * m_hat / (np.sqrt(v_hat) + eps)
            bar.update()
            if (it + 1) % check_every == 0 or it + 1 == n_iter:
                value = _objective(monitor, basis, kernel, gamma)
                if value <= objective[-1]:
                    best = basis.copy()
                    objective.append(value)
                else:
                    basis = best.copy()
                    m[:] = 0
                    v[:] = 0
                    t_adam = 0
                    halvings += 1
                    objective.append(objective[-1])
    return best, np.array(objective)
