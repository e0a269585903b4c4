"""The dtype policy (autocast) applied to an op's arguments before it runs.

``dtype_policy.set_dtype_policy(fn)`` installs ``fn(op, dtypes) -> dtype or None``;
``Function.apply`` calls :func:`policy_casts` only while a policy is set, and
each floating point tensor argument is cast (once per autocast region, see
:mod:`.cast_cache`) to the dtype the policy names.
"""

from __future__ import annotations

import importlib

from minigrad.tensor.dtypes import as_dtype, is_floating_point
from minigrad.tensor.tensor import Tensor

_dtype_policy = importlib.import_module("minigrad.tensor.dtype_policy")  # the slot's module (the package exports the function of that name)

__all__ = ["policy_casts"]


def policy_casts(cls, args) -> tuple:
    """``args`` with the tensors cast as the dtype policy asks for op ``cls.op`` (unchanged if it asks nothing)."""
    dtypes = tuple(a._data.dtype for a in args if isinstance(a, Tensor))
    target = _dtype_policy.policy(cls.op, dtypes)
    if target is None:
        return args
    from minigrad.tensor.cast_cache import cached_cast  # it imports function.py, which imports this module

    target = as_dtype(target)
    return tuple(
        cached_cast(a, target) if isinstance(a, Tensor) and is_floating_point(a._data.dtype) and a._data.dtype != target else a
        for a in args
    )
