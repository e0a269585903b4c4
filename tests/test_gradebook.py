"""The teacher's gradebook (``minigrad grade all --dir ... --csv ...``): a class of submissions made from the course's files.

One batch, graded twice (one student at a time, then two), serves most tests:
the course's solutions, stubs and planted bugs, and hostile files (a syntax
error, an infinite loop, a file that deletes or writes files outside, one that
forks or spawns a process, one whose error message carries terminal escapes).
Chapter 08 is used because each of its exercise files grades in well under a
second.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from planted_grading import BY_ID, ROOT

from minigrad.cli import main
from minigrad.grading import gradebook
from minigrad.grading.guard import Guard
from minigrad.grading.manifest import chapter

SEED = 20261203
TIMEOUT = 5.0  # per exercise; the infinite loop costs this once
CHAPTER = chapter("08")
POINTS = {e.id: e.points for e in CHAPTER.exercises}


def _solution(name: str) -> str:
    return (ROOT / "solutions" / name).read_text()


def _planted(bug_id: str) -> str:
    bug = BY_ID[bug_id]
    text = _solution(bug.file)
    assert text.count(bug.original) == 1, bug_id
    return text.replace(bug.original, bug.replacement)


def _make_class(root: Path) -> tuple[Path, Path]:
    """The submissions folder and a canary file outside it."""
    canary = root / "canary" / "keep.txt"
    canary.parent.mkdir()
    canary.write_text("still here")
    outside = root / "canary" / "written.txt"
    subs = root / "submissions"
    files = {
        **{f"alice/{p.file}": _solution(p.file) for p in CHAPTER.parts},
        "bob/08_storage.py": (ROOT / "exercises" / "08_storage.py").read_text(),
        "bob/08_sizes.py": (ROOT / "exercises" / "08_sizes.py").read_text(),
        "carol__08_storage.py": _planted("storage_counts_every_view"),
        "carol__08_sizes.py": _planted("sizes_zero_gets_no_block"),
        "dave/08_storage.py": "def bytes_held(tensors:\n    return 0\n",
        "dave/notes.txt": "my answers\n",
        "dave/08_storage_v2.py": _solution("08_storage.py"),
        "erin/08_storage.py": _solution("08_storage.py") + "\nwhile True:\n    pass\n",
        "frank/08_storage.py": _solution("08_storage.py") + f"\nimport shutil\nshutil.rmtree({str(canary.parent)!r})\n",
        "frank/08_sizes.py": _solution("08_sizes.py") + f"\nopen({str(outside)!r}, 'w').write('gotcha')\n",
        "grace/08_storage.py": _solution("08_storage.py") + "\nimport os\nif os.fork() == 0:\n    while True:\n        pass\n",
        "grace/08_sizes.py": _solution("08_sizes.py")
        + "\nimport subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n",
        "heidi/08_storage.py": _solution("08_storage.py") + "\nraise RuntimeError('\\x1b[2J\\x1b[31mgotcha')\n",
        "README.md": "how to hand in\n",
    }
    for name, text in files.items():
        (subs / name).parent.mkdir(parents=True, exist_ok=True)
        (subs / name).write_text(text)
    return subs, canary


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


def _grading_processes(root: Path) -> list[int]:
    """Processes still running that are this process's children, or whose command line names ``root``.

    Not counted: multiprocessing's resource tracker (the gradebook's grading processes start it, once per process).
    """
    try:
        import psutil
    except ImportError:
        psutil = None
    found = set()
    if psutil is not None:
        found |= {c.pid for c in psutil.Process().children(recursive=True)}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if str(root).encode() in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return sorted(pid for pid in found - {os.getpid()} if not _is_resource_tracker(pid))


def _is_resource_tracker(pid: int) -> bool:
    """The standard library's helper that a process using multiprocessing starts once, and that ends with it."""
    try:
        return b"multiprocessing.resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("gradebook")
    subs, canary = _make_class(root)
    before = _snapshot(root)
    running_before = set(_grading_processes(root))
    books = {jobs: gradebook.grade_all(subs, ["08"], jobs=jobs, timeout=TIMEOUT, seed=SEED) for jobs in (1, 2)}
    left_running = sorted(set(_grading_processes(root)) - running_before)
    out = root / "out" / "gradebook.csv"
    out.parent.mkdir()
    gradebook.write_csv(books[2], out)
    return {"root": root, "canary": canary, "books": books, "csv": out, "before": before, "after": _snapshot(root),
            "left_running": left_running}


def _grades(batch, student: str) -> gradebook.StudentGrades:
    [grades] = [g for g in batch["books"][2].students if g.student == student]
    return grades


def test_the_results_do_not_depend_on_the_number_of_jobs(batch):
    one, two = batch["books"][1], batch["books"][2]
    assert one.csv_text() == two.csv_text()
    assert [g.refused for g in one.students] == [g.refused for g in two.students]
    assert (one.jobs, two.jobs) == (1, 2)


def test_every_student_has_a_row_in_name_order_and_the_stray_file_is_named(batch):
    book = batch["books"][2]
    assert [g.student for g in book.students] == ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
    assert [name for name, _ in book.unassigned] == ["README.md"]


def test_solutions_score_full_points_and_stubs_zero(batch):
    assert _grades(batch, "alice").scores == POINTS
    bob = _grades(batch, "bob")
    assert set(bob.scores.values()) == {0.0} and not bob.refused and not bob.timed_out
    assert sorted(bob.missing) == sorted(p.file for p in CHAPTER.parts if p.file not in ("08_storage.py", "08_sizes.py"))


def test_planted_bugs_lose_points_on_their_exercise_only(batch):
    carol = _grades(batch, "carol")  # the flat layout: carol__08_storage.py
    assert carol.scores["8.1"] < POINTS["8.1"] and carol.scores["8.6"] < POINTS["8.6"]
    assert not carol.refused and not carol.timed_out


def test_a_syntax_error_and_files_that_are_not_exercise_files_are_refused_with_the_reason(batch):
    dave = _grades(batch, "dave")
    assert set(dave.scores.values()) == {0.0}
    reasons = dict(dave.refused)
    assert reasons["08_storage.py"].startswith("syntax error: SyntaxError") and "08_storage.py:1" in reasons["08_storage.py"]
    assert reasons["notes.txt"].startswith("not an exercise file")
    assert "did you mean 08_storage.py?" in reasons["08_storage_v2.py"]


def test_an_infinite_loop_times_out_and_the_batch_goes_on(batch):
    erin = _grades(batch, "erin")
    assert erin.timed_out == [("8.1", "08_storage.py")] and erin.scores["8.1"] == 0
    assert "timed out: erin 8.1 (08_storage.py)" in gradebook.summary(batch["books"][2])


def test_deleting_or_writing_files_outside_is_refused_and_the_filesystem_is_untouched(batch):
    frank = _grades(batch, "frank")
    reasons = dict(frank.refused)
    assert reasons["08_storage.py"].startswith("refused by the sandbox: change") and "shutil.rmtree" in reasons["08_storage.py"]
    assert reasons["08_sizes.py"].startswith("refused by the sandbox: change") and "written.txt" in reasons["08_sizes.py"]
    assert set(frank.scores.values()) == {0.0}
    assert batch["canary"].read_text() == "still here"
    # everything under the batch's folder is as it was, but for the gradebook itself (no __pycache__, no temporary file)
    assert batch["after"] == {**batch["before"], "out": b"<dir>", "out/gradebook.csv": batch["csv"].read_bytes()}


def test_forking_and_spawning_are_refused_and_nothing_is_left_running(batch):
    reasons = dict(_grades(batch, "grace").refused)
    assert reasons["08_storage.py"].startswith("refused by the sandbox: use os.fork")
    assert reasons["08_sizes.py"].startswith("refused by the sandbox: use subprocess.Popen")
    assert batch["left_running"] == []


def test_an_error_message_cannot_carry_terminal_escapes(batch):
    [(name, why)] = _grades(batch, "heidi").refused
    assert name == "08_storage.py" and why.startswith("could not load: RuntimeError:") and "gotcha" in why
    assert all(c.isprintable() for c in gradebook.summary(batch["books"][2]).replace("\n", ""))


def test_the_csv_has_a_column_per_exercise_chapter_totals_a_total_and_notes(batch):
    rows = list(csv.DictReader(io.StringIO(batch["csv"].read_text())))
    header = list(rows[0])
    assert header == ["student", "8.1/3", "8.2/3", "8.3/4", "8.4/4", "8.5/5", "8.6/4", "ch08/23", "total/23", "notes"]
    by_student = {r["student"]: r for r in rows}
    assert by_student["alice"]["total/23"] == "23" and by_student["alice"]["notes"] == ""
    carol = by_student["carol"]
    assert float(carol["ch08/23"]) == pytest.approx(sum(float(carol[f"{e}/{p:g}"]) for e, p in POINTS.items()))
    assert "timed out: 8.1 (08_storage.py)" in by_student["erin"]["notes"]
    assert "refused 08_storage.py: syntax error" in by_student["dave"]["notes"]


def test_the_summary_gives_the_mean_per_exercise_who_was_refused_and_the_time(batch):
    book = batch["books"][2]
    text = gradebook.summary(book)
    mean = sum(g.scores["8.1"] for g in book.students) / len(book.students)
    assert "8.1 " in text and f"{mean:6.2f} / 3" in text
    assert "graded 8 students on chapter 08 in " in text and f"seed {SEED}" in text
    assert "  grace: 08_storage.py: refused by the sandbox: use os.fork" in text
    assert "not graded: README.md: not a submission" in text


# --- without grading: the layout, the CSV cells, the guard, the command's errors ---


def test_collect_refuses_links_duplicates_and_folders(tmp_path):
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "08_sizes.py").write_text("x = 1\n")
    (tmp_path / "ann" / "08_storage.py").symlink_to(ROOT / "solutions" / "08_storage.py")
    (tmp_path / "ann" / "exercises").mkdir()
    (tmp_path / "ann__08_sizes.py").write_text("x = 2\n")
    (tmp_path / "__08_sizes.py").write_text("x = 3\n")
    (tmp_path / ".hidden").write_text("")
    [ann], unassigned = gradebook.collect(tmp_path)
    assert ann.student == "ann" and ann.files == {"08_sizes.py": tmp_path / "ann" / "08_sizes.py"}
    reasons = dict(ann.refused)
    assert reasons["08_storage.py"] == "a symbolic link, not a file"
    assert reasons["exercises"] == "a folder, not an exercise file"
    assert reasons["08_sizes.py"].startswith("a second copy of 08_sizes.py")
    assert [name for name, _ in unassigned] == ["__08_sizes.py"]


def test_a_cell_never_starts_a_formula():
    grades = gradebook.StudentGrades("=HYPERLINK(1)", {e.id: 0.0 for e in CHAPTER.exercises})
    book = gradebook.Gradebook([CHAPTER], [grades], [], SEED, 1, 0.0)
    row = next(csv.reader(io.StringIO(book.csv_text().splitlines()[1])))
    assert row[0] == "'=HYPERLINK(1)"


def test_the_guard_refuses_changes_outside_the_working_folder(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    guard = Guard([], [], (), scratch)
    guard.sealed = True
    inside, outside = scratch / "a.txt", tmp_path / "b.txt"
    guard("open", (str(inside), "w", os.O_WRONLY | os.O_CREAT))
    guard("open", (str(outside), "r", os.O_RDONLY))
    guard("os.remove", (str(inside), None))
    for event, args in [
        ("open", (str(outside), "w", os.O_WRONLY | os.O_CREAT)),
        ("open", (str(outside), None, os.O_RDWR)),  # os.open
        ("os.remove", (str(outside), None)),
        ("os.rename", (str(inside), str(outside), None, None)),
        ("os.remove", ("a.txt", 5)),  # relative to a folder opened elsewhere
        ("os.chmod", (7, 0o777, None)),  # through a file descriptor
        ("shutil.rmtree", (str(tmp_path), None)),
        ("open", (str(scratch / ".." / "b.txt"), "a", os.O_APPEND)),
    ]:
        with pytest.raises(PermissionError, match="does not allow"):
            guard(event, args)
    Guard([], [], (), scratch)("os.remove", (str(outside), None))  # before it is sealed: the harness's own setup


@pytest.mark.parametrize("argv, message", [
    (["grade", "all", "--csv", "gb.csv"], "name the folder of submissions with --dir"),
    (["grade", "all", "--dir", "subs", "--jobs", "2"], "add --csv PATH"),
    (["grade", "all", "--dir", "subs", "--csv", "subs/gb.csv"], "is inside the submissions folder"),
    (["grade", "all", "--dir", "subs", "--csv", "gb.csv", "--chapters", "99"], "no graded exercises for chapter '99'"),
    (["grade", "all", "--dir", "nowhere", "--csv", "gb.csv"], "is not a folder of submissions"),
    (["grade", "08", "--dir", "subs", "--csv", "gb.csv", "--chapters", "08"], "name the chapters once"),
    (["grade", "all", "--dir", "subs", "--csv", "gb.csv", "--timeout", "0"], "--timeout 0"),
])
def test_the_command_explains_bad_arguments(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    (tmp_path / "subs" / "ann" / "08_sizes.py").write_text("x = 1\n")
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "gb.csv").exists()


def test_the_command_rejects_a_jobs_count_below_one(capsys):
    with pytest.raises(SystemExit):
        main(["grade", "all", "--dir", "subs", "--csv", "gb.csv", "--jobs", "0"])
    assert "--jobs: must be >= 1" in capsys.readouterr().err


def test_the_command_writes_the_gradebook_and_prints_the_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ann__08_sizes.py").write_text((ROOT / "exercises" / "08_sizes.py").read_text())
    (tmp_path / "gb.csv").write_text("an older gradebook\n")
    assert main(["grade", "all", "--dir", "subs", "--csv", "gb.csv", "--jobs", "1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "graded 1 student on chapter 08" in out and "wrote gb.csv" in out
    assert (tmp_path / "gb.csv").read_text().splitlines()[1].startswith("ann,0,0,0,0,0,0,0,0,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gb.csv", "subs"]  # no temporary file left beside it


def test_a_mode_of_the_teachers_process_or_of_another_student_never_reaches_a_students_checks(tmp_path):
    """The checks compute their references with the library, whose modes (grad mode...) are process-wide.

    Graded in threads of one process, two students switched them under each other (a class of 40 correct
    chapter-04 files graded with --jobs 2 lost points on exercise 4.5 for 7 students): each student is now
    graded in a process of their own, which starts with none of this process's modes.
    """
    from minigrad.tensor import no_grad

    subs = tmp_path / "submissions"
    for student in ("ann", "ben"):
        (subs / student).mkdir(parents=True)
        (subs / student / "04_backward.py").write_text(_solution("04_backward.py"))
    with no_grad():  # in threads, every reference gradient of the checks would fail here
        book = gradebook.grade_all(subs, ["04"], jobs=2, timeout=30.0, seed=SEED)
    assert [(g.student, g.scores["4.5"]) for g in book.students] == [("ann", 5.0), ("ben", 5.0)]
