"""Exact additive kernels between histograms: chi2, intersection,
Hellinger, Jensen-Shannon, and the chi2 distance and exp-chi2 kernel."""

import functools

import numpy as np
import scipy.sparse

from .. import _array_api
from .._hints import takes_hints
from .._lazy import is_lazy, lazy_gram
from .._parallel import check_progress, resolve_workers
from .._probes import is_dask_array
from .._spec import kernel_function, spec_for
from .._validation import (
    DTYPE_DOC,
    cast_output,
    check_dtype,
    check_finite_output,
    fill_docs,
    pair_names,
)
from .._warnings import warn_uninformative
from ._specs import rows_equal

__all__ = [
    "additive_chi2_kernel",
    "chi2_distance",
    "exp_chi2_kernel",
    "hellinger_kernel",
    "intersection_kernel",
    "js_kernel",
]

_PARAMETERS = """X : array_like or sparse matrix, shape (n, d)
        Non-negative histograms, one per row: dense, or `scipy.sparse`
        (CSR is used as it is, other formats are converted). A 2-D Dask
        array gives a lazy Dask array (see Notes); an array of another
        library (PyTorch, JAX, CuPy, ...) one of that library, on its
        device (see Notes).
    Y : array_like or sparse matrix, shape (m, d), optional
        Second set of histograms; None means `X` (each unordered pair once,
        exactly symmetric result).
    workers : int, optional
        Threads; None or -1 means all cores. Results are bit-identical for
        every number of threads.
    {dtype}
    progress : bool, default=False
        Show a progress bar over the pairs of rows (needs tqdm)."""

_NOTES = """float32 input (both `X` and `Y`) is computed in float32 and summed
    in float64 (over runs of 64 features); other input in float64; the
    result is rounded to `dtype` once, at the end (in float32, values
    below 1.2e-38 lose digits or become 0; none becomes infinite). Dense
    input is computed in SIMD tiles; when `X` or `Y` is sparse, only the
    features where both are non-zero are visited (the one-dimensional
    kernel is 0 where either value is 0), without densifying.

    Each pair's value depends on its two rows only, at every magnitude,
    subnormal values included; the additive kernels and the chi2 distance
    are homogeneous, ``K(2**k x, 2**k y) = 2**k K(x, y)``, to rounding
    for every k that keeps the values representable. A pair of rows
    holding values where the fast paths would overflow or lose digits
    (float64: near or below the smallest normal number, 2.2e-308, and for
    the Jensen-Shannon kernel beyond 2**958, 3.7e288; dense float32: below
    1.2e-38, or beyond 2**94 to 2**121, 2e28 to 2.7e36, by kernel) is
    computed again: float32 in float64; float64 one pair at a time at the
    pair's own power-of-two scale, slower, where its first value could be
    off (small, or not finite; for the Jensen-Shannon kernel of sparse
    rows, also where their values are more than 2**1020 apart). A value
    below the normal range is then correct to within a unit or two of the
    subnormal spacing (4.9e-324): the exact value, rounded."""

_LAZY = """*Dask input.* `X` or `Y` given as a 2-D Dask array (the other dense)
    gives a lazy Dask array of the same values, bit for bit (each pair of
    rows is computed on its own), in blocks: the row chunks, split where
    one task would need more than the working-memory budget (`set_config`,
    read when the graph is built); one task per pair of blocks, and for
    ``Y=None`` one per unordered pair (the block below the diagonal is the
    transpose of the one above). The values are checked in the tasks, with
    the errors of the in-memory call; `progress` is ignored (use Dask's
    diagnostics), and `workers` is the threads of each task (1 by
    default).

    *Arrays of other libraries* (``pip install "kernelmaps[array]"``), X
    and Y of one library and on one device: PyTorch and JAX arrays on the
    CPU are computed by the compiled engine through a zero-copy exchange
    (NumPy's values, bit for bit); on another device, where a gradient is
    asked (a tensor that requires one, a JAX transformation) or for other
    libraries, by the library on the arrays' device, differentiably, in
    blocks of rows within the working-memory budget (and the device's free
    memory where the library reports it): NumPy's values to rounding.
    `workers` and `progress` are then unused."""


@kernel_function("chi2")
@takes_hints()
def additive_chi2_kernel(X, Y=None, *, workers=None, dtype=None, progress=False):
    r"""Additive chi2 kernel between histograms.

    .. math::

        K(x, y) = \sum_k \frac{2 x_k y_k}{x_k + y_k}

    with the term 0 where ``x_k + y_k = 0``. It equals 1 between two
    identical L1-normalised histograms. scikit-learn's
    `sklearn.metrics.pairwise.additive_chi2_kernel` returns
    ``-sum (x - y)^2 / (x + y)`` instead, which is
    ``2 * K - sum(x) - sum(y)``.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    chi2_distance, exp_chi2_kernel
    Chi2DirectMap : Explicit features whose inner products approximate it.

    Notes
    -----
    {notes}

    {lazy}

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       eq. (1).
    .. [2] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE TPAMI 34(3), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import additive_chi2_kernel
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> additive_chi2_kernel(X).round(4)
    array([[1.    , 0.6607],
           [0.6607, 1.    ]])
    """
    return _run(spec_for("chi2"), "additive_chi2_kernel", X, Y, workers, dtype,
                progress)


@takes_hints()
def chi2_distance(X, Y=None, *, workers=None, dtype=None, progress=False):
    r"""chi2 distance between histograms.

    .. math::

        D(x, y) = \frac{1}{2} \sum_k \frac{(x_k - y_k)^2}{x_k + y_k}
        = \frac{1}{2} \Big(\sum_k x_k + \sum_k y_k\Big) - K(x, y)

    with ``K`` the `additive_chi2_kernel` (the convention of the chi2 paper
    [1]_; scikit-learn's ``-additive_chi2_kernel`` is ``2 D``). It lies in
    [0, 1] between L1-normalised histograms.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    D : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.
        Non-negative (roundoff below 0 is clipped); 0 on the diagonal for
        ``Y=None``.

    See Also
    --------
    additive_chi2_kernel, exp_chi2_kernel

    Notes
    -----
    *Accuracy.* ``D`` is computed as ``(sum(x) + sum(y)) / 2 - K(x, y)``
    (the fast kernel, no difference per bin), so its error is relative to
    the row sums, not to ``D``: at most ``2 d u (sum(x) + sum(y))``, with
    ``u = 2**-53`` (float32 input: ``2**-24``) and ``d`` the number of
    bins, and in practice a few ``u (sum(x) + sum(y))``. Where ``x`` and
    ``y`` are nearly equal, ``D`` is far below their sums and has that
    many fewer correct digits: L1-normalised rows that differ by 1e-8 of
    each value have ``D`` near 1e-17, below the error (about 1e-16), which
    can leave it 0 or several times too large. Where such small distances
    matter, compute them from the differences of the rows.

    {notes}

    {lazy}

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       section 2.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import chi2_distance
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> chi2_distance(X).round(4)
    array([[0.    , 0.3393],
           [0.3393, 0.    ]])
    """
    return _run(spec_for("exp_chi2"), "chi2_distance", X, Y, workers, dtype,
                progress)


@kernel_function("exp_chi2")
@takes_hints()
def exp_chi2_kernel(X, Y=None, *, beta=1.0, workers=None, dtype=None,
                    progress=False):
    r"""Exponential chi2 kernel between histograms.

    .. math::

        K(x, y) = \exp(-\beta D(x, y))

    with ``D`` the `chi2_distance` (half the sum of ``(x - y)^2 / (x + y)``):
    scikit-learn's ``chi2_kernel(X, Y, gamma)`` is this kernel with
    ``beta = 2 * gamma``.

    Parameters
    ----------
    {parameters}
    beta : float, default=1.0
        Positive scale.

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    chi2_distance
    ExpChi2Features : Random features whose inner products approximate it.

    Notes
    -----
    ``D`` carries the error of `chi2_distance`, relative to the row sums
    (see its Notes): the kernel's error is about ``beta`` times it.

    {notes}

    {lazy}

    References
    ----------
    .. [1] F. Li, G. Lebanon and C. Sminchisescu, "A Linear Approximation to
       the chi2 Kernel with Geometric Convergence", arXiv:1206.4074, 2012,
       eq. (2).

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import exp_chi2_kernel
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> exp_chi2_kernel(X, beta=2.0).round(4)
    array([[1.    , 0.5073],
           [0.5073, 1.    ]])
    """
    return _run(spec_for("exp_chi2", {"beta": beta}), "exp_chi2_kernel", X, Y,
                workers, dtype, progress)


@kernel_function("intersection")
@takes_hints()
def intersection_kernel(X, Y=None, *, workers=None, dtype=None, progress=False):
    r"""Histogram intersection kernel.

    .. math::

        K(x, y) = \sum_k \min(x_k, y_k)

    Parameters
    ----------
    {parameters}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    HomogeneousKernelMap : Explicit features for it.

    Notes
    -----
    {notes}

    {lazy}

    References
    ----------
    .. [1] M. J. Swain and D. H. Ballard, "Color Indexing", IJCV 7(1), 1991.
    .. [2] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE TPAMI 34(3), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import intersection_kernel
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> intersection_kernel(X)
    array([[1. , 0.5],
           [0.5, 1. ]])
    """
    return _run(spec_for("intersection"), "intersection_kernel", X, Y, workers,
                dtype, progress)


@kernel_function("hellinger")
@takes_hints()
def hellinger_kernel(X, Y=None, *, workers=None, dtype=None, progress=False):
    r"""Hellinger (Bhattacharyya) kernel between histograms.

    .. math::

        K(x, y) = \sum_k \sqrt{x_k y_k}

    the inner product of the element-wise square roots.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.

    Notes
    -----
    {notes}

    {lazy}

    References
    ----------
    .. [1] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE TPAMI 34(3), 2012, table 1.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import hellinger_kernel
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> hellinger_kernel(X).round(4)
    array([[1.    , 0.7035],
           [0.7035, 1.    ]])
    """
    return _run(spec_for("hellinger"), "hellinger_kernel", X, Y, workers, dtype,
                progress)


@kernel_function("js")
@takes_hints()
def js_kernel(X, Y=None, *, workers=None, dtype=None, progress=False):
    r"""Jensen-Shannon kernel between histograms.

    .. math::

        K(x, y) = \sum_k \frac{x_k}{2} \log_2 \frac{x_k + y_k}{x_k}
        + \frac{y_k}{2} \log_2 \frac{x_k + y_k}{y_k}

    with ``0 log 0 = 0``. It equals 1 between two identical L1-normalised
    histograms.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    K : ndarray of float32 or float64 (see `dtype`), shape (n, m)
        A lazy dask.array.Array of that dtype and shape for Dask input.

    See Also
    --------
    HomogeneousKernelMap : Explicit features for it.

    Notes
    -----
    {notes} Each term is computed without cancellation, as
    ``a/2 log2((a + b)/a) + (a/2) log2(1 + a/b) / (a/b)`` with ``a = min(x,
    y)``, ``b = max(x, y)`` (a ``log1p``), so the relative error is a few
    ulps however different the two values are.

    {lazy}

    References
    ----------
    .. [1] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE TPAMI 34(3), 2012, table 1.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import js_kernel
    >>> X = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    >>> js_kernel(X).round(4)
    array([[1.    , 0.6839],
           [0.6839, 1.    ]])
    """
    return _run(spec_for("js"), "js_kernel", X, Y, workers, dtype, progress)


fill_docs((additive_chi2_kernel, chi2_distance, exp_chi2_kernel,
           intersection_kernel, hellinger_kernel, js_kernel),
          parameters=_PARAMETERS, notes=_NOTES, lazy=_LAZY, dtype=DTYPE_DOC)


def _run(spec, name, X, Y, workers, dtype, progress):
    """The public function `name` as the run of `spec`: X and Y (None: X)
    checked by the spec's checks, then its kernel at the function's scale
    (for "chi2_distance", its distances), as the output dtype (`_values`);
    for Dask input, a lazy Dask array of blocks, each computed by
    `_values`. Arrays of another library (`_array_api`) are computed by
    `_run_array`."""
    library = _array_api.library_of(X=X, Y=Y)
    if library is not None:
        return _run_array(spec, name, X, Y, library, workers, dtype, progress)
    lazy = is_lazy(X, Y)
    X, Y, n_threads, out, progress = _check_pair(spec, X, Y, workers, dtype,
                                                 progress, lazy)
    names = pair_names(Y)
    if lazy:
        block = functools.partial(_values, spec, name, out=out, names=names)
        return lazy_gram(block, X, Y, dtype=out, workers=workers,
                         nonnegative=True, name=name)
    K = _values(spec, name, X, Y, n_threads, progress, out=out, names=names)
    if name != "chi2_distance":
        # (the chi2 distance is 0 exactly between equal histograms)
        beta = spec.function_scale(spec.params)
        warn_uninformative(
            K, Y is None, name.replace("_kernel", "").replace("_", " "),
            f"histograms of {names}", beta,
            None if beta is None else (lambda: rows_equal(X, Y)), scale="beta")
    return K


def _run_array(spec, name, X, Y, library, workers, dtype, progress):
    """`_run` on arrays of `library`: by the compiled engine on their NumPy
    views, or (`library.native`) by the library on their device, the
    spec's `array_block` (`workers` and `progress` then unused), the
    result in the library."""
    if not library.native:
        return library.from_numpy(_run(spec, name, library.to_numpy(X),
                                       library.to_numpy(Y), workers,
                                       library.numpy_dtype(dtype), progress))
    resolve_workers(workers)
    check_progress(progress)
    X = spec.check_array(library, X, "X")
    Y = None if Y is None else spec.check_array(library, Y, "Y")
    out = _array_api.result_dtype(library, dtype, X, Y)
    if Y is not None:
        _check_widths(X, Y)
    # (float32 histograms in float64, as the engine sums them)
    X, Y = (None if A is None else library.xp.astype(A, library.xp.float64)
            for A in (X, Y))
    distances = name == "chi2_distance"
    K = (spec.array_block(library, X, Y, distances=True) if distances
         else spec.array_block(library, X, Y))
    names = "X" if Y is None else "X and Y"
    K = _array_api.cast_result(library, K, out, names,
                               overflow=_overflow(distances, names))
    if not distances:  # (the warning of `_run`)
        beta = spec.function_scale(spec.params)
        xp = library.xp
        _array_api.warn_uninformative(
            library, K, Y is None, name.replace("_kernel", "").replace("_", " "),
            f"histograms of {names}", beta, None if beta is None else (
                lambda: all(library.holds(xp.all(A[:1, :] == A))
                            for A in (X, X if Y is None else Y))
                and (Y is None or library.holds(xp.all(X[:1, :] == Y[:1, :])))),
            scale="beta")
    return K


def _values(spec, name, X, Y, n_threads, progress=False, *, out, names):
    """The kernel of `spec` (for "chi2_distance", its distances) between
    checked X and Y, as `out`, or a ValueError where a value overflowed
    float64 or (for float32) the float32 range."""
    if name == "chi2_distance":
        call, finish = spec.distance_call(X, Y, n_threads, progress)
        K = check_finite_output(finish(call()), _overflow(True, names))
    else:
        K = next(spec.blocks(X, Y, [spec.function_scale(spec.params)],
                             n_threads, progress))
        if spec.scale is None:  # (exp(-beta D) is in [0, 1])
            check_finite_output(K, _overflow(False, names))
    return cast_output(K, out, names)


def _overflow(distances, names):
    """The message of kernel values (`distances`: chi2 distances) between
    the rows of `names` that overflow float64."""
    if distances:
        return (f"the chi2 distances between the rows of {names} overflow "
                f"float64; scale the histograms down")
    return ("the kernel values between the rows of X and Y overflow float64; "
            "scale the histograms down")


def _check_pair(spec, X, Y, workers, dtype, progress, lazy=False):
    """`X` and `Y` (None: `Y` is `X`) checked by `spec`, the thread count,
    the output dtype and `progress`. With `lazy`, Dask arrays stay lazy
    (their values are checked in the tasks); the other input must then be
    dense."""
    X = spec.check(X, "X", lazy=lazy)
    if Y is not None:
        Y = spec.check(Y, "Y", lazy=lazy)
    if lazy:
        for A, name in ((X, "X"), (Y, "Y")):
            if scipy.sparse.issparse(A):
                raise TypeError(
                    f"{name} is a scipy.sparse matrix and the other input a "
                    f"Dask array; give {name} dense ({name}.toarray()) or "
                    f"compute the other"
                )
            if is_dask_array(A) and type(A._meta) is not np.ndarray:
                raise TypeError(
                    f"{name} is a Dask array of {type(A._meta).__name__} "
                    f"blocks; give it NumPy blocks"
                )
    if Y is None:
        return (X, None, resolve_workers(workers), check_dtype(dtype, X),
                check_progress(progress))
    _check_widths(X, Y)
    out = check_dtype(dtype, X, Y)
    X, Y = spec.common_dtype(X, Y)
    return X, Y, resolve_workers(workers), out, check_progress(progress)


def _check_widths(X, Y):
    """A ValueError where the histograms X and Y have different numbers of
    bins."""
    if X.shape[1] != Y.shape[1]:
        raise ValueError(
            f"Incompatible dimension for X and Y: X has {X.shape[1]} features "
            f"while Y has {Y.shape[1]}"
        )
