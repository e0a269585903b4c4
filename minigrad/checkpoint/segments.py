"""Where ``checkpoint_sequential`` cuts a chain of ``n`` functions into ``segments`` runs (exercise 10.3).

Invariants (PyTorch's ``checkpoint_sequential``)
- Every segment but the last has ``n // segments`` functions; the last one
  takes the rest, so it is the longest when ``segments`` does not divide ``n``.
- The segments tile ``0 .. n-1`` in order: each ``(start, end)`` is
  inclusive, and each start is the previous end + 1.
- Only the first ``segments - 1`` are checkpointed; the last runs normally,
  since backward needs its activations at once anyway.
"""

from __future__ import annotations

__all__ = ["segment_bounds"]


def segment_bounds(n_functions: int, segments: int) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` (inclusive) of the ``segments`` runs of a chain of ``n_functions`` functions."""
    ### BEGIN SOLUTION 10.3 | refuse a segment count below 1 or above the number of functions (a ValueError that names checkpoint_sequential and says what to pass); then equal segments of n // segments functions, the last one taking the rest, as inclusive bounds that tile 0 .. n-1 in order
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive integer, got {segments!r}")
    if segments > n_functions:
        raise ValueError(
            f"checkpoint_sequential: {segments} segments for {n_functions} functions; "
            f"use at most {n_functions} segments (one function each)"
        )
    size = n_functions // segments
    bounds = [(start, start + size - 1) for start in range(0, size * (segments - 1), size)]
    last_start = bounds[-1][1] + 1 if bounds else 0
    return bounds + [(last_start, n_functions - 1)]
    ### END SOLUTION
