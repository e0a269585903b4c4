"""Each stage's ``__init__`` docstring gives a reading order that matches the files on disk.

The docstring lists the files that carry the chapters' ideas under "Reading
order" and everything else under "Extensions (not on the reading path)", each
as ````name.py`` (N lines)``. These tests keep that list from rotting: every
listed file exists, every module of the stage is listed exactly once, the
stated sizes are within 15 % of the real ones, and the stated total of the
reading path is the sum of its entries.
"""

import importlib
import re
from pathlib import Path

import pytest

STAGES = ["minigrad.scalar", "minigrad.tensor", "minigrad.nn", "minigrad.optim", "minigrad.data", "minigrad.gpu",
          "minigrad.memory", "minigrad.amp", "minigrad.checkpoint", "minigrad.capstone", "minigrad.export"]

READING = "Reading order\n-------------\n"
EXTENSIONS = "Extensions (not on the reading path)\n------------------------------------\n"
ENTRY = re.compile(r"``([\w/]+\.py)`` \(([\d,]+) lines\)")
TOTAL = re.compile(r"\(([\d,]+) lines in all\)")
TOLERANCE = 0.15  # a stated size may be this far off the real one (a few lines for tiny files)
SLACK_LINES = 3


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def sections(stage: str) -> tuple[Path, dict[str, int], dict[str, int], int]:
    """The stage's folder, its reading path and its extensions (file -> stated lines), and the stated total."""
    package = importlib.import_module(stage)
    doc = package.__doc__ or ""
    assert READING in doc and EXTENSIONS in doc, f"{stage}: the docstring needs a '{READING.splitlines()[0]}' "\
        f"and an '{EXTENSIONS.splitlines()[0]}' section (underlined)"
    assert doc.index(READING) < doc.index(EXTENSIONS), f"{stage}: the reading order comes before the extensions"
    reading_text = doc[doc.index(READING):doc.index(EXTENSIONS)]
    extensions_text = doc[doc.index(EXTENSIONS):]
    reading = [(name, _number(n)) for name, n in ENTRY.findall(reading_text)]
    extensions = [(name, _number(n)) for name, n in ENTRY.findall(extensions_text)]
    listed = [name for name, _ in reading + extensions]
    twice = sorted({name for name in listed if listed.count(name) > 1})
    assert not twice, f"{stage}: listed more than once: {twice}"
    total = TOTAL.search(reading_text)
    assert total, f"{stage}: the reading order states its size as '(N lines in all)'"
    return Path(package.__file__).parent, dict(reading), dict(extensions), _number(total.group(1))


def modules(folder: Path) -> set[str]:
    """Every .py file of the stage, relative to its folder, except the ``__init__.py`` that holds the list."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")} - {"__init__.py"}


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("stage", STAGES)
def test_every_module_is_listed_once_and_every_listed_file_exists(stage):
    folder, reading, extensions, _ = sections(stage)
    listed = set(reading) | set(extensions)
    assert reading, f"{stage}: the reading order is empty"
    missing = sorted(name for name in listed if not (folder / name).is_file())
    assert not missing, f"{stage}: the docstring lists files that do not exist: {missing}"
    unlisted = sorted(modules(folder) - listed)
    assert not unlisted, f"{stage}: add these files to the reading order or to the extensions: {unlisted}"


@pytest.mark.parametrize("stage", STAGES)
def test_stated_sizes_match_the_files(stage):
    folder, reading, extensions, total = sections(stage)
    wrong = []
    for name, stated in {**reading, **extensions}.items():
        real = lines(folder / name)
        if abs(stated - real) > max(TOLERANCE * real, SLACK_LINES):
            wrong.append(f"{name}: says {stated} lines, has {real}")
    assert not wrong, f"{stage}: update the sizes in the docstring (wc -l): {wrong}"
    assert total == sum(reading.values()), (
        f"{stage}: the reading order says {total} lines in all, its entries add up to {sum(reading.values())}"
    )


def test_the_checks_notice_a_wrong_size_and_a_missing_file(tmp_path):
    """The parser reads what the docstrings say (guards against a pattern that matches nothing)."""
    text = "x = 1\n" * 100
    (tmp_path / "a.py").write_text(text)
    assert lines(tmp_path / "a.py") == 100
    entries = dict((name, _number(n)) for name, n in ENTRY.findall("- ``a.py`` (1,000 lines): too big"))
    assert entries == {"a.py": 1000}
    assert modules(tmp_path) == {"a.py"}
