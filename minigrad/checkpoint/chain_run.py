"""``run_segments(functions, segments, x)``: run a chain of functions, checkpointing the segments marked so.

A chain is a list of one-input functions (the layers of a ``Sequential``),
applied in order. ``segments`` cuts it into runs ``(start, end, checkpointed)``
(inclusive, as :func:`~minigrad.checkpoint.segments.segment_bounds` gives
them): a checkpointed run goes through :func:`~minigrad.checkpoint.checkpoint`
as one block, keeping only its input for backward; the others are called as
they are and keep what their ops save::

    run_segments(list(model), [(0, 3, True), (4, 7, False)], x)

Invariants
- The result is ``functions[-1](...functions[0](x))``, whatever the segments:
  checkpointing changes what is kept for backward, never what is computed.
- The segments tile ``0 .. len(functions) - 1`` in order (each start is the
  previous end + 1); anything else is a ValueError, not a silently skipped layer.
- Keyword arguments go to every ``checkpoint`` call (``context_fn=``,
  ``preserve_rng_state=``, ...), as ``torch.utils.checkpoint.checkpoint_sequential``'s do.
"""

from __future__ import annotations

from minigrad.checkpoint.recompute import checkpoint

__all__ = ["run_segments", "check_segments"]


def run_segments(functions, segments, x, who: str = "run_segments", **checkpoint_kwargs):
    """``x`` through ``functions`` in order, each segment ``(start, end, checkpointed)`` checkpointed or not
    (``who`` names the caller in errors)."""
    functions = list(functions)
    check_segments(functions, segments, who)
    for start, end, checkpointed in segments:
        block = _block(functions, start, end)
        x = checkpoint(block, x, **checkpoint_kwargs) if checkpointed else block(x)
    return x


def _block(functions, start: int, end: int):
    """One function running ``functions[start..end]``, named after them (the name a CheckpointError shows)."""

    def block(x):
        for fn in functions[start:end + 1]:
            x = fn(x)
        return x

    block.__qualname__ = f"segment[{start}..{end}]"
    return block


def check_segments(functions: list, segments, who: str = "run_segments") -> None:
    """Raise unless ``functions`` are callables and ``segments`` tile them in order."""
    if not functions:
        raise ValueError(f"{who}: the chain is empty; pass at least one function")
    for position, fn in enumerate(functions):
        if not callable(fn):
            raise TypeError(f"{who}: functions[{position}] is a {type(fn).__name__}, not a callable")
    expected = 0
    for segment in segments:
        if not (isinstance(segment, (tuple, list)) and len(segment) == 3):
            raise ValueError(f"{who}: each segment is (start, end, checkpointed), got {segment!r}")
        start, end, _ = segment
        if start != expected or not isinstance(end, int) or isinstance(end, bool) or end < start:
            raise ValueError(
                f"{who}: segment {segment!r} does not continue the chain; the segments must tile functions "
                f"0..{len(functions) - 1} in order, and the next one must start at {expected}"
            )
        expected = end + 1
    if expected != len(functions):
        raise ValueError(
            f"{who}: the segments cover functions 0..{expected - 1} of 0..{len(functions) - 1}; "
            "the last segment must end at the last function"
        )
