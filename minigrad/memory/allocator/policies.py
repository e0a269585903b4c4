"""Fit policies: which free block of a pool serves a request.

- **best fit** takes the smallest free block that is big enough (the lowest
  address among equals), as PyTorch's caching allocator does: it leaves big
  blocks whole for big requests, at the price of leaving small slivers.
- **first fit** takes the lowest-addressed free block that is big enough:
  it packs allocations towards the start of memory and is quick to find,
  but it cuts big blocks for small requests.

A policy is a function ``(pool, size) -> Block | None`` (``None``: nothing fits).
"""

from __future__ import annotations

from bisect import bisect_left

from minigrad.memory.allocator.blocks import Block
from minigrad.memory.allocator.pools import Pool


def best_fit(pool: Pool, size: int) -> Block | None:
    """The smallest free block of at least ``size`` bytes."""
    index = bisect_left(pool.by_size, (size, -1))
    if index == len(pool.by_size):
        return None
    return pool.blocks[pool.by_size[index][1]]


def first_fit(pool: Pool, size: int) -> Block | None:
    """The lowest-addressed free block of at least ``size`` bytes."""
    for block in pool:
        if block.size >= size:
            return block
    return None


POLICIES = {"best_fit": best_fit, "first_fit": first_fit}
