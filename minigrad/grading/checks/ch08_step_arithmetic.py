"""Graded checks for chapter 08, exercise 8.2 (an MLP's step memory by category): ``exercises/08_step_arithmetic.py``.

The learner's ``mlp_step_bytes`` runs in the child on widths, batch sizes,
optimizers and element sizes drawn here; every category is compared here
with a count made layer by layer below.
"""

from __future__ import annotations

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise

STATE_COPIES = {"sgd": 0, "sgd-momentum": 1, "adam": 2}
CATEGORIES = ("parameter", "gradient", "optimizer_state", "input", "activation")


def _expected(sizes, batch, optimizer, itemsize) -> dict[str, int]:
    weights = [sizes[i] * sizes[i + 1] + sizes[i + 1] for i in range(len(sizes) - 1)]
    relu_outputs = [batch * width for width in sizes[1:-1]]  # each is also the next Linear's input: one buffer
    params = sum(weights) * itemsize
    return {"parameter": params, "gradient": params, "optimizer_state": STATE_COPIES[optimizer] * params,
            "input": batch * sizes[0] * itemsize, "activation": sum(relu_outputs) * itemsize}


def _check(learner, sizes, batch, optimizer, itemsize) -> None:
    got = learner.mlp_step_bytes(list(sizes), batch, optimizer, itemsize)
    what = f"mlp_step_bytes(sizes={list(sizes)}, batch={batch}, optimizer={optimizer!r}, itemsize={itemsize})"
    assert isinstance(got, dict), f"{what} must return a dict of bytes by category, got {type(got).__name__}"
    missing = [c for c in CATEGORIES if c not in got]
    assert not missing, f"{what}: the result has no {missing} (keys: {sorted(map(str, got))})"
    expected = _expected(sizes, batch, optimizer, itemsize)
    for category in CATEGORIES:
        assert got[category] == expected[category], (
            f"{what}: {category} is {got[category]} bytes, expected {expected[category]}"
        )


def _sizes(gen, layers: int) -> list[int]:
    return [int(gen.integers(2, 300)) for _ in range(layers + 1)]


@exercise("8.2")
def test_one_linear_layer(learner, rng):
    gen = np_generator(rng)
    _check(learner, _sizes(gen, 1), int(gen.integers(1, 200)), "sgd", 4)


@exercise("8.2")
def test_an_mlp_with_adam(learner, rng):
    gen = np_generator(rng)
    for layers in (2, 3):
        _check(learner, _sizes(gen, layers), int(gen.integers(1, 512)), "adam", 4)


@exercise("8.2")
def test_each_optimizer_keeps_its_state(learner, rng):
    gen = np_generator(rng)
    sizes, batch = _sizes(gen, 2), int(gen.integers(1, 64))
    for optimizer in ("sgd", "sgd-momentum", "adam"):
        _check(learner, sizes, batch, optimizer, 4)


@exercise("8.2")
def test_other_element_sizes(learner, rng):
    gen = np_generator(rng)
    for itemsize in (2, 8):
        _check(learner, _sizes(gen, int(gen.integers(2, 5))), int(gen.integers(1, 100)), "adam", itemsize)
