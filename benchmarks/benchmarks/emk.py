"""Benchmarks for `EMKFeatures` (EMK-CKSVD).

What is measured
----------------
`EMKFit` times ``EMKFeatures.fit`` on 100000 standard-normal points in 30
dimensions with 200 basis vectors and the default 300 iterations
(``gamma = 1/d``), from a random sample and from k-means, and its peak
memory. `EMKTransform` times ``transform`` of 200 sets of 300 points
(d = 30, ``common.make_sets("200x300x30")``) with that basis, plain
(``levels=0``) and as a 2-level spatial pyramid (positions uniform in the
unit square: 21 cells, 4200 features), with 1 and 2 worker threads, and
``track_gram_error`` the largest error of the feature Gram matrix against the
exact kernel on the first 50 sets. `ExactSumMatchGram` times the exact
``sum_match_kernel`` Gram matrix (``Y=None``) of the same 200 sets beside it.

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
from asv_runner.benchmarks.mark import skip_for_params

from kernelmaps import EMKFeatures, sum_match_kernel

from .common import RunOnce, make_sets

SIZE = "200x300x30"
N_BASIS = 200


def _training_points(n=100000, d=30):
    return np.random.default_rng(1).standard_normal((n, d))


class EMKFit(RunOnce):
    """fit on 100000 x 30 points, 200 basis vectors."""

    params = (("sample", "kmeans"),)
    param_names = ("init",)

    def setup(self, init):
        self.X = _training_points()

    def time_fit(self, init):
        EMKFeatures.fit(self.X, N_BASIS, init=init, rng=0)

    def peakmem_fit(self, init):
        EMKFeatures.fit(self.X, N_BASIS, init=init, rng=0)

    def track_objective_drop(self, init):
        emk = EMKFeatures.fit(self.X, N_BASIS, init=init, rng=0)
        return float(emk.objective_[0] - emk.objective_[-1])


class EMKTransform:
    """transform of 200 sets x 300 points x 30, 200 basis vectors, plain and
    2-level pyramid."""

    params = ((0, 2), (1, 2))
    param_names = ("levels", "workers")
    timeout = 300

    def setup_cache(self):
        # the basis, learned once (on 20000 points) for every run
        return EMKFeatures.fit(_training_points(20000), N_BASIS, rng=0)

    def setup(self, emk, levels, workers):
        self.emk = emk
        self.sets, _ = make_sets(SIZE, np.float64)
        rng = np.random.default_rng(2)
        self.positions = [rng.random((s.shape[0], 2)) for s in self.sets]

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

    @skip_for_params([(0, 2), (2, 1), (2, 2)])
    def track_gram_error(self, emk, levels, workers):
        sets = self.sets[:50]
        F = self.emk.transform(sets)
        K = sum_match_kernel(sets, gamma=self.emk.gamma)
        return float(np.abs(F @ F.T - K).max())


class ExactSumMatchGram(RunOnce):
    """The exact sum_match_kernel Gram of the same 200 sets (Y=None)."""

    params = ((1, 2),)
    param_names = ("workers",)

    def setup(self, workers):
        self.sets, d = make_sets(SIZE, np.float64)
        self.gamma = 1.0 / d

    def time_exact_gram(self, workers):
        sum_match_kernel(self.sets, gamma=self.gamma, workers=workers)
