"""Element types and the rules for mixing them.

minigrad's dtypes *are* NumPy dtypes (``minigrad.tensor.float32 is
np.dtype("float32")``), so there is nothing to convert on the hot path.
Five are supported, as in a small PyTorch:

================  =========================================
``float32``       the default for floating point data
``float16``       half precision (mixed precision, chapter 09)
``float64``       double precision (gradient checks)
``int64``         the default for integers (labels, indices)
``bool``          masks and comparison results
================  =========================================

Promotion follows PyTorch, which differs from NumPy in two places:

- categories rank ``bool < int < float``; two tensors of the same category give
  the wider type, otherwise the higher category wins (``int64 + float16`` is
  ``float16``, not NumPy's ``float64``);
- a Python number never widens a tensor of its own category or above
  (``float16_tensor * 2.5`` stays ``float16``), and a float number with an
  integer tensor gives the default float type ``float32`` (NumPy: float64).

Other NumPy types are mapped on the way in (``uint8`` images become ``int64``,
``float128`` becomes ``float64``); complex numbers and strings are refused.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "float16", "float32", "float64", "int64", "bool_",
    "DTYPES", "default_float", "as_dtype", "promote_types", "result_type",
    "is_floating_point", "canonical_dtype",
]

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

DTYPES = (float16, float32, float64, int64, bool_)
default_float = float32

_NAMES = {
    "float16": float16, "half": float16,
    "float32": float32, "float": float32,
    "float64": float64, "double": float64,
    "int64": int64, "long": int64,
    "bool": bool_,
}
_CATEGORY = {bool_: 0, int64: 1, float16: 2, float32: 2, float64: 2}


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
            f"dtype {dt} is not supported; minigrad supports float16, float32, float64, int64 and bool"
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
        f"minigrad supports float16, float32, float64, int64 and bool"
    )


def is_floating_point(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """The dtype of ``x op y`` for tensors of dtypes ``a`` and ``b`` (PyTorch's rule)."""
    if a is b or a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    return a if a.itemsize >= b.itemsize else b


def result_type(dtype: np.dtype, scalar) -> np.dtype:
    """The dtype of ``tensor op number`` for a tensor of ``dtype`` and a Python number."""
    if isinstance(scalar, bool):
        return dtype
    if isinstance(scalar, int):
        return int64 if dtype is bool_ else dtype
    # a float
    return dtype if dtype.kind == "f" else default_float
