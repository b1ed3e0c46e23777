"""Tools over every kind of object the package has a kernel for (sets,
histograms, Gaussians, a precomputed matrix or a callable): Nystroem
features of any kernel (`NystroemMap`) and the kernel two-sample tests
(`mmd_test`), which iterate the kernels' specs (`kernelmaps._spec`). The
layer above the public units: it reaches them through their faces only."""

from ._nystroem import NystroemMap
from ._two_sample import MMDTestResult, mmd_test

__all__ = ["MMDTestResult", "NystroemMap", "mmd_test"]
