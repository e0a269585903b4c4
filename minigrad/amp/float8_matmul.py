"""An experiment: a per-tensor scaled float8 matmul with float32 accumulation, and its error beside float16/bfloat16.

float8 has so few bits that it needs a scale per tensor, not per loss:
``float8_e4m3fn`` (3 mantissa bits, largest 448) is the format for weights and
activations, ``float8_e5m2`` (2 mantissa bits, float16's range up to 57344)
the one for gradients. Each operand is multiplied by ``fmax / amax`` so that
its largest magnitude lands on the format's largest number, cast (round to
nearest even), multiplied in float32 (as float8 tensor cores accumulate) and
the product divided by both scales::

    C ~= (cast8(A * sa) @ cast8(B * sb)) / (sa * sb)      sa = fmax / amax(A), sb = fmax / amax(B)

Invariants
- :func:`scaled_cast` returns the float8 array and its scale; dividing the
  widened array by the scale gives back ``x`` to the format's precision
  (relative error at most 2**-4 for e4m3 and 2**-3 for e5m2 in the normal range).
- An all-zero operand gets scale 1 (nothing to map).
- :func:`relative_error` is ``||C - C_ref|| / ||C_ref||`` (Frobenius), with
  ``C_ref`` computed in float64.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from minigrad.tensor import Tensor, bfloat16, float8_e4m3fn, float8_e5m2, float16, float32

__all__ = ["scaled_cast", "float8_matmul", "reduced_matmul", "relative_error", "matmul_errors"]


def scaled_cast(x: np.ndarray, dtype) -> tuple[np.ndarray, float]:
    """``(cast(x * scale), scale)`` with ``scale = fmax / amax(x)`` so that ``amax`` maps to the format's largest number."""
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    scale = float(ml_dtypes.finfo(dtype).max) / amax if amax > 0 else 1.0
    return (x.astype(np.float32) * np.float32(scale)).astype(dtype), scale


def float8_matmul(a, b, dtype_a=float8_e4m3fn, dtype_b=None):
    """``a @ b`` through per-tensor scaled float8 operands, multiplied in float32 and unscaled (float32 result)."""
    a, b = _array(a), _array(b)
    qa, sa = scaled_cast(a, dtype_a)
    qb, sb = scaled_cast(b, dtype_a if dtype_b is None else dtype_b)
    return (qa.astype(np.float32) @ qb.astype(np.float32)) * np.float32(1.0 / (sa * sb))


def reduced_matmul(a, b, dtype):
    """``a @ b`` on operands rounded to ``dtype`` (float16, bfloat16 or float32), multiplied in float32."""
    a, b = _array(a), _array(b)
    return a.astype(dtype).astype(np.float32) @ b.astype(dtype).astype(np.float32)


def relative_error(c, reference) -> float:
    """``||c - reference|| / ||reference||`` in float64."""
    c, reference = np.asarray(c, np.float64), np.asarray(reference, np.float64)
    return float(np.linalg.norm(c - reference) / np.linalg.norm(reference))


def matmul_errors(a, b) -> dict[str, float]:
    """The relative error of ``a @ b`` in each format, against float64: float32, bfloat16, float16, e4m3 and e5m2."""
    a, b = _array(a), _array(b)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    errors = {str(d): relative_error(reduced_matmul(a, b, d), reference) for d in (float32, bfloat16, float16)}
    for d in (float8_e4m3fn, float8_e5m2):
        errors[str(d)] = relative_error(float8_matmul(a, b, d), reference)
    return errors


def _array(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)

