"""Explicit feature maps for the chi2 kernel of histograms: the direct and
Chebyshev series of Li, Lebanon and Sminchisescu (and the base of the
additive maps)."""

import math

import numpy as np
import scipy.sparse

from .. import _array_api
from .._base import FeatureMap
from .._engine import lapack
from .._engine.expand import expand
from .._engine.layout import max_abs, row_blocks
from .._parallel import resolve_workers
from .._probes import as_float_array
from .._transforms import blocked_rows
from .._validation import (
    check_bool,
    check_histograms,
    check_scalar,
)
from . import _array_maps

__all__ = ["Chi2ChebyshevMap", "Chi2DirectMap"]

# Per-dimension fits mix this share of the pooled weights of all
# dimensions into each dimension's own.
_POOLED_WEIGHT = 0.1
# Features per input value: at most this many (a guard against absurd
# allocations; every map converges with a few dozen), and at most this many
# grid points for Chi2DirectMap.fit (its choice works on a matrix of
# (n_bins + 1) x n_bins ratios).
_MAX_TERMS = 2**16
_MAX_BINS = 2**10
# Chi2DirectMap.fit: the grid reaches down to 2**-_DIRECT_WINDOW times the
# largest training value (a value x changes any kernel value by at most 2x:
# the smaller ones are below float64 rounding), and the parameters are
# chosen until the error bound falls below 2**-_DIRECT_WINDOW of its start;
# later terms repeat them. Then this many passes of coordinate descent
# refine them.
_DIRECT_WINDOW = 60
_DIRECT_PASSES = 3
# ... and its points are at most this far apart in log (a factor e): a grid
# of fewer points than the window needs covers its top part only.
_DIRECT_STEP = 1.0
# The range of positive float64 numbers, for parameters computed in logs.
_LOG_MAX = math.log(np.finfo(np.float64).max)
_SMALLEST = math.ldexp(1.0, -1074)
# The direct map's compiled expansion computes 2 sqrt(k) x and x + k in
# float64: values and parameters are scaled (exactly, by a power of 4) so
# that these stay below 2**_DIRECT_TOP and the smallest of them above
# 2**-_DIRECT_BOTTOM (normal numbers), when they would not already.
_DIRECT_TOP = 1020
_DIRECT_BOTTOM = 1000
# The Chebyshev map's compiled expansion computes z = x / scale and 2 z: the
# values with |log2(z)| beyond this are expanded here, in logs.
_CHEBYSHEV_WINDOW = 1000


class _AdditiveMap(FeatureMap):
    """Shared machinery: a map of each input value to ``_n_terms`` features,
    output column ``j * n_terms + q`` for input column j and term q.

    Subclasses implement ``_state(X)``: the expansion (``_kind``,
    ``_params``, ``_scale``, ``_n_terms``, and ``_width``, the input width
    the parameters fix, or None) with their public fitted attributes,
    learned from the checked histograms `X`, or for ``X=None`` from the
    constructor's parameters alone (maps that need no fit)."""

    _kind = None
    _stateless = True  # the subclasses that learn from data say otherwise
    # whether `_state` learns from histograms of another library on their
    # device (else from a copy on the host)
    _learns_on_device = True
    _takes_sparse = True
    _positive_only = True

    def _fit(self, X, workers, progress):
        names = self._check_names(X, reset=True)
        X = check_histograms(X, "X")
        return self._fitted_state(X, names)

    def _array_fit(self, library, X, n_threads):
        """`fit` on histograms of `library` (`kernelmaps._array_api`): checked
        on their device, and learned from there (``Chi2ChebyshevMap``'s
        median scale: the middle values of the sorted positive values come
        to the host); ``Chi2DirectMap``'s parameters, statistics of every
        value by the compiled engine, from a copy on the host."""
        names = self._check_names(X, reset=True)
        X = _array_api.check_rows(library, X, "X", nonnegative=True)
        if not (self._stateless or self._learns_on_device):
            X = check_histograms(library.to_numpy(X), "X")
        return self._fitted_state(X, names)

    def _fitted_state(self, X, names):
        state = self._state(X)
        d = X.shape[1]
        return {"_kind": self._kind, **state, **names, "n_features_in_": d,
                "n_features_out_": d * state["_n_terms"]}

    @blocked_rows(check=check_histograms)
    def transform(self, X, *, workers=None, progress=False):
        """Features of the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n, d)
            Non-negative histograms, one per row.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of rows (needs tqdm).

        Returns
        -------
        Z : ndarray or CSR matrix, shape (n, d * n_terms)
            Column ``j * n_terms + q`` holds term q of input column j; a 0
            gives zero features, so CSR input gives a CSR output with the
            same non-zeros per term. The dtype of `X` (float32 or float64).
        """
        # (the width of a fit is checked by blocked_rows; that of parameters
        # given, here)
        state = self._expansion(X.shape[1])
        return self._expand(X, state, resolve_workers(workers))

    def _expansion(self, width):
        """The expansion of `transform`: the fitted state, or (a map not
        fitted, that needs no fit) the state of the parameters, checked
        for inputs of `width` features."""
        state = vars(self) if hasattr(self, "n_features_in_") else {
            "_kind": self._kind, **self._state(None)}
        self._check_width(width, expected=state["_width"])
        return state

    def _expand(self, X, state, n_threads):
        """The features of validated histograms (see `transform`) by the
        expansion `state`."""
        return expand(X, state["_kind"], state["_params"], state["_scale"],
                      state["_n_terms"], n_threads)

    def _array_features(self, library, X):
        """`transform` of the rows of X of `library`, computed there."""
        X = _array_api.check_rows(library, X, "X", nonnegative=True)
        self._check_width(X.shape[1])
        return self._array_expand(library, X)

    def _array_expand(self, library, X):
        """The features of the checked histograms X of `library`
        (`_array_maps`): `_expand`'s, computed by the library."""
        raise NotImplementedError

    def _params_on(self, library, X, state, params):
        """The NumPy array `params` (the expansion's ``_params``, or
        derived from them) on the device of X, in its dtype: moved once
        where they are the fitted ones."""
        dtype = np.float32 if X.dtype == library.xp.float32 else np.float64
        if state is vars(self) and params is state["_params"]:
            return self._on_device(library, dtype, "_params")[0]
        return library.from_numpy(params.astype(dtype))


def _values(X):
    """The stored values of validated histograms (a view)."""
    return X.data if scipy.sparse.issparse(X) else X.reshape(-1)


def _with_values(X, values):
    """Histograms shaped as `X` with the stored values `values`."""
    if scipy.sparse.issparse(X):
        return scipy.sparse.csr_matrix((values, X.indices, X.indptr), shape=X.shape)
    return values.reshape(X.shape)


def _rows(Z, n_terms):
    """The (n_values, n_terms) view of the features of each stored value."""
    return (Z.data if scipy.sparse.issparse(Z) else Z).reshape(-1, n_terms)


class Chi2DirectMap(_AdditiveMap):
    r"""The direct approximation of the additive chi2 kernel, with
    geometric convergence.

    Each value x becomes the series (eq. 7 of [1]_)

    .. math::

        c_q(x) = \prod_{p < q} \frac{x - k_p}{x + k_p} \cdot
        \frac{2 \sqrt{k_q}\, x}{x + k_q}, \qquad q = 1, \dots, N,

    whose inner products approximate the one-dimensional chi2 kernel
    :math:`2xy/(x+y)`; the N-term error is exactly (eq. 8)

    .. math::

        \frac{2xy}{x+y} \prod_{p \le N} \frac{x - k_p}{x + k_p}
        \frac{y - k_p}{y + k_p},

    geometric in N wherever some :math:`k_p` is near x. `fit` chooses the
    parameters :math:`k_q` from training data, by the error they leave (see
    Notes); or give them as `k`.

    Parameters
    ----------
    n_terms : int, default=5
        Features per input feature, at most 65536.
    per_dimension : bool, default=False
        Fit one parameter vector per dimension (better when dimensions have
        different ranges: each dimension's kernel is then approximated
        relative to its own largest values); each dimension's weights are
        mixed with a tenth of the pooled weights of all dimensions, so that
        its parameters also cover the values of the others, and a dimension
        without non-zero training values in the grid's range gets the
        shared parameters.
    n_bins : int, default=100
        Points of the log-spaced grid on which `fit` weighs the training
        values and places the parameters (see Notes; 50 to 400 make little
        difference), at most 1024. They are at most a factor e apart: 42
        or fewer may cover only the top of the range of the values.
    k : array_like, shape (n_terms,) or (d, n_terms), optional
        Positive parameters, shared by all dimensions or one row per
        dimension (the map then takes inputs of d features only): the map
        then learns nothing, and transforms without `fit`.

    Attributes
    ----------
    k_ : ndarray, shape (n_terms,) or (d, n_terms)
        The parameters (`k` when given).
    n_features_in_ : int
        Width d of the training histograms.
    n_features_out_ : int
        ``d * n_terms``.
    feature_names_in_ : ndarray of str
        The column names of a DataFrame `X` (only then).

    See Also
    --------
    additive_chi2_kernel : The kernel approximated.
    Chi2ChebyshevMap, HomogeneousKernelMap : Other maps for it.

    Notes
    -----
    `fit` chooses the parameters by what they leave of the kernel. By
    eq. (8) and the Cauchy-Schwarz inequality (the error is the tail of a
    positive semi-definite series), the error of a pair of histograms X, Y
    is at most :math:`\sqrt{e(X) e(Y)}`, where the error of X with itself is

    .. math::

        e(X) = \sum_i x_i \prod_{p \le N}
        \left(\frac{x_i - k_p}{x_i + k_p}\right)^2,

    so the largest error over all pairs is the largest :math:`e(X)`. A
    value x contributes at most x: the parameters must cover the values
    that carry the kernel, however few, not the many tiny ones. `fit` lays
    `n_bins` log-spaced points from the largest non-zero training value
    down to the smallest, but not below :math:`2^{-60}` times the largest
    (a value x changes any kernel value by at most 2x) and not more than a
    factor e apart, shares each value
    between its two nearest points (linearly in log x), and weighs each
    point by the largest share one row puts on it: the sum over the points
    of the weight times the product above bounds :math:`e(X)` for every
    row, up to the variation of the product between neighbouring points.
    The parameters, chosen among the midpoints between the points, minimise
    that bound: greedily (each new parameter the one that removes the
    most), then refined by three passes of coordinate descent (each
    parameter in turn the best given the others). Once the bound is below
    :math:`2^{-60}` of its start, the remaining terms repeat the
    parameters. Algorithm 1 of [1]_ instead places each parameter at the
    peak of the count density of the values times the bound (10): on
    sparse histograms, whose values span a hundred decades or more, it
    spent the parameters on the tiny values and stopped converging.

    The largest error then falls geometrically with N until the float64
    limit. Measured (relative to the largest kernel value, 200 histograms
    fitted and compared; ``tests/test_histogram_maps.py``): on 100-bin
    dense, skewed (one or two bins holding 95 % or 98 %) and multi-scale
    (rows or bins scaled by 1e-6 to 1e6) histograms and on 300-bin sparse
    Dirichlet histograms (:math:`\alpha` = 0.02 or 0.05, values spanning
    100 to 270 decades), every 4 more terms divide it by at least 6
    (sparse and multi-scale) or 18 (dense and skewed) until it is below
    1e-6, within 22 terms (seeds 0 to 5,
    ``studies/chi2_direct/results.md``); the rate slows as the error
    reaches values spread over more decades.

    Output column ``j * n_terms + q`` holds term q of input column j. A
    value of 0 gives zero features (no masking: the formula gives 0), so
    CSR input gives CSR output with the same non-zeros per term. Values
    outside the fitted range are mapped by the same exact series, whose
    error there shrinks more slowly. Values and parameters of any magnitude
    are mapped without overflow: the map is homogeneous of degree 1/2 in
    (x, k), and where ``2 sqrt(k) x`` or ``x + k`` would overflow, or the
    smallest value or parameter is subnormal, it is computed at the exactly
    rescaled (power of 4) scale nearest 1 that avoids both (parameters
    spanning 0.1 to 1e308 need none). At most 65536 terms.

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       section 4, eqs. (6)-(11), Algorithms 1 and 2.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import Chi2DirectMap, additive_chi2_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((100, 16))
    >>> X /= X.sum(axis=1, keepdims=True)
    >>> chi2_map = Chi2DirectMap(n_terms=5).fit(X)
    >>> chi2_map.k_.round(4)
    array([0.1306, 0.0704, 0.0291, 0.0077, 0.0013])
    >>> chi2_map.transform(X).shape
    (100, 80)
    >>> K = additive_chi2_kernel(X)
    >>> for n_terms in (2, 5, 8):
    ...     Z = Chi2DirectMap(n_terms).fit_transform(X)
    ...     print(n_terms, f"{np.abs(Z @ Z.T - K).max():.0e}")
    2 2e-02
    5 3e-04
    8 2e-05

    Sparse histograms (73 % of the values below 1e-8) converge as well:

    >>> S = rng.dirichlet(np.full(300, 0.02), size=300)
    >>> K = additive_chi2_kernel(S)
    >>> for n_terms in (3, 5, 8, 12, 20):
    ...     Z = Chi2DirectMap(n_terms).fit_transform(S)
    ...     print(n_terms, f"{np.abs(Z @ Z.T - K).max():.0e}")
    3 5e-02
    5 6e-03
    8 8e-04
    12 7e-05
    20 1e-06
    """

    _learns_on_device = False

    _kind = "direct"

    def __init__(self, n_terms=5, *, per_dimension=False, n_bins=100, k=None):
        self.n_terms = n_terms
        self.per_dimension = per_dimension
        self.n_bins = n_bins
        self.k = k

    @property
    def _stateless(self):
        return self.k is not None

    def _state(self, X):
        n_terms = check_scalar(self.n_terms, "n_terms", kind="int", low=1,
                               high=_MAX_TERMS)
        if self.k is not None:  # the parameters given
            state = _direct_state(self.k)
            if n_terms not in (5, state["_n_terms"]):
                raise ValueError(
                    f"n_terms={n_terms} disagrees with k, which has "
                    f"{state['_n_terms']} terms (leave n_terms out when giving k)"
                )
            if X is not None:
                self._check_width(X.shape[1], expected=state["_width"])
            return state
        # The error of a pair is bounded by the diagonal errors of its rows
        # (Cauchy-Schwarz), and a row's diagonal error is the sum over its
        # values of x prod_p r_p(x)**2: the parameters minimise a bound of
        # the largest of them on a log-spaced grid (`_direct_grid`,
        # `_direct_weights`, `_direct_choice`).
        per_dimension = check_bool(self.per_dimension, "per_dimension")
        n_bins = check_scalar(self.n_bins, "n_bins", kind="int", low=1,
                              high=_MAX_BINS)
        grid = low, top, h, _ = _direct_grid(X, n_bins)
        shape = (X.shape[1], n_terms) if per_dimension else (n_terms,)
        if low == top:  # one distinct non-zero value: k = it, exact
            return _direct_state(np.full(shape, top))
        pooled, own = _direct_weights(X, grid, per_dimension)
        pooled /= pooled.sum()
        if not per_dimension:
            weights = pooled[None, :]
        else:
            totals = own.sum(axis=1, keepdims=True)
            weights = own / np.where(totals > 0, totals, 1) + _POOLED_WEIGHT * pooled
            weights[totals[:, 0] == 0] = pooled
        with lapack.one_blas_thread():  # small products, many of them
            offsets = _direct_choice(weights, h, n_terms)
        # the grid is relative to the largest value: the parameters, kept
        # within the positive finite floats
        with np.errstate(over="ignore", under="ignore"):
            k = np.exp(np.minimum(math.log(top) + offsets, _LOG_MAX))
        k = np.maximum(k, _SMALLEST)
        return _direct_state(k.reshape(shape))

    def _expand(self, X, state, n_threads):
        # The map is homogeneous of degree 1/2 in (x, k) jointly: with
        # p = 4**m, c_q(x; k) = 2**m c_q(x / p; k / p). Where 2 sqrt(k) x or
        # x + k would overflow, or the smallest value or parameter is
        # subnormal, the map is expanded at such a scale (exact): the one
        # nearest 1 that avoids both (`_direct_exponent`).
        values = _values(X)
        m = _direct_exponent(values, state["k_"])
        if m == 0:
            return super()._expand(X, state, n_threads)
        T = state["_n_terms"]
        # in float64 (float32 could not hold the scaled values), then back
        scaled = _with_values(X, np.ldexp(values.astype(np.float64), -2 * m))
        Z = expand(scaled, self._kind, _direct_params(state, m), state["_scale"],
                   T, n_threads)
        rows = _rows(Z, T)
        rows *= 2.0**m
        return Z.astype(X.dtype, copy=False)

    def _array_expand(self, library, X):
        # In the precision of X, where any value is mapped at its own scale
        # (`_array_maps.direct`): at the scale 4**-m only for parameters
        # beyond float32's range, of float32 input.
        state = self._expansion(X.shape[1])
        m = 0
        if X.dtype == library.xp.float32:
            e = math.frexp(float(state["k_"].max()))[1]
            m = max(0, -(-(e - np.finfo(np.float32).maxexp) // 2))
        T = state["_n_terms"]
        params = self._params_on(library, X, state, _direct_params(state, m))
        return _array_maps.direct(library, X, params[:, :T], params[:, T:], m)


def _direct_state(k):
    """The fitted attributes of a `Chi2DirectMap` of parameters `k`."""
    k = np.array(as_float_array(k, "k"), dtype=np.float64)
    if k.ndim not in (1, 2) or k.size == 0:
        raise ValueError(
            f"k must be a non-empty array of shape (n_terms,) or (d, n_terms), "
            f"got shape {k.shape}"
        )
    if not np.isfinite(k).all() or (k <= 0).any():
        raise ValueError("k must hold positive finite parameters")
    if k.shape[-1] > _MAX_TERMS:
        raise ValueError(
            f"k has {k.shape[-1]} terms; at most {_MAX_TERMS} are supported"
        )
    rows = k.reshape(-1, k.shape[-1])
    return {"k_": k, "_n_terms": k.shape[-1],
            "_width": k.shape[0] if k.ndim == 2 else None,
            "_params": np.ascontiguousarray(np.hstack([rows, 2 * np.sqrt(rows)])),
            "_scale": 0.0}


def _direct_params(state, m):
    """The parameters of the direct expansion `state` (per row: k, then
    2 sqrt(k)) at the scale 4**-m (exact)."""
    if m == 0:
        return state["_params"]
    T = state["_n_terms"]
    return np.ascontiguousarray(np.hstack([
        np.ldexp(state["_params"][:, :T], -2 * m),
        np.ldexp(state["_params"][:, T:], -m)]))


def _direct_exponent(values, k):
    """m such that the direct map of the stored `values` with the
    parameters `k`, expanded at the scale 4**-m, computes 2 sqrt(k) x and
    x + k below 2**_DIRECT_TOP and holds no subnormal value or parameter:
    0 when the unscaled ones do (the usual case), else the m nearest 0 that
    does; overflow is avoided first where the range of the values and
    parameters is too wide for both (the smallest then lose precision,
    features far below the largest)."""
    smallest, top_x = _positive_range(values)
    if top_x == 0:
        return 0
    e_kmax = math.frexp(float(k.max()))[1]
    e_kmin = math.frexp(float(k.min()))[1]
    e_xmax = math.frexp(top_x)[1]
    e_xmin = math.frexp(smallest)[1]
    # frexp: 2**(e - 1) <= v < 2**e
    low = max(-(-(max(e_kmax, e_xmax) - _DIRECT_TOP) // 2),      # x + k
              -(-(1 + e_kmax // 2 + 1 + e_xmax - _DIRECT_TOP) // 3))  # 2 sqrt(k) x
    high = min((min(e_xmin, e_kmin) - 1 + _DIRECT_BOTTOM) // 2,
               (1 + (e_kmin - 1) // 2 + e_xmin - 1 + _DIRECT_BOTTOM) // 3)
    return min(max(0, low), max(high, low))


def _positive_range(values):
    """(smallest positive, largest) of the non-negative `values` as Python
    floats, in blocks (Ctrl-C stops between two); (inf, 0) without a
    positive value."""
    top = max_abs(values)
    if top == 0:
        return math.inf, 0.0
    smallest = min(float(np.min(block, where=block > 0, initial=np.inf))
                   for block in (values[a:b] for a, b in row_blocks(values)))
    return smallest, top


def _median_values(X):
    """The positive values of the histograms `X` whose median is theirs:
    all of them (an array, a CSR matrix), or for an array of another
    library the one or two middle values of their sort there, on the
    host."""
    if not _array_api.is_foreign(X):
        values = X.data if scipy.sparse.issparse(X) else X.reshape(-1)
        values = values[values > 0]
    else:
        library = _array_api.library_of(X=X)
        xp = library.xp
        values = xp.reshape(X, (-1,))
        values = xp.sort(values[values > 0])
        n = values.shape[0]
        values = library.to_numpy(values[(n - 1) // 2:n // 2 + 1])
    if values.size == 0:
        raise ValueError("X has no non-zero value to fit the scale to")
    return values


def _direct_grid(X, n_bins):
    """The grid of `Chi2DirectMap.fit`: (low, top, h, n_bins), for the
    points log(top) - b h, b = 0, ..., n_bins - 1, from the largest non-zero
    value `top` of the validated histograms `X` down to `low`, the smallest
    value or 2**-_DIRECT_WINDOW times `top`, whichever is larger (h = 0
    when that is `top`); with h at most _DIRECT_STEP, `low` raised to the
    grid's last point (one step below `top` for a single point)."""
    smallest, top = _positive_range(_values(X))
    if top == 0:
        raise ValueError("X has no non-zero value to fit the parameters to")
    low = max(smallest, math.ldexp(top, -_DIRECT_WINDOW))
    span = math.log(top) - math.log(low)
    h = span / max(n_bins - 1, 1)
    if h > _DIRECT_STEP:
        h = _DIRECT_STEP
        low = max(low, top * math.exp(-max(n_bins - 1, 1) * h))
    return low, top, h, n_bins


def _direct_weights(X, grid, per_dimension):
    """The weights of the grid points of `_direct_grid`: each value
    x >= low is split between its two neighbouring points, linearly in
    log(x); `pooled[b]` is the largest share a row puts on point b (so
    that ``sum_b pooled[b] R(b)`` bounds every row's ``sum_i x_i R(x_i)``
    for an R varying slowly between points) and, with `per_dimension`,
    `own[j, b]` the largest share a value of column j puts on it (else
    None). In blocks of about 2**17 values (temporaries of about 1 MB)."""
    low, top, h, n_points = grid
    log_top = math.log(top)
    low = np.float64(low)  # compared in float64 with float32 values too
    csr = scipy.sparse.issparse(X)
    n, d = X.shape
    pooled = np.zeros(n_points)
    own = np.zeros(d * n_points) if per_dimension else None
    per_row = X.nnz / max(n, 1) if csr else d
    step = max(1, min(int(2**17 / max(per_row, 1)), 2**17 // n_points))
    for a in range(0, n, step):
        b = min(n, a + step)
        if csr:
            p, q = X.indptr[a], X.indptr[b]
            x, cols = X.data[p:q], X.indices[p:q].astype(np.intp)
            rows = np.repeat(np.arange(b - a), np.diff(X.indptr[a:b + 1]))
            keep = np.flatnonzero(x >= low)
            x, cols, rows = x[keep], cols[keep], rows[keep]
        else:
            keep = np.flatnonzero(X[a:b] >= low)
            x = X[a:b].reshape(-1)[keep]
            rows, cols = np.divmod(keep, d)
        x = np.asarray(x, dtype=np.float64)
        u = np.log(x)
        u -= log_top
        u *= -1 / h  # 0 at top, n_points - 1 at low
        i0 = np.minimum(u.astype(np.intp), max(n_points - 2, 0))
        i1 = np.minimum(i0 + 1, n_points - 1)
        u -= i0
        share1 = np.clip(u, 0.0, 1.0, out=u)
        share1 *= x / top  # in units of the largest value: no overflow
        share0 = x / top - share1
        if per_dimension:
            cols *= n_points
            np.maximum.at(own, cols + i0, share0)
            np.maximum.at(own, cols + i1, share1)
        size = (b - a) * n_points
        rows *= n_points
        block = (np.bincount(rows + i0, share0, minlength=size)
                 + np.bincount(rows + i1, share1, minlength=size))
        np.maximum(pooled, block.reshape(b - a, n_points).max(axis=0), out=pooled)
    return pooled, (own.reshape(d, n_points) if per_dimension else None)


def _direct_choice(weights, h, n_terms):
    """The parameters of each row of `weights` (on the grid points
    t_b = -b h, b = 0, ..., B - 1), as logs relative to the top point:
    chosen among the B + 1 midpoints s_g = (1/2 - g) h to minimise
    ``F = sum_b weights[b] prod_p r_p(t_b)**2``, with
    r_p(t) = tanh((t - s_p) / 2) (that is, (x - k_p) / (x + k_p)); first
    greedily (each new parameter the one that minimises F given the
    previous ones), then by passes of coordinate descent (each parameter
    in turn the best given the others). The midpoints are never on a grid
    point, so F never counts a point as removed exactly, and grows
    smoothly with the distance of a value from its nearest parameters. In
    logs, F normalised at every step: no underflow however many terms."""
    m, n_points = weights.shape
    s = (0.5 - np.arange(n_points + 1)) * h
    t = -np.arange(n_points) * h
    # log r**2 between each candidate and each point: finite, as
    # |s_g - t_b| >= h / 2 > 0
    log_ratio = 2 * np.log(np.abs(np.tanh((s[:, None] - t[None, :]) / 2)))
    ratio = np.exp(log_ratio)
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)

    def best(log_v):
        # the candidate minimising sum_b v_b r(s_g, t_b)**2 (row-wise)
        v = np.exp(log_v - log_v.max(axis=1, keepdims=True))
        return np.argmin(v @ ratio.T, axis=1)

    def log_bound(log_r):
        # log of F relative to sum_b weights[b], row-wise
        log_v = log_w + log_r
        top = log_v.max(axis=1)
        return top + np.log(np.exp(log_v - top[:, None]).sum(axis=1))

    chosen = np.zeros((m, n_terms), dtype=np.intp)
    log_r = np.zeros((m, n_points))
    start = log_bound(log_r)
    n_active = n_terms
    for q in range(n_terms):
        chosen[:, q] = best(log_w + log_r)
        log_r += log_ratio[chosen[:, q]]
        if (log_bound(log_r) - start < -_DIRECT_WINDOW * math.log(2)).all():
            n_active = q + 1  # below float64 rounding: repeat these
            break
    for _ in range(_DIRECT_PASSES):
        changed = False
        log_r = log_ratio[chosen[:, :n_active]].sum(axis=1)
        for p in range(n_active):
            others = log_r - log_ratio[chosen[:, p]]
            g = best(log_w + others)
            changed |= bool((g != chosen[:, p]).any())
            chosen[:, p] = g
            log_r = others + log_ratio[g]
        if not changed:
            break
    # largest first (the order does not change the kernel's approximation),
    # then repeated
    chosen = np.sort(chosen[:, :n_active], axis=1)[:, np.arange(n_terms) % n_active]
    return s[chosen.reshape(-1)].reshape(m, n_terms)


class Chi2ChebyshevMap(_AdditiveMap):
    r"""The Chebyshev (Fourier-cosine) approximation of the additive chi2
    kernel.

    With :math:`a = \log(x)/\pi`, the features (eq. 20 of [1]_, in the
    equivalent form without alternating signs) are

    .. math::

        d_0 = \frac{2x}{x+1}, \quad d_1 = \sqrt{2}\, a\, d_0, \quad
        d_q = \frac{2 a\, d_{q-1} - (q - 2)\, d_{q-2}}{q} \ (q \ge 2),

    the coefficients of the cosine series of eqs. (15)-(18) times
    :math:`\sqrt{x/2}`; :math:`\sum_q d_q(x) d_q(y) = 2xy/(x+y)`. The
    forward recurrence is stable in float64 and float32 from 1e-30 to large
    x. The convergence is only O(1/N); a scale s, with features
    :math:`\sqrt{s}\, d_q(x/s)` (the same kernel, as it is homogeneous),
    centres the series on the data: with ``scale="median"``, `fit` takes s
    as the median non-zero training value, which cuts the error about
    tenfold.

    Parameters
    ----------
    n_terms : int, default=5
        Features per input feature, at most 65536.
    scale : float or "median", default=1.0
        Positive scale s (any positive float: values whose ratio ``x / s``
        is beyond ``2**+-1000`` take their features from the same series
        computed in logs), or "median": `fit` sets it to the median
        non-zero value of the training data. With a float the map learns
        nothing and needs no `fit`.

    Attributes
    ----------
    scale_ : float
        The scale used.
    n_features_in_ : int
        Width d of the training histograms.
    n_features_out_ : int
        ``d * n_terms``.

    See Also
    --------
    Chi2DirectMap : Geometric convergence instead of O(1/N).

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       section 5.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import Chi2ChebyshevMap
    >>> Chi2ChebyshevMap(n_terms=4).transform(np.array([[1.0, 0.0, 4.0]])).round(4)
    array([[ 1.    ,  0.    ,  0.    ,  0.    ,  0.    ,  0.    ,  0.    ,
             0.    ,  1.6   ,  0.9985,  0.4406, -0.2032]])
    """

    _kind = "chebyshev"

    def __init__(self, n_terms=5, *, scale=1.0):
        self.n_terms = n_terms
        self.scale = scale

    @property
    def _stateless(self):
        return not (isinstance(self.scale, str) and self.scale == "median")

    def _state(self, X):
        n_terms = check_scalar(self.n_terms, "n_terms", kind="int", low=1,
                               high=_MAX_TERMS)
        if self._stateless:
            scale = check_scalar(self.scale, "scale", low=0.0, low_inclusive=False)
        else:
            values = _median_values(X)
            with np.errstate(over="ignore"):
                scale = float(np.median(values))
            if not math.isfinite(scale):  # the mean of the two middle values
                scale = 2 * float(np.median(values / 2))
        return {"scale_": scale, "_scale": scale, "_n_terms": n_terms,
                "_params": np.zeros((1, 1)), "_width": None}

    def _expand(self, X, state, n_threads):
        # The compiled expansion computes z = x / scale and 2 z: values with
        # z beyond 2**+-_CHEBYSHEV_WINDOW (only with extreme scales or data)
        # take their features from the same recurrence in logs, here.
        values, scale = _values(X), state["scale_"]
        lo = math.ldexp(scale, -_CHEBYSHEV_WINDOW)
        hi = math.ldexp(scale, _CHEBYSHEV_WINDOW) if math.frexp(
            scale)[1] + _CHEBYSHEV_WINDOW <= 1024 else math.inf
        low, top = _positive_range(values)
        if lo <= low and top <= hi:
            return super()._expand(X, state, n_threads)
        v64 = values.astype(np.float64, copy=False)
        far = np.flatnonzero((v64 > 0) & ((v64 < lo) | (v64 > hi)))
        near = values.copy()
        near[far] = 0
        Z = super()._expand(_with_values(X, near), state, n_threads)
        _rows(Z, state["_n_terms"])[far] = _chebyshev_in_logs(
            v64[far], scale, state["_n_terms"])
        return Z

    def _array_expand(self, library, X):
        state = self._expansion(X.shape[1])
        return _array_maps.chebyshev(library, X, state["scale_"], state["_n_terms"])


def _chebyshev_in_logs(x, scale, n_terms):
    """The Chebyshev features ``sqrt(s) d_q(x / s)`` of positive values x,
    without forming x / s (for the ratios beyond the float range): with
    ``L = log(x / s)`` and ``a = L / pi``, ``sqrt(s) d_0 = sqrt(x)
    sech(L / 2)``, taken in logs, times ``r_q = d_q / d_0``, which follows
    the recurrence of d_q from ``r_0 = 1``; r is carried with a separate
    power-of-two exponent so that it neither overflows nor underflows."""
    L = np.log(x) - math.log(scale)
    a = L / math.pi
    absL = np.abs(L)
    # log(sqrt(x) sech(L / 2)) = log(x) / 2 + log 2 - |L| / 2 - log1p(e^-|L|)
    log_scale = 0.5 * np.log(x) + math.log(2.0) - absL / 2 - np.log1p(np.exp(-absL))
    out = np.empty((len(x), n_terms))
    out[:, 0] = np.exp(log_scale)
    if n_terms == 1:
        return out
    r0, r1 = np.ones_like(a), math.sqrt(2.0) * a
    step = math.log(2.0) * 500
    for q in range(1, n_terms):
        if q >= 2:
            r0, r1 = r1, (2 * a * r1 - (q - 2) * r0) / q
        big = np.abs(r1) > 2.0**500
        if big.any():  # renormalise: r0, r1 / 2**500, the log scale + 500 ln 2
            r0[big] *= 2.0**-500
            r1[big] *= 2.0**-500
            log_scale[big] += step
        with np.errstate(divide="ignore"):  # r1 == 0: a feature of 0
            out[:, q] = np.sign(r1) * np.exp(log_scale + np.log(np.abs(r1)))
    return out
