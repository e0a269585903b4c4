"""Project-level guards: the layer contract, and the README's test command is what CI runs."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_readme_course_command_opens_the_chapters():
    command = _readme_command("course-command")
    assert "jupyter lab" in command and "chapters" in command
