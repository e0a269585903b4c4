"""Project-level guards: the layer contract, the README's test command is what CI runs, its course command starts."""

import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> list[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is part of the test extra: pip install -e '.[test]'"
    return [exe]


def test_layer_contract_holds():
    run = subprocess.run(_lint_imports(), cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def _readme_command(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {name} -->\s*```(?:bash|sh)?\n(.+?)\n```", text, re.S)
    assert match, f"README has no {name} block"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command():
    command = _readme_command("test-command")
    assert command in (ROOT / ".ci" / "run").read_text()


def test_readme_course_command_opens_the_course_on_the_workspace():
    command = _readme_command("course-command")
    assert shlex.split(command.split("&&")[-1]) == [".venv/bin/minigrad", "lab"]
    assert '.venv/bin/pip install -e ".[lab]"' in command


def test_the_lab_command_works_for_root_too(monkeypatch, tmp_path):
    """Containers and cloud notebooks run as root: jupyter refuses root without --allow-root (harmless otherwise)."""
    from minigrad.course import lab

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    command = lab.lab_command(tmp_path, [])
    assert "--allow-root" in command and f"--ServerApp.root_dir={tmp_path}" in command
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "--allow-root" not in lab.lab_command(tmp_path, [])


def test_the_lab_environment_puts_the_course_commands_first(tmp_path):
    from minigrad.course import lab

    env = lab.lab_environment(tmp_path)
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["MINIGRAD_WORKSPACE"] == str(tmp_path)


def test_readme_course_command_starts_jupyterlab(tmp_path):
    """The README's ``minigrad lab``, as written, makes the workspace and serves it (as root when the tests run as root)."""
    if not (Path(sys.executable).parent / "jupyter-lab").exists():
        pytest.skip("JupyterLab is not installed here (it comes with pip install -e '.[lab]')")
    step = shlex.split(_readme_command("course-command").split("&&")[-1])
    args = [str(Path(sys.executable).parent / Path(step[0]).name), *step[1:], "--no-browser", "--port=0"]
    folder = tmp_path / "ws"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               MINIGRAD_WORKSPACE=str(folder))
    server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    seen, deadline = [], time.monotonic() + 120
    try:
        while time.monotonic() < deadline and not any("is running at" in line for line in seen):
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                if server.poll() is not None:
                    break
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    output = "".join(seen)
    assert "is running at" in output, output
    assert "Serving notebooks from local directory: " + str(folder) in output, output
    assert (folder / "chapters" / "01_scalar_autograd.ipynb").is_file() and (folder / "exercises").is_dir()


def test_hypothesis_is_derandomized_unless_the_wide_profile_is_asked_for(pytestconfig):
    from hypothesis import settings

    asked = pytestconfig.getoption("hypothesis_profile", None) or os.environ.get("MINIGRAD_HYPOTHESIS_PROFILE", "ci")
    assert settings.get_current_profile_name() == asked
    ci, wide = settings.get_profile("ci"), settings.get_profile("wide")
    assert ci.derandomize and ci.deadline is None and ci.print_blob
    assert not wide.derandomize and wide.max_examples >= 10 * ci.max_examples


def test_test_modules_have_unique_names():
    """The test folders are not packages: two test files of one name stop the whole run at collection."""
    names: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}


def test_readme_test_command_installs_the_compile_check_on_linux_only():
    """CI compiles every GPU kernel with NVRTC (the gpu-check extra); elsewhere the extra must install nothing."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    from packaging.requirements import Requirement

    assert '".[test,gpu-check]"' in _readme_command("test-command")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    requirements = [Requirement(line) for line in extras["gpu-check"]]
    assert {r.name for r in requirements} == {"cupy-cuda12x", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12"}
    for platform, machine, wanted in [("linux", "x86_64", True), ("linux", "aarch64", True), ("linux", "i686", False),
                                      ("darwin", "arm64", False), ("darwin", "x86_64", False), ("win32", "AMD64", False)]:
        for r in requirements:
            assert r.marker.evaluate({"sys_platform": platform, "platform_machine": machine}) == wanted, (r, platform)
