"""The dtype-policy slot: one callable that may rewrite an op's arguments before the op runs.

Mixed precision (``minigrad.amp``) fills it; the core only calls it. While a
policy is installed, :meth:`Function.apply <minigrad.tensor.function.Function.apply>`
calls ``policy(cls, args)`` with the op's Function class (``cls.op`` is its
snake-case name: ``"matmul"``, ``"add"``, ``"log_softmax"``...) and its
arguments, and runs the op on the arguments the policy returns (e.g. with
float32 tensors cast to float16 by a recorded, differentiable cast).

Invariants
- With no policy installed, ``Function.apply`` pays one ``is None`` test.
- Ops that set ``skip_dtype_policy`` (the cast op itself) never reach the policy,
  so a policy may cast without recursing into itself.
- ``dtype_policy(fn)`` restores the previous policy on exit, also on error.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable

__all__ = ["set_dtype_policy", "get_dtype_policy", "dtype_policy"]

#: the installed policy, read on every op by ``Function.apply``; None when none is
policy: Callable | None = None


def set_dtype_policy(fn: Callable | None) -> Callable | None:
    """Install ``fn(cls, args) -> args`` (None removes it); returns the previous policy."""
    global policy
    if fn is not None and not callable(fn):
        raise TypeError(f"set_dtype_policy: expected a callable (op class, args) -> args, or None, got {fn!r}")
    previous, policy = policy, fn
    return previous


def get_dtype_policy() -> Callable | None:
    return policy


@contextmanager
def dtype_policy(fn: Callable | None):
    """Use ``fn`` as the dtype policy inside the block (``minigrad.amp`` builds autocast on this)."""
    previous = set_dtype_policy(fn)
    try:
        yield
    finally:
        set_dtype_policy(previous)
