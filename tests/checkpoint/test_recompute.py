"""checkpoint(fn, *args): the gradients of the plain block, bit for bit, with one recompute per backward."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.amp import autocast
from minigrad.checkpoint import CheckpointError, checkpoint, count_recomputes
from minigrad.nn import functional as F
from minigrad.tensor import gradcheck, saved_tensors_hooks
from minigrad.tensor.autograd import topological_order


def _block(p=0.0):
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(p), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 6))


def _grads(*tensors):
    return [t.grad.cpu().numpy().copy() for t in tensors]


def _same_bits(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()


def _run(model, x, checkpointed, seed=7, **kwargs):
    """Parameter (and input) gradients of one loss.backward(), the block checkpointed or not."""
    for p in model.parameters():
        p.grad = None
    if x.requires_grad:
        x.grad = None
    mt.manual_seed(seed)
    y = checkpoint(model, x, **kwargs) if checkpointed else model(x)
    (y * y).sum().backward()
    return _grads(*model.parameters(), *([x] if x.requires_grad else []))


@pytest.mark.parametrize("p", [0.0, 0.5])
@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_gradients_are_bitwise_those_of_the_plain_block(p, input_requires_grad):
    mt.manual_seed(0)
    model = _block(p)
    x = mt.randn(5, 6, requires_grad=input_requires_grad)
    plain = _run(model, x, checkpointed=False)
    with count_recomputes() as recomputes:
        got = _run(model, x, checkpointed=True)
    _same_bits(plain, got)
    assert recomputes.count == 1 and recomputes.blocks == ["Sequential"]


def test_the_block_keeps_slots_not_arrays_and_the_frame_counts_its_recomputes():
    mt.manual_seed(0)
    model = _block()
    y = checkpoint(model, mt.randn(4, 6))
    nodes = topological_order(y.grad_fn)
    kept = [s for node in nodes for s in (getattr(node, "_saved", None) or ()) if not isinstance(s, (int, float))]
    assert kept and all(type(s).__name__ == "_Slot" for s in kept)
    frame = kept[0].frame
    assert frame.recomputations == 0
    y.sum().backward()
    assert frame.recomputations == 1


@pytest.mark.parametrize("dtype", [mt.float16, mt.bfloat16])
def test_autocast_mode_is_replayed_bitwise(dtype):
    mt.manual_seed(0)
    model = _block(0.25)
    x = mt.randn(5, 6)

    def run(checkpointed):
        model.zero_grad()
        mt.manual_seed(3)
        with autocast("cpu", dtype=dtype):
            y = checkpoint(model, x) if checkpointed else model(x)
            loss = y.float().pow(2).sum()
        loss.backward()
        return _grads(*model.parameters())

    _same_bits(run(False), run(True))


def test_retain_graph_backward_twice_recomputes_each_time():
    mt.manual_seed(0)
    model = _block(0.5)
    x = mt.randn(3, 6, requires_grad=True)
    once = _run(model, x, checkpointed=False)
    model.zero_grad()
    x.grad = None
    mt.manual_seed(7)
    loss = (checkpoint(model, x) ** 2).sum()
    with count_recomputes() as recomputes:
        loss.backward(retain_graph=True)
        first = _grads(*model.parameters(), x)
        loss.backward(retain_graph=True)
    assert recomputes.count == 2
    _same_bits(once, first)
    for a, b in zip(first, _grads(*model.parameters(), x)):
        np.testing.assert_array_equal(b, 2 * a)


def test_second_backward_without_retain_graph_raises_clearly():
    mt.manual_seed(0)
    loss = checkpoint(_block(), mt.randn(3, 6)).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*retain_graph=True"):
        loss.backward()


def test_parameters_get_gradients_when_no_input_requires_grad():
    mt.manual_seed(0)
    lin = nn.Linear(4, 3)
    y = checkpoint(lambda x: lin(x).relu(), mt.randn(2, 4))
    assert y.requires_grad
    y.sum().backward()
    assert lin.weight.grad is not None and lin.bias.grad is not None


def test_non_tensor_and_keyword_arguments():
    mt.manual_seed(0)
    w = mt.randn(4, 4, requires_grad=True)
    scale = mt.randn(4, requires_grad=True)
    x = mt.randn(3, 4, requires_grad=True)

    def fn(x, power, *, scale, name="block"):
        assert name == "block"
        return ((x @ w) * scale).tanh() ** power

    fn(x, 2, scale=scale).sum().backward()
    plain = _grads(w, scale, x)
    w.grad = scale.grad = x.grad = None
    checkpoint(fn, x, 2, scale=scale, name="block").sum().backward()
    _same_bits(plain, _grads(w, scale, x))


def test_tuple_and_list_outputs_and_a_backward_from_one_of_them():
    mt.manual_seed(0)
    x = mt.randn(3, 4, requires_grad=True)

    def fn(x):
        return x.exp().tanh(), [x.sigmoid() * 3]

    a, (b,) = fn(x)
    a.sum().backward()
    only_a = _grads(x)
    b.sum().backward()
    both = _grads(x)
    x.grad = None
    with count_recomputes() as recomputes:
        a, (b,) = checkpoint(fn, x)
        a.sum().backward()  # reads the slots on a's path, leaves b's filled
        _same_bits(only_a, _grads(x))
        b.sum().backward()  # ... and reads them: no second recompute
    _same_bits(both, _grads(x))
    assert recomputes.count == 1


def test_nested_checkpoints_give_the_same_gradients_and_keep_no_outer_activation():
    mt.manual_seed(0)
    outer_lin, inner_lin = nn.Linear(5, 5), nn.Linear(5, 5)
    x = mt.randn(4, 5, requires_grad=True)

    def inner(h):
        return inner_lin(h).tanh()

    def outer(x, nested):
        h = outer_lin(x).relu()
        h = checkpoint(inner, h) if nested else inner(h)
        return (h * h).sigmoid()

    outer(x, False).sum().backward()
    plain = _grads(x, *outer_lin.parameters(), *inner_lin.parameters())
    for t in (x, *outer_lin.parameters(), *inner_lin.parameters()):
        t.grad = None
    y = checkpoint(outer, x, True)
    # nothing under y keeps a real array: the inner frame keeps its input as a slot of the outer frame
    for node in topological_order(y.grad_fn):
        assert not any(isinstance(s, np.ndarray) for s in (getattr(node, "_saved", None) or ()))
    with count_recomputes() as recomputes:
        y.sum().backward()
    assert sorted(recomputes.blocks) == ["test_nested_checkpoints_give_the_same_gradients_and_keep_no_outer_activation.<locals>.inner",
                                         "test_nested_checkpoints_give_the_same_gradients_and_keep_no_outer_activation.<locals>.outer"]
    _same_bits(plain, _grads(x, *outer_lin.parameters(), *inner_lin.parameters()))


def test_checkpoint_inside_offloading_hooks_keeps_its_inputs_through_them():
    packed = []
    x = mt.randn(3, requires_grad=True)
    h = x * 2
    with saved_tensors_hooks(lambda t: packed.append(t) or ("kept", t.clone()), lambda p: p[1]):
        y = checkpoint(lambda h: h.exp().tanh(), h)
    assert len(packed) == 1  # only the block's input; the block's own tensors are its slots
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(np.exp(2 * x.detach().numpy())) ** 2) * np.exp(2 * x.detach().numpy()),
                               rtol=1e-6)


def test_in_place_change_of_an_input_after_forward_raises_naming_it():
    x = mt.randn(3, 4)
    w = mt.randn(4, 2, requires_grad=True)
    y = checkpoint(lambda a, b: (a @ b).tanh(), x, w)
    x.mul_(2)
    with pytest.raises(RuntimeError, match=r"input 0 of .*shape \(3, 4\).*modified in place.*version 0 -> 1.*clone"):
        y.sum().backward()


def test_in_place_change_of_a_keyword_input_raises_naming_it():
    x = mt.randn(3)
    w = mt.randn(3, requires_grad=True)
    y = checkpoint(lambda w, *, x: (w * x).exp(), w, x=x)
    x.add_(1)
    with pytest.raises(RuntimeError, match=r"input 'x' .*modified in place"):
        y.sum().backward()


def test_a_recompute_that_changes_a_shape_is_a_checkpoint_error():
    state = {"n": 4}
    w = mt.randn(6, requires_grad=True)

    def fn(w):
        return w[:state["n"]].exp()

    y = checkpoint(fn, w)
    state["n"] = 5
    with pytest.raises(CheckpointError, match=r"saved tensor 0 with shape \(5,\).*first forward saved shape \(4,\)"):
        y.sum().backward()


def test_a_recompute_that_saves_another_number_of_tensors_is_a_checkpoint_error():
    state = {"deep": False}
    w = mt.randn(3, requires_grad=True)

    def fn(w):
        h = w.exp()
        return h.tanh() if state["deep"] else h

    y = checkpoint(fn, w)
    state["deep"] = True
    with pytest.raises(CheckpointError, match="saved 2 tensors for backward, the first forward saved 1"):
        y.sum().backward()
    state["deep"] = False
    y = checkpoint(fn, w, determinism_check="none")
    state["deep"] = True
    y.sum().backward()  # no check: the recomputed tensors are used as they come
    np.testing.assert_allclose(w.grad.numpy(), np.exp(w.detach().numpy()), rtol=1e-6)


def test_rng_state_outside_the_block_is_left_where_backward_found_it():
    mt.manual_seed(0)
    model = _block(0.5)
    y = checkpoint(model, mt.randn(4, 6))
    mt.manual_seed(11)
    expected = mt.randn(3).numpy()
    mt.manual_seed(11)
    y.sum().backward()  # the recompute draws from the first run's state, then puts the generator back
    np.testing.assert_array_equal(mt.randn(3).numpy(), expected)


def test_without_preserve_rng_state_dropout_draws_another_mask():
    mt.manual_seed(0)
    model = _block(0.5)
    x = mt.randn(8, 6)
    plain = _run(model, x, checkpointed=False)
    got = _run(model, x, checkpointed=True, preserve_rng_state=False)
    assert any(a.tobytes() != b.tobytes() for a, b in zip(plain, got))


def test_under_no_grad_it_just_calls_the_block():
    calls = []
    with mt.no_grad():
        y = checkpoint(lambda x: calls.append(1) or x.exp(), mt.randn(2))
    assert calls == [1] and not y.requires_grad


def test_bad_arguments_get_clear_errors():
    x = mt.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="expected a callable block first, got Tensor"):
        checkpoint(x, x)
    with pytest.raises(ValueError, match="determinism_check must be one of"):
        checkpoint(lambda t: t, x, determinism_check="strict")
    with pytest.raises(ValueError, match="non-reentrant"):
        checkpoint(lambda t: t, x, use_reentrant=True)
    with pytest.raises(TypeError, match="context_fn\\(\\) must return a pair"):
        checkpoint(lambda t: t, x, context_fn=lambda: None)


def test_float64_gradcheck_of_checkpointed_blocks():
    mt.manual_seed(0)
    w = mt.randn(3, 3, dtype=mt.float64, requires_grad=True)
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)

    def block(x, w):
        return (x @ w).tanh().exp() * x

    assert gradcheck(lambda x, w: checkpoint(block, x, w), (x, w))
    lin = nn.Linear(3, 4).double()

    def with_module(x):
        return checkpoint(lambda h: F.gelu(lin(h)).sigmoid(), x)

    assert gradcheck(with_module, (x,))
    assert gradcheck(lambda x, w: checkpoint(lambda a: checkpoint(block, a, w).tanh(), x), (x, w))  # nested
