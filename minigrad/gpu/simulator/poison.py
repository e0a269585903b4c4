"""Poison: the value a thread gets when it reads shared memory no thread of its block has written.

Fresh shared memory holds garbage on a GPU. A fill value (NaN, 0, False)
can hide the bug: ``max(x, garbage)``, a comparison or a ``bool`` flag may
look right. So an unwritten element reads as :class:`Poison`, which
remembers the read and spreads through arithmetic (``poison + 1`` is the same
poison, stored back into shared memory it stays poison). It is reported:

- at once, with :class:`UninitializedReadError`, when it decides something:
  a branch or ``while`` test (``bool``), ``max``/``min`` (a comparison's
  truth), an index;
- at the next barrier or the end of the block, when it only reached global
  memory (a store or an ``atomic_add``) - so that if another thread of the
  block writes the element later in the same phase, the race detector
  reports the race first, which is the real cause.

Invariant: a launch in which poison reached global memory never returns
normally: the store writes NaN (0 for integers) and the error follows.
"""

from __future__ import annotations

from minigrad.gpu.errors import UninitializedReadError


class Poison:
    """An unwritten shared element, and everything computed from it."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def _spread(self, *_):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _spread
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _spread
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __invert__ = _spread
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rshift__ = _spread
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _spread

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):  # jit.exp(poison), numpy scalar + poison
        return self

    def __bool__(self):
        raise UninitializedReadError(self.message + " It decides a branch, a loop or max()/min() here.")

    def __index__(self):
        raise UninitializedReadError(self.message + " It is used as an index here.")

    def __float__(self):  # a store into a float argument array: report at the next barrier
        pending(self)
        return float("nan")

    def __int__(self):  # a store into an int argument array: report at the next barrier
        pending(self)
        return 0

    __complex__ = lambda self: complex(self.__float__())  # noqa: E731
    __hash__ = None

    def __repr__(self) -> str:
        return "<uninitialised shared memory>"


_PENDING: list = []  # the first poison that reached global memory in the current phase


def pending(poison: Poison) -> None:
    """Remember that ``poison`` reached global memory (reported by :func:`report`)."""
    if not _PENDING:
        _PENDING.append(poison)


def report() -> None:
    """At a barrier or a block's end: raise for a poison that reached global memory since the last one."""
    if _PENDING:
        poison = _PENDING.pop()
        _PENDING.clear()
        raise UninitializedReadError(poison.message + " Its garbage was stored into global memory.")


def forget() -> None:
    """A launch starts (or ended with another error): no poison is pending."""
    _PENDING.clear()
