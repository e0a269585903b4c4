"""``checkpoint(fn, *args)``: run a block keeping only its inputs, and run it again during backward.

As ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, built on the
core's saved-tensor hooks (:mod:`minigrad.tensor.saved_tensors`)::

    y = checkpoint(block, x)     # block's ops keep small slots, not their saved tensors
    y.sum().backward()           # the first slot backward reads runs block(x) again and fills them all

Invariants
- The graph is the ordinary one: every op of ``fn`` records its node as
  usual; only what the nodes *saved* is replaced, by a :class:`_Slot` (its
  index in the order the ops saved). The block's activations are freed as
  soon as forward moves on; the frame keeps ``args`` and ``kwargs``.
- The first unpack recomputes ``fn`` once, on detached copies of the tensor
  arguments (each requiring grad as the original did), with grad mode on,
  the RNG states and the autocast modes of the first run; the tensors that
  run saves, in the same order, fill the slots. Nothing is backpropagated
  through the recomputed graph: the original nodes use its saved tensors.
- ``determinism_check="default"``: each recomputed saved tensor must have the
  shape, dtype and device of the one it replaces, else :class:`CheckpointError`.
- A slot is handed out once per backward and then dropped, so memory goes
  back down while backward walks through the block.
- Outside grad mode ``checkpoint`` just calls ``fn``: nothing would be saved.
"""

from __future__ import annotations

from minigrad.amp import autocast_state
from minigrad.amp.autocast import autocast
from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint.rng_states import capture_rng, restored_rng
from minigrad.tensor import Tensor, enable_grad, is_grad_enabled, saved_tensors_hooks

__all__ = ["checkpoint"]

_DETERMINISM_CHECKS = ("default", "none")


class _Slot:
    """What a checkpointed op keeps instead of a saved tensor: its frame and its place in the save order."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: "_Frame", index: int) -> None:
        self.frame = frame
        self.index = index


class _Frame:
    """One call of a checkpointed block: how to run it again, and the tensors its ops saved (metadata first)."""

    def __init__(self, fn, args, kwargs, preserve_rng_state: bool, determinism_check: str, recompute_context) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng = capture_rng(args) if preserve_rng_state else None
        self.autocast = {device: autocast_state.mode(device) for device in ("cpu", "cuda")}
        self.determinism_check = determinism_check
        self.recompute_context = recompute_context
        self.versions = [a._version_counter.value if isinstance(a, Tensor) else None for a in args]
        self.meta: list[tuple] = []  # (shape, dtype, device) of each saved tensor, in save order
        self.recomputed: dict[int, Tensor] | None = None
        self.recomputations = 0

    # ------------------------------------------------------------- the first forward

    def pack(self, t: Tensor) -> _Slot:
        self.meta.append((t.shape, t.dtype, t.device))
        return _Slot(self, len(self.meta) - 1)

    # ------------------------------------------------------------- backward

    def unpack(self, slot: _Slot) -> Tensor:
        if self.recomputed is None or slot.index not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(slot.index)

    def _recompute(self) -> None:
        self._check_inputs_unchanged()
        saved: list[Tensor] = []

        def keep(t: Tensor) -> Tensor:
            saved.append(t)
            return t

        inputs = tuple(_detached(a) for a in self.args)
        with restored_rng(self.rng), _autocast_as(self.autocast), enable_grad(), \
                saved_tensors_hooks(keep, _unchanged), self.recompute_context():
            self.fn(*inputs, **self.kwargs)
        self.recomputations += 1
        if self.determinism_check == "default":
            self._check_same(saved)
        self.recomputed = dict(enumerate(saved))

    def _check_inputs_unchanged(self) -> None:
        for position, (a, version) in enumerate(zip(self.args, self.versions)):
            if version is not None and a._version_counter.value != version:
                raise RuntimeError(
                    f"checkpoint: input {position} of {_name(self.fn)} (shape {tuple(a.shape)}) was modified in "
                    f"place after the checkpointed forward (version {version} -> {a._version_counter.value}); "
                    "the recompute would see different values: clone it before changing it"
                )

    def _check_same(self, saved: list[Tensor]) -> None:
        if len(saved) != len(self.meta):
            raise CheckpointError(
                f"checkpoint: recomputing {_name(self.fn)} saved {len(saved)} tensors for backward, the first "
                f"forward saved {len(self.meta)}: the block must run the same ops each time it is called "
                "(no branching on state that changes between forward and backward)"
            )
        for index, (t, (shape, dtype, device)) in enumerate(zip(saved, self.meta)):
            if (t.shape, t.dtype, t.device) != (shape, dtype, device):
                raise CheckpointError(
                    f"checkpoint: recomputing {_name(self.fn)} gave saved tensor {index} with shape "
                    f"{tuple(t.shape)}, {t.dtype}, on {t.device}; the first forward saved shape {tuple(shape)}, "
                    f"{dtype}, on {device}. The block must compute the same thing when run again; pass "
                    "determinism_check='none' only if you know why they differ"
                )


def checkpoint(fn, *args, preserve_rng_state: bool = True, determinism_check: str = "default",
               context_fn=None, **kwargs):
    """``fn(*args, **kwargs)``, keeping only the arguments for backward and recomputing ``fn`` there.

    ``context_fn()`` returns two context managers, ``(forward_context, recompute_context)``, entered around
    the first run and the recompute (selective checkpointing uses them); default: neither does anything.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: expected a callable block first, got {type(fn).__name__}")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"checkpoint: determinism_check must be one of {_DETERMINISM_CHECKS}, got {determinism_check!r}")
    if not is_grad_enabled():
        return fn(*args, **kwargs)
    forward_context, recompute_context = context_fn() if context_fn is not None else (_Nothing(), _Nothing())
    frame = _Frame(fn, args, kwargs, preserve_rng_state, determinism_check, lambda: recompute_context)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- helpers


def _detached(a):
    if isinstance(a, Tensor):
        return a.detach().requires_grad_(a.requires_grad)
    return a


def _unchanged(t):
    return t


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class _autocast_as:
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


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
