"""The shape of the tensor core: Tensor's methods reach the ops through the op table, apply reads as its steps."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import minigrad.tensor as mt
from minigrad.tensor import function, tensor_methods
from minigrad.tensor.op_table import OpTable, ops, register

tensor = importlib.import_module("minigrad.tensor.tensor")  # the module: the package's ``tensor`` is the factory


def _names_called(module) -> set[str]:
    return set(re.findall(r"\bops\.(\w+)\(", inspect.getsource(module)))


@pytest.mark.parametrize("module", [tensor_methods, tensor], ids=lambda m: m.__name__)
def test_every_op_a_method_calls_is_in_the_table(module):
    called = _names_called(module)
    assert called, f"{module.__name__} calls no op through the table (the pattern matches nothing?)"
    missing = sorted(name for name in called if name not in vars(ops))
    assert not missing, f"{module.__name__} calls ops nobody registered: {missing}"


def test_the_table_holds_the_op_modules_functions():
    from minigrad.tensor.ops import elementwise, reduce

    assert ops.add is elementwise.add and ops.sum is reduce.sum
    assert (mt.ones(2) + 1).tolist() == [2.0, 2.0]


def test_a_taken_name_cannot_be_registered_again():
    def add(a, b):
        return a

    with pytest.raises(ValueError, match="already has 'add'"):
        register(add)
    register(ops.add)  # the same function again is harmless
    with pytest.raises(TypeError, match="expected a function"):
        register(42)


def test_a_missing_entry_says_what_fills_the_table():
    with pytest.raises(AttributeError, match="no entry 'frobnicate'.*import minigrad.tensor"):
        OpTable().frobnicate


def test_function_apply_reads_as_its_steps():
    source = inspect.getsource(function.Function.apply.__func__)
    body = [line for line in source.splitlines() if line.strip()]
    assert len(body) <= 25, f"Function.apply has {len(body)} lines; keep each concern in a step of its own"
    for step in ("_unwrap(", "_run_forward(", "_wrap(", "_record("):
        assert step in source
