"""The Tensor's convenience methods: operators, reductions, shape calls, conversions, data access.

Each method is a one-line call into the op table (``x + y`` is
``ops.add(x, y)``, ``x.sum(1)`` is ``ops.sum(x, 1)``; see :mod:`.op_table`) or
a small accessor, as PyTorch spells them. :class:`~minigrad.tensor.tensor.Tensor`
inherits them from :class:`TensorMethods`, so ``Tensor.__add__`` and friends are
found by an IDE, while ``tensor.py`` keeps only the Tensor's state and the
autograd ideas. This module imports no op: the ops import ``Tensor`` and
register themselves in the table, so imports point one way.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from minigrad.tensor.backend import Device, DeviceError, cpu, device as as_device, root_array
from minigrad.tensor.dtypes import as_dtype, bfloat16, int64, is_floating_point
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.op_table import ops
from minigrad.tensor.printing import format_tensor

__all__ = ["TensorMethods", "ReduceResult", "parse_to_args", "shares_memory"]

ReduceResult = namedtuple("ReduceResult", "values indices")
ReduceResult.__doc__ = "What ``x.max(dim)`` / ``x.min(dim)`` return: the values and their indices (as ``torch.return_types.max``)."

def parse_to_args(args, device=None, dtype=None):
    """``(device, dtype)`` named by ``.to(...)``'s positional arguments: a tensor (both), a device or a dtype."""
    for arg in args:
        if isinstance(arg, TensorMethods):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, Device)):
            device = arg
        else:
            dtype = arg
    return device, dtype


class TensorMethods:
    """The methods :class:`~minigrad.tensor.tensor.Tensor` inherits; each calls an op or reads the state."""

    __slots__ = ()
    __array_ufunc__ = None  # ndarray (op) Tensor defers to Tensor's reflected operator

    # ------------------------------------------------------------------ metadata

    def size(self, dim: int | None = None):
        """The shape (PyTorch's ``x.size()``), or the size of one dimension."""
        return self._data.shape if dim is None else self._data.shape[self._dim(dim, "size")]

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def stride(self, dim: int | None = None):
        """PyTorch's ``x.stride()`` / ``x.stride(dim)``."""
        return self.strides if dim is None else self.strides[self._dim(dim, "stride")]

    def storage_offset(self) -> int:
        """Where element ``(0, 0, ...)`` sits in the underlying buffer, in elements."""
        root = root_array(self._data)
        return (self.data_ptr() - _address(root)) // self._data.itemsize

    def data_ptr(self) -> int:
        """Address of the first element (for comparing views, as in PyTorch)."""
        return _address(self._data)

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def _dim(self, dim: int, op: str) -> int:
        ndim = self._data.ndim
        if not -max(ndim, 1) <= dim < max(ndim, 1):
            raise IndexError(
                f"{op}: dimension {dim} is out of range for a tensor of shape {self.shape} "
                f"(valid: {-max(ndim, 1)} to {max(ndim, 1) - 1})"
            )
        return dim % ndim if ndim else 0

    def is_floating_point(self) -> bool:
        return is_floating_point(self._data.dtype)

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's memory has seen (PyTorch's ``x._version``)."""
        return self._version_counter.value

    # ------------------------------------------------------------------ data access

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
        return format_tensor(self)

    # ------------------------------------------------------------------ conversion

    def to(self, *args, dtype=None, device=None, copy: bool = False):
        """``x.to("cuda")``, ``x.to(float16)``, ``x.to("cpu", float64)``, ``x.to(other_tensor)``; differentiable."""
        device, dtype = parse_to_args(args, device, dtype)
        out = self
        if dtype is not None:
            out = ops.cast(out, as_dtype(dtype))
        if device is not None:
            out = ops.to_device(out, as_device(device))
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self):
        return self.to(cpu)

    def cuda(self, device=None):
        """``x.to("cuda")``, or ``"cuda:i"`` for ``device=i``; the "cuda" device comes with ``import minigrad.gpu``."""
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def float(self):
        return ops.cast(self, np.dtype(np.float32))

    def double(self):
        return ops.cast(self, np.dtype(np.float64))

    def half(self):
        return ops.cast(self, np.dtype(np.float16))

    def bfloat16(self):
        return ops.cast(self, bfloat16)

    def long(self):
        return ops.cast(self, int64)

    def bool(self):
        return ops.cast(self, np.dtype(np.bool_))

    def type(self, dtype=None):
        return str(self.dtype) if dtype is None else self.to(dtype)

    def clone(self):
        return ops.clone(self)

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other):
        return ops.add(self, other)

    def __radd__(self, other):
        return ops.add(other, self)

    def __sub__(self, other):
        return ops.sub(self, other)

    def __rsub__(self, other):
        return ops.sub(other, self)

    def __mul__(self, other):
        return ops.mul(self, other)

    def __rmul__(self, other):
        return ops.mul(other, self)

    def __truediv__(self, other):
        return ops.div(self, other)

    def __rtruediv__(self, other):
        return ops.div(other, self)

    def __pow__(self, other):
        return ops.pow(self, other)

    def __rpow__(self, other):
        return ops.pow(other, self)

    def __neg__(self):
        return ops.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ops.abs(self)

    def __matmul__(self, other):
        return ops.matmul(self, other)

    def __rmatmul__(self, other):
        return ops.matmul(other, self)

    def __eq__(self, other):
        return ops.eq(self, other)

    __hash__ = object.__hash__  # tensors are dict keys by identity; == is elementwise

    def __ne__(self, other):
        return ops.ne(self, other)

    def __lt__(self, other):
        return ops.lt(self, other)

    def __le__(self, other):
        return ops.le(self, other)

    def __gt__(self, other):
        return ops.gt(self, other)

    def __ge__(self, other):
        return ops.ge(self, other)

    def __invert__(self):
        return ops.logical_not(self)

    def __and__(self, other):
        return ops.logical_and(self, other)

    def __or__(self, other):
        return ops.logical_or(self, other)

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
        return ops.pow(self, exponent)

    def neg(self):
        return ops.neg(self)

    def exp(self):
        return ops.exp(self)

    def log(self):
        return ops.log(self)

    def sqrt(self):
        return ops.sqrt(self)

    def tanh(self):
        return ops.tanh(self)

    def sigmoid(self):
        return ops.sigmoid(self)

    def relu(self):
        return ops.relu(self)

    def leaky_relu(self, negative_slope: float = 0.01):
        return ops.leaky_relu(self, negative_slope)

    def gelu(self, approximate: str = "none"):
        return ops.gelu(self, approximate)

    def abs(self):
        return ops.abs(self)

    def clamp(self, min=None, max=None):
        return ops.clamp(self, min, max)

    clip = clamp

    def maximum(self, other):
        return ops.maximum(self, other)

    def minimum(self, other):
        return ops.minimum(self, other)

    def where(self, condition, other):
        """``x.where(cond, y)`` is ``where(cond, x, y)``, as in PyTorch."""
        return ops.where(condition, self, other)

    # ------------------------------------------------------------------ reductions

    def sum(self, dim=None, keepdim: bool = False):
        return ops.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        return ops.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        return ops.max(self, dim, keepdim)

    def min(self, dim=None, keepdim: bool = False):
        return ops.min(self, dim, keepdim)

    def amax(self, dim=None, keepdim: bool = False):
        return ops.amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim: bool = False):
        return ops.amin(self, dim, keepdim)

    def var(self, dim=None, keepdim: bool = False, correction: int = 1):
        return ops.var(self, dim, keepdim, correction=correction)

    def std(self, dim=None, keepdim: bool = False, correction: int = 1):
        return ops.std(self, dim, keepdim, correction=correction)

    def norm(self, p=2, dim=None, keepdim: bool = False):
        """The vector ``p``-norm over ``dim`` (``"fro"`` is 2), as ``torch.linalg.vector_norm``."""
        return ops.vector_norm(self, 2 if isinstance(p, str) and p == "fro" else p, dim, keepdim)

    def argmax(self, dim=None, keepdim: bool = False):
        return ops.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim: bool = False):
        return ops.argmin(self, dim, keepdim)

    def all(self, dim=None, keepdim: bool = False):
        return ops.all(self, dim, keepdim)

    def any(self, dim=None, keepdim: bool = False):
        return ops.any(self, dim, keepdim)

    def softmax(self, dim: int):
        return ops.softmax(self, dim)

    def log_softmax(self, dim: int):
        return ops.log_softmax(self, dim)

    def logsumexp(self, dim, keepdim: bool = False):
        return ops.logsumexp(self, dim, keepdim)

    # ------------------------------------------------------------------ shape and views

    def contiguous(self):
        return self if self._data.flags.c_contiguous else ops.contiguous(self)

    def reshape(self, *shape):
        return ops.reshape(self, *shape)

    def view(self, *shape):
        return ops.view(self, *shape)

    def transpose(self, dim0: int, dim1: int):
        return ops.transpose(self, dim0, dim1)

    def permute(self, *dims):
        return ops.permute(self, *dims)

    @property
    def T(self):
        """All dimensions reversed (the matrix transpose for 2-D tensors)."""
        return ops.permute(self, *range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self):
        """The transpose of the last two dimensions (a batch of matrices)."""
        return ops.transpose(self, -2, -1)

    def expand(self, *sizes):
        return ops.expand(self, *sizes)

    def expand_as(self, other):
        return ops.expand(self, *other.shape)

    def squeeze(self, dim=None):
        return ops.squeeze(self, dim)

    def unsqueeze(self, dim: int):
        return ops.unsqueeze(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        return ops.flatten(self, start_dim, end_dim)

    def split(self, split_size_or_sections, dim: int = 0):
        return ops.split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0):
        return ops.chunk(self, chunks, dim)

    def __getitem__(self, key):
        return ops.getitem(self, key)

    def __setitem__(self, key, value):
        ops.setitem_(self, key, value)

    # ------------------------------------------------------------------ in-place ops

    def add_(self, other, alpha=1):
        return ops.add_(self, other, alpha=alpha)

    def sub_(self, other, alpha=1):
        return ops.sub_(self, other, alpha=alpha)

    def mul_(self, other):
        return ops.mul_(self, other)

    def div_(self, other):
        return ops.div_(self, other)

    def zero_(self):
        return ops.fill_(self, 0)

    def fill_(self, value):
        return ops.fill_(self, value)

    def copy_(self, src):
        return ops.copy_(self, src)

    def __iadd__(self, other):
        return ops.add_(self, other)

    def __isub__(self, other):
        return ops.sub_(self, other)

    def __imul__(self, other):
        return ops.mul_(self, other)

    def __itruediv__(self, other):
        return ops.div_(self, other)


def _address(array) -> int:
    iface = getattr(array, "__array_interface__", None) or array.__cuda_array_interface__
    return iface["data"][0]


def shares_memory(a, b) -> bool:
    """True when tensors ``a`` and ``b`` use some of the same memory (e.g. one is a view of the other)."""
    if a.device is not b.device:
        return False
    if a.device is cpu:
        return bool(np.shares_memory(a._data, b._data))
    xp = a.device.backend.xp
    if hasattr(xp, "shares_memory"):
        return bool(xp.shares_memory(a._data, b._data))
    return root_array(a._data) is root_array(b._data)
