"""The random-number states a checkpointed block starts from, captured and put back for its recompute (exercise 10.2).

Invariant: a block run a second time from :func:`capture_rng`'s states draws
exactly the numbers of its first run (dropout draws the same mask), and the
generators outside the block are left where backward found them
(:func:`restored_rng` forks them).
"""

from __future__ import annotations

from contextlib import contextmanager

from minigrad.tensor import Tensor, fork_rng, get_rng_state, set_rng_state

__all__ = ["capture_rng", "restored_rng"]


def capture_rng(args) -> dict:
    """``{device: state}`` for the CPU and every other device a tensor argument lives on."""
    ### BEGIN SOLUTION 10.2 | a copy of the state of every generator the block can draw from, taken now, before the block runs: the CPU's always, and the generator of each other device a tensor argument lives on (each device once)
    devices = ["cpu"] + sorted({str(a.device) for a in args if isinstance(a, Tensor) and a.device.type != "cpu"})
    return {device: get_rng_state(device) for device in devices}
    ### END SOLUTION


@contextmanager
def restored_rng(states: dict | None):
    """Run the block from ``states`` (None: as they are), then put every generator back."""
    ### BEGIN SOLUTION 10.2 | None: the block runs from the generators as they are and its draws count (nothing is put back); otherwise every captured state is put in before the block runs, and afterwards each of those generators is back where it was before the with block, also when the block raised
    if states is None:
        yield
        return
    with fork_rng(devices=[d for d in states if d != "cpu"]):
        for device, state in states.items():
            set_rng_state(state, device)
        yield
    ### END SOLUTION
