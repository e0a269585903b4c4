"""Which saved arrays backward must check against which version counters, and the errors it raises.

``save_for_backward`` may keep an input, the output, or a view of either
(conv's im2col of a 1x1 kernel). Each such array is paired with the version
counter of the tensor whose buffer it uses, and the version it had, so that
``ctx.saved_tensors`` can raise if an in-place op changed it before backward
(:func:`modified_error`), or if a first backward already freed it (:func:`freed_error`).
"""

from __future__ import annotations

from minigrad.tensor.backend import root_array
from minigrad.tensor.tensor import Tensor

__all__ = ["version_checks", "modified_error", "freed_error"]


def version_checks(saved, args, result) -> tuple:
    """(index, version counter, version now, shape) for each saved array that uses an input's or the output's buffer.

    A saved array is checked against a tensor when it *is* the tensor's data or
    shares its buffer: a view of an input (conv's im2col of a 1x1 kernel) or
    the array the output is a view of (``amax(dim)``'s kept-dims result).
    """
    checks = []
    tensors = None
    for i, array in enumerate(saved):
        if array is result._data:
            checks.append((i, result._version_counter, result._version_counter.value, array.shape))
            continue
        for a in args:
            if isinstance(a, Tensor) and a._data is array:
                checks.append((i, a._version_counter, a._version_counter.value, array.shape))
                break
        else:
            if getattr(array, "base", None) is None and not hasattr(array, "shape"):
                continue  # a number or None, not a buffer
            if tensors is None:  # (root of the buffer, tensor) for the output and every tensor input
                tensors = [(root_array(result._data), result)]
                tensors += [(root_array(a._data), a) for a in args if isinstance(a, Tensor)]
            root = root_array(array)
            for buffer, t in tensors:
                if buffer is root:
                    checks.append((i, t._version_counter, t._version_counter.value, array.shape))
                    break
    return tuple(checks)


def modified_error(ctx, version: int, expected: int, shape) -> RuntimeError:
    """Node ``ctx`` saved an array (of ``shape``) whose tensor an in-place op changed since: ``version``, not ``expected``."""
    return RuntimeError(
        f"one of the tensors needed for gradient computation (saved by {ctx.name}, shape "
        f"{tuple(shape)}) was modified by an in-place operation: version "
        f"{version}, expected {expected}. Fix: do not modify it in place after "
        f"using it (write x = x + y instead of x += y), or .clone() it before the in-place op"
    )


def freed_error(ctx) -> RuntimeError:
    """Node ``ctx``'s saved arrays were freed by a first ``backward()`` (without ``retain_graph=True``)."""
    return RuntimeError(
        f"{ctx.name}: trying to backward through the graph a second time: the tensors it saved "
        f"were freed by the first backward(). Pass retain_graph=True to the first backward() "
        f"if you need to call backward twice, or recompute the forward pass"
    )
