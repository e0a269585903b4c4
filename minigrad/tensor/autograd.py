"""The backward pass: walk the graph from the output to the leaves, applying the chain rule.

``loss.backward()`` does three things:

1. order the graph's nodes so that each node comes after every node it was
   computed from (a topological order, found iteratively so deep graphs do not
   hit Python's recursion limit);
2. visit them in *reverse* order, starting with d(loss)/d(loss) = 1: each node
   turns the gradient of its output into gradients of its inputs
   (``node.backward(grad)``); gradients arriving at a node from several
   consumers are added up before it is visited;
3. at the leaves, ``AccumulateGrad`` adds the result into ``leaf.grad``.

Invariants
- A node is visited once per backward call, after all its consumers.
- Leaves accumulate: ``.grad`` keeps growing across backward calls until
  you reset it (``x.grad = None`` or ``optimizer.zero_grad()``).
- Unless ``retain_graph=True``, each visited node drops its saved tensors;
  a second backward through it raises.
- A gradient stored in ``.grad`` never shares memory with another tensor:
  a fresh array made during the pass is adopted as is, anything else is copied.
"""

from __future__ import annotations

from minigrad.tensor import anomaly as _anomaly
from minigrad.tensor import bfloat16_compute as _bf16
from minigrad.tensor import grad_rules, hooks
from minigrad.tensor.backend import array_module
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import AccumulateGrad
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = ["backward", "topological_order"]


def topological_order(root) -> list:
    """Every node reachable from ``root`` through ``_parents``, each listed after all of its parents.

    Iterative depth-first search with an explicit stack of ``(node, parents_done)``
    pairs, like ``minigrad.scalar.topological_order``. Parents that are falsy
    (``None`` for inputs that need no gradient, ``NOT_A_TENSOR`` for plain
    arguments) are skipped. The rule lives in :mod:`.grad_rules` (exercise 4.5).
    """
    return grad_rules.topological_order(root)


def backward(tensor: Tensor, gradient=None, retain_graph: bool = False) -> None:
    """Compute d(tensor)/d(leaf) for every leaf that requires grad and add it to ``leaf.grad``.

    ``gradient`` is d(final)/d(tensor); it may be omitted only when ``tensor``
    has one element (a loss), where it is 1. ``retain_graph=True`` keeps the
    saved tensors so you can call backward through the same graph again.
    """
    if not tensor._requires_grad:
        raise RuntimeError(
            f"backward: this tensor (shape {tensor.shape}) does not require grad and has no grad_fn, so there "
            f"is nothing to differentiate. Create the inputs with requires_grad=True (and do not compute "
            f"the loss inside no_grad())"
        )
    seed = _seed(tensor, gradient)
    observed = bool(hooks.observers)  # report the gradients in flight as temporaries
    if observed:
        hooks.track(seed, hooks.TEMPORARY, tensor._device)
    root = tensor.grad_fn if tensor.grad_fn is not None else tensor._accumulate_grad_node()
    grads = {root: seed}
    adopted: set[int] = set()
    for node in reversed(grad_rules.topological_order(root)):
        grad = grads.pop(node, None)
        if grad is None:
            continue
        if type(node) is AccumulateGrad:
            leaf = node._variable()
            if leaf is not None:
                if _anomaly.enabled:
                    _anomaly.check_leaf_gradient(leaf, grad)
                _accumulate(leaf, grad, adopted)
            continue
        if node._retain is not None:
            kept = node._retain()
            if kept is not None:
                _accumulate(kept, grad, adopted)
        input_grads = node.backward(grad) if not node._bf16 else _bf16.backward(node, grad)
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
            if not parent or g is None:  # no gradient flows there (a constant, or requires_grad=False)
                continue
            if g.shape != parent.output_shape:
                raise ShapeError(
                    f"{node.name}: backward returned a gradient of shape {tuple(g.shape)} for an input of "
                    f"shape {tuple(parent.output_shape)}; a gradient must have its input's shape "
                    f"(sum over broadcast dimensions with unbroadcast)"
                )
            previous = grads.get(parent)
            grads[parent] = g if previous is None else previous + g
            if observed:  # a leaf's gradient usually becomes its .grad as is
                tag = hooks.GRADIENT if type(parent) is AccumulateGrad else hooks.TEMPORARY
                hooks.track(g, tag, node._device or tensor._device)
                hooks.track(grads[parent], tag, node._device or tensor._device)
        if not retain_graph:
            node._saved = None


def _seed(tensor: Tensor, gradient):
    data = tensor._data
    if gradient is None:
        if data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs, this one has shape "
                f"{tensor.shape}. Reduce it to a scalar first (loss = out.sum() or out.mean()), or pass "
                f"gradient=d(final)/d(out) with the same shape"
            )
        return array_module(data).ones(data.shape, dtype=data.dtype)
    if not isinstance(gradient, Tensor):
        gradient = Tensor(gradient, dtype=tensor.dtype, device=tensor.device)
    if gradient.shape != tensor.shape:
        raise ShapeError(
            f"backward: gradient has shape {gradient.shape} but the tensor has shape {tensor.shape}; "
            f"they must match"
        )
    if gradient.device is not tensor.device:
        raise ShapeError(f"backward: gradient is on {gradient.device} but the tensor is on {tensor.device}")
    return gradient._data.astype(data.dtype, copy=True)


def _own(array, adopted: set[int]):
    """``array`` itself if this pass made it and nobody else holds it, otherwise a copy."""
    root = array if array.base is None else hooks._root(array)
    if id(root) not in adopted and getattr(array.flags, "writeable", True) and root.flags.owndata:
        adopted.add(id(root))
        return array
    return array.copy()


def _accumulate(leaf: Tensor, grad, adopted: set[int]) -> None:
    """``leaf.grad += grad``, adopting ``grad`` without a copy the first time when it is safe."""
    if grad.dtype != leaf._data.dtype:
        grad = grad.astype(leaf._data.dtype)
    if grad.shape != leaf._data.shape:
        raise ShapeError(f"AccumulateGrad: gradient of shape {grad.shape} for a leaf of shape {leaf.shape}")
    current = leaf._grad
    if current is None:
        if leaf._data.flags.c_contiguous and not grad.flags.c_contiguous:
            # as in PyTorch, a gradient takes its leaf's layout: optimizer updates then run over
            # matching memory (mixing C- and Fortran-ordered operands makes them several times slower)
            grad = array_module(grad).ascontiguousarray(grad)
        leaf._grad = make_tensor(_own(grad, adopted), leaf._device, tag=hooks.GRADIENT)
        if hooks.observers:  # a gradient in flight adopted as .grad: it is a gradient now
            hooks.retag(leaf._grad._data, hooks.GRADIENT, (hooks.TEMPORARY,))
    else:
        current._data += grad
        current._version_counter.value += 1
