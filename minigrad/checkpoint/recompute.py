"""``checkpoint(fn, *args)``: run a block keeping only its inputs, and run it again during backward.

As ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, built on the
core's saved-tensor hooks (:mod:`minigrad.tensor.saved_tensors`)::

    y = checkpoint(block, x)     # block's ops keep small slots, not their saved tensors
    y.sum().backward()           # the first slot backward reads runs block(x) again and fills them all

Invariants
- The graph is the ordinary one: every op of ``fn`` records its node as
  usual (so parameters used inside ``fn`` get gradients even when no input
  requires grad); only what the nodes *saved* is replaced, by a
  :class:`_Slot` (its index in the order the ops saved). The block's
  activations are freed as soon as forward moves on.
- The frame keeps the tensor arguments (positional and keyword) the way a
  node keeps a saved tensor: through the saved-tensor hooks active around
  the call, if any. So a checkpoint nested in another keeps its inputs as a
  slot of the outer one, and the outer block's activations are not held.
  Other arguments (numbers, strings, containers) are kept as they are.
- The first unpack of a backward recomputes ``fn`` once, on detached copies
  of the tensor arguments (each requiring grad as the original did), with
  grad mode on, the RNG states and the autocast modes of the first run, and
  every module's buffers put back after it runs (:mod:`.batchnorm_stats`:
  a recompute does not update BatchNorm's running statistics a second time).
  The tensors that run saves, in the same order, fill the slots. Nothing is
  backpropagated through the recomputed graph: the original nodes use its
  saved tensors.
- A slot is handed out once and then dropped, so memory goes back down while
  backward walks through the block; the next backward through the block
  (``retain_graph=True``) recomputes it again. A backward that reads only
  some slots (a backward from one output of several) leaves the others
  filled for a later one.
- Before recomputing, each tensor argument's version counter is compared with
  its value at the call: an argument modified in place since raises.
- ``determinism_check="default"``: each recomputed saved tensor must have the
  shape, dtype and device of the one it replaces, else :class:`CheckpointError`.
- :func:`count_recomputes` counts recomputes (``frame.recomputations`` counts
  one block's); exactly one per block per backward.
- Outside grad mode ``checkpoint`` just calls ``fn``: nothing would be saved.

Not thread-safe: the core's saved-tensor hook stack, the module hooks the
recompute installs and the recompute counters are process-wide, so run
checkpointed blocks from one thread at a time (PyTorch's are thread-local).
"""

from __future__ import annotations

from minigrad.amp import autocast_state
from minigrad.amp.autocast import autocast
from minigrad.checkpoint.batchnorm_stats import buffers_put_back
from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint import rng_states  # called through the module: use_exercise("10.2") swaps its functions
from minigrad.memory.listeners import kept_for_backward
from minigrad.tensor import Tensor, enable_grad, is_grad_enabled, saved_tensors_hooks
from minigrad.tensor import saved_tensors as _saved_tensors
from minigrad.tensor.tensor import make_tensor

__all__ = ["checkpoint", "count_recomputes", "RecomputeCount", "autocast_modes", "autocast_as", "block_name",
           "detached", "unchanged"]

_DETERMINISM_CHECKS = ("default", "none")


class _Slot:
    """What a checkpointed op keeps instead of a saved tensor: its frame and its place in the save order."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: "_Frame", index: int) -> None:
        self.frame = frame
        self.index = index


def _unpack_slot(slot: _Slot) -> Tensor:
    """The unpack hook the block's nodes keep: it reaches the frame through the slot only, so the frame (and the
    inputs it keeps) lives exactly as long as some node still holds one of its slots."""
    return slot.frame.unpack(slot)


class _KeptInput:
    """One tensor argument of a checkpointed call: packed like a saved tensor, with its version at the call."""

    __slots__ = ("packed", "unpack", "requires_grad", "device", "counter", "version", "shape")

    def __init__(self, a: Tensor) -> None:
        t = a.detach()
        if _saved_tensors.stack:  # inside another checkpoint (or offload): keep it as that one keeps tensors
            pack, self.unpack = _saved_tensors.stack[-1]
            self.packed = pack(t)
        else:
            self.packed, self.unpack = t, None
            kept_for_backward(a, "checkpoint")  # the memory stage counts what the frame keeps as an activation
        self.requires_grad, self.device = a.requires_grad, a._device
        self.counter, self.version, self.shape = a._version_counter, a._version_counter.value, tuple(a.shape)

    def value(self) -> Tensor:
        """A fresh leaf with the argument's data, requiring grad as the argument did."""
        t = self.packed if self.unpack is None else self.unpack(self.packed)
        if not isinstance(t, Tensor):  # an unpack hook may hand back an array
            t = make_tensor(t, self.device)
        return t.detach().requires_grad_(self.requires_grad)


class _Frame:
    """One call of a checkpointed block: how to run it again, and the tensors its ops saved (metadata first)."""

    def __init__(self, fn, args, kwargs, preserve_rng_state: bool, determinism_check: str, recompute_context,
                 restore_buffers: bool) -> None:
        self.fn = fn
        self.args = tuple(_KeptInput(a) if isinstance(a, Tensor) else a for a in args)
        self.kwargs = {k: _KeptInput(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
        self.rng = rng_states.capture_rng([*args, *kwargs.values()]) if preserve_rng_state else None
        self.autocast = autocast_modes()
        self.determinism_check = determinism_check
        self.recompute_context = recompute_context
        self.restore_buffers = restore_buffers
        self.meta: list[tuple] = []  # (shape, dtype, device) of each saved tensor, in save order
        self.recomputed: dict[int, Tensor] = {}
        self.recomputations = 0

    # ------------------------------------------------------------- the first forward

    def pack(self, t: Tensor) -> _Slot:
        self.meta.append((t.shape, t.dtype, t.device))
        return _Slot(self, len(self.meta) - 1)

    # ------------------------------------------------------------- backward

    def unpack(self, slot: _Slot) -> Tensor:
        if slot.index not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(slot.index)

    def _recompute(self) -> None:
        self._check_inputs_unchanged()
        saved: list[Tensor] = []

        def keep(t: Tensor):
            saved.append(t)
            return t._data  # the recomputed node keeps the array, as a node does without hooks

        args = tuple(a.value() if isinstance(a, _KeptInput) else a for a in self.args)
        kwargs = {k: v.value() if isinstance(v, _KeptInput) else v for k, v in self.kwargs.items()}
        with rng_states.restored_rng(self.rng), autocast_as(self.autocast), enable_grad(), \
                buffers_put_back(self.restore_buffers), saved_tensors_hooks(keep, unchanged), \
                self.recompute_context():
            self.fn(*args, **kwargs)
        self.recomputations += 1
        for counter in tuple(_counters):
            counter._saw(self)
        if self.determinism_check == "default":
            self._check_same(saved)
        self.recomputed = dict(enumerate(saved))

    def _check_inputs_unchanged(self) -> None:
        kept = [(str(i), a) for i, a in enumerate(self.args)] + [(repr(k), v) for k, v in self.kwargs.items()]
        for position, a in kept:
            if isinstance(a, _KeptInput) and a.counter.value != a.version:
                raise RuntimeError(
                    f"checkpoint: input {position} of {block_name(self.fn)} (shape {a.shape}) was modified in "
                    f"place after the checkpointed forward (version {a.version} -> {a.counter.value}); "
                    "the recompute would see different values: clone it before changing it"
                )

    def _check_same(self, saved: list[Tensor]) -> None:
        if len(saved) != len(self.meta):
            raise CheckpointError(
                f"checkpoint: recomputing {block_name(self.fn)} saved {len(saved)} tensors for backward, the first "
                f"forward saved {len(self.meta)}: the block must run the same ops each time it is called "
                "(no branching on state that changes between forward and backward)"
            )
        for index, (t, (shape, dtype, device)) in enumerate(zip(saved, self.meta)):
            if (t.shape, t.dtype, t.device) != (shape, dtype, device):
                raise CheckpointError(
                    f"checkpoint: recomputing {block_name(self.fn)} gave saved tensor {index} with shape "
                    f"{tuple(t.shape)}, {t.dtype}, on {t.device}; the first forward saved shape {tuple(shape)}, "
                    f"{dtype}, on {device}. The block must compute the same thing when run again; pass "
                    "determinism_check='none' only if you know why they differ"
                )


def checkpoint(fn, *args, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
               determinism_check: str = "default", context_fn=None, restore_buffers: bool = True, **kwargs):
    """``fn(*args, **kwargs)``, keeping only the arguments for backward and recomputing ``fn`` there.

    ``context_fn()`` returns two context managers, ``(forward_context, recompute_context)``, entered around
    the first run and the recompute (selective checkpointing uses them); default: neither does anything.
    ``restore_buffers`` (a minigrad addition, on by default) puts every module's buffers back after it runs
    in the recompute, so BatchNorm's running statistics are updated once, as without checkpointing.
    ``use_reentrant`` may be None or False: this is the non-reentrant checkpoint.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: expected a callable block first, got {type(fn).__name__}")
    if use_reentrant not in (None, False):
        raise ValueError(
            f"checkpoint: use_reentrant={use_reentrant!r}; this checkpoint is the non-reentrant one "
            "(PyTorch's recommended variant): pass use_reentrant=False or leave it out"
        )
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"checkpoint: determinism_check must be one of {_DETERMINISM_CHECKS}, got {determinism_check!r}")
    if not is_grad_enabled():
        return fn(*args, **kwargs)
    contexts = context_fn() if context_fn is not None else (_Nothing(), _Nothing())
    if not (isinstance(contexts, tuple) and len(contexts) == 2):
        raise TypeError(
            f"checkpoint: context_fn() must return a pair (forward_context, recompute_context), got "
            f"{type(contexts).__name__}; selective_checkpoint_context(policy) makes one"
        )
    forward_context, recompute_context = contexts
    frame = _Frame(fn, args, kwargs, preserve_rng_state, determinism_check, lambda: recompute_context,
                   restore_buffers)
    with saved_tensors_hooks(frame.pack, _unpack_slot), forward_context:
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- counting recomputes

_counters: list["RecomputeCount"] = []


class RecomputeCount:
    """What :func:`count_recomputes` yields: ``count`` recomputes so far, ``blocks`` the name of each block run again."""

    def __init__(self) -> None:
        self.count = 0
        self.blocks: list[str] = []

    def _saw(self, frame: _Frame) -> None:
        self.count += 1
        self.blocks.append(block_name(frame.fn))

    def __enter__(self) -> "RecomputeCount":
        _counters.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _counters.remove(self)


def count_recomputes() -> RecomputeCount:
    """``with count_recomputes() as n: loss.backward()`` -> ``n.count`` recomputes of checkpointed blocks ran."""
    return RecomputeCount()


# --------------------------------------------------------------------------- helpers


def detached(a):
    """A tensor argument as a fresh leaf with its data, requiring grad as it did; anything else as it is."""
    return a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a


def unchanged(t):
    return t


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def autocast_modes() -> dict:
    """This thread's autocast mode for each device type (None where no region is open), for :class:`autocast_as`."""
    return {device: autocast_state.mode(device) for device in ("cpu", "cuda")}


class autocast_as:
    """Enter, for each device type, an autocast region reproducing the mode of the first forward (or off)."""

    def __init__(self, modes: dict) -> None:
        self.regions = [
            autocast(device, dtype=mode.dtype, enabled=mode.enabled, cache_enabled=mode.cache_enabled)
            if mode is not None else autocast(device, enabled=False)
            for device, mode in modes.items()
        ]

    def __enter__(self):
        for region in self.regions:
            region.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for region in reversed(self.regions):
            region.__exit__(*exc)


def block_name(fn) -> str:
    """How errors and recompute counts name a block: its qualified name, else its type's."""
    return getattr(fn, "__qualname__", None) or type(fn).__name__
