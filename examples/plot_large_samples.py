"""
=====================================================
Large samples: two-sample tests on blocks, and Dask
=====================================================

An exact kernel two-sample test compares every pair of the N = n + m pooled
points: its kernel matrix takes 8 N^2 bytes, 20 GB at N = 50,000.
:func:`kernelmaps.mmd_test` never needs it whole. Beyond a working-memory
budget (:func:`kernelmaps.set_config`, 1024 MiB by default, or the call's
``working_memory``) it streams the kernel in blocks: each pair of ranges of
the pooled points adds its part of every resampled statistic, so that its
memory grows as N times the number of resamples, not as N^2. The resamples
are the same on both paths, and so is the p-value.

The exact kernels take Dask input too, and return a lazy Dask array whose
blocks a cluster computes (each unordered pair of blocks once). This
example measures the memory of both paths of the test, then computes a
kernel matrix between sets on a ``dask.distributed`` ``LocalCluster``.
"""

# %%
# 1. The same test, in memory and on blocks
# -----------------------------------------
# The peak of the memory NumPy allocates during the call (``tracemalloc``
# sees NumPy's arrays), for samples of n = m points in d = 8, a shift of 0.3
# in one coordinate, 199 resamples. The budget of 8 MiB makes every one of
# these tests stream its kernel.

import time
import tracemalloc

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster

import kernelmaps as km

rng = np.random.default_rng(0)
sizes = [250, 500, 1000, 2000]
peak = {"in memory": [], "on blocks": []}
seconds = {"in memory": [], "on blocks": []}
for n in sizes:
    X = rng.normal(size=(n, 8))
    Y = rng.normal(size=(n, 8))
    Y[:, 0] += 0.3
    pvalues = []
    for path, budget in (("in memory", 4096), ("on blocks", 8)):
        tracemalloc.start()
        start = time.perf_counter()
        res = km.mmd_test(X, Y, n_resamples=199, rng=0, working_memory=budget)
        seconds[path].append(time.perf_counter() - start)
        peak[path].append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
        pvalues.append(res.pvalue)
    assert pvalues[0] == pvalues[1]  # the same resamples: the same p-value
    print(f"n = m = {n}: p-value {pvalues[0]:.3f} on both paths; peak "
          f"{peak['in memory'][-1]:.0f} MiB in memory, "
          f"{peak['on blocks'][-1]:.1f} MiB on blocks")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
for path, style in (("in memory", "o-"), ("on blocks", "s-")):
    left.loglog(sizes, peak[path], style, label=path)
    right.semilogx(sizes, seconds[path], style, label=path)
left.set(ylabel="peak memory (MiB)", title="Memory of mmd_test")
right.set(ylabel="seconds", title="Time of mmd_test", ylim=(0, None))
for ax in (left, right):
    ax.set_xticks(sizes, [str(n) for n in sizes], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel("n = m")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
plt.show()

# %%
# The matrix path's memory grows as N^2 (four times per doubling), the
# streamed one's as N (the draws of the resamples, a byte per point and
# resample, and a few blocks). Both do the same products; the streamed test
# does half of them, since each unordered pair of blocks is computed once.
#
# 2. A kernel matrix on a cluster
# -------------------------------
# Sets of points whose points are a Dask array: the exact kernel is a lazy
# Dask array, each of its blocks a task of the cluster. A ``LocalCluster``
# here (two workers on this machine); a ``Client`` of a remote scheduler
# runs the same code.

sets = [rng.normal(loc=i % 2, size=(40, 4)) for i in range(300)]
points = da.from_array(np.concatenate(sets), chunks=40 * 50)  # 50 sets a chunk
bags = km.Bags(points, np.arange(0, 40 * 301, 40))
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, \
        Client(cluster):
    K = km.sum_match_kernel(bags, gamma=0.5)
    print(f"lazy kernel matrix {K.shape}, blocks {K.numblocks}")
    K = K.compute()
assert np.allclose(K, km.sum_match_kernel(sets, gamma=0.5), rtol=1e-12)

fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
image = ax.imshow(K, cmap="viridis")
fig.colorbar(image, ax=ax, label="mean map kernel")
ax.set(title="Computed on a LocalCluster", xlabel="set", ylabel="set")
plt.show()

# %%
# The sets alternate between two distributions (means 0 and 1): the
# kernel's checkerboard is their similarity. Computed block by block on the
# workers, it equals the kernel computed in memory to rounding.
