"""The core's events: who hears what, with which arguments, and that nobody listening costs an empty tuple."""

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import events

CORE = Path(mt.__file__).parent


@pytest.fixture
def heard():
    """Every event, as (name, arguments), while the test runs."""
    log = []
    handles = [events.listen(name, lambda *args, _name=name: log.append((_name, args))) for name in events.EVENTS]
    yield log
    for h in handles:
        h.remove()


def names(log):
    return [name for name, _ in log]


def test_nobody_listens_by_default():
    assert all(getattr(events, name) == () for name in events.EVENTS)


def test_a_tensor_made_by_a_factory_a_constructor_or_unpickling(heard):
    a = mt.zeros(3)
    b = mt.Tensor([1.0, 2.0])
    c = pickle.loads(pickle.dumps(b))
    made = [args for name, args in heard if name == "tensor_made"]
    assert made[0][0] is a._data and made[0][1] is a.device
    assert made[1][0] is b._data
    assert made[-1][0] is c._data


def test_an_op_ran_names_its_class_its_node_after_pack_hooks_and_its_output(heard):
    x = mt.randn(2, 3, requires_grad=True)
    y = x.tanh()
    with mt.no_grad():
        z = x * 2.0
    ops = [args for name, args in heard if name == "op_ran"]
    cls, node, out, device = ops[0]
    assert cls.__name__ == "Tanh" and node is y.grad_fn and out is y._data and device is y.device
    assert node._saved[0] is y._data  # tanh keeps its output
    cls, node, out, _ = ops[1]
    assert cls.__name__ == "Mul" and node is None and out is z._data
    packed = []
    with mt.saved_tensors_hooks(lambda a: ("packed", a), lambda p: p[1]):
        x.exp()
    node = [args[1] for name, args in heard if name == "op_ran"][-1]
    packed.extend(node._saved)
    assert packed and all(isinstance(p, tuple) and p[0] == "packed" for p in packed)


def test_backward_sends_began_nodes_gradients_stored_and_ended_in_order(heard):
    x = mt.randn(3, requires_grad=True)
    loss = (x * x).sum()
    del heard[:]
    loss.backward()
    order = names(heard)
    assert order[0] == "backward_began" and order[-1] == "backward_ended"
    assert order[1] == "array_made"  # the seed gradient
    assert order.count("node_backward") == order.count("node_returned") == 2  # sum, mul
    (stored,) = [args for name, args in heard if name == "grad_stored"]
    assert stored[0] is x and stored[1] is x.grad._data
    node, grad, grads, device = [args for name, args in heard if name == "node_returned"][-1]
    assert node.name == "MulBackward" and len(grads) == 2 and device is x.device


def test_backward_ended_is_sent_when_backward_raises(heard):
    x = mt.randn(3, requires_grad=True)
    y = x.exp()
    y.sum().backward()
    loss = y.sum()
    del heard[:]
    with pytest.raises(RuntimeError):
        loss.backward()  # the graph under y was freed
    assert names(heard)[0] == "backward_began" and names(heard)[-1] == "backward_ended"


def test_working_arrays_and_a_listener_that_removes_itself():
    calls = []

    def once(array, device):
        calls.append(array.shape)
        handle.remove()

    handle = events.listen("array_made", once)
    a = np.ones(4)
    assert events.working_array(a) is a
    events.working_array(np.ones(2))
    assert calls == [(4,)] and events.array_made == ()
    handle.remove()  # twice is fine


def test_listen_refuses_unknown_events_and_non_callables():
    with pytest.raises(ValueError, match="unknown event 'tensor_freed'"):
        events.listen("tensor_freed", print)
    with pytest.raises(TypeError, match="callable"):
        events.listen("op_ran", None)


def test_every_send_is_one_loop_over_the_tuple_the_core_reads():
    """Each place the core sends an event iterates ``events.<name>`` (an empty tuple when nobody listens)."""
    sends = {}
    for path in CORE.rglob("*.py"):
        if path.name == "events.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.For) and isinstance(node.iter, ast.Attribute) and \
                    isinstance(node.iter.value, ast.Name) and node.iter.value.id == "events":
                sends.setdefault(node.iter.attr, []).append(path.name)
    assert set(sends) == set(events.EVENTS), sends
