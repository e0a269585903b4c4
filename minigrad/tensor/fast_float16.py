"""Speed path: matrix products of float16 NumPy arrays, computed in float32 and rounded once.

NumPy has no fast half-precision matmul: ``a @ b`` on float16 arrays is about
200 times slower than on float32 ones. GPU tensor cores multiply float16
numbers and accumulate in float32; this module does the same on the CPU, so
float16 training (chapter 09) runs at float32 speed.

The definitions are elsewhere and stay the clear ones: ``a @ b`` for the
forward product, :func:`minigrad.tensor.grad_rules.matmul_backward` (exercise
4.2) for the gradients. Here they are only *computed* in float32;
``tests/tensor/test_fast_float16.py`` checks the results equal the clear
version's in float32, rounded to float16, and match float64 to float16's
precision. For any operand that is not a NumPy float16 array, :func:`product`
is exactly ``a @ b``. The conversions are :mod:`.float16_casts`' (exact, faster than NumPy's).
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor import grad_rules
from minigrad.tensor.float16_casts import astype

__all__ = ["applies", "product", "matmul_backward"]

_FLOAT16, _FLOAT32 = np.dtype(np.float16), np.dtype(np.float32)


def applies(a) -> bool:
    """Is ``a`` a float16 array on the CPU, where NumPy's own float16 products are slow?"""
    return a.dtype is _FLOAT16 and isinstance(a, np.ndarray)


def product(a, b):
    """``a @ b``; NumPy float16 operands are multiplied in float32 and the result rounded to float16."""
    if applies(a):
        return astype(astype(a, _FLOAT32) @ astype(b, _FLOAT32), _FLOAT16)
    return a @ b


def matmul_backward(grad, a, b, need_a: bool = True, need_b: bool = True):
    """``grad_rules.matmul_backward`` for float16 arrays, computed in float32 with the results rounded to float16."""
    wide = [astype(x, _FLOAT32) for x in (grad, a, b)]
    return tuple(None if g is None else astype(g, _FLOAT16) for g in grad_rules.matmul_backward(*wide, need_a, need_b))
