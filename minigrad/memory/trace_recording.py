"""Recording a trace from real code: every buffer the library allocates and frees, through the core's observer.

:func:`record_trace` registers an allocation observer
(:func:`minigrad.tensor.hooks.add_allocation_observer`) while ``fn`` runs
and turns its events into a trace for :func:`~minigrad.memory.trace_replay.replay`:
``("alloc", buffer_id, nbytes, tag)`` when a buffer appears, ``("free",
buffer_id)`` when its last user goes. Frees of buffers allocated before the
recording started are left out; a buffer relabelled while alive (a new
tensor that becomes a parameter) carries its latest tag; buffers still alive at the end (the
model's parameters, the optimizer's state) stay allocated in the trace.

:func:`record_mlp_step` records building an MNIST MLP (784-256-128-10,
ReLU, Adam) and one training step on a batch: parameters, then the
activations of the forward pass, the gradients of the backward pass and
Adam's state and scratch memory. The batch is random numbers of MNIST's
shape: the memory a step needs depends on shapes only.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

from minigrad import nn, optim
from minigrad.memory.trace_replay import ALLOC, FREE, compare_policies, format_comparison
from minigrad.tensor import from_numpy, hooks, manual_seed

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
    with hooks.add_allocation_observer(observe):
        result = fn(*args, **kwargs)
        del args, kwargs
    return trace, result


def _mlp_step(batch_size: int, seed: int):
    manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(seed)
    images = from_numpy(rng.random((batch_size, 1, 28, 28), dtype=np.float32))
    labels = from_numpy(rng.integers(0, 10, batch_size))
    loss = nn.CrossEntropyLoss()(model(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    del images, labels, loss
    return model, opt  # kept alive: parameters, gradients and optimizer state stay allocated


def record_mlp_step(batch_size: int = 64, seed: int = 0) -> list[tuple]:
    """The trace of building an MNIST MLP with Adam and running one training step at ``batch_size``."""
    trace, _ = record_trace(_mlp_step, batch_size, seed)
    return trace


def compare_policies_on_mlp_step(batch_size: int = 64, file=None) -> dict:
    """Record one MNIST-MLP training step, replay it under best fit and first fit, print and return both results."""
    trace = record_mlp_step(batch_size)
    results = compare_policies(trace)
    allocs = sum(1 for event in trace if event[0] == ALLOC)
    print(f"MNIST MLP 784-256-128-10, Adam, one training step at batch {batch_size}: {allocs} allocations, "
          f"{len(trace) - allocs} frees", file=file or sys.stdout)
    print(format_comparison(results), file=file or sys.stdout)
    return results
