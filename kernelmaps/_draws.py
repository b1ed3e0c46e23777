"""Random draws of the Fourier feature maps, recorded so that a map can be
pickled as the recipe of its draw (`FourierDraw`) instead of its arrays."""

import math
import zlib

import numpy as np

__all__ = ["FourierDraw", "draw_fourier"]


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
