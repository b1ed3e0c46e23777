"""Deprecations: one warning, one place.

The policy (CONTRIBUTING.rst, "Deprecations"): a public spelling that
changes keeps working for two minor releases, with a DeprecationWarning that
names the release it goes away in and the call to use instead.
"""

import functools
import warnings

import numpy as np

__all__ = ["array_first", "legacy_class_fit", "warn_deprecated"]

# Spellings deprecated in this release are removed in this one.
SINCE = "0.1"
REMOVED_IN = "0.3"


def warn_deprecated(old, new, *, stacklevel=3):
    """Warn that `old` is deprecated in favour of `new` (both code, as the
    user would write them)."""
    warnings.warn(
        f"{old} is deprecated since kernelmaps {SINCE} and will be removed in "
        f"{REMOVED_IN}; use {new} instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class legacy_class_fit:
    """`fit` as an instance method that, called on the class the old way
    (``Map.fit(X, ...)``: a class method that returned a fitted map),
    still works with a deprecation warning.

    ``legacy(cls, X, *args, **kwargs)`` builds the map the old call gave;
    `new` says what to write instead. Accessed on the class, this gives a
    plain function with the instance method's name, signature and docstring
    (for help() and Sphinx); its first argument tells the two calls apart.
    """

    def __init__(self, method, legacy, new):
        self.method = method
        self.legacy = legacy
        self.new = new

    def __get__(self, obj, cls=None):
        method = self.method
        if obj is not None:
            return method.__get__(obj, cls)
        legacy, new = self.legacy, self.new

        @functools.wraps(method)
        def fit(*args, **kwargs):
            if args and isinstance(args[0], cls):  # Map.fit(map, X): unbound
                return method(*args, **kwargs)
            warn_deprecated(f"{cls.__name__}.fit(X, ...) called on the class",
                            new.format(name=cls.__name__))
            return legacy(cls, *args, **kwargs)

        return fit


def array_first(keyword, old, new):
    """Decorate ``__init__`` so that a sequence or array given as its first
    positional argument (the old spelling `old`, ``Map(array)``) is passed
    as ``keyword=`` instead, with a deprecation warning; a scalar there is
    the new first argument. By keyword, nothing is translated."""

    def decorate(init):
        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            if args and _is_array(args[0]) and keyword not in kwargs:
                warn_deprecated(old, new)
                kwargs[keyword], args = args[0], args[1:]
            init(self, *args, **kwargs)

        return __init__

    return decorate


def _is_array(value):
    """Whether `value` is a sequence or array of one or more dimensions
    (a 0-d array and a string are not)."""
    if isinstance(value, str):
        return False
    try:
        return np.ndim(value) > 0
    except ValueError:  # a ragged nested sequence
        return True
