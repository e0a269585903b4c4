"""The op table: the one place where the Tensor's methods find the ops.

The core (``Tensor``, ``Function``, the backward pass) imports no op module.
Each op module registers the functions the Tensor's methods call when it is
imported (``import minigrad.tensor`` imports them all), and a method looks its
op up here by name: ``x + y`` is ``ops.add(x, y)``. PyTorch has the same idea
(``torch.ops.aten.add`` names an op by a registry entry, not by the file that
defines it)::

    # at the end of ops/elementwise.py
    register(add, sub, mul, ...)

    # in tensor_methods.py
    def __add__(self, other):
        return ops.add(self, other)

Invariants
- A name is registered once: registering another function under a taken name
  raises (no op silently replaces another).
- Looking up a name that nothing registered raises an ``AttributeError`` that
  names it and says which import fills the table.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["ops", "register", "OpTable"]


class OpTable:
    """Functions by name, read as attributes (``ops.add``); filled by :func:`register`."""

    def __getattr__(self, name: str):
        raise AttributeError(
            f"the op table has no entry {name!r}: the op modules register theirs when imported; "
            f"import minigrad.tensor (which imports them all) before calling Tensor methods"
        )

    def __dir__(self):
        return sorted(vars(self))

    def __repr__(self) -> str:
        return f"<op table: {len(vars(self))} entries>"


ops = OpTable()


def register(*functions: Callable, name: str | None = None) -> None:
    """Enter each function in the table under its ``__name__`` (or ``name``, for a single function)."""
    if name is not None and len(functions) != 1:
        raise TypeError("register: name= goes with exactly one function")
    for fn in functions:
        if not callable(fn):
            raise TypeError(f"register: expected a function, got {fn!r}")
        key = name or fn.__name__
        current = vars(ops).get(key)
        if current is not None and current is not fn:
            raise ValueError(
                f"register: the op table already has {key!r} ({current.__module__}.{current.__qualname__}); "
                f"{fn.__module__}.{fn.__qualname__} cannot take its name"
            )
        setattr(ops, key, fn)
