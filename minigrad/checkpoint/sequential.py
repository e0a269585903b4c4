"""``checkpoint_sequential(functions, segments, input)``: checkpoint a chain in ``segments`` runs (PyTorch's).

::

    model = nn.Sequential(*[layer() for _ in range(64)])
    y = checkpoint_sequential(model, 8, x)   # keeps 7 segment inputs + the last segment's activations

Invariants
- The chain is cut by :func:`~minigrad.checkpoint.segments.segment_bounds`:
  the first ``segments - 1`` runs are each one :func:`checkpoint` call, the
  last runs normally (backward needs its activations at once); the running
  is :func:`~minigrad.checkpoint.chain_run.run_segments`'.
- The value is ``functions[-1](...functions[0](input))``, bit for bit, and so
  are the gradients: each segment is the same calls, in the same order.
- With ``n`` functions and ``segments = sqrt(n)``, forward keeps about
  ``sqrt(n)`` segment inputs and one segment's activations, and backward
  holds one recomputed segment at a time: about ``2 sqrt(n)`` layers' worth
  of activations instead of ``n`` (Chen et al. 2016, "Training Deep Nets
  with Sublinear Memory Cost"), for one more forward pass.
"""

from __future__ import annotations

from minigrad.checkpoint.chain_run import run_segments
from minigrad.checkpoint.chain_dp import uniform_segments
from minigrad.nn import Module, Sequential

__all__ = ["checkpoint_sequential"]


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool = False, **kwargs):
    """Run ``functions`` (a Sequential or a list of callables) on ``input``, checkpointing all but the last segment.

    ``kwargs`` go to each :func:`checkpoint` call (``preserve_rng_state``, ``determinism_check``, ...).
    """
    if isinstance(functions, Sequential):
        functions = list(functions)
    elif isinstance(functions, Module) or not isinstance(functions, (list, tuple)):
        raise TypeError(
            f"checkpoint_sequential: expected an nn.Sequential or a list of callables, got "
            f"{type(functions).__name__}; for one module use checkpoint(module, x)"
        )
    plan = uniform_segments(len(functions), segments) if functions else ()
    return run_segments(functions, plan, input, who="checkpoint_sequential", use_reentrant=use_reentrant, **kwargs)
