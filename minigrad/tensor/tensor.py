"""The Tensor: an n-dimensional array that can remember how it was computed.

A ``Tensor`` wraps one array of its device's backend (a NumPy ``ndarray`` on the
CPU) and adds what autograd needs:

- ``requires_grad``: whether gradients should flow to it;
- ``grad_fn``: the :class:`~minigrad.tensor.function.Function` node that made
  it (``None`` for leaves: tensors created by the user);
- ``grad``: after ``loss.backward()``, d(loss)/d(this tensor), for leaves;
- a *version counter* shared with every view of the same memory, bumped by
  each in-place op, so autograd can detect a saved tensor that was modified.

Shapes and strides behave as in PyTorch: ``strides`` are counted in elements,
views (``x.T``, ``x[1:]``, ``x.view(...)``, ``x.expand(...)``) share memory
with their base (see :func:`shares_memory`) and the same version counter.
The arithmetic and shape methods defined here are thin: each one calls an
op from the ``ops_*`` modules, which builds the graph.

Deviations from PyTorch, for teaching or simplicity: no higher-order gradients
(``create_graph``); Python numbers never change a tensor's dtype category
(see :mod:`~minigrad.tensor.dtypes`); 0-d tensors promote like any other tensor.
"""

from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

from minigrad.tensor import hooks
from minigrad.tensor.backend import Device, DeviceError, cpu, device as as_device, get_default_device, transfer
from minigrad.tensor.dtypes import as_dtype, bfloat16, canonical_dtype, default_float, int64, is_floating_point
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.strides import is_contiguous as _is_contiguous_layout

__all__ = ["Tensor", "VersionCounter", "shares_memory", "ReduceResult"]

ReduceResult = namedtuple("ReduceResult", "values indices")
ReduceResult.__doc__ = "What ``x.max(dim)`` / ``x.min(dim)`` return: the values and their indices (as ``torch.return_types.max``)."


def parse_to_args(args, device=None, dtype=None):
    """``(device, dtype)`` named by ``.to(...)``'s positional arguments: a tensor (both), a device or a dtype."""
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, Device)):
            device = arg
        else:
            dtype = arg
    return device, dtype


class VersionCounter:
    """How many in-place changes a block of memory has seen; shared by all views of it."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


_new = object.__new__


def init_tensor(t, data, device: Device, requires_grad: bool, grad_fn, version: VersionCounter, base):
    """Set every field of tensor ``t`` and return it: the one place a Tensor's fields are initialised.

    ``Tensor(...)``, :func:`make_tensor`, ``Function.apply`` (the ops' outputs)
    and unpickling all come through here, so a new field is added in one place.
    ``data`` is a backend array on ``device``; ``version`` is shared with every
    view of the same memory; ``base`` is the tensor whose memory a view reads
    (``None`` for a tensor that owns its memory). ``grad`` and the leaf's
    AccumulateGrad node start empty. Positional arguments only, no checks:
    ``Function.apply`` calls this for every op's output.
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


def make_tensor(data, device: Device, requires_grad: bool = False, grad_fn=None, version=None, tag=hooks.TENSOR):
    """Wrap an existing backend array without copying or checking it (the ops' fast path)."""
    if isinstance(data, np.generic):  # NumPy turns 0-d results into scalars; keep arrays
        data = np.asarray(data)
    t = init_tensor(_new(Tensor), data, device, requires_grad, grad_fn,
                    VersionCounter() if version is None else version, None)
    if hooks.observers:
        hooks.track(data, tag, device)
    return t


def _unwrap_nested(data):
    """Replace Tensors inside (nested) lists by their values so NumPy can read them."""
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


def _to_array(data, dtype=None) -> np.ndarray:
    """A fresh NumPy array of a supported dtype holding ``data`` (the rules of ``tensor()``)."""
    dtype = as_dtype(dtype)
    if isinstance(data, Tensor):
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


class Tensor:
    """An n-dimensional array with autograd. Make one with ``tensor(data)`` or the factories.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is the same as
    ``tensor(...)``: it copies ``data`` (lists, numbers, NumPy arrays, tensors).
    """

    __slots__ = (
        "_data", "_device", "_requires_grad", "_grad", "grad_fn", "_version_counter", "_accum", "_base",
        "__weakref__",
    )
    __array_ufunc__ = None  # ndarray (op) Tensor defers to Tensor's reflected operator
    __hash__ = object.__hash__  # tensors are dict keys by identity; == is elementwise

    def __init__(self, data, dtype=None, requires_grad: bool = False, device=None):
        arr = _to_array(data, dtype)
        dev = get_default_device() if device is None else as_device(device)
        if dev is not cpu:
            arr = transfer(arr, cpu, dev)
        init_tensor(self, arr, dev, False, None, VersionCounter(), None)
        if hooks.observers:
            hooks.track(arr, hooks.TENSOR, dev)
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------------ metadata

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    def size(self, dim: int | None = None):
        """The shape (PyTorch's ``x.size()``), or the size of one dimension."""
        return self._data.shape if dim is None else self._data.shape[self._dim(dim, "size")]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

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

    def stride(self, dim: int | None = None):
        """PyTorch's ``x.stride()`` / ``x.stride(dim)``."""
        return self.strides if dim is None else self.strides[self._dim(dim, "stride")]

    def storage_offset(self) -> int:
        """Where element ``(0, 0, ...)`` sits in the underlying buffer, in elements."""
        root = hooks._root(self._data)
        return (self.data_ptr() - _address(root)) // self._data.itemsize

    def data_ptr(self) -> int:
        """Address of the first element (for comparing views, as in PyTorch)."""
        return _address(self._data)

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def is_contiguous(self) -> bool:
        """True when the elements are stored row-major without gaps (see ``strides.is_contiguous``)."""
        return _is_contiguous_layout(self._data.shape, self.strides)

    def is_floating_point(self) -> bool:
        return is_floating_point(self._data.dtype)

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's memory has seen (PyTorch's ``x._version``)."""
        return self._version_counter.value

    def _dim(self, dim: int, op: str) -> int:
        ndim = self._data.ndim
        if not -max(ndim, 1) <= dim < max(ndim, 1):
            raise IndexError(
                f"{op}: dimension {dim} is out of range for a tensor of shape {self.shape} "
                f"(valid: {-max(ndim, 1)} to {max(ndim, 1) - 1})"
            )
        return dim % ndim if ndim else 0

    # ------------------------------------------------------------------ autograd state

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Ask autograd to track (or stop tracking) this leaf; returns self."""
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
        _autograd.backward(self, gradient, retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        """The same data (no copy, same version counter), cut from the graph: a leaf that does not require grad."""
        return make_tensor(self._data, self._device, False, None, self._version_counter)

    @property
    def data(self) -> "Tensor":
        """Like ``detach()`` but with its own version counter: in-place changes through it are not tracked."""
        return make_tensor(self._data, self._device)

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device
        self._accum = None  # its node recorded the old shape

    def _accumulate_grad_node(self):
        """The AccumulateGrad node of this leaf (made on first use, then kept)."""
        node = self._accum
        if node is None or node.output_shape != self._data.shape:
            node = self._accum = _function.AccumulateGrad(self)
        return node

    # ------------------------------------------------------------------ data access

    def _host(self) -> np.ndarray:
        return self._data if self._device is cpu else self._device.backend.to_numpy(self._data)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory with the tensor (CPU tensors that do not require grad).

        ``force=True`` (as in PyTorch) is ``x.detach().cpu().numpy()``: any tensor, copied to the host if needed.
        """
        if force:
            return self.detach().cpu().numpy()
        if self._requires_grad:
            raise RuntimeError(
                "numpy: can't call numpy() on a tensor that requires grad; use x.detach().numpy()"
            )
        if self._device is not cpu:
            raise DeviceError(f"numpy: the tensor is on {self._device}; copy it to the host first with x.cpu().numpy()")
        return self._data

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ShapeError(
                f"item: only one-element tensors can be converted to a Python number, this one has shape "
                f"{self.shape} ({self.numel()} elements); index it first (x[0]) or reduce it (x.sum())"
            )
        return self._host().item()

    def tolist(self):
        return self._host().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError(f"only integer tensors with one element can be used as an index, got {self.shape} {self.dtype}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                f"use (x == y).all() or .any() to reduce it, or x.numel() to test emptiness"
            )
        return bool(self.item())

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __contains__(self, value) -> bool:
        return bool((self == value).any())

    def __repr__(self) -> str:
        return _printing.format_tensor(self)

    # pickling and copy.deepcopy keep the data, requires_grad and grad; the graph is not saved
    def __getstate__(self) -> dict:
        return {"data": self._host(), "device": str(self._device), "requires_grad": self._requires_grad,
                "grad": self._grad}

    def __setstate__(self, state: dict) -> None:
        dev = as_device(state["device"])
        data = state["data"]
        init_tensor(self, data if dev is cpu else transfer(data, cpu, dev), dev, state["requires_grad"], None,
                    VersionCounter(), None)
        self._grad = state["grad"]
        if hooks.observers:
            hooks.track(self._data, hooks.TENSOR, dev)

    # ------------------------------------------------------------------ conversion

    def to(self, *args, dtype=None, device=None, copy: bool = False) -> "Tensor":
        """``x.to("cuda")``, ``x.to(float16)``, ``x.to("cpu", float64)``, ``x.to(other_tensor)``; differentiable."""
        device, dtype = parse_to_args(args, device, dtype)
        out = self
        if dtype is not None:
            out = _convert.cast(out, as_dtype(dtype))
        if device is not None:
            out = _convert.to_device(out, as_device(device))
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> "Tensor":
        return self.to(cpu)

    def float(self) -> "Tensor":
        return _convert.cast(self, np.dtype(np.float32))

    def double(self) -> "Tensor":
        return _convert.cast(self, np.dtype(np.float64))

    def half(self) -> "Tensor":
        return _convert.cast(self, np.dtype(np.float16))

    def bfloat16(self) -> "Tensor":
        return _convert.cast(self, bfloat16)

    def long(self) -> "Tensor":
        return _convert.cast(self, int64)

    def bool(self) -> "Tensor":
        return _convert.cast(self, np.dtype(np.bool_))

    def type(self, dtype=None):
        return str(self.dtype) if dtype is None else self.to(dtype)

    def clone(self) -> "Tensor":
        return _convert.clone(self)

    def contiguous(self) -> "Tensor":
        return self if self._data.flags.c_contiguous else _shape.contiguous(self)

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other):
        return _ew.add(self, other)

    def __radd__(self, other):
        return _ew.add(other, self)

    def __sub__(self, other):
        return _ew.sub(self, other)

    def __rsub__(self, other):
        return _ew.sub(other, self)

    def __mul__(self, other):
        return _ew.mul(self, other)

    def __rmul__(self, other):
        return _ew.mul(other, self)

    def __truediv__(self, other):
        return _ew.div(self, other)

    def __rtruediv__(self, other):
        return _ew.div(other, self)

    def __pow__(self, other):
        return _ew.pow(self, other)

    def __rpow__(self, other):
        return _ew.pow(other, self)

    def __neg__(self):
        return _ew.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ew.abs(self)

    def __matmul__(self, other):
        return _mm.matmul(self, other)

    def __rmatmul__(self, other):
        return _mm.matmul(other, self)

    def __eq__(self, other):
        return _ew.eq(self, other)

    def __ne__(self, other):
        return _ew.ne(self, other)

    def __lt__(self, other):
        return _ew.lt(self, other)

    def __le__(self, other):
        return _ew.le(self, other)

    def __gt__(self, other):
        return _ew.gt(self, other)

    def __ge__(self, other):
        return _ew.ge(self, other)

    def __invert__(self):
        return _ew.logical_not(self)

    def __and__(self, other):
        return _ew.logical_and(self, other)

    def __or__(self, other):
        return _ew.logical_or(self, other)

    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    matmul = __matmul__
    eq = __eq__
    ne = __ne__
    lt = __lt__
    le = __le__
    gt = __gt__
    ge = __ge__

    def pow(self, exponent):
        return _ew.pow(self, exponent)

    def neg(self):
        return _ew.neg(self)

    def exp(self):
        return _ew.exp(self)

    def log(self):
        return _ew.log(self)

    def sqrt(self):
        return _ew.sqrt(self)

    def tanh(self):
        return _ew.tanh(self)

    def sigmoid(self):
        return _ew.sigmoid(self)

    def relu(self):
        return _ew.relu(self)

    def leaky_relu(self, negative_slope: float = 0.01):
        return _ew.leaky_relu(self, negative_slope)

    def gelu(self, approximate: str = "none"):
        return _ew.gelu(self, approximate)

    def abs(self):
        return _ew.abs(self)

    def clamp(self, min=None, max=None):
        return _ew.clamp(self, min, max)

    clip = clamp

    def maximum(self, other):
        return _ew.maximum(self, other)

    def minimum(self, other):
        return _ew.minimum(self, other)

    def where(self, condition, other):
        """``x.where(cond, y)`` is ``where(cond, x, y)``, as in PyTorch."""
        return _ew.where(condition, self, other)

    # ------------------------------------------------------------------ reductions

    def sum(self, dim=None, keepdim: bool = False):
        return _red.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        return _red.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        return _red.max(self, dim, keepdim)

    def min(self, dim=None, keepdim: bool = False):
        return _red.min(self, dim, keepdim)

    def amax(self, dim=None, keepdim: bool = False):
        return _red.amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim: bool = False):
        return _red.amin(self, dim, keepdim)

    def var(self, dim=None, keepdim: bool = False, correction: int = 1):
        return _red.var(self, dim, keepdim, correction=correction)

    def std(self, dim=None, keepdim: bool = False, correction: int = 1):
        return _red.std(self, dim, keepdim, correction=correction)

    def argmax(self, dim=None, keepdim: bool = False):
        return _red.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim: bool = False):
        return _red.argmin(self, dim, keepdim)

    def all(self, dim=None, keepdim: bool = False):
        return _red.all(self, dim, keepdim)

    def any(self, dim=None, keepdim: bool = False):
        return _red.any(self, dim, keepdim)

    def softmax(self, dim: int):
        return _nn.softmax(self, dim)

    def log_softmax(self, dim: int):
        return _nn.log_softmax(self, dim)

    def logsumexp(self, dim, keepdim: bool = False):
        return _nn.logsumexp(self, dim, keepdim)

    # ------------------------------------------------------------------ shape and views

    def reshape(self, *shape):
        return _shape.reshape(self, *shape)

    def view(self, *shape):
        return _shape.view(self, *shape)

    def transpose(self, dim0: int, dim1: int):
        return _shape.transpose(self, dim0, dim1)

    def permute(self, *dims):
        return _shape.permute(self, *dims)

    @property
    def T(self):
        """All dimensions reversed (the matrix transpose for 2-D tensors)."""
        return _shape.permute(self, *range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self):
        """The transpose of the last two dimensions (a batch of matrices)."""
        return _shape.transpose(self, -2, -1)

    def expand(self, *sizes):
        return _shape.expand(self, *sizes)

    def expand_as(self, other):
        return _shape.expand(self, *other.shape)

    def squeeze(self, dim=None):
        return _shape.squeeze(self, dim)

    def unsqueeze(self, dim: int):
        return _shape.unsqueeze(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        return _shape.flatten(self, start_dim, end_dim)

    def split(self, split_size_or_sections, dim: int = 0):
        return _shape.split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0):
        return _shape.chunk(self, chunks, dim)

    def __getitem__(self, key):
        return _index.getitem(self, key)

    def __setitem__(self, key, value):
        _inplace.setitem_(self, key, value)

    # ------------------------------------------------------------------ in-place ops

    def add_(self, other, alpha=1):
        return _inplace.add_(self, other, alpha=alpha)

    def sub_(self, other, alpha=1):
        return _inplace.sub_(self, other, alpha=alpha)

    def mul_(self, other):
        return _inplace.mul_(self, other)

    def div_(self, other):
        return _inplace.div_(self, other)

    def zero_(self):
        return _inplace.fill_(self, 0)

    def fill_(self, value):
        return _inplace.fill_(self, value)

    def copy_(self, src):
        return _inplace.copy_(self, src)

    def __iadd__(self, other):
        return _inplace.add_(self, other)

    def __isub__(self, other):
        return _inplace.sub_(self, other)

    def __imul__(self, other):
        return _inplace.mul_(self, other)

    def __itruediv__(self, other):
        return _inplace.div_(self, other)


def _address(array) -> int:
    iface = getattr(array, "__array_interface__", None) or array.__cuda_array_interface__
    return iface["data"][0]


def shares_memory(a: Tensor, b: Tensor) -> bool:
    """True when ``a`` and ``b`` use some of the same memory (e.g. one is a view of the other)."""
    if a.device is not b.device:
        return False
    if a.device is cpu:
        return bool(np.shares_memory(a._data, b._data))
    xp = a.device.backend.xp
    if hasattr(xp, "shares_memory"):
        return bool(xp.shares_memory(a._data, b._data))
    return hooks._root(a._data) is hooks._root(b._data)


# The ops modules import Tensor from here, so they are imported after the class exists.
from minigrad.tensor import autograd as _autograd  # noqa: E402
from minigrad.tensor import printing as _printing  # noqa: E402
from minigrad.tensor import function as _function  # noqa: E402
from minigrad.tensor import inplace as _inplace  # noqa: E402
from minigrad.tensor import ops_convert as _convert  # noqa: E402
from minigrad.tensor import ops_elementwise as _ew  # noqa: E402
from minigrad.tensor import ops_index as _index  # noqa: E402
from minigrad.tensor import ops_matmul as _mm  # noqa: E402
from minigrad.tensor import ops_nn as _nn  # noqa: E402
from minigrad.tensor import ops_reduce as _red  # noqa: E402
from minigrad.tensor import ops_shape as _shape  # noqa: E402
