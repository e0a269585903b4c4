"""Saved-tensor hooks: pack/unpack around everything save_for_backward keeps (torch.autograd.graph.saved_tensors_hooks)."""

import itertools

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.tensor import saved_tensors_hooks
from minigrad.tensor.autograd import topological_order


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 3))


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 1), nn.BatchNorm2d(6), nn.ReLU(),
        nn.Flatten(), nn.Linear(6 * 3 * 3, 3),
    )


MODELS = {"mlp": (_mlp, (5, 16)), "cnn": (_cnn, (5, 1, 8, 8))}


def _batch(shape):
    mt.manual_seed(1)
    return mt.randn(*shape), mt.tensor([0, 1, 2, 1, 0])


def _gradients(model_name, hooks=None):
    """The parameter gradients of one loss.backward() of a fresh model, with ``hooks`` around the forward pass."""
    build, shape = MODELS[model_name]
    mt.manual_seed(0)
    model = build()
    x, y = _batch(shape)
    if hooks is None:
        loss = nn.functional.cross_entropy(model(x), y)
    else:
        with hooks:
            loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return [p.grad.cpu().numpy().copy() for p in model.parameters()]


def _saved_buffers(loss) -> int:
    """How many arrays the graph's nodes keep through save_for_backward."""
    return sum(
        sum(1 for s in node._saved if hasattr(s, "shape"))
        for node in topological_order(loss.grad_fn)
        if getattr(node, "_saved", None)
    )


@pytest.mark.parametrize("model_name", list(MODELS))
def test_pack_and_unpack_are_called_once_for_every_saved_tensor(model_name):
    build, shape = MODELS[model_name]
    mt.manual_seed(0)
    model = build()
    x, y = _batch(shape)
    expected = _saved_buffers(nn.functional.cross_entropy(model(x), y))
    assert expected > 5
    packed, unpacked = [], []

    def pack(t):
        assert isinstance(t, mt.Tensor) and not t.requires_grad
        packed.append(t)
        return len(packed) - 1

    def unpack(index):
        unpacked.append(index)
        return packed[index]

    with saved_tensors_hooks(pack, unpack):
        loss = nn.functional.cross_entropy(model(x), y)
    assert len(packed) == expected
    loss.backward()  # after the block: the nodes keep the unpack they were packed with
    assert sorted(unpacked) == list(range(expected))


class _ToBytes:
    """Offload every saved tensor to a bytes object (another place in memory), and back.

    The memory layout is kept (as ``t.to(device)`` keeps a dense tensor's
    strides): the layout decides the order in which BLAS adds, so a C-ordered
    copy of a Fortran-ordered array would change the last bits of the gradients.
    """

    def __init__(self):
        self.kept = 0

    def pack(self, t):
        array = t.numpy()
        order = np.argsort([-abs(s) for s in array.strides], kind="stable")  # dimensions, outermost in memory first
        dense = np.ascontiguousarray(array.transpose(order))
        self.kept += dense.nbytes
        return dense.tobytes(), dense.shape, dense.dtype, order

    @staticmethod
    def unpack(packed):
        data, shape, dtype, order = packed
        array = np.frombuffer(data, dtype=dtype).reshape(shape).transpose(np.argsort(order))
        return array.copy(order="K")  # an array is accepted as well as a tensor


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.host_only  # the offload reads the saved array's host memory in place
def test_offloading_hooks_give_bitwise_equal_gradients(model_name):
    plain = _gradients(model_name)
    offload = _ToBytes()
    hooked = _gradients(model_name, saved_tensors_hooks(offload.pack, offload.unpack))
    assert offload.kept > 0
    assert len(plain) == len(hooked)
    for a, b in zip(plain, hooked):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_hooks_nest_and_only_the_innermost_pair_is_used():
    calls = []

    def hooks(name):
        return saved_tensors_hooks(lambda t: calls.append(("pack", name)) or t,
                                   lambda t: calls.append(("unpack", name)) or t)

    x = mt.randn(3, requires_grad=True)
    with hooks("outer"):
        a = x.exp()
        with hooks("inner"):
            b = a.tanh()
        c = b.sigmoid()
    (a + b + c).sum().backward()
    packs = [name for kind, name in calls if kind == "pack"]
    unpacks = [name for kind, name in calls if kind == "unpack"]
    assert packs == ["outer", "inner", "outer"]
    assert sorted(unpacks) == sorted(packs)
    y = mt.tensor(x.detach().cpu().numpy(), requires_grad=True)
    a2 = y.exp()
    b2 = a2.tanh()
    (a2 + b2 + b2.sigmoid()).sum().backward()
    assert x.grad.cpu().numpy().tobytes() == y.grad.cpu().numpy().tobytes()


def test_no_hooks_outside_the_block_and_none_under_no_grad():
    calls = []
    x = mt.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        with mt.no_grad():
            x.exp()  # nothing recorded, nothing saved
    x.exp().sum().backward()
    assert calls == []


@pytest.mark.host_only  # the offload reads the saved array's host memory in place
def test_version_checks_still_run_through_hooks():
    offload = _ToBytes()
    x = mt.randn(3, 4)
    w = mt.randn(4, 2, requires_grad=True)
    with saved_tensors_hooks(offload.pack, offload.unpack):
        y = x @ w
    x.mul_(10)  # the packed copy is intact, but x was modified after the op used it
    with pytest.raises(RuntimeError, match="MatmulBackward.*modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.host_only  # the offload reads the saved array's host memory in place
def test_version_checks_through_hooks_cover_saved_views_too():
    offload = _ToBytes()
    x = mt.randn(3, 4, requires_grad=True)
    with saved_tensors_hooks(offload.pack, offload.unpack):
        y = x.exp().amax(1)
    y.detach().zero_()
    with pytest.raises(RuntimeError, match="AmaxBackward.*modified by an in-place operation"):
        y.sum().backward()


def test_a_recorded_inplace_op_under_identity_hooks_keeps_the_old_value():
    def run(hooks):
        x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = mt.tensor([4.0, 5.0, 6.0], requires_grad=True)
        with hooks:
            y = x * 1
            y.mul_(w)  # saves y's old value for w's gradient, then overwrites y
            y.mul_(w)
        y.sum().backward()
        return x.grad.cpu().numpy(), w.grad.cpu().numpy()

    import contextlib

    plain = run(contextlib.nullcontext())
    hooked = run(saved_tensors_hooks(lambda t: t, lambda t: t))
    np.testing.assert_array_equal(plain[0], hooked[0])
    np.testing.assert_array_equal(plain[1], hooked[1])
    np.testing.assert_array_equal(hooked[1], 2 * np.array([4.0, 5.0, 6.0]) * np.array([1.0, 2.0, 3.0]))


def test_bad_hooks_get_clear_errors():
    x = mt.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="pack_hook must be callable"):
        saved_tensors_hooks(None, lambda t: t)
    with pytest.raises(RuntimeError, match="pack hook modified the tensor"):
        with saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
            x.exp()
    with saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
        y = x.exp()
    with pytest.raises(RuntimeError, match=r"unpack hook returned shape \(1,\).*saved with shape \(3,\)"):
        y.sum().backward()
    with saved_tensors_hooks(lambda t: t, lambda t: "nothing"):
        y = x.exp()
    with pytest.raises(RuntimeError, match="unpack hook returned str"):
        y.sum().backward()


def test_a_second_backward_through_packed_nodes_raises_unless_retained():
    x = mt.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp(x.detach().cpu().numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_graph_module_has_the_pytorch_name():
    assert mt.graph.saved_tensors_hooks is saved_tensors_hooks


# --------------------------------------------------------------------------- recompute on unpack (checkpointing)


def checkpoint(fn, *inputs):
    """``fn(*inputs)`` keeping none of its saved tensors: they are recomputed on the first unpack.

    The non-reentrant design: the forward pass records the graph as usual (so
    parameters used inside ``fn`` get gradients even when ``inputs`` do not
    require grad), but every saved tensor is packed as its position only. When
    backward unpacks one, ``fn`` is run again under hooks that collect the
    saved tensors in the same order.
    """
    recomputed: dict[int, mt.Tensor] = {}
    stats = {"recomputes": 0}

    def pack(t):
        return next(positions)

    def unpack(position):
        if position not in recomputed:
            stats["recomputes"] += 1
            order = itertools.count()
            with saved_tensors_hooks(lambda t: recomputed.setdefault(next(order), t), lambda t: t):
                with mt.enable_grad():
                    fn(*inputs)
        return recomputed.pop(position)

    positions = itertools.count()
    with saved_tensors_hooks(pack, unpack):
        out = fn(*inputs)
    return out, stats


def test_recompute_on_unpack_gives_parameter_gradients_when_only_parameters_require_grad():
    mt.manual_seed(0)
    block = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU())
    head = nn.Linear(8, 2)
    x = mt.randn(4, 6)  # data: does not require grad
    assert not x.requires_grad

    head(block(x)).sum().backward()
    expected = [p.grad.cpu().numpy().copy() for p in (*block.parameters(), *head.parameters())]
    for p in (*block.parameters(), *head.parameters()):
        p.grad = None

    hidden, stats = checkpoint(block, x)
    assert hidden.requires_grad  # recorded although the input does not require grad
    kept = [s for node in topological_order(hidden.grad_fn) for s in (getattr(node, "_saved", None) or ())]
    assert kept and all(type(s) is int for s in kept)  # the block's nodes keep positions, not arrays
    head(hidden).sum().backward()
    assert stats["recomputes"] == 1
    got = [p.grad.cpu().numpy() for p in (*block.parameters(), *head.parameters())]
    for a, b in zip(expected, got):
        assert a.tobytes() == b.tobytes()
