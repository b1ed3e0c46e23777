"""Tools over every kind of object the package has a kernel for (sets,
histograms, Gaussians, a precomputed matrix or a callable): Nystroem
features of any kernel (`NystroemMap`), on the kernels' specs
(`kernelmaps._spec`), and the recognition of lazy input the two-sample
tests (`kernelmaps._two_sample`) take. The layer above the public units: it
reaches them through their faces only."""

from ._nystroem import NystroemMap

__all__ = ["NystroemMap"]
