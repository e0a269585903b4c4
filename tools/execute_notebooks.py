"""Re-execute chapter notebooks in place, so their committed outputs are fresh.

    python tools/execute_notebooks.py                 # every chapter
    python tools/execute_notebooks.py chapters/01_scalar_autograd.ipynb

Runs each notebook top to bottom in a fresh kernel with the chapters/ folder as
working directory (as JupyterLab and nbval do) and prints how long it took.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as nbval runs them (chapters/conftest.py)
    os.environ.setdefault(_variable, "1")


def execute(path: Path, timeout: int = 600) -> float:
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    return seconds


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"{path.name}: {execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
