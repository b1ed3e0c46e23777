"""The cross test, the linear test and the resampling tests on features
(`resampled`) of points computed by the arrays' own library, on their
device (`mmd_test` of arrays that `ArrayLibrary.native`
says the library computes: another device than the CPU, a gradient asked,
array-api-strict), as `on_device` computes the permutation test and the
wild bootstrap.

The cross test (`cross`): the witness function g of the second halves at
the first halves' points, from blocks of rows of the kernel between them,
computed on the device (`on_device._Kernel`); only g (a float per point of
the first halves) comes back, and the NumPy path's `cross.conclude` makes
the result. The linear test (`linear`): the feature map fitted on the host
as the NumPy path fits it (`features.fitted_map`: its draws from the
call's generator, its default gamma from the value sample of the samples'
first points, chosen on the device), the features of a block of rows at a
time computed on the device by the map's `transform`, their moments summed
there (`linear.add_moments`); only the sums of the D features and their
D x D Gram matrix come back, and the NumPy path's `linear._spectral` makes
the result. The statistic and the p-value are those of the same NumPy
input, to rounding.
"""

import dataclasses
import numbers

import numpy as np

from .. import _array_api
from .._base import FeatureMap
from .._engine.progress import progress_bar
from . import on_device, on_features
from .checks import check_input
from .cross import conclude, halves
from .features import (
    HEAD_ROWS,
    as_sample,
    feature_shift,
    fitted_map,
    pass_result,
    resampling_draws,
)
from .linear import LINEAR_COVARIANCE_ROWS, LINEAR_TEST_ROWS, _spectral, add_moments

# Temporaries of the size of a block of the kernel (the cross test: the
# differences' sums, the kernel's values, their parts joined) and of a
# block of features (the linear test: the map's projections, their cosines
# and sines, the features in float64, shifted).
BLOCK_COPIES = 6
FEATURE_COPIES = 6


def takes(library, X, Y, kernel, method, feature_map, incomplete):
    """Whether `mmd_test` runs the cross test, the linear test or a
    resampling test on features on the device (`TESTS`): a library that
    computes (`native`), two 2-D arrays of points, no `incomplete`; for the
    cross test a point kernel of `on_device.KERNELS` and no `feature_map`;
    for the linear test, and for the permutation test and the wild
    bootstrap with a `feature_map`, the random Fourier features of "rbf" or
    "laplacian" (`feature_map` None, for the linear test, or their number)
    or a fitted feature map whose `transform` computes in the arrays'
    library."""
    if not (library.native and incomplete is None and isinstance(method, str)
            and all(_array_api.is_foreign(A) and getattr(A, "ndim", None) == 2
                    for A in (X, Y))):
        return False
    point = kernel is None or isinstance(kernel, str)
    if method == "cross":
        return feature_map is None and point and kernel in (None, *on_device.KERNELS)
    if method != "linear" and (method not in TESTS or feature_map is None):
        return False  # (the resampling tests of the kernel: `on_device`)
    if isinstance(feature_map, FeatureMap):
        return (feature_map.__sklearn_is_fitted__()
                and hasattr(feature_map, "_array_features"))
    return (point and kernel in (None, "rbf", "laplacian")
            and (feature_map is None or (isinstance(feature_map, numbers.Integral)
                                         and not isinstance(feature_map, bool))))


def cross(library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
          kernel_params, dtype, rng, workers, progress, working_memory,
          feature_map=None):
    """The cross test (`cross.test`) of the points X and Y of `library`
    (`takes`) on their device: the `MMDTestResult` of the same NumPy
    input. The witness function of the second halves, g, at the first
    halves' points, a block of rows of the kernel at a time within the
    budget (`on_device._budget`); the scale as `on_device.test` finds it."""
    xp = library.xp
    X, Y, iv = _checked(library, X, Y, kernel, gamma, method, n_resamples,
                        alpha, unbiased, feature_map, kernel_params, dtype, rng,
                        workers, progress, working_memory)
    spec, Z = iv.specs[0], xp.concat([X, Y])
    sample = (on_device._value_sample(library, Z) if iv.gamma is None
              and spec.scale is not None else None)
    (scale,) = spec.scales(sample, iv.gamma, None, iv.n_threads)
    budget = on_device._budget(library, iv.budget, working_memory)
    kernel = on_device._Kernel(library, spec.name, [scale], Z, budget / 2)
    firsts, seconds = halves(iv.n, iv.N)
    width = max(b - a for a, b, _ in seconds)
    step = on_device._step(budget / 2, 8.0 * BLOCK_COPIES * width)
    rows = [(a, min(a + step, b)) for a, b in firsts for a in range(a, b, step)]
    (x0, x1, wx), (y0, y1, wy) = seconds  # (X2, Y2 and their weights)
    parts = []
    with progress_bar(iv.progress, len(rows), "mmd_test") as bar, \
            np.errstate(over="ignore", invalid="ignore"):  # (refused in `conclude`)
        for a, b in rows:
            here = slice(a, b)
            parts.append(xp.sum(kernel.block(here, slice(x0, x1)), axis=1) * wx
                         + xp.sum(kernel.block(here, slice(y0, y1)), axis=1) * wy)
            bar.update(1)
    g = library.to_numpy(xp.concat(parts))
    return conclude(iv, g, spec, scale)


def linear(library, X, Y, kernel, gamma, method, n_resamples, alpha, unbiased,
           kernel_params, dtype, rng, workers, progress, working_memory,
           feature_map=None):
    """The linear test of points (`linear.test`) of the points X and Y of
    `library` (`takes`), their features on their device: the
    `MMDTestResult` of the same NumPy input. The map fitted on the host
    (`features.fitted_map`: its points copied, X's first two, or the
    pooled samples of a map not fitted; the default gamma's value sample
    chosen on the device), the features' moments a block of rows at a time
    within the budget (`on_device._budget`)."""
    X, Y, iv = _checked(library, X, Y, kernel, gamma, method, n_resamples,
                        alpha, unbiased, feature_map, kernel_params, dtype, rng,
                        workers, progress, working_memory)
    fmap, name, gamma, shift = _fitted(library, iv, X, Y)
    budget = on_device._budget(library, iv.budget, working_memory)
    step = min(LINEAR_TEST_ROWS, on_device._step(
        budget, 8.0 * (FEATURE_COPIES * shift.size + X.shape[1])))
    blocks = [[(a, min(a + step, A.shape[0])) for a in range(0, A.shape[0], step)]
              for A in (X, Y)]
    moments, shift = [], library.from_numpy(shift)
    with progress_bar(iv.progress, len(blocks[0]) + len(blocks[1]),
                      "mmd_test features") as bar:
        for A, data, rows in ((X, "X", blocks[0]), (Y, "Y", blocks[1])):
            with as_sample(data):
                moments.append(_moments(library, fmap, A, shift, rows,
                                        iv.n_threads, bar))
    return _spectral(*moments, iv.alpha, name, gamma)


def resampled(library, X, Y, kernel, gamma, method, n_resamples, alpha,
              unbiased, kernel_params, dtype, rng, workers, progress,
              working_memory, feature_map=None):
    """The permutation test or the wild bootstrap on the explicit features
    of `feature_map` (`on_features.test`) of the points X and Y of
    `library` (`takes`), their features on their device: the
    `MMDTestResult` of the same NumPy input. The map fitted as for the
    linear test (`_fitted`); the features of a block of rows at a time
    (`features.resampling_draws`: the blocks and the host's draws, moved
    to the device) multiplied there with the block's draws; only the sums
    (features x resamples) come back, which the host's
    `on_features.conclude` finishes."""
    xp = library.xp
    X, Y, iv = _checked(library, X, Y, kernel, gamma, method, n_resamples,
                        alpha, unbiased, feature_map, kernel_params, dtype, rng,
                        workers, progress, working_memory)
    fmap, name, gamma, shift = _fitted(library, iv, X, Y)
    on_features.threads_within(iv, shift.size, 1, on_device._budget(
        library, iv.budget, working_memory))
    mode = "wild" if iv.method == "wild_bootstrap" else "permutation"
    blocks, draw = resampling_draws((iv.n, iv.N - iv.n), iv.B, mode,
                                    iv.generator)
    shift = library.from_numpy(shift)

    def mapped(sample, start, stop):
        with as_sample("XY"[sample]):
            F = fmap.transform((X, Y)[sample][start:stop, :], workers=iv.n_threads)
        F = xp.astype(F, xp.float64) - shift
        if not library.all_finite(F):
            raise ValueError(on_features.NOT_FINITE)
        return F

    sums = observed = None
    with progress_bar(iv.progress, len(blocks), "mmd_test") as bar:
        for j, (sample, start, stop) in enumerate(blocks):
            P = library.from_numpy(draw(j))
            if mode == "wild":
                D = mapped(0, start, stop) - mapped(1, start, stop)
                part = (xp.matrix_transpose(D) @ P, xp.sum(D * D),
                        xp.sum(D, axis=0))
            else:
                F = mapped(sample, start, stop)
                q = xp.sum(F * F, axis=1)
                part = (xp.matrix_transpose(F) @ P, q @ P, xp.sum(F, axis=0),
                        xp.sum(q))
            sums = part if sums is None else [a + b for a, b in zip(
                sums, part, strict=True)]
            if sample == 0 and mode != "wild":  # a block of X
                observed = part[2:] if observed is None else [
                    a + b for a, b in zip(observed, part[2:], strict=True)]
            bar.update(1)
    out = pass_result([library.to_numpy(v) for v in sums],
                      None if observed is None else
                      [library.to_numpy(v) for v in observed], mode)
    return on_features.conclude(iv, out, mode, name, gamma)


# The tests of each method: on the kernel, or on the features of
# `feature_map` (the resampling tests).
TESTS = {"cross": cross, "linear": linear, "permutation": resampled,
         "wild_bootstrap": resampled}


def _checked(library, X, Y, kernel, gamma, method, n_resamples, alpha,
             unbiased, feature_map, kernel_params, dtype, rng, workers,
             progress, working_memory):
    """``(X, Y, iv)``: the points X and Y checked (`on_device._points`) and
    the `Checked` call of their stand-ins on the host
    (`on_device._stand_in`: the options checked by the NumPy path's
    `check_input`)."""
    X, Y = on_device._points(library, X, Y)
    iv = check_input(*(on_device._stand_in(library, A) for A in (X, Y)), kernel,
                     gamma, method, n_resamples, None, alpha, unbiased,
                     feature_map, kernel_params, dtype, rng, workers, progress,
                     working_memory)
    return X, Y, iv


def _fitted(library, iv, X, Y):
    """``(fmap, name, gamma, shift)`` of the tests on features of the
    points X and Y of `library` (checked: `_checked`): the fitted map, as
    `features.fitted_map` fits it (its points copied: X's first two, or
    the pooled samples of a map not fitted; the default gamma's value
    sample chosen on the device), the name and gamma the result reports,
    and the features' shift (`features.feature_shift`, on the host)."""
    iv = dataclasses.replace(iv, X=X, Y=Y)
    fmap, name, gamma = fitted_map(
        iv, library.to_numpy, lambda: on_device._value_sample(
            library, library.xp.concat([A[:min(HEAD_ROWS, A.shape[0]), :]
                                        for A in (X, Y)])))
    return fmap, name, gamma, feature_shift(fmap, library.to_numpy(X[:2, :]))


def _moments(library, fmap, A, shift, rows, n_threads, bar):
    """``(s, n, sc, G)`` of `linear._spectral` (NumPy) of the features of
    the points A less `shift` (float64, on the device), from the blocks of
    `rows` (start, stop) of A, each mapped by ``fmap.transform`` on the
    device (`linear.add_moments`)."""
    xp = library.xp
    c = min(A.shape[0], LINEAR_COVARIANCE_ROWS)
    width = shift.shape[0]
    sums = [None, None, xp.zeros((width, width), dtype=xp.float64,
                                 device=library.device)]
    for a, b in rows:
        F = fmap.transform(A[a:b, :], workers=n_threads)
        add_moments(xp, sums, xp.astype(F, xp.float64) - shift, a, c)
        bar.update(1)
    s, sc, G = (library.to_numpy(v) for v in sums)
    return s, A.shape[0], sc, G
