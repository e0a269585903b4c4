"""Dynamic Tensor Rematerialization's eviction heuristic (minigrad.checkpoint.eviction), on its own."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad.checkpoint.eviction import Candidate, choose_victim, dtr_score, remat_cost


def test_score_is_cost_over_bytes_times_staleness():
    assert dtr_score(600.0, 3, 4) == 50.0
    assert dtr_score(600.0, 6, 4) < dtr_score(600.0, 3, 4)  # bigger goes first
    assert dtr_score(600.0, 3, 8) < dtr_score(600.0, 3, 4)  # staler goes first
    assert dtr_score(300.0, 3, 4) < dtr_score(600.0, 3, 4)  # cheaper goes first


@pytest.mark.parametrize("nbytes, staleness", [(3, 0), (0, 4), (3, -1)])
def test_a_tensor_used_just_now_or_empty_is_never_a_victim(nbytes, staleness):
    assert dtr_score(1.0, nbytes, staleness) == math.inf


COSTS = {"a": 1.0, "b": 10.0, "c": 100.0, "d": 1000.0}


def test_remat_cost_adds_the_evicted_ancestors_cascading():
    parents = {"d": ["c"], "c": ["b"], "b": ["a"], "a": []}
    evicted = {"a", "b", "c"}
    cost = remat_cost("d", COSTS.get, lambda k: [p for p in parents[k] if p in evicted])
    assert cost == 1111.0


def test_remat_cost_stops_at_a_resident_ancestor():
    parents = {"d": ["c"], "c": ["b"], "b": ["a"], "a": []}
    evicted = {"c", "a"}  # b is resident: a is not needed
    assert remat_cost("d", COSTS.get, lambda k: [p for p in parents[k] if p in evicted]) == 1100.0


def test_remat_cost_counts_a_shared_ancestor_once():
    parents = {"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []}  # a diamond
    assert remat_cost("d", COSTS.get, lambda k: parents[k]) == 1111.0


def test_remat_cost_without_evicted_parents_is_the_own_cost():
    assert remat_cost("c", COSTS.get, lambda k: []) == 100.0


def test_victim_is_the_lowest_score_and_ties_go_to_the_first():
    cheap_big = Candidate("cheap_big", 10.0, 1000, 1)
    costly = Candidate("costly", 1e6, 1000, 1)
    stale = Candidate("stale", 1e3, 1000, 500)  # 1e3 / 5e5 = 0.002 < 10 / 1e3 = 0.01
    assert choose_victim([cheap_big, costly]) is cheap_big
    assert choose_victim([cheap_big, costly, stale]) is stale
    twin = Candidate("twin", 10.0, 1000, 1)
    assert choose_victim([cheap_big, twin]) is cheap_big
    assert choose_victim([twin, cheap_big]) is twin


def test_no_victim_when_nothing_may_go():
    assert choose_victim([]) is None
    assert choose_victim([Candidate("now", 1.0, 10, 0)]) is None


candidates = st.lists(st.builds(Candidate, st.integers(0, 10**6), st.floats(0.0, 1e9), st.integers(0, 10**6),
                                st.integers(0, 100)), max_size=12)


@given(candidates)
def test_the_victim_has_the_smallest_finite_score(cands):
    victim = choose_victim(cands)
    finite = [c for c in cands if dtr_score(c.remat_cost, c.nbytes, c.staleness) < math.inf]
    if not finite:
        assert victim is None
        return
    best = min(dtr_score(c.remat_cost, c.nbytes, c.staleness) for c in finite)
    assert dtr_score(victim.remat_cost, victim.nbytes, victim.staleness) == best
    assert victim is next(c for c in cands if dtr_score(c.remat_cost, c.nbytes, c.staleness) == best)
