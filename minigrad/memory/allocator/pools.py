"""A pool: the free blocks of one size class, kept in the two orders the fit policies search.

``by_size`` lists ``(size, address)`` sorted, so the smallest block that
fits is one bisection away (best fit); ``by_address`` lists addresses
sorted, so the lowest-addressed block that fits is the first one a scan
meets (first fit). Both always hold exactly the pool's free blocks.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from minigrad.memory.allocator.blocks import Block


class Pool:
    """The free blocks of the ``"small_pool"`` or the ``"large_pool"``."""

    def __init__(self, name: str):
        self.name = name
        self.by_size: list[tuple[int, int]] = []
        self.by_address: list[int] = []
        self.blocks: dict[int, Block] = {}  # address -> free block

    def add(self, block: Block) -> None:
        insort(self.by_size, (block.size, block.address))
        insort(self.by_address, block.address)
        self.blocks[block.address] = block

    def remove(self, block: Block) -> None:
        del self.by_size[bisect_left(self.by_size, (block.size, block.address))]
        del self.by_address[bisect_left(self.by_address, block.address)]
        del self.blocks[block.address]

    def __len__(self) -> int:
        return len(self.blocks)

    def __iter__(self):
        """The free blocks in address order."""
        return (self.blocks[address] for address in self.by_address)
