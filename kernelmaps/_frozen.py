"""Base class of the feature maps: immutable and picklable.

A map whose ``weights`` and ``offsets`` were drawn at random keeps, as
``_draw``, the recipe that drew them (see ``draw_fourier``): it is pickled
instead of the arrays, so that a map of any size travels to Dask workers or
to disk in a few hundred bytes, and the arrays are drawn again, and checked,
on unpickling.
"""

import numpy as np

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
        self._frozen = True

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
