"""The memory stage's vocabulary stays in ``minigrad.memory``: the core, ``nn`` and ``optim`` speak their own words.

Checked over the library folders of the earlier stages and over every
exercise and solution file of chapters 01-07. Words are matched whole
(``track`` but not PyTorch's ``track_running_stats``, ``TENSOR`` but not
``NOT_A_TENSOR``); ``scratch_`` as a prefix.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["track", "reported", "scopes", "allocation_tag", "set_buffer_tag", "ACTIVATION", "OUTPUT", "TEMPORARY",
         "GRADIENT", "TENSOR", "PARAMETER_TAG", "BUFFER_TAG", "OPTIMIZER_STATE", "optimizer_state"]
VOCABULARY = re.compile(r"\b(?:" + "|".join(WORDS) + r")\b|\bscratch_")


def _files():
    for folder in ("minigrad/tensor", "minigrad/nn", "minigrad/optim"):
        yield from sorted((ROOT / folder).rglob("*.py"))
    for folder in ("exercises", "solutions"):
        yield from sorted((ROOT / folder).glob("0[1-7]_*.py"))


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_memory_vocabulary(path):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if VOCABULARY.search(line)]
    assert not hits, "the memory stage's words belong in minigrad/memory:\n" + "\n".join(hits)


def test_the_pattern_finds_the_words_and_spares_pytorch_names():
    assert VOCABULARY.search("hooks.track(x)") and VOCABULARY.search("scratch_release()")
    assert VOCABULARY.search('with allocation_tag("optimizer_state"):')
    assert not VOCABULARY.search("self.track_running_stats = True; NOT_A_TENSOR; num_batches_tracked")
