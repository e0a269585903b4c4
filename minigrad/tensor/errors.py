"""The errors the tensor core raises, and helpers that describe operands in messages.

Every message names the op, the operands' shapes/dtypes/devices and a fix,
because a bare NumPy traceback ("operands could not be broadcast together")
does not tell a learner which line of *their* code is wrong or what to do.
"""

from __future__ import annotations

__all__ = ["ShapeError", "DTypeError", "describe"]


class ShapeError(ValueError):
    """Operand shapes do not fit the op (broadcasting, matmul, reshape, indexing...)."""


class DTypeError(TypeError):
    """An operand has a dtype the op cannot work with."""


def describe(x) -> str:
    """``(3, 4) float32`` for a tensor (plus the device when it is not the CPU), ``2.5`` for a number."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return repr(x)
    text = f"{tuple(shape)} {x.dtype}"
    device = getattr(x, "device", None)
    if device is not None and str(device) != "cpu":
        text += f" on {device}"
    return text
