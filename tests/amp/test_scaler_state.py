"""The loss-scale state machine on its own: sequences of clean and overflowing steps -> scales and growth trackers."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad.amp.scaler_state import OptState, float32, update_scale

DEFAULTS = dict(growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)


def run(sequence, scale=65536.0, tracker=0, **factors):
    """The (scale, tracker) after each step of ``sequence`` (True: that step overflowed)."""
    factors = {**DEFAULTS, **factors}
    out = []
    for found_inf in sequence:
        scale, tracker = update_scale(scale, tracker, found_inf, **factors)
        out.append((scale, tracker))
    return out


def test_an_overflow_halves_the_scale_and_resets_the_tracker():
    assert run([False, False, True]) == [(65536.0, 1), (65536.0, 2), (32768.0, 0)]


def test_growth_interval_clean_steps_double_the_scale():
    history = run([False] * 4, growth_interval=2)
    assert history == [(65536.0, 1), (131072.0, 0), (131072.0, 1), (262144.0, 0)]
    assert run([False] * 2000)[-1] == (131072.0, 0) and run([False] * 1999)[-1] == (65536.0, 1999)


def test_growth_that_overflows_float32_keeps_the_scale_and_resets_the_tracker():
    top = 2.0**127
    assert run([False], scale=top, tracker=1, growth_interval=2) == [(top, 0)]


def test_the_scale_is_a_float32_number():
    (scale, _), = run([False], scale=float32(1000.1), growth_interval=1, growth_factor=1.1)
    assert scale == float(np.float32(np.float64(np.float32(1000.1)) * 1.1))
    assert float32(1e39) == math.inf


@given(st.lists(st.booleans(), max_size=60), st.integers(1, 5))
def test_the_scale_is_init_times_powers_of_two_and_the_tracker_counts_clean_steps(sequence, interval):
    history = run(sequence, scale=1024.0, growth_interval=interval)
    for step, (scale, tracker) in enumerate(history):
        exponent = math.log2(scale / 1024.0)
        assert exponent == int(exponent)
        assert 0 <= tracker < interval
        clean_run = 0
        for found_inf in reversed(sequence[: step + 1]):
            if found_inf:
                break
            clean_run += 1
        assert tracker == clean_run % interval


def test_the_stages_of_an_optimizer():
    assert [s.name for s in OptState] == ["READY", "UNSCALED", "STEPPED"]
