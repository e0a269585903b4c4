"""Graded checks for chapter 08, exercise 8.6 (the allocator's size rules): ``exercises/08_sizes.py``.

The learner's ``round_size``, ``pool_for``, ``segment_size`` and
``should_split`` answer fresh random sizes and the boundaries where the rules
change (512 bytes, exactly 1 MiB, exactly 10 MiB, a remainder of exactly
1 MiB in the large pool); each answer is compared here with PyTorch's rules
as the library writes them. The last check runs the library's
``CachingAllocator`` in the child with the learner's four rules in place of
its own and compares every segment after each call, so a rule that is right
alone but wrong in the allocator (a split that ignores the remainder rule:
11 MiB + 1 B in a 12 MiB segment leaves less than 1 MiB, which stays with
the block) loses points too.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise, probe

KiB, MiB = 1024, 1024 * 1024
SMALL, LARGE = "small_pool", "large_pool"  # the pools' names (the library's module is imported only in functions:
# in the child it is the learner's file)


def _reference():
    from minigrad.memory.allocator import sizes  # here, in the grader: the child's copy is the learner's

    return sizes
RULES = ("round_size", "pool_for", "segment_size", "should_split")


@probe
def answers(submission, state, rule, cases):
    """The learner's ``rule`` on each argument tuple of ``cases``."""
    fn = getattr(submission, rule)
    return [fn(*case) for case in cases]


def _check(learner, rule: str, cases, why: str) -> None:
    got = learner.probe("answers", rule, [list(case) for case in cases])
    expected = [getattr(_reference(), rule)(*case) for case in cases]
    for case, mine, theirs in zip(cases, got, expected):
        call = f"{rule}({', '.join(map(repr, case))})"
        if isinstance(theirs, int) and not isinstance(theirs, bool):
            assert isinstance(mine, (int, np.integer)) and not isinstance(mine, (bool, np.bool_)), (
                f"{call} returned {mine!r} ({type(mine).__name__}): sizes are ints (bytes), exact at any size")
        assert mine == theirs, f"{call} returned {mine!r}, expected {theirs!r}: {why}"


@exercise("8.6")
def test_round_size(learner, rng):
    gen = np_generator(rng)
    k = int(gen.integers(1, 4096))
    cases = [(0,), (1,), (511,), (512,), (513,), (512 * k,), (512 * k + 1,), (512 * k - 1,),
             (int(gen.integers(1, 10**6)),), (int(gen.integers(10**6, 10**10)),), (2**60 + 1,), (2**60 + 512,)]
    _check(learner, "round_size", cases, "every request is rounded up to a multiple of 512 bytes, at least 512")


@exercise("8.6")
def test_pool_for_at_the_1_mib_boundary(learner, rng):
    gen = np_generator(rng)
    cases = [(512,), (MiB - 512,), (MiB,), (MiB + 512,), (512 * int(gen.integers(1, 2048)),),
             (512 * int(gen.integers(2049, 10**6)),)]
    _check(learner, "pool_for", cases, "rounded sizes up to and including 1 MiB go to the small pool")


@exercise("8.6")
def test_segment_size_at_1_mib_and_10_mib(learner, rng):
    gen = np_generator(rng)
    cases = [(512,), (MiB,), (MiB + 512,), (10 * MiB - 512,), (10 * MiB,), (10 * MiB + 512,), (12 * MiB,),
             (11 * MiB + 512,), (512 * int(gen.integers(1, 2048)),), (512 * int(gen.integers(2049, 20480)),),
             (512 * int(gen.integers(20480, 400_000)),)]
    _check(learner, "segment_size", cases,
           "small requests get a 2 MiB segment, large ones below 10 MiB a 20 MiB one, from 10 MiB on their own "
           "size rounded up to 2 MiB")


@exercise("8.6")
def test_should_split_keeps_only_useful_remainders(learner, rng):
    gen = np_generator(rng)
    size = 512 * int(gen.integers(1, 1024))
    large = 512 * int(gen.integers(2049, 20000))
    cases = [(size, size, SMALL), (size + 512, size, SMALL), (2 * MiB, size, SMALL),
             (large + MiB, large, LARGE), (large + MiB + 512, large, LARGE), (large + MiB - 512, large, LARGE),
             (12 * MiB, 11 * MiB + 512, LARGE), (20 * MiB, large, LARGE), (large, large, LARGE)]
    _check(learner, "should_split", cases,
           "a remainder is kept as a free block if it can serve a request of its pool: at least 512 bytes in the "
           "small pool, more than 1 MiB in the large pool")


def _run(sizes_module, ops) -> list[dict]:
    from minigrad.memory.allocator import caching_allocator, sizes

    saved = {rule: getattr(sizes, rule) for rule in RULES}
    try:
        for rule in RULES:
            setattr(sizes, rule, getattr(sizes_module, rule))
        allocator = caching_allocator.CachingAllocator()
        handles, states = [], []
        for op, value in ops:
            if op == "malloc":
                handles.append(allocator.malloc(value))
            else:
                allocator.free(handles[value])
            states.append({"segments": [[(b.address - s.address, b.size, b.allocated) for b in s.blocks()]
                                        for _, s in sorted(allocator.segments.items())],
                           "reserved": allocator.reserved_bytes, "allocated": allocator.allocated_bytes})
        return states
    finally:
        for rule, fn in saved.items():
            setattr(sizes, rule, fn)


@probe
def allocator_with_my_rules(submission, state, ops):
    """The library's allocator run with the learner's size rules: the segments after each call."""
    return _run(submission, ops)


@exercise("8.6")
def test_the_allocator_runs_on_your_rules(learner, rng):
    gen = np_generator(rng)
    ops = [("malloc", 11 * MiB + 1),  # a 12 MiB segment; what is left (1 MiB - 512) stays with the block
           ("malloc", int(gen.integers(1, MiB))),  # small pool
           ("malloc", 10 * MiB),  # its own 10 MiB segment
           ("malloc", MiB),  # exactly 1 MiB: small pool, a new 2 MiB segment
           ("malloc", int(gen.integers(MiB + 1, 9 * MiB))),  # a 20 MiB segment, split
           ("free", 0), ("malloc", 11 * MiB + 512)]  # reuses the 12 MiB block whole
    got = learner.probe("allocator_with_my_rules", ops)
    expected = _run(_reference(), ops)
    for k, (mine, theirs) in enumerate(zip(got, expected)):
        calls = ", ".join(f"{op}({value})" if op == "malloc" else f"free(#{value})" for op, value in ops[:k + 1])
        for key in ("segments", "reserved", "allocated"):
            assert mine[key] == theirs[key], (
                f"the library's CachingAllocator with your size rules, after {calls}: {key} "
                f"{'(blocks as offset in the segment, size, allocated)' if key == 'segments' else ''} "
                f"{mine[key]}, expected {theirs[key]}")
