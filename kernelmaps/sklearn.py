"""scikit-learn estimators that return kernel matrices over objects, for
``SVC(kernel="precomputed")`` and other kernel machines in a ``Pipeline``.

`SetKernel` gives the exact kernels between sets of vectors, `ExpectedKernel`
the expected kernels between Gaussians given by their moments: each stores
its training objects at ``fit``, and ``transform`` gives the kernel between
new objects and them, computed by the kernel's spec (`kernelmaps._spec`).
They follow the feature maps' protocol (`kernelmaps._base.FeatureMap`:
``workers`` and ``progress`` are arguments of `fit`, `transform` and
`fit_transform`; `set_output`, `get_params`, ``clone``), and, like the
maps, need no scikit-learn themselves.

Sets are a list (or object array) of ``(n_i, d)`` arrays, one per sample,
which scikit-learn's cross-validation splits like any list; a 3-D array or
a `kernelmaps.Bags` also works in ``fit`` and ``transform``.

Objects of another array library (`kernelmaps._array_api`) that the
library computes (a PyTorch tensor that asks for a gradient, a GPU array,
array-api-strict) are fitted there, differentiably: ``train_`` stays there
(their NumPy copy is made only where NumPy objects are transformed), and
only the kernel's data-dependent parameters come to the host (the median
heuristic's sample of points; the distances between the training sets for
the sliced-Wasserstein and Renyi kernels' own scale).
"""


import numpy as np

from . import _array_api
from ._bags import Bags
from ._base import FeatureMap
from ._parallel import check_progress, resolve_workers
from ._probes import as_float_array
from ._spec import SPECS, check_kernel_params, kernel_names, spec_for
from ._transforms import blocked_sets
from ._validation import (
    check_choice,
    check_points,
    check_rng,
    reshape_hint,
)
from .psd import PSDProjector as _PSDProjector

__all__ = ["ExpectedKernel", "SetKernel"]


def _taken(params, spec):
    """The items of `params` that the kernel of `spec` takes."""
    return {name: value for name, value in params.items() if name in spec.takes}


def _rows(X):
    """The rows of `X`: a finite 2-D float64 array."""
    X = as_float_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, p), got shape {X.shape}"
                         f"{reshape_hint(X, 'X')}")
    return check_points(X, "X").astype(np.float64, copy=False)


def _kept(library, a):
    """The array `a` of `library` (or the points of a `Bags` of them) as a
    fitted attribute holds it: a JAX tracer of ``jax.grad`` as its values,
    which outlive the trace (under ``jax.jit``, which has none, the
    tracer); others as they are (a PyTorch tensor with its gradient,
    which `transform` carries on)."""
    points = a.points if isinstance(a, Bags) else a
    values = library.host_values(points) if library.name == "jax" else None
    if values is None:
        return a
    return Bags(values, a.offsets, a.weights) if isinstance(a, Bags) else values


def _place(library):
    """The library's name and device (None: NumPy's)."""
    return None if library is None else (library.name, library.device)


class _KernelEstimator(FeatureMap):
    """A feature map whose features are the kernel between its input and
    the training objects: `_fit` returns the fitted attributes and the
    training kernel (symmetric, computed once), which `fit_transform`
    gives; ``_kernel(X, workers=, progress=)`` is the kernel of fitted
    input. Objects of a library that computes them
    (`kernelmaps._array_api`) are fitted there by `_array_fit`, their
    ``train_`` kept there (`_train_in`)."""

    def _train_in(self, library):
        """``train_`` in `library` (None: NumPy), on its device: as it is
        where it is there (the objects of a fit there, which a gradient may
        reach), else moved through the host, once per fit and device (kept
        until the next fit, not pickled)."""
        held = _array_api.library_of_objects(train=self.train_)
        if _place(held) == _place(library):
            return self.train_
        key = ("train_", str(_place(library)))
        kept = vars(self).setdefault("_on_device_", {})
        if key not in kept:
            train = _array_api.numpy_objects(held, self.train_)
            kept[key] = (train if library is None
                         else _array_api.library_objects(library, train))
        return kept[key]

    def transform(self, X, *, workers=None, progress=False):
        """The kernel between the objects of `X` and the training ones.

        Parameters
        ----------
        X : array_like
            Objects as `fit` took them.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar over blocks of sets (needs tqdm; `SetKernel`:
            `ExpectedKernel` computes in one compiled call, without a bar).

        Returns
        -------
        K : ndarray of shape (n, n_train)
            `SetKernel` of Dask sets: a lazy Dask array, a block of sets at
            a time.
        """
        self._check_fitted()
        return self._kernel(X, workers=resolve_workers(workers),
                            progress=check_progress(progress))


class SetKernel(_KernelEstimator):
    """Exact kernels between sets and the training sets, for
    ``SVC(kernel="precomputed")`` in a `Pipeline`.

    ``fit_transform(X_train)`` gives the symmetric training kernel (each
    unordered pair once); ``transform(X)`` gives the kernel between the sets
    of `X` and the training sets, ``(len(X), n_train)``, with every
    parameter fixed at fit. ``workers`` (threads) and ``progress`` are
    arguments of `fit`, `transform` and `fit_transform`, as for the maps.

    Parameters
    ----------
    kernel : {"mean_map", "mmd", "renyi", "sliced_wasserstein"}, default="mean_map"
        ``"mean_map"``: `kernelmaps.sum_match_kernel` (normalised, rbf
        points); ``"mmd"``: `kernelmaps.mmd_kernel`; ``"renyi"``:
        `kernelmaps.divergence_kernel` of the symmetrised kNN Renyi
        divergences, made positive semi-definite by a `PSDProjector` fitted
        on the training kernel and applied to test rows alike;
        ``"sliced_wasserstein"``: `kernelmaps.sliced_wasserstein_kernel`,
        its directions drawn at fit from `rng`.
    gamma : float, optional
        Point kernel scale ("mean_map", "mmd"; None: the median heuristic on
        the pooled training points, kept in ``gamma_``), or the scale of
        the divergence kernel ("renyi"; None: the median heuristic of
        `divergence_kernel` on the training divergences, kept in
        ``gamma_``, with the median divergence in ``scale_``: the kernel is
        computed from the scale, stably, even where ``gamma_`` is beyond
        the float range), or of "sliced_wasserstein" (None: ``1 / median``
        of the squared distances between the training sets).
    gamma2 : float, default=1.0
        Level-2 scale of "mmd".
    alpha, k, power : float, int, float
        Renyi order, neighbours (at most ``2**31 - 1``) and the power of the
        divergence ("renyi").
    psd : {"clip", "flip", "shift", "square"}, default="clip"
        PSD projection of "renyi" (see `kernelmaps.PSDProjector`).
    n_projections : int, default=100
        Directions of "sliced_wasserstein".
    kernel_params : dict, optional
        The kernel function's other keyword arguments, checked as the
        function checks them: the point kernel of "mean_map" and "mmd"
        (``{"kernel": "laplacian"}``, ``{"kernel": "energy"}``, with
        ``degree``, ``coef0``), ``min_dist`` or ``clamp`` of "renyi",
        ``draw`` or ``projections`` of "sliced_wasserstein". The
        parameters above are given as arguments, not here.
    rng : int or numpy.random.Generator, optional
        Seed or generator of the directions of "sliced_wasserstein", drawn
        by `fit`.

    Attributes
    ----------
    train_ : Bags
        The training sets (fitted on sets of a library that computes them,
        `kernelmaps._array_api`: a Bags of its points, on their device).
    gamma_ : float
        The scale used (see `gamma`).
    scale_ : float or None
        "renyi" with ``gamma=None``: the median symmetrised divergence
        (None otherwise).
    params_ : dict
        The kernel's parameters as `transform` computes with them (its
        scale fixed at fit).
    psd_ : PSDProjector
        "renyi": the projection fitted on the training kernel.
    projections_ : ndarray of shape (n_projections, d)
        "sliced_wasserstein": the directions.
    n_features_in_ : int
        Dimension of the points seen during `fit`.
    n_features_out_ : int
        Number of training sets (the columns of the kernel).

    Notes
    -----
    Every parameter is validated at fit (whatever the kernel), with a
    ValueError or TypeError naming it.

    *Weighted sets.* ``kernel="mean_map"`` and ``"mmd"`` take a `Bags`
    with point weights (the weighted kernels of `kernelmaps.sum_match_kernel`
    and `kernelmaps.mmd_kernel`, weights normalised per set; ``gamma=None``
    the weighted median heuristic of the training sets), and so does
    ``"sliced_wasserstein"`` (`kernelmaps.sliced_wasserstein_kernel` of
    the weighted sets); ``"renyi"`` refuses them (a ValueError).

    References
    ----------
    .. [1] See `kernelmaps.sum_match_kernel`, `kernelmaps.mmd_kernel` and
       `kernelmaps.divergence_kernel`; Chen et al., "Similarity-based
       classification", JMLR 2009, for the projection of test rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.svm import SVC
    >>> from kernelmaps.sklearn import SetKernel
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.normal(loc=c, size=(20, 2)) for c in (0, 0, 3, 3)]
    >>> model = make_pipeline(SetKernel(), SVC(kernel="precomputed"))
    >>> model.fit(sets, [0, 0, 1, 1]).predict(sets).tolist()
    [0, 0, 1, 1]
    """

    _takes_sets = True

    def __init__(self, kernel="mean_map", *, gamma=None, gamma2=1.0, alpha=0.99,
                 k=5, power=2, psd="clip", n_projections=100, kernel_params=None,
                 rng=None):
        self.kernel = kernel
        self.gamma = gamma
        self.gamma2 = gamma2
        self.alpha = alpha
        self.k = k
        self.power = power
        self.psd = psd
        self.n_projections = n_projections
        self.kernel_params = kernel_params
        self.rng = rng

    def _checked_spec(self):
        """The kernel's spec with its parameters among this estimator's,
        checked by the kernel's own checks; the parameters of the other
        set kernels checked alike (every parameter is validated, whatever
        the kernel)."""
        names = kernel_names("sets")
        kernel = check_choice(self.kernel, "kernel", names)
        given = {"kernel": "rbf", "gamma": self.gamma, "gamma2": self.gamma2,
                 "alpha": self.alpha, "k": self.k, "power": self.power,
                 "n_projections": self.n_projections}
        check_choice(self.psd, "psd", ("clip", "flip", "shift", "square"))
        extra = check_kernel_params(self.kernel_params, SPECS[kernel](kernel))
        own = sorted(set(extra) & (set(given) - {"kernel"}))
        if own:
            raise ValueError(f"kernel_params has {own[0]!r}, an argument of "
                             f"SetKernel: give it as {own[0]}=")
        spec = spec_for(kernel, {**_taken(given, SPECS[kernel]), **extra})
        for other in names:
            for name, value in _taken(given, SPECS[other]).items():
                if name not in spec.takes:
                    spec_for(other, {name: value})
        return spec

    def _fit(self, X, workers, progress):
        spec = self._checked_spec()
        rng = check_rng(self.rng)
        train = spec.check(X, "X")
        params = spec.function_params(spec.params, train, rng=rng)
        spec = spec_for(self.kernel, params)
        K, params = spec.function_gram(train, params, workers, "sets of X")
        return self._state(spec, train, params, K, lambda psd, K: psd._fit_transform(
            K, "K_train", None, workers))

    def _array_fit(self, library, X, n_threads):
        """`_fit` of sets of `library` that it computes
        (`kernelmaps._array_api`): checked there (`SetSpec.check_bags`), the
        kernel's parameters fixed as `_fit` fixes them (the median
        heuristic's sample of points, the kernel's own scale: only those
        come to the host), the training kernel computed there,
        differentiably (`Spec.array_gram`), projected there; ``train_`` is
        the sets there (a `Bags` of their points)."""
        spec = self._checked_spec()
        rng = check_rng(self.rng)
        train, _ = spec.check_bags(library, X, "X")
        params = spec.function_params(spec.params, train, rng=rng)
        spec = spec_for(self.kernel, params)
        K, params = spec.array_gram(train, params, "sets of X")
        xp = library.xp
        state, K = self._state(spec, train, params, xp.astype(K, xp.float64),
                               lambda psd, K: psd.fit_transform(K))
        return {**state, "train_": _kept(library, train)}, K

    def _state(self, spec, train, params, K, project):
        """The fitted attributes of the checked training sets `train` and
        the kernel's fixed `params`, and the training kernel K, projected
        by ``project(psd_, K)`` for a kernel that is not positive
        definite."""
        state = {"train_": train, "n_features_in_": train.dim,
                 "n_features_out_": len(train), "params_": params,
                 "gamma_": spec.fitted_gamma(params), "scale_": params.get("scale")}
        if params.get("projections") is not None:
            state["projections_"] = params["projections"]
        if not spec.positive_definite:
            state["psd_"] = _PSDProjector(self.psd)
            K = project(state["psd_"], K)
        return state, K

    def _block(self, X, *, workers=None):
        spec = spec_for(self.kernel, self.params_)
        sets = spec.check(X, "X")
        self._check_width(sets.dim)
        K = spec.function_block(sets, self._train_in(None), self.params_, workers)
        return K if spec.positive_definite else self.psd_.transform(
            K, workers=workers)

    def _array_features(self, library, X):
        """`transform` of sets of `library` (`kernelmaps._array_api`), computed
        there by the kernel's function between them and the training sets
        (there, `_train_in`), projected as in `transform`."""
        xp = library.xp
        spec = spec_for(self.kernel, self.params_)
        K = spec.call(X, self._train_in(library), self.params_)
        K = xp.astype(K, xp.float64)
        return K if spec.positive_definite else self.psd_.transform(K)

    def _takes_weights(self):
        """Whether the fitted kernel takes weighted sets (its spec says)."""
        return bool(getattr(spec_for(self.kernel, self.params_), "weighted", False))

    def _lazy_output(self, dtype):
        return self.n_features_out_, np.dtype(np.float64)

    # (in blocks of sets under a progress bar, or of Dask sets: lazy)
    _kernel = blocked_sets(weighted=_takes_weights)(_block)


class ExpectedKernel(_KernelEstimator):
    """Expected kernels between Gaussian distributions and the training
    ones: the support measure machine with ``SVC(kernel="precomputed")``.

    Each row of `X` is one distribution ``N(m, S)``: its mean, then its
    covariance, as ``[m, S.ravel()]`` (``covariance="full"``, ``d + d * d``
    columns), ``[m, diag(S)]`` (``"diag"``, ``2 d``) or ``[m, s2]`` with
    ``S = s2 I`` (``"iso"``, ``d + 1``). Zero covariances give the ordinary
    kernel between the means. ``workers`` (threads) and ``progress`` are
    arguments of `fit`, `transform` and `fit_transform`, as for the maps.

    Parameters
    ----------
    covariance : {"full", "diag", "iso"}, default="diag"
        The covariance's columns in each row.
    kernel : {"rbf", "linear", "polynomial"}, default="rbf"
        The kernel between points whose expectation is taken.
    gamma : float, optional
        Kernel scale; None means the median heuristic on the training
        means ("rbf", kept in ``gamma_``), ``1 / d`` ("polynomial").
    degree : int, default=2
        Degree of the polynomial kernel (2 or 3).
    coef0 : float, default=1.0
        Constant of the polynomial kernel.

    Attributes
    ----------
    train_ : ndarray
        The training distributions' rows, float64 (fitted on rows of a
        library that computes them: an array of it, on their device).
    gamma_ : float or None
        The kernel scale used (None for "linear").
    params_ : dict
        The kernel's parameters as `transform` computes with them (gamma
        fixed at fit).
    n_features_in_ : int
        Number of columns seen during `fit`.
    n_features_out_ : int
        Number of training distributions (the columns of the kernel).

    References
    ----------
    .. [1] K. Muandet, K. Fukumizu, F. Dinuzzo and B. Schoelkopf, "Learning
       from distributions via support measure machines", NIPS 2012; see
       `kernelmaps.gaussian_expected_kernel`.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps.sklearn import ExpectedKernel
    >>> X = np.array([[0.0, 0.0, 1.0, 1.0], [3.0, 0.0, 0.5, 0.5]])  # d = 2
    >>> ExpectedKernel().fit_transform(X).shape
    (2, 2)
    """

    _positive_only = True  # (the variances)
    _preserves_dtype = ("float64",)

    def __init__(self, covariance="diag", *, kernel="rbf", gamma=None, degree=2,
                 coef0=1.0):
        self.covariance = covariance
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0

    def _split(self, X, xp=np):
        """Means (n, d) and covariances of the rows of `X` (of the array
        namespace `xp`)."""
        p = X.shape[1]
        if self.covariance == "full":
            d = round((np.sqrt(1 + 4 * p) - 1) / 2)
            if d * (d + 1) != p:
                raise ValueError(f"X has {p} columns: not d + d * d for any d")
            return X[:, :d], xp.reshape(X[:, d:], (-1, d, d))
        if self.covariance == "diag":
            if p % 2:
                raise ValueError(f"X has {p} columns: not 2 d for any d")
            return X[:, : p // 2], X[:, p // 2 :]
        if p < 2:
            raise ValueError(f"X has {p} feature(s): at least d + 1 = 2 needed")
        return X[:, :-1], X[:, -1]

    def _gaussians(self, X, spec, library=None):
        """The Gaussians of the checked rows `X`, checked (`spec`'s); of
        `library`, their variances checked on their device (a boolean comes
        back), the rest by the kernel's function."""
        xp = np if library is None else library.xp
        means, covs = self._split(X, xp)
        variances = covs if self.covariance != "full" else (
            np.diagonal(covs, axis1=1, axis2=2) if library is None
            else xp.linalg.diagonal(covs))
        nonnegative = xp.all(variances >= 0)
        if not (nonnegative if library is None else library.holds(nonnegative)):
            raise ValueError("Negative values in data passed to X: the "
                             "variances must be >= 0")
        return spec.check((means, covs), "X") if library is None else (means, covs)

    def _checked_spec(self):
        """The expected kernel's spec with this estimator's parameters,
        checked (and `covariance`)."""
        check_choice(self.covariance, "covariance", ("full", "diag", "iso"))
        return spec_for("expected", {"kernel": self.kernel, "gamma": self.gamma,
                                     "degree": self.degree, "coef0": self.coef0})

    def _fit(self, X, workers, progress):
        spec = self._checked_spec()
        names = self._check_names(X, reset=True)
        X = _rows(X)
        train = self._gaussians(X, spec)
        params = spec.function_params(spec.params, train)
        K, params = spec.function_gram(train, params, workers, "Gaussians of X")
        return {**self._state(spec, X, params), **names}, K

    def _array_fit(self, library, X, n_threads):
        """`_fit` of rows of `library` that it computes
        (`kernelmaps._array_api`): checked there, float64 as for NumPy, gamma
        fixed as `_fit` fixes it (the median heuristic's sample of means
        only comes to the host), the training kernel computed there by
        `gaussian_expected_kernel`, differentiably; ``train_`` is the rows
        there."""
        spec = self._checked_spec()
        xp = library.xp
        X = xp.astype(_array_api.check_rows(library, X, "X"), xp.float64, copy=False)
        train = self._gaussians(X, spec, library)
        params = spec.function_params(spec.params, train)
        K, params = spec.array_gram(train, params, "Gaussians of X")
        K = xp.astype(K, xp.float64)
        return {**self._state(spec, X, params), "train_": _kept(library, X)}, K

    @staticmethod
    def _state(spec, X, params):
        """The fitted attributes of the training rows `X` and the kernel's
        fixed `params`."""
        return {"train_": X, "n_features_in_": X.shape[1],
                "n_features_out_": X.shape[0], "params_": params,
                "gamma_": spec.fitted_gamma(params)}

    def _kernel(self, X, *, workers, progress):
        library = _array_api.library_of(X=X)
        if library is not None:
            return self._array_kernel(library, X, workers)
        self._check_names(X, reset=False)
        spec = spec_for("expected", self.params_)
        X = _rows(X)
        self._check_width(X.shape[1])
        return spec.function_block(self._gaussians(X, spec),
                                   self._split(self._train_in(None)),
                                   self.params_, workers)

    def _array_kernel(self, library, X, workers):
        """`transform` of rows of `library` (`kernelmaps._array_api`):
        through NumPy, or (`library.native`) by `gaussian_expected_kernel`
        in the library, on their device (the training Gaussians moved
        there)."""
        if not library.native:
            return library.from_numpy(self._kernel(library.to_numpy(X),
                                                   workers=workers, progress=False))
        xp = library.xp
        X = _array_api.check_rows(library, X, "X")
        self._check_width(X.shape[1])
        spec = spec_for("expected", self.params_)
        means, covs = self._split(X, xp)
        K = spec.call((means, covs), self._split(self._train_in(library), xp),
                      self.params_)
        return xp.astype(K, xp.float64)
