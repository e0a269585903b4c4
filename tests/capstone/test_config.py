"""TrainConfig: the knobs are checked when a configuration is made, and the effective batch never changes."""

import re

import pytest

from minigrad.capstone import TrainConfig


def test_micro_batch_splits_the_effective_batch():
    config = TrainConfig(batch_size=512, accumulate=4, amp="float16", checkpoint=2, card="gtx1050")
    assert config.micro_batch == 128 and config.scaled
    assert config.label() == "float16 + 2 segments + accumulate 4"
    assert config.but(accumulate=1).micro_batch == 512
    assert TrainConfig(batch_size=64, checkpoint="3").checkpoint == 3
    assert TrainConfig(batch_size=64).label() == "float32"


@pytest.mark.parametrize("kwargs, expected", [
    ({"batch_size": 0}, "batch_size must be a whole number >= 1"),
    ({"batch_size": 100, "accumulate": 3}, "must divide batch_size=100"),
    ({"batch_size": 64, "accumulate": True}, "accumulate must be a whole number"),
    ({"batch_size": 64, "amp": "float8"}, "amp must be None"),
    ({"batch_size": 64, "checkpoint": "sometimes"}, "checkpoint must be None, 'auto', 'budget'"),
    ({"batch_size": 64, "checkpoint": 0}, "checkpoint (a number of segments) must be a whole number >= 1"),
    ({"batch_size": 64, "checkpoint": "0"}, "checkpoint (a number of segments) must be a whole number >= 1, got 0"),
    ({"batch_size": 64, "checkpoint": True}, "checkpoint (a number of segments) must be a whole number >= 1, got True"),
    ({"batch_size": 64, "checkpoint": 2.5}, "checkpoint (a number of segments) must be a whole number >= 1, got 2.5"),
    ({"batch_size": 64, "checkpoint": [2]}, "checkpoint (a number of segments) must be a whole number >= 1, got [2]"),
    ({"batch_size": 64, "checkpoint": "-2"}, "checkpoint must be None, 'auto', 'budget'"),
    ({"batch_size": 64, "checkpoint": "auto"}, "name one with card="),
    ({"batch_size": 64, "card": "gtx9999"}, "unknown GPU"),
    ({"batch_size": 64, "optimizer": "lion"}, "optimizer must be one of"),
])
def test_bad_knobs_are_explained(kwargs, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        TrainConfig(**kwargs)
