"""Speed path: float16 <-> float32 conversions of NumPy arrays by integer arithmetic on the bits.

NumPy converts float16 element by element in scalar C (about 2.5 ns per
number up, 4.5 ns down, here), slower than the float32 work they surround;
these do the same conversions with a few whole-array integer operations.
Both are exact: :func:`widen` is ``a.astype(float32)`` and :func:`narrow`
``a.astype(float16)`` (round to nearest, ties to even; past 65520 inf, NaN
stays NaN, float16 subnormals and signed zeros kept), bit for bit
(``tests/tensor/test_float16_casts.py`` checks every float16 and the float32
numbers around every rounding boundary). Non-NumPy arrays are left to ``astype``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["widen", "narrow", "astype"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_TWO_112 = np.float32(2.0**112)
_DENORM_MAGIC = np.uint32(((127 - 15) + (23 - 10) + 1) << 23)  # 0.5 in the units of float16's smallest subnormal
_DENORM_MAGIC_F = _DENORM_MAGIC.reshape(1).view(np.float32)[0]


def widen(a: np.ndarray) -> np.ndarray:
    """``a.astype(float32)`` for a contiguous float16 array, exactly."""
    bits = a.view(np.uint16).astype(np.uint32)
    sign = bits & np.uint32(0x8000)
    sign <<= 16
    bits &= np.uint32(0x7FFF)
    special = bits.size and bits.max() >= 0x7C00  # inf or NaN somewhere
    bits <<= 13
    out = bits.view(np.float32)
    out *= _TWO_112  # rebias the exponent; float16 subnormals become float32 normals exactly
    if special:  # inf and NaN: all exponent bits set, the payload kept
        np.bitwise_or(bits >> 0, np.uint32(0x7F800000), out=bits, where=bits >= np.uint32(0x47800000))
    bits |= sign
    return out


def narrow(a: np.ndarray) -> np.ndarray:
    """``a.astype(float16)`` for a float32 array, exactly (round to nearest even)."""
    u = np.ascontiguousarray(a).view(np.uint32)
    f = u & np.uint32(0x7FFFFFFF)
    o = (f >> 13) & np.uint32(1)  # round half to even: add 0xfff plus the lowest kept bit
    o += f
    o += np.uint32((((15 - 127) << 23) + 0xFFF) % 2**32)  # the exponent rebiased (wrapping) and the rounding bias
    o >>= 13
    low, high = (f.min(), f.max()) if f.size else (0, 0)
    if low < 113 << 23:  # a float16 subnormal or zero somewhere: a float addition rounds those
        with np.errstate(invalid="ignore"):  # NaN inputs: replaced below
            tiny = f.view(np.float32) + _DENORM_MAGIC_F
        tiny = tiny.view(np.uint32)
        tiny -= _DENORM_MAGIC
        _select(o, tiny, f < np.uint32(113 << 23))
    if high >= (127 + 16) << 23:  # 65536 and up, inf, NaN
        _select(o, np.where(f > np.uint32(0x7F800000), np.uint32(0x7E00), np.uint32(0x7C00)),
                f >= np.uint32((127 + 16) << 23))
    out = o.astype(np.uint16)
    out |= (u >> 16).astype(np.uint16) & np.uint16(0x8000)
    return out.view(np.float16).reshape(a.shape)


def _select(into: np.ndarray, values: np.ndarray, mask: np.ndarray) -> None:
    """``into[mask] = values[mask]`` for uint32 arrays, without branches (a random mask costs NumPy's ``where``
    a mispredicted branch per element)."""
    m = mask.view(np.uint8).astype(np.uint32)
    np.negative(m, out=m)  # all ones where the mask holds
    values = values ^ into
    values &= m
    into ^= values


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
