"""Binder configuration: exact pins, the project installed editable, python-3.12, a strict postBuild."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

BINDER = Path(__file__).resolve().parents[1] / "binder"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _course_requirements() -> set[str]:
    """The names of what `pip install -e ".[lab]"` asks for: the dependencies and the lab extra."""
    project = tomllib.loads((BINDER.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["lab"]
    return {_canonical(re.match(r"[A-Za-z0-9._-]+", spec).group(0)) for spec in wanted}


def _requirements() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_requirements_are_exact_pins_plus_the_project():
    reqs = _requirements()
    assert "-e ." in reqs, "repo2docker does not install the root project when binder/ exists"
    pins = [r for r in reqs if r != "-e ."]
    assert all("==" in r for r in pins), [r for r in pins if "==" not in r]
    names = {_canonical(r.split("==")[0]) for r in pins}
    assert _course_requirements() <= names, f"not pinned: {sorted(_course_requirements() - names)}"
    assert not any(n.startswith("cupy") for n in names), "no CuPy on Binder"


def test_runtime_and_postbuild():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.12"
    post = (BINDER / "postBuild").read_text()
    assert post.startswith("#!") and "\nset -e\n" in post
    assert os.access(BINDER / "postBuild", os.X_OK)


def _runtime_version() -> str:
    return (BINDER / "runtime.txt").read_text().strip().removeprefix("python-")


def _runtime_python() -> str | None:
    """An interpreter of runtime.txt's version, which Binder builds with (the pins are that version's), or None.

    This one, else ``$MINIGRAD_BINDER_PYTHON``, else ``pythonX.Y`` on the PATH (a pyenv shim may name a
    version it cannot run: each candidate is asked its version).
    """
    version = _runtime_version()
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    for candidate in (os.environ.get("MINIGRAD_BINDER_PYTHON"), shutil.which(f"python{version}")):
        if not candidate:
            continue
        asked = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if asked.returncode == 0 and asked.stdout.strip() == version:
            return candidate
    return None


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MINIGRAD_SLOW") != "1", reason="builds a full environment: set MINIGRAD_SLOW=1")
def test_binder_environment_builds_and_runs_postbuild(tmp_path):
    python = _runtime_python()
    if python is None:
        pytest.skip(f"needs Python {_runtime_version()} (binder/runtime.txt), whose versions the pins are: put "
                    f"python{_runtime_version()} on the PATH or set MINIGRAD_BINDER_PYTHON to it")
    root = BINDER.parent
    venv = tmp_path / "binder-venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", "binder/requirements.txt"], cwd=root, check=True)
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(["bash", "binder/postBuild"], cwd=root, env=env, check=True)
