"""The backward pass: walk the graph from the output to the leaves, applying the chain rule (exercise 4.5).

``loss.backward()`` does three things:

1. order the graph's nodes so that each node comes after every node it was
   computed from (:func:`topological_order`: chapter 01's iterative sort,
   exercise 1.4, on tensor nodes);
2. visit them in *reverse* order, starting with d(loss)/d(loss) = 1: each node
   turns the gradient of its output into gradients of its inputs
   (``input_gradients``); gradients arriving at a node from several
   consumers are added up before it is visited (:func:`run_backward`, the
   exercise);
3. at the leaves, the result is added into ``leaf.grad``.

What is not the algorithm — checking what each ``backward`` returned, storing
a gradient into ``.grad`` without a needless copy, the seed's checks — is in
:mod:`.backward_steps`.

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

from minigrad.tensor import backward_steps, events
from minigrad.tensor.backward_steps import add_grad, input_gradients, store_grad
from minigrad.tensor.accumulate_grad import AccumulateGrad
from minigrad.tensor.tensor import Tensor

__all__ = ["backward", "topological_order", "run_backward"]


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
    if events.backward_began or events.backward_ended:
        for listener in events.backward_began:
            listener(tensor)
        try:
            _backward(tensor, gradient, retain_graph)
        finally:
            for listener in events.backward_ended:
                listener(tensor)
    else:
        _backward(tensor, gradient, retain_graph)


def _backward(tensor: Tensor, gradient, retain_graph: bool) -> None:
    seed = backward_steps.seed_gradient(tensor, gradient)
    root = tensor.grad_fn if tensor.grad_fn is not None else tensor._accumulate_grad_node()
    with backward_steps.one_pass(tensor._device):
        run_backward(root, seed, retain_graph)


def run_backward(root, seed, retain_graph: bool) -> None:
    """Send ``seed`` (d(final)/d(root's output)) backwards through the graph under ``root``.

    Nodes are ``t.grad_fn`` objects and the ``AccumulateGrad`` node of each leaf
    that requires grad. ``node._parents`` holds one entry per argument of the
    op's forward: the node that input came from, or a falsy value where no
    gradient flows (an input that needs none, a number, a dim).

    - Each node is visited once, after every node that consumed its output
      (the order is :func:`topological_order`'s, read backwards), with the
      *sum* of what all its consumers sent it: a tensor used twice gets both
      contributions. ``input_gradients(node, grad)`` turns a node's gradient
      into one gradient (or None) per entry of ``_parents``.
    - A leaf's gradient ends in its ``.grad`` (``node.variable`` is the leaf,
      None if it no longer exists): the first gradient is stored
      (``store_grad``), later ones, in this or a later backward call, are
      added to it (``add_grad``). A non-leaf keeps its gradient in the same
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
