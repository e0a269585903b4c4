"""Writing into a tensor's memory when autograd does not record: the operand, and NumPy's refusals.

:func:`operand_data` gives the right-hand side as a number or an array on the
tensor's device; :func:`write_error` turns NumPy's refusal to write (an
expanded view, a dtype that cannot hold the result, a shape that does not
broadcast) into an error that names the op and says what to do instead.
"""

from __future__ import annotations

from minigrad.tensor.backend import DeviceError
from minigrad.tensor.errors import DTypeError, ShapeError, describe
from minigrad.tensor.ops.elementwise import _as_operand
from minigrad.tensor.tensor import Tensor

__all__ = ["operand_data", "write_error"]


def operand_data(t: Tensor, other, op: str):
    """``other`` as something NumPy can combine with ``t``'s data: a number or an array on t's device."""
    if isinstance(other, Tensor):
        if other._device is not t._device:
            raise DeviceError(
                f"{op}: the tensor is on {t.device} but the other operand is on {other.device}; "
                f"move it with .to('{t.device}')"
            )
        return other._data
    other = _as_operand(other, t, op)
    return other._data if isinstance(other, Tensor) else other


def write_error(t: Tensor, other, op: str, exc: Exception) -> Exception:
    if "read-only" in str(exc):
        return RuntimeError(
            f"{op}: cannot write into this tensor (shape {t.shape}, strides {t.strides}): it is an expanded "
            f"view in which several elements share one memory location. Use .contiguous() or .clone() first"
        )
    if isinstance(exc, TypeError):
        return DTypeError(
            f"{op}: the result cannot be stored in place in the {t.dtype} tensor (other operand: "
            f"{describe(other)}); use an out-of-place op (x = x + y) or convert the tensor first (.float())"
        )
    return ShapeError(
        f"{op}: an in-place op cannot change the tensor's shape {t.shape}; the other operand "
        f"{describe(other)} must broadcast to it ({exc})"
    )
