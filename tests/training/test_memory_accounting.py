"""The allocation observer sees every buffer of a training step: its live total matches NumPy's own count.

For the chapter-05 MLP and the chapter-06 CNN (``minigrad.training.recipes``),
one Adam step on an MNIST batch: after the forward pass, after backward and
after the optimizer step, the observer's running total (allocs minus frees)
equals the sum of the live buffers it knows, and tracemalloc's count of the
NumPy buffers alive (everything allocated since tracing began) agrees within 1 %.
"""

import gc
import tracemalloc

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.data import MNIST
import minigrad.memory as mm
from minigrad.training.recipes import MNIST_MEAN, MNIST_STD, RECIPES

NUMPY_DOMAIN = np.lib.tracemalloc_domain


class Ledger:
    """An allocation observer that keeps the running total and the tags of the live buffers."""

    def __init__(self):
        self.total = 0
        self.largest_temporary = 0
        self.tags: dict[int, str] = {}
        self.sizes: dict[int, int] = {}

    def __call__(self, event):
        if event.event == "alloc":
            self.total += event.nbytes
            if event.tag == "temporary":
                self.largest_temporary = max(self.largest_temporary, event.nbytes)
            self.sizes[event.buffer_id] = event.nbytes
        elif event.event == "free":
            self.total -= event.nbytes
            self.sizes.pop(event.buffer_id, None)
        self.tags[event.buffer_id] = event.tag

    def by_tag(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for buffer, size in self.sizes.items():
            out[self.tags[buffer]] = out.get(self.tags[buffer], 0) + size
        return out


def _numpy_bytes() -> int:
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, NUMPY_DOMAIN)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


@pytest.fixture(scope="module")
def mnist_batches():
    ds = MNIST(train=True, subset=True)
    images = ((ds.data[:256].astype(np.float32) / 255 - MNIST_MEAN) / MNIST_STD)[:, None]
    return images, ds.targets[:256].copy()


@pytest.mark.parametrize("recipe", ["mnist-mlp", "mnist-cnn"])
def test_observer_total_matches_live_buffers_and_tracemalloc(recipe, mnist_batches):
    images, labels = mnist_batches
    spec = RECIPES[recipe]
    gc.collect()
    earlier = set(mm.live_buffers())  # reported while an earlier test observed, still alive (a widget it kept)
    ledger = Ledger()
    tracemalloc.start()
    handle = mm.add_allocation_observer(ledger)
    try:
        mt.manual_seed(0)
        model = spec.build()
        optimizer = optim.Adam(model.parameters(), lr=spec.lr)
        loss_fn = nn.CrossEntropyLoss()
        seen = {}

        def check(point):
            gc.collect()
            buffers = mm.live_buffers()
            live = sum(size for buffer, (size, _, _) in buffers.items() if buffer not in earlier)
            numpy_total = _numpy_bytes()
            still_there = sum(size for buffer, (size, _, _) in buffers.items() if buffer in earlier)
            assert ledger.total == live == mm.live_bytes() - still_there, point
            assert abs(live - numpy_total) <= 0.01 * numpy_total, (point, live, numpy_total, ledger.by_tag())
            seen[point] = ledger.by_tag()
            seen[point + " sizes"] = sorted(size for b, size in ledger.sizes.items() if ledger.tags[b] == "activation")

        for step in range(2):  # the second step runs with Adam's state allocated
            x = mt.from_numpy(images[step * spec.batch_size : (step + 1) * spec.batch_size].copy())
            y = mt.from_numpy(labels[step * spec.batch_size : (step + 1) * spec.batch_size].copy())
            loss = loss_fn(model(x), y)
            check(f"step {step}: after forward")
            optimizer.zero_grad()
            loss.backward()
            check(f"step {step}: after backward")
            optimizer.step()
            check(f"step {step}: after optimizer step")
            del x, y, loss
    finally:
        handle.remove()
        tracemalloc.stop()
    forward = seen["step 1: after forward"]
    assert forward["activation"] > 0 and forward["parameter"] > 0 and forward["optimizer_state"] > 0
    assert "activation" not in seen["step 1: after optimizer step"]  # backward released what was saved
    assert seen["step 1: after backward"]["gradient"] == seen["step 1: after backward"]["parameter"]
    if recipe == "mnist-cnn":  # batch 64: conv1's im2col matrix (64*24*24, 5*5*1) is saved for backward
        assert 64 * 24 * 24 * 25 * 4 in seen["step 1: after forward sizes"]
        # conv2's backward makes the gradient of its (64*8*8, 5*5*16) im2col matrix, a scratch array
        assert ledger.largest_temporary >= 64 * 8 * 8 * 25 * 16 * 4


OPTIMIZERS = {
    "sgd": lambda p: optim.SGD([p], lr=0.1),
    "sgd-momentum": lambda p: optim.SGD([p], lr=0.1, momentum=0.9),
    "sgd-nesterov-decay": lambda p: optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
    "sgd-maximize": lambda p: optim.SGD([p], lr=0.1, maximize=True),
    "adam": lambda p: optim.Adam([p]),
    "adam-l2": lambda p: optim.Adam([p], weight_decay=0.1),
    "adamw-amsgrad": lambda p: optim.AdamW([p], amsgrad=True),
    "rmsprop": lambda p: optim.RMSprop([p]),
    "rmsprop-centered-momentum": lambda p: optim.RMSprop([p], centered=True, momentum=0.9),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_an_optimizer_step_reports_its_scratch_memory(name):
    """The scratch an update kernel declares covers what it really allocates (tracemalloc), by at most one array."""
    p = mt.randn(250_000, requires_grad=True)  # 1 MB: Python's own allocations are noise next to it
    p.grad = mt.randn(250_000)
    optimizer = OPTIMIZERS[name](p)
    optimizer.step()  # the first step allocates the state; measure the second
    scratch = []
    handle = mm.add_allocation_observer(lambda e: scratch.append(e.nbytes) if e.tag == "temporary" else None)
    try:
        optimizer.step()
    finally:
        handle.remove()
    declared = max(scratch, default=0) / p.detach().numpy().nbytes
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        optimizer.step()
        measured = (tracemalloc.get_traced_memory()[1] - before) / p.detach().numpy().nbytes
    finally:
        tracemalloc.stop()
    assert round(measured) <= declared <= round(measured) + 1, (measured, declared)
    assert mm.live_bytes() == sum(size for size, _, _ in mm.live_buffers().values())
