"""One tensor across the border: minigrad to PyTorch and back, as a copy through NumPy.

Invariants: the copy has the same shape, dtype and values (bit for bit) and
shares no memory with the original; a parameter keeps its
``requires_grad`` flag; gradients and graph history are not carried over.
Only CPU tensors cross (a model on a GPU is moved with ``.cpu()`` first, and
the result moved back with ``.to(device)`` on the other side), and only the
dtypes both libraries have.

bfloat16 needs one detour: minigrad's is ``ml_dtypes``' NumPy dtype, which
``torch.from_numpy`` does not know, so its 16-bit patterns travel as int16
and are reinterpreted on arrival (a view, no rounding).
"""

from __future__ import annotations

import numpy as np

from minigrad.nn import Parameter
from minigrad.tensor import Tensor, bfloat16

__all__ = ["check_minigrad_tensor", "minigrad_to_torch", "torch_to_minigrad", "DTYPES"]

DTYPES = ("float16", "bfloat16", "float32", "float64", "int64")  # what minigrad's layers hold


def _check_dtype(dtype_name: str, who: str, where: str) -> None:
    if dtype_name not in DTYPES:
        raise TypeError(f"{who}: {where} has dtype {dtype_name}, which does not convert; the dtypes that do: "
                        f"{', '.join(DTYPES)} (cast the model first, e.g. model.float())")


def check_minigrad_tensor(value: Tensor, who: str, where: str) -> None:
    """Raise a clear error unless minigrad tensor ``value`` can cross (on the CPU, a dtype both libraries have)."""
    if value.device.type != "cpu":
        raise ValueError(f"{who}: {where} is on device {value.device}, and only CPU models convert; "
                         f"move the model first: model.cpu() (then move the PyTorch model with .to(device))")
    _check_dtype(str(value.dtype), who, where)


def minigrad_to_torch(value: Tensor, torch, who: str, where: str):
    """A ``torch.Tensor`` copy of minigrad tensor ``value`` (a ``torch.nn.Parameter`` if it is a Parameter)."""
    check_minigrad_tensor(value, who, where)
    array = np.array(value.detach().numpy(), copy=True, order="C")
    if array.dtype == bfloat16:
        copy = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    else:
        copy = torch.from_numpy(array)
    if isinstance(value, Parameter):
        return torch.nn.Parameter(copy, requires_grad=value.requires_grad)
    return copy


def torch_to_minigrad(value, torch, who: str, where: str) -> Tensor:
    """A minigrad copy of ``torch.Tensor`` ``value`` (a :class:`Parameter` if it is a ``torch.nn.Parameter``)."""
    if value.device.type != "cpu":
        raise ValueError(f"{who}: {where} is on device {value.device}, and only CPU modules convert; "
                         f"move the module first: module.cpu() (then move the minigrad model with .to(device))")
    _check_dtype(str(value.dtype).removeprefix("torch."), who, where)
    detached = value.detach().contiguous()
    if detached.dtype == torch.bfloat16:
        array = detached.view(torch.int16).numpy().view(bfloat16)
    else:
        array = detached.numpy()
    copy = Tensor(array)  # Tensor(ndarray) copies
    if isinstance(value, torch.nn.Parameter):
        return Parameter(copy, requires_grad=value.requires_grad)
    return copy
