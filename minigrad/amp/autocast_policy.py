"""The autocast policy: what the core's dtype-policy slot runs before each op while an autocast region is open.

For an op whose tensors live on a device type with autocast on (this
thread's :mod:`.autocast_state`), the op's category in :mod:`.op_lists` picks
a dtype, and the eligible tensor arguments are cast to it before the op
computes: recorded, differentiable casts, so backward computes each
gradient in the dtype of its forward operand (a float32 weight used in a
bfloat16 matmul gets a float32 gradient). Casts of weights go through the
region's cache (:mod:`.cast_cache`) when the region's ``cache_enabled``.

Invariants (PyTorch's eligibility rules)
- Eligible: floating point tensors on the region's device type, except
  float64 (never cast, in either direction); integer and bool tensors and
  plain numbers are untouched.
- ``"lower"``: cast to the region's dtype; ``"float32"``: to float32;
  ``"promote"``: to float32 if any eligible tensor is float32, else the
  region's dtype; ops in no list: arguments as they are (the same tuple).
- An op whose tensors are on a device type without autocast is untouched,
  so ``autocast("cuda")`` leaves CPU tensors alone.
- While memory is tracked, a cast copy of a parameter or of the data is
  counted in its source's category (:mod:`.cast_accounting`).
"""

from __future__ import annotations

from minigrad.amp import autocast_state
from minigrad.amp.cast_accounting import count_as_source
from minigrad.amp.cast_cache import cached_cast
from minigrad.memory import buffers
from minigrad.amp.op_lists import category
from minigrad.tensor import Tensor, cast, float32, float64, is_floating_point

__all__ = ["autocast_policy", "target_dtype"]


def _eligible(a, device_type: str) -> bool:
    """Whether autocast may cast ``a``: a Tensor of a floating dtype other than float64, on ``device_type``."""
    ### BEGIN SOLUTION 9.2 | only tensors are cast, only floating point ones, never float64 (asked for on purpose), and only on the device type the region covers (a tensor keeps its array in ._data and its device in ._device)
    if not isinstance(a, Tensor):
        return False
    dtype = a._data.dtype
    return is_floating_point(dtype) and dtype != float64 and a._device.type == device_type
    ### END SOLUTION


def target_dtype(op: str, args: tuple, device_type: str, autocast_dtype):
    """The dtype autocast runs ``op(*args)`` in on ``device_type``, or None to leave the arguments alone."""
    ### BEGIN SOLUTION 9.2 | the op's list (op_lists.category) decides: the region's dtype for the matrix products, float32 for the ops float16 cannot carry, None for ops in no list; a promote op runs in the widest dtype among its eligible tensors (two different 16-bit formats meet in float32)
    kind = category(device_type, op, args)
    if kind is None:
        return None
    if kind == "lower":
        return autocast_dtype
    if kind == "float32":
        return float32
    widest = [a._data.dtype for a in args if _eligible(a, device_type)]
    return float32 if any(d == float32 for d in widest) or len(set(widest)) > 1 else autocast_dtype
    ### END SOLUTION


def autocast_policy(cls, args) -> tuple:
    """The dtype-policy slot's callable: ``args`` with the eligible tensors cast to the op's autocast dtype."""
    modes = autocast_state.state.modes
    if not modes:
        return args
    device_type = next((a._device.type for a in args if isinstance(a, Tensor)), None)
    mode = modes.get(device_type)
    if mode is None or not mode.enabled:
        return args
    target = target_dtype(cls.op, args, device_type, mode.dtype)
    if target is None:
        return args
    ### BEGIN SOLUTION 9.2 | a new tuple where each eligible tensor not already in the target dtype is cast (through the region's weight cache, cached_cast, when the region caches), everything else as it was
    convert = cached_cast if mode.cache_enabled else cast
    out = tuple(
        convert(a, target) if _eligible(a, device_type) and a._data.dtype != target else a for a in args
    )
    ### END SOLUTION
    if buffers.notify:  # memory is being tracked: count each copy where its source is counted
        for a, b in zip(args, out):
            if b is not a:
                count_as_source(b, a)
    return out
