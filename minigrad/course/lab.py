"""``minigrad lab``: JupyterLab on the learner's workspace, opened at the chapters.

The workspace (:mod:`minigrad.grading.workspace`) is made or refreshed first,
so every link a chapter has (``../exercises/…``, ``../minigrad/…``) opens a
file. JupyterLab's terminals get this Python's ``bin`` folder first on their
``PATH``, so ``minigrad`` and ``python`` there are the course's, with no
activation step; ``$MINIGRAD_WORKSPACE`` tells the grader in any process
started there which workspace it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from minigrad.grading import workspace

LAB_MISSING = (
    "JupyterLab is not installed in this Python ({python}); install the course's `lab` extra: "
    "`{pip} install -e \".[lab]\"` in a clone of the course, or `{pip} install \"minigrad[lab]\"`"
)


def bin_dir() -> Path:
    """The folder holding this Python and the ``minigrad`` command (a venv's ``bin``, ``Scripts`` on Windows)."""
    return Path(sys.executable).parent


def lab_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("jupyterlab") is not None


def lab_environment(root: Path) -> dict[str, str]:
    """The server's (and its terminals' and kernels') environment: the course's commands first on the PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir()), env.get("PATH", "")]).rstrip(os.pathsep)
    env[workspace.ENVIRONMENT_VARIABLE] = str(root)
    if (bin_dir().parent / "pyvenv.cfg").is_file():
        env["VIRTUAL_ENV"] = str(bin_dir().parent)
    return env


def lab_command(root: Path, extra: list[str]) -> list[str]:
    """``python -m jupyterlab`` rooted at the workspace, opening its chapters (or its exercises without a clone)."""
    start = "chapters" if (root / "chapters").is_dir() else "exercises"
    shell = os.environ.get("SHELL") or shutil.which("sh") or "sh"
    command = [
        sys.executable, "-m", "jupyterlab",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{start}",
        # a login shell would reset the PATH from /etc/profile and lose the course's commands
        f"--ServerApp.terminado_settings={{'shell_command': [{shell!r}]}}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and cloud notebooks run as root
    return command + extra


def main(extra: list[str]) -> int:
    if not lab_installed():
        pip = bin_dir() / "pip"
        print("minigrad lab: " + LAB_MISSING.format(python=sys.executable, pip=pip), file=sys.stderr)
        return 2
    report = workspace.sync()
    for line in report.lines():
        print(line)
    print(f"your workspace: {report.root} (your answers go in its exercises/; the chapters there are your copies)")
    command, env = lab_command(report.root, extra), lab_environment(report.root)
    sys.stdout.flush()
    os.chdir(report.root)
    if os.name == "posix":
        os.execve(command[0], command, env)  # JupyterLab takes this process over: Ctrl-C reaches it alone
    return subprocess.call(command, env=env)
