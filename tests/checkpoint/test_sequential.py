"""checkpoint_sequential: PyTorch's segments, the plain chain's gradients, and the sqrt(n) memory it promises."""

import gc
import math

import pytest

import minigrad.memory as mm
import minigrad.tensor as mt
from minigrad import nn
from minigrad.checkpoint import checkpoint, checkpoint_sequential, count_recomputes
from minigrad.memory.timeline import category_totals


def _mlp(layers, width, p=0.0):
    mt.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()] + ([nn.Dropout(p)] if p else [])
    return nn.Sequential(*mods)


def _grads(model, x, run):
    model.zero_grad()
    x.grad = None
    mt.manual_seed(5)
    (run(x) ** 2).sum().backward()
    return [t.grad.numpy().copy() for t in (*model.parameters(), x)]


@pytest.mark.parametrize("segments", [1, 2, 3, 4, 7])
def test_gradients_are_bitwise_those_of_the_chain_and_one_recompute_per_checkpointed_segment(segments):
    model = _mlp(3, 8, p=0.3)  # 9 functions
    x = mt.randn(4, 8, requires_grad=True)
    plain = _grads(model, x, model)
    with count_recomputes() as recomputes:
        got = _grads(model, x, lambda x: checkpoint_sequential(model, segments, x))
    for a, b in zip(plain, got):
        assert a.tobytes() == b.tobytes()
    assert recomputes.count == segments - 1  # the last segment runs normally
    assert recomputes.blocks == [f"segment[{s}..{e}]" for s, e in reversed(_bounds(9, segments)[:-1])]


def _bounds(n, segments):
    from minigrad.checkpoint import segment_bounds
    return segment_bounds(n, segments)


def test_a_list_of_callables_and_keyword_arguments_are_passed_on():
    mt.manual_seed(0)
    lin = nn.Linear(4, 4)
    fns = [lin, lambda h: h.tanh(), lambda h: h * 2, lin]
    x = mt.randn(3, 4, requires_grad=True)
    expected = lin((lin(x).tanh() * 2))
    y = checkpoint_sequential(fns, 2, x, preserve_rng_state=False, use_reentrant=False)
    assert y.detach().numpy().tobytes() == expected.detach().numpy().tobytes()


def test_bad_arguments():
    model = _mlp(2, 4)
    x = mt.randn(2, 4)
    with pytest.raises(ValueError, match="5 segments for 4 functions"):
        checkpoint_sequential(model, 5, x)
    with pytest.raises(ValueError, match="positive integer"):
        checkpoint_sequential(model, 0, x)
    with pytest.raises(TypeError, match="Sequential or a list of callables, got Linear"):
        checkpoint_sequential(nn.Linear(4, 4), 1, x)
    with pytest.raises(TypeError, match=r"functions\[1\] is a int"):
        checkpoint_sequential([model, 3], 1, x)
    with pytest.raises(ValueError, match="empty"):
        checkpoint_sequential([], 1, x)
    with pytest.raises(ValueError, match="non-reentrant"):
        checkpoint_sequential(model, 2, x, use_reentrant=True)


def _kept_for_backward(model, x, run):
    """Peak bytes of activations over one forward+backward: what the nodes save, the inputs the checkpoints keep
    and the tensors their recomputes save (the memory stage counts all three as activations)."""
    model.zero_grad()
    gc.collect()  # an earlier graph freed during the run would count in the baseline
    with mm.track() as mem:
        run(x).sum().backward()
    rows = category_totals(mem.timeline, mem.baseline_by_category)
    return max(r["activation"] for r in rows)


def test_64_layer_mlp_at_8_segments_keeps_at_most_2_sqrt_n_plus_1_layers_of_activations():
    n, segments = 64, 8
    model = _mlp(n, 256)
    x = mt.randn(128, 256)
    layer = 128 * 256 * 4  # one ReLU output (the next Linear's input) per layer
    plain = _kept_for_backward(model, x, model)
    assert plain == n * layer
    activation = _kept_for_backward(model, x, lambda x: checkpoint_sequential(model, segments, x))
    # 7 segment inputs kept, the last segment's 8 layers stored (freed layer by layer in backward), then one
    # recomputed segment of 8 at a time: at most 7 + 8 = 15 layers alive at once
    assert activation == 15 * layer
    assert activation / plain <= (2 * math.sqrt(n) + 1) / n  # 15/64 = 23.4 % <= 17/64 = 26.6 %


def test_the_checkpointed_blocks_activations_are_gone_after_forward():
    model = _mlp(6, 64)
    x = mt.randn(32, 64)
    with mm.track() as mem:
        y = checkpoint(model, x)
        after_forward = mem.by_category()["activation"]
        y.sum().backward()
    assert after_forward == 0
    with mm.track() as mem:
        y = model(x)
        assert mem.by_category()["activation"] == 6 * 32 * 64 * 4  # what the plain block keeps until backward
