"""The chapter-08 checks' trusted ``_split`` (it stands in for the learner's 8.3 while 8.4 is graded) is the library's.

The checks keep their own copy, since under ``use_exercise`` the library's
method may be the learner's; this pins the two to the same blocks, pools
and statistics after every call of many random malloc/free sequences.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.grading.checks.ch08_allocator import _run, _trusted_split
from minigrad.memory.allocator import caching_allocator
from minigrad.memory.allocator.caching_allocator import CachingAllocator

KiB, MiB = 1024, 1024 * 1024


class _TrustedSplit(CachingAllocator):
    _split = _trusted_split


def _with_stats(allocator_class):
    """``_run``'s states, each with the allocator's statistics, for ``allocator_class`` standing in for the library's."""
    made = []

    class Recording(allocator_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    def run(policy, ops):
        states, stats = [], []
        original = Recording.malloc, Recording.free, Recording.empty_cache

        def after(method):
            def call(self, *args):
                result = method(self, *args)
                stats.append(self.stats.as_dict())
                return result
            return call

        Recording.malloc, Recording.free, Recording.empty_cache = (after(m) for m in original)
        states = _run(SimpleNamespace(CachingAllocator=Recording), policy, ops)
        return states, stats

    return run


def _random_ops(gen, calls: int) -> list:
    ops, live, made = [], [], 0
    for _ in range(calls):
        if live and gen.random() < 0.45:
            ops.append(("free", live.pop(int(gen.integers(len(live))))))
        else:
            small = gen.random() < 0.7
            ops.append(("malloc", int(gen.integers(1, 256 * KiB) if small else gen.integers(MiB, 6 * MiB))))
            live.append(made)
            made += 1
    return ops + [("free", k) for k in live] + [("empty_cache", 0)]


@pytest.mark.parametrize("policy", ["best_fit", "first_fit"])
def test_the_trusted_split_leaves_the_same_states_as_the_librarys(policy):
    assert caching_allocator.CachingAllocator._split is not _trusted_split
    gen = np.random.default_rng(8)
    for _ in range(40):
        ops = _random_ops(gen, int(gen.integers(5, 40)))
        library, trusted = _with_stats(CachingAllocator)(policy, ops), _with_stats(_TrustedSplit)(policy, ops)
        assert trusted == library, ops
        assert all("error" not in state for state in library[0])
