"""CachingAllocator, unit by unit: rounding, pools, splitting, coalescing, empty_cache, policies, stats, capacity."""

import pytest

from minigrad.memory import AllocatorOutOfMemoryError, CachingAllocator
from minigrad.memory.allocator.sizes import MiB, round_size, segment_size, should_split

KiB = 1024


def blocks(allocator):
    """``[(address, size, allocated)]`` of every block, in address order."""
    return [(b["address"], b["size"], b["state"] == "active_allocated")
            for segment in allocator.snapshot() for b in segment["blocks"]]


def stat(allocator, name):
    return allocator.memory_stats()[name]


@pytest.mark.parametrize("nbytes, rounded", [(0, 512), (1, 512), (512, 512), (513, 1024), (1000, 1024), (MiB + 1, MiB + 512)])
def test_requests_are_rounded_up_to_multiples_of_512(nbytes, rounded):
    assert round_size(nbytes) == rounded
    allocator = CachingAllocator()
    allocator.malloc(nbytes)
    assert stat(allocator, "allocated_bytes.all.current") == rounded
    assert stat(allocator, "requested_bytes.all.current") == nbytes


@pytest.mark.parametrize("nbytes, pool, segment", [
    (1, "small_pool", 2 * MiB),
    (MiB, "small_pool", 2 * MiB),
    (MiB + 1, "large_pool", 20 * MiB),
    (10 * MiB - 512, "large_pool", 20 * MiB),
    (10 * MiB, "large_pool", 10 * MiB),
    (11 * MiB + 1, "large_pool", 12 * MiB),
])
def test_each_request_goes_to_its_pool_and_reserves_a_segment_of_the_stated_size(nbytes, pool, segment):
    allocator = CachingAllocator()
    allocator.malloc(nbytes)
    assert segment_size(round_size(nbytes)) == segment
    assert allocator.snapshot()[0]["total_size"] == segment
    assert stat(allocator, f"reserved_bytes.{pool}.current") == segment
    assert stat(allocator, "segment.all.current") == 1


def test_a_small_block_is_split_and_the_next_request_takes_the_remainder():
    allocator = CachingAllocator()
    a = allocator.malloc(1000)
    b = allocator.malloc(3000)
    assert b == a + 1024
    assert blocks(allocator) == [(a, 1024, True), (b, 3072, True), (b + 3072, 2 * MiB - 4096, False)]
    assert stat(allocator, "inactive_split.all.current") == 1
    assert stat(allocator, "inactive_split_bytes.all.current") == 2 * MiB - 4096
    assert stat(allocator, "segment.all.current") == 1


def test_split_thresholds_small_keeps_512_bytes_large_keeps_only_more_than_1_mib():
    assert should_split(2048, 1536, "small_pool") and not should_split(2048, 2048, "small_pool")
    assert not should_split(20 * MiB, 19 * MiB, "large_pool") and should_split(20 * MiB, 19 * MiB - 512, "large_pool")
    allocator = CachingAllocator()
    allocator.malloc(19 * MiB)  # 1 MiB left over: too small for the large pool, the block takes the whole segment
    assert blocks(allocator) == [(0, 20 * MiB, True)]
    assert stat(allocator, "allocated_bytes.large_pool.current") == 20 * MiB
    assert stat(allocator, "requested_bytes.large_pool.current") == 19 * MiB
    second = CachingAllocator()
    second.malloc(5 * MiB)
    assert blocks(second) == [(0, 5 * MiB, True), (5 * MiB, 15 * MiB, False)]


def _three_blocks_and_a_tail():
    allocator = CachingAllocator()
    a, b, c = allocator.malloc(512), allocator.malloc(1024), allocator.malloc(2048)
    return allocator, a, b, c


def test_a_free_block_between_allocated_neighbours_stays_alone():
    allocator, a, b, c = _three_blocks_and_a_tail()
    allocator.free(b)
    assert blocks(allocator) == [(a, 512, True), (b, 1024, False), (c, 2048, True), (c + 2048, 2 * MiB - 3584, False)]
    assert stat(allocator, "inactive_split.all.current") == 2


def test_a_freed_block_merges_with_a_free_block_before_it():
    allocator, a, b, c = _three_blocks_and_a_tail()
    allocator.free(a)
    allocator.free(b)
    assert blocks(allocator)[0] == (a, 1536, False)
    assert allocator.pools["small_pool"].by_address == [a, c + 2048]


def test_a_freed_block_merges_with_a_free_block_after_it():
    allocator, a, b, c = _three_blocks_and_a_tail()
    allocator.free(c)
    assert blocks(allocator) == [(a, 512, True), (b, 1024, True), (c, 2 * MiB - 1536, False)]
    assert stat(allocator, "inactive_split.all.current") == 1
    assert stat(allocator, "inactive_split_bytes.all.current") == 2 * MiB - 1536


def test_a_freed_block_merges_with_free_blocks_on_both_sides_and_the_segment_is_whole_again():
    allocator, a, b, c = _three_blocks_and_a_tail()
    allocator.free(b)
    allocator.free(c)  # merges with b before it and the tail after it
    assert blocks(allocator) == [(a, 512, True), (b, 2 * MiB - 512, False)]
    allocator.free(a)
    assert blocks(allocator) == [(a, 2 * MiB, False)]
    assert stat(allocator, "inactive_split.all.current") == 0
    assert stat(allocator, "inactive_split_bytes.all.current") == 0
    assert allocator.fragmentation() == 0.0


def test_empty_cache_releases_wholly_free_segments_only():
    allocator = CachingAllocator()
    kept = allocator.malloc(512)
    freed_small = [allocator.malloc(MiB), allocator.malloc(MiB - 512)]  # fill the first segment
    big = allocator.malloc(12 * MiB)
    other = allocator.malloc(MiB)  # a second small segment
    allocator.free(big)
    allocator.free(other)
    for address in freed_small:
        allocator.free(address)
    assert allocator.reserved_bytes == 2 * 2 * MiB + 12 * MiB
    assert allocator.empty_cache() == 2 * MiB + 12 * MiB
    assert allocator.reserved_bytes == 2 * MiB  # the segment of ``kept`` stays, its free part is inactive split
    assert stat(allocator, "num_device_free") == 2
    assert stat(allocator, "inactive_split_bytes.all.current") == 2 * MiB - 512
    allocator.free(kept)
    allocator.empty_cache()
    assert allocator.reserved_bytes == 0 and allocator.snapshot() == []
    assert stat(allocator, "reserved_bytes.all.peak") == 2 * 2 * MiB + 12 * MiB


@pytest.mark.parametrize("policy, takes", [("best_fit", "small_hole"), ("first_fit", "big_hole")])
def test_best_fit_takes_the_smallest_hole_first_fit_the_lowest(policy, takes):
    allocator = CachingAllocator(policy=policy)
    big_hole = allocator.malloc(4096)
    allocator.malloc(512)
    small_hole = allocator.malloc(1024)
    allocator.malloc(512)
    allocator.free(big_hole)
    allocator.free(small_hole)
    assert allocator.malloc(1024) == {"small_hole": small_hole, "big_hole": big_hole}[takes]


@pytest.mark.parametrize("policy", ["best_fit", "first_fit"])
def test_both_policies_pass_over_a_hole_that_is_too_small(policy):
    allocator = CachingAllocator(policy=policy)
    too_small = allocator.malloc(512)
    allocator.malloc(512)
    fits = allocator.malloc(1024)
    allocator.malloc(512)
    allocator.free(too_small)
    allocator.free(fits)
    assert allocator.malloc(1000) == fits


def test_the_cache_serves_a_freed_block_again_without_reserving():
    allocator = CachingAllocator()
    first = allocator.malloc(300 * KiB)
    allocator.free(first)
    assert allocator.malloc(300 * KiB) == first
    assert stat(allocator, "num_device_alloc") == 1


def test_stats_have_torch_memory_stats_names_with_current_peak_allocated_freed():
    allocator = CachingAllocator()
    a = allocator.malloc(1000)
    b = allocator.malloc(5 * MiB)
    allocator.free(a)
    stats = allocator.memory_stats()
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
                 "allocation", "segment", "active", "inactive_split"):
        for kind in ("all", "small_pool", "large_pool"):
            for field in ("current", "peak", "allocated", "freed"):
                assert f"{name}.{kind}.{field}" in stats
    for counter in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"):
        assert stats[counter] == (2 if counter == "num_device_alloc" else 0)
    assert stats["allocated_bytes.all.current"] == 5 * MiB
    assert stats["allocated_bytes.all.peak"] == 5 * MiB + 1024
    assert stats["allocated_bytes.small_pool.allocated"] == 1024 and stats["allocated_bytes.small_pool.freed"] == 1024
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.current"] == 2 * MiB + 20 * MiB
    assert stats["allocation.all.current"] == 1 and stats["allocation.all.peak"] == 2
    allocator.free(b)
    allocator.reset_peak_stats()
    assert stat(allocator, "allocated_bytes.all.peak") == 0


def test_fragmentation_is_one_minus_largest_free_block_over_free_bytes():
    allocator = CachingAllocator()
    assert allocator.fragmentation() == 0.0  # nothing reserved
    addresses = [allocator.malloc(512 * KiB) for _ in range(4)]  # fills a 2 MiB segment
    assert allocator.fragmentation() == 0.0  # nothing free
    allocator.free(addresses[0])
    allocator.free(addresses[2])
    assert allocator.fragmentation() == pytest.approx(0.5)  # two free blocks of 512 KiB
    allocator.free(addresses[1])  # merges all three
    assert allocator.fragmentation() == 0.0


def test_a_segment_beyond_the_capacity_raises_after_emptying_the_cache_and_changes_nothing():
    allocator = CachingAllocator(capacity=12 * MiB)
    small = [allocator.malloc(MiB) for _ in range(12)]  # six small segments of 2 MiB: the device is full
    before = (blocks(allocator), allocator.reserved_bytes, allocator.allocated_bytes)
    with pytest.raises(AllocatorOutOfMemoryError, match=r"tried to allocate 10.00 MiB.*capacity 12.00 MiB") as caught:
        allocator.malloc(10 * MiB)
    assert isinstance(caught.value, MemoryError)
    assert (blocks(allocator), allocator.reserved_bytes, allocator.allocated_bytes) == before
    assert stat(allocator, "num_ooms") == 1 and stat(allocator, "num_alloc_retries") == 1
    # recovery: freed small blocks stay cached in the small pool, useless to a large request, until the
    # retry empties the cache; then the request fits where they were
    for address in small[:10]:
        allocator.free(address)
    assert allocator.reserved_bytes == 12 * MiB
    assert allocator.malloc(10 * MiB) == 0
    assert stat(allocator, "num_alloc_retries") == 2 and stat(allocator, "num_ooms") == 1
    assert allocator.reserved_bytes == 12 * MiB and stat(allocator, "segment.all.current") == 2
    assert all(address in allocator.allocated for address in small[10:])


def test_bad_requests_say_what_was_wrong():
    allocator = CachingAllocator()
    with pytest.raises(ValueError, match="nbytes must be an int >= 0"):
        allocator.malloc(-1)
    with pytest.raises(ValueError, match="unknown policy 'worst_fit'"):
        CachingAllocator(policy="worst_fit")
    address = allocator.malloc(10)
    allocator.free(address)
    with pytest.raises(ValueError, match="freed twice"):
        allocator.free(address)
