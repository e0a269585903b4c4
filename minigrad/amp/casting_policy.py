"""A dtype policy that casts: the core's slot filled from a rule ``rule(op_name, dtypes) -> dtype or None``.

The core's slot (:mod:`minigrad.tensor.dtype_policy_slot`) hands a policy each op's
class and arguments. :func:`casting_policy` turns a simple rule into such a
policy: it asks ``rule(cls.op, dtypes_of_the_tensor_arguments)`` and, when the
rule names a dtype, casts every floating point tensor argument of another
dtype to it (a recorded, differentiable cast), through the weight-cast cache
of :mod:`.cast_cache` so that a weight is cast once per region::

    def rule(op, dtypes):
        return mt.float16 if op == "matmul" else None

    with mt.dtype_policy(casting_policy(rule)):
        y = x @ w            # computed in float16; w.grad comes back in float32

Invariants
- Integer and boolean operands are never cast; neither are tensors already in
  the target dtype (no node is recorded for them).
- A rule that returns None leaves the op's arguments as they are (the same tuple).
"""

from __future__ import annotations

from typing import Callable

from minigrad.amp.cast_cache import cached_cast
from minigrad.tensor import Tensor
from minigrad.tensor.dtypes import as_dtype, is_floating_point

__all__ = ["casting_policy"]


def casting_policy(rule: Callable) -> Callable:
    """The slot policy that casts an op's floating point tensors to the dtype ``rule(op, dtypes)`` names."""
    if not callable(rule):
        raise TypeError(f"casting_policy: expected a callable (op_name, input_dtypes) -> dtype or None, got {rule!r}")

    def policy(cls, args) -> tuple:
        dtypes = tuple(a._data.dtype for a in args if isinstance(a, Tensor))
        target = rule(cls.op, dtypes)
        if target is None:
            return args
        target = as_dtype(target)
        return tuple(
            cached_cast(a, target)
            if isinstance(a, Tensor) and is_floating_point(a._data.dtype) and a._data.dtype != target else a
            for a in args
        )

    policy.rule = rule
    return policy
