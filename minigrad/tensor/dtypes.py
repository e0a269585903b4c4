"""Element types and the rules for mixing them.

minigrad's dtypes *are* NumPy dtypes (``minigrad.tensor.float32 is
np.dtype("float32")``), so there is nothing to convert on the hot path.
Six are supported, as in a small PyTorch:

================  =========================================
``float32``       the default for floating point data
``float16``       half precision (mixed precision, chapter 09)
``bfloat16``      "brain float": float32's range, 8 bits of precision
``float64``       double precision (gradient checks)
``int64``         the default for integers (labels, indices)
``bool``          masks and comparison results
================  =========================================

and two *storage-only* 8-bit floats from ``ml_dtypes`` (chapter 09's float8
experiment): ``float8_e4m3fn`` (4 exponent bits, 3 mantissa bits, no inf,
largest 448) and ``float8_e5m2`` (float16's range, 2 mantissa bits). A
tensor holds them and casts to and from them (rounding to nearest even);
to compute, cast to a wider float first: ops are not defined on them.

**bfloat16** is float32 with the last 16 bits of the mantissa cut off: the
same exponent range (no overflow where float32 has none, so no loss scaling),
but only 8 significant bits (about 2-3 decimal digits). NumPy has no bfloat16;
the ``ml_dtypes`` package registers one (``np.dtype(ml_dtypes.bfloat16)``), and
that NumPy dtype is ``minigrad.tensor.bfloat16``. Its ``dtype.kind`` is ``"V"``,
not ``"f"``: ask :func:`is_floating_point`, never ``dtype.kind == "f"``.

How ops compute on bfloat16 (decided per op class, as PyTorch's CPU kernels do):

- *arithmetic* ops (elementwise math, matmul, reductions, softmax, losses,
  conv, every :class:`~minigrad.tensor.function.Function` that computes new
  values) read bfloat16, compute in float32 and round their result to
  bfloat16 once: like hardware with float32 accumulation. NumPy's bfloat16
  arithmetic would round after every step (a thousand 0.1s summed in
  bfloat16 stall at 32: once the total reaches 32, adding 0.1 no longer
  changes it) and its promotion differs from ours
  (``bfloat16 @ bfloat16`` is float32 there, ``bfloat16 + int64`` float64),
  so it is never used: see :mod:`minigrad.tensor.bfloat16_compute`;
- *data movement* ops (reshape, views, indexing, cat, pad, copies, casts)
  work on the bfloat16 bits directly: they compute nothing;
- what arithmetic ops save for backward is stored as bfloat16 (the inputs
  themselves, the rounded output), and backward runs in float32 too, so
  gradients of bfloat16 tensors are bfloat16.

The rounding is to nearest, ties to even (as PyTorch and GPUs do). Only NumPy
knows this dtype: a GPU backend has to store bfloat16 its own way (CuPy has
no bfloat16 arrays), e.g. as the 16-bit patterns in ``uint16``, as
checkpoints do.

Promotion follows PyTorch, which differs from NumPy in three places:

- categories rank ``bool < int < float``; two tensors of the same category give
  the wider type, otherwise the higher category wins (``int64 + float16`` is
  ``float16``, not NumPy's ``float64``; ``int64 + bfloat16`` is ``bfloat16``);
- ``float16`` and ``bfloat16`` have the same width but neither holds the
  other (float16 has more precision, bfloat16 more range), so together they
  give ``float32``;
- a Python number never widens a tensor of its own category or above
  (``float16_tensor * 2.5`` stays ``float16``), and a float number with an
  integer tensor gives the default float type ``float32`` (NumPy: float64);
- a 0-d tensor ranks like a number against a tensor with dimensions: it
  decides the dtype only when its category is higher, so
  ``float16_vector * tensor(0.5)`` is ``float16``, a 0-d ``float64`` does not
  widen a ``float16`` vector, a 0-d ``float16`` with a ``bfloat16`` vector
  gives ``bfloat16``, and a 0-d ``float64`` with an ``int64`` vector gives
  ``float64`` (:func:`tensors_result_type`).

Other NumPy types are mapped on the way in (``uint8`` images become ``int64``,
``float128`` becomes ``float64``); complex numbers, strings and the other
``ml_dtypes`` types (the other float8 variants, int4, ...) are refused.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "float16", "bfloat16", "float32", "float64", "int64", "bool_", "float8_e4m3fn", "float8_e5m2",
    "DTYPES", "FLOAT8_DTYPES", "FLOATING_DTYPES", "default_float", "as_dtype", "promote_types", "tensors_result_type", "result_type",
    "is_floating_point", "canonical_dtype", "finfo",
]

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

DTYPES = (float16, bfloat16, float32, float64, int64, bool_)
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2)  # storage only
default_float = float32

_NAMES = {
    "float16": float16, "half": float16,
    "bfloat16": bfloat16,
    "float32": float32, "float": float32,
    "float64": float64, "double": float64,
    "int64": int64, "long": int64,
    "bool": bool_,
    "float8_e4m3fn": float8_e4m3fn, "float8_e5m2": float8_e5m2,
}
_CATEGORY = {bool_: 0, int64: 1, float16: 2, bfloat16: 2, float32: 2, float64: 2, float8_e4m3fn: 2, float8_e5m2: 2}
_SUPPORTED = "float16, bfloat16, float32, float64, int64 and bool (and float8_e4m3fn, float8_e5m2 for storage)"


def as_dtype(dtype) -> np.dtype:
    """Turn a user's dtype (``float32``, ``"float32"``, ``np.float32``, ``float``, ``bool``) into a supported one."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        try:
            return _NAMES[dtype]
        except KeyError:
            raise TypeError(
                f"unknown dtype {dtype!r}; minigrad supports {', '.join(_NAMES)}"
            ) from None
    if dtype is float:
        return float32
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype; use minigrad.tensor.float32, int64, ...") from None
    if dt not in _CATEGORY:
        raise TypeError(
            f"dtype {dt} is not supported; minigrad supports {_SUPPORTED}"
        )
    return dt


def canonical_dtype(np_dtype: np.dtype) -> np.dtype:
    """The supported dtype that NumPy data of ``np_dtype`` is stored as."""
    if np_dtype in _CATEGORY:
        return np_dtype
    if not np_dtype.isnative:  # big-endian data read from a file
        return canonical_dtype(np_dtype.newbyteorder("="))
    kind = np_dtype.kind
    if kind in "iu":
        return int64
    if kind == "f":
        return float64
    if kind == "b":
        return bool_
    raise TypeError(
        f"cannot make a tensor from NumPy data of dtype {np_dtype}; "
        f"minigrad supports {_SUPPORTED}"
    )


def is_floating_point(dtype: np.dtype) -> bool:
    """True for float16, bfloat16, float32, float64 and the float8s (``ml_dtypes`` types have ``kind`` "V", not "f")."""
    return dtype.kind == "f" or dtype is bfloat16 or dtype in FLOAT8_DTYPES


def promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """The dtype of ``x op y`` for tensors of dtypes ``a`` and ``b`` (PyTorch's rule)."""
    if a is b or a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    if a.itemsize == b.itemsize:  # float16 with bfloat16: neither holds the other
        return float32
    return a if a.itemsize > b.itemsize else b


def tensors_result_type(a: np.dtype, a_ndim: int, b: np.dtype, b_ndim: int) -> np.dtype:
    """The dtype of ``x op y`` for tensors of dtypes ``a``, ``b`` and ``a_ndim``, ``b_ndim`` dimensions (PyTorch's rule).

    Against a tensor with dimensions, a 0-d tensor's dtype counts only when
    its category (bool < int < float) is higher; otherwise :func:`promote_types`.
    """
    if (a_ndim == 0) == (b_ndim == 0):
        return promote_types(a, b)
    dimensioned, zero_d = (b, a) if a_ndim == 0 else (a, b)
    return zero_d if _CATEGORY[zero_d] > _CATEGORY[dimensioned] else dimensioned


def result_type(dtype: np.dtype, scalar) -> np.dtype:
    """The dtype of ``tensor op number`` for a tensor of ``dtype`` and a Python number."""
    if isinstance(scalar, bool):
        return dtype
    if isinstance(scalar, int):
        return int64 if dtype is bool_ else dtype
    # a float
    return dtype if is_floating_point(dtype) else default_float


def finfo(dtype):
    """Machine limits of a floating point dtype (``eps``, ``max``, ``tiny``, ``bits``...), as ``torch.finfo``.

    ``finfo(bfloat16).eps`` is 2**-7 = 0.0078125 (float16: 2**-10, float32: 2**-23).
    """
    dt = as_dtype(dtype)
    if not is_floating_point(dt):
        raise TypeError(f"finfo: {dt} is not a floating point dtype; use numpy.iinfo for integers")
    return ml_dtypes.finfo(dt)
