"""The size rules: how a request is rounded, which pool serves it, how big a new segment is, when a block splits.

The numbers and rules are PyTorch's CUDA caching allocator's: the constants
``kMinBlockSize``, ``kSmallSize``, ``kSmallBuffer``, ``kLargeBuffer``,
``kMinLargeAlloc``, ``kRoundLarge`` and the functions ``round_size``,
``get_allocation_size`` and ``should_split`` of
``c10/cuda/CUDACachingAllocator.cpp`` in the PyTorch repository (the
constants moved to ``c10/core/AllocatorConfig.h`` in later versions; the
default configuration, without ``PYTORCH_CUDA_ALLOC_CONF``, is modelled):

- every request is rounded up to a multiple of 512 bytes (at least 512), so
  blocks stay aligned and tiny sizes do not splinter the pool;
- a *small* request (rounded size <= 1 MiB) is carved from a 2 MiB segment
  of the small pool; a *large* one comes from the large pool;
- a large request below 10 MiB gets a 20 MiB segment (room for the next
  few such requests), one of 10 MiB or more gets its own segment rounded up
  to a multiple of 2 MiB;
- a free block bigger than the request is split when the remainder is
  still useful: at least 512 bytes in the small pool, more than 1 MiB in the
  large pool (a smaller tail of a large block would only be fit for small
  requests, which never come to the large pool).
"""

from __future__ import annotations

KiB, MiB = 1024, 1024 * 1024

MIN_BLOCK = 512  # every block is a multiple of this
SMALL_REQUEST = 1 * MiB  # largest request the small pool serves
SMALL_SEGMENT = 2 * MiB  # the small pool's segment size
LARGE_SEGMENT = 20 * MiB  # segment for a large request below MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 * MiB  # from here on a request gets its own segment...
ROUND_LARGE = 2 * MiB  # ...rounded up to a multiple of this

SMALL, LARGE = "small_pool", "large_pool"


def round_size(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of 512 (0 becomes 512: every request gets a block of its own)."""
    ### BEGIN SOLUTION 8.6 | the smallest multiple of MIN_BLOCK that holds nbytes, and never less than one MIN_BLOCK (integers only: no floats)
    if nbytes < MIN_BLOCK:
        return MIN_BLOCK
    return -(-nbytes // MIN_BLOCK) * MIN_BLOCK
    ### END SOLUTION


def pool_for(size: int) -> str:
    """The pool that serves a request of rounded ``size``: ``"small_pool"`` up to 1 MiB, else ``"large_pool"``."""
    ### BEGIN SOLUTION 8.6 | the small pool serves every rounded size up to and including SMALL_REQUEST
    return SMALL if size <= SMALL_REQUEST else LARGE
    ### END SOLUTION


def segment_size(size: int) -> int:
    """Bytes to reserve from the device when no cached block fits a request of rounded ``size``."""
    ### BEGIN SOLUTION 8.6 | three cases, by the pool and then by MIN_LARGE_ALLOC (is 10 MiB itself below it?); the last rounds up to a multiple of ROUND_LARGE
    if size <= SMALL_REQUEST:
        return SMALL_SEGMENT
    if size < MIN_LARGE_ALLOC:
        return LARGE_SEGMENT
    return -(-size // ROUND_LARGE) * ROUND_LARGE
    ### END SOLUTION


def should_split(block_size: int, size: int, pool: str) -> bool:
    """Whether a free block of ``block_size`` serving ``size`` keeps its remainder as a separate free block."""
    ### BEGIN SOLUTION 8.6 | what is left over must be worth a block of the same pool: any block at all in the small pool; in the large pool, more than the small pool's largest request
    remainder = block_size - size
    if pool == SMALL:
        return remainder >= MIN_BLOCK
    return remainder > SMALL_REQUEST
    ### END SOLUTION
