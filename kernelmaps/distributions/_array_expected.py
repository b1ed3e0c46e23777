"""The expected kernels between Gaussians and the level-2 kernels on arrays
of other libraries (`kernelmaps._array_api`): computed by that library on
the arrays' device, differentiably, by blocks of rows within the memory
budget."""


import numpy as np

from .. import _array_api
from .._engine.layout import power_of_two_exponent
from .._gamma import device_sample
from .._validation import (
    COVARIANCE_ATOL,
    COVARIANCE_RTOL,
    check_gaussian_shapes,
    gaussian_error,
)

__all__ = ["all_equal", "check_gaussians", "expected_kernel", "level2",
           "median_sample"]


def check_gaussians(library, means, covs, mname, cname):
    """`_validation.check_gaussians` of arrays of `library`, on their
    device: the same checks and messages, of the shapes, then of the
    values where they can be read (booleans copied, and the values an
    error names). ``(means, covs, given)``, float32 kept (other real
    dtypes float64), `given` the two as float arrays."""
    xp = library.xp
    m, c = (_array_api.as_float(library, a, name)
            for a, name in ((means, mname), (covs, cname)))
    check_gaussian_shapes(m.shape, c.shape, mname, cname)
    if not library.holds(xp.all(xp.isfinite(m)) & xp.all(xp.isfinite(c))):
        raise gaussian_error("finite", mname, cname)
    if c.ndim < 3:
        if not library.holds(xp.all(c >= 0)):
            raise gaussian_error("variances", mname, cname)
    elif library.readable(c):  # (in float64, as the NumPy path checks)
        c64 = xp.astype(c, xp.float64)
        cT = xp.matrix_transpose(c64)
        if not library.holds(xp.all(xp.abs(c64 - cT)
                                    <= COVARIANCE_ATOL + COVARIANCE_RTOL * xp.abs(cT))):
            raise gaussian_error("symmetric", mname, cname)
        low = xp.linalg.eigvalsh(c64)[:, 0]
        scale = xp.clip(xp.max(xp.abs(c64), axis=(1, 2)), min=1e-300)
        bad = low < -COVARIANCE_RTOL * scale
        if library.holds(xp.any(bad)):
            i = int(library.scalar(xp.argmax(xp.astype(bad, xp.int32))))
            raise gaussian_error("psd", mname, cname, i, library.scalar(low[i]))
    return m, c, (m, c)


def median_sample(means):
    """The rows of the `means` of another library that the median heuristic
    of `_gamma.resolve_gamma` samples (`_gamma.device_sample`), on the
    host as float64: the gamma of the NumPy path, without the other rows.
    Where the values cannot be read, `ArrayLibrary.to_numpy`'s ValueError
    ("give gamma")."""
    return device_sample(means).astype(np.float64)


def all_equal(library, means, covs):
    """`_specs._all_equal` of arrays of `library`, on their device (one
    boolean copied per array): whether the Gaussians of the arrays of
    `means` and `covs` are all the same (covariances of different forms
    compared as full matrices)."""
    xp = library.xp
    if len({c.ndim for c in covs}) > 1:
        covs = [_full(library, c, means[0].shape[1]) for c in covs]
    return all(a.shape[1:] == group[0].shape[1:]
               and library.holds(xp.all(a == group[0][:1, ...]))
               for group in (means, covs) for a in group)


def _full(library, c, d):
    """Covariances (n, d, d), (n, d) or (n,) as (n, d, d) matrices."""
    xp = library.xp
    if c.ndim == 3:
        return c
    eye = xp.eye(d, dtype=c.dtype, device=library.device)
    return (c[:, :, None] if c.ndim == 2 else c[:, None, None]) * eye


def expected_kernel(library, A, B, kernel, gamma, degree, coef0):
    """The expected kernel between the checked Gaussians A = (means,
    covs) and B (None: A, the result exactly symmetric) of `library` for
    the point kernel `kernel` at `gamma`, `degree`, `coef0`: what
    `gaussian_expected_kernel` computes, by the library on their device,
    differentiably (not finite where a value overflows)."""
    xp = library.xp
    (m1, c1), (m2, c2) = A, (A if B is None else B)
    if kernel == "linear":
        K = m1 @ xp.matrix_transpose(m2)
    elif kernel == "polynomial":
        K = _polynomial(library, m1, c1, m2, c2, gamma, degree, coef0)
    elif c1.ndim < 3 and c2.ndim < 3:
        K = _rbf_diagonal(library, m1, c1, m2, c2, gamma)
    else:
        K = _rbf_full(library, m1, c1, m2, c2, gamma)
    return K if B is not None else _array_api.symmetrised(library, K)


def _blocks(library, n, row_bytes, block):
    """``block(a, b)`` for the blocks of rows of `_array_api.row_blocks`,
    concatenated."""
    parts = [block(a, b) for a, b in _array_api.row_blocks(n, row_bytes, library)]
    return parts[0] if len(parts) == 1 else library.xp.concat(parts)


def _rbf_diagonal(library, m1, c1, m2, c2, gamma):
    """Diagonal covariances: ``exp(-sum log(t) / 2 - gamma sum dm^2 / t)``
    with ``t = 1 + 2 gamma (v + v')`` per coordinate."""
    xp = library.xp
    n, d = m1.shape
    v1, v2 = (c if c.ndim == 2 else xp.broadcast_to(c[:, None], (c.shape[0], d))
              for c in (c1, c2))

    def block(a, b):
        t = 1.0 + gamma * (v1[a:b, None, :] + v2[None, :, :]) * 2.0
        dm = m1[a:b, None, :] - m2[None, :, :]
        return xp.exp(-0.5 * xp.sum(xp.log(t), axis=-1)
                      - gamma * xp.sum(dm * dm / t, axis=-1))

    return _blocks(library, n, 4 * m2.shape[0] * d * 8, block)


def _rbf_full(library, m1, c1, m2, c2, gamma):
    """Full covariances: ``det(A)^(-1/2) exp(-gamma dm^T A^-1 dm)`` with
    ``A = I + 2 gamma (S_i + S'_j)``, each pair's A factorised (`slogdet`,
    `solve`); a ValueError where an A is not numerically positive
    definite (its values readable)."""
    xp = library.xp
    n, d = m1.shape
    F1, F2 = _full(library, c1, d), _full(library, c2, d)
    eye = xp.eye(d, dtype=m1.dtype, device=library.device)

    def block(a, b):
        A = eye + 2 * gamma * (F1[a:b, None, :, :] + F2[None, :, :, :])
        dm = m1[a:b, None, :] - m2[None, :, :]
        sign, logdet = xp.linalg.slogdet(A)
        if not library.holds(xp.all(sign > 0)):
            first = library.scalar(xp.argmax(xp.astype(
                xp.reshape(sign <= 0, (-1,)), xp.int32)))
            i, j = divmod(int(first), sign.shape[1])
            raise ValueError(
                f"I + 2 gamma (S_i + S'_j) is not numerically positive definite "
                f"for the pair ({a + i}, {j}): covariances too close to "
                f"indefinite for gamma={gamma:g}; make them safely positive "
                f"semi-definite or use a smaller gamma")
        q = xp.sum(dm * xp.linalg.solve(A, dm[..., None])[..., 0], axis=-1)
        return xp.exp(-0.5 * logdet - gamma * q)

    return _blocks(library, n, 6 * m2.shape[0] * d * (d + 1) * 8, block)


def _polynomial(library, m1, c1, m2, c2, gamma, degree, coef0):
    """The polynomial kernel of degree 2 or 3, from the moments of ``u =
    <x, y>`` (the formulas of `gaussian_expected_kernel`)."""
    xp = library.xp
    n, d = m1.shape
    m = m2.shape[0]
    F1, F2 = _full(library, c1, d), _full(library, c2, d)
    outer1 = m1[:, :, None] * m1[:, None, :]
    outer2 = m2[:, :, None] * m2[:, None, :]

    def flat(F):
        return xp.reshape(F, (F.shape[0], d * d))

    dot = m1 @ xp.matrix_transpose(m2)
    second = flat(F1 + outer1) @ xp.matrix_transpose(flat(F2 + outer2))
    # the powers of gamma and coef0 as NumPy's: inf where they overflow
    g, c = np.float64(gamma), np.float64(coef0)
    with np.errstate(over="ignore", invalid="ignore"):
        if degree == 2:
            return second * float(g**2) + dot * float(2 * g * c) + float(c**2)
        terms = [float(g**3), float(3 * g**2 * c), float(3 * g * c**2), float(c**3)]
    f1, f2 = flat(F1), flat(F2)
    # m1^T S2 S1 m2 = (S2 m1) . (S1 m2), by blocks of rows
    S2 = xp.reshape(F2, (m * d, d))

    def cross(a, b):
        left = xp.reshape(S2 @ xp.matrix_transpose(m1[a:b, :]), (m, d, b - a))
        right = xp.reshape(xp.reshape(F1[a:b, ...], ((b - a) * d, d))
                           @ xp.matrix_transpose(m2), (b - a, d, m))
        return xp.sum(xp.permute_dims(left, (2, 0, 1))
                      * xp.permute_dims(right, (0, 2, 1)), axis=-1)

    third = (dot**3 + 3 * dot * (flat(outer1) @ xp.matrix_transpose(f2)
                                 + f1 @ xp.matrix_transpose(flat(outer2))
                                 + f1 @ xp.matrix_transpose(f2))
             + 6 * _blocks(library, n, 3 * m * d * 8, cross))
    return third * terms[0] + second * terms[1] + dot * terms[2] + terms[3]


def level2(library, K, dx, dy, kind, gamma2, degree, coef0):
    """The level-2 kernel `kind` of `level2_kernel` from the checked inner
    products K (n, m) and squared norms dx (n,), dy (m,) of `library`, by
    the library on their device, differentiably (not finite where a
    polynomial value overflows)."""
    xp = library.xp
    if kind == "linear":
        return K * 1
    if kind == "polynomial":
        return (gamma2 * K + coef0) ** degree
    if kind == "nrbf":
        cosine = K / (xp.sqrt(dx)[:, None] * xp.sqrt(dy)[None, :])
        return xp.exp(-gamma2 * xp.clip(2.0 - 2.0 * cosine, min=0.0))
    # Beyond a quarter of the exponent range (2**1000 in float64), the
    # squared distances at a power-of-two scale (exact), so that
    # dx + dy - 2 K neither overflows nor gives inf - inf.
    tops = [library.scalar(xp.max(xp.abs(a))) for a in (K, dx, dy)]
    top = max((t for t in tops if t is not None), default=0.0)
    maxexp = 128 if K.dtype == xp.float32 else 1024
    e = power_of_two_exponent(top, -2) if top > 2.0 ** (maxexp - 24) else 0
    K, dx, dy = (_array_api.times_power_of_two(a, e) for a in (K, dx, dy))
    squares = xp.clip(dx[:, None] + dy[None, :] - 2 * K, min=0.0)
    return xp.exp(-_array_api.times_power_of_two(gamma2 * squares, -e))
