"""The shared power-of-two scaling of the engines (kernelmaps._engine.layout:
`scaled`, `pack_rows`, `pack_cols`) against NumPy's ldexp, at every exponent:
the product by 2**e is exact, rounded once to the output dtype."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from kernelmaps._engine.layout import (
    TILE_ROWS,
    max_abs,
    pack_cols,
    pack_rows,
    power_of_two_exponent,
    scaled,
    tile_cols,
)

# float32 at its largest, near its smallest normal and subnormal, and plain
# values (float32 numbers: the same in both dtypes); exponents inside and
# beyond the normal range of float32 and float64
VALUES = np.array([[3e38, -1e38, 1.5], [1e-39, -1e-45, 0.0], [2.0**-126, 7.0, -3.0]],
                  dtype=np.float32).astype(np.float64)
EXPONENTS = (-1100, -200, -150, -130, -127, -126, -1, 0, 1, 126, 127, 128, 150, 1000)


def exact(points, e, dtype):
    """points * 2**e rounded once to dtype: ldexp in float64 (exact for
    these values and exponents barring float64 subnormals), then cast."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(points.astype(np.float64), e).astype(dtype)


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaled_at_every_exponent(src, dtype):
    # float64 points into float32 beyond float32's normal exponents raised
    # NumPy's "No loop matching ... ldexp" (the sliced-Wasserstein tools on
    # float32 sets near 3e38 or subnormal)
    points = VALUES.astype(src)
    for e in EXPONENTS:
        if src == np.float64 and dtype == np.float64 and e < -1000:
            continue  # (float64 subnormals: not the reference's single rounding)
        with np.errstate(over="ignore", under="ignore"):
            out = scaled(points, e, dtype)
            rows = pack_rows(points, e, dtype)
            cols = pack_cols(points, e, dtype)
        want = exact(points, e, dtype)
        assert out.dtype == dtype
        assert_array_equal(out, want, err_msg=f"e={e}")
        assert_array_equal(rows[:len(points)], want, err_msg=f"e={e}")
        assert_array_equal(rows[len(points):], 0)
        assert rows.shape == (len(points) + TILE_ROWS, points.shape[1])
        assert_array_equal(cols[:, :len(points)], want.T, err_msg=f"e={e}")
        assert_array_equal(cols[:, len(points):], 0)
        assert cols.shape[1] == len(points) + tile_cols(dtype)


def test_scaled_in_place():
    # `out` the points themselves (float64 in place): the same values
    points = VALUES.copy()
    for e in (-200, 3, 1000):
        a = points.copy()
        with np.errstate(over="ignore", under="ignore"):
            b = scaled(a, e, np.float64, out=a)
            assert b is a
            assert_array_equal(a, np.ldexp(points, e))


def test_narrowing_rounds_the_exact_product_once():
    # float64 into float32 beyond float32's normal exponents: the product in
    # float64 (exact), rounded once; rounding the points first would give
    # 0 (2**-150 rounds to 0 in float32, a tie to even)
    for e in (150, 200):
        x = np.array([[2.0**-150, 3 * 2.0**-151, -(2.0**-149) * 1.25]])
        assert_array_equal(scaled(x, e, np.float32),
                           (x * 2.0**e).astype(np.float32))
        assert scaled(x, e, np.float32)[0, 0] == 2.0 ** (e - 150)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", [0, 60, 480, -3])
def test_power_of_two_exponent_takes_the_largest_value_into_its_binade(dtype, target):
    # the one exponent rule of every power-of-two scaling: 2**e max|a| in
    # [2**(target - 1), 2**target), exactly, from subnormal to the largest
    # finite value of the dtype; 0 for all-zero data
    info = np.finfo(dtype)
    for top in (info.smallest_subnormal, info.tiny, 1.0, 0.75, 3.0, 1e30,
                info.max):
        a = np.array([[0.5 * top, -top], [0.0, top / 3]], dtype=dtype)
        e = power_of_two_exponent(max_abs(a), target)
        scaled_top = np.abs(np.ldexp(a.astype(np.float64), e)).max()  # exact
        assert 2.0 ** (target - 1) <= scaled_top < 2.0**target, (top, e)
    assert power_of_two_exponent(max_abs(np.zeros((3, 2), dtype)), target) == 0
    assert power_of_two_exponent(max_abs(None, np.zeros(0)), target) == 0
