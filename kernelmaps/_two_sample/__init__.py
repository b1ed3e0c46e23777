"""The kernel two-sample tests, `mmd_test`: one module per method
(`permutation`, `wild_bootstrap`, `aggregated`, `fuse`, `linear`, `cross`,
and the permutation test and wild bootstrap on explicit features,
`on_features`), chosen from a table, and those that the arrays' library
computes on their device (`on_device`, `on_device_direct`,
`on_device_objects`); the checked
call (`checks`), the resampling tests' statistics (`resampling`: the draws
in `draws`, the block passes in `blocks`, on Dask in `dask_pass`), the
feature passes (`features`), the linear test's tail (`chi2_tail`), the cost
said before a long call (`cost`) and the result (`result`)."""

import functools

from .. import _array_api
from .._hints import takes_hints
from . import (
    aggregated,
    cross,
    fuse,
    linear,
    on_device,
    on_device_direct,
    on_device_objects,
    on_features,
    permutation,
)
from .checks import check_input
from .resampling import resampled_test
from .result import MMDTestResult

__all__ = ["MMDTestResult", "mmd_test"]

# The tests of each method: of the kernel (the resampling tests bind their
# conclusion to the statistics of `resampled_test`, which computes the
# kernel's matrices one call below `mmd_test`), and on the features of a
# feature_map.
METHODS = {
    "permutation": functools.partial(resampled_test, permutation.conclude),
    "wild_bootstrap": functools.partial(resampled_test, permutation.conclude),
    "aggregated": functools.partial(resampled_test, aggregated.conclude),
    "fuse": functools.partial(resampled_test, fuse.conclude),
    "linear": linear.test,
    "cross": cross.test,
}
ON_FEATURES = {"permutation": on_features.test,
               "wild_bootstrap": on_features.test, "linear": linear.test}


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
          ``"laplacian"`` (:math:`\exp(-\gamma \|x - y\|_1)`),
          ``"energy"`` (:math:`(\|x\| + \|y\| - \|x - y\|) / 2`, no
          scale: the statistic is half the energy distance);
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
        features (not the N x N matrix) and time O(N r B). A map
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

    *Arrays of other libraries* (PyTorch, JAX, CuPy, ...; ``pip install
    "kernelmaps[array]"``): every method of points (``"rbf"``,
    ``"laplacian"``, ``"energy"``), of sets and histograms (below) and of
    a precomputed matrix (its labels as an array of the same library) runs
    on the arrays' device where their library computes them (on a GPU,
    with a gradient asked, for array-api-strict). The resampling tests
    compute the pooled kernel a block of rows at a time, each block
    multiplied there with the draws of a batch of resamples, within half
    the device's free memory where the library reports it (CUDA;
    `working_memory` where it is given and lower), else the working
    memory; the draws are the NumPy path's, from `rng` on the host. The
    cross test computes its witness function there, the linear test its
    features and their moments, the permutation test and the wild
    bootstrap with `feature_map` the features and their sums over each
    resample. Only vectors of the N objects and of the B resamples, the
    D x D moments or D x B sums of D features and the at most 1000 points
    of gamma's rule come back to the host, which finishes the test: the
    p-value is that of the same NumPy input, the statistics equal to
    rounding (float64 kernels, also of float32 points; with `incomplete`,
    the band of pairs only). Objects run there too, with every kernel of
    them: sets (lists of 2-D arrays, 3-D arrays, a `Bags` of the
    library's points, weighted or not), histograms and Gaussians, their
    kernel's blocks computed by its function; a scale of ``gamma=None``
    (and the grids of the aggregated and fused tests) comes from at most
    1000 of the objects or points, chosen there as on the host and
    copied. A callable kernel (test the kernel matrix it computes, with
    ``kernel="precomputed"``) and PyTorch and JAX arrays on the CPU
    without a gradient run on the host, in NumPy, on
    their values (a view on the CPU, a copy from another device), with
    the result of the same NumPy input. No test gives a gradient: the
    result holds floats and NumPy arrays.

    The p-value counts the observed statistic as one of the resamples
    (``(1 + #{null >= statistic}) / (1 + B)``): the test's level is at most
    `alpha` at every sample size, not only asymptotically. A resample
    whose statistic is below the observed one by less than 100 roundings
    (of float32 where the products or the values are float32) of the
    largest statistic counts as a tie, as SciPy's `permutation_test` counts
    them: statistics equal in exact arithmetic (a split and its complement,
    the few splits of few objects) then give the same p-value whatever
    library or order of sums rounded them. The aggregated
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
    library = _array_api.library_of_objects(X=X, Y=Y)
    if library is not None and on_device.takes(library, X, Y, kernel, method,
                                               feature_map, incomplete):
        return on_device.test(library, X, Y, kernel, gamma, method, n_resamples,
                              incomplete, alpha, unbiased, kernel_params, dtype,
                              rng, workers, progress, working_memory)
    if library is not None and on_device_objects.takes(
            library, X, Y, kernel, gamma, method, feature_map, incomplete,
            kernel_params):
        return on_device_objects.test(
            library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
            kernel_params, dtype, rng, workers, progress, working_memory)
    if library is not None and on_device_direct.takes(
            library, X, Y, kernel, method, feature_map, incomplete):
        return on_device_direct.TESTS[method](
            library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
            kernel_params, dtype, rng, workers, progress, working_memory,
            feature_map=feature_map)
    if library is not None:  # (tested on the host, see Notes)
        X, Y = (_array_api.numpy_objects(library, S) for S in (X, Y))
    test = check_input(X, Y, kernel, gamma, method, n_resamples, incomplete,
                       alpha, unbiased, feature_map, kernel_params, dtype, rng,
                       workers, progress, working_memory)
    return (METHODS if feature_map is None else ON_FEATURES)[test.method](test)
