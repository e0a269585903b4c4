"""Fit answers are the card's: the step's allocations replayed through its caching allocator, in reserved bytes.

The property: for random small models (MLPs and CNNs of a few layers) and
small simulated cards, the largest batch ``estimate()`` says fits is exactly
the largest batch that trains one step on the simulated card, found by
bisection on the card itself, and one more example does not fit there.
Cards below 20 MiB cannot take any request above 1 MiB (it needs a 20 MiB
segment), so the cards drawn include larger ones, where the limit comes
from how segments fill and split.
"""

import dataclasses
import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad import nn
from minigrad.memory import buffers, phases
from minigrad.memory.card_check import train_on_card
from minigrad.memory.estimate import estimate
from minigrad.memory.fit import largest_fitting
from minigrad.memory.profiles import get_profile

KiB, MiB = 2**10, 2**20


def card(megabytes: float):
    return dataclasses.replace(get_profile("gtx1050"), name=f"{megabytes} MiB test card", short_name="test",
                               memory_bytes=int(megabytes * MiB), context_bytes=0)


@pytest.fixture(autouse=True)
def nothing_left_registered():
    gc.collect()
    yield
    assert not buffers.guards and not buffers.observers and not phases.observers


def mlp(widths):
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def cnn(channels, kernel, width):
    return nn.Sequential(nn.Conv2d(1, channels, kernel), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(channels * ((width - kernel + 1) // 2) ** 2, 10))


models = st.one_of(
    st.tuples(st.just("mlp"), st.lists(st.sampled_from([16, 48, 100, 300]), min_size=2, max_size=4)),
    st.tuples(st.just("cnn"), st.tuples(st.sampled_from([2, 4, 6]), st.sampled_from([3, 5]), st.sampled_from([12, 16]))),
)


def build(spec):
    kind, args = spec
    if kind == "mlp":
        return mlp([*args, 10]), (args[0],)
    channels, kernel, width = args
    return cnn(channels, kernel, width), (1, width, width)


def card_largest(model, shape, profile, optimizer) -> int:
    """Bisection on the card alone: double until a step fails, then halve the gap."""
    trains = {}

    def fits(batch):
        if batch not in trains:
            trains[batch] = train_on_card(model, shape, batch, profile, optimizer=optimizer).fits
        return trains[batch]

    high = 1
    while fits(high):
        high *= 2
    return largest_fitting(fits, high)


@settings(max_examples=6)  # each example bisects on a simulated card (about 15 real steps): fewer than the suite default
@given(spec=models, megabytes=st.sampled_from([2.5, 7, 24, 48]), optimizer=st.sampled_from(["adam", "sgd"]))
def test_the_largest_batch_that_fits_is_the_cards(spec, megabytes, optimizer):
    model, shape = build(spec)
    profile = card(megabytes)
    result = estimate(model, shape, 8, optimizer=optimizer)
    largest = result.max_batch_size(profile)
    assert largest == card_largest(model, shape, profile, optimizer), (spec, megabytes, optimizer)
    if largest:
        assert train_on_card(model, shape, largest, profile, optimizer=optimizer).fits
    assert not train_on_card(model, shape, largest + 1, profile, optimizer=optimizer).fits
    assert not result.at(largest + 1).fits(profile)
    assert largest <= result.max_batch_size_by_allocated(profile)


def test_the_replay_reserves_what_the_card_reserves():
    """Not only the verdict: the peaks of reserved and allocated blocks are the card's, byte for byte."""
    model, shape = build(("cnn", (4, 5, 16)))
    result = estimate(model, shape, 8)
    for batch in (1, 7, 64, 300):
        run = train_on_card(model, shape, batch, card(64))
        replay = result.at(batch).replay(card(64))
        assert run.fits and replay.fits
        assert (replay.peak_reserved, replay.peak_allocated) == (run.peak_reserved, run.peak_allocated)
        assert replay.peak_reserved >= result.at(batch).peak and run.foreign == 0


def test_allocated_bytes_alone_say_yes_where_the_card_says_no():
    """On chapter 08's 64 MiB card the tensors of the chapter-06 CNN fit at a batch the card refuses."""
    from minigrad.training.recipes import mnist_cnn

    model, profile = mnist_cnn(), card(64)
    result = estimate(model, (1, 28, 28), 64)
    by_allocated, largest = result.max_batch_size_by_allocated(profile), result.max_batch_size(profile)
    assert largest < by_allocated
    assert result.at(by_allocated).fits_by_allocated(profile) and not result.at(by_allocated).fits(profile)
    assert not train_on_card(model, (1, 28, 28), largest + 1, profile).fits
    assert "reserved" in result.at(largest).fit_report(profile)


@pytest.mark.parametrize("steps", [2, 3, 5])
def test_accumulated_micro_batches_fit_as_on_the_card(steps):
    """The recorded step holds two micro-batches; later ones repeat the second's layout on the card too."""
    model, shape = build(("cnn", (4, 5, 16)))
    profile = card(24)
    result = estimate(model, shape, 8, accumulation_steps=steps)
    largest = result.max_batch_size(profile)
    assert train_on_card(model, shape, largest, profile, accumulation_steps=steps).fits
    assert not train_on_card(model, shape, largest + 1, profile, accumulation_steps=steps).fits
