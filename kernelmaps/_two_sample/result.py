"""What a test of `mmd_test` reports: its result (`MMDTestResult`), the
p-value of a resampling test, and the warning of the kernels that carry no
information."""

from dataclasses import dataclass

import numpy as np

from .._warnings import degenerate_message, warn_degenerate


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
        ``(1 + #{null >= statistic}) / (1 + B)``, exact at every level
        (ties within rounding counted: see `mmd_test`).
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


def result(statistic, pvalue, null, alpha, method, kernel, gamma, **more):
    """The `MMDTestResult` of a test, rejecting where ``pvalue <= alpha``."""
    return MMDTestResult(statistic, pvalue, null, pvalue <= alpha, alpha,
                         method, kernel, gamma, **more)


def pvalue(observed, null, resolution):
    """``(1 + #{null >= observed}) / (1 + B)``: exact at every level (the
    observed sample counts as one of the equally likely ones), a resample
    within rounding below the observed statistic counted as a tie
    (`tie_floor`, of relative `resolution`)."""
    floor = tie_floor(observed, null, resolution)
    return float((1.0 + np.count_nonzero(null >= floor)) / (1.0 + null.size))


def finite_statistics(stats, names):
    """The statistics (L, B + 1) of the L kernels `names`, or a ValueError
    naming the first kernel whose statistics are not all finite: its
    values' sums beyond float64 (kernel values near its maximum)."""
    finite = np.isfinite(stats).all(axis=1)
    if not finite.all():
        raise ValueError(
            f"the sums of the {names[np.argmin(finite)]} kernel values "
            f"between the objects of X and Y overflow float64 in the test's "
            f"statistics; scale X and Y down")
    return stats


def tie_floor(observed, null, resolution):
    """The value from which a resample's statistic counts as at least the
    `observed` one: ``observed - TIE_ROUNDINGS * resolution * scale``, the
    scale the largest magnitude of the observed and `null` statistics (of
    each row, for rows of observed statistics (L, k) and null ones (L,
    B)). Statistics equal in exact arithmetic (a split and its
    complement; the few splits of samples of few objects) differ by their
    rounding, differently in each library and order of the sums: counted
    as ties, the same input gives the same p-value on NumPy and on a
    device. SciPy's `permutation_test` counts such ties too, within 100
    roundings of the observed statistic; its scale misses the rounding
    of an MMD^2 that cancels (a few roundings of the kernel's values),
    which the largest null statistic holds in samples of few objects,
    where ties occur. (An infinite statistic leaves the others exact.)"""
    observed = np.asarray(observed)
    scale = np.maximum(np.abs(observed), np.abs(null).max(
        axis=-1, keepdims=observed.ndim > 0, initial=0.0))
    return observed - np.where(np.isfinite(scale),
                               TIE_ROUNDINGS * resolution * scale, 0.0)


def warn_degenerates(specs, names, gammas, kinds, test):
    """One warning that names the degenerate kernels (`kinds`: see
    `degenerate`) among those of `names` and scales `gammas`, of the
    `specs`, of a `test` over a grid ("aggregated", "fused")."""
    between = {spec.name: spec.between for spec in specs}
    messages = [degenerate_message(kind, name, g, between[name])
                for name, g, kind in zip(names, gammas, kinds, strict=True)
                if kind is not None]
    if messages:
        warn_degenerate(f"{len(messages)} of the {len(names)} kernels of the "
                        f"{test} test carry no information: "
                        + "; ".join(messages))


# Roundings (of the statistics' relative resolution) within which a
# resample's statistic ties with the observed one (`tie_floor`): SciPy's.
TIE_ROUNDINGS = 100
