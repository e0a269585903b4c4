"""The BatchNorm pitfall of checkpointing: a recompute would update the running statistics a second time.

In training mode ``BatchNorm1d/2d`` updates ``running_mean``, ``running_var``
and ``num_batches_tracked`` each time it runs. A checkpointed block runs
twice per step, so without care its running statistics move twice per
batch (``num_batches_tracked`` counts 2 per step, the averages drift toward
the recent batches). The gradients are not affected - training-mode
BatchNorm normalises with the batch's own statistics - but the model
evaluated afterwards is.

PyTorch does not fix it: ``torch.utils.checkpoint`` recomputes the update,
and users freeze BatchNorm's statistics in checkpointed blocks, or set its
``momentum`` to 0 during the recompute (some libraries ship a wrapper that
does it). Here the checkpoint stage fixes it, by default:
:func:`buffers_put_back` is entered around each recompute.

How: for the recompute's duration it registers global module forward hooks
(``nn.modules.module.register_module_forward_pre_hook`` and
``register_module_forward_hook``), so it finds every module the block calls,
whatever ``fn`` is (a module, a bound method, a lambda over several modules).
Before a module runs it copies the module's own buffers; after it has run
(also if it raised) it writes them back. So every buffer of every module -
BatchNorm's running statistics, and those of any user layer that keeps state
the same way - is as the first forward left it. Gradients are unchanged: a
module's output is computed before its buffers are put back.

Invariants
- Only the module's *own* buffers (``named_buffers(recurse=False)``) are
  copied; its children are called, hooked and put back on their own.
- A module called several times (or recursively) is put back each time, in
  the reverse order of the calls.
- Outside a recompute no hook is registered: a module call costs nothing extra.
"""

from __future__ import annotations

from contextlib import contextmanager

from minigrad.nn.module_hooks import register_module_forward_hook, register_module_forward_pre_hook
from minigrad.tensor import no_grad

__all__ = ["buffers_put_back"]


@contextmanager
def buffers_put_back(enabled: bool = True):
    """Inside the block, every module's own buffers are put back after it runs (nothing happens if not ``enabled``)."""
    if not enabled:
        yield
        return
    copies: list[list] = []  # one entry per module call in progress: [(buffer, copy of its values), ...]

    def before(module, args) -> None:
        with no_grad():
            copies.append([(b, b.clone()) for _, b in module.named_buffers(recurse=False)])

    def after(module, args, output) -> None:
        with no_grad():
            for buffer, values in copies.pop():
                buffer.copy_(values)

    with register_module_forward_pre_hook(before), register_module_forward_hook(after, always_call=True):
        yield
