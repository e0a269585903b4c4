"""checkpoint_reentrant: the block as one Function node that keeps its inputs and recomputes once in backward."""

import warnings

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.amp import autocast
from minigrad.checkpoint import checkpoint
from minigrad.checkpoint.reentrant import CheckpointFunction, checkpoint_reentrant
from minigrad.memory import track
from minigrad.nn import functional as F
from minigrad.testing import strict_backend


class Block:
    """Linear -> tanh -> (dropout) -> * scale -> Linear, counting its calls."""

    def __init__(self, n_in=3, hidden=5, n_out=2, p=0.0, dtype=mt.float64, seed=0):
        mt.manual_seed(seed)
        self.first, self.second = nn.Linear(n_in, hidden, dtype=dtype), nn.Linear(hidden, n_out, dtype=dtype)
        self.p, self.calls = p, 0

    def parameters(self):
        return [*self.first.parameters(), *self.second.parameters()]

    def __call__(self, x, scale=1.0, shift=None):
        self.calls += 1
        h = self.first(x)
        if shift is not None:
            h = h + shift
        h = h.tanh()
        if self.p:
            h = F.dropout(h, self.p)
        return self.second(h * scale)

    def to(self, device):
        self.first.to(device)
        self.second.to(device)
        return self


def _grads(block, x, wrap, *args, seed=1):
    """Output, gradients of x and the parameters, and the next CPU draw after backward of sum(y * w)."""
    for t in [x, *block.parameters()]:
        t.grad = None
    mt.manual_seed(seed)
    y = wrap(block, x, *args) if wrap else block(x, *args)
    mt.rand(2)  # another block draws between forward and backward
    w = mt.tensor(np.linspace(-1.0, 1.0, int(np.prod(y.shape))).reshape(y.shape), dtype=y.dtype, device=y.device)
    (y * w).sum().backward()
    host = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    return host(y), [host(t.grad) for t in [x, *block.parameters()]], mt.rand(3).numpy()


def _assert_same(a, b):
    (ya, ga, ra), (yb, gb, rb) = a, b
    np.testing.assert_array_equal(ya, yb)
    for u, v in zip(ga, gb):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(ra, rb)


@pytest.mark.parametrize("p", [0.0, 0.5])
def test_gradients_output_and_the_generator_equal_the_unchecked_blocks(p):
    block = Block(p=p)
    x = mt.randn(4, 3, dtype=mt.float64, requires_grad=True)
    _assert_same(_grads(block, x, checkpoint_reentrant, 0.5), _grads(block, x, None, 0.5))


def test_the_block_is_one_node_that_saves_only_its_inputs():
    block = Block()
    x = mt.randn(4, 3, dtype=mt.float64, requires_grad=True)
    shift = mt.randn(4, 5, dtype=mt.float64)
    y = checkpoint_reentrant(block, x, 0.5, shift)
    assert y.grad_fn.name == "CheckpointFunctionBackward" and isinstance(y.grad_fn, CheckpointFunction)
    # the block's ops are not in the graph: the node's parents are its inputs'
    assert [n for n, _ in y.grad_fn.next_functions] == [x._accumulate_grad_node(), None]
    assert y.grad_fn.needs_input_grad == (False, True, False, False)  # the call, x, the scale, shift
    saved = y.grad_fn.saved_tensors
    assert len(saved) == 3 and saved[0] is x._data and saved[1] == 0.5 and saved[2] is shift._data


def test_the_block_runs_once_in_forward_and_once_per_backward():
    block = Block()
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    y = checkpoint_reentrant(block, x)
    assert block.calls == 1
    y.sum().backward(retain_graph=True)
    assert block.calls == 2
    first = x.grad.numpy().copy()
    y.sum().backward()  # the node kept its inputs: a second backward recomputes again
    assert block.calls == 3
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_forward_keeps_no_activation_and_backward_frees_what_it_recomputed():
    block = Block(n_in=16, hidden=64, n_out=8)
    x = mt.randn(32, 16, dtype=mt.float64, requires_grad=True)
    with track() as plain:
        y = block(x)
        kept_plain = plain.by_category()["activation"]
    del y
    with track() as mem:
        inside = x * 1.0  # an input the tracker sees being made: the checkpoint keeps it
        y = checkpoint_reentrant(block, inside)
        kept = mem.by_category()["activation"]
        y.sum().backward()
        after = mem.by_category()["activation"]
    assert kept_plain > 64 * 32 * 8 and kept == inside._data.nbytes
    assert after == inside._data.nbytes  # the recomputed graph is gone; only the input the test holds is left


def test_float64_gradcheck_through_the_node():
    block = Block(n_in=2, hidden=3, n_out=2)
    x = mt.randn(3, 2, dtype=mt.float64, requires_grad=True)
    shift = mt.randn(3, 3, dtype=mt.float64, requires_grad=True)
    assert mt.gradcheck(lambda a, b: checkpoint_reentrant(block, a, 0.7, b), (x, shift))


def test_plain_arguments_and_inputs_without_gradient():
    block = Block()
    x = mt.randn(3, 3, dtype=mt.float64, requires_grad=True)
    shift = mt.randn(3, 5, dtype=mt.float64)
    _assert_same(_grads(block, x, checkpoint_reentrant, -2.0, shift), _grads(block, x, None, -2.0, shift))
    assert shift.grad is None


def test_the_recompute_runs_under_the_first_runs_autocast():
    block = Block(dtype=mt.float32)
    x = mt.randn(4, 3, requires_grad=True)

    def run(wrap):
        with autocast("cpu", dtype=mt.bfloat16):
            return wrap(block, x) if wrap else block(x)

    y_plain = run(None)
    y_plain.double().sum().backward()
    plain = [x.grad.numpy().copy()] + [p.grad.double().numpy().copy() for p in block.parameters()]
    for t in [x, *block.parameters()]:
        t.grad = None
    y = run(checkpoint_reentrant)
    assert y.dtype is mt.bfloat16
    y.double().sum().backward()  # outside the region: the recompute enters it again
    mine = [x.grad.numpy()] + [p.grad.double().numpy() for p in block.parameters()]
    for u, v in zip(mine, plain):
        np.testing.assert_array_equal(u, v)


def test_nested_checkpoints_give_the_unchecked_gradients():
    inner, outer_block = Block(n_in=3, hidden=4, n_out=3, p=0.3, seed=2), Block(n_in=3, hidden=4, n_out=2, seed=3)

    def outer(x):
        return outer_block(checkpoint_reentrant(inner, x))

    def plain(x):
        return outer_block(inner(x))

    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    for wrap in (checkpoint_reentrant, checkpoint):
        for t in [x, *inner.parameters(), *outer_block.parameters()]:
            t.grad = None
        mt.manual_seed(5)
        wrap(outer, x).sum().backward()
        mine = [t.grad.numpy().copy() for t in [x, *inner.parameters(), *outer_block.parameters()]]
        for t in [x, *inner.parameters(), *outer_block.parameters()]:
            t.grad = None
        mt.manual_seed(5)
        plain(x).sum().backward()
        for u, t in zip(mine, [x, *inner.parameters(), *outer_block.parameters()]):
            np.testing.assert_allclose(u, t.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_on_another_device_type():
    device = strict_backend.register()
    block = Block(p=0.5).to(device)
    x = mt.randn(3, 3, dtype=mt.float64, device=device, requires_grad=True)
    _assert_same(_grads(block, x, checkpoint_reentrant, 0.5), _grads(block, x, None, 0.5))


def test_an_identity_block_returns_a_tensor_of_its_own():
    x = mt.randn(3, dtype=mt.float64, requires_grad=True)
    y = checkpoint_reentrant(lambda a: a, x)
    assert not mt.shares_memory(y, x)
    y.backward(mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64))
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


def test_without_an_input_that_requires_grad_parameters_get_none_with_a_warning():
    block = Block()
    x = mt.randn(2, 3, dtype=mt.float64)
    with pytest.warns(UserWarning, match="no argument of .* requires grad"):
        y = checkpoint_reentrant(block, x)
    assert not y.requires_grad and all(p.grad is None for p in block.parameters())


def test_outside_grad_mode_it_just_calls_the_block():
    block = Block()
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    with mt.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = checkpoint_reentrant(block, x)
    assert y.grad_fn is None and block.calls == 1


def test_an_input_changed_in_place_after_forward_is_refused():
    block = Block()
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    inside = x * 1.0
    y = checkpoint_reentrant(block, inside)
    with mt.no_grad():
        inside.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize("call, error, message", [
    (lambda x: checkpoint_reentrant("block", x), TypeError, "expected a callable block first, got str"),
    (lambda x: checkpoint_reentrant(lambda a, s=1.0: a * s, x, s=2.0), ValueError, r"keyword arguments \(s\)"),
    (lambda x: checkpoint_reentrant(lambda a: a * 2, x.to(mt.float16)), TypeError, "argument 0 .* float16 tensor"),
    (lambda x: checkpoint_reentrant(lambda a: a * 2, x.to(mt.bfloat16)), TypeError, "use checkpoint"),
    (lambda x: checkpoint_reentrant(lambda xs: xs[0] * 2, [x]), TypeError, "argument 0 .* list holding tensors"),
    (lambda x: checkpoint_reentrant(lambda a: (a, a * 2), x), TypeError, "returned tuple; .* one tensor"),
    (lambda x: checkpoint_reentrant(lambda a: 3.0, x), TypeError, "returned float"),
])
def test_hostile_calls_raise_clear_errors(call, error, message):
    x = mt.randn(2, 3, requires_grad=True)
    with pytest.raises(error, match=message):
        call(x)


def test_a_wrong_count_of_values_for_the_recompute_is_named():
    x = mt.randn(2, 3, requires_grad=True)
    y = checkpoint_reentrant(lambda a, s: a * s, x, 2.0)
    with pytest.raises(ValueError, match=r"1 values for a call of .* with 2 arguments \(tensor, plain value\)"):
        y.grad_fn.call.arguments(y.grad_fn.saved_tensors[:1])


def test_matches_torch_use_reentrant_true():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    torch.set_num_threads(1)
    block = Block(n_in=3, hidden=4, n_out=2)
    gen = np.random.default_rng(0)
    x_np, shift_np = gen.standard_normal((5, 3)), gen.standard_normal((5, 4))
    x = mt.tensor(x_np, requires_grad=True)
    checkpoint_reentrant(block, x, 0.5, mt.tensor(shift_np)).sum().backward()

    weights = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in block.parameters()]
    w1, b1, w2, b2 = weights

    def torch_block(a, scale, shift):
        return torch.nn.functional.linear((torch.nn.functional.linear(a, w1, b1) + shift).tanh() * scale, w2, b2)

    xt = torch.tensor(x_np, requires_grad=True)
    torch_checkpoint(torch_block, xt, 0.5, torch.tensor(shift_np), use_reentrant=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    for p, t in zip(block.parameters(), weights):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)

    with pytest.warns(UserWarning):  # PyTorch warns as minigrad does; neither gives the weights a gradient
        torch_checkpoint(torch_block, torch.tensor(x_np), 0.5, torch.tensor(shift_np), use_reentrant=True)


def test_a_batchnorm_in_the_block_counts_each_batch_once():
    mt.manual_seed(0)
    block = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU())
    twin = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU())
    twin.load_state_dict(block.state_dict())
    for _ in range(3):
        x = mt.randn(5, 4, requires_grad=True)
        checkpoint_reentrant(block, x).sum().backward()
        twin(x).sum().backward()
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert np.array_equal(getattr(block[1], name).numpy(), getattr(twin[1], name).numpy()), name
