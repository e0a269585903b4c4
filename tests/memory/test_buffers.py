"""The buffer registry: every buffer reported once with its tag, and reported freed when its last user goes."""

import gc

import numpy as np
import pytest

import minigrad.memory as mm
import minigrad.tensor as mt
from minigrad.memory import buffers
from minigrad.tensor.backend import root_array

# ----------------------------------------------------------------------------- allocation observer


@pytest.fixture
def events():
    seen = []
    gc.collect()
    handle = mm.add_allocation_observer(seen.append)
    yield seen
    handle.remove()


def test_observer_sees_allocations_and_frees_with_exact_bytes(events):
    x = mt.zeros(10, 10)
    assert [e.event for e in events] == ["alloc"]
    alloc = events[0]
    assert alloc.nbytes == 400 and alloc.tag == "tensor" and alloc.device == str(x.device)
    assert mm.buffer_id(x) == alloc.buffer_id and alloc.buffer_id in mm.live_buffers()
    del x
    assert [e.event for e in events] == ["alloc", "free"]
    assert events[1].buffer_id == alloc.buffer_id and events[1].nbytes == 400


def test_views_share_the_buffer_and_are_not_counted_again(events):
    x = mt.zeros(4, 6)
    views = [x.T, x[1:], x.reshape(24), x.view(2, 12), x.unsqueeze(0), x.expand(3, 4, 6), x.detach(), x.T.T]
    assert len([e for e in events if e.event == "alloc"]) == 1
    buffer = mm.buffer_id(x)
    assert all(mm.buffer_id(v) == buffer for v in views)
    del x
    assert not [e for e in events if e.event == "free"]  # the views keep the buffer alive
    del views
    assert [e.event for e in events] == ["alloc", "free"]


def test_tags_follow_what_the_buffer_is_for(events):
    w = mt.randn(3, 2, requires_grad=True)
    x = mt.randn(4, 3)
    h = (x @ w).relu()
    with mt.no_grad():
        t = x * 2
    h.sum().backward()
    tags = {e.buffer_id: e.tag for e in events if e.event == "alloc"}
    assert tags[mm.buffer_id(w)] == "tensor" and tags[mm.buffer_id(x)] == "tensor"
    assert tags[mm.buffer_id(h)] == "activation"
    assert tags[mm.buffer_id(t)] == "temporary"
    assert tags[mm.buffer_id(w.grad)] == "gradient"
    with mm.allocation_tag("optimizer_state"):
        m = mt.zeros_like(w)
    assert events[-1].tag == "optimizer_state" and mm.buffer_id(m) == events[-1].buffer_id
    mm.set_buffer_tag(w, "parameter")
    assert events[-1].event == "retag" and events[-1].tag == "parameter" and events[-1].buffer_id == mm.buffer_id(w)
    assert mm.live_buffers()[mm.buffer_id(w)] == (24, "parameter", str(w.device))


def test_live_bytes_return_to_zero_after_a_training_step(events):
    w = mt.randn(8, 4, requires_grad=True)

    def step():
        x = mt.randn(16, 8)
        loss = (x @ w).tanh().mean()
        loss.backward()
        with mt.no_grad():
            w.sub_(0.1 * w.grad)
        w.grad = None

    step()
    step()
    live = {k: v for k, v in mm.live_buffers().items()}
    assert list(live.values()) == [(128, "tensor", str(w.device))]  # only w is left
    allocs = sum(e.nbytes for e in events if e.event == "alloc")
    frees = sum(e.nbytes for e in events if e.event == "free")
    assert allocs - frees == 128


def test_observer_handle_removes_the_observer():
    seen = []
    with mm.add_allocation_observer(seen.append):
        mt.zeros(3)
    mt.zeros(3)
    assert [e.event for e in seen] == ["alloc", "free"]
    with pytest.raises(TypeError, match="callable"):
        mm.add_allocation_observer(42)


def _tag(tensor) -> str:
    return mm.live_buffers()[mm.buffer_id(tensor)][1]


def test_outputs_saved_for_backward_are_activations_and_the_others_outputs(events):
    w = mt.randn(3, 2, requires_grad=True)
    x = mt.randn(4, 3)
    y = x @ w  # matmul saves x and w, not its output
    assert _tag(y) == "output"
    z = y.tanh()  # tanh saves its output ...
    assert _tag(z) == "activation" and _tag(y) == "output"
    p = y * 3.0  # ... and mul saves its operands: y is now kept alive for backward
    assert _tag(y) == "activation" and _tag(p) == "output"
    assert [e.event for e in events if e.buffer_id == mm.buffer_id(y)] == ["alloc", "retag"]
    assert _tag(x) == "tensor"  # inputs keep their own category


def test_buffers_a_node_keeps_that_no_tensor_wraps_are_reported(events):
    from minigrad import nn

    conv = nn.Conv2d(1, 2, 3)
    mm.set_buffer_tag(conv.weight, "parameter")
    x = mt.randn(2, 1, 6, 6)
    y = conv(x)
    cols = y.grad_fn._saved[0]  # im2col: (2*4*4, 3*3*1), an array only the node holds
    assert cols.nbytes == 2 * 4 * 4 * 9 * 4
    alloc = [e for e in events if e.event == "alloc" and e.nbytes == cols.nbytes]
    assert [e.tag for e in alloc] == ["activation"]
    del cols
    y.sum().backward()  # releases it
    assert [e.event for e in events if e.buffer_id == alloc[0].buffer_id] == ["alloc", "free"]
    assert {e.tag for e in events if e.event == "alloc" and e.tag == "temporary"}  # gradients in flight
    assert mm.live_bytes() == sum(size for size, _, _ in mm.live_buffers().values())


def test_report_temporary_shows_a_scratch_array_until_it_goes_away(events):
    scratch = mm.report_temporary(np.ones(100))
    assert events[-1].event == "alloc" and events[-1].tag == "temporary" and events[-1].nbytes == 800
    del scratch
    assert events[-1].event == "free"
    handle_events = len(events)
    mm.remove_allocation_observer(events.append)
    mm.report_temporary(np.ones(3))  # nobody observes: nothing happens
    mm.add_allocation_observer(events.append)
    assert len(events) == handle_events


def test_a_gradient_summed_from_two_consumers_is_reported_before_the_node_uses_it(events):
    from minigrad.tensor.function import Function

    received = []

    class Probe(Function):  # records whether the gradient it receives is a reported buffer, and its tag
        def forward(ctx, a):
            return a * 1.0

        def backward(ctx, grad):
            root = grad if grad.base is None else root_array(grad)
            record = buffers.reported.get(id(root))
            received.append(None if record is None else record[2])
            return grad

    x = mt.randn(5, requires_grad=True)
    h = Probe.apply(x)
    (h * 3.0 + h * 4.0).sum().backward()  # h has two consumers: its gradient is their sum, made by backward()
    assert received == ["temporary"]


def test_a_retained_gradient_in_flight_becomes_a_gradient(events):
    x = mt.randn(4, 3, requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    (h * 3.0).sum().backward()  # h's gradient is reported in flight (temporary), then kept as h.grad
    assert mm.live_buffers()[mm.buffer_id(h.grad)][1] == "gradient"
    assert mm.live_buffers()[mm.buffer_id(x.grad)][1] == "gradient"


def test_the_memory_stage_listens_only_while_something_observes():
    from minigrad import nn, optim
    from minigrad.nn import module_hooks
    from minigrad.optim import step_hooks, update_kernels
    from minigrad.tensor import events

    def quiet():
        return (all(getattr(events, name) == () for name in events.EVENTS) and not module_hooks.active
                and not module_hooks.parameter_registration and not step_hooks.pre and not step_hooks.post
                and not update_kernels._update_hooks and not step_hooks._state_init)

    assert quiet()
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with mm.track(model, opt) as mem:
        assert not quiet() and module_hooks.active and events.op_ran
        model(mt.randn(4, 3)).sum().backward()
        opt.step()
    assert quiet() and mem.step == 1
    with mm.add_allocation_observer(lambda event: None):  # buffers only: no module hooks, no phases
        assert events.tensor_made and not module_hooks.active and not events.backward_began
    assert quiet()
