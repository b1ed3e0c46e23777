"""Every exact kernel of the package as the composite tools use it
(`NystroemMap`, `mmd_test` on objects): a `Kernel` names the input it
takes (sets, histograms, Gaussians, or anything for a callable), how to
check, count and index that input, and the exact block ``k(A, B)`` (the
public kernel function of its unit).
"""

import numpy as np
import scipy.sparse

from .._bags import Bags
from .._engine.scales import divergence_kernel_matrix
from .._gamma import resolve_gamma
from .._probes import as_float_array
from .._validation import (
    check_gaussians,
    check_histograms,
    check_scalar,
    check_sets,
)
from ..distributions import gaussian_expected_kernel
from ..histograms import (
    additive_chi2_kernel,
    exp_chi2_kernel,
    hellinger_kernel,
    intersection_kernel,
    js_kernel,
)
from ..sets import (
    mmd_kernel,
    renyi_divergence,
    renyi_divergence_both,
    sum_match_kernel,
)

__all__ = ["KERNELS", "Callable", "Kernel", "count", "output_dtype", "take",
           "width"]


class Kernel:
    """A kernel of the package as `NystroemMap` uses it: the input it takes
    (`kind`: "sets", "rows" or "gaussians"), its parameters (the keyword
    arguments of its function) and the exact block ``k(A, B)``."""

    def __init__(self, name, kind, function, params):
        self.name, self.kind, self.function = name, kind, function
        self.params = params

    def check(self, X, name="X"):
        """`X` validated: a Bags, the rows of a 2-D array or CSR matrix, or
        a tuple (means, covariances)."""
        if self.kind == "sets":
            return check_sets(X, name)
        if self.kind == "rows":
            return check_histograms(X, name)
        return _gaussians(X, name)

    def resolve(self, params, X):
        """`params` with the data-dependent defaults fixed on the training
        data `X`: the gamma of a point kernel (the kernels with a
        ``kernel`` parameter), by the median heuristic."""
        params = dict(params)
        if "kernel" in self.params:
            point = params.get("kernel", "rbf")
            reference = X[0] if self.kind == "gaussians" else X
            params["gamma"] = resolve_gamma(params.get("gamma"), point, reference)
        return params

    def block(self, A, B, params, workers):
        """k(A, B) (B None: the symmetric k(A, A)), float64 or float32."""
        if self.kind == "gaussians":
            B = (None, None) if B is None else B
            return self.function(*A, *B, **params, workers=workers)
        return self.function(A, B, **params, workers=workers)

    def landmark_block(self, L, params, workers):
        """k(L, L), and the parameters, with any default that depends on
        the landmarks fixed (none here; see `_Renyi`)."""
        return self.block(L, None, params, workers), params


class _Renyi(Kernel):
    """`divergence_kernel` of the symmetrised kNN Renyi divergences; its
    scale (gamma None) is the median heuristic on the landmarks' block."""

    _DIVERGENCE = ("alpha", "k", "min_dist", "clamp")

    def __init__(self):
        super().__init__("renyi", "sets", None,
                         ("alpha", "k", "min_dist", "clamp", "gamma", "power",
                          "scale"))

    def _divergences(self, A, B, params, workers):
        """``(D(A, B), D(B, A))``, or ``(D(A, A), None)`` for B None."""
        divergence = {k: v for k, v in params.items() if k in self._DIVERGENCE}
        if "alpha" in divergence:  # one order: renyi_divergence takes several
            divergence["alpha"] = check_scalar(divergence["alpha"], "alpha")
        if B is None:
            return renyi_divergence(A, **divergence, workers=workers,
                                    dtype=np.float64), None
        return renyi_divergence_both(A, B, **divergence, workers=workers,
                                     dtype=np.float64)

    @staticmethod
    def _power(params):
        return check_scalar(params.get("power", 2), "power", low=0.0,
                            low_inclusive=False)

    def block(self, A, B, params, workers):
        K, _ = divergence_kernel_matrix(
            *self._divergences(A, B, params, workers), power=self._power(params),
            gamma=params["gamma"], scale=params["scale"])
        return K

    def landmark_block(self, L, params, workers):
        """The landmarks' kernel, and `params` with the median scale fixed
        on it where gamma is None (and not fixed yet)."""
        params = dict(params)
        if params.get("gamma") is not None:  # gamma, given, takes precedence
            params["gamma"] = check_scalar(params["gamma"], "gamma", low=0.0,
                                           low_inclusive=False)
            params["scale"] = None
        else:
            params["gamma"] = None
            if params.get("scale") is not None:
                params["scale"] = check_scalar(params["scale"], "scale", low=0.0,
                                               low_inclusive=False)
        K, scale = divergence_kernel_matrix(
            *self._divergences(L, None, params, workers), power=self._power(params),
            gamma=params["gamma"], scale=params.get("scale"))
        if params["gamma"] is None:
            params["scale"] = scale
        return K, params


_POINT = ("kernel", "gamma", "degree", "coef0")
KERNELS = {
    "mean_map": Kernel("mean_map", "sets", sum_match_kernel,
                       (*_POINT, "normalize")),
    "mmd": Kernel("mmd", "sets", mmd_kernel, (*_POINT, "gamma2")),
    "renyi": _Renyi(),
    "chi2": Kernel("chi2", "rows", additive_chi2_kernel, ()),
    "intersection": Kernel("intersection", "rows", intersection_kernel, ()),
    "hellinger": Kernel("hellinger", "rows", hellinger_kernel, ()),
    "js": Kernel("js", "rows", js_kernel, ()),
    "exp_chi2": Kernel("exp_chi2", "rows", exp_chi2_kernel, ("beta",)),
    "expected": Kernel("expected", "gaussians", gaussian_expected_kernel,
                       _POINT),
}


class Callable(Kernel):
    """A user's ``kernel(A, B)``: A and B are subsets of the input, indexed
    as it is (rows of an array or sparse matrix, items of a sequence, sets
    of a Bags)."""

    def __init__(self, function):
        super().__init__(getattr(function, "__name__", "kernel"), "any",
                         function, None)

    def check(self, X, name="X"):
        if isinstance(X, Bags) or scipy.sparse.issparse(X) or \
                isinstance(X, np.ndarray):
            return X
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise TypeError(f"{name} must be a sequence or an array of objects "
                            f"(for a callable kernel), got {type(X).__name__}")
        return list(X)

    def resolve(self, params, X):
        return dict(params)

    def block(self, A, B, params, workers):
        K = self.function(A, A if B is None else B, **params)
        shape = (count(A), count(A if B is None else B))
        try:
            K = as_float_array(K, "the kernel's value")
        except (TypeError, ValueError):
            raise TypeError(
                f"kernel (a callable) must return a real array of shape "
                f"{shape}, got {type(K).__name__}"
            ) from None
        if K.shape != shape:
            raise ValueError(f"kernel (a callable) returned shape {K.shape} for "
                             f"{shape[0]} x {shape[1]} objects")
        if not np.isfinite(K).all():
            raise ValueError("kernel (a callable) returned NaN or infinite values")
        return K


def _gaussians(X, name):
    """(means, covariances) in float64 from a pair, checked by the
    distributions unit (shapes, finite values, covariances positive
    semi-definite): the landmark rules use them before any kernel value."""
    if not (isinstance(X, tuple) and len(X) == 2):
        raise TypeError(
            f"{name} must be a pair (means, covs) of Gaussians for the expected "
            f"kernel, got {type(X).__name__}"
        )
    means, covs, _ = check_gaussians(X[0], X[1], f"{name}[0] (means)",
                                     f"{name}[1] (covs)")
    return means, covs


def count(X):
    """Number of objects of checked input."""
    if isinstance(X, tuple):
        return X[0].shape[0]
    return X.shape[0] if hasattr(X, "shape") else len(X)


def width(X):
    """Dimension of the objects of checked input (None where it has none)."""
    if isinstance(X, Bags):
        return X.dim
    if isinstance(X, tuple):
        return X[0].shape[1]
    if hasattr(X, "shape") and len(X.shape) > 1:
        return X.shape[1]
    return None


def output_dtype(X):
    """float32 for float32 sets or rows, else float64."""
    dtype = getattr(X, "dtype", None)
    return np.dtype(np.float32 if dtype == np.float32 else np.float64)


def take(X, index):
    """The objects `index` (sorted integers) of checked input."""
    if isinstance(X, Bags):
        offsets = X.offsets
        sizes = offsets[index + 1] - offsets[index]
        starts = np.repeat(offsets[index] - np.cumsum(sizes) + sizes, sizes)
        rows = starts + np.arange(sizes.sum())
        return Bags(X.points[rows], np.concatenate(([0], np.cumsum(sizes))))
    if isinstance(X, tuple):
        return tuple(a[index] for a in X)
    if isinstance(X, list):
        return [X[i] for i in index]
    return X[index]


