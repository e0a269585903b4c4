"""Random numbers: one generator per device, all seeded by ``manual_seed``.

The CPU's generator is a NumPy ``Generator`` (PCG64), ``default_generator()``.
Every other device draws on the device itself, from a generator its backend
makes (``Backend.make_generator(seed, index)``), created on first use and
seeded from the last ``manual_seed``: ``randn(..., device="cuda")`` and
dropout on a GPU tensor never touch host memory. A backend without
``make_generator`` gets its numbers drawn on the host and copied over.

A device generator offers NumPy's ``standard_normal(size, dtype)``,
``random(size, dtype)``, ``integers(low, high, size, dtype)``,
``permutation(n)``, plus ``get_state()`` / ``set_state(state)``.

``get_rng_state(device)`` / ``set_rng_state(state, device)`` save and restore
one device's generator (the default device's when not named: see
``set_default_device``), and ``fork_rng(devices)`` restores several after a
block: activation checkpointing replays a forward pass with them (chapter 10).
``randn``/``rand``/``randint``/``randperm`` also take ``generator=`` (a
``numpy.random.Generator``); such numbers are drawn on the host.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import numpy as np

from minigrad.tensor.backend import Device, cpu, device as as_device, get_default_device

__all__ = ["manual_seed", "default_generator", "generator_for", "get_rng_state", "set_rng_state", "fork_rng"]

_generator = np.random.Generator(np.random.PCG64())
_seed: int | None = None  # the last manual_seed; None: device generators start from fresh entropy
_device_generators: dict[Device, object] = {}


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the generator of every device (as ``torch.manual_seed``); returns the CPU one."""
    global _seed
    _seed = int(seed)
    _generator.bit_generator.state = np.random.PCG64(_seed).state
    _device_generators.clear()  # recreated from the new seed on first use
    return _generator


def default_generator() -> np.random.Generator:
    """The CPU's generator."""
    return _generator


def generator_for(dev=None):
    """The generator that draws on ``dev`` (default: the default device; the CPU's for a host-drawing device)."""
    dev = get_default_device() if dev is None else as_device(dev)
    if dev is cpu:
        return _generator
    gen = _device_generators.get(dev)
    if gen is None:
        make = dev.backend.make_generator
        if make is None:
            return _generator
        seed = _seed if _seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        gen = _device_generators[dev] = make(seed, dev.index)
    return gen


def get_rng_state(device=None) -> dict:
    """A copy of the state of ``device``'s generator (the default device's, normally the CPU)."""
    gen = generator_for(device)
    if gen is _generator:
        return copy.deepcopy(_generator.bit_generator.state)
    return copy.deepcopy(gen.get_state())


def set_rng_state(state: dict, device=None) -> None:
    """Put ``device``'s generator (the default device's) back to ``state`` from ``get_rng_state``."""
    gen = generator_for(device)
    if gen is _generator:
        _generator.bit_generator.state = copy.deepcopy(state)
    else:
        gen.set_state(copy.deepcopy(state))


@contextmanager
def fork_rng(devices=None):
    """Run a block and then put the generators back where they were.

    ``devices``: the devices whose generators to restore besides the CPU's;
    by default every device that has drawn a number so far. A device
    generator first made inside the block is forgotten, so it starts afresh.
    """
    devices = list(_device_generators) if devices is None else [as_device(d) for d in devices]
    known = set(_device_generators)
    states = [(dev, get_rng_state(dev)) for dev in [cpu, *devices]]
    try:
        yield
    finally:
        for dev in [d for d in _device_generators if d not in known]:
            del _device_generators[dev]
        for dev, state in states:
            set_rng_state(state, dev)
