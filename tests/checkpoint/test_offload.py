"""save_on_cpu: saved tensors leave the device and come back bitwise, the tracker sees them go, the transfers are
counted and timed over the card's link; on a GPU the copies really cross the bus."""

from contextlib import nullcontext

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.checkpoint.offload import save_on_cpu
from minigrad.memory import GPUProfile, OutOfMemoryError, simulated_gpu, track
from minigrad.memory.profiles import PROFILES
from minigrad.tensor import gradcheck


def mlp(width=32, depth=4, device=None):
    mt.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.ReLU())])
    return model if device is None else model.to(device)


def gradients(model, x, offload=None):
    for p in model.parameters():
        p.grad = None
    if offload is None:
        loss = (model(x) ** 2).sum()
    else:
        with offload:
            loss = (model(x) ** 2).sum()
    loss.backward()
    return [p.grad.cpu().numpy() for p in model.parameters()]


def test_gradients_are_bitwise_those_without_offloading(device):
    model = mlp(device=device)
    x = mt.randn(16, 32, device=device)
    plain, offloaded = gradients(model, x), gradients(model, x, save_on_cpu())
    assert all(np.array_equal(a, b) for a, b in zip(plain, offloaded))


def test_the_cnn_too():
    from minigrad.training.recipes import mnist_cnn

    mt.manual_seed(0)
    model = mnist_cnn()
    x = mt.randn(4, 1, 28, 28)
    assert all(np.array_equal(a, b) for a, b in zip(gradients(model, x), gradients(model, x, save_on_cpu())))


def test_the_tracker_sees_the_activations_leave_the_device():
    model, x = mlp(width=64, depth=6), mt.randn(512, 64)
    peaks = {}
    for name, offload in (("plain", None), ("offloaded", save_on_cpu())):
        with track(model) as mem:
            with offload if offload is not None else nullcontext():
                loss = (model(x) ** 2).sum()
            after_forward = mem.by_category()["activation"]
            loss.backward()
        peaks[name] = (after_forward, mem.peak)
    one = 512 * 64 * 4  # one layer's output
    assert peaks["plain"][0] >= 6 * one  # the six ReLU outputs (each Linear's input is the ReLU output before it)
    assert peaks["offloaded"][0] == 0
    assert peaks["offloaded"][1] < peaks["plain"][1] - 3 * one  # in backward they come back one node at a time


def test_the_summary_counts_each_buffer_once_and_times_it_on_the_card():
    model, x = mlp(width=32, depth=3), mt.randn(8, 32)
    offload = save_on_cpu(card="gtx1050")
    with offload:
        loss = model(x).sum()
    during = offload.summary()
    # saved: each Linear's input and weight, each ReLU's output; the ReLU outputs are the next Linear's inputs
    one, weights = 8 * 32 * 4, 3 * 32 * 32 * 4
    activations = 4 * one  # x (it is on the device too) and the three ReLU outputs
    assert during.tensors == 9 and during.copies == 7  # the ReLU outputs read by a Linear are copied once
    assert during.bytes_offloaded == activations + weights == during.host_bytes == during.peak_host_bytes
    assert during.bytes_restored == 0
    loss.backward(retain_graph=True)
    loss.backward()  # a second backward unpacks again from the same host copies
    after = offload.summary()
    assert after.bytes_restored == 2 * (6 * one + weights)  # each node unpacks its own: r0 and r1 twice each
    link = PROFILES["gtx1050"].pcie_gb_s * 1e9
    assert after.offload_seconds == pytest.approx(after.bytes_offloaded / link)
    assert after.transfer_seconds == pytest.approx((after.bytes_offloaded + after.bytes_restored) / link)
    del loss
    assert offload.summary().host_bytes == 0  # the graph gone, the host copies go with it
    assert "GTX 1050's PCIe link" in str(after) and "ms out" in str(after)
    assert save_on_cpu().summary().offload_seconds is None


def test_a_smaller_card_fits_the_offloaded_step():
    model, x = mlp(width=64, depth=6), mt.randn(1024, 64)
    card = GPUProfile("tiny", "tiny", 3 * 2**20, 100.0, 1.0, 1.0, 0, (6, 1), context_bytes=0, pcie_gb_s=15.75)
    with pytest.raises(OutOfMemoryError):
        with simulated_gpu(card, model=model):
            (model(x) ** 2).sum().backward()
    for p in model.parameters():
        p.grad = None
    with simulated_gpu(card, model=model):
        with save_on_cpu(card=card):
            loss = (model(x) ** 2).sum()
        loss.backward()


def test_gradcheck_through_offloaded_ops():
    mt.manual_seed(0)
    w = mt.randn(3, 4, dtype=mt.float64, requires_grad=True)

    def f(x):
        with save_on_cpu():
            return (x @ w).relu().exp().sum()

    assert gradcheck(f, (mt.randn(2, 3, dtype=mt.float64, requires_grad=True),))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    model = mlp(width=8, depth=2)
    x = mt.randn(4, 8)
    ours = gradients(model, x, save_on_cpu())
    reference = torch.nn.Sequential(*[m for pair in zip([torch.nn.Linear(8, 8) for _ in range(2)],
                                                        [torch.nn.ReLU() for _ in range(2)]) for m in pair])
    with torch.no_grad():
        for mine, theirs in zip(model.parameters(), reference.parameters()):
            theirs.copy_(torch.from_numpy(mine.detach().numpy()))
    with torch.autograd.graph.save_on_cpu():
        loss = (reference(torch.from_numpy(x.numpy())) ** 2).sum()
    loss.backward()
    for mine, theirs in zip(ours, reference.parameters()):
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_misuse_is_refused():
    offload = save_on_cpu()
    with offload:
        with pytest.raises(RuntimeError, match="already active"):
            offload.__enter__()
    with offload:  # again, after the first block ended: fine, the figures add up
        pass
    with pytest.raises(TypeError, match="pin_memory must be True or False"):
        save_on_cpu(pin_memory="yes")
    with pytest.raises(ValueError, match="has no PCIe bandwidth"):
        save_on_cpu(card=GPUProfile("x", "x", 2**30, 1.0, 1.0, 1.0, 0, (6, 1)))
    with pytest.raises(ValueError, match="unknown GPU"):
        save_on_cpu(card="gtx9999")
    x = mt.randn(3, requires_grad=True)
    with save_on_cpu():
        y = x.exp()  # exp saves its output
    y.add_(1)  # changed after it was saved: the host copy is stale, and backward says so
    with pytest.raises(RuntimeError, match="modified by an inplace operation|in place"):
        y.sum().backward()


@pytest.mark.gpu
def test_on_a_gpu_the_copies_cross_the_bus(cupy):
    model, x = mlp(width=64, depth=3, device="cuda"), mt.randn(256, 64, device="cuda")
    plain = gradients(model, x)
    for pin in (False, True):
        offload = save_on_cpu(pin_memory=pin)
        assert all(np.array_equal(a, b) for a, b in zip(plain, gradients(model, x, offload)))
        assert offload.summary().bytes_offloaded > 3 * 256 * 64 * 4
    with track(model) as mem:
        with save_on_cpu(pin_memory=True):
            loss = (model(x) ** 2).sum()
        assert mem.by_category()["activation"] == 0
        loss.backward()
