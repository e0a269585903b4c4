"""Recording a trace from real code: every buffer the library allocates and frees, through the core's observer.

:func:`record_trace` registers an allocation observer
(:func:`minigrad.memory.listeners.add_allocation_observer`) while ``fn`` runs
and turns its events into a trace for :func:`~minigrad.memory.allocator.trace_replay.replay`:
``("alloc", buffer_id, nbytes, tag)`` when a buffer appears, ``("free",
buffer_id)`` when its last user goes. Frees of buffers allocated before the
recording started are left out; a buffer relabelled while alive (a new
tensor that becomes a parameter) carries its latest tag; buffers still alive at the end (the
model's parameters, the optimizer's state) stay allocated in the trace.

:func:`record_training_step` records building a network (the MNIST MLP
784-256-128-10 of chapter 05 or the CNN of chapter 06) with Adam and
training it for a step or more: parameters, then the activations of the
forward pass, the gradients of the backward pass and Adam's state and
scratch memory. The batches are random numbers of MNIST's shape: the
memory a step needs depends on shapes only.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

from minigrad import nn, optim
from minigrad.memory import listeners
from minigrad.memory.allocator.trace_replay import ALLOC, FREE, compare_policies, format_comparison
from minigrad.tensor import from_numpy, manual_seed

RETAG = "retag"


def record_trace(fn, *args, **kwargs) -> tuple[list[tuple], object]:
    """Run ``fn(*args, **kwargs)`` while recording its allocations; returns ``(trace, fn's result)``."""
    trace: list[tuple] = []
    alloc_index: dict[int, int] = {}  # buffer id -> index of its alloc event, while it is alive

    def observe(event) -> None:
        if event.event == ALLOC:
            alloc_index[event.buffer_id] = len(trace)
            trace.append((ALLOC, event.buffer_id, event.nbytes, event.tag))
        elif event.event == FREE and event.buffer_id in alloc_index:
            del alloc_index[event.buffer_id]
            trace.append((FREE, event.buffer_id))
        elif event.event == RETAG and event.buffer_id in alloc_index:
            trace[alloc_index[event.buffer_id]] = (ALLOC, event.buffer_id, event.nbytes, event.tag)

    gc.collect()  # buffers of earlier code that only a collection frees go now, not during the recording
    with listeners.add_allocation_observer(observe):
        result = fn(*args, **kwargs)
    return trace, result


def _mnist_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def _mnist_cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 10))


MODELS = {
    "mnist-mlp": ("MNIST MLP 784-256-128-10", _mnist_mlp),
    "mnist-cnn": ("MNIST CNN conv16-pool-conv32-pool-linear", _mnist_cnn),
}


def _train(model_name: str, batch_size: int, steps: int, seed: int):
    manual_seed(seed)
    model = MODELS[model_name][1]()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        images = from_numpy(rng.random((batch_size, 1, 28, 28), dtype=np.float32))
        labels = from_numpy(rng.integers(0, 10, batch_size))
        loss = loss_fn(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        del images, labels, loss
    return model, opt  # kept alive: parameters, gradients and optimizer state stay allocated


def record_training_step(model: str = "mnist-mlp", batch_size: int = 64, steps: int = 1, seed: int = 0) -> list[tuple]:
    """The trace of building ``model`` (``"mnist-mlp"`` or ``"mnist-cnn"``) with Adam and training ``steps`` steps."""
    if model not in MODELS:
        raise ValueError(f"record_training_step: unknown model {model!r}; choose one of {sorted(MODELS)}")
    trace, _ = record_trace(_train, model, batch_size, steps, seed)
    return trace


def compare_policies_on_training_step(model: str = "mnist-mlp", batch_size: int = 64, steps: int = 1,
                                      file=None) -> dict:
    """Record ``steps`` training steps of ``model``, replay them under best fit and first fit; print and return both."""
    trace = record_training_step(model, batch_size, steps)
    results = compare_policies(trace)
    allocs = sum(1 for event in trace if event[0] == ALLOC)
    out = file or sys.stdout
    print(f"{MODELS[model][0]}, Adam, {steps} training step{'s' if steps > 1 else ''} at batch {batch_size}: "
          f"{allocs} allocations, {len(trace) - allocs} frees", file=out)
    print(format_comparison(results), file=out)
    return results
