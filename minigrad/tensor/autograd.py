"""The backward pass: walk the graph from the output to the leaves, applying the chain rule (exercise 4.5).

``loss.backward()`` does three things:

1. order the graph's nodes so that each node comes after every node it was
   computed from (:func:`topological_order`: chapter 01's iterative sort,
   exercise 1.4, on tensor nodes);
2. visit them in *reverse* order, starting with d(loss)/d(loss) = 1: each node
   turns the gradient of its output into gradients of its inputs
   (:func:`input_gradients`); gradients arriving at a node from several
   consumers are added up before it is visited (:func:`run_backward`, the
   exercise);
3. at the leaves, the result is added into ``leaf.grad``.

Invariants
- A node is visited once per backward call, after all its consumers.
- Leaves accumulate: ``.grad`` keeps growing across backward calls until
  you reset it (``x.grad = None`` or ``optimizer.zero_grad()``). A non-leaf
  gets a ``.grad`` only if it called ``retain_grad()``.
- Unless ``retain_graph=True``, each visited node drops its saved tensors;
  a second backward through it raises.
- A gradient stored in ``.grad`` never shares memory with another tensor:
  a fresh array made during the pass is adopted as is, anything else is copied.
- Nothing here recurses: a graph tens of thousands of ops deep is fine.
"""

from __future__ import annotations

from minigrad.tensor import anomaly as _anomaly
from minigrad.tensor import bfloat16_compute as _bf16
from minigrad.tensor import hooks
from minigrad.tensor.backend import array_module
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import AccumulateGrad
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = ["backward", "topological_order", "run_backward", "input_gradients", "store_grad", "add_grad"]


def topological_order(root) -> list:
    """Every node reachable from ``root`` through ``_parents``, each listed after all of its parents; ``root`` last.

    Iterative depth-first search with an explicit stack of ``(node, parents_done)``
    pairs, as ``minigrad.scalar.topological_order`` (exercise 1.4). Parents that
    are falsy (``None`` for inputs that need no gradient, ``NOT_A_TENSOR`` for
    plain arguments) are skipped.
    """
    order = []
    visited = set()
    stack = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for parent in node._parents:
            if parent and parent not in visited:
                stack.append((parent, False))
    return order


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
    if hooks.observers:  # report the gradients in flight as temporaries
        hooks.track(seed, hooks.TEMPORARY, tensor._device)
    root = tensor.grad_fn if tensor.grad_fn is not None else tensor._accumulate_grad_node()
    _passes.append((set(), tensor._device))
    try:
        run_backward(root, seed, retain_graph)
    finally:
        _passes.pop()


def run_backward(root, seed, retain_graph: bool) -> None:
    """Send ``seed`` (d(final)/d(root's output)) backwards through the graph under ``root``.

    Nodes are ``t.grad_fn`` objects and the ``AccumulateGrad`` node of each leaf
    that requires grad. ``node._parents`` holds one entry per argument of the
    op's forward: the node that input came from, or a falsy value where no
    gradient flows (an input that needs none, a number, a dim).

    - Each node is visited once, after every node that consumed its output
      (the order is :func:`topological_order`'s, read backwards), with the
      *sum* of what all its consumers sent it: a tensor used twice gets both
      contributions. :func:`input_gradients` turns a node's gradient into one
      gradient (or None) per entry of ``_parents``.
    - A leaf's gradient ends in its ``.grad`` (``node.variable`` is the leaf,
      None if it no longer exists): the first gradient is stored
      (:func:`store_grad`), later ones, in this or a later backward call, are
      added to it (:func:`add_grad`). A non-leaf keeps its gradient in the same
      way only if it called ``retain_grad()``: then ``node._retain()`` returns it.
    - Unless ``retain_graph``, a visited node forgets what it saved (set its
      ``_saved`` to None), so its memory is freed; a second backward through
      it then raises the library's error.
    - No recursion: loops only, so a graph 20,000 ops deep works.
    """
    ### BEGIN SOLUTION 4.5 | keep a running sum of gradient per node; visit the nodes consumers-first; leaves (and retain_grad tensors) store or add their gradient; others pass theirs to their parents; free what was saved unless asked to keep it
    grads = {root: seed}  # node -> d(final)/d(its output), summed over the consumers visited so far
    for node in reversed(topological_order(root)):
        grad = grads.pop(node, None)
        if grad is None:  # no gradient flows through this node
            continue
        if type(node) is AccumulateGrad:
            receiver = node.variable  # the leaf
        elif node._retain is not None:
            receiver = node._retain()  # a non-leaf that called retain_grad()
        else:
            receiver = None
        if receiver is not None:
            if receiver.grad is None:
                store_grad(receiver, grad)
            else:
                add_grad(receiver, grad)
        if type(node) is AccumulateGrad:
            continue
        for parent, parent_grad in zip(node._parents, input_gradients(node, grad)):
            if parent and parent_grad is not None:
                earlier = grads.get(parent)
                grads[parent] = parent_grad if earlier is None else earlier + parent_grad
        if not retain_graph:
            node._saved = None
    ### END SOLUTION


# --------------------------------------------------------------------------- given helpers


def input_gradients(node, grad) -> tuple:
    """``node.backward(grad)`` as a tuple with one gradient (or None) per entry of ``node._parents``.

    Checks what the op returned (the count, and each gradient's shape against
    its input's) and raises an error naming the op. bfloat16 nodes run in
    float32 (:mod:`.bfloat16_compute`); under ``detect_anomaly()`` NaN/Inf is
    reported at the op that made it.
    """
    observed = bool(hooks.observers)
    if observed:  # a sum of gradients made by run_backward is reported when it is used
        device = node._device or (_passes[-1][1] if _passes else None)
        hooks.track(grad, hooks.TEMPORARY, device)
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
        if not parent or g is None:
            continue
        if g.shape != parent.output_shape:
            raise ShapeError(
                f"{node.name}: backward returned a gradient of shape {tuple(g.shape)} for an input of "
                f"shape {tuple(parent.output_shape)}; a gradient must have its input's shape "
                f"(sum over broadcast dimensions with unbroadcast)"
            )
        if observed:  # a leaf's gradient usually becomes its .grad as is
            tag = hooks.GRADIENT if type(parent) is AccumulateGrad else hooks.TEMPORARY
            hooks.track(g, tag, device)
    return input_grads


def store_grad(tensor: Tensor, grad) -> None:
    """``tensor.grad = grad`` for a tensor without a gradient yet (in its dtype and layout; copied only if shared)."""
    grad = _checked(tensor, grad)
    if tensor._data.flags.c_contiguous and not grad.flags.c_contiguous:
        # as in PyTorch, a gradient takes its leaf's layout: optimizer updates then run over
        # matching memory (mixing C- and Fortran-ordered operands makes them several times slower)
        grad = array_module(grad).ascontiguousarray(grad)
    tensor._grad = make_tensor(_own(grad), tensor._device, tag=hooks.GRADIENT)
    if hooks.observers:  # a gradient in flight adopted as .grad: it is a gradient now
        hooks.retag(tensor._grad._data, hooks.GRADIENT, (hooks.TEMPORARY,))


def add_grad(tensor: Tensor, grad) -> None:
    """``tensor.grad += grad``, in place (the same buffer; its version counter moves)."""
    grad = _checked(tensor, grad)
    current = tensor._grad
    current._data += grad
    current._version_counter.value += 1


# --------------------------------------------------------------------------- internals

# one entry per backward call in progress: (ids of the arrays adopted as a .grad, the device of the pass)
_passes: list[tuple[set[int], object]] = []


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
    if not _passes:  # called outside backward() (e.g. this module's copy, plugged in by use_exercise): play safe
        return array.copy()
    adopted = _passes[-1][0]
    root = array if array.base is None else hooks._root(array)
    if id(root) not in adopted and getattr(array.flags, "writeable", True) and root.flags.owndata:
        adopted.add(id(root))
        return array
    return array.copy()


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
