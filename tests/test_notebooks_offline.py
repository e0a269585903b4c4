"""Offline without the full MNIST, the README's test command passes: the chapters that train on it are skipped."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def needs(path: Path) -> list[str]:
    return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("minigrad", {}).get("needs", [])


def loads_full_mnist(path: Path) -> bool:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    calls = [m.group(0) for c in cells if c["cell_type"] == "code" for m in re.finditer(r"MNIST\([^)]*\)", "".join(c["source"]))]
    return any("subset=True" not in call for call in calls)


def test_every_chapter_that_loads_the_full_mnist_says_so_in_its_metadata():
    assert any(loads_full_mnist(path) for path in CHAPTERS)
    for path in CHAPTERS:
        assert ("mnist" in needs(path)) == loads_full_mnist(path), path.name


def test_without_the_data_those_chapters_are_skipped_with_one_line_naming_minigrad_data(tmp_path):
    chapters = [str(path.relative_to(ROOT)) for path in CHAPTERS if "mnist" in needs(path)]
    env = {k: v for k, v in os.environ.items() if k not in ("MINIGRAD_DATA", "XDG_CACHE_HOME")}
    env.update(HOME=str(tmp_path), MPLBACKEND="Agg")  # an empty user cache: nothing to find there
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *chapters],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(chapters)} skipped" in run.stdout and "failed" not in run.stdout, run.stdout
    lines = [line for line in run.stdout.splitlines() if "MINIGRAD_DATA" in line]
    assert len(lines) == 1 and all(Path(c).name in lines[0] for c in chapters), run.stdout
    assert str(tmp_path) in lines[0]  # it says where it looked
