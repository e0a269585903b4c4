"""Saved-tensor hooks: ``pack``/``unpack`` around everything ``save_for_backward`` keeps.

As ``torch.autograd.graph.saved_tensors_hooks``::

    def pack(t):                    # called when a recording op saves t for backward
        return t.numpy().tobytes()  # ... returns anything: kept by the node instead of t
    def unpack(packed):             # called when backward needs it again
        return mt.tensor(np.frombuffer(packed, ...)).reshape(...)  # a tensor equal to t

    with saved_tensors_hooks(pack, unpack):
        loss = model(x)             # every node built here keeps pack(t), not t
    loss.backward()                 # ... and calls unpack(packed) to get t back

This is what later stages stand on: checkpointing packs a placeholder and
recomputes the forward on unpack (see the test of that in
``tests/tensor/test_saved_tensor_hooks.py``), memory accounting packs to see
what backward keeps alive, offloading packs to another device.

Rules, as in PyTorch:

- the hooks apply to the nodes recorded inside the block, for their whole
  life: the node keeps the ``unpack`` it was packed with, so ``backward()``
  may run after the block;
- blocks nest; only the innermost pair of hooks is used;
- ``pack`` receives a tensor that does not require grad (a view of the saved
  buffer, no copy) and must not modify it in place; ``unpack`` must return a
  tensor (or backend array) with the saved tensor's shape and dtype, on its
  device;
- the version-counter check still runs: an in-place change, after the op, of
  an input or output that the op saved raises at backward, even if ``pack``
  made a copy.

The hooks see arrays that a node keeps through ``save_for_backward`` only;
plain numbers saved with them pass through untouched.
"""

from __future__ import annotations

from typing import Any, Callable

from minigrad.tensor.tensor import Tensor, VersionCounter, make_tensor

__all__ = ["saved_tensors_hooks"]

#: the active (pack, unpack) pairs, innermost last; read on the hot path by Function.apply
stack: list[tuple[Callable[[Tensor], Any], Callable[[Any], Any]]] = []


class saved_tensors_hooks:
    """Inside the ``with`` block, recording ops keep ``pack_hook(t)`` instead of each saved tensor ``t``.

    ``unpack_hook(packed)`` must give back a tensor equal to ``t`` (same shape,
    dtype and device) when backward needs it. Usable as a context manager only.
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Any]) -> None:
        for name, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise TypeError(f"saved_tensors_hooks: {name} must be callable, got {hook!r}")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        stack.pop()


def _is_buffer(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def pack_saved(ctx, device) -> None:
    """Replace ``ctx._saved`` by what the innermost pack hook returns for each saved array (called by ``apply``)."""
    pack, unpack = stack[-1]
    counters = {check[0]: check[1] for check in ctx._checks}
    packed, meta = [], []
    for index, array in enumerate(ctx._saved):
        if not _is_buffer(array):
            packed.append(array)
            meta.append(None)
            continue
        counter = counters.get(index)
        t = make_tensor(array, device, version=counter if counter is not None else VersionCounter())
        before = t._version_counter.value
        result = pack(t)
        if t._version_counter.value != before or t._data is not array:
            raise RuntimeError(
                f"{ctx.name}: a saved-tensor pack hook modified the tensor it was given (shape "
                f"{tuple(array.shape)}) in place; pack must leave it alone: copy it (t.clone()) if needed"
            )
        packed.append(result)
        meta.append((array.shape, array.dtype, device))
    ctx._saved = tuple(packed)
    ctx._saved_meta = tuple(meta)
    ctx._unpack = unpack


def unpack_saved(ctx) -> tuple:
    """The saved arrays of a packed node, each from its unpack hook, checked against what was saved."""
    out = []
    for packed, meta in zip(ctx._saved, ctx._saved_meta):
        if meta is None:
            out.append(packed)
            continue
        value = ctx._unpack(packed)
        array = value._data if isinstance(value, Tensor) else value
        if not _is_buffer(array) or array.shape != meta[0] or array.dtype != meta[1]:
            got = f"shape {tuple(array.shape)}, {array.dtype}" if _is_buffer(array) else type(value).__name__
            raise RuntimeError(
                f"{ctx.name}: the saved-tensor unpack hook returned {got} for a tensor saved with shape "
                f"{tuple(meta[0])}, {meta[1]}; unpack must return a tensor equal to the one pack received"
            )
        if isinstance(value, Tensor) and value._device is not meta[2]:
            raise RuntimeError(
                f"{ctx.name}: the saved-tensor unpack hook returned a tensor on {value.device} for one saved "
                f"on {meta[2]}; move it back with .to('{meta[2]}') in unpack"
            )
        out.append(array)
    return tuple(out)
