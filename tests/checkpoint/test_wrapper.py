"""CheckpointWrapper and apply: checkpointing chosen submodules, with the model's state_dict keys unchanged."""

import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.checkpoint import CheckpointWrapper, apply, count_recomputes


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(6, 8)
        self.blocks = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU()),
                                    nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Tanh()))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def _net():
    mt.manual_seed(0)
    return Net()


def _grads(model, x):
    model.zero_grad()
    mt.manual_seed(4)
    (model(x) ** 2).sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("which", [
    ["blocks.0", "blocks.1"],
    lambda name, m: name.startswith("blocks.") and name.count(".") == 1,
    nn.Linear,
    (nn.BatchNorm1d, nn.Tanh),
])
def test_apply_gives_the_same_gradients_and_state_dict_keys(which):
    x = mt.randn(5, 6)
    plain = _net()
    expected = _grads(plain, x)
    keys = list(plain.state_dict())
    model = apply(_net(), which)
    assert any(isinstance(m, CheckpointWrapper) for m in model.modules())
    assert list(model.state_dict()) == keys
    with count_recomputes() as recomputes:
        got = _grads(model, x)
    assert recomputes.count >= 1
    for a, b in zip(expected, got):
        assert a.tobytes() == b.tobytes()
    for k, v in plain.state_dict().items():  # the running statistics moved once, as in the plain model
        assert model.state_dict()[k].numpy().tobytes() == v.numpy().tobytes()


def test_state_dict_round_trips_between_wrapped_and_plain_models():
    wrapped = apply(_net(), ["blocks.0", "head"])
    _grads(wrapped, mt.randn(5, 6))
    state = wrapped.state_dict()
    plain = Net()
    plain.load_state_dict(state)  # strict: the same keys
    for k, v in plain.state_dict().items():
        assert v.numpy().tobytes() == state[k].numpy().tobytes()
    again = apply(Net(), ["blocks.0", "head"])
    again.load_state_dict(plain.state_dict())
    assert list(again.state_dict()) == list(state)
    single = CheckpointWrapper(nn.Linear(2, 2))
    assert list(single.state_dict()) == ["weight", "bias"]
    single.load_state_dict(nn.Linear(2, 2).state_dict())


def test_apply_keeps_the_order_of_a_sequential_and_never_wraps_twice():
    model = apply(_net(), nn.Sequential)  # blocks and its children: blocks is chosen, its children are inside it
    assert isinstance(model.blocks, CheckpointWrapper)
    assert not any(isinstance(m, CheckpointWrapper) for m in model.blocks.module.modules())
    apply(model, nn.Sequential)
    assert not isinstance(model.blocks.module, CheckpointWrapper)
    seq = apply(nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)), ["0"])
    assert list(seq._modules) == ["0", "1", "2"] and isinstance(seq[0], CheckpointWrapper)


def test_the_wrapper_forwards_attributes_train_mode_and_parameters():
    inner = nn.Linear(3, 2)
    w = CheckpointWrapper(inner, preserve_rng_state=False)
    assert w.weight is inner.weight and w.in_features == 3
    assert [id(p) for p in w.parameters()] == [id(p) for p in inner.parameters()]
    w.eval()
    assert not inner.training
    assert "preserve_rng_state=False" in repr(w)


def test_bad_configurations_get_clear_errors():
    with pytest.raises(KeyError, match="no submodule named 'blocks.7'.*blocks.0"):
        apply(_net(), ["blocks.7"])
    with pytest.raises(TypeError, match="which must be a predicate"):
        apply(_net(), 3)
    with pytest.raises(TypeError, match="expected an nn.Module to configure"):
        apply(lambda x: x, nn.Linear)
    with pytest.raises(TypeError, match="CheckpointWrapper: expected an nn.Module, got function"):
        CheckpointWrapper(lambda x: x)
