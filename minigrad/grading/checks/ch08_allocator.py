"""Graded checks for chapter 08, exercises 8.3 (splitting) and 8.4 (coalescing on free): ``exercises/08_allocator.py``.

A sequence of ``malloc``/``free`` calls drawn here runs in the child through
the learner's ``CachingAllocator`` (:func:`run_allocator`), and here through
the library's; after every call the segments' blocks (address, size,
allocated or free, the block before), the pools' free blocks and the allocated and reserved
bytes must agree. 8.3's sequences free only blocks whose neighbours are
allocated (nothing to merge); 8.4's free neighbours of free blocks, so they
also rely on 8.3's split.
"""

from __future__ import annotations

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise, probe

KiB, MiB = 1024, 1024 * 1024


def _state(allocator) -> dict:
    return {
        "segments": [[(b.address, b.size, b.allocated, None if b.prev is None else b.prev.address)
                      for b in segment.blocks()] for _, segment in sorted(allocator.segments.items())],
        "pools": {name: list(pool.by_size) for name, pool in allocator.pools.items()},
        "allocated": allocator.allocated_bytes,
        "reserved": allocator.reserved_bytes,
    }


def _run(module, policy: str, ops) -> list[dict]:
    allocator = module.CachingAllocator(policy=policy)
    handles, states = [], []
    for op, value in ops:
        if op == "malloc":
            handles.append(allocator.malloc(value))
        elif op == "free":
            allocator.free(handles[value])
        else:
            allocator.empty_cache()
        states.append(_state(allocator))
    return states


@probe
def run_allocator(submission, state, policy, ops):
    """The learner's allocator's state after each of ``ops``: ``("malloc", nbytes)``, ``("free", k)`` (k-th malloc)."""
    return _run(submission, policy, ops)


def _describe(op) -> str:
    kind, value = op
    if kind == "malloc":
        return f"malloc({value})"
    return f"free of allocation #{value}" if kind == "free" else "empty_cache()"


def _compare(learner, policy: str, ops, what: str) -> None:
    from minigrad.memory.allocator import caching_allocator as reference  # here, in the grader: the child's copy is the learner's

    got = learner.probe("run_allocator", policy, ops)
    expected = _run(reference, policy, ops)
    for k, (mine, theirs) in enumerate(zip(got, expected)):
        where = (f"{what} ({policy}), after call {k + 1} of {len(ops)}: {_describe(ops[k])} "
                 f"(calls so far: {', '.join(_describe(op) for op in ops[:k + 1])})")
        for key, name in (("segments", "the segments' blocks (address, size, allocated, address of the block before)"),
                          ("pools", "the pools' free blocks (size, address)"),
                          ("allocated", "allocated bytes"), ("reserved", "reserved bytes")):
            assert mine[key] == theirs[key], f"{where}: {name} are {mine[key]}, expected {theirs[key]}"


POLICIES = ("best_fit", "first_fit")


def _small(gen) -> int:
    return int(gen.integers(1, 256 * KiB))


def _large(gen) -> int:
    return int(gen.integers(MiB + MiB // 4, 6 * MiB))


@exercise("8.3")
def test_split_a_new_small_segment(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        _compare(learner, policy, [("malloc", _small(gen)) for _ in range(5)], "small requests carved from one segment")


@exercise("8.3")
def test_split_a_new_large_segment(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _large(gen)) for _ in range(3)]
        _compare(learner, policy, ops, "large requests carved from a 20 MiB segment")


@exercise("8.3")
def test_split_a_freed_block_again(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        big = int(gen.integers(64 * KiB, 256 * KiB))
        ops = [("malloc", _small(gen)), ("malloc", big), ("malloc", _small(gen)), ("free", 1),
               ("malloc", int(gen.integers(1, big // 2))), ("malloc", int(gen.integers(1, big // 4)))]
        _compare(learner, policy, ops, "a freed block between two allocated ones, reused by smaller requests")


@exercise("8.4")
def test_merge_with_the_block_after(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _small(gen)) for _ in range(4)] + [("free", 2), ("free", 1)]
        _compare(learner, policy, ops, "a block freed just before a free block")


@exercise("8.4")
def test_merge_with_the_block_before(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _small(gen)) for _ in range(4)] + [("free", 1), ("free", 2), ("free", 0)]
        _compare(learner, policy, ops, "a block freed just after a free block, and a segment's first block")


@exercise("8.4")
def test_merge_with_both_neighbours(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _small(gen)) for _ in range(4)] + [("free", 1), ("free", 3), ("free", 2)]
        _compare(learner, policy, ops, "a block freed between two free blocks")


@exercise("8.4")
def test_random_sequences_give_whole_segments_back(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops, live, made = [], [], 0
        for _ in range(24):
            if live and gen.random() < 0.45:
                ops.append(("free", live.pop(int(gen.integers(len(live))))))
            else:
                ops.append(("malloc", _small(gen) if gen.random() < 0.7 else _large(gen)))
                live.append(made)
                made += 1
        ops += [("free", k) for k in live] + [("empty_cache", 0)]
        _compare(learner, policy, ops, "random mallocs and frees, then everything freed and the cache emptied")
