"""Benchmarks of arrays of other libraries (issue 52), on the CPU.

What is measured
----------------
`SetGramTorch`: the mean map Gram matrix of 120 sets of 80 points, d = 32
(rbf, gamma = 1 / d), float64:

* ``time_numpy``: ``sum_match_kernel`` of the NumPy sets (the compiled
  engine);
* ``time_torch``: of the same sets as one PyTorch tensor (120, 80, 32)
  without a gradient: the engine through the zero-copy exchange, the
  result a tensor;
* ``time_torch_grad``: of a tensor that requires a gradient, computed by
  PyTorch, and the backward pass of the Gram's sum;
* ``time_torch_hand``: what a user writes in PyTorch instead
  (``exp(-gamma cdist^2)`` of the pooled points, the means of its blocks),
  with the same backward pass; ``time_torch_hand_nograd`` without it.

`MMDLossTorch`: the squared MMD between two samples of 2,000 points, d =
64 or 2,048, as a loss (rbf, gamma = 1 / d) and its backward pass:
``mmd`` of the two samples (as one set each) against the three ``cdist``
means a user writes.

`SlicedWassersteinLossTorch`: the squared SW_2 between two samples of
2,000 points, d = 64 or 2,048, on 100 directions, as a loss and its
backward pass: ``sliced_wasserstein`` of the two samples (as one set
each) against the projections, sorts and mean a user writes.

`FitTorch`: maps fitted on NumPy input and on tensors that require a
gradient (fitted by PyTorch, on their device; see the class).

Skipped where PyTorch is not installed (``pip install torch``).

Targets (issue 52)
------------------
PyTorch CPU input without a gradient no slower than NumPy input (1.1x);
with a gradient within 1.5x of the hand-written PyTorch.
"""

import numpy as np

import kernelmaps as km
from kernelmaps.sklearn import SetKernel

from .common import BlasThreads


def _torch():
    try:
        import torch
    except ImportError:  # PyTorch is optional: skipped
        raise NotImplementedError from None
    return torch


class _TorchBench(BlasThreads):
    """A benchmark of PyTorch tensors (skipped where PyTorch is not
    installed): ``setup_torch`` imports it and gives it and the BLAS 2
    threads each."""

    timeout = 300

    def setup_torch(self):
        self.torch = _torch()
        self.setup_blas(2)
        self.torch.set_num_threads(2)


def _hand_gram(torch, sets, gamma):
    n, m, d = sets.shape
    points = sets.reshape(-1, d)
    K = torch.exp(-gamma * torch.cdist(points, points) ** 2)
    return K.reshape(n, m, n, m).mean(dim=(1, 3))


class SetGramTorch(_TorchBench):
    def setup(self):
        self.setup_torch()
        rng = np.random.default_rng(0)
        self.sets = rng.standard_normal((120, 80, 32))
        self.tensor = self.torch.asarray(self.sets)
        self.gamma = 1 / 32

    def time_numpy(self):
        km.sum_match_kernel(self.sets, gamma=self.gamma)

    def time_torch(self):
        km.sum_match_kernel(self.tensor, gamma=self.gamma)

    def time_torch_grad(self):
        sets = self.tensor.clone().requires_grad_()
        km.sum_match_kernel(sets, gamma=self.gamma).sum().backward()

    def time_torch_hand(self):
        sets = self.tensor.clone().requires_grad_()
        _hand_gram(self.torch, sets, self.gamma).sum().backward()

    def time_torch_hand_nograd(self):
        _hand_gram(self.torch, self.tensor, self.gamma)


class _LossTorch(_TorchBench):
    """Two samples of 2,000 points, d = 64 or 2,048, as tensors (1, 2000,
    d) X and Y (shifted by 0.1), drawn with `seed`, on 2 threads; the
    `rng` left for more draws."""

    params = (64, 2048)
    param_names = ("d",)
    seed = None

    def setup(self, d):
        self.setup_torch()
        self.rng = np.random.default_rng(self.seed)
        self.X = self.torch.asarray(self.rng.standard_normal((1, 2000, d)))
        self.Y = self.torch.asarray(self.rng.standard_normal((1, 2000, d)) + 0.1)


class MMDLossTorch(_LossTorch):
    seed = 1

    def setup(self, d):
        super().setup(d)
        self.gamma = 1 / d

    def time_ours(self, d):
        X = self.X.clone().requires_grad_()
        km.mmd(X, self.Y, gamma=self.gamma, squared=True).sum().backward()

    def time_hand(self, d):
        torch, gamma = self.torch, self.gamma
        X = self.X.clone().requires_grad_()

        def mean_kernel(a, b):
            return torch.exp(-gamma * torch.cdist(a, b) ** 2).mean()

        a, b = X[0], self.Y[0]
        (mean_kernel(a, a) + mean_kernel(b, b) - 2 * mean_kernel(a, b)).backward()


class SlicedWassersteinLossTorch(_LossTorch):
    seed = 2

    def setup(self, d):
        super().setup(d)
        directions = self.rng.standard_normal((100, d))
        self.directions = directions / np.linalg.norm(directions, axis=1,
                                                      keepdims=True)
        self.W = self.torch.asarray(self.directions.T)

    def time_ours(self, d):
        X = self.X.clone().requires_grad_()
        D = km.sliced_wasserstein(X, self.Y, projections=self.directions)
        (D**2).sum().backward()

    def time_hand(self, d):
        torch = self.torch
        X = self.X.clone().requires_grad_()
        a = torch.sort(X[0] @ self.W, dim=0).values
        b = torch.sort(self.Y[0] @ self.W, dim=0).values
        ((a - b) ** 2).mean().backward()


class MMDTestTorch(_TorchBench):
    """`mmd_test` of 1,000 against 1,000 points, d = 32, 199 resamples:
    ``time_numpy`` on the compiled engine, ``time_native`` of tensors that
    require a gradient, which PyTorch computes (on this CPU: the device
    path, `_two_sample.on_device`), per method."""

    params = ("permutation", "aggregated", "cross", "linear")
    param_names = ("method",)
    def setup(self, method):
        self.setup_torch()
        rng = np.random.default_rng(4)
        self.X = rng.standard_normal((1000, 32))
        self.Y = rng.standard_normal((1000, 32)) + 0.05
        self.options = dict(method=method, rng=0, n_resamples={
            "permutation": 199, "aggregated": (100, 100)}.get(method))

    def time_numpy(self, method):
        km.mmd_test(self.X, self.Y, **self.options)

    def time_native(self, method):
        km.mmd_test(self.torch.asarray(self.X).requires_grad_(),
                    self.torch.asarray(self.Y), **self.options)


class FitTorch(_TorchBench):
    """``fit`` (``fit_transform`` for the kernel estimators) of a map on
    NumPy input (``time_numpy``) and on tensors that require a gradient,
    fitted by PyTorch on their device (``time_native``, this CPU here):
    RandomFourierFeatures (gamma=None: the median heuristic's sample) of
    100,000 points, d = 32; NystroemMap (mean map, 100 landmarks) of 300
    sets of 50 points, d = 16; SetKernel (mean map) of 120 sets of 80
    points, d = 32; PSDProjector of an indefinite 600 x 600 matrix."""

    params = ("rff", "nystroem", "set_kernel", "psd")
    param_names = ("map",)
    def setup(self, name):
        self.setup_torch()
        rng = np.random.default_rng(5)
        if name == "rff":
            self.data, self.map = rng.standard_normal((100_000, 32)), (
                lambda: km.RandomFourierFeatures(200, rng=0))
        elif name == "nystroem":
            self.data, self.map = rng.standard_normal((300, 50, 16)), (
                lambda: km.NystroemMap(100, rng=0))
        elif name == "set_kernel":
            self.data, self.map = rng.standard_normal((120, 80, 32)), (
                lambda: SetKernel(gamma=1 / 32))
        else:
            A = rng.standard_normal((600, 600))
            self.data, self.map = A + A.T, lambda: km.PSDProjector()
        self.method = "fit" if name in ("rff", "nystroem") else "fit_transform"

    def time_numpy(self, name):
        getattr(self.map(), self.method)(self.data)

    def time_native(self, name):
        getattr(self.map(), self.method)(self.torch.asarray(self.data)
                                         .requires_grad_())


class OutOfCoreTorch(_TorchBench):
    """``rf_ridge`` (random Fourier features, 512 of them, 64 principal
    components) of 50,000 rows, d = 32, two targets, and its ``predict``
    of the same rows: on NumPy input (``time_numpy``), on one PyTorch
    tensor without a gradient (``time_torch``: the map's engine through
    the zero-copy exchange, each block's features read on the host for the
    moments) and with one (``time_torch_grad``: the features and their
    moments by PyTorch, the moments read on the host once)."""

    params = ("fit", "predict")
    param_names = ("step",)
    def setup(self, step):
        self.setup_torch()
        rng = np.random.default_rng(6)
        self.X = rng.standard_normal((50_000, 32))
        self.y = np.c_[np.sin(self.X[:, 0]), self.X[:, 1] ** 2]
        self.map = km.RandomFourierFeatures(512, rng=0).fit(self.X[:1000])
        self.model = km.rf_ridge(self.X, self.y, self.map, 64)

    def _run(self, step, X, y):
        if step == "fit":
            km.rf_ridge(X, y, self.map, 64)
        else:
            self.model.predict(X)

    def time_numpy(self, step):
        self._run(step, self.X, self.y)

    def time_torch(self, step):
        self._run(step, self.torch.asarray(self.X), self.torch.asarray(self.y))

    def time_torch_grad(self, step):
        self._run(step, self.torch.asarray(self.X).requires_grad_(),
                  self.torch.asarray(self.y))
