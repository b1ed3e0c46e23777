"""The specs of the histogram kernels (`kernelmaps._spec`): the additive
kernels and exp-chi2, on histograms checked once, a block at a time. The
public functions (`_exact`) run them, and the tools over objects
(`mmd_test`, `NystroemMap`) iterate them: each kernel computed here
only."""

import functools
import math

import numpy as np
import scipy.sparse

from .. import _array_api
from .._engine.additive import additive_sums
from .._engine.layout import row_blocks
from .._parallel import resolve_workers
from .._spec import DistanceSpec, Spec, register
from .._validation import check_histograms, check_scalar
from .._warnings import warn_uninformative

__all__ = ["AdditiveSpec", "ExpChi2Spec"]


def check_beta(beta):
    """`exp_chi2_kernel`'s scale, checked."""
    return check_scalar(beta, "beta", low=0.0, low_inclusive=False)


def chi2_distance_block(X, Y, half, n_threads):
    """The chi2 distances between the rows of checked X and Y (None: X),
    float64, unchecked (``inf`` where they overflow), from `half`, their
    `chi2_half` (in place)."""
    D, levels = _scaled_chi2_distance(X, Y, half, n_threads)
    if levels is not None:
        with np.errstate(over="ignore"):
            for a, b in row_blocks(D):
                np.ldexp(D[a:b], _pair_levels(levels, a, b), out=D[a:b])
    return D


def rows_equal(X, Y):
    """Whether the rows of checked X and Y (None: X), dense or CSR, are all
    one histogram (their chi2 distances all 0)."""
    first = X[[0]]
    for A in (X, X if Y is None else Y):
        repeated = first[np.zeros(A.shape[0], dtype=np.intp)]
        if (repeated != A).sum() if scipy.sparse.issparse(A) else not np.all(
                repeated == A):
            return False
    return True


def chi2_half(X, Y, n_threads, progress=False):
    """The call (a `functools.partial`) of the engine's sums of the chi2
    kernel of X and Y, K / 2: the chi2 distances' first part
    (`_scaled_chi2_distance`)."""
    return functools.partial(additive_sums, X, Y, "chi2", n_threads, progress,
                             "chi2 distances")


def _scaled_chi2_distance(X, Y, half, n_threads):
    """The chi2 distances of validated X and Y from `half` (`chi2_half`'s
    result, replaced), each pair's times 2**-e[i, j], and the levels that
    give e (`_pair_levels`), or None where every e is 0.

    e[i, j] is the larger of the levels of rows i and j (`_row_sums`): 0
    unless the row's largest value is beyond 2**_SUM_TOP or below
    2**-_SUM_BOTTOM; the pair's row sums and kernel are taken times
    2**-e[i, j] (the distance is homogeneous of degree 1), so that no row
    sum overflows before the distance would, the distance of two rows of
    values below the normal range is rounded once (when it is scaled
    back), and each pair's value depends on its own rows only (a block of
    a lazy call gives the values of the whole call)."""
    symmetric = Y is None
    ex, sx = _row_sums(X)
    ey, sy = (ex, sx) if symmetric else _row_sums(Y)
    levels = (ex, ey) if ex.any() or ey.any() else None
    # D = (sx[i] + sy[j]) / 2 - 2 half[i, j], in place of `half`, a block
    # of rows at a time (whole-array passes held Ctrl-C for seconds at
    # 20,000 rows); the pairs whose kernel overflowed float64, or whose
    # rows are both below the normal range, again at their level, below.
    D = half
    redo_rows, redo_cols = [], []
    for a, b in row_blocks(D):
        if levels is None:
            D[a:b] = 0.5 * (sx[a:b, None] + sy[None, :]) - 2.0 * half[a:b]
        else:
            e = _pair_levels(levels, a, b)
            i, j = np.nonzero(np.isinf(half[a:b]) | (e < 0))
            redo_rows.append(i + a)
            redo_cols.append(j)
            D[a:b] = 0.5 * (np.ldexp(sx[a:b, None], ex[a:b, None] - e)
                            + np.ldexp(sy[None, :], ey[None, :] - e)
                            ) - 2.0 * np.ldexp(half[a:b], -e)
        np.maximum(D[a:b], 0.0, out=D[a:b])
    if redo_rows:
        rows, cols = np.concatenate(redo_rows), np.concatenate(redo_cols)
        if rows.size:
            _redo_at_level(D, X, Y, levels, sx, sy, (rows, cols), n_threads)
    if symmetric:
        np.fill_diagonal(D, 0.0)
    return D, levels


def _row_sums(A):
    """Each row's level e (0 unless its largest value is beyond
    2**_SUM_TOP, e > 0, or below 2**-_SUM_BOTTOM, e < 0: then that value
    times 2**-e is in [1/2, 1)) and its sum times 2**-e (float64)."""
    if scipy.sparse.issparse(A):
        top = np.asarray(A.max(axis=1).toarray(), dtype=np.float64).ravel()
    else:
        top = A.max(axis=1, initial=0.0).astype(np.float64)
    t = np.frexp(top)[1]
    e = np.where(t > _SUM_TOP, t - _SUM_TOP,
                 np.where((top > 0) & (t < -_SUM_BOTTOM), t, 0))
    if e.any():
        A = _ldexp(A, -(np.repeat(e, np.diff(A.indptr)) if scipy.sparse.issparse(A)
                        else e[:, None]))
    # in float64: float32 sums of values near the top of float32 overflow
    if scipy.sparse.issparse(A):
        return e, np.asarray(A.astype(np.float64).sum(axis=1)).ravel()
    return e, A.sum(axis=1, dtype=np.float64)


def _pair_levels(levels, a, b):
    """e[i, j] = max(ex[i], ey[j]) for the rows a <= i < b."""
    ex, ey = levels
    return np.maximum.outer(ex[a:b], ey)


def _redo_at_level(D, X, Y, levels, sx, sy, pairs, n_threads):
    """The distances (times 2**-e) of the `pairs`, from their rows times
    2**-e (one call per level e)."""
    ex, ey = levels
    Y = X if Y is None else Y
    rows, cols = pairs
    e = np.maximum(ex[rows], ey[cols])
    for level in np.unique(e):
        at = e == level
        i, ri = np.unique(rows[at], return_inverse=True)
        j, cj = np.unique(cols[at], return_inverse=True)
        half = additive_sums(_ldexp(X[i], -level), _ldexp(Y[j], -level), "chi2",
                             n_threads)
        value = 0.5 * (np.ldexp(sx[i], ex[i] - level)[ri]
                       + np.ldexp(sy[j], ey[j] - level)[cj]) - 2.0 * half[ri, cj]
        D[rows[at], cols[at]] = np.maximum(value, 0.0)


# A row whose largest value is beyond 2**_SUM_TOP is scaled down (by its
# level) before its sum in the chi2 distance: sums of up to 2**40 such
# values stay finite. One whose largest value is below 2**-_SUM_BOTTOM is
# scaled up to 1: a pair of such rows (their distance below 2**-920 or so,
# where its roundings are near the subnormal range) is taken at its scale.
_SUM_TOP = 980
_SUM_BOTTOM = 960


def _ldexp(A, e):
    """Histograms `A` times 2**e (a new array or CSR matrix)."""
    if scipy.sparse.issparse(A):
        return scipy.sparse.csr_matrix((np.ldexp(A.data, e), A.indices, A.indptr),
                                       shape=A.shape)
    return np.ldexp(A, e)


def _sqrt(A):
    """Element-wise square root, dense or sparse (zeros stay zero)."""
    return A.sqrt() if scipy.sparse.issparse(A) else np.sqrt(A)


class RowSpec(Spec):
    """A kernel of histograms (the rows of a dense array or CSR matrix)."""

    kind = "rows"

    def check(self, X, name="X", lazy=False):
        """`check_histograms` (with `lazy`, a Dask array stays lazy)."""
        return check_histograms(X, name, lazy=lazy)

    def check_array(self, library, X, name="X"):
        """`check` for an array of another library (`_array_api`)."""
        return _array_api.check_rows(library, X, name, nonnegative=True)

    def pool(self, X, Y):
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X and Y must hold histograms of the same number "
                             f"of bins, got {X.shape[1]} and {Y.shape[1]}")
        if scipy.sparse.issparse(X) or scipy.sparse.issparse(Y):
            return scipy.sparse.vstack([scipy.sparse.csr_array(X),
                                        scipy.sparse.csr_array(Y)],
                                       format="csr")
        return np.concatenate([X, Y])

    def value_keys(self, Z):
        return Z

    def embedding(self, X, params, rng):
        """The square roots of the histograms (their Euclidean distance is
        the Hellinger distance)."""
        return X.sqrt() if scipy.sparse.issparse(X) else np.sqrt(X)


@register("chi2", "intersection", "hellinger", "js")
class AdditiveSpec(RowSpec):
    """The additive kernels "chi2", "intersection", "hellinger", "js"."""

    def blocks(self, A, B, scales, n_threads, progress=False):
        """The kernel between the rows of A and B (None: A, the symmetric
        block), float64, unchecked (``inf`` where a value overflows): what
        the ``*_kernel`` functions return."""
        kind = self.name
        if kind == "hellinger":
            yield additive_sums(_sqrt(A), None if B is None else _sqrt(B),
                                "product", n_threads, progress,
                                "hellinger kernel")
            return
        K = additive_sums(A, B, kind, n_threads, progress, f"{kind} kernel")
        if kind == "chi2":  # the engine's sums are K / 2
            with np.errstate(over="ignore"):  # reported by the caller
                for a, b in row_blocks(K):  # (Ctrl-C stops between blocks)
                    K[a:b] *= 2.0
        yield K

    def array_block(self, library, A, B):
        """`blocks`' values computed by the library of A and B (None: A)
        on their device (`_array_api`), differentiable: the sums of the
        one-dimensional kernel (`_ARRAY_TERMS`)."""
        xp = library.xp
        if self.name == "hellinger":
            K = xp.sqrt(A) @ xp.matrix_transpose(xp.sqrt(A if B is None else B))
            return K if B is not None else _array_api.symmetrised(library, K)
        term = _ARRAY_TERMS[self.name]
        return _array_api.pair_sums(library, A, B, lambda x, y: term(xp, x, y))


def _chi2_term(xp, x, y):
    """``2 x y / (x + y)`` (0 where ``x + y = 0``), as ``2 min (max / s)``:
    the same whichever comes first, no product beyond the float range and
    no quotient below it; its gradient 0, not NaN, at 0."""
    s = x + y
    positive = s > 0
    return xp.where(positive, 2 * xp.minimum(x, y)
                    * (xp.maximum(x, y) / xp.where(positive, s, 1)), 0)


def _js_term(xp, x, y):
    """``x/2 log2((x + y)/x) + y/2 log2((x + y)/y)``, ``0 log 0 = 0``.
    Each half ``v/2 log2(1 + o/v)`` is, for ``r = o/v <= 1``, ``o/2
    g(r) / ln 2`` with ``g(r) = log1p(r) / r`` (in [ln 2, 1]: no quotient
    below the float range), and for ``r > 1`` ``v/2 log1p(r) / ln 2``, or
    ``v/2 (log2(v + o) - log2(v))`` where r overflows."""
    terms = []
    for v, o in ((x, y), (y, x)):
        positive = v > 0
        v1 = xp.where(positive, v, 1)
        r = o / v1
        small = (r <= 1) & (r > 0)  # (r = 0 where o / v underflows: g = 1)
        r_small = xp.where(small, r, 1)
        near = o * xp.where(small, xp.log1p(r_small) / r_small, 1)
        finite = xp.isfinite(r)
        far = xp.where(finite, v * xp.log1p(xp.where(finite, r, 0)),
                       v * (xp.log(v1 + o) - xp.log(v1)))
        half = xp.where(r <= 1, near, far)
        terms.append(xp.where(positive, half * (0.5 / math.log(2)), 0))
    return terms[0] + terms[1]


def _distance_term(xp, x, y):
    """``(x - y)^2 / (x + y) / 2`` (0 where ``x + y = 0``): the chi2
    distance's, as ``t (t / s) / 2``, no square beyond float64."""
    s, t = x + y, x - y
    positive = s > 0
    return xp.where(positive, t * (t / xp.where(positive, s, 1)) / 2, 0)


_ARRAY_TERMS = {"chi2": _chi2_term, "js": _js_term,
                "intersection": lambda xp, x, y: xp.minimum(x, y)}


@register("exp_chi2")
class ExpChi2Spec(DistanceSpec, RowSpec):
    """`exp_chi2_kernel`: ``exp(-beta chi2_distance)``; its scale is
    beta."""

    takes = ("beta",)
    scale = "beta"
    default_scale = 1.0


    def check_params(self, params):
        if "beta" in params:
            params = {**params, "beta": check_beta(params["beta"])}
        return params

    def distance_call(self, A, B, n_threads, progress=False):
        """The chi2 distances (`chi2_distance`'s)."""
        return chi2_half(A, B, n_threads, progress), functools.partial(
            chi2_distance_block, A, B, n_threads=n_threads)

    def blocks(self, A, B, scales, n_threads, progress=False):
        """``exp(-beta D)`` from the chi2 distances at each pair's
        power-of-two level e (`_scaled_chi2_distance`) as
        ``exp(-ldexp(beta D, e))``: what `exp_chi2_kernel` returns, one
        array (the distances' own for one scale)."""
        D, levels = _scaled_chi2_distance(
            A, B, chi2_half(A, B, n_threads, progress)(), n_threads)
        K = D if len(scales) == 1 else np.empty_like(D)
        for beta in scales:
            # beta * D beyond float64 (a huge beta, or distances that
            # overflow): exp(-inf) = 0, the kernel value in float64
            with np.errstate(over="ignore"):
                for a, b in row_blocks(D):  # (Ctrl-C stops between blocks)
                    e = 0 if levels is None else _pair_levels(levels, a, b)
                    np.exp(-np.ldexp(beta * D[a:b], e), out=K[a:b])
            yield K

    def array_block(self, library, A, B, distances=False):
        """`exp_chi2_kernel`'s values (`distances`: `chi2_distance`'s)
        computed by the library of A and B (None: A) on their device
        (`_array_api`), differentiable."""
        xp = library.xp
        D = _array_api.pair_sums(library, A, B,
                                 lambda x, y: _distance_term(xp, x, y))
        return D if distances else xp.exp(-self.function_scale(self.params) * D)

    def array_distance(self, A, B):
        """The chi2 distances (`chi2_distance`'s): `array_block`'s where the
        arrays' library computes, else the compiled engine's on their NumPy
        views (a tensor without a gradient on the CPU), in their library."""
        library = _array_api.library_of(A=A, B=B)
        if library.native:
            return self.array_block(library, A, B, distances=True)
        return library.from_numpy(self.distance(
            library.to_numpy(A), None if B is None else library.to_numpy(B),
            resolve_workers(None)))

    def function_gram(self, A, params, n_threads, between):
        """As `Spec`'s (beta has a default, 1), with the warning of
        `exp_chi2_kernel`."""
        K = self.function_block(A, None, params, n_threads)
        if between is not None:
            warn_uninformative(K, True, self.name, between,
                               self.function_scale(params),
                               lambda: rows_equal(A, None), scale="beta")
        return K, params
