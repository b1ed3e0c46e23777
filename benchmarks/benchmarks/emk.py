"""Benchmarks for `EMKFeatures` (EMK-CKSVD).

What is measured
----------------
`EMKFit` times ``EMKFeatures(200, gamma=1/d).fit`` on 100000
standard-normal points in 30 dimensions with 200 basis vectors and the
default 300 iterations, from a random sample and from k-means, and its peak
memory, beside the fit of scikit-learn's ``Nystroem`` (200 components, a
random sample: the basis EMK-CKSVD improves on). `EMKTransform` times
``transform`` of 200 sets of 300 points
(d = 30, ``common.make_sets("200x300x30")``) with that basis, plain
(``levels=0``) and as a 2-level spatial pyramid (positions uniform in the
unit square: 21 cells, 4200 features), with 1 and 2 worker threads, and
``track_gram_error`` the largest error of the feature Gram matrix against the
exact kernel on the first 50 sets; beside it (``levels=0``), the exact
``sum_match_kernel`` Gram matrix (``Y=None``) of the 200 sets and
``Nystroem.transform`` of all their points followed by the per-set means
(workers=1: it takes no ``workers``). The exact Gram and the fit run once
(`common.RunOnce`, `common.run_once`).

Target
------
``EMKFit.time_fit`` under 30 s at ``init="sample"`` on the 2-core reference
machine; the transform (with the Gram of the features) far below the exact
Gram.

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench emk --set-commit-hash $(git rev-parse HEAD)
"""

import numpy as np
from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params

from kernelmaps import Bags, EMKFeatures, sum_match_kernel

from .common import RunOnce, make_sets, run_once

try:
    from sklearn.kernel_approximation import Nystroem
except ImportError:  # scikit-learn is optional
    Nystroem = None

SIZE = "200x300x30"
N_BASIS = 200
GAMMA = 1 / 30  # 1 / d


def _training_points(n=100000, d=30):
    return np.random.default_rng(1).standard_normal((n, d))


def _nystroem(points, gamma):
    """scikit-learn's Nystroem (rbf, N_BASIS components) fitted on `points`;
    None without scikit-learn."""
    if Nystroem is None:
        return None
    nystroem = Nystroem(kernel="rbf", gamma=gamma, n_components=N_BASIS,
                        random_state=0)
    return nystroem.fit(points)


def _need_sklearn():
    if Nystroem is None:
        raise SkipNotImplemented("scikit-learn is not installed")


class EMKFit(RunOnce):
    """fit on 100000 x 30 points, 200 basis vectors."""

    params = (("sample", "kmeans"),)
    param_names = ("init",)

    def setup(self, init):
        self.X = _training_points()

    def time_fit(self, init):
        EMKFeatures(N_BASIS, gamma=GAMMA, init=init, rng=0).fit(self.X)

    def peakmem_fit(self, init):
        EMKFeatures(N_BASIS, gamma=GAMMA, init=init, rng=0).fit(self.X)

    @skip_for_params([("kmeans",)])
    def time_sklearn_nystroem_fit(self, init):
        _need_sklearn()
        _nystroem(self.X, 1.0 / self.X.shape[1])

    def track_objective_drop(self, init):
        emk = EMKFeatures(N_BASIS, gamma=GAMMA, init=init, rng=0).fit(self.X)
        return float(emk.objective_[0] - emk.objective_[-1])


class EMKInit:
    """A given basis, ``EMKFeatures(basis=basis).fit(basis)`` (the
    constructor stores it; fit checks it and computes the projection once):
    the eigendecomposition of the basis kernel matrix (n_basis x n_basis)
    behind its projection, run on one BLAS thread (with a busy process on
    one core, on all BLAS threads the fits' small LAPACK calls took 7-12 s
    where one thread takes 0.19 s)."""

    params = ((200, 500),)
    param_names = ("n_basis",)

    def setup(self, n_basis):
        self.basis = _training_points(n_basis)

    def time_init(self, n_basis):
        EMKFeatures(basis=self.basis, gamma=GAMMA).fit(self.basis)


class EMKTransform:
    """transform of 200 sets x 300 points x 30, 200 basis vectors, plain and
    2-level pyramid."""

    params = ((0, 2), (1, 2))
    param_names = ("levels", "workers")
    timeout = 300

    def setup_cache(self):
        # the basis, learned once (on 20000 points) for every run
        return EMKFeatures(N_BASIS, gamma=GAMMA, rng=0).fit(_training_points(20000))

    def setup(self, emk, levels, workers):
        self.emk = emk
        self.sets, _ = make_sets(SIZE, np.float64)
        rng = np.random.default_rng(2)
        self.positions = [rng.random((s.shape[0], 2)) for s in self.sets]
        self.bags = Bags.from_list(self.sets)
        self.nystroem = _nystroem(_training_points(20000), emk.gamma_)

    def time_transform(self, emk, levels, workers):
        self.emk.transform(self.sets, self.positions, levels=levels,
                           workers=workers)

    def peakmem_transform(self, emk, levels, workers):
        self.emk.transform(self.sets, self.positions, levels=levels,
                           workers=workers)

    def time_features_and_gram(self, emk, levels, workers):
        F = self.emk.transform(self.sets, self.positions, levels=levels,
                               workers=workers)
        F @ F.T

    @run_once
    @skip_for_params([(2, 1), (2, 2)])
    def time_exact_gram(self, emk, levels, workers):
        sum_match_kernel(self.sets, gamma=self.emk.gamma_, workers=workers)

    @skip_for_params([(0, 2), (2, 1), (2, 2)])
    def time_sklearn_nystroem(self, emk, levels, workers):
        _need_sklearn()
        Z = self.nystroem.transform(self.bags.points)
        np.add.reduceat(Z, self.bags.offsets[:-1], axis=0) / self.bags.sizes[:, None]

    @skip_for_params([(0, 2), (2, 1), (2, 2)])
    def track_gram_error(self, emk, levels, workers):
        sets = self.sets[:50]
        F = self.emk.transform(sets)
        K = sum_match_kernel(sets, gamma=self.emk.gamma_)
        return float(np.abs(F @ F.T - K).max())
