"""Base classes of everything that fits: the scikit-learn estimator
protocol, without importing scikit-learn.

The constructor stores its arguments as given; `fit` checks them, learns,
and sets the fitted attributes (names ending in ``_``), replacing those of
an earlier fit, and returns the estimator; ``workers`` (threads) and
``progress`` are arguments of `fit` and `transform`, not of the
constructor; `get_params`, `set_params` and scikit-learn's ``clone`` work
from the constructor's signature (`Estimator`). The feature maps add
`fit_transform`, feature names and output containers (`FeatureMap`). A map
whose frequencies were drawn at random keeps, as ``_draw``, the recipe that
drew them (see `_draws.FourierDraw`): pickles hold the recipe, not the
arrays, so that a map of any size travels to Dask workers or to disk in a
few hundred bytes.
"""

import functools
import importlib.util
import inspect
import sys
import warnings

import numpy as np

from ._array_api import library_of_objects, numpy_objects
from ._bags import Bags
from ._hints import SEED_NAMES, rng_message
from ._lazy import is_lazy
from ._parallel import check_progress, resolve_workers
from ._validation import check_choice, check_size
from ._warnings import PACKAGE, warn_caller

__all__ = ["Estimator", "FeatureMap", "check_weights_kept", "fit_weighted",
           "in_container"]

# `_check_width`'s default: the width of the fit.
_FITTED = object()


class Estimator:
    """Base of everything that fits: the maps, `PSDProjector`, the
    out-of-core models.

    The constructor stores its arguments; `fit` sets the fitted attributes
    through ``self._set_fitted(state)`` and returns self; methods that need
    a fit call ``self._check_fitted()`` first. For scikit-learn's tags: an
    estimator that learns nothing (``_stateless``) needs no fit; the input
    it takes: sets (``_takes_sets``), CSR matrices (``_takes_sparse``),
    non-negative values only (``_positive_only``), kernel matrices
    (``_pairwise``); the dtypes its output keeps (``_preserves_dtype``).
    """

    _stateless = False
    _takes_sets = False
    _takes_sparse = False
    _positive_only = False
    _pairwise = False
    _preserves_dtype = ("float64", "float32")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and "rng" in inspect.signature(init).parameters:
            cls.__init__ = _naming_rng(init)
        if "transform" in cls.__dict__ and issubclass(cls, FeatureMap):
            cls.transform = _as_public_transform(cls.__dict__["transform"])

    @classmethod
    def _param_names(cls):
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep=True):
        """The constructor's arguments, as given.

        Parameters
        ----------
        deep : bool, default=True
            Also the parameters of the maps given as arguments, as
            ``<argument>__<parameter>``.

        Returns
        -------
        dict
        """
        params = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and isinstance(value, Estimator):
                params.update((f"{name}__{k}", v) for k, v in
                              value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params):
        """Set constructor arguments (``<argument>__<parameter>`` for those
        of a map given as an argument); they take effect at the next `fit`.

        Returns
        -------
        self
        """
        names = self._param_names()
        nested = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in names:
                raise ValueError(
                    f"{type(self).__name__} has no parameter {name!r}; its "
                    f"parameters are {', '.join(names)}"
                )
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            value = getattr(self, name)
            if not isinstance(value, Estimator):
                raise ValueError(
                    f"{name} of {type(self).__name__} is {value!r}, which has no "
                    f"parameters: set {name} to a map first"
                )
            value.set_params(**sub)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        shown = [f"{name}={value!r}" for name, value in
                 self.get_params(deep=False).items()
                 if not _is_default(value, defaults[name])]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None, target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(preserves_dtype=list(self._preserves_dtype)),
            input_tags=InputTags(two_d_array=not self._takes_sets,
                                 sparse=self._takes_sparse,
                                 positive_only=self._positive_only,
                                 pairwise=self._pairwise),
            requires_fit=not self._stateless)

    def __sklearn_is_fitted__(self):
        return self._stateless or hasattr(self, "n_features_in_")

    # The fitted arrays a pickle leaves out, drawn again from the recipe
    # kept in the attribute named (a `_draws` record, None where the
    # arrays were given).
    _replayed = (("_draw", ("weights_", "offsets_")),)

    def __getstate__(self):
        state = dict(vars(self))
        state.pop("_on_device_", None)
        for recipe, names in self._replayed:
            if state.get(recipe) is not None:
                for name in names:
                    del state[name]
        return state

    def __setstate__(self, state):
        for recipe, names in self._replayed:
            if state.get(recipe) is not None:
                arrays = state[recipe].replay()
                state.update(zip(names, arrays if len(names) > 1 else [arrays],
                                 strict=True))
        vars(self).update(state)

    def __dask_tokenize__(self):
        from dask.base import normalize_token

        state = {k: v for k, v in vars(self).items()
                 if k not in dict(self._replayed) and k != "_on_device_"}
        return (type(self).__qualname__, normalize_token(sorted(state.items())))

    def _set_fitted(self, state):
        """Replace the fitted attributes of an earlier fit by `state`."""
        for name in [k for k in vars(self)
                     if k.endswith("_") or k in ("_draw", "_fit_weighted")]:
            delattr(self, name)
        vars(self).update(state)
        return self

    def _on_device(self, library, dtype, *names):
        """The fitted NumPy arrays `names` as arrays of `library` on its
        device, in `dtype` (NumPy's float32 or float64): moved once per
        device and dtype, then kept until the next fit (not pickled)."""
        key = (library.name, str(library.device), np.dtype(dtype).str, names)
        kept = vars(self).setdefault("_on_device_", {})
        if key not in kept:
            kept[key] = tuple(library.from_numpy(np.asarray(getattr(self, name),
                                                            dtype=dtype))
                              for name in names)
        return kept[key]

    def _check_fitted(self):
        """Raise the error that says what to call when the map is not
        fitted."""
        if not self.__sklearn_is_fitted__():
            name = type(self).__name__
            method = "transform" if hasattr(self, "transform") else "predict"
            also = ", or fit_transform(X)" if hasattr(self, "fit_transform") else ""
            raise ValueError(
                f"this {name} is not fitted yet: call fit(X) with training data "
                f"first (e.g. {name}(...).fit(X_train).{method}(X)){also}"
            )

    def _check_width(self, width, name="X", expected=_FITTED):
        """Raise the ValueError of an input `name` of `width` features (per
        point, bin or row) where the map was fitted on another width (or,
        given, `expected`; None: any width)."""
        if expected is _FITTED:
            expected = getattr(self, "n_features_in_", None)
        if expected is not None and width != expected:
            raise ValueError(
                f"{name} has {width} features, but {type(self).__name__} is "
                f"expecting {expected} features as input"
            )


class FeatureMap(Estimator):
    """Base of the feature maps.

    Subclasses implement ``_fit(X, workers, progress)``, which checks the
    parameters and `X` and returns the fitted attributes as a dict (with
    ``n_features_in_`` and ``n_features_out_``), or that dict and the
    features of `X` where fitting computes them (a kernel estimator's
    training kernel, `kernelmaps.sklearn`); a `transform` decorated by
    `blocked_rows(check=...)` or `blocked_sets(checked=True)`
    (`kernelmaps._transforms`) gets its input checked (fitted, values,
    feature names, width), others call ``self._check_fitted()`` and
    ``self._check_width`` themselves. Maps that learn nothing
    (``_stateless``) transform without `fit`, inputs of any width. Their
    `transform` checks the memory of its output first and gives it in the
    container of `set_output` (`_as_public_transform`).
    """

    def fit(self, X, y=None, *, workers=None, progress=False):
        """Learn the map's data-dependent parameters from training data; a
        fitted map is fitted again.

        Parameters
        ----------
        X : array_like
            Training data, as `transform` takes it.
        y : None
            Ignored (for the scikit-learn convention).
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show a progress bar where fitting is long (needs tqdm).

        Returns
        -------
        self
            The fitted map.
        """
        self._fitted(X, workers, progress)
        return self

    def fit_transform(self, X, y=None, *, workers=None, progress=False, **kwargs):
        """`fit` the map on `X`, then `transform` `X`.

        Parameters
        ----------
        X : array_like
            Training data.
        y : None
            Ignored.
        workers : int, optional
            Threads; None or -1 means all cores, -2 all but one.
        progress : bool, default=False
            Show progress bars (needs tqdm).
        **kwargs
            Further arguments of `transform`.

        Returns
        -------
        ndarray or sparse matrix
            ``self.fit(X).transform(X)``; the map is fitted afterwards.
        """
        features = self._fitted(X, workers, progress)
        if features is None:
            features = self.transform(X, workers=workers, progress=progress,
                                      **kwargs)
        return in_container(self, features, X)

    def _fitted(self, X, workers, progress):
        """Fit on `X`; the features of `X` where `_fit` gives them too (a
        pair: the fitted attributes, and the features, as the kernel
        estimators give their training kernel), else None.

        Arrays of another library (`kernelmaps._array_api`) that the library
        computes (``library.native``) are fitted by the map's ``_array_fit(
        library, X, n_threads)`` where it has one: it returns what `_fit`
        returns, its features in the library, having read of `X` on the host
        only what the fitted state holds (a sample for a median, landmarks).
        Other arrays of another library are fitted on a NumPy view of them:
        `transform` moves what the map learned to their device."""
        library = library_of_objects(X=X)
        n_threads = resolve_workers(workers)
        on_device = (library is not None and library.native
                     and hasattr(self, "_array_fit"))
        if on_device:
            fitted = self._array_fit(library, X, n_threads)
        else:
            if library is not None:
                X = numpy_objects(library, X)
            fitted = self._fit(X, n_threads, check_progress(progress))
        state, features = fitted if isinstance(fitted, tuple) else (fitted, None)
        self._set_fitted({**state, **fit_weighted(X)})
        if library is None or features is None or on_device:
            return features
        # (computed on the host: where the library computes, transform
        # computes them again there, as a gradient may be asked)
        return None if library.native else library.from_numpy(features)

    def set_output(self, *, transform=None):
        """Set the container of the features that `transform` and
        `fit_transform` return, as scikit-learn's transformers do.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"}, optional
            ``"default"``: the NumPy (or sparse, or Dask) array computed;
            ``"pandas"``: a DataFrame whose columns are
            `get_feature_names_out`, indexed as `X` where `X` is a
            DataFrame; ``"polars"``: a polars DataFrame. None leaves the
            setting as it is. Without a setting of its own, a map follows
            scikit-learn's ``set_config(transform_output=...)`` where
            scikit-learn is imported. Sparse and lazy (Dask) features have
            no DataFrame form: a ValueError says so.

        Returns
        -------
        self
        """
        if transform is not None:
            transform = check_choice(transform, "transform",
                                     ("default", "pandas", "polars"))
            if transform != "default" and importlib.util.find_spec(
                    transform) is None:
                raise ImportError(f"set_output(transform={transform!r}) needs "
                                  f"{transform}: pip install {transform}")
            # (the attribute scikit-learn's own transformers keep it in)
            self._sklearn_output_config = {"transform": transform}
        return self

    def get_feature_names_out(self, input_features=None):
        """Names of the output features: the class name in lower case and
        the column number (``randomfourierfeatures0``, ...).

        Parameters
        ----------
        input_features : None
            Ignored (the outputs are not named after the inputs).

        Returns
        -------
        ndarray of str objects, shape (``n_features_out_``,)
        """
        self._check_fitted()
        if not hasattr(self, "n_features_out_"):
            raise ValueError(f"the output width of this {type(self).__name__} is "
                             f"known once it is fitted")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.n_features_out_)],
                          dtype=object)

    def _check_names(self, X, *, reset):
        """Record the column names of a DataFrame `X` in ``fit`` (`reset`),
        and compare them in ``transform`` as scikit-learn does: an error
        for other names or another order, a warning where only one of the
        two has names."""
        names = _column_names(X)
        if reset:
            return {} if names is None else {"feature_names_in_": names}
        fitted = getattr(self, "feature_names_in_", None)
        cls = type(self).__name__
        if fitted is None and names is not None:
            warnings.warn(f"X has feature names, but {cls} was fitted without "
                          f"feature names", UserWarning, stacklevel=3)
        elif fitted is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {cls} was "
                          f"fitted with feature names", UserWarning, stacklevel=3)
        elif fitted is not None and (len(names) != len(fitted)
                                     or np.any(names != fitted)):
            raise ValueError(
                f"The feature names should match those that were passed during "
                f"fit: X has columns {list(names)}, the map was fitted on "
                f"{list(fitted)} (reorder X's columns as in fit)"
            )
        return {}


def _as_public_transform(transform):
    """`transform` as users call it: the memory of its features checked
    first (a ValueError that names the sizes, not NumPy's MemoryError), its
    features put in the container that `set_output` (or scikit-learn's
    global setting) asks for."""

    name = list(inspect.signature(transform).parameters)[1]  # X, or sets

    @functools.wraps(transform)
    def public_transform(self, *args, **kwargs):
        X = args[0] if args else kwargs.get(name)
        rows, width = _n_objects(X), getattr(self, "n_features_out_", None)
        if rows is not None and width is not None:
            check_size(rows=rows, n_features_out_=width,
                       hint=f"; transform {name} in blocks of rows (or as a "
                            f"Dask array)")
        features = transform(self, *args, **kwargs)
        if sys._getframe(1).f_code.co_filename.startswith(PACKAGE):
            return features  # the package's own calls take the arrays
        return in_container(self, features, X)

    return public_transform


def _n_objects(X):
    """The number of objects (rows, sets) of the input `X` of a map, where
    it is in memory and says; else None."""
    if is_lazy(X) or isinstance(X, tuple):
        return None
    shape = getattr(X, "shape", None)  # (arrays, sparse matrices, Bags)
    if shape is not None:
        return shape[0] if len(shape) and isinstance(shape[0], int) else None
    return len(X) if hasattr(X, "__len__") else None


def in_container(fmap, features, X):
    """The `features` of `X` in the container of the map `fmap`."""
    container = _output_container(fmap)
    if container == "default":
        return features
    name = type(fmap).__name__
    if not isinstance(features, np.ndarray):
        sparse = hasattr(features, "tocsr")  # (scikit-learn's wording)
        what = ("does not support sparse data" if sparse
                else "needs features in memory")
        raise ValueError(
            f"{container.capitalize()} output {what}: {name}.transform gave a "
            f"{type(features).__module__}."
            f"{type(features).__name__} (from {'sparse' if sparse else 'lazy'} "
            f"input); give dense NumPy input, or set_output(transform='default')")
    columns = [f"{name.lower()}{i}" for i in range(features.shape[1])]
    if container == "polars":
        import polars

        return polars.DataFrame(features, schema=columns, orient="row")
    import pandas

    index = X.index if isinstance(X, pandas.DataFrame) else None
    return pandas.DataFrame(features, columns=columns, index=index, copy=False)


def _output_container(fmap):
    """The container of `fmap`'s features: its `set_output`, else
    scikit-learn's global ``transform_output`` where scikit-learn is
    imported, else "default"."""
    config = getattr(fmap, "_sklearn_output_config", {}).get("transform")
    if config is None:
        sklearn = sys.modules.get("sklearn")
        config = (sklearn.get_config().get("transform_output", "default")
                  if sklearn is not None else "default")
    return config


def fit_weighted(X):
    """What `fit` records of `X` for `check_weights_kept`: whether it is a
    `Bags` with point weights."""
    return {"_fit_weighted": isinstance(X, Bags) and X.weights is not None}


def check_weights_kept(estimator, X, name="X"):
    """Warn where `estimator` was fitted on weighted sets and `X` (argument
    `name`) has no weights: the sets lost them on the way (a list of their
    arrays, or an index that took the sets one at a time), and every point
    would silently weigh 1."""
    if getattr(estimator, "_fit_weighted", False) and not fit_weighted(
            X)["_fit_weighted"]:
        warn_caller(
            f"{name} has no point weights, but {type(estimator).__name__} was "
            f"fitted on weighted sets: every point of {name} weighs 1. Pass "
            f"the sets as a Bags with their weights (Bags.from_list(sets, "
            f"weights=...); a weighted Bags indexed by an array, list or mask, "
            f"bags[indices], keeps them)", UserWarning)


def _column_names(X):
    """The column names of a DataFrame, when all are strings; else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(columns, dtype=object)
    if names.ndim != 1 or not len(names) or not all(isinstance(c, str)
                                                    for c in names):
        return None
    return names


def _is_default(value, default):
    """Whether a parameter equals its default (for the repr)."""
    if value is default:
        return True
    if type(value) is not type(default) or isinstance(value, np.ndarray):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _naming_rng(init):
    """`init`, which takes the seed as `rng`, with a TypeError that says so
    for the seed's names in other libraries (scikit-learn's `random_state`,
    `seed`: `_hints.SEED_NAMES`) instead of Python's "unexpected keyword
    argument"."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        seed = next((k for k in kwargs if k in SEED_NAMES), None)
        if seed is not None:
            raise TypeError(rng_message(type(self).__name__, kwargs[seed]))
        init(self, *args, **kwargs)

    return __init__
