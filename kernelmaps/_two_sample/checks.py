"""The input checks of `mmd_test`, in one place (as SciPy's
``_permutation_test_iv``): `check_input` gives the checked call, a frozen
`Checked`, built once every check is done."""

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from .._config import working_memory_bytes
from .._lazy import is_lazy, lazy_samples
from .._parallel import check_progress, resolve_workers
from .._spec import (
    KINDS,
    N_BANDWIDTHS,
    SPECS,
    PrecomputedSpec,
    check_precomputed,
    object_kind,
    spec_for,
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
from .._warnings import warn_degenerate

# The methods and their resamples by default: B of the single-kernel tests,
# (B1, B2) of MMDAgg, B of MMD-FUSE (as in the authors' code); none for the
# linear and cross tests.
DEFAULT_RESAMPLES = {"permutation": 999, "wild_bootstrap": 999,
                     "aggregated": (2000, 2000), "fuse": 2000,
                     "linear": None, "cross": None}
METHODS = tuple(DEFAULT_RESAMPLES)
# The methods that take a feature_map.
ON_FEATURES = ("linear", "permutation", "wild_bootstrap")


@dataclass(frozen=True, eq=False)
class Checked:
    """A checked call of `mmd_test`: its arguments validated, its samples
    checked (and pooled, for a test of the kernel).

    `method`, `alpha`, `unbiased` (always True for "fuse"), `dtype` of the
    products, the `generator` of the draws, `n_threads`, `progress`,
    `gamma` (as given: None means the rule on the pooled sample), the
    working-memory `budget` in bytes, the `kernels` (names, or one
    callable) and the `kind` of objects they take, the `feature_map` as
    given; the samples `X` and `Y` (checked, or lazy; for
    the linear test of objects other than points, as given: its map checks
    them), their sizes `n` and `N` (None for those), and for a test of the
    kernel the pooled objects `Z`, the `specs` of the kernels, whether the
    samples are Dask input (`lazy`), the diagonals of an `incomplete`
    U-statistic (None: every pair); the resamples `B` (an int, (B1, B2) for
    the aggregated test, None for the linear and cross tests) and the
    number of kernels and scales `n_kernels`."""

    method: str
    alpha: float
    unbiased: bool
    dtype: np.dtype
    generator: np.random.Generator
    n_threads: int
    progress: bool
    gamma: object
    budget: float
    kernels: tuple
    kind: str
    feature_map: object
    X: object
    Y: object
    n: int = None
    N: int = None
    Z: object = None
    specs: tuple = None
    lazy: bool = False
    incomplete: int = None
    B: object = None
    n_kernels: int = 1

    @property
    def grid(self):
        """The rule of the grid of scales of a test over a grid ("mmdagg",
        "fuse"), else None."""
        return {"aggregated": "mmdagg", "fuse": "fuse"}.get(self.method)

    @property
    def resolution(self):
        """The relative rounding of the statistics: float32's where the
        products or the objects' values (the pooled objects, or the
        samples of a test on features) are float32, else float64's."""
        Z = self.X if self.Z is None else self.Z
        values = Z[0] if isinstance(Z, tuple) else getattr(Z, "points", Z)
        float32 = np.float32 in (self.dtype, getattr(values, "dtype", None))
        return float(np.finfo(np.float32 if float32 else np.float64).eps)

    @property
    def mode(self):
        """How a resampling test of the kernel resamples: "permutation",
        "wild" (Rademacher signs of the pairs) or "swap" (swaps of the
        paired objects: the aggregated test of samples of unequal sizes)."""
        return ("permutation" if self.method in ("permutation", "fuse")
                else "wild" if 2 * self.n == self.N else "swap")

    @property
    def total(self):
        """The statistics a resampling test computes per kernel: the
        observed and every resample."""
        return 1 + (sum(self.B) if isinstance(self.B, tuple) else self.B)


def check_input(X, Y, kernel, gamma, method, n_resamples, incomplete, alpha,
                unbiased, feature_map, kernel_params, dtype, rng, workers,
                progress, working_memory):
    """Every input check of `mmd_test`: its `Checked` call."""
    method = check_choice(method, "method", METHODS)
    alpha = check_scalar(alpha, "alpha", low=0.0, low_inclusive=False)
    if not alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    options = dict(
        method=method, alpha=alpha,
        unbiased=check_bool(unbiased, "unbiased") or method == "fuse",
        dtype=(np.dtype(np.float32 if method in ("aggregated", "fuse")
                        else np.float64) if dtype is None
               else check_dtype(dtype)),
        generator=check_rng(rng), n_threads=resolve_workers(workers),
        progress=check_progress(progress), gamma=gamma,
        budget=working_memory_bytes(working_memory), feature_map=feature_map)
    incomplete = _check_incomplete(incomplete, method, feature_map)
    kernels, kind = _check_kernels(kernel, method, X)
    params = _check_kernel_params(kernel_params, kernels, kind)
    if method == "linear" and n_resamples is not None:
        raise ValueError("n_resamples is not used by the linear test; leave "
                         "it None")
    if method == "linear" and kind != "points":
        samples = dict(X=X, Y=Y)  # (the feature map checks them)
    elif method == "linear" or feature_map is not None:
        samples = _feature_samples(X, Y, method, kernels[0], kind, params)
    else:
        samples = _kernel_samples(X, Y, method, gamma, kernels, kind, params,
                                  options["generator"], incomplete)
    B, n_kernels = _check_resamples(n_resamples, method, alpha, gamma, kind,
                                    samples.get("specs"))
    return Checked(**options, kernels=kernels, kind=kind, **samples, B=B,
                   n_kernels=n_kernels)


def _feature_samples(X, Y, method, kernel, kind, params):
    """The samples of a test on the features of `feature_map` (points
    checked lazily; other objects by their kernel's spec) and their
    sizes."""
    if method not in ON_FEATURES:
        raise ValueError(f"feature_map is used by method='linear', "
                         f"'permutation' and 'wild_bootstrap', not "
                         f"method={method!r}")
    if kind == "precomputed":
        raise ValueError("feature_map needs the objects of X and Y, not a "
                         "kernel matrix: leave it None with "
                         "kernel='precomputed'")
    if kind == "points":
        X, Y = _check_samples(X, Y, lazy=True)
        n, N = X.shape[0], X.shape[0] + Y.shape[0]
    else:
        spec = spec_for(kernel, params)
        X, Y = spec.check(X, "X"), spec.check(Y, "Y")
        n, N = spec.count(X), spec.count(X) + spec.count(Y)
    _check_counts(n, N, kind)
    _check_sizes(method, n, N)
    return dict(X=X, Y=Y, n=n, N=N)


def _kernel_samples(X, Y, method, gamma, kernels, kind, params, generator,
                    incomplete):
    """The samples of a test of the kernel: checked (or lazy: checked as
    they are read), the kernels' specs, the pooled objects Z and their
    sizes; for an `incomplete` U-statistic of samples of unequal sizes,
    the pairs (x_i, y_i) only, as MMDAggInc."""
    lazy = False
    if kind == "precomputed":
        if gamma is not None:
            raise ValueError("gamma is not used with kernel='precomputed' (the "
                             "matrix is given); leave it None")
        K = check_precomputed(X)
        if len(K) > 1 and method not in ("aggregated", "fuse"):
            raise ValueError(f"X holds {len(K)} kernel matrices: only "
                             f"method='aggregated' or 'fuse' takes several")
        N = K.shape[1]
        order, n = labels_order(Y, N)
        specs = (PrecomputedSpec(K[:, order][:, :, order]),)
        Z = np.arange(N)
    else:
        specs = tuple(spec_for(k, params) for k in kernels)
        for spec in specs:  # what a kernel draws (sliced_wasserstein)
            spec.rng = generator
        spec = specs[0]
        # Dask input: checked as it is read, the statistics from Dask tasks
        lazy = kind in ("points", "rows", "sets") and is_lazy(X, Y)
        if lazy:
            if kind == "points":
                _refuse_sets(X, "X")
                _refuse_sets(Y, "Y")
            X, Y = lazy_samples(spec, X, Y)
        elif kind == "points":
            X, Y = _check_samples(X, Y, lazy=False)
        else:
            X, Y = spec.check(X, "X"), spec.check(Y, "Y")
        if (kind not in ("points", "any") and gamma is not None
                and spec.scale is None):
            raise ValueError(f"the {spec.name!r} kernel has no scale: leave "
                             f"gamma None")
        n, N, Z = spec.count(X), spec.count(X) + spec.count(Y), spec.pool(X, Y)
        _check_counts(n, N, kind)
    if incomplete is not None:
        p = min(n, N - n)
        if 2 * n != N:  # the pairs (x_i, y_i) only, as MMDAggInc
            Z = specs[0].take(Z, np.r_[0:p, n:n + p])
            n, N = p, 2 * p
        if incomplete >= p - 1:  # every pair: the complete statistic
            incomplete = None
    _check_sizes(method, n, N)
    return dict(X=X, Y=Y, n=n, N=N, Z=Z, specs=specs, lazy=lazy,
                incomplete=incomplete)


def _check_counts(n, N, kind):
    """At least 2 objects (`kind` "points": points) in each sample, of n
    and ``N - n``."""
    unit = "points" if kind == "points" else "objects"
    for count, name in ((n, "X"), (N - n, "Y")):
        if count < 2:
            raise ValueError(f"{name} must hold at least 2 {unit}, got {count}")


def _check_sizes(method, n, N):
    """The sizes the wild bootstrap (equal ones) and the cross test (4
    objects at least) need."""
    if method == "wild_bootstrap" and 2 * n != N:
        raise ValueError(
            f"method='wild_bootstrap' needs samples of equal size, got "
            f"{n} and {N - n} objects; use method='permutation'")
    if method == "cross" and min(n, N - n) < 4:
        raise ValueError(f"method='cross' needs at least 4 objects in each "
                         f"sample (two per half), got {n} and {N - n}")


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


def _check_resamples(n_resamples, method, alpha, gamma, kind, specs):
    """``(B, n_kernels)``: the resamples (None: the method's default; None
    for the linear and cross tests), (B1, B2) for the aggregated test, and
    the number of kernels and scales of the test (those of a grid: of
    `gamma`, or `N_BANDWIDTHS` per kernel of `specs`); their statistics
    must fit in memory. A `DegenerateWarning` where B resamples cannot
    reject at `alpha`."""
    if method == "cross" and n_resamples is not None:
        raise ValueError("n_resamples is not used by the cross test; leave "
                         "it None")
    default = DEFAULT_RESAMPLES[method]
    if default is None:
        return None, 1
    n_kernels = 1
    if specs is not None:
        n_kernels = len(specs[0].K) if kind == "precomputed" else len(specs)
        if method in ("aggregated", "fuse") and kind != "precomputed":
            n_kernels *= np.size(gamma) if gamma is not None else N_BANDWIDTHS
    pair = method == "aggregated"
    n_resamples = default if n_resamples is None else n_resamples
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
    _warn_never_rejects(values[-1], alpha, "the second of n_resamples (B2)"
                        if pair else "n_resamples")
    return values if pair else values[0], n_kernels


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
    first, second = np.flatnonzero(y == 0), np.flatnonzero(y == 1)
    if len(first) < 2 or len(second) < 2:
        raise ValueError(f"Y must label at least 2 rows of each sample, got "
                         f"{len(first)} and {len(second)}")
    return np.concatenate([first, second]), len(first)


def _check_samples(X, Y, lazy):
    """X and Y as float arrays of points of the same dimension (Dask
    arrays checked lazily when `lazy`, as `check_rows` checks them)."""
    checked = []
    for A, name in ((X, "X"), (Y, "Y")):
        _refuse_sets(A, name)
        A = check_rows(A, name, lazy=lazy)
        if scipy.sparse.issparse(A):
            raise TypeError(f"{name} must be a dense array of points, "
                            f"got a sparse matrix")
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
            if key == scale:
                raise ValueError(f"kernel_params has {key!r}, the {name!r} "
                                 f"kernel's scale: give it as gamma")
            if key not in allowed:
                raise ValueError(
                    f"kernel_params has {key!r}, which the {name!r} kernel "
                    f"does not take (it takes: "
                    f"{', '.join(sorted(allowed - {scale})) or 'none'})")
    return dict(params)
