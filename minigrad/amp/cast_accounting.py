"""How memory tracking counts autocast's casts: a copy is counted in its source's category.

Under autocast a Linear saves, for backward, the float16 copies of its input
and weight, not the float32 tensors. Without this rule the tracker would file
those copies under ``activation`` (a node saved them), and a float16 step
would show *more* activation bytes than a float32 one, whose saved input and
weight are counted as ``input`` and ``parameter``. The copy of a parameter
is the model's weights in another dtype (PyTorch's autocast cache keeps it
for the region), the copy of a batch is the batch: they are counted there.

Invariants
- Only while a memory observer is active (``track()``, a simulated card);
  otherwise one empty-tuple test per cast.
- A copy of a buffer tagged ``parameter``, ``tensor`` or ``input`` gets its
  source's tag; a copy of anything else (an activation) keeps the tag the
  tracker gives it.
"""

from __future__ import annotations

from minigrad.memory import buffers
from minigrad.memory.buffers import reported, set_buffer_tag
from minigrad.tensor.backend import root_array

__all__ = ["count_as_source"]

_INHERITED = frozenset({"parameter", "tensor", "input"})


def count_as_source(copy, source) -> None:
    """Tag ``copy`` (a cast of ``source``) with ``source``'s tag when that is a parameter's or the data's."""
    if not buffers.notify or copy is source:
        return
    record = reported.get(id(root_array(source._data)))
    if record is not None and record[2] in _INHERITED:
        set_buffer_tag(copy, record[2])
