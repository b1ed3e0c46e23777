"""Base class of the feature maps: immutable and picklable.

A map whose ``weights`` and ``offsets`` were drawn at random keeps, as
``_draw``, the recipe that drew them (see ``draw_fourier``): it is pickled
instead of the arrays, so that a map of any size travels to Dask workers or
to disk in a few hundred bytes, and the arrays are drawn again, and checked,
on unpickling.
"""

import functools
import inspect

import numpy as np

from ._parallel import check_progress, resolve_workers

__all__ = ["Frozen"]


class Frozen:
    """Immutable after construction (arrays read-only views), and
    picklable."""

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} objects are immutable")
        object.__setattr__(self, name, value)

    def _freeze(self):
        # Read-only views, not the arrays themselves made read-only: an
        # array the constructor did not copy stays writeable for its owner
        # (constructors copy what they are given, so that the map never
        # changes either).
        for name, value in list(vars(self).items()):
            if isinstance(value, np.ndarray):
                view = value.view()
                view.flags.writeable = False
                object.__setattr__(self, name, view)
        object.__setattr__(self, "_frozen", True)

    def __dask_tokenize__(self):
        # Immutable: the same parameters give the same Dask key.
        from dask.base import normalize_token

        state = {k: v for k, v in vars(self).items() if k != "_draw"}
        return (type(self).__qualname__, normalize_token(sorted(state.items())))

    def __getstate__(self):
        state = dict(vars(self))
        if state.get("_draw") is not None:
            del state["weights"], state["offsets"]
        return state

    def __setstate__(self, state):
        state = dict(state, _frozen=False)
        if state.get("_draw") is not None:
            state["weights"], state["offsets"] = state["_draw"].replay()
        object.__setattr__(self, "__dict__", state)
        self._freeze()


class FeatureMap(Frozen):
    """Base of the feature maps: one construction convention for all.

    The constructor takes the hyperparameters (checked there) and the map
    is then immutable; `fit` learns the data-dependent state from training
    data, once, and returns the map; `transform` needs it. A fitted map
    never changes: `fit` on it raises (build a new map to fit other data),
    so a map shared with Dask workers or pickled stays what it was. Maps
    that learn nothing (``_stateless``) are usable without `fit`, and take
    inputs of any width until `fit` records one.

    Subclasses implement ``_fit(X, workers, progress)``, which returns the
    fitted attributes as a dict (set here, then frozen) and among them what
    makes ``n_features_in`` the width of `X`; in `transform` they call
    ``self._check_fitted()`` first, then ``self._check_width`` on the width
    of the input.
    """

    _stateless = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and "rng" in inspect.signature(init).parameters:
            cls.__init__ = _naming_rng(init)

    @property
    def is_fitted(self):
        """Whether the map can transform data (stateless maps always can)."""
        return self._stateless or getattr(self, "_fitted", False)

    def fit(self, X, y=None, *, workers=None, progress=False):
        """Learn the map's data-dependent parameters from training data.

        Parameters
        ----------
        X : array_like
            Training data, as `transform` takes it.
        y : None
            Ignored (for the scikit-learn convention).
        workers : int, optional
            Threads; None or -1 means all cores.
        progress : bool, default=False
            Show a progress bar where fitting is long (needs tqdm).

        Returns
        -------
        self
            The fitted map; it never changes afterwards.

        Raises
        ------
        ValueError
            If the map is already fitted.
        """
        workers, progress = resolve_workers(workers), check_progress(progress)
        if getattr(self, "_fitted", False):
            raise ValueError(
                f"this {type(self).__name__} is already fitted, and a fitted map "
                f"never changes: build a new one to fit other data, e.g. "
                f"{type(self).__name__}(...).fit(X)"
            )
        self._set_state(self._fit(X, workers, progress))
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
            Threads; None or -1 means all cores.
        progress : bool, default=False
            Show progress bars (needs tqdm).
        **kwargs
            Further arguments of `transform`.

        Returns
        -------
        ndarray or sparse matrix
            ``self.fit(X).transform(X)``; the map is fitted afterwards.
        """
        self.fit(X, workers=workers, progress=progress)
        return self.transform(X, workers=workers, progress=progress, **kwargs)

    def _fit(self, X, workers, progress):
        raise NotImplementedError

    def _set_state(self, state):
        """Make the map fitted with the attributes `state` (a dict)."""
        object.__setattr__(self, "_frozen", False)
        vars(self).update(state, _fitted=True)
        self._freeze()

    def _check_width(self, width, name="X"):
        """Raise the ValueError of an input `name` of `width` features (per
        point, bin or row) where the map was fitted on another width."""
        expected = self.n_features_in
        if expected is not None and width != expected:
            raise ValueError(
                f"{name} has {width} features, but this map was fitted on data "
                f"with {expected} features"
            )

    def _check_fitted(self):
        """Raise the error that says what to call when the map is not
        fitted."""
        if not self.is_fitted:
            name = type(self).__name__
            raise ValueError(
                f"this {name} is not fitted yet: call fit(X) with training data "
                f"first (e.g. {name}(...).fit(X_train).transform(X)), or "
                f"fit_transform(X)"
            )


def _naming_rng(init):
    """`init`, which takes the seed as `rng`, with a TypeError that says so
    for scikit-learn's name, `random_state` (instead of Python's
    "unexpected keyword argument")."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if "random_state" in kwargs:
            raise TypeError(
                f"{type(self).__name__} takes the seed as rng (an int or a "
                f"numpy.random.Generator, as in SciPy): write "
                f"rng={kwargs['random_state']!r}; random_state is the name "
                f"of the scikit-learn adapters (kernelmaps.sklearn)"
            )
        init(self, *args, **kwargs)

    return __init__
