"""float32 -> float16 on the bits equals NumPy's astype(np.float16) bit for bit, NaN payloads of quiet NaNs included."""

import numpy as np
import pytest

from minigrad.amp.float16_bits import float16_parts, float32_to_float16_bits, to_float16


@pytest.mark.parametrize("exponent", range(98, 147, 3))
def test_every_float32_of_a_binade_rounds_as_numpy_does(exponent):
    bits = np.arange(exponent << 23, (exponent + 1) << 23, 37, dtype=np.uint32)
    for sign in (0, 0x80000000):
        x = (bits | np.uint32(sign)).view(np.float32)
        with np.errstate(over="ignore"):
            assert np.array_equal(float32_to_float16_bits(x), x.astype(np.float16).view(np.uint16))


def test_boundaries_nans_and_shapes():
    x = np.float32([0.0, -0.0, 65504, 65519.996, 65520, np.inf, -np.inf, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 1e-45])
    with np.errstate(over="ignore"):
        assert np.array_equal(float32_to_float16_bits(x), x.astype(np.float16).view(np.uint16))
    quiet = np.uint32([0x7FC00000, 0xFFC12345, 0x7FFFFFFF]).view(np.float32)
    assert np.array_equal(float32_to_float16_bits(quiet), quiet.astype(np.float16).view(np.uint16))
    assert float32_to_float16_bits(np.uint32([0x7F800001]).view(np.float32))[0] == 0x7C01  # a NaN, never inf
    assert float32_to_float16_bits(np.zeros((2, 3), np.float32)).shape == (2, 3)
    assert to_float16(np.float32(1.0)).dtype == np.float16


def test_float16_parts_names_the_fields():
    assert float16_parts(1.0) == {"bits": 0x3C00, "sign": 0, "exponent": 15, "fraction": 0, "kind": "normal", "value": 1.0}
    assert float16_parts(2.0**-24)["kind"] == "subnormal" and float16_parts(65520.0)["kind"] == "infinity"
    assert float16_parts(-0.0)["sign"] == 1 and float16_parts(float("nan"))["kind"] == "nan"
