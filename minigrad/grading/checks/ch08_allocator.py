"""Graded checks for chapter 08, exercises 8.3 (splitting) and 8.4 (coalescing on free): ``exercises/08_allocator.py``.

A sequence of ``malloc``/``free`` calls drawn here runs in the child through
the learner's ``CachingAllocator`` (:func:`run_allocator`), and here through
the library's; after every call the segments' blocks (address, size,
allocated or free, the block before), the pools' free blocks and the allocated and reserved
bytes must agree. 8.3's sequences free only blocks whose neighbours are
allocated (nothing to merge); 8.4's free neighbours of free blocks. Each
exercise is graded on its own: while 8.4 is checked, a trusted ``_split``
(:func:`_trusted_split`) stands in for the learner's 8.3 in the child.
"""

from __future__ import annotations

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise, probe

KiB, MiB = 1024, 1024 * 1024


def _blocks(segment) -> tuple[list, str | None]:
    """The segment's blocks in address order, and what is wrong with its links (None if nothing).

    Walks ``first`` and ``next`` as ``Segment.blocks()`` does, but stops at a
    cycle (a block met twice) and checks every back-link (``b.next.prev is b``)
    and that the blocks tile the segment, so a broken pointer is named instead
    of looping forever or failing later with a bare KeyError.
    """
    rows, seen, block, before, problem = [], set(), segment.first, None, None
    if block is None:
        return rows, f"segment {segment.address:#x}: its first block is None"
    if block.prev is not None:
        problem = f"segment {segment.address:#x}: its first block {block.address:#x} has a prev, {block.prev!r}"
    while block is not None:
        if id(block) in seen:
            return rows, (f"segment {segment.address:#x}: a cycle: the next of block {before.address:#x} is block "
                          f"{block.address:#x}, which comes earlier in the list")
        seen.add(id(block))
        rows.append((block.address, block.size, block.allocated, None if block.prev is None else block.prev.address))
        if problem is None and before is not None and block.prev is not before:
            back = "None" if block.prev is None else f"block {block.prev.address:#x}"
            problem = (f"segment {segment.address:#x}: a broken back-link: the next of block {before.address:#x} is "
                       f"block {block.address:#x}, but that block's prev is {back}")
        if problem is None and before is not None and before.address + before.size != block.address:
            problem = (f"segment {segment.address:#x}: block {before.address:#x} of {before.size} B ends at "
                       f"{before.address + before.size:#x}, but the next block starts at {block.address:#x}")
        before, block = block, block.next
    if problem is None and before.address + before.size != segment.address + segment.size:
        problem = (f"segment {segment.address:#x} of {segment.size} B: its last block ends at "
                   f"{before.address + before.size:#x}, not at the segment's end")
    return rows, problem


def _state(allocator) -> dict:
    segments, problems = [], []
    for _, segment in sorted(allocator.segments.items()):
        rows, problem = _blocks(segment)
        segments.append(rows)
        if problem:
            problems.append(problem)
    return {
        "segments": segments,
        "links": problems,
        "pools": {name: list(pool.by_size) for name, pool in allocator.pools.items()},
        "allocated": allocator.allocated_bytes,
        "reserved": allocator.reserved_bytes,
    }


def _trusted_split(self, block, size: int, pool) -> None:
    """(child) The library's ``CachingAllocator._split`` (exercise 8.3), standing in while 8.4 is graded."""
    was_split = block.is_split()
    remainder_size = block.size - size
    remainder = type(block)(block.address + size, remainder_size, block.segment)
    remainder.prev, remainder.next = block, block.next
    if block.next is not None:
        block.next.prev = remainder
    block.next = remainder
    block.size = size
    pool.add(remainder)
    if was_split:
        self.stats.change("inactive_split_bytes", pool.name, -size)
    else:
        self.stats.change("inactive_split_bytes", pool.name, remainder_size)
        self.stats.change("inactive_split", pool.name, 1)


TRUSTED = {"_split": _trusted_split}


def _where(exc: BaseException, module) -> str:
    """(child) `` (FILE:LINE)`` of the deepest frame of ``exc`` in the learner's file, or ``""``."""
    import os
    import traceback

    path = getattr(module, "__file__", None)
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if path and f.filename == path]
    return f" ({os.path.basename(path)}:{lines[-1]})" if lines else ""


def _run(module, policy: str, ops) -> list[dict]:
    allocator = module.CachingAllocator(policy=policy)
    handles, states = [], []
    for op, value in ops:
        try:
            if op == "malloc":
                handles.append(allocator.malloc(value))
            elif op == "free":
                allocator.free(handles[value])
            else:
                allocator.empty_cache()
        except Exception as exc:  # what the links look like when it failed says which pointer broke
            try:
                links = _state(allocator)["links"]
            except Exception as inner:
                links = [f"(the allocator's state could not be read: {type(inner).__name__}: {inner})"]
            states.append({"error": f"{type(exc).__name__}: {exc}{_where(exc, module)}", "links": links})
            return states
        states.append(_state(allocator))
    return states


@probe
def run_allocator(submission, state, policy, ops, trusted=()):
    """The learner's allocator's state after each of ``ops``: ``("malloc", nbytes)``, ``("free", k)`` (k-th malloc).

    The methods named in ``trusted`` are the trusted ones meanwhile; the learner's class is restored after.
    """
    cls = submission.CachingAllocator
    saved = {name: vars(cls)[name] for name in trusted}
    for name in trusted:
        setattr(cls, name, TRUSTED[name])
    try:
        return _run(submission, policy, ops)
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)


def _describe(op) -> str:
    kind, value = op
    if kind == "malloc":
        return f"malloc({value})"
    return f"free of allocation #{value}" if kind == "free" else "empty_cache()"


def _compare(learner, policy: str, ops, what: str, trusted=()) -> None:
    from minigrad.memory.allocator import caching_allocator as reference  # here, in the grader: the child's copy is the learner's

    got = learner.probe("run_allocator", policy, ops, list(trusted))
    expected = _run(reference, policy, ops)
    for k, (mine, theirs) in enumerate(zip(got, expected)):
        where = (f"{what} ({policy}), after call {k + 1} of {len(ops)}: {_describe(ops[k])} "
                 f"(calls so far: {', '.join(_describe(op) for op in ops[:k + 1])})")
        if "error" in mine:
            links = "; ".join(mine["links"]) or "the links look intact"
            raise AssertionError(f"{where}: your allocator raised {mine['error']}. The block list then: {links}")
        assert not mine["links"], f"{where}: the block list is broken: {'; '.join(mine['links'])}"
        for key, name in (("segments", "the segments' blocks (address, size, allocated, address of the block before)"),
                          ("pools", "the pools' free blocks (size, address)"),
                          ("allocated", "allocated bytes"), ("reserved", "reserved bytes")):
            assert mine[key] == theirs[key], f"{where}: {name} are {mine[key]}, expected {theirs[key]}"


POLICIES = ("best_fit", "first_fit")
MERGING = ("_split",)  # 8.4 runs on the trusted 8.3


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
        _compare(learner, policy, ops, "a block freed just before a free block", MERGING)


@exercise("8.4")
def test_merge_with_the_block_before(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _small(gen)) for _ in range(4)] + [("free", 1), ("free", 2), ("free", 0)]
        _compare(learner, policy, ops, "a block freed just after a free block, and a segment's first block", MERGING)


@exercise("8.4")
def test_merge_with_both_neighbours(learner, rng):
    gen = np_generator(rng)
    for policy in POLICIES:
        ops = [("malloc", _small(gen)) for _ in range(4)] + [("free", 1), ("free", 3), ("free", 2)]
        _compare(learner, policy, ops, "a block freed between two free blocks", MERGING)


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
        _compare(learner, policy, ops, "random mallocs and frees, then everything freed and the cache emptied", MERGING)
