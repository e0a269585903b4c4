"""Making tensors: ``tensor(data)``, ``zeros``, ``ones``, ``full``, ``arange``, ``randn``, ...

Names and defaults follow PyTorch: sizes may be given as ``zeros(2, 3)`` or
``zeros((2, 3))``; floating point results are ``float32`` unless ``dtype=``
says otherwise; ``full`` and ``arange`` infer the dtype from their numbers.
Every factory takes ``device=`` (default: ``get_default_device()``, the CPU
unless ``set_default_device`` changed it) and ``requires_grad=``; random
factories draw on that device, from its generator (see :mod:`.rng`).

``tensor(data)`` always copies; ``from_numpy(array)`` shares the array's
memory (and keeps its strides), as in PyTorch.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from minigrad.tensor import rng
from minigrad.tensor.backend import cpu, device as as_device, get_default_device, transfer
from minigrad.tensor.dtypes import as_dtype, bool_, canonical_dtype, default_float, finfo, int64, is_floating_point
from minigrad.tensor.errors import DTypeError
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand", "randn", "randint", "rand_like", "randn_like", "randperm",
    "arange", "linspace", "eye",
]


def _size(size, op: str | None = None) -> tuple[int, ...]:
    """``(2, 3)``, ``((2, 3),)`` or ``([2, 3],)`` as a tuple of non-negative ints, with clear errors.

    Sizes must be integers (``int``, NumPy integers, 0-d integer tensors), as
    in PyTorch and in ``reshape``: ``2.5`` or even ``2.0`` is refused, never
    truncated. ``op`` names the factory in the error (default: the caller).
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    sizes = []
    for position, s in enumerate(size):
        try:
            if isinstance(s, (bool, np.bool_)):
                raise TypeError
            s = operator.index(s)
        except TypeError:
            op = op or sys._getframe(1).f_code.co_name
            raise TypeError(
                f"{op}: sizes must be ints, got {type(s).__name__} {s} at position {position} of size "
                f"{_shown(size)}; pass whole numbers (int(n) or round(n) if a computed size is a float)"
            ) from None
        if s < 0:
            op = op or sys._getframe(1).f_code.co_name
            raise ValueError(f"{op}: sizes must be >= 0, got {s} at position {position} of size {_shown(size)}")
        sizes.append(s)
    return tuple(sizes)


def _shown(size) -> str:
    return "(" + ", ".join(map(str, size)) + ("," if len(size) == 1 else "") + ")"


def _device(device):
    return get_default_device() if device is None else as_device(device)


def _finish(array, device, requires_grad: bool) -> Tensor:
    dev = _device(device)
    if dev is not cpu and isinstance(array, np.ndarray):
        array = transfer(array, cpu, dev)
    t = make_tensor(array, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _xp(device):
    return _device(device).backend.xp


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, NumPy arrays or tensors).

    Python floats give float32 and ints int64; NumPy arrays keep their dtype
    (mapped to a supported one: uint8 -> int64, ...), as in ``torch.tensor``.
    """
    return Tensor(data, dtype=dtype, requires_grad=requires_grad, device=device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` itself if it is already a tensor of that dtype/device, otherwise ``tensor(data, ...)``."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor that *shares* ``array``'s memory (changes show on both sides)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    if canonical_dtype(array.dtype) != array.dtype:
        raise DTypeError(
            f"from_numpy: dtype {array.dtype} is not supported without a copy; use "
            f"tensor(array) (converts to {canonical_dtype(array.dtype)}) or array.astype(...) first"
        )
    return make_tensor(array, cpu)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(_xp(device).zeros(_size(size), dtype=as_dtype(dtype) or default_float), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(_xp(device).ones(_size(size), dtype=as_dtype(dtype) or default_float), device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Uninitialised memory (whatever was there); fill it before reading."""
    return _finish(_xp(device).empty(_size(size), dtype=as_dtype(dtype) or default_float), device, requires_grad)


def _dtype_of_number(value):
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    return default_float


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; the dtype follows the value (bool, int64, float32)."""
    dtype = as_dtype(dtype) or _dtype_of_number(fill_value)
    size = _size((size,))
    return _finish(_xp(device).full(size, fill_value, dtype=dtype), device, requires_grad)


def _like(x: Tensor, dtype, device):
    return x.shape, as_dtype(dtype) or x.dtype, device if device is not None else x.device


def zeros_like(x: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(x: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return ones(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(x: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(x: Tensor, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def _float_dtype(dtype, op: str):
    dtype = as_dtype(dtype) or default_float
    if not is_floating_point(dtype):
        raise DTypeError(f"{op}: dtype must be a floating point type, got {dtype}")
    return dtype


def _generator(generator, device=None):
    """Where to draw from: ``generator`` (on the host), else the generator of the tensor's device."""
    if generator is None:
        return rng.generator_for(_device(device))
    if not isinstance(generator, np.random.Generator):
        raise TypeError(
            f"generator must be a numpy.random.Generator (e.g. np.random.default_rng(0)), got {type(generator).__name__}"
        )
    return generator


def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Samples of the standard normal distribution N(0, 1)."""
    dtype = _float_dtype(dtype, "randn")
    gen = _generator(generator, device)
    draw_dtype = dtype if dtype.itemsize >= 4 else np.float32  # NumPy draws float32 and float64 only
    data = gen.standard_normal(_size(size), dtype=draw_dtype).astype(dtype, copy=False)
    return _finish(data, device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Samples of the uniform distribution on [0, 1)."""
    dtype = _float_dtype(dtype, "rand")
    gen = _generator(generator, device)
    draw_dtype = dtype if dtype.itemsize >= 4 else np.float32
    data = gen.random(_size(size), dtype=draw_dtype).astype(dtype, copy=False)
    if draw_dtype != dtype:  # rounding to a narrow type can reach 1.0: keep [0, 1) half-open
        data[data >= 1] = 1 - finfo(dtype).epsneg
    return _finish(data, device, requires_grad)


def randint(low: int, high: int | None = None, size=(), generator=None, dtype=None, device=None) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` means low = 0)."""
    if high is None:
        low, high = 0, low
    data = _generator(generator, device).integers(low, high, size=tuple(size), dtype=np.int64)
    return _finish(data.astype(as_dtype(dtype) or int64, copy=False), device, False)


def rand_like(x: Tensor, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return rand(shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(x: Tensor, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape, dtype, device = _like(x, dtype, device)
    return randn(shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def randperm(n: int, generator=None, device=None) -> Tensor:
    """A random permutation of 0..n-1 (int64)."""
    (n,) = _size((n,), "randperm")
    return _finish(_generator(generator, device).permutation(n).astype(np.int64), device, False)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``[start, start + step, ...)`` up to ``end`` (exclusive); int64 if all are ints, else float32."""
    if end is None:
        start, end = 0, start
    for name, value in (("start", start), ("end", end), ("step", step)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"arange: {name} must be a number, got {type(value).__name__} {value!r}")
        if not np.isfinite(value):
            raise ValueError(f"arange: {name} must be finite, got {value}")
    if step == 0:
        raise ValueError(f"arange: step must not be 0 (start={start}, end={end}); a step of 0 never reaches the end")
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dtype = int64 if ints else default_float
    return _finish(_xp(device).arange(start, end, step, dtype=as_dtype(dtype)), device, requires_grad)


def linspace(start, end, steps: int, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from start to end (both included)."""
    dtype = as_dtype(dtype) or default_float
    (steps,) = _size((steps,))
    return _finish(_xp(device).linspace(start, end, steps, dtype=dtype), device, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """The identity matrix (n x m)."""
    n, m = _size((n, n if m is None else m), "eye")
    return _finish(_xp(device).eye(n, m, dtype=as_dtype(dtype) or default_float), device, requires_grad)
