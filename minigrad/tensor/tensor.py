"""The Tensor: an n-dimensional array that can remember how it was computed.

A ``Tensor`` wraps one array of its device's backend (a NumPy ``ndarray`` on the
CPU) and adds what autograd needs:

- ``requires_grad``: whether gradients should flow to it;
- ``grad_fn``: the :class:`~minigrad.tensor.function.Function` node that made
  it (``None`` for leaves: tensors created by the user);
- ``grad``: after ``loss.backward()``, d(loss)/d(this tensor), for leaves;
- a *version counter* shared with every view of the same memory, bumped by
  each in-place op, so autograd can detect a saved tensor that was modified.

``strides`` are counted in elements, as in PyTorch; views (``x.T``, ``x[1:]``,
``x.view(...)``) share memory and the version counter with their base. The
operator and shape methods (``x + y``, ``x.sum()``, ``x.view(...)``) are
one-line calls into the ops, inherited from :mod:`.tensor_methods`.
No higher-order gradients (``create_graph``), unlike PyTorch.
"""

from __future__ import annotations

import weakref

import numpy as np

from minigrad.tensor import events
from minigrad.tensor.accumulate_grad import AccumulateGrad
from minigrad.tensor.backend import Device, cpu, device as as_device, get_default_device, transfer
from minigrad.tensor.dtypes import is_floating_point
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.from_data import to_array
from minigrad.tensor.op_table import ops
from minigrad.tensor.strides import is_contiguous as _is_contiguous_layout
from minigrad.tensor.tensor_methods import ReduceResult, TensorMethods, parse_to_args, shares_memory

__all__ = ["Tensor", "VersionCounter", "shares_memory", "ReduceResult", "parse_to_args"]


class VersionCounter:
    """How many in-place changes a block of memory has seen; shared by all views of it."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


_new = object.__new__


def init_tensor(t, data, device: Device, requires_grad: bool, grad_fn, version: VersionCounter, base):
    """Set every field of tensor ``t`` and return it: the one place a Tensor's fields are initialised.

    ``Tensor(...)``, :func:`make_tensor`, ``Function.apply`` and unpickling all
    come through here. ``version`` is shared with every view of the same memory;
    ``base`` is the tensor whose memory a view reads (``None`` if it owns its
    memory). No checks: ``Function.apply`` calls this for every op's output.
    """
    t._data = data
    t._device = device
    t._requires_grad = requires_grad
    t._grad = None
    t.grad_fn = grad_fn
    t._version_counter = version
    t._accum = None
    t._base = base
    return t


def make_tensor(data, device: Device, requires_grad: bool = False, grad_fn=None, version=None):
    """Wrap an existing backend array without copying or checking it (the ops' fast path); sends ``tensor_made``."""
    if isinstance(data, np.generic):  # NumPy turns 0-d results into scalars; keep arrays
        data = np.asarray(data)
    t = init_tensor(_new(Tensor), data, device, requires_grad, grad_fn,
                    VersionCounter() if version is None else version, None)
    for listener in events.tensor_made:
        listener(data, device)
    return t


class Tensor(TensorMethods):
    """An n-dimensional array with autograd. Make one with ``tensor(data)`` or the factories.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is the same as
    ``tensor(...)``: it copies ``data`` (lists, numbers, NumPy arrays, tensors).
    """

    __slots__ = (
        "_data", "_device", "_requires_grad", "_grad", "grad_fn", "_version_counter", "_accum", "_base",
        "__weakref__",
    )

    def __init__(self, data, dtype=None, requires_grad: bool = False, device=None):
        arr = to_array(data, dtype)
        dev = get_default_device() if device is None else as_device(device)
        if dev is not cpu:
            arr = transfer(arr, cpu, dev)
        init_tensor(self, arr, dev, False, None, VersionCounter(), None)
        for listener in events.tensor_made:
            listener(arr, dev)
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------------ shape, strides, dtype, device

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def strides(self) -> tuple[int, ...]:
        """Elements to skip in memory per step along each dimension (NumPy counts bytes; PyTorch and we count elements)."""
        item = self._data.itemsize
        return tuple(s // item for s in self._data.strides)

    def is_contiguous(self) -> bool:
        """True when the elements are stored row-major without gaps (see ``strides.is_contiguous``)."""
        return _is_contiguous_layout(self._data.shape, self.strides)

    def _host(self) -> np.ndarray:
        return self._data if self._device is cpu else self._device.backend.to_numpy(self._data)

    # ------------------------------------------------------------------ autograd state

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Ask autograd to record gradients for this leaf (or to stop); returns self."""
        if self.grad_fn is not None:
            raise RuntimeError(
                f"requires_grad_: can only change requires_grad of leaf tensors; this one was made by "
                f"{self.grad_fn.name}. Use y = x.detach() for a leaf copy of the graph value"
            )
        if requires_grad and not is_floating_point(self._data.dtype):
            raise DTypeError(
                f"requires_grad_: only floating point tensors can require gradients, this one is "
                f"{self.dtype} with shape {self.shape}; convert it first with .float()"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """Leaves are tensors not made by a recorded op: user-created ones, or any that do not require grad."""
        return self.grad_fn is None

    @property
    def grad(self) -> "Tensor | None":
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad must be a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape or value.dtype != self.dtype or value.device is not self.device:
                raise ShapeError(
                    f"grad: assigned gradient {value.shape} {value.dtype} on {value.device} does not match "
                    f"the tensor {self.shape} {self.dtype} on {self.device}"
                )
        self._grad = value

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward()`` (leaves always keep it)."""
        if self.grad_fn is not None:
            self.grad_fn._retain = weakref.ref(self)
        elif not self._requires_grad:
            raise RuntimeError("retain_grad: this tensor does not require grad, so it will never get one")

    def backward(self, gradient=None, retain_graph: bool = False) -> None:
        """Fill ``.grad`` of every leaf this tensor depends on (see :func:`minigrad.tensor.autograd.backward`)."""
        ops.backward(self, gradient, retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        """The same data (no copy, same version counter), cut from the graph: a leaf that does not require grad."""
        return make_tensor(self._data, self._device, False, None, self._version_counter)

    # pickling and copy.deepcopy keep the data, requires_grad and grad; the graph is not saved
    def __getstate__(self) -> dict:
        return {"data": self._host(), "device": str(self._device), "requires_grad": self._requires_grad,
                "grad": self._grad}

    def __setstate__(self, state: dict) -> None:
        dev = as_device(state["device"])
        data = state["data"]
        init_tensor(self, data if dev is cpu else transfer(data, cpu, dev), dev, state["requires_grad"],
                          None, VersionCounter(), None)
        self._grad = state["grad"]
        for listener in events.tensor_made:
            listener(self._data, dev)


    @property
    def data(self):
        """Like ``detach()`` but with its own version counter: in-place changes through it are not tracked."""
        return make_tensor(self._data, self._device)

    @data.setter
    def data(self, value) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device
        self._accum = None  # its node recorded the old shape

    def _accumulate_grad_node(self):
        """The AccumulateGrad node of this leaf (made on first use, then kept)."""
        node = self._accum
        if node is None or node.output_shape != self._data.shape:
            node = self._accum = AccumulateGrad(self)
        return node

