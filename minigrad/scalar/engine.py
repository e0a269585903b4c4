"""A scalar autograd engine: ``Value`` and the backward pass.

Every ``Value`` remembers the values it was computed from (``_children``) and,
recorded at the moment the forward op runs, the local derivative of its output
with respect to each of them (``_local_grads``). Backward is then the chain
rule and nothing else: walk the graph from the output towards the leaves and
add ``local_grad * node.grad`` into each child.

Invariants
- ``len(v._children) == len(v._local_grads)`` for every node.
- Leaves (nodes with no children) accumulate ``.grad`` across ``backward()``
  calls, as in PyTorch; call ``zero_grad()`` (or ``Module.zero_grad()``)
  between steps. Intermediate nodes hold the gradient of the latest pass.
- The derivative of ``relu`` at exactly 0 is taken to be 0 (PyTorch's choice).
"""

from __future__ import annotations

import math
from numbers import Real

__all__ = ["Value", "topological_order", "vsum", "dot"]


def _type_error(op: str, left: object, right: object) -> TypeError:
    return TypeError(
        f"{op}: unsupported operand types {type(left).__name__} and "
        f"{type(right).__name__}. Value works with int, float and Value operands; "
        f"convert with float(x) or wrap with Value(x)."
    )


def _as_value(x: object, op: str, other: object) -> "Value":
    if isinstance(x, Value):
        return x
    if isinstance(x, Real) and not isinstance(x, bool):
        return Value(float(x))
    raise _type_error(op, other, x)


class Value:
    """A scalar that remembers how it was computed.

    ``data`` is the number, ``grad`` is d(output)/d(this value) after
    ``output.backward()``. ``label`` is an optional name shown in graph plots.
    """

    __slots__ = ("data", "grad", "_children", "_local_grads", "_op", "label")

    def __init__(self, data, _children=(), _local_grads=(), _op="", label=""):
        if isinstance(data, Value):
            raise TypeError("Value(Value(...)): data must be a number; use the Value itself")
        if not isinstance(data, Real) or isinstance(data, bool):
            raise TypeError(
                f"Value: data must be an int or float, got {type(data).__name__} ({data!r}); "
                f"convert with float(x)"
            )
        self.data = float(data)
        self.grad = 0.0
        self._children = _children
        self._local_grads = _local_grads
        self._op = _op
        self.label = label

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{name})"

    # ----------------------------------------------------------------- arithmetic
    # Each op computes its output and the local derivatives d(out)/d(input).

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
        ### BEGIN SOLUTION 1.1 | out = a*b; d(out)/da = b and d(out)/db = a: Value(data, (self, other), (local_a, local_b), "*")
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
                    f"pow: a ** b with a Value exponent needs a > 0, because "
                    f"d(a**b)/db = a**b * log(a); got a = {a:g}. "
                    f"If the exponent is a constant, pass a plain number instead of a Value."
                )
            ### BEGIN SOLUTION 1.2 | out = a**b; d/da = b * a**(b-1) and d/db = a**b * log(a)
            out = a**b
            return Value(out, (self, exponent), (b * a ** (b - 1.0), out * math.log(a)), "**")
            ### END SOLUTION
        if not isinstance(exponent, Real) or isinstance(exponent, bool):
            raise _type_error("**", self, exponent)
        n = float(exponent)
        if a == 0.0 and n < 0.0:
            raise ZeroDivisionError(f"pow: 0 ** {n:g} is infinite; the base became exactly 0")
        if a < 0.0 and not n.is_integer():
            raise ValueError(
                f"pow: {a:g} ** {n:g} is not a real number (negative base, fractional exponent); "
                f"use abs() or keep the base positive"
            )
        ### BEGIN SOLUTION 1.2 | out = a**n for a constant n; d/da = n * a**(n-1) (a single child: self)
        return Value(a**n, (self,), (n * a ** (n - 1.0),), f"**{n:g}")
        ### END SOLUTION

    def __radd__(self, other):
        return _as_value(other, "+", self) + self

    def __rsub__(self, other):
        return _as_value(other, "-", self) - self

    def __rmul__(self, other):
        return _as_value(other, "*", self) * self

    def __rtruediv__(self, other):
        return _as_value(other, "/", self) / self

    def __rpow__(self, other):
        return _as_value(other, "**", self) ** self

    # ---------------------------------------------------------------- functions

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
        ### BEGIN SOLUTION 1.3 | t = math.tanh(x); d(tanh x)/dx = 1 - t**2
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")
        ### END SOLUTION

    def relu(self):
        x = self.data
        return Value(x if x > 0.0 else 0.0, (self,), (1.0 if x > 0.0 else 0.0,), "relu")

    def sigmoid(self):
        x = self.data
        if x >= 0.0:
            s = 1.0 / (1.0 + math.exp(-x))
        else:  # same value, written so exp() never overflows
            e = math.exp(x)
            s = e / (1.0 + e)
        return Value(s, (self,), (s * (1.0 - s),), "sigmoid")

    # ----------------------------------------------------------------- backward

    def backward(self, gradient: float = 1.0) -> None:
        """Fill ``.grad`` of every node that this value depends on.

        ``gradient`` is d(final)/d(self); 1.0 when self is the final output.
        Leaves accumulate; intermediate nodes are reset for this pass.
        """
        order = topological_order(self)
        ### BEGIN SOLUTION 1.5 | reset non-leaf grads, add gradient to self.grad, then visit order in reverse: child.grad += local * node.grad
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
    """Every node reachable from ``root``, each listed after all of its children.

    Iterative depth-first search (an explicit stack), so a chain of a million
    nodes works where a recursive version would hit Python's recursion limit.
    """
    ### BEGIN SOLUTION 1.4 | explicit stack of (node, children_done) pairs; append a node to the order only when it is popped the second time
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


def vsum(values) -> Value:
    """Sum of many Values as one node: d(sum)/d(v_i) = 1 for every input."""
    values = tuple(_as_value(v, "vsum", Value(0.0)) for v in values)
    if not values:
        raise ValueError("vsum: needs at least one value; got an empty sequence")
    return Value(math.fsum(v.data for v in values), values, (1.0,) * len(values), "sum")


def dot(weights, inputs) -> Value:
    """sum_i w_i * x_i as one node: d/dw_i = x_i and d/dx_i = w_i.

    ``inputs`` may mix Values and plain numbers; only Values join the graph.
    """
    weights = tuple(weights)
    inputs = tuple(inputs)
    if len(weights) != len(inputs):
        raise ValueError(
            f"dot: {len(weights)} weights but {len(inputs)} inputs; they must have the same length"
        )
    total = 0.0
    children: list[Value] = []
    locals_: list[float] = []
    for w, x in zip(weights, inputs):
        w = _as_value(w, "dot", x)
        if isinstance(x, Value):
            total += w.data * x.data
            children += (w, x)
            locals_ += (x.data, w.data)
        else:
            x = _as_value(x, "dot", w).data
            total += w.data * x
            children.append(w)
            locals_.append(x)
    return Value(total, tuple(children), tuple(locals_), "dot")
