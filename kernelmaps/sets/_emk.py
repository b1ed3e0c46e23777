"""Efficient match kernels with a learned basis (EMK-CKSVD).

The basis ``Z`` is learned by minibatch stochastic gradient on the
constrained kernel SVD objective of Bo and Sminchisescu (NIPS 2009,
section 3.1); a point maps to ``G k_Z(x)`` with ``G^T G = K_ZZ^+``, a set to
the mean over its points, and a spatial pyramid concatenates the set features
of the grid cells of several levels (Lazebnik et al.).
"""

import dataclasses

import numpy as np
import scipy.sparse

from .. import _array_api
from .._bags import Bags
from .._base import FeatureMap
from .._engine.set_means import set_means, weights_over_largest
from .._gamma import resolve_gamma
from .._parallel import resolve_workers
from .._probes import as_float_array
from .._transforms import blocked_sets
from .._validation import (
    check_choice,
    check_points,
    check_rng,
    check_scalar,
    check_sets,
)
from . import _array_sets
from . import _cksvd as cksvd

__all__ = ["EMKFeatures"]

_KERNELS = ("rbf", "laplacian")
_INITS = ("sample", "kmeans")
# Iterations of the fit at most (a guard against absurd values).
_MAX_ITER = 2**31 - 1
# Pyramid depth at most, and output entries of a pyramid at most.
_MAX_LEVELS = 16
_MAX_PYRAMID = 2**31 - 1
# Largest |log2| of the centred values for which the engine's squared norms
# |x|^2 + |c|^2 - 2 <x, c> are safe, by dtype; beyond, they are rescaled.


class EMKFeatures(FeatureMap):
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
    ``normalize=True``). `fit` learns the basis from training points (see
    its Notes), or give it as `basis`.

    Parameters
    ----------
    n_basis : int, default=50
        Number D of basis vectors, at most the number of training points.
    kernel : {"rbf", "laplacian"}, default="rbf"
        The local kernel.
    gamma : float, optional
        Positive kernel parameter; None means `median_heuristic` of the
        training points (with its fixed seed), computed by `fit` (or of
        `basis`, when given).
    n_iter : int, default=300
        Number of minibatch gradient steps of `fit` (at most 2**31 - 1); 0
        keeps the initial basis.
    batch_size : int, optional
        Points per minibatch; None means ``max(n_basis, 256)`` (the paper
        uses D), at most the number of training points.
    learning_rate : float, default=0.05
        Initial Adam step, in units of the length scale
        ``s = min(data scale, kernel scale)`` per coordinate (data scale:
        the root mean variance of the coordinates; kernel scale:
        ``1 / sqrt(2 gamma d)`` for "rbf", ``1 / (gamma d)`` for
        "laplacian").
    init : {"sample", "kmeans"}, default="sample"
        Initial basis: distinct points drawn at random, or k-means centres
        (`scipy.cluster.vq.kmeans2` with k-means++ seeding, run on at most
        ``max(50 * n_basis, 20000)`` random points).
    check_every : int, default=10
        Iterations between two evaluations of the monitor objective.
    rng : int or numpy.random.Generator, optional
        Seed or generator for the initial basis, the monitor sample and the
        minibatches.
    basis : array_like, shape (n_basis, d), optional
        The basis vectors :math:`z_j`, one per row (their number replaces
        `n_basis`): `fit` then learns nothing from `X` but its width, and
        computes the projection of the basis.

    Attributes
    ----------
    basis_ : ndarray of float64, shape (n_basis, d)
        The basis vectors.
    gamma_ : float
        The kernel parameter used.
    projection_ : ndarray of float64, shape (n_basis, n_basis)
        :math:`G = \Lambda^{-1/2} U^T` from the eigendecomposition
        :math:`K_{ZZ} = U \Lambda U^T`; rows for eigenvalues below ``1e-8``
        times the largest are zero, so :math:`G^T G` is the pseudo-inverse of
        :math:`K_{ZZ}` truncated there.
    objective_ : ndarray of float64
        The CKSVD objective (mean residual :math:`k(x, x) - k_Z(x)^T
        K_{ZZ}^{-1} k_Z(x)` over the monitor sample) at the start of `fit`,
        after every `check_every` iterations and after the last one;
        non-increasing (empty for a given `basis`).
    n_features_in_ : int
        Dimension d of the points.
    n_features_out_ : int
        ``n_basis``, the width of `transform` without pyramid. With
        ``levels=L`` the width is ``n_basis * (4 ** (L + 1) - 1) // 3``.

    See Also
    --------
    sum_match_kernel : The kernel between sets that the features
        approximate.

    Notes
    -----
    `fit` learns the basis by stochastic gradient on the CKSVD objective:
    it minimises, over the basis :math:`Z`, eq. (11) of Bo and
    Sminchisescu divided by the number of training points,

    .. math::

        R(Z) = \frac{1}{F} \sum_{i=1}^F k(x_i, x_i)
               - k_Z(x_i)^T (K_{ZZ} + \epsilon I)^{-1} k_Z(x_i),

    the mean squared distance of :math:`\phi(x_i)` to the span of the
    :math:`\phi(z_j)`, with :math:`\epsilon = 10^{-8}` (relative to the
    unit diagonal of :math:`K_{ZZ}`) for numerical stability.

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

    Points of any magnitude are fitted: beyond ``2**+-400`` they are
    scaled by a power of two (exact) to about 1, with `gamma` scaled to
    give the same kernel values, and the basis scaled back; where the
    kernel is then numerically constant between distinct points (the
    scaled gamma beyond ``2**+-600``: the objective is flat) the
    initial basis is kept.

    The work is ``O(n_iter * (b D d + D^3 + b D^2))``, independent of n
    beyond the initialisation, in float64 whatever the dtype of the
    training points. Its matrices are small, so the iterations run the BLAS
    on one thread (through threadpoolctl, when it is installed): a
    multithreaded BLAS gains nothing on them and, on a loaded machine,
    waits for its threads (5-7 s
    instead of 0.5 s for 100 iterations on 100000 x 30 points, 200
    basis vectors, with one other busy core).

    **Weighted sets.** `transform` takes a `Bags` with point weights
    :math:`w_x`: the feature of a set is the weighted mean
    :math:`\sum_{x \in X} (w_x / W) \psi(x)`, :math:`W` the set's total
    weight, so inner products approximate the weighted mean map kernel
    (`sum_match_kernel` with ``normalize=True`` of the weighted sets);
    each pyramid cell is the weighted mean of its points (points of weight
    0 are absent from their cells), and coarser cells weigh their
    sub-cells by their total weight. `fit` learns its basis from
    unweighted points only (the CKSVD objective here has no point
    weights): it refuses a weighted `Bags` with a ValueError unless
    `basis` is given (then only the width of the sets is used); fit on
    ``X.with_weights(None)`` to learn the basis from the points
    themselves.

    Basis vectors closer than the kernel can resolve make :math:`K_{ZZ}`
    nearly singular; the truncation of its spectrum keeps `projection`
    finite, and the inner products are then those of the projection onto the
    span of the kept eigenvectors.

    References
    ----------
    .. [1] L. Bo and C. Sminchisescu, "Efficient Match Kernels between Sets
       of Features for Visual Recognition", Advances in Neural Information
       Processing Systems (NIPS), 2009, section 3.1.
    .. [2] S. Lazebnik, C. Schmid and J. Ponce, "Beyond Bags of Features:
       Spatial Pyramid Matching for Recognizing Natural Scene Categories",
       CVPR 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import EMKFeatures, sum_match_kernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(size=(20, 3)) for _ in range(4)]
    >>> emk = EMKFeatures(n_basis=40, gamma=0.5, rng=0).fit(sets)
    >>> emk.basis_.shape
    (40, 3)
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

    _takes_sets = True

    def __init__(self, n_basis=50, *, kernel="rbf", gamma=None, n_iter=300,
                 batch_size=None, learning_rate=0.05, init="sample",
                 check_every=10, rng=None, basis=None):
        self.n_basis = n_basis
        self.kernel = kernel
        self.gamma = gamma
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.init = init
        self.check_every = check_every
        self.rng = rng
        self.basis = basis

    def _state(self, kernel, basis, gamma, objective=None):
        """The fitted attributes for the basis vectors `basis`."""
        if basis is None:  # given: checked here
            basis = as_float_array(self.basis, "basis")
            if basis.ndim != 2 or 0 in basis.shape:
                raise ValueError(
                    f"basis must be a non-empty 2-D array (n_basis, d) of "
                    f"basis vectors, one per row; got shape {basis.shape}"
                )
            basis = check_points(basis, "basis").astype(np.float64)
            gamma = resolve_gamma(gamma, kernel, basis, data="basis")
        return {"basis_": basis, "gamma_": gamma, "_kernel": kernel,
                "projection_": cksvd.projection(basis, kernel, gamma),
                "objective_": np.zeros(0) if objective is None else objective,
                "n_features_in_": basis.shape[1],
                "n_features_out_": basis.shape[0]}

    def _fit(self, X, workers, progress):
        return self._fit_checked(X, lambda X, weighted: (
            check_sets(X, "X", weighted=True).dim if weighted
            else check_points(X, "X").shape[1]), progress)

    def _array_fit(self, library, X, n_threads):
        """`fit` on points or sets of `library`: with `basis` given, checked
        on their device; the basis learned (CKSVD, by the compiled engine)
        from a copy of the points on the host."""
        if self.basis is None:
            return self._fit(_array_api.numpy_objects(library, X), n_threads, False)
        X = _array_sets.stacked_rows(library, X)  # (a list of rows)
        return self._fit_checked(X, lambda X, weighted: (
            _array_api.check_rows(library, X, "X").shape[1]
            if _array_api.is_foreign(X) and X.ndim == 2
            else _array_sets.check_array_sets(library, X, "X",
                                              weighted=True).dim), False)

    def _fit_checked(self, X, width_of, progress):
        """`fit` on `X`, whose points' width ``width_of(X, weighted)`` checks
        and gives where `basis` is given."""
        kernel = check_choice(self.kernel, "kernel", _KERNELS)
        weighted = isinstance(X, Bags) and X.weights is not None
        if self.basis is not None:
            state = self._state(kernel, None, self.gamma)
            self._check_width(width_of(X, weighted),
                              expected=state["n_features_in_"])
            return state
        if weighted:
            raise ValueError(
                "X is a Bags with point weights, which EMKFeatures.fit does "
                "not take to learn its basis (the CKSVD fit has no point "
                "weights); fit on the sets without weights "
                "(X.with_weights(None)) or give basis; transform takes "
                "weighted sets"
            )
        n_basis = check_scalar(self.n_basis, "n_basis", kind="int", low=1)
        n_iter = check_scalar(self.n_iter, "n_iter", kind="int", low=0,
                              high=_MAX_ITER)
        batch_size = (None if self.batch_size is None else check_scalar(
            self.batch_size, "batch_size", kind="int", low=1))
        learning_rate = check_scalar(self.learning_rate, "learning_rate", low=0.0,
                                     low_inclusive=False)
        init = check_choice(self.init, "init", _INITS)
        check_every = check_scalar(self.check_every, "check_every", kind="int",
                                   low=1)
        rng = check_rng(self.rng)
        points = check_points(X, "X")
        n = points.shape[0]
        if n_basis > n:
            raise ValueError(
                f"n_basis={n_basis} exceeds the number of points of X ({n})"
            )
        gamma = resolve_gamma(self.gamma, kernel, points)
        basis, objective = cksvd.fit_basis(
            points.astype(np.float64, copy=False), n_basis, kernel, gamma,
            n_iter, batch_size, learning_rate, init, check_every, rng, progress)
        return self._state(kernel, basis, gamma, objective)

    @blocked_sets(per_point=("positions",), weighted=True, checked=True)
    def transform(self, sets, positions=None, levels=0, *, workers=None,
                  progress=False):
        r"""Set features: the mean of :math:`G k_Z(x)` over each set, or its
        spatial pyramid.

        Parameters
        ----------
        sets : sequence of array_like (n_i, d), or Bags
            Sets of points, each with at least one point; a weighted `Bags`
            gives weighted means (see the class Notes).
        positions : sequence of array_like (n_i, 2), Bags or ndarray, optional
            Position of every point in the unit square :math:`[0, 1]^2`: the
            same structure as `sets` with 2 columns, or one array aligned
            with the points of all sets one after the other. Needed when
            ``levels > 0``, ignored otherwise. Beside sets of another array
            library, read on the host (NumPy arrays, or the library's arrays
            whose values can be read).
        levels : int, default=0
            Pyramid depth L; 0 gives the plain set feature. At most 16, and
            at most ``2**31 - 1`` output entries (a ValueError beyond:
            transform fewer sets at a time).
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of sets (needs tqdm).

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

        The kernel values come from differences of coordinates, with the
        points in units of the kernel's bandwidth (an exact power-of-two
        scaling), so the features are accurate at any magnitude.

        The kernel means are computed once, for the cells of the finest
        level; those of a coarser cell are the means of its sub-cells
        weighted by their numbers of points (exact up to rounding), so a
        pyramid costs little more than the plain feature.
        """
        levels = check_scalar(levels, "levels", kind="int", low=0, high=_MAX_LEVELS)
        n_threads = resolve_workers(workers)
        if levels > 0:
            _check_pyramid(levels, len(sets), self.n_features_out_, positions)
            positions = _check_positions(positions, sets)
        dtype = sets.dtype
        basis, projection = self.basis_, self.projection_
        if np.abs(basis).max() > np.finfo(dtype).max / 4:
            # a basis beyond float32: float32 points computed in float64
            sets = Bags(sets.points.astype(np.float64), sets.offsets,
                        sets.weights)
        centres = basis.T.astype(sets.dtype)

        def means(sub):
            return set_means(sub, centres, None, kind=self._kernel,
                             gamma=self.gamma_, n_threads=n_threads)

        if levels == 0:
            return (means(sets) @ projection.T).astype(dtype, copy=False)
        return _pyramid(sets, positions, levels, means, projection).astype(
            dtype, copy=False)

    def _array_features(self, library, sets, positions=None, levels=0):
        """`transform` of the sets of `library`, computed there: the plain
        set feature, or its pyramid (`_array_pyramid`; the positions on
        the host, NumPy or readable arrays)."""
        checked = _array_sets.check_array_sets(library, sets, "sets", weighted=True)
        self._check_width(checked.dim, "sets")
        levels = check_scalar(levels, "levels", kind="int", low=0, high=_MAX_LEVELS)
        if levels > 0:
            _check_pyramid(levels, len(checked), self.n_features_out_, positions)
            positions = _check_positions(_host_positions(library, positions), checked)
        xp = library.xp
        out = checked.dtype
        top = np.abs(self.basis_).max()
        if out == xp.float32 and top > np.finfo(np.float32).max / 4:
            # a basis beyond float32: float32 points computed in float64
            checked = dataclasses.replace(
                checked, padded=xp.astype(checked.padded, xp.float64),
                shares=checked.shares_in(xp.float64))
        dtype = np.float32 if checked.dtype == xp.float32 else np.float64
        basis, projection = self._on_device(library, dtype, "basis_", "projection_")
        params = {"kernel": self._kernel, "gamma": self.gamma_}
        if levels > 0:
            F = _array_pyramid(library, checked, positions, levels, basis,
                               xp.matrix_transpose(projection), params)
        else:
            means = _array_sets.centre_means(library, checked, basis, params)
            F = means @ xp.matrix_transpose(projection)
        return xp.astype(F, out, copy=False)


def _check_pyramid(levels, n_sets, width, positions):
    """The ValueError of a pyramid of `levels` > 0 of `n_sets` sets of
    `width` features each beyond `_MAX_PYRAMID` output entries, or without
    `positions`."""
    n_cells = (4 ** (levels + 1) - 1) // 3
    size = n_sets * n_cells * width
    if size > _MAX_PYRAMID:
        raise ValueError(
            f"levels={levels} gives {n_sets} x {n_cells * width} = {size} output "
            f"entries, more than {_MAX_PYRAMID}: use fewer levels, or "
            f"transform fewer sets at a time"
        )
    if positions is None:
        raise ValueError(f"levels={levels} needs the positions of the points")


def _host_positions(library, positions):
    """The `positions` beside sets of `library` with NumPy arrays in place
    of the library's, or a ValueError where their values cannot be read
    (the cells of the points are found on the host)."""
    arrays = (positions.points if isinstance(positions, Bags)
              else positions if isinstance(positions, (list, tuple))
              else [positions])
    if any(_array_api.is_foreign(a) and not library.readable(a) for a in arrays):
        raise ValueError(
            "positions must have values that can be read on the host (not "
            "under jax.jit, nor on PyTorch's meta device), where the cells of "
            "the points are found: give them as NumPy arrays")
    return _array_api.numpy_objects(library, positions)


def _array_pyramid(library, S, positions, levels, basis, projection, params):
    """`_pyramid` of the checked sets S of `library` (`_array_sets.ArraySets`)
    with the (total, 2) `positions` (NumPy, checked), the `basis` and the
    transposed `projection` on the device, computed by the library,
    differentiably: the weighted sums of the kernel values of each set's
    points in each cell of the finest level (`_array_sets.centre_sums`,
    the cells' weights from the positions on the host), summed over the
    sub-cells of each coarser cell and divided by their total weight (0
    for an empty cell). The points weigh as the NumPy path's
    (`ArraySets.point_weights`)."""
    xp = library.xp
    side = 2**levels
    n_sets, n_max = S.padded.shape[:2]
    mask, rows = _array_sets.padding(S.sizes, n_max)
    rc = np.minimum((positions * side).astype(np.int64), side - 1)
    key = np.where(mask, (rc[:, 0] * side + rc[:, 1])[rows], -1)
    weights = S.point_weights()
    totals = np.zeros((n_sets, side * side))  # of the finest cells (host)
    np.add.at(totals, (np.nonzero(mask)[0], key[mask]), weights[mask])
    keys = library.from_numpy(key)
    shares = library.from_numpy(weights.astype(
        np.float32 if S.dtype == xp.float32 else np.float64))
    cells = xp.arange(side * side, device=library.device)

    def groups(a, b):  # (b - a, cells, n_max): each point's weight in its cell
        return xp.where(keys[a:b, None, :] == cells[:, None], shares[a:b, None, :], 0)

    sums = _array_sets.centre_sums(library, S, basis, params, groups, side * side)
    t = sums.shape[2]
    parts = []
    for level in range(levels + 1):
        width, sub = 2**level, 2 ** (levels - level)
        cell_sums = xp.reshape(xp.sum(xp.reshape(
            sums, (n_sets, width, sub, width, sub, t)), axis=(2, 4)),
            (n_sets, width * width, t))
        total = totals.reshape(n_sets, width, sub, width, sub).sum(axis=(2, 4))
        scale = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
        scale = scale / 2 ** (levels if level == 0 else levels - level + 1)
        scale = library.from_numpy(scale.reshape(n_sets, width * width, 1).astype(
            np.float32 if S.dtype == xp.float32 else np.float64))
        parts.append((cell_sums * scale) @ projection)
    return xp.reshape(xp.concat(parts, axis=1), (n_sets, -1))


def _pyramid(bags, positions, levels, means, projection):
    """Weighted cell features of every level, from one call of `means` on
    the cells of the finest level."""
    n_sets, D, side = len(bags), projection.shape[0], 2**levels
    # finest cells: sub-bags of the points of each (set, cell) pair
    points, weights = bags.points, bags.weights
    rc = np.minimum((positions * side).astype(np.int64), side - 1)
    owner = np.repeat(np.arange(n_sets), bags.sizes)
    if weights is not None:
        # over each set's largest: no cell's total overflows
        weights = weights_over_largest(weights, bags.offsets)
    if weights is not None and not (weights > 0).all():
        # points of weight 0 are no points of their cells
        keep = weights > 0
        points, weights, rc, owner = (points[keep], weights[keep], rc[keep],
                                      owner[keep])
    key = owner * side**2 + rc[:, 0] * side + rc[:, 1]
    perm = np.argsort(key, kind="stable")
    ids, counts = np.unique(key[perm], return_counts=True)
    offsets = np.zeros(ids.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if weights is not None:  # weighted means; cells weigh their total weight
        weights = weights[perm]
        counts = np.add.reduceat(weights, offsets[:-1])
    fine = means(Bags(points[perm], offsets, weights)).astype(np.float64)
    owner, cell = np.divmod(ids, side**2)
    row, col = np.divmod(cell, side)
    # coarser cells: count- (weight-) weighted sums of the means of the finest
    n_cells = (4 ** (levels + 1) - 1) // 3
    out = np.zeros((n_sets, n_cells, D))
    first = 0
    for level in range(levels + 1):
        shift, width = levels - level, 2**level
        parent = owner * width**2 + (row >> shift) * width + (col >> shift)
        keys, inverse = np.unique(parent, return_inverse=True)
        members = scipy.sparse.csr_array(
            (counts.astype(np.float64), (inverse, np.arange(ids.shape[0]))),
            shape=(keys.shape[0], ids.shape[0]))
        cell_means = members @ fine
        cell_means /= np.bincount(inverse, counts)[:, None]
        weight = 1.0 / 2 ** (levels if level == 0 else levels - level + 1)
        target = first + keys % width**2
        out[keys // width**2, target] = weight * (cell_means @ projection.T)
        first += width**2
    return out.reshape(n_sets, n_cells * D)


def _check_positions(positions, bags):
    """Positions as a (total, 2) float64 array aligned with `bags.points`."""
    if (isinstance(positions, np.ndarray) and positions.dtype != object
            and positions.ndim == 2):
        pos = check_points(positions, "positions")
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
