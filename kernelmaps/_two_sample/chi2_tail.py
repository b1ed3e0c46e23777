"""The tail of a weighted sum of chi-squares, ``P(sum_j w_j chi2_1 > q)``
for positive weights w: the null distribution of the linear test of
`mmd_test` (a quadratic form in normal variables).

Exact up to a numerical integration, by the inversion of its moment
generating function along a vertical line through the saddle point (the
integral of Imhof (1961) moved off the imaginary axis): with the cumulant
generating function ``K(t) = -1/2 sum_j log(1 - 2 w_j t)``, finite for
``t < 1 / (2 max w)``,

    P(Q > q) = 1/(2 pi i) int_{c - i inf}^{c + i inf} exp(K(t) - t q) dt / t

for any ``0 < c < 1 / (2 max w)``, and ``1 +`` the same integral for any
``c < 0`` (the contour passes the pole at 0). With ``t = c + i y``,
``b_j = 2 w_j / (1 - 2 w_j c)`` and ``E = exp(K(c) - c q)``, it is
``(E / pi) J`` (``1 + (E / pi) J`` for c < 0), where

    J = int_0^inf (c cos theta(y) + y sin theta(y)) / ((c^2 + y^2) rho(y)) dy,
    theta(y) = 1/2 sum_j atan(b_j y) - q y,
    rho(y) = prod_j (1 + b_j^2 y^2)^(1/4)

(Imhof's integrand is the case c -> 0, whose 1/2 cancels against the
integral in the upper tail: an absolute error, useless below p ~ 1e-8).
With c at the saddle point (``K'(c) = q``), the integrand is not
oscillating where it is large (``theta'(0) = 0``) and ``J`` is of the
order of ``1 / c`` times its width: no cancellation, so the p-value is
relatively accurate at every size, down to float64's underflow (the
saddle-point approximation of Lugannani and Rice, Kuonen 1999, is the first
term of this integral's expansion; here the integral itself is computed).
Near the median (the saddle near the pole at 0) c is moved to ``-1 /
sqrt(K''(0))``, where the absolute accuracy of ``1 + (E / pi) J`` is the
relative one.

``J`` is computed by `scipy.integrate.quad`: on ``[0, 4 sd]`` (sd the
integrand's width ``1 / sqrt(K''(c))``), then up to the point ``T`` beyond
which a bound on the integrand's magnitude (`_tail_bound`) leaves at most
`TOLERANCE` of the first part; where that takes more than `CYCLES`
oscillations of ``exp(-i q y)`` (few weights, or one far above the others:
``rho`` grows slowly), the rest is a Fourier integral to infinity
(QUADPACK's QAWF, the integrand's slowly varying parts against ``cos(q y)``
and ``sin(q y)``). Against mpmath (40 digits) and closed forms (paired
weights, two weights) the relative error was below 1e-11 from p = 0.98 to
1e-260. Each evaluation costs O(len(w)) vectorised operations; a tail
takes 40 to 2,500 of them (its times: the asv benchmark
``two_sample.LinearTail``).
"""

import math

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.stats

# The relative accuracy asked of each integral, and the truncation's bound
# on what it leaves out, relative to the integral near the saddle point.
TOLERANCE = 1e-10
# The most oscillations of the integrand between 4 sd and the truncation
# point integrated by plain adaptive quadrature (beyond: QAWF, which costs
# about 1,000 evaluations whatever the length).
CYCLES = 50
# Below this q / max(w), P(Q <= q) <= P(chi2_1 <= q / max(w)) < 3e-17:
# the tail is 1.0 in float64.
_FLOOR = 1e-33


def weighted_chi2_sf(q, weights):
    """``P(sum_j w_j Z_j^2 > q)`` for independent standard normal Z_j and
    the positive `weights` (those <= 0 are left out), a float in [0, 1].

    Equal weights: the chi-square's tail (`scipy.stats.chi2.sf`); otherwise
    the inversion of the moment generating function through the saddle
    point (see the module's docstring), with a relative error below about
    1e-9 from p = 1 down to float64's underflow (1e-308); no weight: 1.0
    for q < 0, else 0.0.
    """
    w = np.asarray(weights, dtype=np.float64).ravel()
    w = w[w > 0]
    q = float(q)
    if w.size == 0:
        return 1.0 if q < 0 else 0.0
    top = w.max()
    x = q / top
    if math.isnan(x):
        return math.nan
    if not x > _FLOOR:  # (q <= 0 too)
        return 1.0
    if x > 4.0 * (0.5 * math.log(2.0) * w.size + 750.0):
        # Chernoff at t = 1/4: P <= exp(K(1/4) - x / 4) < 1e-325 (and inf)
        return 0.0
    w = np.sort(w / top)[::-1]  # the largest 1, descending
    w = w[w > 0]  # (those below 1e-308 of the largest: no effect)
    if w[-1] == 1.0:
        return float(scipy.stats.chi2.sf(x, w.size))
    c = _contour(x, w)
    s = 1.0 - 2.0 * w * c
    b = 2.0 * w / s
    log_e = -0.5 * math.fsum(np.log(s)) - c * x  # K(c) - c x
    J = _contour_integral(x, b, c)
    with np.errstate(under="ignore"):
        value = math.exp(log_e) * J / math.pi
    p = 1.0 + value if c < 0 else value
    return min(1.0, max(0.0, p))


def _contour(x, w):
    """The real part c of the contour for the tail at x of the weights w
    (the largest 1): the saddle point, ``K'(c) = sum w / (1 - 2 w c) = x``,
    where it is at least one standard deviation of the integrand's width
    from the pole at 0, else ``-1 / sqrt(K''(0))``. (Any c < 1/2 but 0
    gives the exact tail; this one keeps the integral free of
    cancellation.)"""
    mean = math.fsum(w)

    def slope(t):
        return float(np.sum(w / (1.0 - 2.0 * w * t))) - x

    if x > mean:  # K' >= 1 / (1 - 2t) > x at the upper end
        c = scipy.optimize.brentq(slope, 0.0, 0.5 - 0.25 / x, xtol=1e-300,
                                  rtol=1e-8)
    elif x < mean:  # K' < sum w x / (w n) <= x at the lower end
        c = scipy.optimize.brentq(slope, -w.size / x, 0.0, xtol=1e-300,
                                  rtol=1e-8)
    else:
        c = 0.0
    curvature = 2.0 * float(np.sum((w / (1.0 - 2.0 * w * c)) ** 2))
    if abs(c) * math.sqrt(curvature) < 1.0:
        c = -1.0 / math.sqrt(2.0 * float(w @ w))
    return c


def _contour_integral(x, b, c):
    """J of the module's docstring for the tail at x, ``b = 2 w / (1 - 2 w
    c)`` (descending), on the line Re t = c."""

    def phase_and_size(y):  # 1/2 sum atan(b y), 1 / ((c^2 + y^2) rho(y))
        by = b * y  # (rho from hypot(1, b y): no overflow of its square)
        return (0.5 * float(np.sum(np.arctan(by))),
                math.exp(-0.5 * float(np.sum(np.log(np.hypot(1.0, by)))))
                / (c * c + y * y))

    def integrand(y):
        a, size = phase_and_size(y)
        theta = a - x * y
        return size * (c * math.cos(theta) + y * math.sin(theta))

    known = {}

    def parts(y):  # the integrand = cos part cos(x y) + sin part sin(x y)
        if y not in known:  # (the two Fourier integrals share their points)
            a, size = phase_and_size(y)
            known[y] = (size * (c * math.cos(a) + y * math.sin(a)),
                        size * (c * math.sin(a) - y * math.cos(a)))
        return known[y]

    width = 1.0 / math.sqrt(0.5 * float(b @ b))  # 1 / sqrt(K''(c))
    near = 4.0 * width
    J = _quad(integrand, 0.0, near, epsabs=0.0, epsrel=TOLERANCE, limit=100)
    bound = TOLERANCE * max(abs(J), 1e-300)
    far = _truncation(b, near, bound, near + 2.0 * math.pi * CYCLES / x)
    if far <= near:
        return J
    if far < math.inf:
        cycles = x * (far - near) / (2.0 * math.pi)
        return J + _quad(integrand, near, far, epsabs=bound, epsrel=0.0,
                         limit=int(50 + 2 * cycles))
    for weight, index in (("cos", 0), ("sin", 1)):
        J += _quad(lambda y, i=index: parts(y)[i], near, math.inf,
                   weight=weight, wvar=x, epsabs=bound, limlst=100)
    return J


def _tail_bound(b, y):
    """The logarithm of a bound on ``int_y^inf |integrand|`` (b descending):
    the integrand is at most ``1 / (u rho(u))``, and for u >= y each factor
    ``(1 + b_j^2 u^2)^(1/4)`` of rho(u) is at least that at y, and for the
    k largest b at least ``(beta_j (1 + b_j^2 y^2))^(1/4) (u / y)^(1/2)``
    with ``beta_j = b_j^2 y^2 / (1 + b_j^2 y^2)``: so the integral is at
    most ``(2 / k) / (rho(y) prod_{j <= k} beta_j^(1/4))``, for every k."""
    by = b * y
    log_h = np.log(np.hypot(1.0, by))  # log (1 + (b y)^2)^(1/2)
    log_beta = 2.0 * (np.log(by) - log_h)
    k = np.arange(1, b.size + 1)
    return float(np.min(np.log(2.0 / k) - 0.5 * float(np.sum(log_h))
                        - 0.25 * np.cumsum(log_beta)))


def _truncation(b, near, bound, limit):
    """A point from `near` on beyond which the integral of the integrand's
    magnitude is at most `bound` (by `_tail_bound`, which decreases with
    y: doubled, then bisected to within 10 %); inf where it is beyond
    `limit`."""
    target = math.log(bound)
    if _tail_bound(b, near) <= target:
        return near
    low, high = near, 2.0 * near
    while _tail_bound(b, high) > target:
        if high > limit:
            return math.inf
        low, high = high, 2.0 * high
    while high > 1.1 * low:
        middle = math.sqrt(low * high)
        if _tail_bound(b, middle) > target:
            low = middle
        else:
            high = middle
    return high


def _quad(f, a, b, **options):
    """`scipy.integrate.quad`'s value, without its IntegrationWarning (the
    tolerances asked are far below what a p-value needs: a warning that
    one was missed would say nothing useful to the test's user)."""
    return scipy.integrate.quad(f, a, b, full_output=1, **options)[0]
