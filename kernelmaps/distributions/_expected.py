"""Expected kernels between Gaussian distributions (support measure
machines) and level-2 kernels on mean embeddings."""

import functools

import numpy as np

from .. import _array_api
from .._engine.layout import power_of_two_exponent
from .._gamma import resolve_gamma
from .._hints import takes_hints
from .._parallel import check_progress, resolve_workers
from .._probes import as_float_array
from .._spec import kernel_function
from .._validation import (
    DTYPE_DOC,
    cast_output,
    check_array_matrix,
    check_choice,
    check_dtype,
    check_finite_output,
    check_gaussians,
    check_kernel_matrix,
    check_scalar,
    fill_docs,
)
from .._warnings import warn_uninformative
from . import _array_expected
from ._specs import MAX_DEGREE, ExpectedSpec, _all_equal

__all__ = ["gaussian_expected_kernel", "level2_kernel"]

_POLYNOMIAL_OVERFLOW = ("the polynomial kernel values overflow float64 for this "
                        "input; scale K down or use smaller gamma2/coef0/degree")


def _array_gaussian_expected_kernel(library, means, covs, means2=None, covs2=None,
                                    *, kernel="rbf", gamma=None, degree=2,
                                    coef0=1.0, workers=None, progress=False,
                                    dtype=None):
    """`gaussian_expected_kernel` of arrays of `library`, computed by it on
    their device (`_array_expected.expected_kernel`), with the checks of
    the NumPy path there (`_array_expected.check_gaussians`); gamma None:
    the median rule on the host, on the rows it samples; `workers` and
    `progress` checked, unused."""
    xp = library.xp
    spec = ExpectedSpec("expected", {"kernel": kernel, "gamma": gamma,
                                     "degree": degree, "coef0": coef0})
    kernel, given = spec.params["kernel"], spec.params["gamma"]
    check_progress(progress)
    resolve_workers(workers)
    m1, c1, m2, c2, floats, symmetric = _check_gaussian_pair(
        means, covs, means2, covs2,
        functools.partial(_array_expected.check_gaussians, library))
    gamma = resolve_gamma(
        given, kernel, _array_expected.median_sample(m2)
        if given is None and kernel == "rbf" else np.empty((0, m2.shape[1])),
        data="means" if symmetric else "means2")
    out = _array_api.result_dtype(library, dtype, *floats)
    work = _array_api.result_dtype(library, None, *floats)
    A, B = ((xp.astype(m, work), xp.astype(c, work)) for m, c in ((m1, c1), (m2, c2)))
    K = _array_expected.expected_kernel(library, A, None if symmetric else B,
                                        kernel, gamma, degree, coef0)
    names = _names(symmetric)
    if not library.all_finite(K):
        raise ValueError(_overflow_message(kernel, names))
    _array_api.warn_uninformative(
        library, K, symmetric, f"{kernel} expected", "Gaussians of " + names,
        given if kernel == "rbf" else None,
        (lambda: _array_expected.all_equal(library, (m1, m2), (c1, c2)))
        if kernel == "rbf" else None)
    return xp.astype(K, out, copy=False)


@takes_hints()
@kernel_function("expected")
@_array_api.dispatched(_array_gaussian_expected_kernel, "means", "covs", "means2",
                     "covs2")
def gaussian_expected_kernel(means, covs, means2=None, covs2=None, *, kernel="rbf",
                             gamma=None, degree=2, coef0=1.0, workers=None,
                             progress=False, dtype=None):
    r"""Expected kernel between Gaussian distributions, in closed form.

    ``K[i, j] = E k(x, y)`` for independent :math:`x \sim N(m_i, S_i)` and
    :math:`y \sim N(m'_j, S'_j)`, the inner product of the kernel mean
    embeddings of the two Gaussians [1]_. With :math:`\Delta = m_i - m'_j`
    and :math:`S = S_i + S'_j`:

    - ``"rbf"``, :math:`k = \exp(-\gamma \|x - y\|^2)`:
      :math:`\det(I + 2\gamma S)^{-1/2}
      \exp(-\gamma \Delta^T (I + 2\gamma S)^{-1} \Delta)`;
    - ``"linear"``, :math:`k = \langle x, y \rangle`: :math:`m_i \cdot m'_j`;
    - ``"polynomial"``, :math:`k = (\gamma \langle x, y \rangle + c)^p` for
      p = 2 or 3, from the moments of :math:`u = \langle x, y \rangle`:
      :math:`E u = m \cdot m'`, :math:`E u^2 = \operatorname{tr}(A A')` with
      :math:`A = S + m m^T`, and (Isserlis)
      :math:`E u^3 = a^3 + 3a (m^T S' m + m'^T S m' + \operatorname{tr}(S S'))
      + 6\, m^T S' S m'` with :math:`a = m \cdot m'`.

    With zero covariances every form reduces to the kernel between the
    means (the flexible SVM of [1]_ is this with per-point covariances).

    For ``"rbf"`` with full covariances each pair costs one factorisation of
    :math:`I + 2\gamma S` (about :math:`d^3/3` multiply-adds), with diagonal
    or isotropic ones a product over the coordinates (about :math:`4d`
    operations), both compiled and threaded; without a second collection
    only the upper triangle is computed and mirrored, so the result is
    exactly symmetric.

    Parameters
    ----------
    means : array_like, shape (n, d)
    covs : array_like, shape (n, d, d), (n, d) or (n,)
        Full covariance matrices, diagonals, or isotropic variances; PSD.
    means2, covs2 : array_like, optional
        The second collection; None means the first.
    kernel : {"rbf", "linear", "polynomial"}, default="rbf"
    gamma : float, optional
        Positive kernel parameter; None means the median heuristic on the
        means of the second collection (the first when it is None) for
        "rbf", ``1 / d`` for "polynomial" (see `median_heuristic`).
    degree : {2, 3}, default=2
        Degree of the polynomial kernel (an int in [1, 2**31 - 1] for the
        other kernels, which ignore it).
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    workers : int, optional
        Threads for ``"rbf"`` (the other kernels are NumPy matrix products,
        threaded by the BLAS); None or -1 means all cores. Results are
        bit-identical for every number of threads.
    progress : bool, default=False
        Show a progress bar (needs tqdm) over the pairs of the ``"rbf"``
        computation.
    {dtype}
        The floating inputs are `means`, `covs`, `means2` and `covs2`.

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        Finite: values that overflow float64 (means or covariances too
        large for the kernel) raise a ValueError.

    See Also
    --------
    level2_kernel : Kernels on top of these inner products.
    sum_match_kernel : The same embedding inner product for samples.

    References
    ----------
    .. [1] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning
       from Distributions via Support Measure Machines", Advances in Neural
       Information Processing Systems (NIPS), 2012, table 1.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import gaussian_expected_kernel
    >>> means = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> gaussian_expected_kernel(means, np.array([0.0, 0.5]), gamma=0.5).round(4)
    array([[1.    , 0.4777],
           [0.4777, 0.5   ]])
    """
    spec = ExpectedSpec("expected", {"kernel": kernel, "gamma": gamma,
                                     "degree": degree, "coef0": coef0})
    kernel, given = spec.params["kernel"], spec.params["gamma"]
    progress = check_progress(progress)
    n_threads = resolve_workers(workers)
    m1, c1, m2, c2, floats, symmetric = _check_gaussian_pair(means, covs, means2,
                                                             covs2)
    gamma = resolve_gamma(given, kernel, m2,
                          data="means" if symmetric else "means2")
    out = check_dtype(dtype, *floats)
    K = next(spec.blocks((m1, c1), None if symmetric else (m2, c2), [gamma],
                         n_threads, progress))
    names = _names(symmetric)
    check_finite_output(K, _overflow_message(kernel, names))
    warn_uninformative(
        K, symmetric, f"{kernel} expected", "Gaussians of " + names,
        given if kernel == "rbf" else None,
        (lambda: _all_equal((m1, m2), (c1, c2))) if kernel == "rbf" else None)
    return cast_output(K, out, names)


def _check_gaussian_pair(means, covs, means2, covs2, check=check_gaussians):
    """The Gaussians of `gaussian_expected_kernel` checked by `check`
    (`check_gaussians`'s signature): ``(m1, c1, m2, c2, floats,
    symmetric)``, the second collection the first where `symmetric`
    (means2 and covs2 None), `floats` the arrays as given (for
    `check_dtype`)."""
    m1, c1, floats = check(means, covs, "means", "covs")
    if means2 is None and covs2 is None:
        return m1, c1, m1, c1, floats, True
    if means2 is None or covs2 is None:
        raise ValueError("means2 and covs2 must be given together")
    m2, c2, floats2 = check(means2, covs2, "means2", "covs2")
    if m2.shape[1] != m1.shape[1]:
        raise ValueError(
            f"Incompatible dimension: means has {m1.shape[1]} features while "
            f"means2 has {m2.shape[1]}"
        )
    return m1, c1, m2, c2, floats + floats2, False


def _names(symmetric):
    return "means and covs" if symmetric else "means, covs, means2 and covs2"


def _overflow_message(kernel, names):
    return (f"the {kernel} expected kernel values of {names} overflow float64; "
            f"scale them down (or use a smaller gamma or coef0)")


def _array_level2_kernel(library, K, diag_X, diag_Y=None, *, kind="rbf",
                         gamma2=1.0, degree=2, coef0=1.0, dtype=None):
    """`level2_kernel` of arrays of `library`, computed by it on their
    device (`_array_expected.level2`), with the checks of the NumPy path
    there (booleans copied)."""
    xp = library.xp
    kind = check_choice(kind, "kind", ("linear", "polynomial", "rbf", "nrbf"))
    arrays = [check_array_matrix(library, K, "K", square=False)] + [
        None if a is None else _array_api.as_float(library, a, name)
        for a, name in ((diag_X, "diag_X"), (diag_Y, "diag_Y"))]
    out = _array_api.result_dtype(library, dtype, *arrays)
    work = _array_api.result_dtype(library, None, *arrays)
    K, dx, dy = (None if a is None else xp.astype(a, work) for a in arrays)
    dy = dx if dy is None else dy
    gamma2, degree, coef0 = _level2_checks(
        K.shape, dx.shape, dy.shape, kind, gamma2, degree, coef0,
        lambda test: library.holds(xp.all(test(xp, dx)) & xp.all(test(xp, dy))))
    K2 = _array_expected.level2(library, K, dx, dy, kind, gamma2, degree, coef0)
    if kind == "polynomial" and not library.all_finite(K2):
        raise ValueError(_POLYNOMIAL_OVERFLOW)
    return xp.astype(K2, out, copy=False)


@_array_api.dispatched(_array_level2_kernel, "K", "diag_X", "diag_Y")
def level2_kernel(K, diag_X, diag_Y=None, *, kind="rbf", gamma2=1.0, degree=2,
                  coef0=1.0, dtype=None):
    r"""A kernel on mean embeddings from their inner products.

    With ``K[i, j] = <mu_i, nu_j>``, ``diag_X[i] = <mu_i, mu_i>`` and
    ``diag_Y[j] = <nu_j, nu_j>`` (the level-1 kernel, e.g.
    `sum_match_kernel` or `gaussian_expected_kernel`), the level-2 kernels
    of [1]_:

    - ``"linear"``: ``K``;
    - ``"polynomial"``: ``(gamma2 K + coef0) ** degree``;
    - ``"rbf"``: ``exp(-gamma2 ||mu_i - nu_j||^2)``, with the squared
      distance ``diag_X[i] + diag_Y[j] - 2 K[i, j]`` (roundoff below 0
      clipped);
    - ``"nrbf"``: the same on the normalised embeddings
      ``mu / ||mu||``: ``exp(-gamma2 (2 - 2 K / sqrt(diag_X diag_Y)))``.

    Parameters
    ----------
    K : array_like, shape (n, m)
    diag_X : array_like, shape (n,)
        Positive (for "nrbf") or non-negative squared norms.
    diag_Y : array_like, shape (m,), optional
        None means `diag_X` (K square).
    kind : {"linear", "polynomial", "rbf", "nrbf"}, default="rbf"
    gamma2 : float, default=1.0
        Positive scale.
    degree : int, default=2
        Degree of "polynomial", in [1, 2**31 - 1].
    coef0 : float, default=1.0
    {dtype}
        The floating inputs are `K`, `diag_X` and `diag_Y`.

    Returns
    -------
    K2 : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        Finite: a polynomial kernel whose values overflow float64 raises a
        ValueError, and the other kinds are computed without overflow.

    See Also
    --------
    mmd_kernel : The "rbf" level-2 kernel of sets, computed directly.

    References
    ----------
    .. [1] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning
       from Distributions via Support Measure Machines", Advances in Neural
       Information Processing Systems (NIPS), 2012, section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import level2_kernel
    >>> K = np.array([[1.0, 0.5], [0.5, 2.0]])
    >>> level2_kernel(K, np.diag(K), kind="rbf", gamma2=0.5).round(4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    kind = check_choice(kind, "kind", ("linear", "polynomial", "rbf", "nrbf"))
    K, dx, dy = _level2_arrays(K, diag_X, diag_Y)
    out = check_dtype(dtype, K, dx, dy)
    K, dx, dy, gamma2, degree, coef0 = _level2_params(K, dx, dy, kind, gamma2,
                                                      degree, coef0)
    K2 = _level2(K, dx, dy, kind, gamma2, degree, coef0)
    equal = {  # whether the distances of the kernel are all 0
        "rbf": lambda: np.all(dx[:, None] == K) and np.all(dy[None, :] == K),
        "nrbf": lambda: np.all(K / np.sqrt(dx)[:, None] / np.sqrt(dy) == 1)}
    warn_uninformative(K2, diag_Y is None, f"level-2 {kind}", "embeddings of K",
                       gamma2 if kind in equal else None, equal.get(kind))
    return cast_output(K2, out, "K" if diag_Y is None else "K, diag_X and diag_Y")


def _level2_arrays(K, diag_X, diag_Y):
    """The arrays of `level2_kernel` checked as given (float32 kept): K,
    diag_X, diag_Y (None where it is)."""
    K = check_kernel_matrix(K, "K", square=False, keep_float32=True)
    dx = as_float_array(diag_X, "diag_X")
    return K, dx, None if diag_Y is None else as_float_array(diag_Y, "diag_Y")


def _level2_params(K, dx, dy, kind, gamma2, degree, coef0):
    """The checked arrays of `_level2_arrays` in float64 (dy None: dx),
    checked against each other and `kind` (`_level2_checks`), and the
    checked scalars: ``(K, dx, dy, gamma2, degree, coef0)``."""
    K = K.astype(np.float64, copy=False)
    dx = dx.astype(np.float64, copy=False)
    dy = dx if dy is None else dy.astype(np.float64, copy=False)
    gamma2, degree, coef0 = _level2_checks(
        K.shape, dx.shape, dy.shape, kind, gamma2, degree, coef0,
        lambda test: test(np, dx).all() and test(np, dy).all())
    return K, dx, dy, gamma2, degree, coef0


# The tests of the values of diag_X and diag_Y, ``test(xp, a)``.
_FINITE, _NONNEGATIVE, _POSITIVE = (lambda xp, a: xp.isfinite(a),
                                    lambda xp, a: a >= 0, lambda xp, a: a > 0)


def _level2_checks(shape, dx_shape, dy_shape, kind, gamma2, degree, coef0, holds):
    """The checks of `level2_kernel` of K, diag_X and diag_Y (of any
    library) by their shapes and, ``holds(test)``, whether a test of
    their values (``test(xp, a)``: `_FINITE`, ...) holds for all values
    of diag_X and diag_Y: the checked ``(gamma2, degree, coef0)``."""
    shape, dx_shape, dy_shape = tuple(shape), tuple(dx_shape), tuple(dy_shape)
    if dx_shape != (shape[0],) or dy_shape != (shape[1],):
        raise ValueError(
            f"diag_X and diag_Y must have shapes ({shape[0]},) and "
            f"({shape[1]},) for K of shape {shape}; got {dx_shape} and {dy_shape}"
        )
    if not holds(_FINITE):
        raise ValueError("diag_X and diag_Y must be finite")
    gamma2 = check_scalar(gamma2, "gamma2", low=0.0, low_inclusive=False)
    degree = check_scalar(degree, "degree", kind="int", low=1, high=MAX_DEGREE)
    coef0 = check_scalar(coef0, "coef0")
    if kind == "rbf" and not holds(_NONNEGATIVE):
        raise ValueError("diag_X and diag_Y must be >= 0 (squared norms)")
    if kind == "nrbf" and not holds(_POSITIVE):
        raise ValueError('diag_X and diag_Y must be > 0 for kind="nrbf"')
    return gamma2, degree, coef0


def _level2(K, dx, dy, kind, gamma2, degree, coef0):
    """The level-2 kernel of validated float64 input (`_level2_params`), in
    float64."""
    if kind == "linear":
        return K.copy()
    if kind == "polynomial":
        with np.errstate(over="ignore", invalid="ignore"):
            K2 = (gamma2 * K + coef0) ** degree
        if not np.isfinite(K2).all():
            raise ValueError(_POLYNOMIAL_OVERFLOW)
        return K2
    if kind == "rbf":
        top = max(np.abs(K).max(), dx.max(), dy.max())
        if top <= 2.0**1000:
            with np.errstate(over="ignore"):  # gamma2 * d2 beyond: exp(-inf) = 0
                return np.exp(-gamma2 * np.maximum(
                    dx[:, None] + dy[None, :] - 2 * K, 0.0))
        # Beyond: the squared distances at a power-of-two scale (exact), so
        # that dx + dy - 2 K neither overflows nor gives inf - inf.
        e = power_of_two_exponent(top, -2)
        sq = np.maximum(np.ldexp(dx, e)[:, None] + np.ldexp(dy, e)[None, :]
                        - 2 * np.ldexp(K, e), 0.0)
        with np.errstate(over="ignore"):
            return np.exp(-np.ldexp(gamma2 * sq, -e))
    # sqrt(dx) sqrt(dy): the product dx dy could overflow or underflow
    with np.errstate(over="ignore"):
        cosine = K / (np.sqrt(dx)[:, None] * np.sqrt(dy)[None, :])
        return np.exp(-gamma2 * np.maximum(2.0 - 2.0 * cosine, 0.0))


fill_docs((gaussian_expected_kernel, level2_kernel), dtype=DTYPE_DOC)
