"""The tracker and the estimate agree: a tracked training step's peak is within 5 % of ``estimate()``'s.

The step is the second of two (Adam's moments exist, as in the steady state
``estimate`` describes), the model and optimizer handed to ``track`` so the
bytes they hold count from the start; tracemalloc's peak is read beside it.
"""

import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory import estimate, track
from minigrad.training.recipes import mnist_cnn, mnist_mlp

CASES = {"mlp-128-adam": (mnist_mlp, 128), "cnn-64-adam": (mnist_cnn, 64), "cnn-1024-adam": (mnist_cnn, 1024)}


def step(model, optimizer, loss_fn, batch):
    x, y = mt.randn(batch, 1, 28, 28), mt.randint(0, 10, (batch,))
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()


@pytest.mark.parametrize("case", list(CASES))
def test_tracked_peak_is_within_five_percent_of_the_estimate(case):
    build, batch = CASES[case]
    mt.manual_seed(0)
    model = build()
    optimizer = optim.Adam(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    step(model, optimizer, loss_fn, batch)  # the first step makes Adam's state
    with track(model, optimizer, ground_truth=True) as mem:
        step(model, optimizer, loss_fn, batch)
    predicted = estimate(build(), (1, 28, 28), batch, optimizer="adam").peak
    assert abs(mem.peak - predicted) <= 0.05 * predicted, (case, mem.peak, predicted, mem.tracemalloc_peak)
    assert mem.tracemalloc_peak is not None and mem.tracemalloc_peak > 0
