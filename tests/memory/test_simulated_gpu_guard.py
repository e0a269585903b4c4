"""The core's allocation guard: a refused buffer is never registered, and the core stays consistent."""

import gc

import numpy as np
import pytest

import minigrad.tensor as mt
import minigrad.memory as mm
from minigrad.memory import buffers
from minigrad.memory.scratch import scratch


class Refused(MemoryError):
    pass


class Ledger:
    """Every event an observer (or a guard) receives."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def kinds(self):
        return [e.event for e in self.events]


@pytest.fixture(autouse=True)
def nothing_left_registered():
    gc.collect()
    yield
    assert not buffers.guards and not buffers.observers, "a test left a guard or an observer registered"


def refuse_above(limit):
    def guard(event):
        if event.event == "reserve" and event.nbytes > limit:
            raise Refused(f"{event.nbytes} bytes refused")
    return guard


def test_a_refused_buffer_is_not_registered_and_no_observer_hears_of_it():
    ledger = Ledger()
    with mm.add_allocation_observer(ledger), mm.add_allocation_guard(refuse_above(1000)):
        small = mt.zeros(10)  # 40 bytes: admitted
        before = mm.live_bytes()
        with pytest.raises(Refused):
            mt.zeros(1000)  # 4,000 bytes: refused
        gc.collect()
        assert mm.live_bytes() == before
        assert ledger.kinds() == ["alloc"]  # the refused buffer: no "alloc", and no "free" when its array goes
        del small
    assert ledger.kinds() == ["alloc", "free"]


def refuse_op(name):
    def guard(event):
        if event.event == "reserve" and event.op == name:
            raise Refused(f"{name} refused")
    return guard


def test_an_op_whose_output_is_refused_leaves_its_saved_buffers_to_be_freed_when_they_go():
    ledger = Ledger()
    x = mt.tensor(np.ones((4, 100), dtype=np.float32), requires_grad=True)
    guard = refuse_op("mul")
    with mm.add_allocation_observer(ledger), mm.add_allocation_guard(guard):
        with pytest.raises(Refused):
            (x.exp() * 2.0).sum()  # exp saves its output for backward; the product is refused
        gc.collect()
        allocated = {e.buffer_id for e in ledger.events if e.event == "alloc"} - {mm.buffer_id(x)}
        freed = {e.buffer_id for e in ledger.events if e.event == "free"}
        assert allocated and allocated == freed  # what was registered on the way was freed again
        mm.remove_allocation_guard(guard)
        y = (x.exp() * 2.0).sum()  # the core works on
        y.backward()
    assert np.allclose(x.grad.numpy(), 2.0 * np.e)


def test_earlier_guards_hear_a_cancel_when_a_later_one_refuses():
    first = Ledger()
    with mm.add_allocation_observer(Ledger()), mm.add_allocation_guard(first), \
            mm.add_allocation_guard(refuse_above(100)):
        with pytest.raises(Refused):
            mt.zeros(100)
    assert first.kinds() == ["reserve", "cancel"]
    assert first.events[0].buffer_id == first.events[1].buffer_id and first.events[1].nbytes == 400


def test_scratch_memory_is_guarded_too():
    ledger = Ledger()
    with mm.add_allocation_observer(ledger), mm.add_allocation_guard(refuse_above(1000)):
        with pytest.raises(Refused):
            with scratch(5000):
                pass
        with scratch(500):
            pass
    assert ledger.kinds() == ["alloc", "free"] and ledger.events[0].nbytes == 500


def test_guards_are_checked_and_removed():
    with pytest.raises(TypeError, match="add_allocation_guard"):
        mm.add_allocation_guard("not callable")
    guard = refuse_above(0)
    mm.add_allocation_guard(guard)
    mm.remove_allocation_guard(guard)
    mm.remove_allocation_guard(guard)  # twice is fine
    assert guard not in buffers.guards
