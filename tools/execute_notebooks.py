"""Re-execute chapter notebooks in place, so their committed outputs are fresh, and write them as JupyterLab does.

    python tools/execute_notebooks.py                 # every chapter
    python tools/execute_notebooks.py chapters/01_scalar_autograd.ipynb
    python tools/execute_notebooks.py --normalize     # no execution: only rewrite into JupyterLab's form

Runs each notebook top to bottom in a fresh kernel with the chapters/ folder as
working directory (as JupyterLab and nbval do) and prints how long it took. The
kernels grade and load exercises from a pristine workspace made for the run.

Every chapter is written in JupyterLab's form: the bytes JupyterLab saves when it
opens the chapter, starts its kernel and saves it unchanged. So opening a chapter
never marks it changed and saving it never rewrites it. What JupyterLab does:

- it replaces ``metadata.kernelspec`` by exactly ``name``, ``display_name`` and
  ``language`` of the server's kernel spec ("Python 3 (ipykernel)" for ipykernel's
  ``python3``), and ``metadata.language_info`` by the kernel's kernel_info reply
  (its ``version`` is the kernel's Python); either change marks the notebook changed;
- it keeps a cell's ``collapsed`` and ``jupyter.outputs_hidden`` equal (the first
  one set wins), without marking the notebook changed, but saves it;
- the server writes nbformat's JSON: one-space indent, sorted keys, non-ASCII as
  is, multi-line strings split after each line end (``\\r`` too), transient keys
  (a cell's ``trusted``) dropped, then one newline.

Widget state (``metadata.widgets``, written by the execution) is kept as JupyterLab
keeps it with its default settings (``saveState`` off).
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
KERNEL_NAME = "python3"

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as nbval runs them (chapters/conftest.py)
    os.environ.setdefault(_variable, "1")


@dataclass(frozen=True)
class KernelFacts:
    """What JupyterLab writes into a notebook's metadata once its kernel has started."""

    kernelspec: dict
    language_info: dict


def kernel_facts(kernel_name: str = KERNEL_NAME) -> KernelFacts:
    """The kernel spec as JupyterLab records it, and the language_info a freshly started kernel reports."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    spec = KernelSpecManager().get_kernel_spec(kernel_name)
    manager, client = start_new_kernel(kernel_name=kernel_name)
    try:
        reply = client.kernel_info(reply=True, timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return KernelFacts(
        kernelspec={"name": kernel_name, "display_name": spec.display_name, "language": spec.language},
        language_info=reply["content"]["language_info"],
    )


def jupyterlab_form(notebook: nbformat.NotebookNode, facts: KernelFacts) -> nbformat.NotebookNode:
    """A copy of ``notebook`` with what JupyterLab changes on opening it already changed (module docstring)."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["kernelspec"] = nbformat.from_dict(facts.kernelspec)
    notebook.metadata["language_info"] = nbformat.from_dict(facts.language_info)
    for cell in notebook.cells:
        collapsed = cell.metadata.get("collapsed")
        hidden = cell.metadata.get("jupyter", {}).get("outputs_hidden")
        if collapsed is not None:
            cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = collapsed
        elif hidden is not None:
            cell.metadata["collapsed"] = hidden
    return notebook


def jupyterlab_bytes(notebook: nbformat.NotebookNode) -> bytes:
    """The file's bytes as the Jupyter server writes them (nbformat's JSON, then a newline)."""
    return (nbformat.writes(notebook, version=nbformat.NO_CONVERT) + "\n").encode("utf-8")


def write(notebook: nbformat.NotebookNode, path: Path, facts: KernelFacts) -> bool:
    """Write ``notebook`` to ``path`` in JupyterLab's form; True if the file's bytes changed."""
    data = jupyterlab_bytes(jupyterlab_form(notebook, facts))
    if path.exists() and path.read_bytes() == data:
        return False
    path.write_bytes(data)
    return True


def normalize(path: Path, facts: KernelFacts) -> bool:
    """Rewrite ``path`` in JupyterLab's form without running it; True if it changed. Idempotent."""
    return write(nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT), path, facts)


def execute(path: Path, facts: KernelFacts, timeout: int = 600) -> float:
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    write(notebook, path, facts)
    return seconds


def main(argv: list[str]) -> int:
    from minigrad.grading import workspace

    only_normalize = "--normalize" in argv
    paths = [Path(p) for p in argv if p != "--normalize"] or sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    facts = kernel_facts()
    with tempfile.TemporaryDirectory(prefix="minigrad-pristine-workspace-") as folder:
        # the committed outputs grade the untouched stubs, never the maintainer's own workspace
        os.environ[workspace.ENVIRONMENT_VARIABLE] = folder
        workspace.sync(Path(folder))
        for path in paths:
            if only_normalize:
                print(f"{path.name}: {'rewritten' if normalize(path, facts) else 'already in JupyterLab form'}", flush=True)
            else:
                print(f"{path.name}: {execute(path, facts):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
