"""measure_chain: each layer's saved, boundary and made bytes and FLOPs, exact at any batch and what the tracker
counts; offload_or_recompute: the time each way per card."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.checkpoint.chain_costs import count_flops, measure_chain, offload_or_recompute, tradeoff_table
from minigrad.memory import GPUProfile, track
from minigrad.training.recipes import mnist_cnn, mnist_mlp


def tracked_activations(model, input_shape, batch):
    x = mt.randn(batch, *input_shape)
    with track(model) as mem:
        out = model(x)
        activations = mem.by_category()["activation"]
    del out
    return activations


@pytest.mark.parametrize("build, shape, batch", [(mnist_mlp, (1, 28, 28), 37), (mnist_cnn, (1, 28, 28), 5)])
def test_saved_bytes_are_what_the_tracker_counts_at_any_batch(build, shape, batch):
    mt.manual_seed(0)
    model = build()
    costs = measure_chain(model, shape, batch)  # measured at 2, 3 and 4, extrapolated
    assert sum(costs.saved_bytes) == sum(costs.made_bytes) == tracked_activations(model, shape, batch)
    assert costs.input_bytes[0] == batch * 28 * 28 * 4 and costs.reads_batch[0]


def test_the_mlp_figures_layer_by_layer():
    costs = measure_chain(mnist_mlp(), (1, 28, 28), 128)
    assert costs.kinds == ("Flatten", "Linear", "ReLU", "Linear", "ReLU", "Linear")
    assert costs.flops == (0, 2 * 128 * 784 * 256, 128 * 256, 2 * 128 * 256 * 128, 128 * 128, 2 * 128 * 128 * 10)
    # a ReLU's output belongs to the Linear reading it (saved) and to the ReLU making it (made)
    assert costs.saved_bytes == (0, 0, 0, 128 * 256 * 4, 0, 128 * 128 * 4)
    assert costs.made_bytes == (0, 0, 128 * 256 * 4, 0, 128 * 128 * 4, 0)
    assert costs.reads_batch == (True, True, False, False, False, False)  # Flatten's output is a view of the batch
    assert costs.is_view[0] and costs.chain_input_bytes[:2] == (0, 0) and costs.chain_input_bytes[2] == 128 * 256 * 4
    assert costs.parameter_bytes[1] == (784 * 256 + 256) * 4
    assert "Linear" in str(costs) and "total" in str(costs)


def test_conv_and_pool_flops_follow_the_stated_counts():
    costs = measure_chain(mnist_cnn(), (1, 28, 28), 64)
    assert costs.flops[0] == 2 * 64 * 16 * 24 * 24 * 1 * 5 * 5  # 2 B Cout Hout Wout Cin k k
    assert costs.flops[3] == 2 * 64 * 32 * 8 * 8 * 16 * 5 * 5
    assert costs.flops[2] == 64 * 16 * 12 * 12 * 2 * 2  # a 2x2 window per output element
    assert count_flops(nn.Conv2d(4, 8, 3), (1, 4, 5, 5), (1, 8, 3, 3)) == 2 * 8 * 9 * 4 * 9
    assert count_flops(nn.Tanh(), (3, 4), (3, 4)) == 12


def test_the_model_and_the_random_state_are_left_alone():
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.eval()
    state = mt.get_rng_state()
    before = [t.numpy().copy() for t in model.state_dict().values()]
    measure_chain(model, 4, 8)
    assert not model.training and np.array_equal(mt.get_rng_state(), state)
    assert all(np.array_equal(a, t.numpy()) for a, t in zip(before, model.state_dict().values()))


def test_offload_against_recompute_per_card():
    costs = measure_chain(mnist_cnn(), (1, 28, 28), 64)
    rows = offload_or_recompute(costs, ("gtx1050", "rtx3060"))
    assert len(rows) == 2 * len(costs)
    relu = rows[1]  # made: its output, 64 x 16 x 24 x 24 floats
    assert relu.made_bytes == 64 * 16 * 24 * 24 * 4
    assert relu.offload_seconds == pytest.approx(2 * relu.made_bytes / 15.75e9, rel=1e-3)
    # a ReLU is memory bound: reading its input and writing its output at 112 GB/s, not 1 FLOP per element
    assert relu.recompute_seconds == pytest.approx(2 * relu.made_bytes / 112e9)
    assert relu.winner == "recompute" and rows[0].winner == "recompute"  # im2col columns: 3.5 MiB, cheap to redo
    pool = {row.card: row for row in rows if row.layer == "2 MaxPool2d"}  # a small mask, a window read per output
    assert (pool["gtx1050"].winner, pool["rtx3060"].winner) == ("offload", "recompute")
    assert rows[-1].winner == "nothing saved"
    table = tradeoff_table(costs)
    assert "gtx1050" in table and "rtx3060" in table and "offload" in table


def test_hostile_input():
    with pytest.raises(TypeError, match="measure_chain: expected a non-empty nn.Sequential"):
        measure_chain(nn.Linear(3, 3), 3, 2)
    with pytest.raises(TypeError, match="with no layers"):
        measure_chain(nn.Sequential(), 3, 2)
    with pytest.raises(ValueError, match="batch_size must be a whole number >= 1, got 0"):
        measure_chain(mnist_mlp(), 784, 0)
    for shape in ((28, 28.0), (), "784", (0,)):
        with pytest.raises(ValueError, match="input_shape must be one example's shape"):
            measure_chain(mnist_mlp(), shape, 2)
    costs = measure_chain(nn.Sequential(nn.Linear(3, 3)), 3, 2)
    with pytest.raises(TypeError, match="expected the ChainCosts"):
        offload_or_recompute({"flops": [1]})
    no_link = GPUProfile("x", "x", 2**30, 100.0, 1.0, 1.0, 0, (6, 1))
    with pytest.raises(ValueError, match="'x' has no PCIe bandwidth"):
        offload_or_recompute(costs, [no_link])


def test_a_layer_whose_figures_are_not_affine_in_the_batch_is_refused():
    class PadToFour(nn.Module):  # pads the batch to a multiple of 4: constant at 2, 3, 4 ... then not
        def forward(self, x):
            rows = -(-x.shape[0] // 4) * 4
            return mt.cat([x, mt.zeros(rows - x.shape[0], *x.shape[1:])]) * mt.ones(1) if rows > x.shape[0] else x * 1

    with pytest.raises(ValueError, match="not affine in the batch size"):
        measure_chain(nn.Sequential(nn.Linear(3, 3), PadToFour(), nn.ReLU()), 3, 8)
