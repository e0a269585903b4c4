"""Python data to a backend array: the rules of ``tensor(data)``.

Nested lists (possibly holding tensors), numbers, NumPy arrays and tensors
become a fresh NumPy array of a supported dtype; Python floats become
float32 (``default_float``), as in PyTorch. Ragged lists and non-numeric data
raise errors that say what was wrong.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.dtypes import as_dtype, canonical_dtype, default_float
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.tensor_methods import TensorMethods

__all__ = ["to_array"]


def _unwrap_nested(data):
    """Replace Tensors inside (nested) lists by their values so NumPy can read them."""
    if isinstance(data, TensorMethods):
        return data._host()
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


def to_array(data, dtype=None) -> np.ndarray:
    """A fresh NumPy array of a supported dtype holding ``data`` (the rules of ``tensor()``)."""
    dtype = as_dtype(dtype)
    if isinstance(data, TensorMethods):
        arr = data._host()
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
    else:
        try:
            arr = np.array(_unwrap_nested(data))
        except ValueError as exc:
            raise ShapeError(
                f"tensor(): the nested lists are ragged ({exc}); every row must have the same length"
            ) from None
        if arr.dtype == object or arr.dtype.kind in "USV":
            raise DTypeError(
                f"tensor(): cannot make a tensor from {type(data).__name__} data "
                f"(NumPy reads it as {arr.dtype}); pass numbers, nested lists of numbers or arrays"
            )
        if dtype is None and arr.dtype.kind == "f":
            dtype = default_float  # Python floats become float32, as in PyTorch
    target = dtype if dtype is not None else canonical_dtype(arr.dtype)
    return np.array(arr, dtype=target, copy=True)
