"""float32 -> float16 rounding done on the bits, and a float16 number taken apart: the format behind mixed precision.

A float32 number is 1 sign bit, 8 exponent bits (bias 127) and 23 fraction
bits; a float16 number 1, 5 (bias 15) and 10. Rounding one to the other
keeps the sign, re-biases the exponent and drops the 13 lowest fraction bits,
rounding to the nearest float16 number::

    float32_to_float16_bits(np.float32([1.0, 65504.0, 65520.0, 2.0**-24]))   # [0x3c00, 0x7bff, 0x7c00, 0x0001]

Invariants (IEEE 754 round to nearest, ties to even: what ``astype(np.float16)`` does)
- The sign bit is kept for every input, zeros, infinities and NaNs included.
- A value exactly halfway between two float16 numbers goes to the one whose
  last fraction bit is 0; a carry out of the fraction raises the exponent.
- Below 2**-14 (float16's smallest normal number) the result is subnormal:
  exponent field 0, the fraction counts multiples of 2**-24, rounded the same
  way; below 2**-25 everything rounds to a signed zero.
- From 65520 (halfway between 65504, the largest float16, and 2**16) up, and
  for infinities, the result is a signed infinity (0x7c00).
- A NaN stays a NaN: its fraction's top 10 bits are kept, and a fraction
  that would become 0 (an infinity) becomes 1.

:func:`float16_parts` names the fields of a float16 number (the chapter's
tables of the formats are made with it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["float32_to_float16_bits", "to_float16", "float16_parts"]

SIGN_32, EXPONENT_32, FRACTION_32 = 0x80000000, 0x7F800000, 0x007FFFFF
BIAS_32, BIAS_16 = 127, 15
DROPPED = 13  # fraction bits float32 has and float16 has not
INFINITY_16 = 0x7C00
MIN_NORMAL_EXPONENT = -14  # of float16: below 2**-14 its numbers are subnormal


def float32_to_float16_bits(x: np.ndarray) -> np.ndarray:
    """The float16 bit patterns (uint16, the shape of ``x``) of float32 ``x`` rounded to nearest, ties to even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    ### BEGIN SOLUTION 9.1 | work on the integer bits: keep the sign, re-bias the exponent, and round the significand (implicit 1 included) to 10 fraction bits, or fewer for a subnormal result, ties to the even neighbour; then the special cases: too large, infinity, NaN
    sign = (bits >> 16) & 0x8000
    exponent_field = (bits & EXPONENT_32) >> 23
    fraction = bits & FRACTION_32
    normal = exponent_field > 0
    significand = np.where(normal, fraction | 0x800000, fraction)  # 24 bits, the implicit 1 at bit 23
    exponent = np.where(normal, exponent_field.astype(np.int64) - BIAS_32, 1 - BIAS_32)
    # a subnormal result keeps fewer bits: one fewer for each power of two below 2**-14 (25 drops them all)
    shift = np.clip(DROPPED + np.maximum(MIN_NORMAL_EXPONENT - exponent, 0), DROPPED, 25).astype(np.uint32)
    kept = significand >> shift
    rest = significand & ((np.uint32(1) << shift) - np.uint32(1))
    half = np.uint32(1) << (shift - np.uint32(1))
    kept = kept + ((rest > half) | ((rest == half) & ((kept & 1) == 1)))
    # the implicit 1 sits at bit 10 of a normal ``kept``, so adding it bumps the exponent field by one more;
    # a carry out of the fraction moves on into the exponent, up to 0x7c00 (infinity)
    biased = np.maximum(exponent + BIAS_16 - 1, 0).astype(np.uint32)
    magnitude = np.where(exponent > BIAS_16, INFINITY_16, np.minimum((biased << 10) + kept, INFINITY_16))
    special = exponent_field == 0xFF
    nan_fraction = np.maximum(fraction >> DROPPED, 1)
    magnitude = np.where(special, np.where(fraction == 0, INFINITY_16, INFINITY_16 | nan_fraction), magnitude)
    return (sign | magnitude).astype(np.uint16)
    ### END SOLUTION


def to_float16(x: np.ndarray) -> np.ndarray:
    """float32 ``x`` rounded to float16 through :func:`float32_to_float16_bits` (equal to ``x.astype(np.float16)``)."""
    return float32_to_float16_bits(x).view(np.float16)


def float16_parts(value) -> dict:
    """The fields of ``value`` rounded to float16: bits, sign, exponent field, fraction, kind and the number itself."""
    bits = int(float32_to_float16_bits(np.float32([value]))[0])
    exponent, fraction = (bits >> 10) & 0x1F, bits & 0x3FF
    if exponent == 0x1F:
        kind = "nan" if fraction else "infinity"
    elif exponent == 0:
        kind = "subnormal" if fraction else "zero"
    else:
        kind = "normal"
    return {"bits": bits, "sign": bits >> 15, "exponent": exponent, "fraction": fraction, "kind": kind,
            "value": float(np.uint16(bits).view(np.float16))}
