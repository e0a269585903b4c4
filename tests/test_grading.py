"""The grader: reference and solutions score full marks, stubs zero, hostile code cannot hurt it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from planted_grading import graded_course

from minigrad.grading import grade
from minigrad.grading.manifest import chapters
from minigrad.grading.report import gradescope, table
from minigrad.grading.runner import resolve_files

ROOT = Path(__file__).resolve().parents[1]


def _scores(results):
    return {r.exercise.id: r.score for c in results for r in c.exercises}


def _full_marks():
    return {e.id: e.points for c in chapters().values() for e in c.exercises}


def test_reference_scores_full_marks():
    results = list(graded_course("reference"))  # graded once per run, as grade("all", reference=True) grades
    assert [part.file for part in results] == [file for _, file in resolve_files("all", None, None, reference=True)]
    assert _scores(results) == _full_marks()
    total = sum(_full_marks().values())
    assert f"All: {total:g} / {total:g}" in table(results)  # the grand total of `grade all`


def test_every_manifest_exercise_has_a_check_and_every_check_an_exercise():
    import importlib

    from minigrad.grading.probing import checks_in

    for c in chapters().values():
        for part in c.parts:
            module = importlib.import_module(f"minigrad.grading.checks.{part.checks.stem}")
            ids = {check._exercise for check in checks_in(module)}
            assert ids == {e.id for e in part.exercises}, (part.checks.name, ids)


def test_solutions_score_full_marks():
    results = graded_course("solutions")  # graded once per run, with the planted bugs' seed (tests/planted_grading.py)
    assert all(part.file.parent == ROOT / "solutions" for part in results)
    assert _scores(results) == _full_marks()


def test_stubs_score_zero():
    results = graded_course("exercises")  # graded once per run (tests/planted_grading.py)
    assert all(part.file.parent == ROOT / "exercises" for part in results)
    assert all(score == 0 for score in _scores(results).values())
    assert sum(c.max_score for c in results) == sum(_full_marks().values())
    assert all(r.status == "not started" for c in results for r in c.exercises)
    assert "not started\n        open " in table(results)  # the file to open and the hint, not the error


SLEEPER = "313.25"


def _hostile_chapter_01(tmp_path) -> Path:
    text = (ROOT / "solutions" / "01_scalar_autograd.py").read_text()

    def inject(after: str, code: str) -> None:
        nonlocal text
        assert after in text, after
        indent = after[: len(after) - len(after.lstrip())]
        text = text.replace(after, f"{indent}{code}\n{after}", 1)

    inject("        other = _as_value(other, \"*\", self)\n        return", "bytearray(10 * 2**30)  # 10 GB")
    inject("            out = a**b\n", "import sys; sys.exit(3)")
    inject("        t = math.tanh(self.data)\n", "import os; os._exit(1)")
    inject(
        "    order: list[Value] = []\n",
        f"import subprocess; subprocess.Popen(['sleep', '{SLEEPER}']); subprocess.Popen(['sleep', '{SLEEPER}'], start_new_session=True)",
    )
    inject("        order = topological_order(self)\n", "while True: pass")
    path = tmp_path / "01_hostile.py"
    path.write_text(text)
    return path


def _sleepers_left() -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if SLEEPER.encode() in (entry / "cmdline").read_bytes():
                    count += 1
            except OSError:
                pass
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process sweeping is checked through /proc")
def test_hostile_submission_costs_only_its_points(tmp_path):
    path = _hostile_chapter_01(tmp_path)
    timeout = 6.0
    start = time.monotonic()
    [result] = grade("01", path, timeout=timeout, memory_mb=1024, show=False)
    elapsed = time.monotonic() - start
    by_id = {r.exercise.id: r for r in result.exercises}
    local = by_id["1.1"].output  # the local derivatives: a memory bomb in *, sys.exit in **, os._exit in tanh
    assert by_id["1.1"].score == 0 and all(what in local for what in ("MemoryError", "SystemExit", "died")), local
    assert by_id["1.2"].score == 0 and "PermissionError" in by_id["1.2"].output  # starting processes is refused
    assert by_id["1.3"].score == 0 and by_id["1.3"].status == "timeout"
    assert result.max_score == 13
    assert elapsed < 5 * timeout + 20
    assert _sleepers_left() == 0, "the grader must kill everything the submission started"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("raise RuntimeError('broken at import')\n", "broken at import"),
        ("def f(:\n", "SyntaxError"),
        ("import sys\nsys.exit(0)\n", "SystemExit"),
        ("import os\nos._exit(3)\n", "the process died"),
        ("import os\nwhile True:\n    os.fork()\n", "PermissionError"),  # a fork bomb
    ],
)
def test_broken_files_score_zero_with_a_reason(tmp_path, source, expected):
    path = tmp_path / "02_broken.py"
    path.write_text(source)
    [result] = grade("02", path, timeout=20, show=False)
    assert result.score == 0 and result.max_score == 12
    assert all(expected in r.output for r in result.exercises), [r.output for r in result.exercises]


def test_gradescope_json_via_cli(tmp_path):
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, "-m", "minigrad.cli", "grade", "02", "--file", str(ROOT / "solutions" / "02_neural_nets_from_scalars.py"), "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "12 / 12" in run.stdout
    data = json.loads(out.read_text())
    assert data["score"] == 12
    assert {t["name"].split(":")[0] for t in data["tests"]} == {"Exercise 2.1", "Exercise 2.2", "Exercise 2.3"}
    for t in data["tests"]:
        assert set(t) == {"name", "score", "max_score", "status", "output"} and t["status"] == "passed"


def test_cli_makes_a_missing_workspace_and_grades_its_stub(tmp_path):
    folder = tmp_path / "my workspace"
    env = {**os.environ, "MINIGRAD_WORKSPACE": str(folder)}
    run = subprocess.run(
        [sys.executable, "-m", "minigrad.cli", "grade", "1.1"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )
    assert run.returncode == 1, run.stderr
    assert f"your workspace {folder}" in run.stdout and "0 / " in run.stdout
    assert (folder / "exercises" / "01_scalar_autograd.py").read_text().startswith("# Chapter 01")


def test_cli_explains_a_missing_file(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "minigrad.cli", "grade", "01", "--file", "nowhere.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2
    assert "no such file" in run.stderr and "nowhere.py" in run.stderr


def test_unknown_chapter_is_explained():
    with pytest.raises(ValueError, match="chapters with exercises: 01, 02"):
        grade("42", show=False)


def test_gradescope_counts_crashes_against_the_full_denominator(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("raise SystemExit(1)\n")
    data = gradescope(grade("01", path, timeout=20, show=False))
    assert data["score"] == 0 and sum(t["max_score"] for t in data["tests"]) == 13


def test_selecting_one_file_of_a_chapter_with_several():
    from minigrad.grading.runner import resolve_files

    [(part, path)] = resolve_files("6.2", "mine.py", None, False)
    assert part.file == "06_conv.py" and path.name == "mine.py"
    [(part, _)] = resolve_files("06", "some/where/06_pooling.py", None, False)
    assert part.file == "06_pooling.py"
    with pytest.raises(ValueError, match="this grades 3 files"):
        resolve_files("06", "mine.py", None, False)
    assert [p.file for p, _ in resolve_files("05", None, None, True)] == ["05_module.py", "05_cross_entropy.py", "05_optimizers.py", "05_linear.py"]


def _cli(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "minigrad.cli", "grade", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_cli_exit_status_is_1_when_a_check_fails_unless_exit_zero():
    stub = ROOT / "exercises" / "02_neural_nets_from_scalars.py"
    failing = _cli("02", "--file", stub)
    assert failing.returncode == 1 and "0 / 12" in failing.stdout
    assert _cli("02", "--file", stub, "--exit-zero").returncode == 0


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--timeout", "-5"], "--timeout -5.0: must be a positive number of seconds"),
        (["--timeout", "nan"], "--timeout nan: must be a positive number"),
        (["--memory-mb", "1"], "--memory-mb 1: below the minimum of 512 MB"),
        (["--file", "."], "is a folder; pass one exercise file"),
    ],
)
def test_cli_explains_bad_option_values(args, expected):
    run = _cli("02", *args, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and expected in run.stderr, run.stderr


def test_a_file_of_another_chapter_is_named_as_such():
    run = _cli("02", "--file", ROOT / "solutions" / "01_scalar_autograd.py", timeout=60)
    assert run.returncode == 2
    assert "does not look like chapter 02's exercise file" in run.stderr and "minigrad grade 01" in run.stderr
    with pytest.raises(ValueError, match="does not look like chapter 04"):
        grade("4.1", ROOT / "solutions" / "03_tensors.py", show=False)


def test_a_misnamed_file_in_a_folder_of_submissions_scores_zero_with_the_reason(tmp_path):
    (tmp_path / "02_neural_nets_from_scalars.py").write_text((ROOT / "solutions" / "01_scalar_autograd.py").read_text())
    [result] = grade("02", folder=tmp_path, show=False)
    assert result.score == 0 and result.max_score == 12
    assert all("does not look like chapter 02's" in r.output for r in result.exercises)


def test_seed_replays_a_run(tmp_path):
    path = tmp_path / "03_wrong.py"
    text = (ROOT / "solutions" / "03_tensors.py").read_text()
    wrong = (
        "\n\ndef strides_for_shape(shape):\n    return (1,) * len(shape)\n"
        "\n\ndef index_to_position(index, strides, offset=0):\n    return sum(index)\n"
    )  # both functions of exercise 3.1 wrong
    path.write_text(text + wrong)
    first = grade("3.1", path, seed=1234, show=False)[0].exercises[0]
    again = grade("3.1", path, seed=1234, show=False)[0].exercises[0]
    other = grade("3.1", path, seed=4321, show=False)[0].exercises[0]
    assert first.score == 0 and first.output.count("replay: minigrad grade 3.1 --seed 1234") == 1
    assert first.output == again.output and first.output.replace("1234", "4321") != other.output


def test_the_channel_refuses_duplicate_and_unrequested_answers():
    import os
    import threading

    from minigrad.grading import wire
    from minigrad.grading.runner import ProtocolError, _Channel

    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()

    def child():
        request = wire.read_frame(requests_r)
        for _ in range(2):  # the answer, then a duplicate of it
            wire.write_frame(answers_w, {"id": request["id"], "ok": 1})

    thread = threading.Thread(target=child)
    thread.start()
    channel = _Channel(requests_w, answers_r, time.monotonic() + 10, 10)
    try:
        assert channel.ask("call", ("f", [], {})) == 1
        with pytest.raises(ProtocolError, match="never made"):
            channel.ask("call", ("f", [], {}))
        with pytest.raises(ProtocolError):  # the channel stays refused for the rest of the exercise
            channel.ask("call", ("f", [], {}))
    finally:
        thread.join()
        for fd in (requests_r, requests_w, answers_r, answers_w):
            os.close(fd)
