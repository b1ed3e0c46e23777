"""Benchmarks for the kNN Renyi divergence and the PSD projection.

What is measured
----------------
`RenyiDivergence` times ``kernelmaps.renyi_divergence(sets, alpha=0.99,
k=5)`` (``Y=None``: the full ``(n_sets, n_sets)`` matrix, both directions)
on ``n_sets`` sets of ``n_points`` standard-normal points in ``d``
dimensions, for "100x500x30" (where kd-trees do not help and kernelmaps
uses distance blocks) and "200x100x3", float64 and float32 input, 1 and 2
worker threads. Beside it, ``time_kdtree_numpy`` runs the
`scipy.spatial.cKDTree` reference of `kernelmaps._naive` on the same data
(one tree per set, queried with all points at once, ``workers`` passed to
``query``; float64 only). `ProjectPSD` times ``project_psd`` on two 2000 x
2000 indefinite kernel matrices, one with 3/4 of its eigenvalues negative
and one with 5 (see `indefinite_kernel`), each method, beside a full
`numpy.linalg.eigh` reconstruction. The ``peakmem_*`` methods give the
peak resident memory of the process, input data included.

Target
------
On the 2-core reference machine, ``renyi_divergence`` at "100x500x30" with
``workers=2`` should take at most 0.15x the time of the cKDTree reference
(``time_kdtree_numpy``, same size, ``workers=2``), with a peak memory that
does not grow with the number of pairs beyond the output.

Running
-------
From the ``benchmarks`` directory (that of asv.conf.json)::

    asv run --python=same --bench "RenyiDivergence|ProjectPSD" \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.divergence  # the ratios and the target

(about 10 minutes on 2 cores, mostly the cKDTree reference at d = 30).
"""

import numpy as np
from asv_runner.benchmarks.mark import skip_for_params
from scipy.spatial.distance import pdist, squareform

from kernelmaps import project_psd, renyi_divergence
from kernelmaps._naive import eigh_project_psd, kdtree_renyi_divergence

from .common import RunOnce, make_sets, stored_times

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


def print_ratios(results_dir=".asv/results"):
    """Print kernelmaps / reference time ratios of every stored result."""
    for label, times in stored_times(results_dir):
        print(label)
        pairs = [
            ("RenyiDivergence", "time_kdtree_numpy", 1),
            ("ProjectPSD", "time_numpy_eigh", 0),
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
