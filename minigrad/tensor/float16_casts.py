"""Speed path: float16 <-> float32 conversions of NumPy arrays by whole-array arithmetic on the bits.

NumPy converts float16 element by element in scalar C (about 2.5 ns per
number up, 4.5 ns down, here), slower than the float32 work they surround;
these do the same conversions with a dozen whole-array operations, the same
ones whatever the values (no pass over the array depends on how many numbers
are zero, float16 subnormals or out of range).
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
done afterwards on just those elements.
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


def widen(a: np.ndarray) -> np.ndarray:
    """``a.astype(float32)`` for a contiguous float16 array, exactly."""
    bits = a.view(np.int16).astype(np.int32)  # sign-extended: bits 16-31 repeat the sign
    bits <<= 13  # mantissa at bits 13-22, exponent at 23-27, the sign at 28 and up
    bits &= np.int32(-0x70000001)  # 0x8FFFFFFF: the sign stays at bit 31, bits 28-30 cleared
    out = bits.view(np.float32)
    out *= _TWO_112  # rebias the exponent; float16 subnormals become float32 normals exactly
    if out.size and (out.max() >= 65536 or out.min() <= -65536):  # inf or NaN somewhere (2**16 times 1.m by now)
        special = np.flatnonzero(np.abs(out) >= 65536)
        bits.reshape(-1)[special] |= _EXPONENT  # all exponent bits set, the payload kept
    return out


def narrow(a: np.ndarray) -> np.ndarray:
    """``a.astype(float16)`` for a float32 array, exactly (round to nearest even)."""
    u = np.ascontiguousarray(a).view(_U32)
    magnitude = u & _ABS
    too_big = magnitude.size and magnitude.max() >= _TOO_BIG
    bias = magnitude & _EXPONENT
    np.maximum(bias, _SMALLEST_NORMAL, out=bias)  # float16 subnormals are rounded at 2**-24, the subnormals' spacing
    bias += _U32(13 << 23)
    total = bias.view(np.float32)
    with np.errstate(all="ignore") if too_big else nullcontext():  # inf and NaN inputs: replaced below
        total += magnitude.view(np.float32)  # the rounding: 2**(e + 13) + |x|, last bit worth 2**(e - 10)
    bits = bias  # the sum's bits: exponent e + 140, mantissa m = the float16 significand (1024 + fraction)
    bits -= _U32(126 << 23)  # exponent e + 14, that of the float16 bits minus the significand's leading one
    out = magnitude
    np.right_shift(bits, 13, out=out)  # exponent to bits 10-14 (the mantissa is below bit 12)
    bits &= _U32(0xFFF)
    out += bits  # adds the leading one into the exponent (and a carry from rounding up)
    np.right_shift(u, 16, out=bits)
    bits &= _U32(0x8000)
    out |= bits
    half = out.astype(np.uint16)
    if too_big:
        _fix_too_big(half.reshape(-1), u.reshape(-1))
    return half.view(np.float16).reshape(a.shape)


def _fix_too_big(half: np.ndarray, u: np.ndarray) -> None:
    """The float16 bits of the numbers of 2**16 and up, inf and NaN (``u``: their float32 bits), written into ``half``."""
    where = np.flatnonzero((u & _ABS) >= _TOO_BIG)
    bits = u[where]
    sign = (bits >> 16) & _U32(0x8000)
    magnitude = bits & _ABS
    payload = np.maximum((magnitude & _U32(0x7FFFFF)) >> 13, _U32(1))  # a NaN stays a NaN
    half[where] = sign | _U32(0x7C00) | np.where(magnitude > _EXPONENT, payload, _U32(0))


def astype(a, dtype):
    """``a.astype(dtype)``, through :func:`widen` / :func:`narrow` for NumPy float16 <-> float32."""
    if type(a) is np.ndarray:
        if not a.flags.c_contiguous and a.flags.f_contiguous:  # a transposed matrix: convert its transpose
            return astype(a.T, dtype).T
        if a.dtype == _F16 and dtype == _F32:
            return widen(np.ascontiguousarray(a)).reshape(a.shape)
        if a.dtype == _F32 and dtype == _F16:
            return narrow(a)
    return a.astype(dtype)
