"""Trace replay: hand-made traces, and a trace recorded from a real MNIST-MLP training step under both policies."""

import io

import pytest

from minigrad.memory import (
    compare_policies, compare_policies_on_training_step, record_trace, record_training_step, replay, replay_states,
)
from minigrad.memory.allocator.sizes import MiB, round_size


def peak_of_rounded_sizes(trace) -> int:
    """The peak of allocated bytes, counted from the trace alone (what any policy must reach)."""
    sizes, current, peak = {}, 0, 0
    for event in trace:
        if event[0] == "alloc":
            sizes[event[1]] = round_size(event[2])
            current += sizes[event[1]]
            peak = max(peak, current)
        else:
            current -= sizes.pop(event[1])
    return peak


def test_replay_returns_stats_and_one_timeline_entry_per_event():
    trace = [("alloc", "a", 1000), ("alloc", "b", 5 * MiB), ("free", "a"), ("alloc", "c", 100), ("free", "b")]
    result = replay(trace, "best_fit")
    assert result.policy == "best_fit"
    assert len(result.reserved) == len(result.allocated) == len(result.fragmentation) == len(trace)
    assert result.peak_reserved == 2 * MiB + 20 * MiB
    assert result.peak_allocated == 1024 + 5 * MiB
    assert result.allocated[-1] == 512 and result.stats["allocation.all.current"] == 1


def test_first_fit_can_need_more_memory_than_best_fit_on_the_same_trace():
    # holes of 1 MiB (low address) and 512 KiB; a 512 KiB request then a 1 MiB one: best fit keeps the 1 MiB hole
    # for the 1 MiB request, first fit cuts it and must reserve a new segment
    kib = 1024
    trace = [("alloc", "hole1", MiB), ("alloc", "x", 256 * kib), ("alloc", "hole2", 512 * kib),
             ("alloc", "y", 256 * kib), ("free", "hole1"), ("free", "hole2"),
             ("alloc", "p", 512 * kib), ("alloc", "q", MiB)]
    results = compare_policies(trace)
    assert results["best_fit"].peak_reserved == 2 * MiB
    assert results["first_fit"].peak_reserved == 4 * MiB
    assert results["first_fit"].peak_allocated == results["best_fit"].peak_allocated == peak_of_rounded_sizes(trace)


def test_replay_names_the_bad_event():
    with pytest.raises(ValueError, match=r"event 1 .* frees id 'b', which is not allocated"):
        replay([("alloc", "a", 1), ("free", "b")])
    with pytest.raises(ValueError, match=r"event 1 .* allocates id 'a', which is still allocated"):
        replay([("alloc", "a", 1), ("alloc", "a", 2)])
    with pytest.raises(ValueError, match="expected"):
        replay([("resize", "a", 1)])


def test_record_trace_sees_allocations_and_frees_of_the_code_it_runs():
    import minigrad.tensor as mt

    def step():
        kept = mt.zeros(1000)
        temporary = mt.ones(300) * 2  # the ones and the product: the ones go at once, the product when we return
        del temporary
        return kept

    trace, kept = record_trace(step)
    allocs = [e for e in trace if e[0] == "alloc"]
    freed = {e[1] for e in trace if e[0] == "free"}
    assert [e[2] for e in allocs] == [4000, 1200, 1200]
    assert freed == {allocs[1][1], allocs[2][1]}  # the zeros are still alive
    assert kept.shape == (1000,)


def test_a_recorded_mlp_step_replays_under_both_policies():
    trace = record_training_step("mnist-mlp", batch_size=64)
    alive, tags = set(), set()
    for event in trace:
        if event[0] == "alloc":
            alive.add(event[1])
            tags.add(event[3])
        else:
            alive.remove(event[1])  # every free follows its alloc
    assert {"parameter", "gradient", "optimizer_state", "activation"} <= tags
    assert 784 * 256 * 4 in {e[2] for e in trace if e[0] == "alloc"}  # the first layer's weight
    out = io.StringIO()
    results = compare_policies_on_training_step("mnist-mlp", batch_size=64, file=out)
    text = out.getvalue()
    assert "MNIST MLP" in text and "batch 64" in text and "best_fit" in text and "first_fit" in text
    for result in results.values():
        assert result.peak_allocated == peak_of_rounded_sizes(trace)
        assert result.peak_reserved >= result.peak_allocated
        assert 0.0 <= result.peak_fragmentation < 1.0


def test_an_unknown_model_is_named_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown model 'resnet'; choose one of \['mnist-cnn', 'mnist-mlp'\]"):
        record_training_step("resnet")


SNAPSHOT_TRACE = [("alloc", "a", 1000, "activation"), ("alloc", "b", 5 * MiB, "parameter"), ("free", "a"),
                  ("alloc", "c", 100, "gradient"), ("free", "b")]


def test_snapshot_at_keeps_the_state_after_the_chosen_events():
    result = replay(SNAPSHOT_TRACE, "best_fit", snapshot_at=[0, 2, 4])
    assert sorted(result.snapshots) == [0, 2, 4]
    for index, snapshot in result.snapshots.items():
        prefix = replay(SNAPSHOT_TRACE[: index + 1], "best_fit", snapshot_at=[index])
        assert snapshot == prefix.snapshots[index]
        assert sum(s["total_size"] for s in snapshot) == result.reserved[index]
        assert sum(s["allocated_size"] for s in snapshot) == result.allocated[index]
    after_first = result.snapshots[0]
    assert [b["tag"] for b in after_first[0]["blocks"]] == ["activation", None]  # a 2 MiB small segment, split
    assert [b["state"] for b in after_first[0]["blocks"]] == ["active_allocated", "inactive"]
    assert replay(SNAPSHOT_TRACE).snapshots == {}  # nothing kept unless asked
    assert replay(SNAPSHOT_TRACE).reserved == result.reserved  # the timelines do not change


def test_snapshot_at_refuses_indices_the_trace_does_not_reach():
    with pytest.raises(ValueError, match=r"snapshot_at asks for events \[5, 9\] but the trace has only 5 events"):
        replay(SNAPSHOT_TRACE, snapshot_at=[1, 9, 5])
    with pytest.raises(ValueError, match=r"event indices \(ints >= 0\), got -1"):
        replay(SNAPSHOT_TRACE, snapshot_at=[-1])


def test_replay_states_yields_the_live_allocator_after_every_event():
    result = replay(SNAPSHOT_TRACE, "first_fit", snapshot_at=range(len(SNAPSHOT_TRACE)))
    seen = []
    for index, event, allocator in replay_states(SNAPSHOT_TRACE, "first_fit"):
        assert event == SNAPSHOT_TRACE[index] and allocator.policy == "first_fit"
        assert allocator.snapshot() == result.snapshots[index]
        assert allocator.fragmentation() == result.fragmentation[index]
        seen.append(index)
    assert seen == list(range(len(SNAPSHOT_TRACE)))
    assert allocator.memory_stats() == result.stats
    states = replay_states([("alloc", "a", 1), ("free", "b")])
    next(states)
    with pytest.raises(ValueError, match=r"event 1 .* frees id 'b'"):
        next(states)
