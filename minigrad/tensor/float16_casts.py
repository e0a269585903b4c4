"""Speed path: float16 <-> float32 conversions of NumPy arrays by array arithmetic on the bits.

NumPy converts float16 element by element in scalar C (about 2.5 ns per
number up, 4.5 ns down, here), slower than the float32 work they surround;
these do the same conversions with a dozen array operations, the same ones
whatever the values (no pass depends on how many numbers are zero, float16
subnormals or out of range), on blocks of :data:`BLOCK` elements at a time.
Both are exact: :func:`widen` is ``a.astype(float32)`` and :func:`narrow`
``a.astype(float16)``, bit for bit: round to nearest, ties to even; 65520 and
up become inf; float16 subnormals and signed zeros kept; a NaN keeps its sign
and the top 10 bits of its payload (NumPy's rule: a payload that would vanish
becomes 1). ``tests/tensor/test_float16_casts.py`` checks every float16, the
float32 numbers around every rounding boundary, and NaN payloads.
Non-NumPy arrays are left to ``astype``.

How :func:`narrow` rounds: adding ``bias = 2**(e + 13)`` to ``|x|`` (``e``
the exponent of ``x``, raised to -14 for float16 subnormals) leaves a float32
whose last bit is worth float16's last bit at ``x``, so the float addition
itself rounds to nearest even; the float16 bits are then read off the sum's
exponent and mantissa. Only numbers of 65536 and up, inf and NaN need a fix,
done afterwards on just those elements, found in blocks where a maximum says
there are some.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

__all__ = ["widen", "narrow", "astype"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_U32 = np.uint32
_TWO_112 = np.float32(2.0**112)  # 2**(127 - 15): float32's exponent bias over float16's
_ABS = _U32(0x7FFFFFFF)
_EXPONENT = _U32(0x7F800000)
_SMALLEST_NORMAL = _U32(113 << 23)  # 2**-14, float16's smallest normal number
_TOO_BIG = _U32(143 << 23)  # 2**16: from here on, inf or NaN (65520 up to it round to inf by themselves)


#: elements converted at a time: each pass over a block (512 KiB of float32) finds it in the cache (here 2 MiB
#: per core), where whole arrays of a few MiB would go to memory and back once per pass
BLOCK = 1 << 17
#: arrays smaller than this are left to NumPy's ``astype`` by :func:`astype`
SMALL = 1 << 13


def widen(a: np.ndarray) -> np.ndarray:
    """``a.astype(float32)`` for a contiguous float16 array, exactly."""
    halves = a.view(np.int16).reshape(-1)
    out = np.empty(a.shape, np.float32)
    flat = out.reshape(-1)
    for start in range(0, halves.size, BLOCK):
        _widen_block(halves[start : start + BLOCK], flat[start : start + BLOCK].view(np.int32))
    return out


def _widen_block(halves: np.ndarray, bits: np.ndarray) -> None:
    np.copyto(bits, halves)  # sign-extended: bits 16-31 repeat the sign
    bits <<= 13  # mantissa at bits 13-22, exponent at 23-27, the sign at 28 and up
    bits &= np.int32(-0x70000001)  # 0x8FFFFFFF: the sign stays at bit 31, bits 28-30 cleared
    out = bits.view(np.float32)
    out *= _TWO_112  # rebias the exponent; float16 subnormals become float32 normals exactly
    if out.max() >= 65536 or out.min() <= -65536:  # inf or NaN somewhere (2**16 times 1.m by now)
        bits[np.abs(out) >= 65536] |= _EXPONENT  # all exponent bits set, the payload kept


def narrow(a: np.ndarray) -> np.ndarray:
    """``a.astype(float16)`` for a float32 array, exactly (round to nearest even)."""
    u = np.ascontiguousarray(a).view(_U32).reshape(-1)
    out = np.empty(a.shape, np.uint16)
    flat = out.reshape(-1)
    scratch = np.empty((2, min(u.size, BLOCK)), _U32)
    for start in range(0, u.size, BLOCK):
        block = u[start : start + BLOCK]
        _narrow_block(block, flat[start : start + BLOCK], *scratch[:, : block.size])
    return out.view(np.float16)


def _narrow_block(u: np.ndarray, out: np.ndarray, magnitude: np.ndarray, bias: np.ndarray) -> None:
    """``out`` (uint16) = the float16 bits of the float32 bits ``u``; ``magnitude``, ``bias``: scratch of ``u``'s size."""
    np.bitwise_and(u, _ABS, out=magnitude)
    too_big = magnitude.max() >= _TOO_BIG
    np.bitwise_and(magnitude, _EXPONENT, out=bias)
    np.maximum(bias, _SMALLEST_NORMAL, out=bias)  # float16 subnormals are rounded at 2**-24, the subnormals' spacing
    bias += _U32(13 << 23)
    total = bias.view(np.float32)
    with np.errstate(all="ignore") if too_big else nullcontext():  # inf and NaN inputs: replaced below
        total += magnitude.view(np.float32)  # the rounding: 2**(e + 13) + |x|, last bit worth 2**(e - 10)
    bits = bias  # the sum's bits: exponent e + 140, mantissa m = the float16 significand (1024 + fraction)
    bits -= _U32(126 << 23)  # exponent e + 14, that of the float16 bits minus the significand's leading one
    half = magnitude
    np.right_shift(bits, 13, out=half)  # exponent to bits 10-14 (the mantissa is below bit 12)
    bits &= _U32(0xFFF)
    half += bits  # adds the leading one into the exponent (and a carry from rounding up)
    np.right_shift(u, 16, out=bits)
    bits &= _U32(0x8000)
    half |= bits
    np.copyto(out, half, casting="unsafe")  # the low 16 bits
    if too_big:
        _fix_too_big(out, u)


def _fix_too_big(half: np.ndarray, u: np.ndarray) -> None:
    """The float16 bits of the numbers of 2**16 and up, inf and NaN (``u``: their float32 bits), written into ``half``."""
    where = np.flatnonzero((u & _ABS) >= _TOO_BIG)
    bits = u[where]
    sign = (bits >> 16) & _U32(0x8000)
    magnitude = bits & _ABS
    payload = np.maximum((magnitude & _U32(0x7FFFFF)) >> 13, _U32(1))  # a NaN stays a NaN
    half[where] = sign | _U32(0x7C00) | np.where(magnitude > _EXPONENT, payload, _U32(0))


def astype(a, dtype):
    """``a.astype(dtype)``, through :func:`widen` / :func:`narrow` for NumPy float16 <-> float32 arrays of
    :data:`SMALL` elements or more (below that NumPy's own loop is quicker than a dozen calls); numbers past
    float16's range become inf without a warning, as in PyTorch."""
    if type(a) is np.ndarray:
        if not a.flags.c_contiguous and a.flags.f_contiguous:  # a transposed matrix: convert its transpose
            return astype(a.T, dtype).T
        if a.dtype == _F16 and dtype == _F32 and a.size >= SMALL:
            return widen(np.ascontiguousarray(a)).reshape(a.shape)
        if a.dtype == _F32 and dtype == _F16:
            if a.size >= SMALL:
                return narrow(a)
            with np.errstate(over="ignore"):
                return a.astype(dtype)
    return a.astype(dtype)
