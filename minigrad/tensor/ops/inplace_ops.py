"""The in-place ops: ``add_``, ``sub_``, ``mul_``, ``div_``, ``x[key] = v``, and ``fill_``/``zero_``/``copy_``.

They follow :mod:`.inplace`'s rules: unrecorded, the value is written into
memory and the version bumped; recorded, the write becomes a ``SetItem`` node
whose input is the tensor's old value.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.backend import transfer
from minigrad.tensor.dtypes import is_floating_point
from minigrad.tensor.errors import DTypeError
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.inplace import _alias, _bump, _check_can_record, _rebase, _recording, binary_
from minigrad.tensor.ops.inplace_writes import operand_data, write_error
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.ops.elementwise import Add, Div, Mul, Sub, _as_operand
from minigrad.tensor.ops.index import SetItem, normalize_key
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = ["add_", "sub_", "mul_", "div_", "setitem_", "fill_", "copy_"]


def setitem_(t: Tensor, key, value) -> None:
    """``t[key] = value``: writes into t's memory; recorded by autograd when needed."""
    nkey, kind = normalize_key(t, key, "setitem")
    if _recording(t, value):
        _check_can_record(t, "setitem")
        if not isinstance(value, Tensor):
            value = _as_operand(value, t, "setitem")
        if isinstance(value, Tensor) and value._data.dtype != t._data.dtype:
            value = cast(value, t._data.dtype)
        _rebase(t, SetItem.apply(_alias(t), value, nkey, kind), "setitem")
        return
    data = operand_data(t, value, "setitem")
    try:
        t._data[nkey] = data
    except IndexError as exc:
        raise IndexError(f"setitem: {exc}; tensor of shape {t.shape}") from None
    except (TypeError, ValueError) as exc:
        raise write_error(t, value, "setitem", exc) from None
    _bump(t)


def fill_(t: Tensor, value) -> Tensor:
    """Set every element to ``value`` (``zero_()`` is ``fill_(0)``)."""
    setitem_(t, Ellipsis, value)
    return t


def copy_(t: Tensor, src) -> Tensor:
    """Copy ``src``'s values into ``t`` (broadcasting, converting dtype, and moving across devices)."""
    if isinstance(src, Tensor) and src._device is not t._device:
        src = make_tensor(transfer(src._data, src._device, t._device), t._device) if not src._requires_grad else src.to(t._device)
    setitem_(t, Ellipsis, src)
    return t


def add_(t: Tensor, other, alpha=1) -> Tensor:
    """``t += alpha * other`` in place (``alpha`` as in PyTorch's ``add_``, which optimizers use)."""
    return binary_(t, other, Add, np.add, "add_", alpha)


def sub_(t: Tensor, other, alpha=1) -> Tensor:
    """``t -= alpha * other`` in place."""
    return binary_(t, other, Sub, np.subtract, "sub_", alpha)


def mul_(t: Tensor, other) -> Tensor:
    return binary_(t, other, Mul, np.multiply, "mul_")


def div_(t: Tensor, other) -> Tensor:
    if not is_floating_point(t._data.dtype):
        raise DTypeError(f"div_: true division of the {t.dtype} tensor cannot be stored in place; use x = x / y")
    return binary_(t, other, Div, np.true_divide, "div_")


# what the Tensor's methods call (see op_table.py)
register(add_, copy_, div_, fill_, mul_, setitem_, sub_)
