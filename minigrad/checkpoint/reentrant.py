"""``checkpoint_reentrant(fn, *args)``: a checkpointed block as one :class:`~minigrad.tensor.Function` (exercise 10.1).

PyTorch's first checkpoint, ``checkpoint(..., use_reentrant=True)``, is a
custom autograd Function: the whole block becomes **one node** of the graph.
Its forward runs the block without recording anything and keeps only the
block's inputs; its backward runs the block again, this time recording, and
backpropagates the incoming gradient through that fresh graph::

    y = checkpoint_reentrant(block, x)    # one CheckpointFunctionBackward node; block's activations freed at once
    y.sum().backward()                    # its backward: block(x) again, then a backward() inside the backward

The backward calls ``backward()`` while the outer ``backward()`` is running:
the engine is re-entered, hence the name. ``checkpoint(fn, *args)``
(:mod:`.recompute`, PyTorch's ``use_reentrant=False``) keeps the block's
own nodes instead and only swaps what they saved.

Invariants
- Forward keeps the argument values (the input arrays, and the plain values
  such as a ``float``) and the random-number states from *before* the
  block's first run; the block's own activations are never saved: it runs
  under ``no_grad()``.
- Backward runs the block exactly once, on fresh leaves sharing the input
  arrays (each requiring grad where the argument did), with grad mode on,
  from the first run's random states (dropout draws the same mask) and
  autocast modes, then sends the incoming gradient through the recomputed
  graph. The inputs' gradients are what that backward left in the leaves'
  ``.grad``; parameters used in the block get theirs from it directly.
- The recompute puts every module's buffers back after it runs it
  (:mod:`.batchnorm_stats`): BatchNorm counts each batch once, as without
  the checkpoint.
- Generators outside the block are left where backward found them.

Limits (PyTorch documents the same for its reentrant variant)
- Gradients flow only through the node, and the node is recorded only if an
  argument requires grad: with no such argument, parameters used inside the
  block get no gradient (a warning says so; ``checkpoint`` has no such limit).
- Only ``backward()``: the node's backward sees arrays, so there are no
  higher-order gradients through it.
- The block returns one tensor; tensors must be direct arguments (inside a
  list or dict they would not be inputs of the node: refused); no keyword
  arguments.
- minigrad only: no float16 or bfloat16 tensor arguments (the core computes a
  Function whose operands are all 16-bit in float32: the recompute would run
  on widened copies); ``checkpoint`` takes them.
- Module buffers are put back after the recompute; other state a block
  changes when it runs (a Python counter, a list it appends to) changes
  again in the recompute.
"""

from __future__ import annotations

import warnings

from minigrad.checkpoint import rng_states
from minigrad.checkpoint.batchnorm_stats import buffers_put_back
from minigrad.checkpoint.recompute import autocast_as, autocast_modes, block_name
from minigrad.tensor import Function, Tensor, bfloat16, enable_grad, float16, is_grad_enabled, no_grad
from minigrad.tensor.backend import root_array
from minigrad.tensor.tensor import make_tensor

__all__ = ["checkpoint_reentrant", "CheckpointFunction"]


class _Call:
    """One call of a checkpointed block: ``fn``, where its tensor arguments live, and the autocast modes it ran under.

    A Function's ``forward`` and ``backward`` see backend arrays; ``fn`` wants
    tensors. ``arguments(values)`` turns the values ``forward`` received (an
    array where a tensor was, the plain value elsewhere) back into ``fn``'s
    arguments. It keeps no array itself: what survives until backward is what
    the node saves.
    """

    def __init__(self, fn, args, preserve_rng_state: bool) -> None:
        self.fn = fn
        self.preserve_rng_state = preserve_rng_state
        # per argument: (device, requires_grad, version counter) of a tensor, None for a plain value
        self.tensors = [(a._device, a._requires_grad, a._version_counter) if isinstance(a, Tensor) else None
                        for a in args]
        self.autocast_modes = autocast_modes()

    def arguments(self, values, requiring_grad: bool = False) -> tuple:
        """``fn``'s arguments from ``values`` (one per argument of the call, plain values included).

        Each array becomes a tensor on its argument's device, sharing the array and its version counter; with
        ``requiring_grad`` each is a fresh leaf that requires grad where the argument did, so a backward through
        what ``fn`` computes from them leaves the argument's gradient in its ``.grad``. Without, none requires grad.
        """
        values = tuple(values)
        if len(values) != len(self.tensors):
            shown = ", ".join("tensor" if t is not None else "plain value" for t in self.tensors)
            raise ValueError(
                f"checkpoint_reentrant: {len(values)} values for a call of {block_name(self.fn)} with "
                f"{len(self.tensors)} arguments ({shown}); give one value per argument of forward, in order, the "
                "plain values (numbers, strings, None) included"
            )
        return tuple(
            value if kind is None else make_tensor(value, kind[0], requiring_grad and kind[1], version=kind[2])
            for value, kind in zip(values, self.tensors)
        )

    def output(self, out, values):
        """The array of ``fn``'s output, checked: one tensor; a copy if it shares an input's buffer."""
        if not isinstance(out, Tensor):
            raise TypeError(
                f"checkpoint_reentrant: {block_name(self.fn)} returned {type(out).__name__}; the reentrant variant "
                "checkpoints a block that returns one tensor (stack several into one, or use checkpoint(fn, ...))"
            )
        data = out._data
        buffer = root_array(data)
        if any(kind is not None and root_array(value) is buffer for value, kind in zip(values, self.tensors)):
            data = data.copy()  # the node's output must not alias an input: it gets its own version counter
        return data

    def autocast(self):
        """The autocast modes of the first run, entered for each device type (a context manager)."""
        return autocast_as(self.autocast_modes)


class CheckpointFunction(Function):
    """The whole block as one node: ``forward(ctx, call, *values)``, ``values`` one per argument of the block."""

    op = "checkpoint"

    def forward(ctx, call, *values):
        """The block's output array, computed without a graph; keeps what the recompute needs and nothing more."""
        ### BEGIN SOLUTION 10.1 | the recompute will need the call, the random states the first run starts from (taken before it draws anything, only if call.preserve_rng_state) and every argument value; then one run of the block that records no graph, so none of its activations is kept
        ctx.call = call
        inputs = call.arguments(values)
        ctx.rng = rng_states.capture_rng(inputs) if call.preserve_rng_state else None
        ctx.save_for_backward(*values)
        with no_grad():
            out = call.fn(*inputs)
        return call.output(out, values)
        ### END SOLUTION

    def backward(ctx, grad):
        """``(None, d loss/d value, ...)``: one gradient (or None) per argument of ``forward``, from one recompute.

        ``grad`` (d loss/d output) is an array; ``Tensor.backward`` takes a tensor on the output's device.
        """
        ### BEGIN SOLUTION 10.1 | run the block once more on fresh leaves that require grad where the arguments did, recording this time, from the first run's random states and autocast modes, with the modules' buffers put back after (buffers_put_back: BatchNorm must not count the batch twice); send grad through what it returned; the leaves' gradients are the answer (None for the call and for plain values)
        leaves = ctx.call.arguments(ctx.saved_tensors, requiring_grad=True)
        with rng_states.restored_rng(ctx.rng), ctx.call.autocast(), enable_grad(), buffers_put_back():
            out = ctx.call.fn(*leaves)
        out.backward(make_tensor(grad, out.device))
        grads = [leaf.grad._data if isinstance(leaf, Tensor) and leaf.grad is not None else None for leaf in leaves]
        return (None, *grads)
        ### END SOLUTION


def checkpoint_reentrant(fn, *args, preserve_rng_state: bool = True, **kwargs):
    """``fn(*args)`` as one graph node that keeps only ``args`` and runs ``fn`` again in backward.

    ``preserve_rng_state``: recompute from the random states of the first run (False: from wherever the
    generators are then; dropout would draw another mask).
    """
    if not callable(fn):
        raise TypeError(f"checkpoint_reentrant: expected a callable block first, got {type(fn).__name__}")
    if kwargs:
        raise ValueError(
            f"checkpoint_reentrant: keyword arguments ({', '.join(sorted(kwargs))}) are not supported by the "
            "reentrant variant (as in PyTorch): pass them positionally, or use checkpoint(fn, ...)"
        )
    for position, a in enumerate(args):
        _check_argument(fn, position, a)
    if not is_grad_enabled():
        return fn(*args)
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn(
            f"checkpoint_reentrant: no argument of {block_name(fn)} requires grad, so the checkpoint records no node and "
            "the parameters used inside get no gradient (the reentrant variant's limit, as in PyTorch); pass an "
            "input that requires grad, or use checkpoint(fn, ...)",
            stacklevel=2,
        )
        with no_grad():
            return fn(*args)
    return CheckpointFunction.apply(_Call(fn, args, preserve_rng_state), *args)


def _check_argument(fn, position: int, a) -> None:
    if isinstance(a, Tensor):
        if a.dtype == float16 or a.dtype == bfloat16:
            raise TypeError(
                f"checkpoint_reentrant: argument {position} of {block_name(fn)} is a {a.dtype} tensor (shape "
                f"{tuple(a.shape)}); the reentrant variant takes float32/float64 (and integer) tensors, since "
                "minigrad computes a Function on 16-bit operands in float32; use checkpoint(fn, ...), or pass "
                "a float32 input and cast inside the block"
            )
        return
    if isinstance(a, (list, tuple, dict, set)):
        inner = a.values() if isinstance(a, dict) else a
        if any(isinstance(x, Tensor) for x in inner):
            raise TypeError(
                f"checkpoint_reentrant: argument {position} of {block_name(fn)} is a {type(a).__name__} holding "
                "tensors; the reentrant variant sees only tensors passed directly as arguments (no gradient would "
                "reach these): pass each tensor as its own argument"
            )


