"""The learner's workspace: made on demand, refreshed only where untouched, reset one exercise at a time.

Also the other side of the promise: a learner's edits there never reach the
course's committed files, and every link a chapter has opens a file both in
the course folder and in a workspace copy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minigrad.grading import find_exercise_file, workspace
from minigrad.grading.carve import stub_text, workspace_stub_text
from minigrad.grading.manifest import part_of, parts

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
LINK = re.compile(r"\]\((\.\./[^)\s]+)\)")
CHAPTER_LINK = re.compile(r"\]\((\d\d_\w+\.ipynb)\)")  # a link from one chapter to another, beside it


@pytest.fixture
def root(tmp_path, monkeypatch):
    folder = tmp_path / "ws"
    monkeypatch.setenv(workspace.ENVIRONMENT_VARIABLE, str(folder))
    return folder


def _solution_body(part, exercise_id: str) -> str:
    """The learner's file with exercise ``exercise_id``'s stub lines replaced by a (fake) answer."""
    return workspace_stub_text(part).replace(f"# TODO Exercise {exercise_id}\n", f"# my answer to {exercise_id}\n", 1)


def test_sync_makes_every_exercise_file_and_records_it(root):
    report = workspace.sync(root)
    for part in parts():
        assert (root / "exercises" / part.file).read_text() == workspace_stub_text(part)
    assert {f"exercises/{p.file}" for p in parts()} <= set(report.created)
    assert json.loads((root / workspace.MARKER).read_text())["written"]
    linked = workspace.library_files()
    assert "minigrad/scalar/engine.py" in linked
    for relative in linked:
        copy = root / relative
        assert copy.read_bytes() == (ROOT / relative).read_bytes() and not os.access(copy, os.W_OK) or os.geteuid() == 0
        assert copy.stat().st_mode & 0o222 == 0, f"{relative}: the copy must be read-only"
    assert not (root / "minigrad").is_symlink()
    assert workspace.sync(root).created == []  # nothing left to make


def test_a_learners_change_is_never_overwritten_and_untouched_files_follow_the_course(root, monkeypatch):
    workspace.sync(root)
    mine = root / "exercises" / part_of("1.2").file
    mine.write_text(_solution_body(part_of("1.2"), "1.2"))
    untouched = root / "exercises" / part_of("2.1").file
    files = workspace.course_files()
    newer = {k: v + b"# a later version of the course\n" for k, v in files.items()}
    monkeypatch.setattr(workspace, "course_files", lambda: newer)
    report = workspace.sync(root)
    assert "# my answer to 1.2" in mine.read_text()
    assert f"exercises/{mine.name}" in report.kept and f"exercises/{mine.name}" in report.newer_upstream
    assert untouched.read_text().endswith("# a later version of the course\n")
    assert f"exercises/{untouched.name}" in report.updated
    assert any("kept your exercises/01_scalar_autograd.py" in line for line in report.lines())


def test_reset_one_exercise_keeps_the_others_and_a_backup(root):
    part = part_of("4.5")
    workspace.sync(root)
    path = root / "exercises" / part.file
    stub = path.read_text()
    answer = stub.replace('raise NotImplementedError("Exercise 4.5', 'pass  # mine\n    raise NotImplementedError("Exercise 4.5', 1)
    answer = answer.replace("raise NotImplementedError('Exercise 4.5", "pass  # mine\n    raise NotImplementedError('Exercise 4.5", 1)
    answer += "\n\ndef my_helper():\n    return 42\n"
    assert answer != stub + "\n\ndef my_helper():\n    return 42\n"
    path.write_text(answer)
    result = workspace.reset("4.5", root)
    text = path.read_text()
    assert "# mine" not in text and "def my_helper():" in text  # the exercise's def is the stub's, the rest is kept
    assert result.backup.read_text() == answer and result.functions == ["run_backward"]


def test_reset_only_touches_the_named_exercise_in_a_file_of_several(root):
    workspace.sync(root)
    part = part_of("8.3")
    path = root / "exercises" / part.file
    stub = path.read_text()
    for exercise in ("8.3", "8.4"):
        stub = stub.replace(f"# TODO Exercise {exercise}\n", f"# TODO Exercise {exercise}\n        x_{exercise.replace('.', '_')} = 1  # mine\n", 1)
    path.write_text(stub)
    workspace.reset("8.3", root)
    text = path.read_text()
    assert "x_8_3" not in text and "x_8_4 = 1  # mine" in text


def test_reset_a_whole_file_and_refusals(root):
    workspace.sync(root)
    path = root / "exercises" / "04_backward.py"
    path.write_text("def run_backward(:\n")  # does not parse
    with pytest.raises(ValueError, match="does not parse .*reset the whole file with `minigrad exercises reset 04_backward.py`"):
        workspace.reset("4.5", root)
    result = workspace.reset("04_backward.py", root)
    assert path.read_text() == workspace_stub_text(part_of("4.5")) and result.backup.read_text() == "def run_backward(:\n"
    with pytest.raises(ValueError, match="no exercise '9.9'"):
        workspace.reset("9.9", root)
    with pytest.raises(ValueError, match="name one exercise"):
        workspace.reset("04", root)
    with pytest.raises(ValueError, match="no exercise file of that name"):
        workspace.reset("99_nothing.py", root)


def test_a_corrupt_marker_counts_as_no_record_and_a_file_in_the_way_is_explained(root, tmp_path):
    workspace.sync(root)
    (root / workspace.MARKER).write_text("{not json")
    mine = root / "exercises" / "01_scalar_autograd.py"
    mine.write_text("# mine\n")
    workspace.sync(root)  # with no record, a file that differs from the course's is the learner's: kept
    assert mine.read_text() == "# mine\n"
    blocker = tmp_path / "a file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError, match="is a file"):
        workspace.sync(blocker)


def test_the_default_exercise_file_is_the_workspace_copy_made_on_demand(root, capsys):
    path = find_exercise_file("1.2")
    assert path == root / "exercises" / "01_scalar_autograd.py" and path.is_file()
    assert f"your workspace {root}" in capsys.readouterr().out


def test_a_workspace_is_found_from_inside_it(tmp_path, monkeypatch):
    monkeypatch.delenv(workspace.ENVIRONMENT_VARIABLE)
    folder = tmp_path / "mine"
    workspace.sync(folder)
    (folder / "chapters").mkdir(exist_ok=True)
    assert workspace.locate(folder / "chapters") == folder.resolve()


def test_concurrent_syncs_leave_whole_files(root):
    errors = []

    def run():
        try:
            workspace.sync(root)
        except Exception as err:  # noqa: BLE001 -- collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for part in parts():
        assert (root / "exercises" / part.file).read_text() == workspace_stub_text(part)
    assert not list(root.rglob("*.tmp"))


def test_progress_counts_written_exercises(root):
    workspace.sync(root)
    part = part_of("1.2")
    text = re.sub(r"raise NotImplementedError\((['\"])Exercise 1\.2", r"raise ValueError(\1x", workspace_stub_text(part))
    (root / "exercises" / part.file).write_text(text)
    progress = workspace.progress(root)
    assert progress["1.2"] == "written" and progress["1.1"] == "not started"


def test_the_workspace_stub_is_the_pristine_stub_under_another_header():
    for part in parts():
        pristine, mine = stub_text(part).splitlines(), workspace_stub_text(part).splitlines()
        assert pristine[4:] == mine[4:] and "Do not write your answers here" in stub_text(part)
        assert "Your copy: write your answers here." in mine[0]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem[:2])
def test_every_link_of_a_chapter_opens_a_file_in_the_course_and_in_a_workspace(chapter, tmp_path):
    folder = tmp_path / "ws"
    workspace.sync(folder)
    cells = json.loads(chapter.read_text())["cells"]
    text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    links = set(LINK.findall(text))
    exercise_files = {f"../exercises/{p.file}" for p in parts() if p.chapter == chapter.name[:2]}
    assert exercise_files <= links, f"{chapter.name} links to its exercise files {sorted(exercise_files)}"
    if not exercise_files:  # a chapter without exercises (the tour) links to none
        assert not any("exercises/" in link for link in links), f"{chapter.name} has no exercises to link to"
    links |= set(CHAPTER_LINK.findall(text))
    for link in links:
        target = link.split("#")[0]
        assert (ROOT / "chapters" / target).resolve().is_file(), f"{chapter.name}: {link} opens nothing in the course folder"
        assert (folder / "chapters" / target).is_file(), f"{chapter.name}: {link} opens nothing in a workspace"


def test_the_test_run_never_uses_a_learners_workspace():
    """The run (and the notebooks' kernels, which inherit the variable) grade a pristine workspace of its own."""
    assert workspace.locate() != workspace.default_location().resolve()
    assert all((workspace.locate() / "exercises" / p.file).read_text() == workspace_stub_text(p) for p in parts())


def test_an_old_workspace_that_linked_the_package_gets_copies(root):
    root.mkdir(parents=True)
    (root / "minigrad").symlink_to(ROOT / "minigrad", target_is_directory=True)
    workspace.sync(root)
    assert not (root / "minigrad").is_symlink() and (root / "minigrad" / "scalar" / "engine.py").is_file()
    assert (ROOT / "minigrad" / "scalar" / "engine.py").stat().st_mode & 0o222, "the library itself stays writable"


def test_a_chapter_without_exercises_is_copied_into_the_workspace_and_has_nothing_to_grade(root):
    tour = ROOT / "chapters" / "00_tour.ipynb"
    report = workspace.sync(root)
    assert "chapters/00_tour.ipynb" in report.created
    assert (root / "chapters" / tour.name).read_bytes() == tour.read_bytes()
    assert not any(p.chapter == "00" for p in parts()) and not list((root / "exercises").glob("00_*"))
    run = subprocess.run([sys.executable, "-m", "minigrad.cli", "grade", "00"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "no graded exercises for chapter '00'; chapters with exercises: 01" in run.stderr
