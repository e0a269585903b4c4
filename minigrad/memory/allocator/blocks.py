"""Segments and blocks: the memory an allocator reserved, and the pieces it hands out.

A *segment* is one range reserved from the device (one ``cudaMalloc``).
It is cut into *blocks* that tile it exactly: each block starts where the
previous one ends, and ``prev``/``next`` link the neighbours inside the
segment (``None`` at its ends). A block is either allocated (handed out to
a caller) or free (cached, waiting in its pool). A block is *split* when it
shares its segment with another block.
"""

from __future__ import annotations


class Block:
    """``size`` bytes at ``address`` inside ``segment``; ``requested`` is what the caller asked for (<= size)."""

    __slots__ = ("address", "size", "segment", "allocated", "requested", "tag", "prev", "next")

    def __init__(self, address: int, size: int, segment: "Segment"):
        self.address = address
        self.size = size
        self.segment = segment
        self.allocated = False
        self.requested = 0
        self.tag = None
        self.prev: Block | None = None
        self.next: Block | None = None

    @property
    def end(self) -> int:
        return self.address + self.size

    @property
    def pool(self) -> str:
        return self.segment.pool

    def is_split(self) -> bool:
        """True when the block is not its segment's only block."""
        return self.prev is not None or self.next is not None

    def __repr__(self) -> str:
        state = f"allocated {self.requested} B" if self.allocated else "free"
        return f"Block({self.address:#x}, {self.size} B, {state})"


class Segment:
    """A range of ``size`` bytes at ``address`` reserved from the device for ``pool``; ``first`` is its first block."""

    __slots__ = ("address", "size", "pool", "first")

    def __init__(self, address: int, size: int, pool: str):
        self.address = address
        self.size = size
        self.pool = pool
        self.first = Block(address, size, self)

    def blocks(self):
        """The segment's blocks in address order."""
        block = self.first
        while block is not None:
            yield block
            block = block.next

    def is_wholly_free(self) -> bool:
        """One block covering the whole segment, and it is free: the segment can go back to the device."""
        return self.first.next is None and not self.first.allocated

    def __repr__(self) -> str:
        return f"Segment({self.address:#x}, {self.size} B, {self.pool}, {list(self.blocks())})"
