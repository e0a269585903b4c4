"""Graded checks for chapter 09, exercise 9.1 (float32 -> float16 rounding on the bits): ``exercises/09_float16_bits.py``.

The learner's ``float32_to_float16_bits`` converts arrays of float32 values
chosen here, each check one family of hard cases: values float16 holds
exactly, ties halfway between two float16 numbers (and their neighbours one
float32 step away), subnormal results and their boundaries, overflow around
65504 and 65520, NaNs with payloads, signed zeros, and random bit patterns
over the whole range where the rounding is not trivial. Each answer must
equal, bit for bit, what NumPy's own ``astype(np.float16)`` gives here. A
signalling NaN (quiet bit clear) only has to stay a NaN with its sign:
hardware conversions set the quiet bit, NumPy's software one does not. The
failure names the smallest failing value and its bits.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

QUIET = 0x00400000


@probe
def convert(submission, state, bits):
    """(child) The learner's float16 bits of the float32 numbers whose bit patterns are ``bits``."""
    return submission.float32_to_float16_bits(np.asarray(bits, dtype=np.uint32).view(np.float32))


def _float16(bits: int) -> str:
    value = float(np.uint16(bits).view(np.float16))
    return f"{bits:#06x} ({value!r})"


def _describe(b: int) -> str:
    return f"x = {float(np.uint32(b).view(np.float32))!r} (float32 bits {b:#010x})"


def _size(b: int) -> float:
    """Smallest first: by magnitude, NaNs last, a value before its negative."""
    x = abs(float(np.uint32(b).view(np.float32)))
    return (np.inf if x != x else x, b >> 31)


def _check(learner, bits, why: str, shape=None) -> None:
    bits = np.asarray(bits, dtype=np.uint32)
    sent = bits.reshape(shape) if shape is not None else bits
    got = learner.probe("convert", sent)
    assert isinstance(got, np.ndarray), (
        f"float32_to_float16_bits returned {type(got).__name__}; return a NumPy array of uint16 bit patterns")
    assert got.dtype == np.uint16, f"float32_to_float16_bits returned an array of {got.dtype}; return uint16 bit patterns"
    assert got.shape == sent.shape, f"float32_to_float16_bits returned shape {got.shape} for an input of shape {sent.shape}"
    got = got.reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = bits.view(np.float32).astype(np.float16).view(np.uint16)
    index = {int(b): k for k, b in enumerate(bits)}

    def attempt(b: int) -> None:
        mine, theirs = int(got[index[b]]), int(expected[index[b]])
        if (b & 0x7F800000) == 0x7F800000 and b & 0x007FFFFF and not b & QUIET:  # a signalling NaN
            assert (mine & 0x7C00) == 0x7C00 and mine & 0x03FF and (mine >> 15) == (b >> 31), (
                f"returned {_float16(mine)}: a NaN must stay a NaN (exponent bits all 1, fraction not 0) with its sign")
            return
        assert mine == theirs, f"returned {_float16(mine)}, expected {_float16(theirs)}: {why}"

    first_failure(smallest_first({int(b) for b in bits}, _size), attempt, _describe)


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def _random_float16_bits(gen, count: int, finite=True) -> np.ndarray:
    h = gen.integers(0, 2**16, count, dtype=np.uint32).astype(np.uint16)
    if finite:
        h = h[(h & 0x7C00) != 0x7C00]
    return h


@exercise("9.1")
def test_numbers_float16_holds_come_back_exactly(learner, rng):
    gen = np_generator(rng)
    h = _random_float16_bits(gen, 400)
    values = np.concatenate([_bits([0.0, -0.0, 1.0, -2.0, 0.5, 1024.0, 65504.0, -65504.0, 2.0**-14, 2.0**-24]),
                             h.view(np.float16).astype(np.float32).view(np.uint32)])
    _check(learner, values, "a float32 number that float16 holds exactly keeps its value (and its sign, -0.0 included)")
    grid = h[:12].view(np.float16).astype(np.float32).view(np.uint32)
    _check(learner, grid, "the result has the shape of the input", shape=(3, 4))


@exercise("9.1")
def test_ties_go_to_the_even_neighbour(learner, rng):
    gen = np_generator(rng)
    normal = _random_float16_bits(gen, 300)
    normal = normal[(normal & 0x7C00) != 0]  # float32 holds a normal float16 number with 13 zero bits below it
    below = normal.view(np.float16).astype(np.float32).view(np.uint32)
    halfway = below + np.uint32(0x1000)  # exactly between a float16 number and the next one up
    values = np.concatenate([
        _bits([1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, -(1.0 + 2.0**-11), 2048.0 + 1.0, 2048.0 + 3.0, 2.0 - 2.0**-12]),
        halfway, halfway - 1, halfway + 1,
    ])
    _check(learner, values, "halfway between two float16 numbers the result is the one whose last fraction bit is 0 "
                            "(round half to even); one float32 step either side of halfway, the nearer one")


@exercise("9.1")
def test_subnormal_results_and_their_boundaries(learner, rng):
    gen = np_generator(rng)
    unit = 2.0**-24  # the smallest float16 subnormal
    fixed = [unit, -unit, unit / 2, -unit / 2, 3 * unit / 2, 5 * unit / 2, unit * 0.75, unit * 0.25, 2.0**-14,
             2.0**-14 - unit / 2, 2.0**-14 - unit, 1023 * unit, 1023.5 * unit, 2.0**-26, 1e-40, -1e-45, 2.0**-30]
    k = gen.integers(1, 1024, 60)
    ties = (k + 0.5) * unit
    spread = np.exp2(gen.uniform(-26, -14, 200))
    signs = np.where(gen.random(260) < 0.5, -1.0, 1.0)
    values = np.concatenate([_bits(fixed), _bits(np.concatenate([ties, spread]) * signs),
                             _bits(np.array(fixed, np.float32)) + 1, _bits(np.array(fixed, np.float32)) - 1])
    _check(learner, values, "below 2**-14 float16 is subnormal: the result counts multiples of 2**-24, rounded to "
                            "nearest with ties to even, and below 2**-25 it is a zero of the input's sign")


@exercise("9.1")
def test_overflow_gives_infinity(learner, rng):
    gen = np_generator(rng)
    fixed = [65504.0, 65519.0, 65519.996, 65520.0, 65536.0, 1e5, 3.4e38, np.inf, -np.inf, -65520.0, -65519.996,
             65488.0, 65496.0, 2.0**15 * 1.99951171875]
    big = np.exp2(gen.uniform(16, 127, 80)) * np.where(gen.random(80) < 0.5, -1.0, 1.0)
    values = np.concatenate([_bits(fixed), _bits(big)])
    _check(learner, values, "from 65520 up (halfway between 65504, the largest float16, and 2**16) the result is an "
                            "infinity of the input's sign; below it, 65504 or smaller")


@exercise("9.1")
def test_nan_stays_nan(learner, rng):
    gen = np_generator(rng)
    payload = gen.integers(0, 2**22, 40, dtype=np.uint32)
    quiet = np.uint32(0x7FC00000) | payload
    values = np.concatenate([
        np.array([0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00001, 0x7FC02000, 0x7FE00000, 0x7F802000,
                  0x7F800001, 0xFF800001, 0x7FBFFFFF], dtype=np.uint32),
        quiet, quiet | np.uint32(0x80000000),
    ])
    _check(learner, values, "a NaN stays a NaN of the same sign, keeping the top 10 bits of its fraction (a NaN is "
                            "never turned into an infinity or a number)")


@exercise("9.1")
def test_random_float32_values(learner, rng):
    gen = np_generator(rng)
    exponent = gen.integers(98, 147, 2000, dtype=np.uint32)  # 2**-29 .. 2**19: every regime of the rounding
    bits = (gen.integers(0, 2, 2000, dtype=np.uint32) << 31) | (exponent << 23) | gen.integers(0, 2**23, 2000, dtype=np.uint32)
    values = np.concatenate([bits, gen.integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32)])
    _check(learner, values, "the nearest float16 number, ties to even")
