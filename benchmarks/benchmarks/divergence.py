"""Benchmarks for the kNN Renyi divergence, the divergence kernel and the
PSD projection.

What is measured
----------------
`RenyiDivergence` times ``kernelmaps.renyi_divergence(sets, alpha=0.99,
k=5)`` (``Y=None``: the full ``(n_sets, n_sets)`` matrix, both directions)
on ``n_sets`` sets of ``n_points`` standard-normal points in ``d``
dimensions, for "100x500x30" (where kd-trees do not help and kernelmaps
uses distance blocks) and "200x100x3", float64 and float32 input, 1 and 2
worker threads. Beside it, ``time_kdtree_numpy`` runs the
`scipy.spatial.cKDTree` reference of `benchmarks/peers.py` on the same data
(one tree per set, queried with all points at once, ``workers`` passed to
``query``; float64 only). `ProjectPSD` times ``project_psd`` on two 2000 x
2000 indefinite kernel matrices, one with 3/4 of its eigenvalues negative
and one with 5 (see `indefinite_kernel`), each method, beside a full
`numpy.linalg.eigh` reconstruction. `PSDProjectorRows` times
``PSDProjector(method).fit`` on the first 2000 rows and columns of such a
2500 x 2500 matrix and ``transform`` of the other 500 rows against the
2000 training columns, for "clip" (the cost of "flip" too) and "square"
("shift" only copies the test rows), beside the NumPy way (full
`numpy.linalg.eigh` of the training kernel, then the test rows times
``V diag(w >= 0) V^T``, or times the training kernel).
`RenyiSmallSets` times ``renyi_divergence`` on 1797 sets of 16-34 points
in 2-D (the size of the digits data as point sets) beside the mean map,
``sum_match_kernel``, on the same sets (target: at most 1.5x its time).
`SetKernelRenyiTransform` times ``SetKernel("renyi").transform`` of 600
test sets against 1197 training sets of that data, and of 150 against 300
sets of 100 points in 16-D, with its kNN part alone (both directions of
the divergences from one search), beside the two searches it replaced
(``renyi_divergence(test, train)`` and ``renyi_divergence(train, test)``).
One search computes each block of distances once where the blocks go
through tiles ("100x16"); small sets in few dimensions ("digits") compute
theirs on the fly, once per direction either way (see ``_flip_points`` in
``kernelmaps/_engine/knn.py``), and take the same time both ways.
`DivergenceKernel` times ``divergence_kernel`` on a 2000 x 2000
non-symmetric divergence matrix, power 1 and 2, beside the NumPy way
(symmetrise, clip, median of the off-diagonal, exp). The ``peakmem_*``
methods give the peak resident memory of the process, input data
included.

Target
------
On the 2-core reference machine, ``renyi_divergence`` at "100x500x30" with
``workers=2`` should take at most 0.15x the time of the cKDTree reference
(``time_kdtree_numpy``, same size, ``workers=2``), with a peak memory that
does not grow with the number of pairs beyond the output.

Running
-------
From the ``benchmarks`` directory (that of asv.conf.json)::

    asv run --python=same --bench divergence \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.divergence  # the ratios and the target

(about 12 minutes on 2 cores, mostly the cKDTree reference at d = 30).
"""

import numpy as np
from asv_runner.benchmarks.mark import skip_for_params
from scipy.spatial.distance import cdist, pdist, squareform

from kernelmaps import (
    Bags,
    PSDProjector,
    divergence_kernel,
    project_psd,
    renyi_divergence,
    sum_match_kernel,
)
from kernelmaps.sets import renyi_divergence_both

from .common import BlasThreads, RunOnce, make_sets, stored_times
from .peers import (
    eigh_project_psd,
    kdtree_renyi_divergence,
    naive_renyi_divergence,
)

SIZES = ("100x500x30", "200x100x3")
DTYPES = ("float64", "float32")
WORKERS = (1, 2)
METHODS = ("clip", "flip", "shift", "square")
MATRICES = ("l1_gaussian", "five_negative")
TARGET = 0.15

# The reference computes in float64 whatever the input: run it on float64.
SKIP_REFERENCE = [(s, "float32", w) for s in SIZES for w in WORKERS]


class RenyiDivergence(RunOnce):
    """`renyi_divergence` against the cKDTree reference, each run once."""

    params = (SIZES, DTYPES, WORKERS)
    param_names = ("size", "dtype", "workers")

    def setup(self, size, dtype, workers):
        self.sets, _ = make_sets(size, dtype)

    def time_kernelmaps(self, size, dtype, workers):
        renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)

    def peakmem_kernelmaps(self, size, dtype, workers):
        renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)

    @skip_for_params(SKIP_REFERENCE)
    def time_kdtree_numpy(self, size, dtype, workers):
        kdtree_renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)

    @skip_for_params(SKIP_REFERENCE)
    def peakmem_kdtree_numpy(self, size, dtype, workers):
        kdtree_renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)


class RenyiDescriptors(RunOnce, BlasThreads):
    """`renyi_divergence` (``Y=None``, k=5) on sets of descriptors,
    "40x200x128" and "20x200x512" (float64 and float32, 1 and 2 workers),
    beside the naive NumPy loop (`peers.naive_renyi_divergence`, its BLAS
    limited to `workers` threads). Target (issue 30): at most 0.3x the
    loop's time."""

    number = 1
    repeat = 3
    params = (("40x200x128", "20x200x512"), DTYPES, WORKERS)
    param_names = ("size", "dtype", "workers")

    def setup(self, size, dtype, workers):
        self.setup_blas(workers)
        self.sets, _ = make_sets(size, dtype)

    def time_kernelmaps(self, size, dtype, workers):
        renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)

    def peakmem_kernelmaps(self, size, dtype, workers):
        renyi_divergence(self.sets, alpha=0.99, k=5, workers=workers)

    def time_numpy_loop(self, size, dtype, workers):
        naive_renyi_divergence(self.sets, alpha=0.99, k=5)


def small_sets(n_sets=1797, low=16, high=35, d=2):
    """`n_sets` standard-normal sets of ``low`` to ``high - 1`` points in
    `d` dimensions (the shape of the 1797 digits as point sets)."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal((n, d)) for n in rng.integers(low, high, n_sets)]


class RenyiSmallSets:
    """`renyi_divergence` (``Y=None``, k=5) on 1797 sets of 16-34 points in
    2-D beside the mean map (`sum_match_kernel`) on the same sets: many
    small blocks, where the per-pair costs (selection, logs) dominate.
    Target (issue 18): at most 1.5x the mean map's time."""

    params = ((1, 2),)
    param_names = ("workers",)
    timeout = 300

    def setup(self, workers):
        self.bags = Bags.from_list(small_sets())

    def time_kernelmaps(self, workers):
        renyi_divergence(self.bags, workers=workers)

    def peakmem_kernelmaps(self, workers):
        renyi_divergence(self.bags, workers=workers)

    def time_mean_map(self, workers):
        sum_match_kernel(self.bags, gamma=0.5, workers=workers)  # 1 / d


class SetKernelRenyiTransform:
    """`SetKernel("renyi").transform` of test sets against training sets:
    both directions of the divergences from one search
    (``time_both_directions``, its kNN part; ``time_transform``, with the
    kernel and its PSD projection), beside two searches of one direction
    each (``time_two_searches``, what ``transform`` ran before). Shapes:
    "digits", 600 test and 1197 training sets of `small_sets` (16-34
    points in 2-D); "100x16", 150 test and 300 training sets of 100
    points in 16-D."""

    params = (("digits", "100x16"), (1, 2))
    param_names = ("shape", "workers")
    timeout = 300

    def setup(self, shape, workers):
        try:
            from kernelmaps.sklearn import SetKernel
        except ImportError:  # scikit-learn not installed: skipped
            raise NotImplementedError from None
        if shape == "digits":
            sets, n_train = small_sets(), 1197
        else:
            rng = np.random.default_rng(0)
            sets, n_train = [rng.standard_normal((100, 16)) for _ in range(450)], 300
        self.train = Bags.from_list(sets[:n_train])
        self.test = Bags.from_list(sets[n_train:])
        try:  # workers at fit and transform (before issue 51: the constructor's)
            self.model = SetKernel("renyi").fit(self.train, workers=workers)
            self.threads = {"workers": workers}
        except TypeError:
            self.model = SetKernel("renyi", workers=workers).fit(self.train)
            self.threads = {}

    def time_transform(self, shape, workers):
        self.model.transform(self.test, **self.threads)

    def time_both_directions(self, shape, workers):
        renyi_divergence_both(self.test, self.train, workers=workers)

    def time_two_searches(self, shape, workers):
        renyi_divergence(self.test, self.train, workers=workers)
        renyi_divergence(self.train, self.test, workers=workers)


def indefinite_kernel(kind, n=2000, d=10):
    """2000 x 2000 indefinite kernels from 2000 standard-normal points in
    10-D: "l1_gaussian", ``exp(-S / median(S))`` with ``S`` the squared L1
    distances (3/4 of its eigenvalues are negative); "five_negative", a
    Gaussian kernel minus a rank-5 PSD matrix (5 negative eigenvalues)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    if kind == "l1_gaussian":
        S = squareform(pdist(x, "cityblock")) ** 2
        return np.exp(-S / np.median(S))
    S = squareform(pdist(x, "sqeuclidean"))
    U = np.linalg.qr(rng.standard_normal((n, 5)))[0]
    return np.exp(-S / np.median(S)) - (U * 10.0) @ U.T


class ProjectPSD:
    """`project_psd` (negative eigenvalues counted first, then a subset or
    all eigenpairs) against a full `numpy.linalg.eigh`."""

    params = (MATRICES, METHODS)
    param_names = ("matrix", "method")
    timeout = 300

    def setup(self, matrix, method):
        self.K = indefinite_kernel(matrix)

    def time_kernelmaps(self, matrix, method):
        project_psd(self.K, method=method)

    def peakmem_kernelmaps(self, matrix, method):
        project_psd(self.K, method=method)

    def time_numpy_eigh(self, matrix, method):
        eigh_project_psd(self.K, method)

    def peakmem_numpy_eigh(self, matrix, method):
        eigh_project_psd(self.K, method)


def numpy_psd_test_rows(K_train, K_test, method):
    """The test rows of `PSDProjector` ("clip" or "square") the NumPy way:
    a full `numpy.linalg.eigh` of the symmetrised training kernel."""
    if method == "square":
        return K_test @ ((K_train + K_train.T) / 2)
    w, V = np.linalg.eigh((K_train + K_train.T) / 2)
    return (K_test @ V[:, w >= 0]) @ V[:, w >= 0].T


class PSDProjectorRows:
    """`PSDProjector` fitted on a 2000 x 2000 indefinite kernel (the
    matrices of `ProjectPSD`, 2500 points) and applied to 500 test rows."""

    params = (MATRICES, ("clip", "square"))
    param_names = ("matrix", "method")
    timeout = 300

    def setup(self, matrix, method):
        K = indefinite_kernel(matrix, n=2500)
        self.K_train = np.ascontiguousarray(K[:2000, :2000])
        self.K_test = np.ascontiguousarray(K[2000:, :2000])
        self.projector = PSDProjector(method).fit(self.K_train)

    def time_fit(self, matrix, method):
        PSDProjector(method).fit(self.K_train)

    def peakmem_fit(self, matrix, method):
        PSDProjector(method).fit(self.K_train)

    def time_transform(self, matrix, method):
        self.projector.transform(self.K_test)

    def peakmem_transform(self, matrix, method):
        self.projector.transform(self.K_test)

    def time_numpy_eigh(self, matrix, method):
        numpy_psd_test_rows(self.K_train, self.K_test, method)

    def peakmem_numpy_eigh(self, matrix, method):
        numpy_psd_test_rows(self.K_train, self.K_test, method)


def divergence_matrix(n=2000, d=10):
    """A non-symmetric ``(n, n)`` matrix like that of `renyi_divergence`:
    squared distances between standard-normal points, each entry scaled by
    a uniform factor in [1, 1.2), and some small negative entries."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    D = cdist(x, x, "sqeuclidean") * (1 + 0.2 * rng.random((n, n)))
    D -= 0.05 * rng.random((n, n))
    return D


def numpy_divergence_kernel(D, power):
    """``exp(-gamma S**power)``, ``S = max((D + D.T) / 2, 0)``,
    ``gamma = 1 / median(off-diagonal S)**power``: the NumPy way."""
    S = np.maximum((D + D.T) / 2, 0)
    gamma = 1 / np.median(S[~np.eye(len(S), dtype=bool)]) ** power
    return np.exp(-gamma * S**power)


class DivergenceKernel:
    """`divergence_kernel` on a 2000 x 2000 divergence matrix."""

    params = ((1, 2),)
    param_names = ("power",)

    def setup(self, power):
        self.D = divergence_matrix()

    def time_kernelmaps(self, power):
        divergence_kernel(self.D, power=power)

    def peakmem_kernelmaps(self, power):
        divergence_kernel(self.D, power=power)

    def time_numpy(self, power):
        numpy_divergence_kernel(self.D, power)

    def peakmem_numpy(self, power):
        numpy_divergence_kernel(self.D, power)


def print_ratios(results_dir=".asv/results"):
    """Print kernelmaps / reference time ratios of every stored result."""
    for label, times in stored_times(results_dir):
        print(label)
        pairs = [
            ("RenyiDivergence", "time_kdtree_numpy", 1),
            ("ProjectPSD", "time_numpy_eigh", 0),
            ("RenyiSmallSets", "time_mean_map", 0),
        ]
        for cls, base_name, drop in pairs:
            ours = times.get(f"divergence.{cls}.time_kernelmaps", {})
            base = times.get(f"divergence.{cls}.{base_name}", {})
            for combo, t in ours.items():
                # Compare with the float64 reference at the same workers.
                key = (combo[0], "float64", combo[2]) if drop else combo
                if key not in base:
                    continue
                ratio = t / base[key]
                line = (f"  {cls:16} {' '.join(combo):26} {t:9.3f} s / "
                        f"{base[key]:9.3f} s = {ratio:6.3f}")
                headline = combo[0] == SIZES[0] and combo[2] == "2"
                if cls == "RenyiDivergence" and headline:
                    line += f"  target <= {TARGET}: "
                    line += "met" if ratio <= TARGET else "MISSED"
                print(line)


if __name__ == "__main__":
    import sys

    print_ratios(*sys.argv[1:])
