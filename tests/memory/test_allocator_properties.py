"""Random sequences of malloc, free and empty_cache keep every allocator invariant (derandomized in CI).

After every operation: the blocks of each segment tile it exactly and
segments do not overlap; live allocations are exactly the allocated
blocks; the policy picked the block a brute-force search picks; every
reserved byte is either allocated or in a pool; no two free blocks are
adjacent; the statistics equal a recount from the blocks. An
out-of-memory error leaves every allocation as it was (only the cache may
have been emptied).
"""

from hypothesis import given
from hypothesis import strategies as st

from minigrad.memory import AllocatorOutOfMemoryError, CachingAllocator
from minigrad.memory.allocator.sizes import LARGE, MIN_BLOCK, SMALL, MiB, pool_for, round_size

KiB = 1024
# sizes on the pools' boundaries and a few repeated ones (so freed blocks get reused), then any size
SIZES = st.one_of(
    st.sampled_from([0, 1, 512, 513, 1 * KiB, 3 * KiB, 64 * KiB, 256 * KiB, 512 * KiB, MiB, MiB + 1, 3 * MiB,
                     10 * MiB - 1, 10 * MiB, 12 * MiB]),
    st.integers(0, 2 * MiB),
    st.integers(MiB, 25 * MiB),
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("malloc"), SIZES),
        st.tuples(st.just("free"), st.integers(0, 1000)),
        st.tuples(st.just("empty_cache"), st.just(0)),
    ),
    min_size=10,
    max_size=100,
)


def recount(allocator) -> dict[str, int]:
    """The current value of each statistic, counted from the blocks themselves."""
    counts = {}
    for kind in ("all", SMALL, LARGE):
        segments = [s for s in allocator.segments.values() if kind in ("all", s.pool)]
        every = [b for s in segments for b in s.blocks()]
        used = [b for b in every if b.allocated]
        split_free = [b for b in every if not b.allocated and b.is_split()]
        counts.update({
            f"allocated_bytes.{kind}.current": sum(b.size for b in used),
            f"active_bytes.{kind}.current": sum(b.size for b in used),
            f"requested_bytes.{kind}.current": sum(b.requested for b in used),
            f"allocation.{kind}.current": len(used),
            f"active.{kind}.current": len(used),
            f"reserved_bytes.{kind}.current": sum(s.size for s in segments),
            f"segment.{kind}.current": len(segments),
            f"inactive_split_bytes.{kind}.current": sum(b.size for b in split_free),
            f"inactive_split.{kind}.current": len(split_free),
        })
    return counts


def expected_block(allocator, nbytes: int):
    """The address of the free block the policy must pick for ``nbytes``, or None (a new segment), by brute force."""
    size = round_size(nbytes)
    fitting = [b for b in allocator.pools[pool_for(size)].blocks.values() if b.size >= size]
    if not fitting:
        return None
    key = (lambda b: (b.size, b.address)) if allocator.policy == "best_fit" else (lambda b: b.address)
    return min(fitting, key=key).address


def check_invariants(allocator, live: dict[int, int]) -> None:
    end = 0
    free_blocks = {SMALL: set(), LARGE: set()}
    for address, segment in sorted(allocator.segments.items()):
        assert address == segment.address >= end, "segments overlap"
        end = segment.address + segment.size
        assert allocator.capacity is None or end <= allocator.capacity
        cursor, previous = segment.address, None
        for block in segment.blocks():
            assert block.address == cursor and block.prev is previous and block.segment is segment
            assert block.size > 0 and block.size % MIN_BLOCK == 0
            if not block.allocated:
                assert previous is None or previous.allocated, "two free blocks are adjacent"
                free_blocks[segment.pool].add(block.address)
            cursor, previous = block.end, block
        assert cursor == end, "the blocks do not cover their segment"
    assert set(allocator.allocated) == set(live)
    for address, nbytes in live.items():
        block = allocator.allocated[address]
        assert block.allocated and block.requested == nbytes and block.size >= round_size(nbytes)
        assert block.pool == pool_for(round_size(nbytes))
    for name, pool in allocator.pools.items():
        assert set(pool.by_address) == set(pool.blocks) == free_blocks[name]
        assert sorted((b.size, b.address) for b in pool.blocks.values()) == pool.by_size
    stats = allocator.memory_stats()
    for name, value in recount(allocator).items():
        assert stats[name] == value, name
        field = name.rsplit(".", 1)[0]
        assert stats[f"{field}.peak"] >= value
        assert stats[f"{field}.allocated"] - stats[f"{field}.freed"] == value
    free = sum(b.size for pool in allocator.pools.values() for b in pool.blocks.values())
    assert allocator.reserved_bytes == allocator.allocated_bytes + free == allocator.device.used_bytes
    assert 0.0 <= allocator.fragmentation() < 1.0


@given(
    operations=OPERATIONS,
    policy=st.sampled_from(["best_fit", "first_fit"]),
    capacity=st.sampled_from([None, 24 * MiB, 64 * MiB]),
)
def test_random_sequences_keep_every_invariant(operations, policy, capacity):
    allocator = CachingAllocator(capacity=capacity, policy=policy)
    live: dict[int, int] = {}
    for operation, value in operations:
        if operation == "malloc":
            ooms = allocator.memory_stats()["num_ooms"]
            before = {address: block.size for address, block in allocator.allocated.items()}
            expected = expected_block(allocator, value)
            try:
                address = allocator.malloc(value)
            except AllocatorOutOfMemoryError:
                assert capacity is not None and allocator.memory_stats()["num_ooms"] == ooms + 1
                assert {address: block.size for address, block in allocator.allocated.items()} == before
            else:
                assert address not in live
                assert expected is None or address == expected, "the policy picked another block"
                assert expected is not None or allocator.allocated[address].segment.first.address == address
                live[address] = value
        elif operation == "free" and live:
            address = sorted(live)[value % len(live)]
            allocator.free(address)
            del live[address]
        elif operation == "empty_cache":
            allocator.empty_cache()
            assert all(not s.is_wholly_free() for s in allocator.segments.values())
        check_invariants(allocator, live)
