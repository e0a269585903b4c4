"""Phases of a training step and the module running, built from the hooks of ``nn``, ``optim`` and autograd.

A phase observer receives a :class:`PhaseEvent` when a phase starts
(``"enter"``) or ends (``"exit"``): ``"forward"`` around the outermost module
call (``owner`` is the module, ``inputs`` its positional arguments),
``"backward"`` around ``backward()`` (``owner`` is the tensor) and
``"optimizer"`` around ``Optimizer.step`` (``owner`` is the optimizer).

While phases are observed, every module call pushes its module on
:data:`scopes` for the length of its forward (a global forward pre-hook and an
always-called forward hook of :mod:`minigrad.nn`), so each allocation event
names the module running without a call per event.

Invariants
- ``scopes`` is empty outside any module call; each "enter" is followed by
  its "exit", also when the phase raised (the forward hook is always called;
  a step that raised is closed when the next one starts, or when observing stops).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Callable

__all__ = ["PhaseEvent", "scopes", "observers", "enter_phase", "exit_phase", "module_entered", "module_left",
           "step_began", "step_ended", "backward_began", "backward_ended", "close_open_step"]

PhaseEvent = namedtuple("PhaseEvent", "event phase owner inputs", defaults=((),))
PhaseEvent.__doc__ = """A phase starts (``event`` "enter") or ends ("exit"): ``phase`` is "forward", "backward" or
"optimizer"; ``owner`` the module, the tensor backward started from, or the optimizer; ``inputs`` the
positional arguments of a module call (empty otherwise)."""

_event = tuple.__new__

scopes: list = []  # the modules whose forward runs, innermost last
observers: list[Callable] = []
notify: tuple = ()
_open_step: list = []  # the optimizer whose step runs (a step that raised stays here until closed)


def sync() -> None:
    global notify
    notify = tuple(observers)


def enter_phase(name: str, owner=None, inputs: tuple = ()) -> None:
    """Tell the phase observers that phase ``name`` of ``owner`` starts (pair it with :func:`exit_phase`)."""
    event = _event(PhaseEvent, ("enter", name, owner, inputs))
    for fn in notify:
        fn(event)


def exit_phase(name: str, owner=None) -> None:
    event = _event(PhaseEvent, ("exit", name, owner, ()))
    for fn in notify:
        fn(event)


def module_entered(module, args) -> None:
    """The global forward pre-hook: the outermost call starts the forward phase; every call pushes its module."""
    if not scopes:
        enter_phase("forward", module, args)
    scopes.append(module)


def module_left(module, args, output) -> None:
    """The global forward hook (always called, also when forward raised)."""
    if scopes and scopes[-1] is module:
        scopes.pop()
        if not scopes:
            exit_phase("forward", module)


def backward_began(tensor) -> None:
    enter_phase("backward", tensor)


def backward_ended(tensor) -> None:
    exit_phase("backward", tensor)


def step_began(optimizer) -> None:
    close_open_step()
    _open_step.append(optimizer)
    enter_phase("optimizer", optimizer)


def step_ended(optimizer) -> None:
    if _open_step:
        _open_step.pop()
        exit_phase("optimizer", optimizer)


def close_open_step() -> None:
    """End the phase of a step that raised (its post-hooks never ran)."""
    while _open_step:
        exit_phase("optimizer", _open_step.pop())
