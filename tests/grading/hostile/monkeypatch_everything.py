"""Hostile: patch the checks, numpy, numpy.testing, pytest, math and builtins so that any comparison passes."""
import builtins
import math
import sys

import numpy as np
import numpy.testing

np.allclose = np.isclose = np.array_equal = lambda *a, **k: True
numpy.testing.assert_allclose = numpy.testing.assert_array_equal = lambda *a, **k: None
math.isclose = lambda *a, **k: True
builtins.isinstance = lambda *a: True
builtins.AssertionError = type("Never", (Exception,), {})
try:
    import pytest

    pytest.approx = lambda expected, *a, **k: type("Anything", (), {"__eq__": lambda s, o: True})()
except ImportError:
    pass
for name in list(sys.modules):
    if "grading" in name:
        module = sys.modules[name]
        for attr in dir(module):
            if attr.startswith(("test_", "check", "assert")):
                setattr(module, attr, lambda *a, **k: None)
try:
    import minigrad.grading.checks.ch01 as checks

    for attr in dir(checks):
        if attr.startswith("test_"):
            setattr(checks, attr, lambda *a, **k: None)
except Exception:
    pass
main = sys.modules.get("__main__")
if main is not None:
    for attr in ("to_wire", "_error"):
        if hasattr(main, attr):
            setattr(main, attr, lambda *a, **k: {})


class Value:
    def __init__(self, data, _children=(), _local_grads=(), _op="", label=""):
        self.data, self.grad, self._children, self._local_grads = 0.0, 0.0, (), ()

    def _same(self, *args):
        return Value(0.0)

    __add__ = __radd__ = __mul__ = __rmul__ = __pow__ = __rpow__ = __sub__ = __rsub__ = __truediv__ = _same
    __rtruediv__ = tanh = exp = log = relu = sigmoid = __neg__ = _same

    def backward(self):
        pass


def topological_order(root):
    return [root]
