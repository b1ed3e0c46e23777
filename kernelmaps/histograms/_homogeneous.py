"""The homogeneous kernel map of Vedaldi and Zisserman: features of the
additive chi2, Jensen-Shannon and intersection kernels."""

import math

import numpy as np

from .._validation import (
    check_choice,
    check_scalar,
)
from . import _array_maps
from ._maps import _MAX_TERMS, _AdditiveMap

__all__ = ["HomogeneousKernelMap"]

_SPECTRA = {
    # kappa(w): the spectrum of the kernel's signature k(e^(l/2), e^(-l/2)).
    "chi2": lambda w: 1.0 / np.cosh(np.pi * w),
    "intersection": lambda w: 2.0 / np.pi / (1.0 + 4.0 * w**2),
    "js": lambda w: 2.0 / math.log(4.0) / np.cosh(np.pi * w) / (1.0 + 4.0 * w**2),
}
# The sampling step L = 2 pi / period at most: the features are at most
# sqrt(2 L kappa(0) x), which stays finite in float32 (x < 2**128) up to this.
_MAX_STEP = 2.0**100
# VLFeat's default periods (uniform window), by kernel, for order n.
_PERIODS = {
    "chi2": lambda n: 5.86 * math.sqrt(n) + 3.65,
    "js": lambda n: 6.64 * math.sqrt(n) + 7.24,
    "intersection": lambda n: 2.38 * math.log(n + 0.8) + 5.6,
}


class HomogeneousKernelMap(_AdditiveMap):
    r"""The homogeneous kernel map of Vedaldi and Zisserman.

    For a homogeneous additive kernel with spectrum :math:`\kappa`, the
    features of x > 0 sample the spectrum with step L (eq. 13 of [1]_):

    .. math::

        \psi_0 = \sqrt{L x \kappa(0)}, \quad
        \psi_{2j-1}, \psi_{2j} = \sqrt{2 L x \kappa(jL)}\,
        (\cos, \sin)(j L \log x), \quad j = 1, \dots, n,

    so that :math:`\psi(x) \cdot \psi(y) = \sqrt{xy}\, L \big(\kappa(0) + 2
    \sum_j \kappa(jL) \cos(jL \log(x/y))\big)`, with
    :math:`\kappa(w) = \operatorname{sech}(\pi w)` for chi2,
    :math:`2/\pi / (1 + 4w^2)` for intersection, and
    :math:`2/\ln 4 \cdot \operatorname{sech}(\pi w) / (1 + 4w^2)` for
    Jensen-Shannon. Hellinger's kernel :math:`\sqrt{xy}` is exactly
    :math:`\sqrt{x} \sqrt{y}`: one feature.

    Parameters
    ----------
    kernel : {"chi2", "js", "intersection", "hellinger"}, default="chi2"
    order : int, default=2
        n: ``2 n + 1`` features per input feature (1 for Hellinger), n at
        most 32767.
    period : float, optional
        The period ``2 pi / L`` of the approximation; None takes VLFeat's
        default for the kernel and order (chi2: ``5.86 sqrt(n) + 3.65``).
        At least ``2 pi / 2**100`` (smaller ones would make features
        overflow).

    Attributes
    ----------
    period_ : float or None
        The period used (None for "hellinger").
    n_features_in_ : int
        Width d of the histograms `fit` saw.
    n_features_out_ : int
        ``d * (2 * order + 1)`` (``d`` for "hellinger").

    See Also
    --------
    additive_chi2_kernel, intersection_kernel, js_kernel, hellinger_kernel
    Chi2DirectMap : A map of chi2 with geometric convergence.

    Notes
    -----
    Zero maps to zero features, and large values are mapped like any other
    (VLFeat returns 0 for inputs of 256 and more, and below about 1.9e-6;
    scikit-learn's ``AdditiveChi2Sampler`` gives NaN for zeros stored
    explicitly in CSR input).

    References
    ----------
    .. [1] A. Vedaldi and A. Zisserman, "Efficient Additive Kernels via
       Explicit Feature Maps", IEEE TPAMI 34(3), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelmaps import HomogeneousKernelMap
    >>> vz = HomogeneousKernelMap("chi2", order=1)
    >>> vz.transform(np.array([[0.5, 0.0]])).round(4)
    array([[ 0.5748,  0.3624, -0.1786,  0.    ,  0.    ,  0.    ]])
    """

    _kind = "homogeneous"

    def __init__(self, kernel="chi2", order=2, *, period=None):
        self.kernel = kernel
        self.order = order
        self.period = period

    def _state(self, X):
        kernel = check_choice(self.kernel, "kernel",
                              ("chi2", "js", "intersection", "hellinger"))
        order = check_scalar(self.order, "order", kind="int", low=0,
                             high=(_MAX_TERMS - 1) // 2)
        if kernel == "hellinger":
            return {"period_": None, "_n_terms": 1, "_params": np.ones((1, 1)),
                    "_scale": 0.0, "_kind": "sqrt", "_width": None}
        period = (_PERIODS[kernel](max(order, 1)) if self.period is None
                  else self.period)
        period = check_scalar(period, "period", low=0.0, low_inclusive=False)
        step = 2 * math.pi / period
        if not step <= _MAX_STEP:
            raise ValueError(
                f"period must be >= {2 * math.pi / _MAX_STEP:.3g} (the "
                f"features grow as the square root of 2 pi / period and "
                f"would overflow), got {period!r}"
            )
        j = np.arange(order + 1)
        with np.errstate(over="ignore", under="ignore"):  # sech(large) = 0
            coef = np.sqrt(np.where(j == 0, 1.0, 2.0) * step
                           * _SPECTRA[kernel](j * step))
        return {"period_": period, "_n_terms": 2 * order + 1,
                "_params": coef[None, :], "_scale": step, "_width": None}

    def _array_expand(self, library, X):
        state = self._expansion(X.shape[1])
        if state["_kind"] == "sqrt":
            return _array_maps.square_root(library, X)
        return _array_maps.homogeneous(library, X, state["_params"][0],
                                       state["_scale"])
