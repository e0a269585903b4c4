"""Selective checkpointing: keep what the expensive ops saved, recompute what the cheap ones saved.

::

    y = checkpoint(block, x, context_fn=selective_checkpoint_context(save_expensive))

Plain checkpointing drops every tensor a block saved; selective
checkpointing lets a *policy* choose, op by op: ``policy(op_name)`` returns
``"save"`` (keep the tensors this op saved, as without checkpointing) or
``"recompute"`` (drop them; the recompute gives them back). The idea is
PyTorch 2.4's ``create_selective_checkpoint_contexts``; the default policy
:func:`save_expensive` keeps the saved tensors of ``matmul``, ``linear`` and
``conv2d`` and recomputes the rest (activations, normalisation, dropout),
whose tensors are many and cheap to make again.

How it fits :func:`~minigrad.checkpoint.checkpoint`: ``context_fn()`` gives
two context managers, entered inside the frame's saved-tensor hooks. Each
pushes its own pair of hooks on top, and listens to the core's ``op_ran``
event (:mod:`minigrad.tensor.events`), which fires right after an op's node
packed what it saved. The pack hook does not know which op is saving (the
core's hooks receive the tensor only), so it holds the tensor until
``op_ran`` names the op:

- first forward: for an op the policy saves, the tensor stays in its holder
  (a real tensor, as without checkpointing); otherwise it is handed to the
  frame's pack, which keeps a slot for the recompute to fill;
- recompute: for an op the policy saves, the recomputed tensor is dropped;
  otherwise it goes to the frame, in the same order as in the first forward.

So the frame sees exactly the "recompute" tensors, in order, both times, and
checks them as usual.

Invariants
- Gradients are those of the block without checkpointing, bit for bit: each
  saved tensor is either the first forward's or its recomputed equal.
- Memory: the "save" ops' saved tensors live until backward, the others are
  freed after forward. A buffer saved by both kinds of op (a ReLU's output
  that the next linear also saves) is kept, and not recomputed as well: the
  first run settles each saved tensor's fate when it ends, and the recompute
  gives each of its saved tensors the fate of its first-run twin at once.
- Time: the recompute still runs the whole block (the outputs of the saved
  ops are needed downstream). PyTorch also skips re-running the saved ops by
  caching their outputs; this version does not, so it buys memory only.
- A tensor packed outside any op (the inputs of a checkpoint nested in the
  block) is kept, in both runs alike.
"""

from __future__ import annotations

from minigrad.tensor import events, saved_tensors_hooks
from minigrad.tensor.backend import root_array
from minigrad.tensor import saved_tensors as _saved_tensors

__all__ = ["selective_checkpoint_context", "save_expensive", "SAVE", "RECOMPUTE", "EXPENSIVE_OPS"]

SAVE, RECOMPUTE = "save", "recompute"

#: the ops whose saved tensors :func:`save_expensive` keeps: those that cost O(n^3)-ish to run again
EXPENSIVE_OPS = frozenset({"matmul", "linear", "conv2d"})


def save_expensive(op_name: str) -> str:
    """The default policy: ``"save"`` for matmul, linear and conv2d, ``"recompute"`` for every other op."""
    return SAVE if op_name in EXPENSIVE_OPS else RECOMPUTE


def selective_checkpoint_context(policy=save_expensive):
    """A ``context_fn`` for :func:`checkpoint` that keeps the saved tensors of the ops ``policy(op_name)`` saves."""
    if not callable(policy):
        raise TypeError(
            f"selective_checkpoint_context: policy must be a callable op_name -> 'save' | 'recompute', "
            f"got {policy!r}; e.g. save_expensive"
        )

    def context_fn():
        fates: list[bool] = []  # per decided saved tensor, in save order: does it go to the frame (be recomputed)?
        return _Selection(policy, True, fates), _Selection(policy, False, fates)

    return context_fn


class _Held:
    """What a node of a selective block keeps: the tensor (saved) or what the frame packed (recomputed)."""

    __slots__ = ("tensor", "packed")

    def __init__(self, tensor) -> None:
        self.tensor, self.packed = tensor, None


class _Selection:
    """The hooks of one run (first forward or recompute) of one selective block; see the module docstring."""

    def __init__(self, policy, first_run: bool, fates: list) -> None:
        self.policy, self.first_run, self.fates = policy, first_run, fates
        self.pending: list[_Held] = []
        self.decided: list[tuple[_Held, str]] = []  # first run: in save order, settled when the run ends
        self.seen = 0  # recompute: how many saved tensors it decided so far

    def __enter__(self) -> "_Selection":
        if not _saved_tensors.stack:
            raise RuntimeError(
                "selective_checkpoint_context: its contexts work inside checkpoint only; pass it as "
                "checkpoint(fn, x, context_fn=selective_checkpoint_context(policy))"
            )
        self.frame_pack, self.frame_unpack = _saved_tensors.stack[-1]
        self.hooks = saved_tensors_hooks(self.pack, self.unpack)
        self.hooks.__enter__()
        self.listening = events.listen("op_ran", self.op_ran)
        self.seen = 0
        return self

    def __exit__(self, kind, error, tb) -> None:
        self.listening.remove()
        self.hooks.__exit__(kind, error, tb)
        if kind is None and self.first_run:
            self._settle()
        self.hooks, self.pending, self.decided = None, [], []  # unresolved holders stay with their nodes

    def _settle(self) -> None:
        """First run: hand the "recompute" tensors to the frame, in save order - except those a "save" op saved
        too (a ReLU's output that the next linear keeps): that buffer is kept, and must not be made twice."""
        kept = {_buffer(held.tensor) for held, decision in self.decided if decision == SAVE}
        for held, decision in self.decided:
            to_frame = decision == RECOMPUTE and _buffer(held.tensor) not in kept
            self.fates.append(to_frame)
            if to_frame:
                held.packed = self.frame_pack(held.tensor)
                held.tensor = None

    def pack(self, t) -> _Held:
        held = _Held(t)
        self.pending.append(held)
        return held

    def unpack(self, held: _Held):
        return held.tensor if held.tensor is not None else self.frame_unpack(held.packed)

    def op_ran(self, cls, node, out, device) -> None:
        if not self.pending or node is None:
            return
        mine = {id(s) for s in node._saved or ()}
        resolved = [h for h in self.pending if id(h) in mine]
        if not resolved:
            return
        self.pending = [h for h in self.pending if id(h) not in mine]
        decision = self.policy(cls.op)
        if decision not in (SAVE, RECOMPUTE):
            raise ValueError(
                f"selective_checkpoint_context: the policy returned {decision!r} for op {cls.op!r}; "
                f"it must return {SAVE!r} or {RECOMPUTE!r}"
            )
        if self.first_run:
            self.decided.extend((held, decision) for held in resolved)
            return
        for held in resolved:  # the recompute: each saved tensor meets its first-run twin's fate, at once
            to_frame = self.fates[self.seen] if self.seen < len(self.fates) else True  # extra: the frame's check says so
            self.seen += 1
            if to_frame:
                held.packed = self.frame_pack(held.tensor)
            held.tensor = None  # kept ones: the first forward's tensor is used


def _buffer(t) -> int:
    """The id of the buffer behind tensor ``t`` (its views share it)."""
    return id(root_array(t._data))
