"""Base class of the feature maps: immutable and picklable."""

import numpy as np

__all__ = ["Frozen"]


class Frozen:
    """Immutable after construction (arrays read-only), and picklable."""

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} objects are immutable")
        object.__setattr__(self, name, value)

    def _freeze(self):
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        self._frozen = True

    def __setstate__(self, state):
        object.__setattr__(self, "__dict__", dict(state, _frozen=False))
        self._freeze()
