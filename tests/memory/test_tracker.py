"""``minigrad.memory.track()``: exact bytes by category on small hand-computed cases, views, frees, the peak split.

The model used throughout is ``Sequential(Linear(4, 8), ReLU(), Linear(8, 3))`` in float32 on a batch of 5:
parameters 4*8*4 + 8*4 + 8*3*4 + 3*4 = 128 + 32 + 96 + 12 = 268 bytes, so gradients are 268 bytes and
Adam's two moments 2 * 268 = 536 bytes; ReLU keeps its (5, 8) output for backward: 160 bytes.
"""

import gc

import pytest

import minigrad.memory as memory
import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory import buffers, phases

PARAMS = 128 + 32 + 96 + 12


def small_model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def split(**nonzero) -> dict:
    out = dict.fromkeys(memory.tracker.CATEGORIES, 0)
    out.update(nonzero)
    return out


@pytest.fixture(autouse=True)
def no_observers_left():
    gc.collect()
    yield
    assert not buffers.observers and not phases.observers, "a tracker left an observer registered"


def test_linear_layers_with_adam_parameters_gradients_and_twice_the_state():
    model = small_model()
    optimizer = optim.Adam(model.parameters())
    x = mt.randn(5, 4)
    with memory.track(model, optimizer) as mem:
        assert mem.by_category() == split(parameter=PARAMS)
        out = model(x)
        # the input batch (5*4*4), ReLU's saved output (5*8*4), the last Linear's output (5*3*4) held by `out`
        assert mem.by_category() == split(parameter=PARAMS, input=80, activation=160, temporary=60)
        out.sum().backward()
        assert mem.by_category() == split(parameter=PARAMS, gradient=PARAMS, input=80, temporary=60)
        optimizer.step()
        assert mem.by_category() == split(parameter=PARAMS, gradient=PARAMS, optimizer_state=2 * PARAMS,
                                          input=80, temporary=60)
        assert mem.current == sum(mem.by_category().values()) == 3 * PARAMS + PARAMS + 140
    # Adam's scratch is 2 parameter-sized arrays; the peak is at the second weight's update (96 bytes):
    # its scratch 2 * 96 while the state of the three earlier tensors and its own are allocated
    assert mem.peak_by_category == split(parameter=PARAMS, gradient=PARAMS, optimizer_state=2 * (128 + 32 + 96),
                                         temporary=60 + 2 * 96, input=80)
    assert mem.peak == sum(mem.peak_by_category.values())


def test_a_view_is_never_counted_twice_and_a_buffer_is_freed_with_its_last_user():
    with memory.track() as mem:
        x = mt.zeros(10, 10)
        assert mem.current == 400
        views = [x.T, x[2:], x.reshape(100), x.view(4, 25), x.unsqueeze(0), x.expand(3, 10, 10), x.detach(), x.T.T]
        assert mem.current == 400 and len(mem.events) == 1
        del x
        gc.collect()
        assert mem.current == 400  # the views still use the buffer
        views.pop()
        del views[:4]
        assert mem.current == 400
        del views[:]
        gc.collect()
        assert mem.current == 0
    kinds = [(e.kind, e.nbytes, e.total) for e in mem.timeline]
    assert kinds == [("alloc", 400, 400), ("free", -400, 0)]


def test_saved_arrays_keep_their_buffer_until_backward_frees_them():
    a = mt.randn(6, 5, requires_grad=True)
    with memory.track() as mem:
        y = a.exp()  # exp saves its output: an activation of 6*5*4 bytes
        loss = y.sum()
        assert mem.by_category()["activation"] == 120
        del y
        gc.collect()
        assert mem.by_category()["activation"] == 120  # still held by the graph
        loss.backward()
        gc.collect()
        assert mem.by_category()["activation"] == 0
        assert mem.by_category()["gradient"] == 120


def test_peak_split_is_taken_at_the_moment_of_the_peak():
    with memory.track() as mem:
        a = mt.zeros(1000)  # 4000 input
        with mt.no_grad():
            b = a * 2  # 4000 temporary
        del b
        c = mt.zeros(500)  # 2000 input
        assert mem.current == 6000
    assert mem.peak == 8000
    assert mem.peak_by_category == split(input=4000, temporary=4000)
    assert mem.timeline[mem.peak_index].total == 8000
    del a, c


def test_phases_are_marked_automatically_and_by_hand():
    model = small_model()
    optimizer = optim.Adam(model.parameters())
    x = mt.randn(5, 4)
    with memory.track(model, optimizer) as mem:
        for _ in range(2):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        mem.phase("eval")
        with mt.no_grad():
            model(x)
        with mem.phase("probe"):
            mt.zeros(1001)
        mt.zeros(1002)
    events = mem.timeline
    assert [e.index for e in events] == list(range(len(events)))
    step0 = [e.phase for e in events if e.step == 0]
    order = [p for i, p in enumerate(step0) if p and (i == 0 or step0[i - 1] != p)]
    assert order == ["forward", "backward", "optimizer"]
    assert {e.category for e in events if e.phase == "optimizer" and e.kind == "alloc"} == {"optimizer_state", "temporary"}
    assert not any(e.category == "optimizer_state" for e in events if e.step == 1)  # the state is made once
    assert {e.step for e in events} == {0, 1, 2}
    assert [e.phase for e in events if e.kind == "alloc" and e.nbytes == 4004] == ["probe"]
    assert [e.phase for e in events if e.kind == "alloc" and e.nbytes == 4008] == ["eval"]
    assert any(e.phase == "eval:forward" for e in events)
    assert {e.op for e in events if e.phase == "backward" and e.kind == "alloc"} >= {"linear_backward", "relu_backward"}
    assert all(e.op == "Adam.step" for e in events if e.phase == "optimizer")
    assert {(e.module, e.op) for e in events if e.phase == "forward" and e.kind == "alloc"} == {
        ("0", "linear"), ("1", "relu"), ("2", "linear")}


def test_by_module_counts_what_each_forward_saved_for_backward():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    x = mt.randn(5, 4)
    with memory.track() as mem:
        out = model(x)
    # Linear saves its input (an activation that already counts for whoever saved it) and its weight;
    # ReLU and Tanh keep their outputs: (5, 8) and (5, 16) float32
    assert mem.by_module() == {"0": 0, "1": 5 * 8 * 4, "2": 0, "3": 5 * 16 * 4, "4": 0, "Sequential": 0}
    assert sum(mem.by_module().values()) == mem.by_category()["activation"]
    del out


def test_a_model_made_before_the_block_is_counted_from_its_first_call():
    model = small_model()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(mt.randn(5, 4)).sum().backward()
    optimizer.step()  # momentum buffers now exist, unreported
    x = mt.randn(5, 4)
    with memory.track() as mem:
        assert mem.current == 0
        model(x)
        assert mem.by_category()["parameter"] == PARAMS and mem.by_category()["gradient"] == PARAMS
        assert mem.by_category()["input"] == 80
        optimizer.step()
        assert mem.by_category()["optimizer_state"] == PARAMS
    assert mem.preexisting == 3 * PARAMS + 80


def test_the_tracker_stops_observing_even_after_an_error():
    with pytest.raises(ZeroDivisionError):
        with memory.track():
            1 / 0
    assert not buffers.observers and not phases.observers
    mem = memory.track()
    with pytest.raises(RuntimeError, match="already active"):
        with mem:
            with mem:
                pass
    with pytest.raises(RuntimeError, match="has finished"):  # single use: a second block would count twice
        with mem:
            pass
    assert not buffers.observers and not phases.observers


def test_report_and_timeline_text():
    model = small_model()
    with memory.track(model, ground_truth=True) as mem:
        model(mt.randn(5, 4)).sum().backward()
    text = mem.report()
    for category in memory.tracker.CATEGORIES:
        assert category in text
    assert "tracemalloc peak" in text and "saved for backward by module" in text
    table = mem.format_timeline(limit=8)
    assert "linear" in table and "more events" in table


def test_timeline_category_totals_add_up_to_the_running_total():
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))  # the first output becomes an activation when saved
    optimizer = optim.Adam(model.parameters())
    with memory.track(model, optimizer) as mem:
        for _ in range(2):
            optimizer.zero_grad()
            model(mt.randn(5, 4)).sum().backward()
            optimizer.step()
    rows = memory.timeline.category_totals(mem.timeline, mem.baseline_by_category)
    retags = [e for e in mem.timeline if e.kind == "retag"]
    assert [(e.from_category, e.category, e.nbytes, e.module, e.op) for e in retags[:1]] == [
        ("temporary", "activation", 5 * 8 * 4, "1", "linear")]
    for event, row in zip(mem.timeline, rows):
        assert sum(row.values()) == event.total and min(row.values()) >= 0
    assert rows[-1] == mem.by_category()
    assert max(e.total for e in mem.timeline) == mem.peak
    assert rows[mem.peak_index] == mem.peak_by_category
