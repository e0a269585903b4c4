"""The tracker's peak beside the allocators' own figures: tracemalloc on the CPU, CuPy's pool on a GPU.

tracemalloc sees every NumPy buffer, and also Python objects and the arrays an op makes and drops inside
itself (``a * b + c`` makes ``a * b`` first), so its peak is at least the tracker's and a little higher:
for the chapter-05 MLP (whose ops make few such arrays) within 5 %; for the chapter-06 CNN, whose
convolutions make large transient copies inside the op (im2col, transposes), within 50 %. The lower bound
allows 3 % because an optimizer step declares its scratch rather than reporting each array.
"""

import gc

import numpy as np
import pytest

import minigrad.memory as memory
import minigrad.tensor as mt
from minigrad import nn, optim
import minigrad.memory as mm
from minigrad.training.recipes import RECIPES

UPPER = {"mnist-mlp": 1.05, "mnist-cnn": 1.5}


@pytest.mark.parametrize("recipe", ["mnist-mlp", "mnist-cnn"])
def test_tracemalloc_peak_is_the_trackers_within_the_stated_tolerance(recipe):
    spec = RECIPES[recipe]
    batch = spec.batch_size
    rng = np.random.default_rng(0)
    images = rng.standard_normal((batch, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, batch)
    gc.collect()
    with memory.track(ground_truth=True) as mem:
        mt.manual_seed(0)
        model = spec.build()
        optimizer = optim.Adam(model.parameters(), lr=spec.lr)
        x, y = mt.from_numpy(images.copy()), mt.from_numpy(labels.copy())
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        optimizer.step()
        del x, y, loss
    allocated_inside = mem.peak - mem.baseline - mem.preexisting
    assert mem.baseline == 0 and mem.preexisting == 0
    assert 0.97 * allocated_inside <= mem.tracemalloc_peak <= UPPER[recipe] * allocated_inside, mem.report()
    assert mem.peak_by_category["parameter"] == sum(p.nbytes for p in model.parameters())


@pytest.mark.gpu
def test_cupy_pool_used_bytes_beside_the_tracker(cupy):
    with memory.track() as mem:
        arrays = [mm.report_temporary(cupy.zeros(n, dtype=cupy.float32), "cuda") for n in (1000, 250_000, 3)]
        peak_here = mem.peak
        del arrays
    assert mem.current == 0 and peak_here == 4 * (1000 + 250_000 + 3)
    # the pool rounds each block up to 512 bytes
    assert peak_here <= mem.device_pool_peak <= peak_here + 3 * 512, mem.report()
