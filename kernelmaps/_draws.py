"""Random draws of the Fourier feature maps, recorded so that a map can be
pickled as the recipe of its draw (`FourierDraw`) instead of its arrays.

The frequencies of a shift-invariant kernel are drawn in one of three ways
(`DRAWS`): independently ("iid"), in blocks of orthogonal directions with
chi-distributed norms ("orthogonal", Yu et al., NIPS 2016), or as scrambled
Sobol points through the inverse CDF of the kernel's spectrum ("qmc", Avron
et al., JMLR 2016); and the features take one of two forms (`FORMS`): the
cosine and sine of each frequency ("sincos", Sutherland and Schneider, UAI
2015) or the cosine with a random phase ("offset"). Every form is written
as ``cos(x W + b)``, the engine's one fused kernel: a sine is the cosine
with the phase 3 pi / 2 (in [0, 2 pi), where the phases of the "offset"
form lie).
"""

import inspect
import math
import zlib

import numpy as np
import scipy.special
from scipy.stats import qmc

from ._validation import check_choice

__all__ = ["DIRECTION_DRAWS", "DRAWS", "FORMS", "DirectionDraw", "FourierDraw",
           "check_draw", "draw_directions", "draw_fourier", "fourier_state",
           "resolve_draw"]

DRAWS = ("iid", "orthogonal", "qmc")
FORMS = ("sincos", "offset")
# draw=None: "qmc" up to these point dimensions, above them "orthogonal"
# for the Gaussian kernel and "iid" for the Laplacian (whose spectrum, a
# product of Cauchy laws, is not rotation-invariant). Measured with the
# package's maps by studies/fourier_draws/study.py (300 points, t = 64 to
# 1024; a table in doc/user_guide/sets.rst): for "rbf" QMC has the least
# error at d <= 8 (its error falls about as t^-1 at d = 2), the
# orthogonal draw from d = 16 on (d = 12: mixed); for "laplacian" QMC beats
# iid at every t up to d = 64 (by 1 to 68 %), and from d = 128 on loses to
# it by up to 6 % at t <= 128.
QMC_MAX_DIM = {"rbf": 8, "laplacian": 64}
# The phase that turns the cosine into the sine: cos(u + 3 pi / 2) = sin(u).
_SINE_PHASE = 1.5 * math.pi
# Uniform QMC coordinates are kept this far from 0 and 1, where the inverse
# CDFs are infinite (scrambled Sobol points are multiples of 2^-30).
_QMC_EPS = 2.0**-32
# draw=None takes "orthogonal" (for "rbf", above QMC_MAX_DIM) only where
# it gains and costs little: at least dim / 4 frequencies (with fewer, the
# blocks are short and the error is 0.8 to 0.96 of iid's: measured at
# d = 64 to 256), and QRs of at most this many dim * m^2 in all (about 3 s:
# 0.74 s at 5000 x 1000 on one thread); "iid" otherwise, whose draw is
# linear in dim * t. Every unpickling draws again, so the cost recurs.
_ORTHOGONAL_MAX_WORK = 2e10
# SciPy 1.15 renamed the seed argument of the QMC engines `rng`.
_QMC_SEED = ("rng" if "rng" in inspect.signature(qmc.Sobol).parameters
             else "seed")


def check_draw(draw, form, kernel):
    """Validate `draw` (None or one of `DRAWS`) and `form` (one of `FORMS`)
    for `kernel` ("rbf" or "laplacian"): ValueErrors naming the argument.
    Returns them as str (draw may be None)."""
    if draw is not None:
        draw = check_choice(draw, "draw", DRAWS)
    form = check_choice(form, "form", FORMS)
    if draw == "orthogonal" and kernel != "rbf":
        raise ValueError(
            f"draw='orthogonal' needs a rotation-invariant spectrum: the "
            f"kernel 'rbf', not {kernel!r}; use draw='iid' or 'qmc'"
        )
    return draw, form


def resolve_draw(draw, kernel, dim, n_components, form):
    """The draw used for `draw` (None: the measured best for the `kernel`,
    the point dimension `dim` and the number of frequencies of
    `n_components` features of the `form`, see `QMC_MAX_DIM` and
    `_ORTHOGONAL_MAX_WORK`)."""
    if draw is not None:
        return draw
    if dim <= QMC_MAX_DIM[kernel]:
        return "qmc"
    n_freq = n_components - n_components // 2 if form == "sincos" else \
        n_components
    work = dim * n_freq * min(dim, n_freq)  # sum of dim * m^2 over blocks
    if kernel == "rbf" and 4 * n_freq >= dim and work <= _ORTHOGONAL_MAX_WORK:
        return "orthogonal"
    return "iid"


def draw_fourier(dim, n_components, kernel, gamma, rng, draw="iid",
                 form="offset"):
    """Frequencies (dim, t) and phases (t,) for the shift-invariant kernel,
    drawn by `draw` for the feature `form`, and the `FourierDraw` that draws
    them again (None when the generator cannot be replayed)."""
    (weights, offsets), record = FourierDraw.draw(
        (dim, n_components, kernel, gamma, draw, form), rng)
    return weights, offsets, record


def fourier_state(dim, n_components, kernel, gamma, rng, scale, draw="iid",
                  form="offset"):
    """The fitted attributes of a random Fourier map: `draw_fourier`'s
    weights, offsets and draw, and ``_weight_norm``, the largest L1 norm of
    a column of the weights (it bounds |x W| for `check_fourier_range`). A
    ValueError naming `scale` (the argument as the user gave it, e.g.
    ``"gamma=1e300"``) where the frequencies overflow float64."""
    with np.errstate(over="ignore", invalid="ignore"):  # checked below
        weights, offsets, record = draw_fourier(dim, n_components, kernel,
                                                gamma, rng, draw, form)
        norm = float(np.abs(weights).sum(axis=0).max())
    if not np.isfinite(weights).all():
        raise ValueError(
            f"{scale} is too large: the random frequencies overflow float64"
        )
    return {"weights_": weights, "offsets_": offsets, "_draw": record,
            "_weight_norm": norm}


def _draw(dim, n_components, kernel, gamma, draw="iid", form="offset", *, rng):
    """The columns of W and the phases b of ``cos(x W + b)``: for "sincos",
    t // 2 frequencies with phase 0 (the cosines), the same with phase
    3 pi / 2 (the sines), and for odd t one frequency with a uniform phase;
    for "offset", t frequencies with uniform phases. The defaults, and the
    order in which the generator is used for them, are those of the
    versions that knew only "iid" and "offset" (their `FourierDraw` args
    hold four values)."""
    n_pairs = n_components // 2 if form == "sincos" else 0
    n_freq = n_components - n_pairs  # frequencies drawn
    n_phased = n_freq - n_pairs  # of which, the last, with a random phase
    if draw == "qmc":
        # The phases are one more coordinate of the same points.
        u = _sobol(n_freq, dim + (n_phased > 0), rng)
        freq = _inverse_cdf(kernel, gamma, u[:, :dim].T)
        phases = 2.0 * math.pi * u[n_pairs:, dim:].ravel()
    else:
        if draw == "orthogonal":
            freq = math.sqrt(2.0 * gamma) * _orthogonal(dim, n_freq, rng)
        elif kernel == "rbf":
            freq = rng.normal(scale=math.sqrt(2.0 * gamma), size=(dim, n_freq))
        else:
            freq = gamma * rng.standard_cauchy(size=(dim, n_freq))
        phases = rng.uniform(0.0, 2.0 * math.pi, size=n_phased)
    if not n_pairs:
        return freq, phases
    weights = np.concatenate([freq[:, :n_pairs], freq], axis=1)
    offsets = np.concatenate([np.zeros(n_pairs), np.full(n_pairs, _SINE_PHASE),
                              phases])
    return weights, offsets


def _orthogonal(dim, n, rng):
    """(dim, n) columns each marginally N(0, I): blocks of at most `dim`
    orthonormal directions, uniform on the Stiefel manifold (the QR of a
    Gaussian (dim, m) block, signs fixed by R's diagonal), each scaled by
    an independent chi(dim) norm. Never a QR wider than the columns needed:
    for n < dim one (dim, n) QR."""
    out = np.empty((dim, n))
    for start in range(0, n, dim):
        m = min(dim, n - start)
        gaussian = rng.standard_normal((dim, m))
        q, r = np.linalg.qr(gaussian)
        q *= np.where(np.diagonal(r) < 0, -1.0, 1.0)
        q *= np.sqrt(rng.chisquare(dim, size=m))
        out[:, start:start + m] = q
    return out


def _sobol(n, dim, rng):
    """`n` scrambled Sobol points in [0, 1)^dim: the first n of the 2^m
    points of `random_base2` (m the smallest with 2^m >= n), which, unlike
    ``random(n)``, warns for no n. Each point is uniform on the cube, so
    the kernel estimate stays unbiased."""
    if dim > qmc.Sobol.MAXDIM:
        raise ValueError(
            f"draw='qmc' needs Sobol points of {dim} coordinates (the point "
            f"dimension, plus one for random phases), more than SciPy's "
            f"{qmc.Sobol.MAXDIM}; use draw='orthogonal' or 'iid'"
        )
    # The scrambling gets a generator of its own, seeded from `rng`: SciPy
    # may derive one from a generator's seed sequence, which a generator
    # restored from a state (`FourierDraw.replay`) does not share.
    seed = np.random.default_rng(int(rng.integers(2**63)))
    engine = qmc.Sobol(dim, scramble=True, **{_QMC_SEED: seed})
    return engine.random_base2(max(n - 1, 0).bit_length())[:n]


def _inverse_cdf(kernel, gamma, u):
    """Frequencies from uniforms `u`: the normal quantile times
    sqrt(2 gamma) ("rbf"), the Cauchy quantile times gamma ("laplacian")."""
    u = np.clip(u, _QMC_EPS, 1.0 - _QMC_EPS)
    if kernel == "rbf":
        return math.sqrt(2.0 * gamma) * scipy.special.ndtri(u)
    return gamma * np.tan(math.pi * (u - 0.5))


def _checksum(drawn):
    """The CRC-32 of the bytes of `drawn`, an array or a tuple of them."""
    crc = 0
    for a in drawn if isinstance(drawn, tuple) else (drawn,):
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8), crc)
    return crc


class _Recipe:
    """The arguments and generator state that drew some random arrays:
    what a map pickles instead of them. `replay` draws them again with
    `_draw_again` (``f(*args, rng=...)``) and checks them against the
    checksum `crc` of the first draw."""

    __slots__ = ("args", "crc", "state")
    # what the arrays are, in the error message of a replay that differs
    _what = ""

    def __init__(self, args, state, crc):
        self.args, self.state, self.crc = args, state, crc

    def __getstate__(self):
        return (self.args, self.state, self.crc)

    def __setstate__(self, state):
        self.args, self.state, self.crc = state

    @classmethod
    def draw(cls, args, rng):
        """What `_draw_again` draws from `args` with `rng` (anything
        `numpy.random.default_rng` takes), and its recipe (None when the
        generator cannot be replayed: not one of NumPy's)."""
        rng = np.random.default_rng(rng)
        state = rng.bit_generator.state
        drawn = cls._draw_again(*args, rng=rng)
        record = None
        if hasattr(np.random, str(state.get("bit_generator"))):
            record = cls(args, state, _checksum(drawn))
        return drawn, record

    def replay(self):
        """The same arrays, drawn again."""
        bit_generator = getattr(np.random, self.state["bit_generator"])()
        bit_generator.state = self.state
        drawn = type(self)._draw_again(*self.args,
                                       rng=np.random.Generator(bit_generator))
        if _checksum(drawn) != self.crc:
            raise RuntimeError(
                f"the {self._what} drawn again on unpickling differ from the "
                f"pickled ones (a NumPy with another random stream, or a "
                f"SciPy with another scrambling of its QMC points?)"
            )
        return drawn


class FourierDraw(_Recipe):
    """The arguments and generator state that drew a map's frequencies and
    phases: what a map pickles instead of them. `args` is (dim, t, kernel,
    gamma, draw, form); `replay` gives ``(weights, offsets)``."""

    __slots__ = ()
    _what = "random features"
    _draw_again = staticmethod(_draw)


# -- directions on the sphere (the sliced-Wasserstein projections) ----------

DIRECTION_DRAWS = ("iid", "orthogonal", "qmc")


def draw_directions(dim, n, draw, rng):
    """`n` unit directions in R^dim as rows (n, dim), each uniform on the
    sphere: normalised Gaussian vectors ("iid"), blocks of at most `dim`
    orthonormal ones ("orthogonal": uniform on the Stiefel manifold, the
    directions within a block orthogonal), or scrambled Sobol points
    through the normal quantile, normalised ("qmc"); and the
    `DirectionDraw` that draws them again (None when the generator cannot
    be replayed)."""
    return DirectionDraw.draw((int(dim), int(n), draw), rng)


def _directions(dim, n, draw, *, rng):
    if draw == "orthogonal":
        g = _orthogonal(dim, n, rng).T
    elif draw == "qmc":
        g = scipy.special.ndtri(np.clip(_sobol(n, dim, rng), _QMC_EPS,
                                        1.0 - _QMC_EPS))
    else:
        g = rng.standard_normal((n, dim))
    norms = np.sqrt(np.einsum("ij,ij->i", g, g))
    # (a Gaussian vector of norm 0 has probability 0; kept finite anyway)
    return g / np.where(norms > 0, norms, 1.0)[:, None]


class DirectionDraw(_Recipe):
    """The arguments (dim, n, draw) and generator state that drew a map's
    directions (`draw_directions`): what the map pickles instead of them;
    `replay` gives the directions."""

    __slots__ = ()
    _what = "directions"
    _draw_again = staticmethod(_directions)
