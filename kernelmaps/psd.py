"""Projection of indefinite kernel matrices onto the positive semi-definite
cone, for the training kernel and, consistently, for test rows."""

import math

import numpy as np
import scipy.linalg

from . import _array_api
from ._base import FeatureMap, in_container
from ._engine import lapack
from ._engine.layout import max_abs, power_of_two_exponent
from ._parallel import resolve_workers
from ._validation import (
    DTYPE_DOC,
    cast_output,
    check_array_matrix,
    check_choice,
    check_dtype,
    check_finite_output,
    check_kernel_matrix,
    fill_docs,
)

__all__ = ["PSDProjector", "project_psd"]

_METHODS = ("clip", "flip", "shift", "square")


def project_psd(K, *, method="clip", dtype=None, workers=None):
    r"""Positive semi-definite matrix nearest to a symmetric kernel matrix.

    With the eigendecomposition :math:`K = V \Lambda V^T` of the
    symmetrised matrix ``(K + K.T) / 2``:

    - ``"clip"``: :math:`V \max(\Lambda, 0) V^T`, the nearest PSD matrix in
      the Frobenius norm [1]_; the input is returned unchanged when it has
      no negative eigenvalue.
    - ``"flip"``: :math:`V |\Lambda| V^T`.
    - ``"shift"``: :math:`K + \max(-\lambda_{min}, 0) I`.
    - ``"square"``: :math:`K K^T`, the Gram matrix of the rows of ``K``
      (the empirical kernel map); a ValueError when it overflows float64
      (or underflows entirely).

    Parameters
    ----------
    K : array_like (n, n)
        Kernel matrix, symmetric up to roundoff (it is symmetrised first).
    method : {"clip", "flip", "shift", "square"}, default="clip"
    {dtype}
        The floating input is `K`.
    workers : int, optional
        Threads of the BLAS in the factorisations (at most; through
        threadpoolctl, where installed); None or -1 means all cores, -2
        all but one. Fewer than the cores is faster beside busy ones.

    Returns
    -------
    K_psd : ndarray of float32 or float64 (see `dtype`), shape (n, n)
        Symmetric and positive semi-definite up to roundoff (of float64:
        rounding to float32 keeps it symmetric).

    See Also
    --------
    PSDProjector : The same map, applied consistently to test rows.
    divergence_kernel : Kernels that usually need it.

    Notes
    -----
    The negative eigenvalues are counted first from an LDL^T factorisation
    (Sylvester's law of inertia): none, and the input is returned as it is;
    a few, and only those eigenpairs are computed (LAPACK ``syevr``); many,
    and all of them (``syevd``, faster then). Then ``clip`` is
    ``K - V_- \Lambda_- V_-^T`` and ``flip`` is ``K - 2 V_- \Lambda_-
    V_-^T``. "shift" needs the smallest eigenvalue only and "square" one
    matrix product.

    The factorisations are LAPACK calls which, as in SciPy, Ctrl-C cannot
    stop once they have started (the KeyboardInterrupt comes when one
    returns); counting first keeps them short: a PSD input costs the LDL^T
    alone, a third of a full eigendecomposition. The products after them
    run in blocks of rows, between which Ctrl-C stops.

    The decompositions run on the matrix scaled by a power of two to a
    largest entry in [0.5, 1), exactly, and their results are scaled back:
    the projection is correct at any magnitude of ``K`` (1e-300 as 1e300),
    and scaling ``K`` by a power of two scales the result by the same power
    (exactly, away from subnormal numbers).

    References
    ----------
    .. [1] N. J. Higham, "Computing a nearest symmetric positive
       semidefinite matrix", Linear Algebra Appl. 103, 1988.
    .. [2] Y. Chen, E. K. Garcia, M. R. Gupta, A. Rahimi and L. Cazzanti,
       "Similarity-based Classification: Concepts and Algorithms", JMLR 10,
       2009.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import project_psd
    >>> K = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])
    >>> bool(np.linalg.eigvalsh(K).min() < 0)
    True
    >>> P = project_psd(K)
    >>> bool(np.linalg.eigvalsh(P).min() > -1e-12)
    True
    >>> P.round(3)
    array([[1.054, 0.821, 0.154],
           [0.821, 1.116, 0.821],
           [0.154, 0.821, 1.054]])
    """
    library = _array_api.library_of(K=K)
    if library is not None and library.native:
        check_choice(method, "method", _METHODS)
        resolve_workers(workers)
        return _array_projected(library, K, "K", method, dtype)
    if library is not None:
        return library.from_numpy(project_psd(
            library.to_numpy(K), method=method, dtype=library.numpy_dtype(dtype),
            workers=workers))
    return PSDProjector(method)._fit_transform(K, "K", dtype, workers)


class PSDProjector(FeatureMap):
    """Make a training kernel positive semi-definite and apply the same
    linear map to test-vs-train kernel rows.

    A kernel machine trained on ``project_psd(K_train)`` must see test
    kernels transformed consistently [1]_: with the eigenvectors ``V`` and
    eigenvalues ``l`` of the training kernel, a row ``k`` of test-vs-train
    kernel values becomes

    - ``"clip"``: ``k V diag(1[l >= 0]) V^T``;
    - ``"flip"``: ``k V diag(sign(l)) V^T``;
    - ``"shift"``: ``k`` (the shift only touches the training diagonal);
    - ``"square"``: ``k K_train`` (empirical kernel map).

    For "clip", "flip" and "square", ``transform(K_train)`` equals
    ``project_psd(K_train)``.

    A scikit-learn transformer (without importing scikit-learn) as the maps
    are: `get_params`, `set_params`, ``clone``, pickling, `set_output`;
    tagged ``pairwise``, so that scikit-learn's cross-validation gives it
    the training kernel of each fold, e.g. before
    ``SVC(kernel="precomputed")`` in a Pipeline. `fit` takes ``workers``
    (threads of the BLAS in the factorisations, at most; Ctrl-C cannot
    stop one once it has started, as in `project_psd`). A training kernel
    of another array library that the library computes (PyTorch with a
    gradient asked or on another device, CuPy, array-api-strict) is
    decomposed there, by its ``linalg.eigh``, and only the fitted
    attributes come to the host; `fit_transform` projects it there from
    the same decomposition.

    Parameters
    ----------
    method : {"clip", "flip", "shift", "square"}, default="clip"
        See `project_psd`.

    Attributes
    ----------
    n_train_ : int
        Size of the training kernel.
    n_features_in_, n_features_out_ : int
        Columns of the kernel rows taken and returned: ``n_train_``.
    eigenvalues_ : ndarray (n_negative,)
        The negative eigenvalues of the symmetrised training kernel.
    eigenvectors_ : ndarray (n_train, n_negative)
        Their eigenvectors (for "clip" and "flip").
    shift_ : float
        ``max(-lambda_min, 0)``, added to the training diagonal by "shift".

    See Also
    --------
    project_psd : The projection of the training kernel alone.

    References
    ----------
    .. [1] Y. Chen, E. K. Garcia, M. R. Gupta, A. Rahimi and L. Cazzanti,
       "Similarity-based Classification: Concepts and Algorithms", JMLR 10,
       2009, section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import PSDProjector
    >>> K = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])
    >>> projector = PSDProjector("clip").fit(K)
    >>> projector.eigenvalues_.round(4)
    array([-0.2238])
    >>> K_test = np.array([[0.5, 0.9, 0.5]])  # one test set vs the 3 training sets
    >>> projector.transform(K_test).round(3)
    array([[0.578, 0.786, 0.578]])
    """

    _pairwise = True

    def __init__(self, method="clip"):
        self.method = method

    def _fit(self, K_train, workers, progress):
        """Decompose the symmetrised training kernel (as `project_psd`:
        Ctrl-C cannot stop a factorisation once it has started)."""
        K = check_kernel_matrix(K_train, "K_train")
        return self._decomposed(K, "K_train", workers)[0]

    def fit_transform(self, K_train, y=None, *, dtype=None, workers=None):
        """Fit, and return the projected training kernel (`project_psd`).

        Parameters
        ----------
        K_train : array_like (n, n)
        y : None
            Ignored (for the scikit-learn convention).
        {dtype}
            The floating input is `K_train`.
        workers : int, optional
            Threads of the BLAS in the factorisations, at most (see
            `project_psd`).

        Returns
        -------
        K_psd : ndarray of float32 or float64 (see `dtype`), shape (n, n)
        """
        library = _array_api.library_of(K_train=K_train)
        if library is not None and library.native:  # one pass, on the device
            resolve_workers(workers)
            method = check_choice(self.method, "method", _METHODS)
            decomposition = _array_decomposed(library, K_train, "K_train", method,
                                              dtype)
            self._set_fitted(self._array_state(library, decomposition, "K_train"))
            return _array_projection(library, decomposition, "K_train", method)
        if library is not None:  # fitted on the host, projected in the library
            self.fit(K_train, workers=workers)
            return project_psd(K_train, method=self.method, dtype=dtype,
                               workers=workers)
        return in_container(self, self._fit_transform(K_train, "K_train", dtype,
                                                       workers), K_train)

    def _fit_transform(self, K_train, name, dtype, workers):
        n_threads = resolve_workers(workers)
        K = check_kernel_matrix(K_train, name, keep_float32=True)
        out = check_dtype(dtype, K)
        return cast_output(self._projected(K.astype(np.float64, copy=False), name,
                                           n_threads), out, name)

    def _projected(self, K_train, name, n_threads):
        """Fit on the validated float64 `K_train`; the projection, float64."""
        state, K = self._decomposed(K_train, name, n_threads)
        self._set_fitted(state)
        if self.method == "square":
            return _scale_back(_symmetrize(lapack.matmul(self._train, self._train)),
                               2 * self._exponent, name, "square")
        if self.method == "shift":
            with np.errstate(over="ignore"):
                K[np.diag_indices_from(K)] += self.shift_
            return _check_result(K, name, "shift")
        if not self.eigenvalues_.size:
            return K
        # K V_- = V_- diag(l_-): one product, n x n_negative x n, at the
        # unit scale of the decomposition, subtracted there too (the
        # correction alone may overflow where the result does not: "flip"
        # of a K near 1e308), and the result scaled back.
        V = self.eigenvectors_
        weight = 1.0 if self.method == "clip" else 2.0
        correction = _symmetrize(lapack.matmul(V * (weight * self._unit_eigenvalues),
                                               V.T))
        unit = np.ldexp(K, -self._exponent)
        unit -= correction
        return _scale_back(unit, self._exponent, name, self.method)

    def _decomposed(self, K_train, name, n_threads):
        """The fitted attributes of the validated float64 `K_train` (the
        argument `name`), the factorisations on at most `n_threads` BLAS
        threads, and the symmetrised training kernel (a new array).

        The decompositions run on the matrix scaled by a power of two to a
        largest entry in [0.5, 1) (exact), so that their results do not
        overflow or underflow at any scale of K_train."""
        method = check_choice(self.method, "method", _METHODS)
        K = _symmetrize(K_train)
        n = K.shape[0]
        exponent = -power_of_two_exponent(max_abs(K))
        unit = np.ldexp(K, -exponent)
        values, vectors = np.zeros(0), np.zeros((n, 0))
        with lapack.blas_threads(n_threads):
            n_negative = _count_negative(unit) if method != "square" else 0
            if method == "shift" and n_negative:
                w = scipy.linalg.eigh(unit, eigvals_only=True,
                                      subset_by_index=[0, 0], driver="evr")
                values = w[w < 0]
            elif n_negative:
                values, vectors = _negative_eigenpairs(unit, n_negative)
        return _state(n, values, vectors, exponent, unit, name, method), K

    def _array_fit(self, library, K_train, n_threads):
        """`_fit` of `K_train` of `library` (`FeatureMap._fitted`): checked,
        symmetrised, scaled and decomposed there (`_array_decomposed`);
        what comes to the host is the fitted state only."""
        method = check_choice(self.method, "method", _METHODS)
        return self._array_state(library, _array_decomposed(
            library, K_train, "K_train", method, None), "K_train")

    def _array_state(self, library, decomposition, name):
        """The fitted attributes (NumPy, as `_decomposed` gives them) of the
        `_array_decomposed` training kernel: its negative eigenpairs ("shift":
        the smallest eigenvalue) or, for "square", the unit-scaled matrix,
        copied to the host."""
        method = self.method
        unit, exponent, values, vectors, _ = decomposition
        n = unit.shape[0]
        if not library.readable(unit):
            raise ValueError(f"PSDProjector.fit needs the values of {name}, which "
                             f"this array does not carry (a JAX array under jit, "
                             f"a PyTorch meta tensor)")
        if method == "square":
            return _state(n, np.zeros(0), np.zeros((n, 0)), exponent,
                          library.to_numpy(unit), name, method)
        spectrum = library.to_numpy(values)  # (ascending: the negative first)
        k = int(np.count_nonzero(spectrum[:1 if method == "shift" else n] < 0))
        V = (np.zeros((n, 0)) if method == "shift"
             else library.to_numpy(vectors[:, :k]))
        return _state(n, spectrum[:k].copy(), V, exponent, None, name, method)

    def transform(self, K_test_train, *, dtype=None, workers=None):
        """Map test-vs-train kernel rows as the training kernel was mapped.

        Parameters
        ----------
        K_test_train : array_like (m, n_train)
        {dtype}
            The floating input is `K_test_train`.
        workers : int, optional
            Threads of the BLAS in the products, at most (see
            `project_psd`).

        Returns
        -------
        K_psd : ndarray of float32 or float64 (see `dtype`), shape (m, n_train)
        """
        self._check_fitted()
        n_threads = resolve_workers(workers)
        library = _array_api.library_of(K_test_train=K_test_train)
        if library is not None and library.native:
            return self._array_transformed(library, K_test_train, dtype)
        if library is not None:
            return library.from_numpy(self.transform(
                library.to_numpy(K_test_train), dtype=library.numpy_dtype(dtype),
                workers=workers))
        K = check_kernel_matrix(K_test_train, "K_test_train", square=False,
                                keep_float32=True)
        out = check_dtype(dtype, K)
        with lapack.blas_threads(n_threads):
            K_psd = self._transformed(K.astype(np.float64, copy=False))
        return cast_output(K_psd, out, "K_test_train")

    def _transformed(self, K):
        """`transform` of the validated float64 `K`, in float64."""
        self._check_width(K.shape[1], "K_test_train")
        exponent = -power_of_two_exponent(max_abs(K))
        unit = np.ldexp(K, -exponent)
        if self.method == "square":
            return _scale_back(lapack.matmul(unit, self._train),
                               exponent + self._exponent, "K_test_train", "square")
        if self.method == "shift" or not self.eigenvalues_.size:
            return K.copy()
        V = self.eigenvectors_
        weight = 1.0 if self.method == "clip" else 2.0
        # at the unit scale of K_test_train, then scaled back (see
        # _fit_transform)
        unit = unit - weight * lapack.matmul(lapack.matmul(unit, V), V.T)
        return _scale_back(unit, exponent, "K_test_train", self.method)


    def _array_transformed(self, library, K, dtype):
        """`transform` of the rows `K` of `library`, computed there (the
        fitted eigenvectors moved to its device once)."""
        xp = library.xp
        K, out = _check_array_kernel(library, K, "K_test_train", dtype, square=False)
        self._check_width(K.shape[1], "K_test_train")
        if self.method == "square":
            (train,) = self._on_device(library, np.float64, "_train")
            K = _scaled(K @ train, self._exponent)
        elif self.method != "shift" and self.eigenvalues_.size:
            (V,) = self._on_device(library, np.float64, "eigenvectors_")
            weight = 1.0 if self.method == "clip" else 2.0
            K = K - weight * ((K @ V) @ xp.matrix_transpose(V))
        return _array_result(library, K, "K_test_train", self.method, out)


def _check_array_kernel(library, K, name, dtype, square=True):
    """`check_kernel_matrix` of `K` of `library` (`check_array_matrix`: the
    same messages; the values checked where they can be read), as float64,
    and the output dtype."""
    K = check_array_matrix(library, K, name, square=square)
    out = _array_api.result_dtype(library, dtype, K)
    return library.xp.astype(K, library.xp.float64), out


def _array_projected(library, K, name, method, dtype):
    """`project_psd` of `K` of `library`, computed there with its
    eigendecomposition (differentiable where the eigenvalues are
    distinct)."""
    return _array_projection(library, _array_decomposed(library, K, name, method,
                                                        dtype), name, method)


def _array_decomposed(library, K, name, method, dtype):
    """`K` of `library` checked, symmetrised and scaled by a power of two
    as `PSDProjector._decomposed` does it (the same exponent, where the
    values can be read; else 0), and decomposed there: ``(unit, exponent,
    values, vectors, out)``, the eigenpairs ascending (None for "square",
    which needs none), `out` the output dtype."""
    xp = library.xp
    K, out = _check_array_kernel(library, K, name, dtype)
    top = library.scalar(xp.max(xp.abs(K)))
    K = (K / 2 + xp.matrix_transpose(K) / 2 if top is not None and top > 2.0**1020
         else (K + xp.matrix_transpose(K)) / 2)  # (as `_symmetrize`)
    top = library.scalar(xp.max(xp.abs(K)))
    exponent = 0 if not top else -power_of_two_exponent(top)
    unit = _scaled(K, -exponent)
    values = vectors = None
    if method != "square":
        values, vectors = xp.linalg.eigh(unit)
    return unit, exponent, values, vectors, out


def _array_projection(library, decomposition, name, method):
    """The projection of the `_array_decomposed` matrix (argument `name`),
    as its output dtype."""
    xp = library.xp
    unit, exponent, values, vectors, out = decomposition
    if method == "square":
        unit = unit @ unit
        unit = (unit + xp.matrix_transpose(unit)) / 2
        return _array_result(library, _scaled(unit, 2 * exponent), name, method, out)
    negative = xp.clip(values, max=0)
    if method == "shift":
        eye = xp.eye(unit.shape[0], dtype=unit.dtype, device=library.device)
        unit = unit - xp.min(negative) * eye
    else:
        weight = 1.0 if method == "clip" else 2.0
        unit = unit - weight * ((vectors * negative) @ xp.matrix_transpose(vectors))
        unit = (unit + xp.matrix_transpose(unit)) / 2  # (exactly symmetric)
    return _array_result(library, _scaled(unit, exponent), name, method, out)


_scaled = _array_api.times_power_of_two


def _array_result(library, A, name, method, out):
    """`A` as `out`, as the NumPy path casts its result (`cast_output`):
    the ValueError of `_check_result` where it is not finite."""
    return _array_api.cast_result(library, A, out, name,
                                  overflow=_overflow(name, method))


fill_docs((project_psd,), dtype=DTYPE_DOC)
fill_docs((PSDProjector.fit_transform, PSDProjector.transform), indent=4,
          dtype=DTYPE_DOC)


def _state(n, values, vectors, exponent, unit, name, method):
    """The fitted attributes of a training kernel of `n` rows from its
    negative unit-scale eigenvalues `values` and their `vectors`, the
    `exponent` of its scaling and (for "square") the `unit`-scaled
    matrix."""
    eigenvalues = _scale_back(values, exponent, name, method)
    return {"n_train_": n, "n_features_in_": n, "n_features_out_": n,
            "eigenvalues_": eigenvalues, "eigenvectors_": vectors,
            "shift_": float(-eigenvalues.min()) if eigenvalues.size else 0.0,
            "_exponent": exponent, "_unit_eigenvalues": values,
            "_train": unit if method == "square" else None}


def _symmetrize(K):
    if max_abs(K) > 2.0**1020:  # K + K.T would overflow
        return K / 2 + K.T / 2
    return (K + K.T) / 2


def _scale_back(A, exponent, name, method):
    """A * 2**exponent (exact where the result is a normal number): a
    ValueError naming `name` where it overflows float64, or (for "square",
    a product) where all of a non-zero result underflows."""
    with np.errstate(over="ignore", under="ignore"):
        out = _check_result(np.ldexp(A, exponent), name, method)
    top = max_abs(A) if method == "square" else 0.0
    if top > 0 and math.ldexp(top, exponent) < np.finfo(np.float64).tiny:
        raise ValueError(
            f"the 'square' projection of {name} underflows float64 for this "
            f"input (its entries would be below 2.2e-308); scale {name} up"
        )
    return out


def _check_result(A, name, method):
    return check_finite_output(A, _overflow(name, method))


def _overflow(name, method):
    return (f"the {method!r} projection of {name} overflows float64 for this "
            f"input; scale {name} down")


def _count_negative(K):
    """Number of negative eigenvalues of the symmetric K, by Sylvester's law
    of inertia on its LDL^T factorisation (Bunch-Kaufman: blocks of 1 x 1
    and 2 x 2), a third of the cost of a reduction to tridiagonal form."""
    _, D, _ = scipy.linalg.ldl(K, lower=True, hermitian=True, check_finite=False)
    diag, sub = np.diag(D), np.diag(D, -1)
    starts = np.flatnonzero(sub != 0)  # 2 x 2 blocks at (i, i + 1)
    in_block = np.zeros(len(diag), dtype=bool)
    in_block[starts] = in_block[starts + 1] = True
    det = diag[starts] * diag[starts + 1] - sub[starts] ** 2
    trace = diag[starts] + diag[starts + 1]
    return int(np.count_nonzero(diag[~in_block] < 0) + np.count_nonzero(det < 0)
               + 2 * np.count_nonzero((det > 0) & (trace < 0)))


def _negative_eigenpairs(K, n_negative):
    """The negative eigenvalues of K and their eigenvectors.

    ``syevr`` computes a few of the smallest eigenpairs in less time than
    ``syevd`` all of them, but more past about an eighth of the spectrum
    (many clustered ones): the subset up to 1/8 of it, else all
    (benchmarks/TUNING.md).
    """
    if n_negative <= len(K) // 8:
        w, V = scipy.linalg.eigh(K, subset_by_index=[0, n_negative - 1],
                                 driver="evr")
    else:
        w, V = scipy.linalg.eigh(K, driver="evd")
    negative = w < 0
    return w[negative], V[:, negative]
