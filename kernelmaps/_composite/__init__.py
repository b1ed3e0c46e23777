"""Tools over every kind of object the package has a kernel for (sets,
histograms, Gaussians, a precomputed matrix or a callable): Nystroem
features of any kernel (`NystroemMap`); the specs of the kernels
(`spec_for`), which the scikit-learn adapters and the two-sample tests
(`kernelmaps._two_sample`) compute on. The layer above the public units: it
reaches them through their faces only."""

from ._nystroem import NystroemMap
from ._specs import spec_for

__all__ = ["NystroemMap", "spec_for"]
