"""The steps of the backward pass that are not its algorithm (that is :func:`.autograd.run_backward`).

- :func:`input_gradients`: run one node's ``backward`` and check what it
  returned (one gradient per input, each of its input's shape), naming the op
  when it is wrong; bfloat16 nodes compute in float32; ``detect_anomaly()``
  and the listeners of :mod:`.events` are served here.
- :func:`store_grad` / :func:`add_grad`: a gradient becomes ``t.grad``, or is
  added into it in place. A fresh array made during the pass is adopted
  without a copy the first time; anything another tensor might hold is copied,
  so a ``.grad`` never shares memory with another tensor.
- :func:`seed_gradient`: the starting gradient of ``backward()``, checked.
- :func:`one_pass`: the bookkeeping of one ``backward()`` call (which arrays
  were adopted), kept here so that any copy of the driver shares it.
"""

from __future__ import annotations

import contextlib

from minigrad.tensor import anomaly as _anomaly
from minigrad.tensor import bfloat16_compute as _bf16
from minigrad.tensor import events
from minigrad.tensor.backend import array_module, root_array
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.tensor import Tensor, VersionCounter, init_tensor

__all__ = ["input_gradients", "store_grad", "add_grad", "seed_gradient", "one_pass"]

# one entry per backward() call in progress: (ids of the arrays adopted as a .grad, the device of the pass)
_passes: list[tuple[set[int], object]] = []


@contextlib.contextmanager
def one_pass(device):
    """The extent of one ``backward()`` call on ``device``."""
    _passes.append((set(), device))
    try:
        yield
    finally:
        _passes.pop()


def input_gradients(node, grad) -> tuple:
    """``node.backward(grad)`` as a tuple with one gradient (or None) per entry of ``node._parents``.

    Checks what the op returned (the count, and each gradient's shape against
    its input's) and raises an error naming the op. bfloat16 nodes (and float16
    ones that accumulate) run in float32 (:mod:`.bfloat16_compute`); under ``detect_anomaly()`` NaN/Inf is
    named at the op that made it.
    """
    device = None
    if events.node_backward or events.node_returned:  # the device of the node's output, else the pass's
        device = node._device or (_passes[-1][1] if _passes else None)
        for listener in events.node_backward:
            listener(node, grad, device)
    input_grads = node.backward(grad) if node._storage is None else _bf16.backward(node, grad)
    if type(input_grads) is not tuple:
        input_grads = (input_grads,)
    if _anomaly.enabled:
        _anomaly.check_backward(node, grad, input_grads)
    parents = node._parents
    if len(input_grads) != len(parents):
        raise RuntimeError(
            f"{node.name}: backward returned {len(input_grads)} gradients but forward had "
            f"{len(parents)} inputs; return one gradient (or None) per input"
        )
    for parent, g in zip(parents, input_grads):
        if not parent or g is None:
            continue
        if g.shape != parent.output_shape:
            raise ShapeError(
                f"{node.name}: backward returned a gradient of shape {tuple(g.shape)} for an input of "
                f"shape {tuple(parent.output_shape)}; a gradient must have its input's shape "
                f"(sum over broadcast dimensions with unbroadcast)"
            )
    for listener in events.node_returned:
        listener(node, grad, input_grads, device)
    return input_grads


def store_grad(tensor: Tensor, grad) -> None:
    """``tensor.grad = grad`` for a tensor without a gradient yet (in its dtype and layout; copied only if shared)."""
    grad = _checked(tensor, grad)
    if tensor._data.flags.c_contiguous and not grad.flags.c_contiguous:
        # as in PyTorch, a gradient takes its leaf's layout: optimizer updates then run over
        # matching memory (mixing C- and Fortran-ordered operands makes them several times slower)
        grad = array_module(grad).ascontiguousarray(grad)
    data = _own(grad)
    tensor._grad = init_tensor(Tensor.__new__(Tensor), data, tensor._device, False, None, VersionCounter(), None)
    for listener in events.grad_stored:
        listener(tensor, data)


def add_grad(tensor: Tensor, grad) -> None:
    """``tensor.grad += grad``, in place (the same buffer; its version counter moves)."""
    grad = _checked(tensor, grad)
    current = tensor._grad
    current._data += grad
    current._version_counter.value += 1


# --------------------------------------------------------------------------- internals


def _checked(tensor: Tensor, grad):
    if _anomaly.enabled:
        _anomaly.check_leaf_gradient(tensor, grad)
    if grad.dtype != tensor._data.dtype:
        grad = grad.astype(tensor._data.dtype)
    if grad.shape != tensor._data.shape:
        raise ShapeError(f"AccumulateGrad: gradient of shape {grad.shape} for a leaf of shape {tensor.shape}")
    return grad


def _own(array):
    """``array`` itself if this pass made it and nobody else holds it, otherwise a copy."""
    if not _passes:  # called outside backward(): nothing tells which arrays were adopted already
        return array.copy()
    adopted = _passes[-1][0]
    root = array if array.base is None else root_array(array)
    if id(root) not in adopted and getattr(array.flags, "writeable", True) and root.flags.owndata:
        adopted.add(id(root))
        return array
    return array.copy()


def seed_gradient(tensor: Tensor, gradient):
    """The array the backward pass starts from: 1 for a one-element ``tensor``, else ``gradient``, checked."""
    data = tensor._data
    if gradient is None:
        if data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs, this one has shape "
                f"{tensor.shape}. Reduce it to a scalar first (loss = out.sum() or out.mean()), or pass "
                f"gradient=d(final)/d(out) with the same shape"
            )
        seed = array_module(data).ones(data.shape, dtype=data.dtype)
        for listener in events.array_made:
            listener(seed, tensor._device)
        return seed
    if not isinstance(gradient, Tensor):
        gradient = Tensor(gradient, dtype=tensor.dtype, device=tensor.device)
    if gradient.shape != tensor.shape:
        raise ShapeError(
            f"backward: gradient has shape {gradient.shape} but the tensor has shape {tensor.shape}; "
            f"they must match"
        )
    if gradient.device is not tensor.device:
        raise ShapeError(f"backward: gradient is on {gradient.device} but the tensor is on {tensor.device}")
    seed = gradient._data.astype(data.dtype, copy=True)
    for listener in events.array_made:
        listener(seed, tensor._device)
    return seed
