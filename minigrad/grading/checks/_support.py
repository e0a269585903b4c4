"""Shared tools for graded checks: reference backward and finite differences on any Value class."""

from __future__ import annotations

import math

from minigrad.scalar import engine as reference
from minigrad.scalar.gradcheck import numerical_gradient


def reference_backward(out) -> None:
    """Run the library's backward pass on a graph built from a learner's Value class.

    Checks of a single op use this so that they do not depend on the learner's
    own backward (a separate exercise).
    """
    reference.Value.backward(out)


def check_gradients(value_cls, f, xs, backward=reference_backward, tol=1e-5):
    """Build ``f`` from ``value_cls`` leaves, backprop, compare each leaf's grad with finite differences."""
    leaves = [value_cls(x) for x in xs]
    out = f(*leaves)
    backward(out)
    numeric = numerical_gradient(lambda *a: f(*(value_cls(x) for x in a)).data, xs)
    for i, (leaf, expected) in enumerate(zip(leaves, numeric)):
        assert math.isclose(leaf.grad, expected, rel_tol=1e-4, abs_tol=tol), (
            f"gradient of input #{i} (= {xs[i]:.6g}): backward gives {leaf.grad:.8g}, "
            f"finite differences give {expected:.8g}"
        )
