"""Kernel two-sample tests: `mmd_test`.

Every resampled statistic comes from the kernel of the pooled sample, a
matrix per kernel and scale computed once where it fits the working memory
(`_in_memory`), else blocks of it computed once per batch of resamples
(`_on_blocks`, `_blocked.py`); the resamples are evaluated together, a
block of them per matrix product:

- Permutations. With the pooled kernel matrix K (N = n + m points) with its
  diagonal set to 0 (K0), and a permutation given as the indicator s of the
  points it puts in the first sample, the within and between sums of the
  MMD statistic are

      Sxx = s' K0 s,  Sxy = r' s - Sxx,  Syy = T - 2 r' s + Sxx,

  with r = K0 1 and T = 1' K0 1. Only Sxx needs the matrix: for a block of
  permutations S (N x b), the column sums of S * (K0 S), one GEMM. The
  diagonal (k(x, x)) enters only the biased statistic.
- Wild bootstrap (n = m). With H = Kxx + Kyy - Kxy - Kyx (n x n) with its
  diagonal set to 0, the statistic of Rademacher signs e is e' H e /
  (n (n - 1)). Flipping e_i swaps x_i and y_i (it changes the sign of row
  and column i of H), so this is a randomization test too, and exact.
- Swaps of paired points (the aggregated test, n != m). The same group of
  permutations as the wild bootstrap, over the min(n, m) pairs (x_i, y_i),
  the points beyond them staying in their sample: the unbiased MMD^2 of
  each swapped split is a constant, a linear form and the quadratic form
  of the pairs' H in the signs (`_swap_form`), so unequal sizes cost what
  equal ones do, not the (n + m)^2 products of permutations.

The kernels of the aggregated and fused tests share the work between their
scales (`kernelmaps._spec`: one distance block for every scale; the point kernels'
values at c times a gamma from their logarithm).
"""

import contextlib
import copy
import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import scipy.special
import scipy.stats

from .._base import FeatureMap
from .._config import working_memory_bytes
from .._engine import lapack
from .._engine.pair_sums import shifted_matrix
from .._engine.progress import progress_bar
from .._engine.schedule import MAP_VALUE_WORK, run_chunked, thread_map
from .._hints import takes_hints
from .._parallel import check_progress, resolve_workers
from .._probes import is_dask_array
from .._spec import (
    BANDWIDTH_SAMPLE,
    KINDS,
    N_BANDWIDTHS,
    SPECS,
    PrecomputedSpec,
    check_precomputed,
    computed,
    object_kind,
    point_gamma,
    pool_any,
    spec_for,
    value_sample,
)
from .._validation import (
    check_bool,
    check_choice,
    check_dtype,
    check_rng,
    check_rows,
    check_scalar,
    check_size,
)
from .._warnings import (
    constant_value,
    degenerate,
    degenerate_message,
    warn_cost,
    warn_degenerate,
)
from ._blocked import (
    Layout,
    column_dots,
    degenerate_kinds,
    pooled_vectors,
    product_draws,
    products_dtype,
    range_total,
    run_blocks,
)
from ._dask_blocks import (
    cross_dask,
    cross_part,
    is_lazy_input,
    lazy_samples,
    run_blocks_dask,
)
from ._featured import (
    feature_pass,
    pass_bytes,
    pass_steps,
    split_mmd2,
    split_statistic,
)
from ._weighted_chi2 import weighted_chi2_sf as _weighted_chi2_sf

__all__ = ["MMDTestResult", "mmd_test"]

_METHODS = ("permutation", "wild_bootstrap", "aggregated", "fuse", "linear",
            "cross")
# Defaults: resamples of the single-kernel tests, (B1, B2) of MMDAgg, B of
# MMD-FUSE (as in the authors' code); features of the linear test.
_N_RESAMPLES = 999
_N_RESAMPLES_AGG = (2000, 2000)
_N_RESAMPLES_FUSE = 2000


@dataclass(repr=False)
class MMDTestResult:
    """Result of `mmd_test`, in the style of SciPy's test results: its
    parameters are its attributes.

    Parameters
    ----------
    statistic : float or ndarray
        The test statistic: the MMD^2 estimate (permutation: unbiased or
        biased; wild bootstrap: the U-statistic over pairs ``i != j``,
        without the terms ``k(x_i, y_i)``, see `mmd_test`), the MMD^2
        estimate of each kernel, shape ``(L,)`` (aggregated: the wild
        bootstrap's for samples of equal size, else the unbiased one), the
        squared distance of the mean features (linear: the biased MMD^2 of
        the features' linear kernel), the studentised cross MMD^2 (cross),
        the fused statistic (fuse: see `mmd_test`).
    pvalue : float
        The p-value. For the resampling tests it is
        ``(1 + #{null >= statistic}) / (1 + B)``, exact at every level.
    null_distribution : ndarray or None
        The resampled statistics, shape ``(B,)`` (fuse: the fused ones);
        for the aggregated test those used for the quantiles, shape ``(L,
        B1)``; None for the linear test.
    reject : bool
        Whether the test rejects the null hypothesis at level `alpha`
        (``pvalue <= alpha``).
    alpha : float
        The level.
    method : str
        The method.
    kernel : str or ndarray
        The kernel (for the aggregated and fused tests, of each of their L
        kernels; for the linear test, the feature map's class name when it
        is not a random Fourier map).
    gamma : float or ndarray or None
        The kernel's scale (of each kernel, for the aggregated and fused
        tests; None for a kernel without one).
    pvalues : ndarray or None
        Aggregated test: the p-value of each single test (not corrected for
        the multiple testing).
    thresholds : ndarray or None
        Aggregated test: each single test's threshold after the level
        correction; the test rejects when some ``statistic > thresholds``.

    Examples
    --------
    >>> import numpy as np
    >>> import kernelmaps as km
    >>> rng = np.random.default_rng(0)
    >>> res = km.mmd_test(rng.normal(size=(50, 2)), rng.normal(size=(60, 2)),
    ...                   n_resamples=99, rng=0)
    >>> res.null_distribution.shape, res.method, res.kernel
    ((99,), 'permutation', 'rbf')
    >>> bool(res.reject) == (res.pvalue <= res.alpha)
    True
    """

    statistic: object
    pvalue: float
    null_distribution: object
    reject: bool
    alpha: float
    method: str
    kernel: object
    gamma: object
    pvalues: object = None
    thresholds: object = None

    def __repr__(self):
        shown = ["statistic", "pvalue", "reject", "method", "kernel", "gamma"]
        fields = ", ".join(f"{name}={_short(getattr(self, name))}"
                           for name in shown)
        return f"MMDTestResult({fields})"


def _short(value):
    if isinstance(value, np.ndarray):
        return f"<array of shape {value.shape}>"
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


@takes_hints("samples")
def mmd_test(X, Y, *, kernel=None, gamma=None, method="permutation",
             n_resamples=None, incomplete=None, alpha=0.05, unbiased=True,
             feature_map=None, kernel_params=None, dtype=None, rng=None,
             workers=None, progress=False, working_memory=None):
    r"""Kernel two-sample test: were the samples `X` and `Y` drawn from the
    same distribution?

    The samples hold points, or objects of any kind this package has a
    kernel for: sets of points (point clouds, bags of descriptors),
    histograms, Gaussians, or anything a callable kernel takes; or the test
    is given the kernel matrix of the pooled sample. The test statistic is
    the squared maximum mean discrepancy (MMD) between the two samples
    under the kernel, which is 0 between equal distributions and positive
    between different ones for a characteristic kernel [1]_. Its null
    distribution is found by resampling (permutations of the pooled
    sample, or a wild bootstrap), or from its asymptotic law (the linear-time
    test on explicit features, the cross test). A permutation test is exact
    for any kernel, positive definite or not.

    Parameters
    ----------
    X : array_like (n, d), sets, histograms, (means, covs), objects, or a matrix
        The first sample (at least 2 objects), of the kind `kernel` takes:
        points, one per row; a collection of sets (a `Bags`, a sequence of
        ``(n_i, d)`` arrays or a 3-D array); histograms, the rows of a 2-D
        array or a `scipy.sparse` matrix; Gaussians as a pair ``(means,
        covs)`` (as `gaussian_expected_kernel` takes them); a sequence of
        any objects for a callable kernel. For ``kernel="precomputed"``:
        the kernel matrix of the pooled sample, (N, N) (for the aggregated
        test also (L, N, N), one matrix per kernel).
    Y : same as X, or array_like (N,)
        The second sample, of the same kind; for ``kernel="precomputed"``
        the sample of each row of `X`: 0 (or False) for the first, 1 (or
        True) for the second, as R's ``maotai::mmd2test(K, label)``.
    kernel : str, callable or sequence of str, optional
        The kernel, and the objects it takes:

        - points: ``"rbf"`` (:math:`\exp(-\gamma \|x - y\|^2)`),
          ``"laplacian"`` (:math:`\exp(-\gamma \|x - y\|_1)`);
        - sets: ``"mean_map"`` (`sum_match_kernel`), ``"mmd"``
          (`mmd_kernel`), ``"renyi"`` (`divergence_kernel` of the kNN
          `renyi_divergence`), ``"sliced_wasserstein"``
          (`sliced_wasserstein_kernel`, its directions drawn once from
          `rng`);
        - histograms: ``"chi2"`` (`additive_chi2_kernel`), ``"exp_chi2"``,
          ``"intersection"``, ``"hellinger"``, ``"js"`` (the ``*_kernel``
          functions);
        - Gaussians: ``"expected"`` (`gaussian_expected_kernel`);
        - ``"precomputed"``: `X` is the pooled kernel matrix, `Y` the
          labels;
        - a callable ``kernel(A, B, **kernel_params)`` returning the matrix
          between the objects of two sequences (the pooled sample against
          itself: called once).

        None means "rbf" (the aggregated test: ``("laplacian", "rbf")``, as
        in [3]_), or "mean_map" where `X` is a collection of sets. The
        aggregated test takes a list of kernels of one kind of object.
    gamma : float or array_like, optional
        The kernel's scale: the point kernel's gamma ("rbf", "laplacian",
        "mean_map", "expected"), ``gamma2`` of "mmd", ``beta`` of
        "exp_chi2", gamma of the divergence kernel ("renyi") and of
        "sliced_wasserstein"; the other
        kernels have none (leave it None). None means a rule on the pooled
        sample that does not depend on which object is in which sample, so
        that the test stays exact: for a point kernel the median heuristic
        (``1 / median`` of the squared Euclidean, or L1, distances between
        the points of a sample of at most 1000 of them, chosen by the
        points' values, not their order or sample); for "mmd" and
        "exp_chi2" ``1 / median`` of the MMD^2 or chi2 distances between
        the pooled objects (at most 1000 of them, chosen by their values);
        for "renyi" the divergence kernel's own median rule on the same
        objects; for "sliced_wasserstein" ``1 / median`` of SW_2^2 between
        them. For the aggregated test, a 1-D array of scales used with each
        kernel; None means 10 per kernel, MMDAgg's rule applied to the
        kernel's distance: bandwidths spaced geometrically from half the
        5 % quantile to twice the largest of the distances (of that sample
        of the pooled points; of the pooled objects for "mmd", "exp_chi2"
        and "renyi"). This is not the rule of the authors' code for [3]_,
        which takes the distances between the first 500 points of X and
        the first 500 of Y: those depend on which points are in which
        sample, and so does the kernel, which the resampled statistics then
        share with the observed one. The rule here depends on the pooled
        values only (split-invariant), so the test stays exact.
    method : {"permutation", "wild_bootstrap", "aggregated", "fuse", "linear", "cross"}
        - "permutation": the MMD^2 estimate against its values on random
          permutations of the pooled sample.
        - "wild_bootstrap": samples of equal size only: the U-statistic of
          ``h = k(x_i, x_j) + k(y_i, y_j) - k(x_i, y_j) - k(y_i, x_j)``
          over the pairs ``i != j`` against its values with Rademacher
          weights, which swap ``x_i`` and ``y_i`` [2]_. A quarter of the
          flops of the permutations (the matrix has n rows, not n + m).
          This statistic is another estimator of MMD^2 than the
          permutation test's: it leaves out the n terms ``k(x_i, y_i)``
          of the paired points (the unbiased MMD^2 averages
          ``k(x_i, y_j)`` over all i and j), so the two differ by
          O(1/n) on the same data.
        - "aggregated": MMDAgg [3]_: the tests of several kernels and
          bandwidths, whose single levels are corrected together, by
          resampling, to the level `alpha`. A wild bootstrap for samples of
          equal size; for unequal sizes, random swaps of the paired points
          (x_i, y_i), i < min(n, m), the other points staying in their
          sample: a randomization over a group of permutations, exact as
          the permutation test, at the wild bootstrap's cost (the
          statistic is the unbiased MMD^2 of each swapped split).
        - "fuse": MMD-FUSE [6]_: the MMD^2 of several kernels and scales
          (by default the Laplacian and Gaussian kernels with 10
          bandwidths each, spaced linearly from half the 5 % to twice the
          95 % order statistic of the nonzero L1, resp. Euclidean,
          distances between the points of the sample of at most 1000
          pooled points that `gamma`'s rule uses; of the kernel's distance
          for other objects), each normalised by the Frobenius norm of its
          pooled matrix, fused by a log-sum-exp, against its values on B
          random permutations. No multiplicity correction; the scales are
          chosen on the pooled sample, so the test is exact. For any kind
          of object and any list of kernels, as the aggregated test. The
          authors' code takes the distances between all the pooled
          points with the N zeros of the diagonal (and any tie) replaced
          by the median distance, which moves both order statistics by
          about 0.1 / N in level: bandwidths about 5e-4 (relative) from
          these at some hundreds of points, a few percent at 40, and
          p-values equal or a count or two apart
          (``studies/two_sample_fuse``); beyond 1000 points the two rules
          read different distances.
        - "cross": cross-MMD [7]_: the samples' first halves against the
          witness function of their second halves (in the order given),
          studentised, with a standard normal null: one pass over a
          quarter of the pooled kernel matrix, no resampling. Its level is
          asymptotic (it holds as n and m grow, for any fixed kernel; 4
          objects per sample at the least, some hundreds for a level near
          `alpha`), and it has somewhat less power than the permutation
          test on the same data (half the pairs of objects), for a fraction
          of its time: the test for samples too large to resample (on
          every kind of object, Dask input included: a task per pair of
          blocks of the kernel). The
          statistic is the studentised cross MMD^2; the p-value
          ``1 - Phi(statistic)``.
        - "linear": a test in linear time on explicit features: the squared
          distance between the samples' mean features (the MMD^2 of the
          features' linear kernel, an approximation of `kernel`'s), whose
          null distribution is, asymptotically, ``N / (n m)`` times a sum of
          chi-squares weighted by the eigenvalues of the features'
          covariance [4]_ (estimated from the first 65,536 objects of each
          sample); the p-value is that sum's tail, exact up to a numerical
          integration (of its characteristic function [8]_, through the
          saddle point: a relative error below 1e-9 at every p-value). Its
          level is asymptotic (some hundreds of objects per sample), its
          power that of the permutation test on the same
          features (random features of a kernel: the MMD of [5]_). For
          samples of millions of points, Dask arrays included.
    n_resamples : int or (int, int), optional
        The number of resamples B: 999 by default (MMD-FUSE: 2000, as its
        authors). For the aggregated test ``(B1, B2)``, the resamples for
        the single tests' quantiles and for the level correction (an int is
        used for both); (2000, 2000) by default. Not used by the linear
        test.
    incomplete : int, optional
        The wild bootstrap and the aggregated test on an incomplete
        U-statistic, MMDAggInc [9]_: only the pairs of paired objects
        ``(i, j)`` with ``0 < |j - i| <= incomplete`` (the first
        `incomplete` diagonals of the matrix of the pairs), in time
        ``O(N incomplete B)`` instead of ``O(N^2 B)`` and memory for blocks
        of `incomplete` pairs. The test stays exact (the signs swap the
        paired objects), with somewhat less power than the complete
        statistic (200, the authors' default, keeps most of it beyond
        some thousands of objects). For samples of unequal sizes the
        objects of the larger one beyond the ``min(n, m)`` pairs are left
        out, as in the authors' code. None (default) means every pair.
    alpha : float, optional
        The level of the test, in (0, 1): it sets `reject`, and the level
        correction of the aggregated test.
    unbiased : bool, optional
        Permutation test: the unbiased U-statistic of MMD^2 (default), or
        the biased V-statistic. The other tests use their own statistic.
    feature_map : int or feature map, optional
        The features of the linear test, and, given to the permutation test
        or the wild bootstrap, the features whose linear kernel they use
        instead of `kernel`: the test is then exact for that kernel (an
        approximation of `kernel`), in one pass over the samples, a block
        of rows at a time, with memory for the sums of B resamples of r
        features (not the N x N matrix) and time O(N r B) (a million points
        per sample with 1000 features in about a minute on 2 cores). A map
        of this package (fitted, or fitted here on the pooled sample, as a
        copy), or the width of random Fourier features of `kernel` and
        `gamma` (points only). None means the exact kernel for the
        resampling tests, and for the linear test random Fourier features
        of points, as many as ``N / 10`` for the pooled sample of N points
        (at least 100 and 4 d for points of dimension d, at most 1000);
        objects other than points need a map that takes them (e.g.
        `RandomDistributionFeatures` for sets, `Chi2DirectMap` for
        histograms).
    kernel_params : dict, optional
        The kernel's other parameters: the keyword arguments of its
        function other than its scale (e.g. ``{"kernel": "laplacian"}``
        for the point kernel of "mean_map", ``{"gamma": 0.5}`` for the
        point kernel of "mmd", ``{"k": 3, "alpha": 0.9}`` for "renyi"), or
        those of a callable.
    dtype : {None, numpy.float64, numpy.float32}, optional
        Type of the kernel matrices the resampling tests multiply. None
        means float32 for the aggregated and fused tests (as the authors'
        JAX code) and float64 for the others, also for float32 points.
        float32 halves the time of the products, the longest part of the
        tests over many kernels; the kernel is computed, and the statistics
        summed, in float64, and the products take the centred draws (and,
        for permutations, the matrix less a constant near its mean), so
        that the resampled statistics differ from float64's by about 1e-7
        of their spread: the same p-value but in a tie within that
        distance.
    rng : {None, int, numpy.random.Generator}, optional
        The random resamples (and random features).
    workers : int, optional
        Threads of the kernel computation and of the matrix products (see
        `sum_match_kernel`).
    progress : bool, optional
        Show a progress bar over the kernel matrices and the blocks of
        resamples, or over the blocks of the kernel (needs tqdm).
    working_memory : int or float, optional
        The working-memory budget of the call, in MiB; None means the
        package's setting (`set_config`, 1024 by default). See Notes.

    Returns
    -------
    MMDTestResult
        With ``statistic``, ``pvalue``, ``null_distribution``, ``reject``;
        for the aggregated test also ``pvalues`` and ``thresholds`` of each
        single test.

    See Also
    --------
    mmd : the MMD between many sets.
    scipy.stats.permutation_test : permutation tests of any statistic.

    Notes
    -----
    *Weighted sets.* Samples of sets given as a `Bags` with point weights
    are taken by ``kernel="mean_map"`` and ``"mmd"``: the kernel between
    two sets is the weighted one of `sum_match_kernel` (weights normalised
    per set), and by ``"sliced_wasserstein"`` (the weighted quantile
    functions of `sliced_wasserstein_kernel`); the sets, not the points,
    are the sample (their weights change the kernel, not the test
    statistic's weights of the objects).
    The default point scale is the weighted median heuristic of the value
    sample of the pooled points of positive weight; the aggregated tests'
    grid comes from those points unweighted. ``"renyi"`` refuses weights.

    The resampling tests compute the kernel matrix of the pooled sample
    once per kernel, by the exact engine in float64, where it fits the
    working memory (8 N^2 bytes with N = n + m, about twice that at the
    peak), and evaluate the resampled statistics in blocks of 256, each as
    products of the upper triangle of the (symmetric) matrix with the
    block's draws: about ``N^2 B / 2`` multiply-adds for the permutation
    test, ``n^2 B / 2`` for the wild bootstrap and ``min(n, m)^2 B / 2``
    for the swaps of the aggregated test, times the number of kernels for
    the aggregated and fused tests (``N incomplete B`` or so with
    `incomplete`). Beyond the working memory they stream the kernel: the
    pooled objects (the pairs (x_i, y_i), for the wild bootstrap and the
    swaps) are cut into ranges, and each unordered pair of ranges adds the
    part of its kernel block to every resampled statistic, a product of
    the block with the resamples' draws, and to the row sums; the draws of
    a batch of resamples take a byte per object and resample, and the
    kernel is computed once per batch (the largest the budget holds). The
    draws are the same as in memory, so is the p-value, and the statistics
    agree to rounding; the flops are those in memory (each pair of ranges
    once) plus the kernel's, ``N^2 (d + B) / 2`` multiply-adds for the
    permutation test of points. A call that cannot run even so within
    the budget raises a ValueError that says what it needs.

    Which test for which size (the power and time of every method from
    1,000 to 10^6 points per sample are in the user guide, "Large samples
    and clusters", from ``studies/which_test``): up to some thousands of
    objects per sample the resampling tests of the exact kernel are the
    most powerful for the kernel chosen (the aggregated ones where no
    single scale is known to be good); beyond, the cross test, the linear
    test and the permutation test on explicit features reach the same power
    in seconds, and the incomplete aggregated test keeps a grid of kernels
    at a cost linear in n. A call whose estimated time is beyond 10 minutes
    says so before it starts, with these faster ways (`CostWarning`).

    The p-value counts the observed statistic as one of the resamples
    (``(1 + #{null >= statistic}) / (1 + B)``): the test's level is at most
    `alpha` at every sample size, not only asymptotically. The aggregated
    test resamples the single tests' p-values by the B2 resamples (against
    the B1 others) to find the level correction, and its p-value is that of
    the smallest single p-value among them, so ``reject`` is ``pvalue <=
    alpha`` (this differs from [3]_ only by counting the observed sample
    among the B2).

    References
    ----------
    .. [1] A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schoelkopf and
       A. Smola, "A kernel two-sample test", Journal of Machine Learning
       Research 13, pp. 723-773, 2012.
    .. [2] K. Chwialkowski, D. Sejdinovic and A. Gretton, "A wild bootstrap
       for degenerate kernel tests", Advances in Neural Information
       Processing Systems 27, 2014.
    .. [3] A. Schrab, I. Kim, M. Albert, B. Laurent, B. Guedj and
       A. Gretton, "MMD aggregated two-sample test", Journal of Machine
       Learning Research 24(194), pp. 1-81, 2023.
    .. [4] A. Gretton, K. Fukumizu, Z. Harchaoui and B. K. Sriperumbudur,
       "A fast, consistent kernel two-sample test", Advances in Neural
       Information Processing Systems 22, 2009.
    .. [5] J. Zhao and D. Meng, "FastMMD: ensemble of circular discrepancy
       for efficient two-sample test", Neural Computation 27(6),
       pp. 1345-1372, 2015.
    .. [6] F. Biggs, A. Schrab and A. Gretton, "MMD-FUSE: learning and
       combining kernels for two-sample testing without data splitting",
       Advances in Neural Information Processing Systems 36, 2023.
    .. [7] S. Shekhar, I. Kim and A. Ramdas, "A permutation-free kernel
       two-sample test", Advances in Neural Information Processing Systems
       35, 2022.
    .. [8] J. P. Imhof, "Computing the distribution of quadratic forms in
       normal variables", Biometrika 48(3/4), pp. 419-426, 1961.
    .. [9] A. Schrab, I. Kim, B. Guedj and A. Gretton, "Efficient aggregated
       kernel tests using incomplete U-statistics", Advances in Neural
       Information Processing Systems 35, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> import kernelmaps as km
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> Y = rng.normal(size=(150, 3)) + [1.0, 0, 0]
    >>> res = km.mmd_test(X, Y, rng=0)
    >>> res.pvalue < 0.01, res.null_distribution.shape
    (True, (999,))
    >>> km.mmd_test(X, rng.normal(size=(150, 3)), rng=0).reject
    False
    >>> agg = km.mmd_test(X, Y, method="aggregated", n_resamples=500, rng=0)
    >>> agg.reject, agg.statistic.shape
    (True, (20,))

    Two groups of point clouds (30 and 40 sets of 20 points), whose second
    group is slightly more spread out, by the mean map kernel:

    >>> A = [rng.normal(size=(20, 2)) for _ in range(30)]
    >>> B = [1.3 * rng.normal(size=(20, 2)) for _ in range(40)]
    >>> res = km.mmd_test(A, B, kernel="mean_map", rng=0)
    >>> res.kernel, res.reject
    ('mean_map', True)

    The same test from the kernel matrix of the pooled sets:

    >>> K = km.sum_match_kernel(A + B, gamma=res.gamma)
    >>> labels = np.repeat([0, 1], [30, 40])
    >>> km.mmd_test(K, labels, kernel="precomputed", rng=0).pvalue == res.pvalue
    True
    """
    iv = _mmd_test_iv(X, Y, kernel, gamma, method, n_resamples, incomplete,
                      alpha, unbiased, feature_map, kernel_params, dtype, rng,
                      workers, progress, working_memory)
    method, alpha = iv.method, iv.alpha
    if feature_map is not None and method != "linear":
        return _on_features(iv, feature_map)
    if method == "linear":
        if iv.kind != "points":
            return _linear_objects(iv, feature_map)
        return _linear(iv, feature_map)
    if method == "cross":
        return _cross(iv)
    if method == "fuse":
        return _fuse(iv)
    if method == "aggregated":
        return _aggregated(iv)
    mode = "wild" if method == "wild_bootstrap" else "permutation"
    stats, names, gammas, kinds, _ = _statistics(iv, mode, iv.B + 1)
    if kinds[0] is not None:
        warn_degenerate(degenerate_message(kinds[0], names[0], gammas[0],
                                           iv.specs[0].between))
    observed, null = stats[0, 0], stats[0, 1:]
    pvalue = _pvalue(observed, null)
    g = gammas[0]
    return MMDTestResult(float(observed), pvalue, null, pvalue <= alpha,
                         alpha, method, str(names[0]),
                         None if g is None else float(g))


def _mmd_test_iv(X, Y, kernel, gamma, method, n_resamples, incomplete, alpha,
                 unbiased, feature_map, kernel_params, dtype, rng, workers,
                 progress, working_memory):
    """Every input check of `mmd_test`, in one place (as SciPy's
    ``_permutation_test_iv``): a namespace of the validated arguments, the
    kernels' specs and the kind of objects they take, the samples (X and Y
    checked; Z, the pooled objects), their sizes n and N, the resamples B
    (an int, or (B1, B2) for the aggregated test; None for the linear one)
    and the working-memory budget in bytes."""
    method = check_choice(method, "method", _METHODS)
    alpha = check_scalar(alpha, "alpha", low=0.0, low_inclusive=False)
    if not alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    iv = SimpleNamespace(
        method=method, alpha=alpha, unbiased=check_bool(unbiased, "unbiased"),
        dtype=(np.dtype(np.float32 if method in ("aggregated", "fuse")
                        else np.float64) if dtype is None
               else check_dtype(dtype)),
        generator=check_rng(rng), n_threads=resolve_workers(workers),
        progress=check_progress(progress), gamma=gamma,
        budget=working_memory_bytes(working_memory),
        # the tests over a grid of scales, and the grid's rule
        grid={"aggregated": "mmdagg", "fuse": "fuse"}.get(method),
        incomplete=_check_incomplete(incomplete, method, feature_map),
        X=X, Y=Y, Z=None, n=None, N=None, B=None, specs=None, lazy=False,
        n_kernels=1)
    iv.kernels, iv.kind = _check_kernels(kernel, method, X)
    iv.params = _check_kernel_params(kernel_params, iv.kernels, iv.kind)
    if method == "linear":
        if n_resamples is not None:
            raise ValueError("n_resamples is not used by the linear test; "
                             "leave it None")
        if iv.kind == "points":
            iv.X, iv.Y = _check_samples(X, Y, lazy=True)
        return iv  # objects: the feature map checks them
    if feature_map is not None:
        return _features_iv(iv, X, Y, feature_map, n_resamples)
    if iv.kind == "precomputed":
        if gamma is not None:
            raise ValueError("gamma is not used with kernel='precomputed' (the "
                             "matrix is given); leave it None")
        K = check_precomputed(X)
        if len(K) > 1 and not iv.grid:
            raise ValueError(f"X holds {len(K)} kernel matrices: only "
                             f"method='aggregated' or 'fuse' takes several")
        iv.N = K.shape[1]
        order, iv.n = labels_order(Y, iv.N)
        iv.specs = [PrecomputedSpec(K[:, order][:, :, order])]
        iv.Z = np.arange(iv.N)
    else:
        iv.specs = [spec_for(k, iv.params) for k in iv.kernels]
        for spec in iv.specs:  # what a kernel draws (sliced_wasserstein)
            spec.rng = iv.generator
        spec = iv.specs[0]
        # Dask input: checked as it is read, the statistics from Dask tasks
        iv.lazy = iv.kind in ("points", "rows", "sets") and is_lazy_input(X, Y)
        if iv.lazy:
            if iv.kind == "points":
                _refuse_sets(X, "X")
                _refuse_sets(Y, "Y")
            iv.X, iv.Y = lazy_samples(spec, X, Y)
        elif iv.kind == "points":
            iv.X, iv.Y = _check_samples(X, Y, lazy=False)
        else:
            iv.X, iv.Y = spec.check(X, "X"), spec.check(Y, "Y")
            for A, name in ((iv.X, "X"), (iv.Y, "Y")):
                if spec.count(A) < 2:
                    raise ValueError(f"{name} must hold at least 2 objects, "
                                     f"got {spec.count(A)}")
        if (iv.kind not in ("points", "any") and gamma is not None
                and spec.scale is None):
            raise ValueError(f"the {spec.name!r} kernel has no scale: leave "
                             f"gamma None")
        iv.n = spec.count(iv.X)
        iv.N = iv.n + spec.count(iv.Y)
        iv.Z = spec.pool(iv.X, iv.Y)
    if iv.incomplete is not None:
        p = min(iv.n, iv.N - iv.n)
        if 2 * iv.n != iv.N:  # the pairs (x_i, y_i) only, as MMDAggInc
            iv.Z = iv.specs[0].take(iv.Z, np.r_[0:p, iv.n:iv.n + p])
            iv.n, iv.N = p, 2 * p
        if iv.incomplete >= p - 1:  # every pair: the complete statistic
            iv.incomplete = None
    if method == "wild_bootstrap" and 2 * iv.n != iv.N:
        raise ValueError(
            f"method='wild_bootstrap' needs samples of equal size, got "
            f"{iv.n} and {iv.N - iv.n} objects; use method='permutation'"
        )
    if method == "cross":
        if n_resamples is not None:
            raise ValueError("n_resamples is not used by the cross test; "
                             "leave it None")
        if min(iv.n, iv.N - iv.n) < 4:
            raise ValueError(f"method='cross' needs at least 4 objects in each "
                             f"sample (two per half), got {iv.n} and "
                             f"{iv.N - iv.n}")
        _warn_long_call(iv)
        return iv
    n_kernels = len(iv.specs[0].K) if iv.kind == "precomputed" else len(iv.specs)
    if iv.grid and iv.kind != "precomputed":  # every kernel's scales
        n_kernels *= np.size(gamma) if gamma is not None else N_BANDWIDTHS
    if method == "aggregated":
        iv.B = _check_resamples(n_resamples, pair=True, n_kernels=n_kernels)
        _warn_never_rejects(iv.B[1], alpha, "the second of n_resamples (B2)")
    else:
        iv.B = _check_resamples(n_resamples, pair=False, n_kernels=n_kernels,
                                default=_N_RESAMPLES_FUSE if method == "fuse"
                                else _N_RESAMPLES)
        _warn_never_rejects(iv.B, alpha, "n_resamples")
    iv.n_kernels = n_kernels
    _warn_long_call(iv)
    return iv


def _check_incomplete(incomplete, method, feature_map):
    """`incomplete` checked: None, or a positive int for the wild bootstrap
    and the aggregated test on a kernel."""
    if incomplete is None:
        return None
    if method not in ("wild_bootstrap", "aggregated"):
        raise ValueError(f"incomplete is used by method='wild_bootstrap' and "
                         f"'aggregated', not method={method!r}; leave it None")
    if feature_map is not None:
        raise ValueError("incomplete is used with a kernel, not with "
                         "feature_map; leave one of them None")
    return check_scalar(incomplete, "incomplete", kind="int", low=1)


def _features_iv(iv, X, Y, feature_map, n_resamples):
    """The checks of a resampling test on the features of `feature_map`
    (`_on_features`): the samples (points checked lazily; other objects by
    their kernel's spec), their sizes and the resamples."""
    if iv.method not in ("permutation", "wild_bootstrap"):
        raise ValueError(f"feature_map is used by method='linear', "
                         f"'permutation' and 'wild_bootstrap', not "
                         f"method={iv.method!r}")
    if iv.kind == "precomputed":
        raise ValueError("feature_map needs the objects of X and Y, not a "
                         "kernel matrix: leave it None with "
                         "kernel='precomputed'")
    if iv.kind == "points":
        iv.X, iv.Y = _check_samples(X, Y, lazy=True)
        iv.n, m = iv.X.shape[0], iv.Y.shape[0]
    else:
        spec = spec_for(iv.kernels[0], iv.params)
        iv.X, iv.Y = spec.check(X, "X"), spec.check(Y, "Y")
        iv.n, m = spec.count(iv.X), spec.count(iv.Y)
        for count, name in ((iv.n, "X"), (m, "Y")):
            if count < 2:
                raise ValueError(f"{name} must hold at least 2 objects, got "
                                 f"{count}")
    iv.N = iv.n + m
    if iv.method == "wild_bootstrap" and iv.n != m:
        raise ValueError(
            f"method='wild_bootstrap' needs samples of equal size, got "
            f"{iv.n} and {m} objects; use method='permutation'")
    iv.B = _check_resamples(n_resamples, pair=False)
    _warn_never_rejects(iv.B, iv.alpha, "n_resamples")
    return iv


def _on_features(iv, feature_map):
    """The permutation test or the wild bootstrap with the linear kernel of
    the features of `feature_map` (`_featured.feature_pass`): one pass over
    the samples, memory O(r B) for r features and B resamples."""
    fmap, name, gamma = _feature_map(iv, feature_map)
    n, m = iv.n, iv.N - iv.n
    samples = (iv.X, iv.Y)
    # features about those of the first objects (no cancellation where
    # their mean is far from 0 next to their spread)
    shift = np.asarray(fmap.transform(_first_rows(iv.X)),
                       dtype=np.float64).mean(axis=0)
    _warn_long_call(iv, shift.size)

    def features(sample, start, stop):
        with _as_sample("XY"[sample]):
            F = fmap.transform(_as_numpy(samples[sample][start:stop]),
                               workers=1)
        F = np.asarray(F, dtype=np.float64) - shift
        if not np.isfinite(F).all():
            raise ValueError("the features of X or Y are not finite (NaN or "
                             "infinity in the points?)")
        return F

    mode = "wild" if iv.method == "wild_bootstrap" else "permutation"
    n_threads = iv.n_threads
    rows = max(n, m)
    while (n_threads > 1
           and pass_bytes(shift.size, iv.B, n_threads, rows) > iv.budget):
        n_threads -= 1
    need = pass_bytes(shift.size, iv.B, n_threads, rows)
    if need > iv.budget:
        raise ValueError(_budget_message(
            iv, need, f"the sums of n_resamples={iv.B} resamples of "
                      f"{shift.size} features",
            "or use fewer features or resamples"))
    with progress_bar(iv.progress, pass_steps((n, m), mode), "mmd_test") as bar:
        out = feature_pass(features, (n, m), iv.B, mode, iv.generator,
                           n_threads, bar)
    if mode == "wild":
        sd, dd, observed = out
        null = (np.einsum("ij,ij->j", sd, sd) - dd) / (n * (n - 1))
        statistic = float((observed @ observed - dd) / (n * (n - 1)))
    else:
        sx, dx, total, norms, (s, d) = out
        null = split_mmd2(sx, dx, total, norms, n, m, iv.unbiased)
        statistic = float(split_mmd2(s[:, None], np.array([d]), total, norms,
                                     n, m, iv.unbiased)[0])
    pvalue = _pvalue(statistic, null)
    return MMDTestResult(statistic, pvalue, null, pvalue <= iv.alpha, iv.alpha,
                         iv.method, name, gamma)


def _feature_map(iv, feature_map):
    """``(fmap, name, gamma)``: the fitted map of `feature_map` (an int:
    that many random Fourier features of the point kernel, at the default
    gamma where none is given; a map: fitted, as a copy, on the pooled
    objects where it is not), the name the result reports and the map's
    gamma."""
    if isinstance(feature_map, FeatureMap):
        pooled = ((lambda: np.concatenate([_as_numpy(iv.X), _as_numpy(iv.Y)]))
                  if iv.kind == "points" else (lambda: pool_any(iv.X, iv.Y)))
        fmap = _fitted(feature_map, pooled)
        return fmap, type(fmap).__name__, getattr(fmap, "gamma_", None)
    if iv.kind != "points":
        raise TypeError(
            f"method={iv.method!r} on objects other than points needs "
            f"feature_map, a feature map of this package that takes them "
            f"(e.g. RandomDistributionFeatures for sets, Chi2DirectMap for "
            f"histograms)")
    from ..sets import RandomFourierFeatures

    if feature_map is None:
        width = _linear_width(iv.X.shape[0] + iv.Y.shape[0], iv.X.shape[1])
    else:
        width = check_scalar(feature_map, "feature_map", kind="int", low=1)
    kernel, gamma = iv.kernels[0], iv.gamma
    if gamma is None:
        gamma = point_gamma(None, _value_sample_lazy(iv.X, iv.Y), kernel)
    fmap = RandomFourierFeatures(width, kernel=kernel, gamma=gamma,
                                 rng=iv.generator)
    fmap.fit(_first_rows(iv.X))
    return fmap, kernel, fmap.gamma_


def _statistics(iv, mode, total, norms=False):
    """The resampled statistics of every kernel and scale of the validated
    test `iv`, on `total` resamples (the observed sample first), in `mode`
    ("permutation", "wild" or "swap"): ``(stats, names, scales, kinds,
    norms)``, stats of shape (L, total) for the L kernels and scales, the
    names and reported scales of each, how each is degenerate (see
    `degenerate`; None where it is not) and, with `norms`, the Frobenius
    norm of each pooled matrix with its diagonal 0 (else None).

    The kernel matrices are computed whole where they fit in the working
    memory (`_in_memory`), else a block at a time (`_on_blocks`; always for
    Dask input, whose passes are Dask tasks); the same draws either way
    (`_block_seeds`), so the same p-values."""
    seeds = _block_seeds(iv.generator, total)
    scales = []
    for spec in iv.specs:  # (a loop, not a comprehension: one call less)
        scales.append(spec.scales(iv.Z, iv.gamma, iv.grid, iv.n_threads))
    L = sum(len(s) for s in scales)
    plan = _plan(iv, mode, L, total)
    stats = np.empty((L, total))
    names, reported, kinds, fro = [], [], [], []
    steps = (len(iv.specs) * plan.tasks * len(plan.batches) if plan.blocks
             else sum(1 + len(s) * len(seeds) for s in scales))
    with progress_bar(iv.progress, steps, "mmd_test") as bar:
        row = 0
        for spec, values in zip(iv.specs, scales, strict=True):
            run = _on_blocks if plan.blocks else _in_memory
            out = run(iv, spec, values, mode, seeds, plan, bar)
            for value, (statistics, kind, norm) in zip(values, out, strict=True):
                stats[row] = statistics
                names.append(spec.name)
                reported.append(spec.report(value))
                kinds.append(kind if spec.degenerate_scale or kind == "constant"
                             else None)
                fro.append(norm)
                row += 1
    gammas = np.array(reported, dtype=object if None in reported else np.float64)
    return stats, np.array(names), gammas, kinds, (np.array(fro) if norms
                                                   else None)


def _degenerate_kind(K, iv):
    """How the pooled kernel matrix `K` of the objects of `iv` carries no
    information: "zero" or "one" (`degenerate`: its scale), "constant"
    (the objects are equal as the kernel sees them: points all equal, or a
    kernel 1 everywhere at the scale of the median heuristic, which is then
    arbitrary, or a kernel of objects constant on them), or None."""
    kind = degenerate(K, symmetric=True)
    if kind == "one" and ((iv.gamma is None and not iv.grid) or (isinstance(
            iv.Z, np.ndarray) and np.all(iv.Z[:1] == iv.Z))):
        return "constant"
    if kind is None and constant_value(K, True) is not None:
        return "constant"
    return kind


def _in_memory(iv, spec, scales, mode, seeds, plan, bar):
    """(statistics, degenerate kind, norm) of each scale from the whole
    pooled matrix, computed once per scale; the resamples a block at a
    time, each block one matrix product (`_resampled`)."""
    n, N = iv.n, iv.N
    rows = N if mode == "permutation" else min(n, N - n)
    draw = _shared_draws(seeds, n if mode == "permutation" else rows, N,
                         "permutation" if mode == "permutation"
                         else "wild_bootstrap", rows)
    layout = "pooled" if mode == "permutation" else "pairs"
    shifts = _shifts(iv, spec, scales) if mode == "permutation" else None

    def prepare(S):
        return product_draws(S, layout, n, N, iv.dtype)

    out, buffer = [], None
    for index, K in enumerate(spec.blocks(iv.Z, None, scales, iv.n_threads)):
        if index == 0:  # (the bar's step of the kernel matrices)
            bar.update(1)
        K = np.ascontiguousarray(K, dtype=np.float64)
        kind = _degenerate_kind(K, iv)
        diag = spec.finite(np.diag(K).copy())
        np.fill_diagonal(K, 0.0)
        norm = None
        if mode == "permutation":  # (the shift: see _blocked's docstring)
            buffer, r, squares, finite = shifted_matrix(
                K, shifts[index], iv.dtype, buffer, iv.n_threads)
            if not finite:
                spec.finite(K)  # (raises)
            norm = math.sqrt(squares)
            form = (buffer, _permutation_finish(r, diag, n, N - n, iv.unbiased))
        elif mode == "wild":
            K = spec.finite(K)
            H = _h_matrix(K, n)
            buffer = _in_dtype(H, products_dtype(iv.dtype, H), buffer)
            form = (buffer, _wild_finish(n * (n - 1) // 2))
        else:
            K = spec.finite(K)
            form = _swap_form(lambda r, K=K: K[r], n, N - n,
                              products_dtype(iv.dtype, K), iv.n_threads)
        del K
        out.append((_resampled(form, draw, prepare, len(seeds), bar,
                               iv.n_threads),
                    kind, norm))
        del form
    return out


def _shifts(iv, spec, scales):
    """The constant of each scale the permutations' products subtract from
    the pooled matrix (see `_blocked`'s docstring): the mean of the kernel
    between distinct objects of the first `SHIFT_OBJECTS` pooled ones (0
    where it is not finite)."""
    k = min(iv.N, SHIFT_OBJECTS)
    head = computed(spec.take(iv.Z, slice(0, k)))
    shifts = []
    for K in spec.blocks(head, None, scales, 1):
        K = np.asarray(K, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            c = (K.sum() - np.trace(K)) / (k * (k - 1))
        shifts.append(float(c) if np.isfinite(c) else 0.0)
    return shifts


# Pooled objects whose kernel sets the permutations' shifts (`_shifts`).
SHIFT_OBJECTS = 16


def _h_matrix(K0, n):
    """``H = Kxx + Kyy - Kxy - Kyx`` with a zero diagonal, from the pooled
    matrix (its diagonal 0) of 2n objects, in its first block (a view: K0
    is changed), in float64 (the terms cancel)."""
    H = K0[:n, :n]
    H += K0[n:, n:]
    H -= K0[:n, n:]
    H -= K0[n:, :n]
    np.fill_diagonal(H, 0.0)
    return H


def _in_dtype(A, dtype, buffer):
    """A in `dtype`: A itself where it is of it, else a copy in `buffer`
    where that is an array of A's shape in `dtype` (the matrices of the
    scales of a test, one after the other: no page faults of a fresh array
    for each), else a new array."""
    if A.dtype == dtype:
        return A
    if buffer is None or buffer.shape != A.shape or buffer.dtype != dtype:
        buffer = np.empty(A.shape, dtype=dtype)
    np.copyto(buffer, A, casting="same_kind")
    return buffer


def _on_blocks(iv, spec, scales, mode, seeds, plan, bar):
    """(statistics, degenerate kind, norm) of each scale from blocks of
    the kernel (`_blocked.run_blocks`), one pass per batch of resamples:
    memory for the draws of a batch and a few blocks, not the pooled
    matrix."""
    n, N, m = iv.n, iv.N, iv.N - iv.n
    p = min(n, m)
    layout = Layout("pooled" if mode == "permutation" else "pairs", n, N,
                    plan.size, linear=mode == "swap", dtype=iv.dtype,
                    band=iv.incomplete,
                    shifts=(_shifts(iv, spec, scales) if mode == "permutation"
                            else None))
    method = "permutation" if mode == "permutation" else "wild_bootstrap"
    draw = _drawer(seeds, n if mode == "permutation" else p, N, method,
                   np.int8)
    L = len(scales)
    statistics = np.empty((L, sum(b for _, b in seeds)))
    kinds = norms = finishes = None
    for batch in plan.batches:
        if iv.lazy:  # Dask input: the pass (and the draws) as Dask tasks
            totals, draws = run_blocks_dask(
                spec, iv.Z, scales, layout,
                [functools.partial(draw, i) for i in batch], bar)
        else:
            draws = np.concatenate([draw(i) for i in batch], axis=1)
            totals = run_blocks(spec, iv.Z, scales, layout, draws, iv.n_threads,
                                bar)
        quad = range_total(totals, "quad", len(layout.ranges))
        if finishes is None:
            kinds = degenerate_kinds(totals[("flags",)])
            finishes, norms = _block_finish(totals, layout, mode, L, n, m,
                                            iv.unbiased)
        column = sum(seeds[i][1] for i in range(batch[0]))
        width = draws.shape[1]
        for k, finish in enumerate(finishes):
            statistics[k, column:column + width] = finish(draws, quad[k])
        del draws, totals
    return list(zip(statistics, kinds, norms, strict=True))


def _block_finish(totals, layout, mode, L, n, m, unbiased):
    """The ``finish(draws, quad)`` of each scale (its statistics on a batch
    of int8 `draws`, from their quadratic forms), and the Frobenius norms,
    from the totals of a pass."""
    if mode == "wild":
        return [_wild_finish(layout.pairs)] * L, [None] * L
    if mode == "permutation":
        count = len(layout.ranges)
        r = pooled_vectors(totals, "r", count)
        diag = pooled_vectors(totals, "diag", count)
        norms = np.sqrt(np.maximum(range_total(totals, "fro", count), 0.0))
        return ([_permutation_finish(r[k], diag[k], n, m, unbiased)
                 for k in range(L)], list(norms))
    trd = range_total(totals, "trd", len(layout.ranges))
    pairs, extra = len(layout.ranges), len(layout.unpaired)
    rPx, rPy = (pooled_vectors(totals, name, pairs) for name in ("rPx", "rPy"))
    rUx, rUy, rPu, rUu = (
        pooled_vectors(totals, name, count) if count else np.zeros((L, size))
        for name, count, size in (("rUx", extra and pairs, rPx.shape[1]),
                                  ("rUy", extra and pairs, rPx.shape[1]),
                                  ("rPu", extra, 0), ("rUu", extra, 0)))
    c_u = 1.0 if n > m else 0.0  # c of the unpaired objects
    finishes = []
    for k in range(L):
        r = (rPx[k] + rUx[k], rPy[k] + rUy[k], rPu[k] + rUu[k])
        u = (0.5 * rPx[k] + c_u * rUx[k], 0.5 * rPy[k] + c_u * rUy[k],
             0.5 * rPu[k] + c_u * rUu[k])
        T = math.fsum(math.fsum(v) for v in r)
        cKc = 0.5 * (math.fsum(u[0]) + math.fsum(u[1])) + c_u * math.fsum(u[2])
        rc = 0.5 * (math.fsum(r[0]) + math.fsum(r[1])) + c_u * math.fsum(r[2])
        finishes.append(_swap_finish(u[0] - u[1], r[0] - r[1],
                                     (T, cKc, rc, float(trd[k])), n, m))
    return finishes, [None] * L


def _plan(iv, mode, L, total):
    """How the statistics are computed within the working memory: whole
    matrices, or blocks of `size` objects with the resamples in `batches`
    (lists of blocks of `_block_seeds`); a ValueError in the user's terms
    where even blocks do not fit."""
    n, N = iv.n, iv.N
    p = min(n, N - n)
    rows = N if mode == "permutation" else p
    n_threads = iv.n_threads
    seeds_count = -(-total // RESAMPLE_BLOCK)
    band = iv.incomplete  # (blocks of its size at least, always)
    if (band is None and not iv.lazy
            and _in_memory_bytes(iv, mode, total) <= iv.budget):
        return SimpleNamespace(blocks=False, batches=[list(range(seeds_count))],
                               tasks=0, size=None)
    # blocks: the draws of a batch (int8) and their casts to float64 (rows
    # at a time); the temporaries of the tasks running (one per thread) and
    # the contributions of those run or waiting (thread_map: two per thread)
    kernel_blocks = 4 if mode == "permutation" else 13
    for per_batch in range(seeds_count, 0, -1):
        width = min(total, per_batch * RESAMPLE_BLOCK)
        casts = 8.0 * (min(rows, CAST_ROWS) + 2) * width
        contributions = 8.0 * L * (width + 2 * rows / n_threads)
        left = (iv.budget - rows * width - casts
                - (2 * n_threads + 1) * contributions) / n_threads
        # a task: its kernel blocks, the draws of its two ranges as float64
        # and one product (3 b width)
        a, b = 8.0 * kernel_blocks, 24.0 * width
        if left > 0:
            size = int((-b + math.sqrt(b * b + 4 * a * left)) / (2 * a))
            if size >= min(max(_MIN_BLOCK, band or 0), rows):
                break
    else:
        width = RESAMPLE_BLOCK
        casts = 8.0 * (min(rows, CAST_ROWS) + 2) * width
        need = rows * width + casts + n_threads * (
            8.0 * kernel_blocks * _MIN_BLOCK**2 + 24.0 * width * _MIN_BLOCK) + (
            2 * n_threads + 1) * 8.0 * L * (width + 2 * rows / n_threads)
        raise ValueError(_budget_message(iv, need))
    # tasks of about RESAMPLE_TASK_WORK multiply-adds (twice as many in
    # float32, as fast), and RESAMPLE_PRODUCT_WORK at most in one scale's
    # product, where memory allows
    rate = 2.0 if iv.dtype == np.float32 else 1.0
    work = min(math.sqrt(rate * RESAMPLE_TASK_WORK / max(1.0, L * width)),
               math.sqrt(rate * RESAMPLE_PRODUCT_WORK / width))
    size = int(max(min(_MIN_BLOCK, rows), min(size, work, rows)))
    if band is not None:
        size = min(max(band, _MIN_BLOCK), rows)
    batches = [list(range(a, min(a + per_batch, seeds_count)))
               for a in range(0, seeds_count, per_batch)]
    layout = Layout("pooled" if mode == "permutation" else "pairs", n, N, size,
                    linear=mode == "swap", band=band)
    return SimpleNamespace(blocks=True, batches=batches, size=size,
                           tasks=len(layout.tasks))


def _in_memory_bytes(iv, mode, total):
    """The peak memory of `_in_memory`: the pooled matrix (and its log, or
    a copy in float32), H of the wild bootstrap or the swaps, the draws in
    flight and those kept for every kernel (`_shared_draws`)."""
    n, N, n_threads = iv.n, iv.N, iv.n_threads
    p = min(n, N - n)
    rows = N if mode == "permutation" else p
    matrix = 8.0 * N * N
    extra = {"permutation": 0.0, "wild": 8.0 * n * n, "swap": 8.0 * p * p}[mode]
    draws = (3 + 2 * n_threads) * rows * RESAMPLE_BLOCK * 8
    kept = rows * total if rows * total <= RESAMPLE_DRAWS_KEPT else 0
    copy = 4.0 * N * N if iv.dtype == np.float32 else 0.0
    return 2 * matrix + extra + draws + kept + copy


# Objects per range of a block pass, at least (below, the tasks' overhead
# outweighs their products).
_MIN_BLOCK = 32
# Multiply-adds of a task of a block pass (its products with the draws of
# all its scales): about 1 s on one core, blocks large enough that their
# products run near the BLAS's speed; larger blocks gain little
# (benchmarks/TUNING.md). A task stops between two products (and between
# the chunks of its kernel) when its call stops: one product, at most
# RESAMPLE_PRODUCT_WORK (about 0.1 s), is the latency of Ctrl-C.
RESAMPLE_TASK_WORK = 16e9
RESAMPLE_PRODUCT_WORK = 1.5e9


def _budget_message(iv, need, held=None, remedy=None):
    """What a test that cannot run within the working memory says: `held`,
    what it holds at the least; `remedy`, what else the user can do."""
    held = held or (f"the resampling draws of 256 resamples, and blocks of "
                    f"{_MIN_BLOCK} objects")
    remedy = remedy or ("use method='linear' with feature_map (a linear-time "
                        "test on explicit features), or test a random "
                        "subsample of X and Y")
    return (
        f"mmd_test needs about {need / 2**30:.3g} GiB of working memory for "
        f"X and Y of n={iv.n} and m={iv.N - iv.n} objects with "
        f"method={iv.method!r} ({held}), more than the budget of "
        f"{iv.budget / 2**20:.3g} MiB: give a larger one (working_memory=..., "
        f"in MiB, or kernelmaps.set_config(working_memory=...)), {remedy}"
    )


def labels_order(labels, N):
    """The order that puts the rows labelled 0 (or False: the first
    sample) first, then those labelled 1 (True), and n, the size of the
    first sample; ValueError unless `labels` is a 1-D array of N such
    values, at least 2 of each."""
    try:
        y = np.asarray(labels)
    except (TypeError, ValueError):
        raise TypeError("Y must be the sample label (0 or 1) of each row of "
                        "the precomputed matrix X") from None
    if y.ndim != 1 or y.shape[0] != N:
        raise ValueError(f"Y must hold the label (0 or 1) of each of the {N} "
                         f"rows of the precomputed matrix X, got shape "
                         f"{y.shape}")
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all():
        raise ValueError("Y (the labels of the precomputed matrix's rows) "
                         "must be boolean or 0/1")
    first = np.flatnonzero(y == 0)
    second = np.flatnonzero(y == 1)
    if len(first) < 2 or len(second) < 2:
        raise ValueError(f"Y must label at least 2 rows of each sample, got "
                         f"{len(first)} and {len(second)}")
    return np.concatenate([first, second]), len(first)


def _check_samples(X, Y, lazy):
    """X and Y as float arrays of at least 2 points of the same dimension
    (Dask arrays kept as they are when `lazy`)."""
    checked = []
    for A, name in ((X, "X"), (Y, "Y")):
        _refuse_sets(A, name)
        if lazy and is_dask_array(A):
            if A.ndim != 2:
                raise ValueError(f"{name} must be a 2-D array of points (one "
                                 f"per row), got {A.ndim} dimension(s)")
        else:
            A = check_rows(A, name)
            if not isinstance(A, np.ndarray):
                raise TypeError(f"{name} must be a dense array of points, "
                                f"got a sparse matrix")
        if A.shape[0] < 2:
            raise ValueError(f"{name} must hold at least 2 points, got "
                             f"{A.shape[0]}")
        checked.append(A)
    X, Y = checked
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, "
                         f"got {X.shape[1]} and {Y.shape[1]}")
    if isinstance(X, np.ndarray) and isinstance(Y, np.ndarray):
        common = np.result_type(X.dtype, Y.dtype)
        X, Y = X.astype(common, copy=False), Y.astype(common, copy=False)
    return X, Y


def _refuse_sets(A, name):
    """A TypeError that says how to test sets, where `A` is a collection of
    sets (a Bags, a 3-D array or a sequence of 2-D arrays) given to a point
    kernel."""
    if object_kind(A) != "sets":
        return
    raise TypeError(
        f"{name} is a collection of {len(A)} sets, and the kernel is a kernel "
        f"between points. To test whether two collections of sets come from "
        f"the same population, use a kernel between sets (kernel='mean_map', "
        f"'mmd' or 'renyi'; None means 'mean_map'); to test whether two sets "
        f"come from the same distribution, pass them (mmd_test(X[i], Y[j]))"
    )


def _check_kernels(kernel, method, X):
    """The kernels as a tuple of names (or one callable) and the kind of
    objects they take: "points", "sets", "rows", "gaussians",
    "precomputed" or "any" (a callable). None means "rbf" (the aggregated
    test: "laplacian" and "rbf"), or "mean_map" where X is a collection of
    sets."""
    if kernel is None:
        if object_kind(X) == "sets":
            return ("mean_map",), "sets"
        return (("laplacian", "rbf") if method in ("aggregated", "fuse")
                else ("rbf",), "points")
    if callable(kernel):
        return (kernel,), "any"
    names = (*KINDS, "precomputed")
    if isinstance(kernel, str):
        name = check_choice(kernel, "kernel", names)
        return (name,), KINDS.get(name, "precomputed")
    if method not in ("aggregated", "fuse") or not isinstance(
            kernel, (list, tuple, np.ndarray)):
        raise TypeError(f"kernel must be one of {names} or a callable (a list "
                        f"of names for method='aggregated' or 'fuse'), got "
                        f"{kernel!r}")
    kernels = tuple(check_choice(k, "kernel", tuple(KINDS)) for k in kernel)
    if not kernels or len(set(kernels)) != len(kernels):
        raise ValueError(f"kernel must list distinct kernels, got {kernel!r}")
    kinds = {KINDS[k] for k in kernels}
    if len(kinds) > 1:
        raise ValueError(f"kernel must list kernels of one kind of object, got "
                         f"{kernel!r} (kernels of {sorted(kinds)})")
    return kernels, kinds.pop()


def _check_kernel_params(params, kernels, kind):
    """`kernel_params` as a dict of the kernels' other keyword arguments
    (the scale is `gamma`; a callable takes any)."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"kernel_params must be a dict, got "
                        f"{type(params).__name__}")
    if kind == "any":
        return dict(params)
    if kind in ("points", "precomputed"):
        if params:
            raise ValueError(f"kernel_params is not used by the {kernels[0]!r} "
                             f"kernel; leave it None")
        return {}
    for name in kernels:
        allowed = set(SPECS[name].takes) - {"scale"}
        scale = SPECS[name].scale
        for key in params:
            if key == scale and not (name == "mmd" and key == "gamma"):
                raise ValueError(f"kernel_params has {key!r}, the {name!r} "
                                 f"kernel's scale: give it as gamma")
            if key not in allowed:
                raise ValueError(
                    f"kernel_params has {key!r}, which the {name!r} kernel "
                    f"does not take (it takes: "
                    f"{', '.join(sorted(allowed - {scale})) or 'none'})")
    return dict(params)


def _check_resamples(n_resamples, pair, n_kernels=1, default=_N_RESAMPLES):
    """B (None: `default`), or (B1, B2) for the aggregated test (`pair`);
    their statistics (n_kernels per resample) must fit in memory."""
    if n_resamples is None:
        n_resamples = _N_RESAMPLES_AGG if pair else default
    if pair and isinstance(n_resamples, (list, tuple, np.ndarray)) and (
            np.ndim(n_resamples) != 0):
        if len(n_resamples) != 2:
            raise ValueError(f"n_resamples must be an int or a pair (B1, B2) "
                             f"for the aggregated test, got {n_resamples!r}")
        values = tuple(check_scalar(b, "n_resamples", kind="int", low=1)
                       for b in n_resamples)
    else:
        B = check_scalar(n_resamples, "n_resamples", kind="int", low=1)
        values = (B, B) if pair else (B,)
    check_size(n_resamples=sum(values) + 1, kernels=n_kernels)
    return values if pair else values[0]


def _warn_never_rejects(B, alpha, name):
    """A `DegenerateWarning` where B resamples cannot give a p-value of at
    most `alpha`: the smallest is ``1 / (B + 1)``."""
    smallest = 1.0 / (B + 1)
    if smallest > alpha:
        inverse = 1.0 / alpha  # (inf for a subnormal alpha)
        if inverse < 2.0**53:
            need = math.ceil(inverse) - 1
            need += 1.0 / (need + 1) > alpha  # (rounding of 1 / alpha)
            advice = f"use at least {need} resamples"
        else:
            advice = "no number of resamples reaches it"
        warn_degenerate(
            f"{name}={B}: the smallest p-value of {B} resamples is 1 / "
            f"({B} + 1) = {smallest:.3g}, above alpha={alpha:g}, so the "
            f"test can never reject; {advice}"
        )


def _warn_long_call(iv, width=None):
    """A `CostWarning` before the long work where the call's estimated
    time on its threads (`_work_seconds`; `width`: the features of the
    linear test or of the resampling tests on features) is beyond
    `LONG_CALL_SECONDS`, with the faster ways the user guide recommends.
    Not for Dask input (its work runs on the cluster's workers, whose
    number is not known here)."""
    if iv.lazy or is_dask_array(iv.X) or is_dask_array(iv.Y):
        return
    work, sizes = _work_seconds(iv, width)
    seconds = work / iv.n_threads
    if seconds > LONG_CALL_SECONDS:
        warn_cost(_long_call_message(iv, seconds, sizes, width))


def _work_seconds(iv, width, resamples=None):
    """The seconds of work of the validated call `iv` on one fast core, by
    a cost model of its longest parts (an estimate on the short side: the
    rates are a few times those measured on one core of a Zen 5, and the
    kernel of objects other than points is not counted), and ``(n, m)``:
    O(1) arithmetic from the sizes, the dimension, the resamples (or
    `resamples`, one number, instead), the method and the features
    (`width`, for the linear test and the tests on features)."""
    if iv.method == "linear":  # (points only: their sizes not kept yet)
        n, m = iv.X.shape[0], iv.Y.shape[0]
    else:
        n, m = iv.n, iv.N - iv.n
    N = n + m
    d = iv.X.shape[1] if iv.kind == "points" else 0
    if iv.method == "linear":
        covariance = min(n, LINEAR_COVARIANCE_ROWS) + min(m, LINEAR_COVARIANCE_ROWS)
        return (N * width * (d + 2) + covariance * width**2 + width**3
                ) / FEATURE_RATE, (n, m)
    if iv.method == "cross":
        return N * N / 4 * (d + 4) / KERNEL_RATE, (n, m)
    B = sum(np.atleast_1d(iv.B)) if resamples is None else resamples
    wild = iv.method in ("wild_bootstrap", "aggregated")
    rows = min(n, m) if wild else N
    if width is not None:  # the permutation test or wild bootstrap on features
        return (rows * width * (B + 1) + N * width * (d + 2)) / FEATURE_RATE, (n, m)
    L, band = iv.n_kernels, iv.incomplete
    products = L * rows * (band if band is not None else rows / 2)
    draws = rows / (SIGN_RATE if wild else DRAW_RATE)
    pairs = N * band if band is not None else N * N / 2
    kernel = pairs * (d * len(iv.kernels) + 4 * L) / KERNEL_RATE
    return ((B + 1) * (products / RESAMPLE_RATE + draws + L * RESAMPLE_COST)
            + kernel), (n, m)


def _long_call_message(iv, seconds, sizes, width):
    """What a `CostWarning` of `mmd_test` says: the estimate, and what is
    faster (fewer resamples where they make the cost, else the tests the
    user guide recommends at that size)."""
    n, m = sizes
    resamples = "" if iv.B is None else (
        f" with n_resamples={iv.B}" if np.ndim(iv.B) == 0
        else f" with n_resamples=({iv.B[0]}, {iv.B[1]})")
    head = (f"mmd_test(method={iv.method!r}) of n={n} and m={m} objects"
            f"{resamples}: about {_duration(seconds)} of work on "
            f"{iv.n_threads} thread{'s' * (iv.n_threads > 1)} (a cost model's "
            f"estimate on the short side, made before the call starts)")
    default = (None if iv.B is None else
               _N_RESAMPLES_AGG if iv.method == "aggregated" else
               _N_RESAMPLES_FUSE if iv.method == "fuse" else _N_RESAMPLES)
    if default is not None and sum(np.atleast_1d(iv.B)) > sum(
            np.atleast_1d(default)) and (
            _work_seconds(iv, width, sum(np.atleast_1d(default)))[0]
            / iv.n_threads <= LONG_CALL_SECONDS):
        smallest = 1 / (np.atleast_1d(default)[-1] + 1)
        advice = (f"the resamples make it long: the default, n_resamples="
                  f"{default}, gives p-values down to {smallest:.2g}, enough "
                  f"for any alpha above that")
    elif width is not None:
        advice = ("at this size a random subsample of X and Y, or fewer "
                  "features" + (" or resamples" if iv.B is not None else "")
                  + ", is faster")
    else:
        faster = ("feature_map=1000 (the permutation test on 1000 random "
                  "Fourier features, exact for their kernel), "
                  "method='linear'" if iv.kind == "points" else
                  "method='linear' with a feature_map that takes the objects")
        if iv.method != "cross":
            faster += " or method='cross'"
        if iv.method in ("aggregated", "fuse") and iv.incomplete is None:
            faster += (", or for a grid of kernels method='aggregated' with "
                       "incomplete=200")
        advice = (f"at this size the user guide (\"Which test for which "
                  f"size\") recommends the tests linear in n: {faster}")
    return (f"{head}; {advice}. (Silence it: warnings.simplefilter('ignore', "
            f"kernelmaps.CostWarning).)")


def _duration(seconds):
    """`seconds` in words: minutes, hours or days."""
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.3g} days"


# A call whose estimated time (`_work_seconds`, on its threads) is beyond
# this many seconds says so up front (`CostWarning`).
LONG_CALL_SECONDS = 600.0
# Rates of the cost model, per thread: about 2.5 times those measured on
# one core of an AMD Zen 5 (AVX-512; process time, workers=1, a machine
# shared with other jobs), so that the estimate is on the short side (a
# faster core, perfect scaling over the threads): the resampling products
# (multiply-adds per second, float64 or float32: 1.5e10 measured for both
# from N = 1000 on, less below), the permutations drawn (objects per
# second: 5.5e7; random draws, which a faster core speeds up less: 1.8
# times), the Rademacher signs (3.6e8), what each kernel adds per resample
# (seconds: 0.1e-6), the kernel's distances and exponentials (multiply-adds
# per second: 7.6e9), the features' products (1.4e10 to 2.1e10).
RESAMPLE_RATE = 4e10
DRAW_RATE = 1e8
SIGN_RATE = 1e9
RESAMPLE_COST = 0.04e-6
KERNEL_RATE = 2e10
FEATURE_RATE = 4e10


def _block_seeds(generator, total):
    """One seed per block of `RESAMPLE_BLOCK` resamples (the first resample of the
    first block is the observed sample): the blocks can be drawn again,
    alike, for each kernel of the aggregated test."""
    n_blocks = -(-total // RESAMPLE_BLOCK)
    sizes = np.full(n_blocks, RESAMPLE_BLOCK)
    sizes[-1] = total - RESAMPLE_BLOCK * (n_blocks - 1)
    return list(zip(generator.integers(2**63, size=n_blocks), sizes,
                    strict=True))


# Resamples per block of draws (one seed each): a block's product K0 @ S is
# (N, RESAMPLE_BLOCK).
RESAMPLE_BLOCK = 256


def _draw_block(seed, size, first, n, N, method, dtype):
    """The resamples of one block: the indicators of the first sample (N x
    size) for permutations, Rademacher signs (n x size) for the wild
    bootstrap; for the `first` block, column 0 is the observed sample."""
    generator = np.random.default_rng(seed)
    if method == "wild_bootstrap":
        E = generator.integers(0, 2, size=(n, size), dtype=np.int8)
        E = (2 * E - 1).astype(dtype)
        if first:
            E[:, 0] = 1
        return E
    order = generator.permuted(np.tile(np.arange(N), (size, 1)), axis=1)
    S = np.zeros((N, size), dtype=dtype)
    S[order[:, :n].T, np.arange(size)] = 1
    if first:
        S[:, 0] = 0
        S[:n, 0] = 1
    return S


def _drawer(seeds, n, N, method, dtype):
    """A function of i giving the draws of block i (see `_draw_block`)."""
    def draw(i):
        seed, size = seeds[i]
        return _draw_block(seed, size, i == 0, n, N, method, dtype)

    return draw


def _resampled(form, draw, prepare, n_blocks, bar, n_threads):
    """The statistics of every resample (the observed first), a block of
    draws at a time: for ``form = (M, finish)``, ``finish(S, diag(P' M
    P))`` for the `n_blocks` blocks ``S = draw(i)`` (int8), ``P =
    prepare(S)`` (in M's dtype).

    M is symmetric: a task of rows ``a:b`` of M adds ``P[a:b]' (M[a:b, a:b]
    P[a:b] + 2 M[a:b, b:] P[b:])``, the products of the upper triangle only
    (half the flops of ``M P``). The tasks are of about
    `RESAMPLE_TASK_FLOPS` each at the most (tens of milliseconds; their
    parts of ``P' M P`` are added in the order of their rows, whatever the
    threads). The
    tasks run on `n_threads` threads, each product on one BLAS thread, at
    most two tasks per thread in flight. (A product on several BLAS threads
    joins them at every call, which costs more than the product below about
    a millisecond, and much more on a machine where another process holds a
    core.) Small products stay on the calling thread. Ctrl-C stops after
    the tasks running, each short; the results do not depend on the number
    of threads."""
    M, finish = form
    rows = M.shape[0]
    if 2.0 * rows**2 * RESAMPLE_BLOCK < RESAMPLE_THREADED_FLOPS:
        n_threads = 1
    step = max(1, int(RESAMPLE_TASK_FLOPS // (2.0 * rows * RESAMPLE_BLOCK)))
    starts = range(0, rows, step)

    def part(P, start):
        """The share of the rows start:start + step of M in diag(P' M P)."""
        end = start + step
        D = M[start:end, start:end] @ P[start:end]
        if end < rows:
            F = M[start:end, end:] @ P[end:]
            F *= 2
            D += F
        return column_dots(P[start:end], D)

    def tasks():
        """(block, its products' draws, first row) of each task, the next
        block drawn on a thread of its own while the tasks of one run."""
        for S in thread_map(draw, range(n_blocks), min(n_threads, 2), in_flight=2):
            P = prepare(S)
            for start in starts:
                yield S, P, start

    out, total = [], None
    with lapack.one_blas_thread():
        for S, _, start, quadratic in thread_map(
                lambda task: (*task, part(*task[1:])), tasks(), n_threads):
            total = quadratic if start == 0 else total + quadratic
            if start == starts[-1]:  # the block is complete
                out.append(finish(S, total))
                bar.update(1)
    return np.concatenate(out)


# Flops of a block's product (about 0.3 ms) from which its tasks run on
# several threads: below, starting them costs more than they save.
RESAMPLE_THREADED_FLOPS = 2e7
# Flops of one task of a block's product (rows of the matrix times the
# block): about 20 ms on one core, the latency of Ctrl-C; smaller tasks
# lose time to their overhead (benchmarks/TUNING.md).
RESAMPLE_TASK_FLOPS = 1e9


def _pvalue(observed, null):
    """``(1 + #{null >= observed}) / (1 + B)``: exact at every level (the
    observed sample counts as one of the equally likely ones)."""
    return float((1.0 + np.count_nonzero(null >= observed)) / (1.0 + null.size))


def _permutation_finish(r, diag, n, m, unbiased):
    """``finish(S, q)``: the permutation test's MMD^2 of each split of a
    block of indicators S (N x b, float or int8) from the quadratic forms
    ``q = diag(T' K0 T)`` of the centred indicators ``T = N S - n``
    (`product_draws`), K0 the pooled matrix with its diagonal 0, r = K0 1
    its row sums and `diag` the diagonal of the pooled matrix: ``Sxx = s'
    K0 s = (q + 2 n N r' s - n^2 T) / N^2``, ``Sxy = r' s - Sxx`` and ``Syy
    = T - 2 r' s + Sxx`` with T = 1' K0 1."""
    total = math.fsum(r)
    diag_total = math.fsum(diag)
    N = n + m

    def finish(S, q):
        rs, dx = _draw_projections(np.stack([r, diag]), S)
        sxx = (q + (2.0 * n * N) * rs - (float(n) * n) * total) / (float(N) * N)
        return split_statistic(sxx, rs, dx, total, diag_total, n, m, unbiased)

    return finish


def _draw_projections(V, S):
    """``V @ S`` (float64) for vectors V (k x N) and draws S (N x b, float
    or int8), in blocks of rows of S."""
    out = np.zeros((V.shape[0], S.shape[1]))
    step = max(1, CAST_ROWS)
    for a in range(0, S.shape[0], step):
        out += V[:, a:a + step] @ S[a:a + step].astype(np.float64, copy=False)
    return out


# Rows of int8 draws cast to float64 at a time (a few MB).
CAST_ROWS = 1024


def _wild_finish(pairs):
    """The wild bootstrap's statistic ``e' H e / (2 pairs)`` of each column
    of a block of signs, from its quadratic forms, for H of `pairs` pairs
    (a, b), a < b (n (n - 1) / 2 for the complete U-statistic of n pairs;
    R n - R (R + 1) / 2 for the incomplete one of R diagonals)."""
    return lambda E, quadratic: quadratic / (2.0 * pairs)


def _swap_finish(w, q, constants, n, m):
    """``finish(E, quadratic)``: the unbiased MMD^2 of each swapped split of
    a block of signs E (p x b) from ``e' H e``, with the vectors w and q
    and the constants (T, c' K0 c, r' c, tr D) of `_swap_form`."""
    T, cKc, rc, trD = constants

    def finish(E, quadratic):
        we, qe = _draw_projections(np.stack([w, q]), E)
        sxx = cKc + we + (quadratic + trD) / 4
        rs = rc + 0.5 * qe
        sxy = rs - sxx
        syy = T - 2 * rs + sxx
        return sxx / (n * (n - 1)) + syy / (m * (m - 1)) - 2 * sxy / (n * m)

    return finish


def _cross(iv):
    """Cross-MMD: the witness function of the second halves (X2, Y2),
    ``g(z) = mean k(z, X2) - mean k(z, Y2)``, at the first halves' objects,
    from the blocks of the kernel between the first and the second halves
    (tasks of a block each, their parts added in order); the statistic
    ``(mean g(X1) - mean g(Y1)) / sqrt(var g(X1) / n1 + var g(Y1) / m1)``,
    standard normal under the null."""
    spec, n, N = iv.specs[0], iv.n, iv.N
    m = N - n
    n1, m1 = n // 2, m // 2
    value = spec.scales(iv.Z, iv.gamma, None, iv.n_threads)[0]
    size = max(_MIN_BLOCK, min(CROSS_BLOCK, int(math.sqrt(
        iv.budget / (8.0 * 6 * iv.n_threads)))))
    rows = [(a, min(a + size, b)) for a, b in ((0, n1), (n, n + m1))
            for a in range(a, b, size)]
    cols = [(a, min(a + size, b), weight) for a, b, weight in
            ((n1, n, 1.0 / (n - n1)), (n + m1, N, -1.0 / (m - m1)))
            for a in range(a, b, size)]

    def part(task):
        (r0, r1), (c0, c1, weight) = rows[task[0]], task[1]
        return cross_part((spec, value), spec.take(iv.Z, slice(r0, r1)),
                          spec.take(iv.Z, slice(c0, c1)), weight)

    g = np.zeros(n1 + m1)
    starts = np.cumsum([0] + [b - a for a, b in rows])
    tasks = [(i, c) for i in range(len(rows)) for c in cols]
    if iv.lazy:  # Dask input: a task per pair of ranges
        g = np.concatenate(cross_dask(spec, iv.Z, value,
                                      [slice(a, b) for a, b in rows], cols))
    else:
        with progress_bar(iv.progress, len(tasks), "mmd_test") as bar, \
                lapack.one_blas_thread():
            for (i, _), values in zip(tasks, thread_map(part, tasks,
                                                        iv.n_threads),
                                      strict=True):
                g[starts[i]:starts[i + 1]] += values
                bar.update(1)
    gx, gy = g[:n1], g[n1:]
    statistic = gx.mean() - gy.mean()
    scale = math.sqrt(gx.var(ddof=1) / n1 + gy.var(ddof=1) / m1)
    if scale == 0.0:  # g constant: no evidence either way
        statistic, pvalue = 0.0, 1.0
    else:
        statistic = float(statistic / scale)
        pvalue = float(scipy.stats.norm.sf(statistic))
    return MMDTestResult(statistic, pvalue, None, pvalue <= iv.alpha, iv.alpha,
                         "cross", spec.name, spec.report(value))


# The largest blocks of the cross test, a side (tasks of some 10 ms).
CROSS_BLOCK = 2048


def _aggregated(iv):
    """MMDAgg with uniform weights: the statistics of every kernel on the
    same B1 + B2 resamples (and the observed sample), then the level
    correction."""
    n, N, (B1, B2) = iv.n, iv.N, iv.B
    # unequal sizes: swaps of paired points (`_swap_form`)
    mode = "wild" if 2 * n == N else "swap"
    stats, names, gammas, kinds, _ = _statistics(iv, mode, 1 + B1 + B2)
    _warn_degenerates(iv, names, gammas, kinds, "aggregated")
    observed = stats[:, 0]
    M1, M2 = stats[:, 1:1 + B1], stats[:, 1 + B1:]
    pvalues, pvalue, thresholds = _level_correction(observed, M1, M2, iv.alpha)
    return MMDTestResult(observed, pvalue, M1, pvalue <= iv.alpha, iv.alpha,
                         "aggregated", names, gammas, pvalues=pvalues,
                         thresholds=thresholds)


def _fuse(iv):
    """MMD-FUSE: the unbiased MMD^2 of every kernel on the same B + 1
    permutations (the observed sample first), each normalised, fused by a
    log-sum-exp with weights 1/L, as in the authors' code (Biggs, Schrab and
    Gretton, 2023; the function mmdfuse of github.com/antoninschrab/mmdfuse):
    with p = min(n, m), kernel l's statistic is ``p (p - 1) sqrt(p (p - 1))
    MMD^2_l / ||K0_l||_F``, K0_l the pooled matrix with its diagonal set to
    0, and the fused one ``log((1 / L) sum_l exp(statistic_l))`` (their
    lambda_multiplier of 1). No multiplicity correction: the p-value is the
    permutation test's of the fused statistic."""
    iv.unbiased = True
    stats, names, gammas, kinds, norms = _statistics(iv, "permutation",
                                                     1 + iv.B, norms=True)
    _warn_degenerates(iv, names, gammas, kinds, "fused")
    p = min(iv.n, iv.N - iv.n)
    scale = p * (p - 1) * math.sqrt(p * (p - 1))
    # (a kernel 0 between all distinct points: no information; a norm
    # beyond float64: kernel values near the top of its range, no scale)
    usable = (norms > 0) & np.isfinite(norms)
    factors = np.where(usable, scale / np.where(usable, norms, 1.0), 0.0)
    stats *= factors[:, None]
    fused = scipy.special.logsumexp(stats, axis=0, b=1.0 / len(stats))
    observed, null = float(fused[0]), fused[1:]
    pvalue = _pvalue(observed, null)
    return MMDTestResult(observed, pvalue, null, pvalue <= iv.alpha, iv.alpha,
                         "fuse", names, gammas)


def _warn_degenerates(iv, names, gammas, kinds, test):
    """One warning that names the degenerate kernels of a test over a
    grid."""
    between = {spec.name: spec.between for spec in iv.specs}
    messages = [degenerate_message(kind, name, g, between[name])
                for name, g, kind in zip(names, gammas, kinds, strict=True)
                if kind is not None]
    if messages:
        warn_degenerate(f"{len(messages)} of the {len(names)} kernels of the "
                        f"{test} test carry no information: "
                        + "; ".join(messages))


def _shared_draws(seeds, size, N, method, rows):
    """A function of i giving the draws of block i (`_draw_block`, int8),
    the same for every kernel: drawn once (1 byte an entry, `rows` of them
    per resample) and kept, unless they would take much memory (then drawn
    again for each kernel, alike)."""
    draw = _drawer(seeds, size, N, method, np.int8)
    if rows * sum(b for _, b in seeds) > RESAMPLE_DRAWS_KEPT:
        return draw
    return [draw(i) for i in range(len(seeds))].__getitem__


# Bytes of resampling draws the aggregated test keeps for all its kernels
# (beyond, it draws them again for each kernel).
RESAMPLE_DRAWS_KEPT = 1 << 28


def _swap_form(rows_of, n, m, dtype, n_threads):
    """The unbiased MMD^2 under swaps of paired points, for samples of
    unequal sizes, as a quadratic form ``(H, finish)`` of p x p, p = min(n,
    m): a randomization over a group of permutations, exact as the
    permutation test, at the cost of the wild bootstrap.

    The pooled points are X (n) then Y (m); x_i and y_i (i < p) form pair
    i, and a sign e_i = -1 swaps them; the |n - m| points of the larger
    sample beyond the pairs stay in it. With s the indicator of the first
    sample, ``s = c + P e / 2`` (c: 1/2 on the paired points, 1 or 0 on the
    others; column i of P: +1 at x_i, -1 at y_i), so that for the pooled K0
    (its diagonal 0) ``s' K0 s = c' K0 c + w' e + (e' H e + tr D) / 4``
    with ``w = P' K0 c``, H the wild bootstrap's matrix of the pairs and tr
    D = -2 sum k(x_i, y_i), and ``r' s = r' c + (P' r)' e / 2`` for r = K0
    1: the sums of the statistic (see the module's docstring) cost one
    quadratic form of p x p and two dot products of p per resample
    (`_swap_finish`). ``rows_of(rows)`` gives the rows of K0 (float64);
    they are read once, a block at a time (on `n_threads` threads)."""
    N, p = n + m, min(n, m)
    c = np.full(N, 0.5)
    if n > m:
        c[p:n] = 1.0
    else:
        c[n + p:] = 0.0
    H = np.empty((p, p), dtype=dtype)
    w, q = np.empty(p), np.empty(p)

    def pair_rows(block):
        """The pairs' rows of the block: H's rows, w, q and their shares
        of T = 1' K0 1, c' K0 c, r' c and tr D."""
        a = rows_of(block)
        b = rows_of(slice(n + block.start, n + block.stop))
        ra, rb = a.sum(axis=1), b.sum(axis=1)
        ac, bc = a @ c, b @ c
        g = a - b
        H[block] = g[:, :p] - g[:, n:n + p]
        w[block], q[block] = ac - bc, ra - rb
        i = np.arange(block.stop - block.start)
        return (ra.sum() + rb.sum(), 0.5 * (ac.sum() + bc.sum()),
                0.5 * (ra.sum() + rb.sum()),
                -2.0 * a[i, n + block.start + i].sum())

    def other_rows(block):
        """The shares of the unpaired points' rows (weight c: 1 or 0)."""
        e = rows_of(block)
        r = e.sum(axis=1)
        return r.sum(), c[block] @ (e @ c), c[block] @ r, 0.0

    extra = slice(p, n) if n > m else slice(n + p, N)
    blocks = [(pair_rows, b) for b in _row_blocks(p)] + [
        (other_rows, slice(extra.start + b.start, extra.start + b.stop))
        for b in _row_blocks(extra.stop - extra.start)]
    shares = list(thread_map(lambda job: job[0](job[1]), blocks,
                             min(n_threads, len(blocks))))
    constants = tuple(math.fsum(v) for v in zip(*shares, strict=True))
    np.fill_diagonal(H, 0.0)
    return H, _swap_finish(w, q, constants, n, m)


def _row_blocks(n):
    """Slices of `TEST_MATRIX_ROWS` rows covering ``0 .. n``."""
    return [slice(i, min(i + TEST_MATRIX_ROWS, n))
            for i in range(0, n, TEST_MATRIX_ROWS)]


# Rows of a kernel matrix per task of the tests' preparation (exponentials
# of its logarithm, row sums of the pairs): a few milliseconds each.
TEST_MATRIX_ROWS = 256


def _level_correction(observed, M1, M2, alpha):
    """MMDAgg's level correction with uniform weights 1/L.

    Each statistic's single p-value is ``(1 + #{M1 >= t}) / (1 + B1)``
    (the observed and the B2 resamples alike, against the B1). The
    aggregated statistic is ``s = L min p``; its p-value is ``(1 + #{s_b <=
    s}) / (1 + B2)`` over the B2 resamples, exact since the observed sample
    and the B2 are exchangeable given the B1. The corrected single level is
    u w = u / L for the level correction u (below); each threshold is the
    statistic value beyond which the single p-value is below it. Returns
    (single p-values, p-value, thresholds)."""
    L, B1 = M1.shape
    desc = -np.sort(-M1, axis=1)  # descending
    ascending = desc[:, ::-1]

    def single(t):
        # #{M1 >= t} for each row, t of shape (L, k)
        return np.stack([B1 - np.searchsorted(ascending[i], t[i], "left")
                         for i in range(L)])

    p_obs = (1.0 + single(observed[:, None])[:, 0]) / (1.0 + B1)
    p_null = (1.0 + single(M2)) / (1.0 + B1)
    s_obs = L * p_obs.min()
    s_null = np.sort(L * p_null.min(axis=0))
    B2 = s_null.size
    pvalue = float((1.0 + np.searchsorted(s_null, s_obs, "right")) / (1.0 + B2))
    # The level correction u is the supremum of the u whose p-value
    # (1 + #{s_b <= u}) / (1 + B2) is at most alpha: just below s*, the
    # smallest s_b whose p-value is not. The test rejects when s < s*, and
    # single test l when its p-value is below s* / L: #{M1 >= t} <= k
    # with k = s* (1 + B1) / L - 2 (s* / L is one of the p-values
    # (1 + c) / (1 + B1)), that is when t > desc[k], the (k+1)-th largest.
    # (The last s_b is always over: its p-value is 1. With 1 / (1 + B2) >
    # alpha nothing can reject.)
    over = (1.0 + np.searchsorted(s_null, s_null, "right")) / (1.0 + B2) > alpha
    k = -1 if alpha < 1.0 / (1.0 + B2) else round(
        s_null[over.argmax()] * (1.0 + B1) / L) - 2  # at most B1 - 1
    thresholds = desc[:, k].copy() if k >= 0 else np.full(L, np.inf)
    return p_obs, pvalue, thresholds


def _linear(iv, feature_map):
    """The linear test of two samples of points (`_spectral`), their
    features' moments a block of rows at a time."""
    X, Y = iv.X, iv.Y
    fmap, name, gamma = _feature_map(iv, feature_map)
    # Moments about the features of the first points (no cancellation when
    # the features' mean is far from 0 next to their spread).
    shift = np.asarray(fmap.transform(_first_rows(X)),
                       dtype=np.float64).mean(axis=0)
    _warn_long_call(iv, shift.size)
    moments = []
    for A, data in ((X, "X"), (Y, "Y")):
        with _as_sample(data):
            s, _, sc, G = _feature_moments(fmap, A, shift, iv.n_threads,
                                           iv.progress)
        moments.append((s, A.shape[0], sc, G))
    return _spectral(*moments, iv.alpha, name, gamma)


def _linear_objects(iv, feature_map):
    """The linear test of two collections of objects (sets, histograms,
    ...) through `feature_map`, a map of this package that takes them
    (fitted here, as a copy, on the pooled objects where it is not)."""
    X, Y, n_threads = iv.X, iv.Y, iv.n_threads
    fmap, name, gamma = _feature_map(iv, feature_map)
    moments, shift = [], None
    for A, data in ((X, "X"), (Y, "Y")):
        with _as_sample(data):
            F = np.asarray(fmap.transform(A, workers=n_threads), dtype=np.float64)
        if len(F) < 2:
            raise ValueError(f"{data} must hold at least 2 objects, got "
                             f"{len(F)}")
        shift = F[:2].mean(axis=0) if shift is None else shift
        F -= shift
        C = F[:LINEAR_COVARIANCE_ROWS]
        moments.append((F.sum(axis=0), len(F), C.sum(axis=0), C.T @ C))
    return _spectral(*moments, iv.alpha, name, gamma)


def _fitted(fmap, pooled_data):
    """`fmap`, or where it is not fitted a copy fitted on ``pooled_data()``
    (the user's map stays as it is)."""
    if fmap.__sklearn_is_fitted__():
        return fmap
    fmap = copy.deepcopy(fmap).fit(pooled_data())
    # Each sample is transformed as given, weighted or not (the pooled
    # sample holds the weights of either): no warning for a sample without.
    fmap._fit_weighted = False
    return fmap


@contextlib.contextmanager
def _as_sample(name):
    """A map's ValueError about its input, which it calls X, said of the
    sample `name`."""
    try:
        yield
    except ValueError as err:
        message = str(err)
        if name == "Y" and message.startswith("X "):
            message = "Y " + message[2:]
        raise ValueError(message) from None


def _spectral(moments_x, moments_y, alpha, name, gamma):
    """The MMD^2 of the linear kernel of the features (the squared distance
    between the samples' mean features) and its asymptotic null: ``n m / N``
    times it is distributed as ``sum_j lambda_j chi2_1`` for the eigenvalues
    lambda_j of the features' covariance (estimated, pooled, from the first
    rows of each sample); the p-value by `_weighted_chi2_sf`."""
    (sx, n, scx, Gx), (sy, m, scy, Gy) = moments_x, moments_y
    cx, cy = min(n, LINEAR_COVARIANCE_ROWS), min(m, LINEAR_COVARIANCE_ROWS)
    N = n + m
    diff = sx / n - sy / m
    statistic = float(diff @ diff)
    scatter = Gx - np.outer(scx, scx) / cx + Gy - np.outer(scy, scy) / cy
    if not (math.isfinite(statistic) and np.isfinite(scatter).all()):
        raise ValueError("the features of X or Y are not finite (NaN or "
                         "infinity in the points?)")
    weights = np.linalg.eigvalsh((scatter + scatter.T) / (2 * (cx + cy - 2)))
    top = weights.max()
    weights = weights[weights > top * 1e-12] if top > 0 else weights[:0]
    if weights.size == 0 or statistic == 0.0:
        # constant features (or equal means): no evidence either way
        return MMDTestResult(statistic, 1.0, None, False, alpha, "linear",
                             name, gamma)
    pvalue = _weighted_chi2_sf(n * m / N * statistic, weights)
    return MMDTestResult(statistic, pvalue, None, pvalue <= alpha, alpha,
                         "linear", name, gamma)


def _as_numpy(A):
    return A.compute() if is_dask_array(A) else A


def _first_rows(A):
    return _as_numpy(A[:2])


def _value_sample_lazy(X, Y):
    """The pooled points the default gamma is computed from: every point of
    small samples; of large or lazy ones, the `value_sample` of the first
    few thousand points of each."""
    head = 4 * BANDWIDTH_SAMPLE
    return value_sample(np.concatenate([_as_numpy(X[:head]),
                                        _as_numpy(Y[:head])]),
                        BANDWIDTH_SAMPLE)


def _feature_moments(fmap, A, shift, n_threads, progress):
    """``(s, c, sc, G)`` of the features of the rows of A minus `shift`
    (float64): their sum over all rows, and over the first c rows (at most
    `LINEAR_COVARIANCE_ROWS`: the covariance's estimate) their sum and
    Gram matrix; a block of rows at a time (Dask arrays: by Dask, one
    pass)."""
    c = min(A.shape[0], LINEAR_COVARIANCE_ROWS)
    if is_dask_array(A):
        import dask

        F = fmap.transform(A).astype(np.float64) - shift
        s, sc, G = dask.compute(F.sum(axis=0), F[:c].sum(axis=0), F[:c].T @ F[:c])
        return np.asarray(s), c, np.asarray(sc), np.asarray(G)
    s = sc = G = None
    starts = range(0, A.shape[0], LINEAR_TEST_ROWS)

    def run(first, stop, _):
        nonlocal s, sc, G
        for start in starts[first:stop]:
            F = np.asarray(fmap.transform(A[start:start + LINEAR_TEST_ROWS],
                                          workers=n_threads),
                           dtype=np.float64) - shift
            s = F.sum(axis=0) if s is None else s + F.sum(axis=0)
            if start < c:
                F = F[:c - start]
                sc = F.sum(axis=0) if sc is None else sc + F.sum(axis=0)
                G = np.zeros((F.shape[1],) * 2) if G is None else G
                # (products of some 1e9 multiply-adds: Ctrl-C between them)
                step = max(1, int(LINEAR_GRAM_WORK // F.shape[1]**2))
                for a in range(0, F.shape[0], step):
                    G += F[a:a + step].T @ F[a:a + step]

    run_chunked(run, (), float(LINEAR_TEST_ROWS) * A.shape[1] * MAP_VALUE_WORK,
                n_tasks=len(starts), n_threads=1, progress=progress,
                desc="mmd_test features")
    return s, c, sc, G


# Rows of points mapped at a time by the linear test: the features of one
# block are in memory at once.
LINEAR_TEST_ROWS = 1 << 15
# Multiply-adds of one product of the linear test's Gram matrix.
LINEAR_GRAM_WORK = 2e9

# The rows of each sample whose features estimate their covariance in the
# linear test (its null distribution's weights): the rest add to the means
# only (time O(N r + r^2 LINEAR_COVARIANCE_ROWS), not O(N r^2)).
LINEAR_COVARIANCE_ROWS = 1 << 16


def _linear_width(N, d):
    """The default number of random features of the linear test: it grows
    with the pooled sample N (and the dimension d), from 100 to 1000."""
    return int(min(1000, max(100, 4 * d, N // 10)))
