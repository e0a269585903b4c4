"""A scalar autograd engine: ``Value`` and the backward pass.

Every ``Value`` remembers the values it was computed from (``_children``) and,
recorded when the forward op runs, the local derivative of its output with
respect to each of them (``_local_grads``). Backward is then the chain rule
and nothing else, applied from the output towards the leaves; it never needs
to know which op made a node.

Invariants
- ``len(v._children) == len(v._local_grads)`` for every node.
- Leaves (nodes with no children) accumulate ``.grad`` across ``backward()``
  calls, as in PyTorch; intermediate nodes hold the gradient of the latest pass.
- The derivative of ``relu`` at exactly 0 is taken to be 0 (PyTorch's choice).
"""

from __future__ import annotations

import math
from numbers import Real

__all__ = ["Value", "topological_order"]


def _as_value(x: object, op: str, other: object) -> "Value":
    """``x`` as a Value (numbers are wrapped); anything else is a TypeError naming the op."""
    if isinstance(x, Value):
        return x
    if isinstance(x, Real) and not isinstance(x, bool):
        return Value(float(x))
    raise TypeError(
        f"{op}: unsupported operand types {type(other).__name__} and {type(x).__name__}. "
        f"Value works with int, float and Value operands; convert with float(x) or wrap with Value(x)."
    )


class Value:
    """A scalar that remembers how it was computed.

    ``data`` is the number, ``grad`` is d(output)/d(this value) after
    ``output.backward()``. ``label`` is an optional name shown in graph plots.
    """

    __slots__ = ("data", "grad", "_children", "_local_grads", "_op", "label")

    def __init__(self, data, _children=(), _local_grads=(), _op="", label=""):
        if not isinstance(data, Real) or isinstance(data, bool):
            hint = "use the Value itself" if isinstance(data, Value) else "convert with float(x)"
            raise TypeError(f"Value: data must be an int or float, got {type(data).__name__} ({data!r}); {hint}")
        self.data = float(data)
        self.grad = 0.0
        self._children = _children
        self._local_grads = _local_grads
        self._op = _op
        self.label = label

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{name})"

    # Each op computes its output and the local derivatives d(out)/d(input), one per child.
    def __add__(self, other):
        other = _as_value(other, "+", self)
        return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __sub__(self, other):
        other = _as_value(other, "-", self)
        return Value(self.data - other.data, (self, other), (1.0, -1.0), "-")

    def __neg__(self):
        return Value(-self.data, (self,), (-1.0,), "neg")

    def __mul__(self, other):
        other = _as_value(other, "*", self)
        ### BEGIN SOLUTION 1.1 | the product, and how it moves when each factor moves (the table of section 4)
        return Value(self.data * other.data, (self, other), (other.data, self.data), "*")
        ### END SOLUTION

    def __truediv__(self, other):
        other = _as_value(other, "/", self)
        if other.data == 0.0:
            raise ZeroDivisionError(
                f"division: divisor is 0 ({self.data:g} / {other.data:g}); "
                f"add a small epsilon to the denominator or check where it became 0"
            )
        inv = 1.0 / other.data
        return Value(self.data * inv, (self, other), (inv, -self.data * inv * inv), "/")

    def __pow__(self, exponent):
        a = self.data
        if isinstance(exponent, Value):
            b = exponent.data
            if a <= 0.0:
                raise ValueError(
                    f"pow: a ** b with a Value exponent needs a > 0, because d(a**b)/db = a**b * log(a); "
                    f"got a = {a:g}. If the exponent is a constant, pass a plain number instead of a Value."
                )
            ### BEGIN SOLUTION 1.1 | a ** b with both a and b in the graph: one local derivative per child (section 4)
            out = a**b
            return Value(out, (self, exponent), (b * a ** (b - 1.0), out * math.log(a)), "**")
            ### END SOLUTION
        if not isinstance(exponent, Real) or isinstance(exponent, bool):
            _as_value(exponent, "**", self)  # raises the TypeError
        n = float(exponent)
        if a == 0.0 and n < 0.0:
            raise ZeroDivisionError(f"pow: 0 ** {n:g} is infinite; the base became exactly 0")
        if a < 0.0 and not n.is_integer():
            raise ValueError(
                f"pow: {a:g} ** {n:g} is not a real number (negative base, fractional exponent); "
                f"use abs() or keep the base positive"
            )
        ### BEGIN SOLUTION 1.1 | a ** n for a plain number n: only the base joins the graph (section 4)
        return Value(a**n, (self,), (n * a ** (n - 1.0),), f"**{n:g}")
        ### END SOLUTION

    __radd__ = __add__
    __rmul__ = __mul__

    def __rsub__(self, other):
        return _as_value(other, "-", self) - self

    def __rtruediv__(self, other):
        return _as_value(other, "/", self) / self

    def __rpow__(self, other):
        return _as_value(other, "**", self) ** self

    def exp(self):
        try:
            out = math.exp(self.data)
        except OverflowError:
            raise OverflowError(
                f"exp: exp({self.data:g}) overflows a float (limit is about exp(709)); "
                f"scale the input down or use a numerically stable formulation"
            ) from None
        return Value(out, (self,), (out,), "exp")

    def log(self):
        if self.data <= 0.0:
            raise ValueError(
                f"log: input must be positive, got {self.data:g}. "
                f"Clamp it first, e.g. (x + 1e-12).log(), or check where it became <= 0."
            )
        return Value(math.log(self.data), (self,), (1.0 / self.data,), "log")

    def tanh(self):
        ### BEGIN SOLUTION 1.1 | tanh of the data, and its local derivative written with the output (section 4)
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")
        ### END SOLUTION

    def relu(self):
        x = self.data
        return Value(x if x > 0.0 else 0.0, (self,), (1.0 if x > 0.0 else 0.0,), "relu")

    def sigmoid(self):
        # 1 / (1 + exp(-x)) for x >= 0; the equal exp(x) / (1 + exp(x)) below 0, so exp never overflows
        e = math.exp(-abs(self.data))
        s = 1.0 / (1.0 + e) if self.data >= 0.0 else e / (1.0 + e)
        return Value(s, (self,), (s * (1.0 - s),), "sigmoid")

    def backward(self, gradient: float = 1.0) -> None:
        """Fill ``.grad`` of every node that this value depends on.

        ``gradient`` is d(final)/d(self); 1.0 when self is the final output.
        Leaves accumulate; intermediate nodes start from 0 in every pass.
        """
        order = topological_order(self)
        ### BEGIN SOLUTION 1.3 | the chain rule over the whole graph, output first, in an order that never uses an unfinished gradient (sections 5-10)
        for node in order:
            if node._children:
                node.grad = 0.0
        self.grad += gradient
        for node in reversed(order):
            g = node.grad
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * g
        ### END SOLUTION

    def zero_grad(self) -> None:
        """Set ``.grad`` of this value and everything it depends on to 0."""
        for node in topological_order(self):
            node.grad = 0.0


def topological_order(root: Value) -> list[Value]:
    """Every node reachable from ``root`` exactly once, each listed after all of its children.

    Iterative depth-first search with an explicit stack, so a chain of a million
    nodes works where a recursive version would hit Python's recursion limit.
    """
    ### BEGIN SOLUTION 1.2 | depth-first search without recursion: an explicit stack that remembers whether a node's children are placed yet (section 7)
    order: list[Value] = []
    visited: set[Value] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for child in node._children:
            if child not in visited:
                stack.append((child, False))
    return order
    ### END SOLUTION
