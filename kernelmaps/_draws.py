"""Random draws of the Fourier feature maps, recorded so that a map can be
pickled as the recipe of its draw (`FourierDraw`) instead of its arrays."""

import math
import zlib

import numpy as np

__all__ = ["FourierDraw", "draw_fourier", "fourier_state", "weight_norm"]


def draw_fourier(dim, n_components, kernel, gamma, rng):
    """Frequencies (dim, t) and phases (t,) for the shift-invariant kernel,
    and the `FourierDraw` that draws them again (None when the generator
    cannot be replayed)."""
    rng = np.random.default_rng(rng)
    state = rng.bit_generator.state
    weights, offsets = _draw(dim, n_components, kernel, gamma, rng)
    draw = None
    if hasattr(np.random, str(state.get("bit_generator"))):
        draw = FourierDraw((dim, n_components, kernel, gamma), state,
                           _checksum(weights, offsets))
    return weights, offsets, draw


def fourier_state(dim, n_components, kernel, gamma, rng, scale):
    """The fitted attributes of a random Fourier map: `draw_fourier`'s
    weights, offsets and draw, and ``_weight_norm`` (see `weight_norm`). A
    ValueError naming `scale` (the argument as the user gave it, e.g.
    ``"gamma=1e300"``) where the frequencies overflow float64."""
    with np.errstate(over="ignore", invalid="ignore"):  # checked below
        weights, offsets, draw = draw_fourier(dim, n_components, kernel, gamma,
                                              rng)
        norm = float(np.abs(weights).sum(axis=0).max())
    if not np.isfinite(weights).all():
        raise ValueError(
            f"{scale} is too large: the random frequencies overflow float64"
        )
    return {"weights": weights, "offsets": offsets, "_draw": draw,
            "_weight_norm": norm}


def weight_norm(fmap):
    """The largest L1 norm of a column of ``fmap.weights`` (bounds |x W|
    for `check_fourier_range`), stored at fit; computed for maps pickled by
    versions that did not store it."""
    norm = getattr(fmap, "_weight_norm", None)
    if norm is None:
        norm = float(np.abs(fmap.weights).sum(axis=0).max())
    return norm


def _draw(dim, n_components, kernel, gamma, rng):
    if kernel == "rbf":
        weights = rng.normal(scale=math.sqrt(2.0 * gamma), size=(dim, n_components))
    else:
        weights = gamma * rng.standard_cauchy(size=(dim, n_components))
    offsets = rng.uniform(0.0, 2.0 * math.pi, size=n_components)
    return weights, offsets


def _checksum(*arrays):
    crc = 0
    for a in arrays:
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8), crc)
    return crc


class FourierDraw:
    """The arguments and generator state that drew a map's frequencies and
    phases: what a map pickles instead of them."""

    __slots__ = ("args", "crc", "state")

    def __init__(self, args, state, crc):
        self.args, self.state, self.crc = args, state, crc

    def __getstate__(self):
        return (self.args, self.state, self.crc)

    def __setstate__(self, state):
        self.args, self.state, self.crc = state

    def replay(self):
        """The same frequencies and phases, drawn again."""
        bit_generator = getattr(np.random, self.state["bit_generator"])()
        bit_generator.state = self.state
        weights, offsets = _draw(*self.args, np.random.Generator(bit_generator))
        if _checksum(weights, offsets) != self.crc:
            raise RuntimeError(
                "the random features drawn again on unpickling differ from "
                "the pickled ones (a NumPy with another random stream?)"
            )
        return weights, offsets
