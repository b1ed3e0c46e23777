"""The linear test: the squared distance between the samples' mean
features, against its asymptotic null, a weighted sum of chi-squares
(`chi2_tail`), in one pass over the samples."""

import math

import numpy as np

from .._engine.schedule import MAP_VALUE_WORK, run_chunked
from .._probes import is_dask_array
from .chi2_tail import weighted_chi2_sf
from .cost import warn_long_call
from .features import LINEAR_COVARIANCE_ROWS, as_sample, feature_shift, fitted_map
from .result import result


def test(iv):
    """The linear test of the `Checked` call: of points (`_points`), or of
    other objects through its feature_map (`_objects`)."""
    return _points(iv) if iv.kind == "points" else _objects(iv)


def _points(iv):
    """The linear test of two samples of points (`_spectral`), their
    features' moments a block of rows at a time. Reads the `Checked`
    call's samples X and Y, feature_map (`fitted_map`), n_threads,
    progress and alpha."""
    X, Y = iv.X, iv.Y
    fmap, name, gamma = fitted_map(iv)
    shift = feature_shift(fmap, X)
    warn_long_call(iv, shift.size)
    moments = []
    for A, data in ((X, "X"), (Y, "Y")):
        with as_sample(data):
            s, _, sc, G = _feature_moments(fmap, A, shift, iv.n_threads,
                                           iv.progress)
        moments.append((s, A.shape[0], sc, G))
    return _spectral(*moments, iv.alpha, name, gamma)


def _objects(iv):
    """The linear test of two collections of objects (sets, histograms,
    ...) through the `Checked` call's feature_map, a map of this package
    that takes them (fitted here, as a copy, on the pooled objects where it
    is not). Reads also its samples X and Y, n_threads and alpha."""
    X, Y, n_threads = iv.X, iv.Y, iv.n_threads
    fmap, name, gamma = fitted_map(iv)
    moments, shift = [], None
    for A, data in ((X, "X"), (Y, "Y")):
        with as_sample(data):
            F = np.asarray(fmap.transform(A, workers=n_threads), dtype=np.float64)
        if len(F) < 2:
            raise ValueError(f"{data} must hold at least 2 objects, got "
                             f"{len(F)}")
        shift = F[:2].mean(axis=0) if shift is None else shift
        F -= shift
        C = F[:LINEAR_COVARIANCE_ROWS]
        moments.append((F.sum(axis=0), len(F), C.sum(axis=0), C.T @ C))
    return _spectral(*moments, iv.alpha, name, gamma)


def _spectral(moments_x, moments_y, alpha, name, gamma):
    """The MMD^2 of the linear kernel of the features (the squared distance
    between the samples' mean features) and its asymptotic null: ``n m / N``
    times it is distributed as ``sum_j lambda_j chi2_1`` for the eigenvalues
    lambda_j of the features' covariance (estimated, pooled, from the first
    rows of each sample); the p-value by `weighted_chi2_sf`."""
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
    # (constant features, or equal means: no evidence either way)
    pvalue = (1.0 if weights.size == 0 or statistic == 0.0
              else weighted_chi2_sf(n * m / N * statistic, weights))
    return result(statistic, pvalue, None, alpha, "linear", name, gamma)


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
    moments = [None, None, np.zeros((shift.size,) * 2)]
    starts = range(0, A.shape[0], LINEAR_TEST_ROWS)

    def run(first, stop, _):
        for start in starts[first:stop]:
            F = np.asarray(fmap.transform(A[start:start + LINEAR_TEST_ROWS],
                                          workers=n_threads),
                           dtype=np.float64) - shift
            add_moments(np, moments, F, start, c)

    run_chunked(run, (), float(LINEAR_TEST_ROWS) * A.shape[1] * MAP_VALUE_WORK,
                n_tasks=len(starts), n_threads=1, progress=progress,
                desc="mmd_test features")
    s, sc, G = moments
    return s, c, sc, G


def add_moments(xp, moments, F, start, c):
    """Adds to the `moments` ``[s, sc, G]`` of a sample (`_feature_moments`:
    s and sc None before its first block, G zeros) those of the features F
    of its rows from `start` (float64, shifted; of the array namespace
    `xp`): their sum, and over the rows before `c` their sum and Gram
    matrix."""
    s, sc, G = moments
    moments[0] = xp.sum(F, axis=0) if s is None else s + xp.sum(F, axis=0)
    if start < c:
        F = F[:min(c - start, F.shape[0]), :]
        moments[1] = (xp.sum(F, axis=0) if sc is None
                      else sc + xp.sum(F, axis=0))
        # (products of some 1e9 multiply-adds: Ctrl-C between them)
        step = max(1, int(LINEAR_GRAM_WORK // F.shape[1]**2))
        for a in range(0, F.shape[0], step):
            rows = F[a:min(a + step, F.shape[0]), :]
            G += rows.T @ rows
        moments[2] = G


# Rows of points mapped at a time by the linear test: the features of one
# block are in memory at once.
LINEAR_TEST_ROWS = 1 << 15
# Multiply-adds of one product of the linear test's Gram matrix.
LINEAR_GRAM_WORK = 2e9
