"""The dtype policy slot (used by ``minigrad.amp``).

A callable ``policy(op_name, input_dtypes) -> dtype | None`` consulted whenever
an op runs (``op_name`` is the op's snake-case name: ``"matmul"``, ``"add"``,
``"log_softmax"``...; ``input_dtypes`` the dtypes of its tensor operands).
If it returns a dtype, floating point operands of another dtype are cast to it
(a recorded, differentiable cast) before the op computes; ``None`` leaves the
op alone. Inside ``cast_cache.weight_cast_cache()`` each weight is cast once per region.

``policy`` is the slot itself, read by ``Function.apply`` (None: no policy).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable

__all__ = ["set_dtype_policy", "get_dtype_policy", "dtype_policy"]

policy: Callable | None = None


def set_dtype_policy(fn: Callable | None) -> Callable | None:
    """Install ``fn(op_name, input_dtypes) -> dtype | None`` (None removes it); returns the previous policy."""
    global policy
    if fn is not None and not callable(fn):
        raise TypeError(f"set_dtype_policy: expected a callable (op_name, input_dtypes) -> dtype or None, got {fn!r}")
    previous, policy = policy, fn
    return previous


def get_dtype_policy() -> Callable | None:
    return policy


@contextmanager
def dtype_policy(fn: Callable | None):
    """Use ``fn`` as the dtype policy inside the block (``minigrad.amp.autocast`` builds on this)."""
    previous = set_dtype_policy(fn)
    try:
        yield
    finally:
        set_dtype_policy(previous)
