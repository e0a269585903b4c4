"""try_my_code: a chapter's demo run with the learner's code, and a plain account of what happened."""

import re
from pathlib import Path

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.grading import try_my_code
from minigrad.tensor import grad_rules

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "04_tensor_autograd.py"
STUBS = ROOT / "exercises" / "04_tensor_autograd.py"


def _losses(_mine=None, steps: int = 3) -> list[float]:
    """A tiny regression whose backward runs unbroadcast (the bias), matmul and mean."""
    gen = np.random.default_rng(0)
    x, y = mt.tensor(gen.standard_normal((8, 3))), mt.tensor(gen.standard_normal((8, 1)))
    w, b = mt.tensor(gen.standard_normal((3, 1)), requires_grad=True), mt.zeros(1, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with mt.no_grad():
            w.sub_(0.1 * w.grad)
            b.sub_(0.1 * b.grad)
            w.grad = b.grad = None
        losses.append(loss.item())
    return losses


def test_the_solutions_run_the_demo_with_the_learners_functions(capsys):
    seen = []

    def demo(mine):
        seen.append(grad_rules.unbroadcast is vars(mine)["unbroadcast"])  # plugged in while the demo runs
        return _losses()

    original = grad_rules.unbroadcast
    result = try_my_code("04", demo, path=SOLUTIONS, what="losses", compare=lambda mine: np.allclose(mine, _losses()))
    assert seen == [True] and grad_rules.unbroadcast is original
    assert result == pytest.approx(_losses())
    assert capsys.readouterr().out == "your losses match the library's\n"


def test_a_wrong_result_is_called_different(capsys):
    try_my_code("04", _losses, path=SOLUTIONS, what="losses", compare=lambda mine: False)
    assert "your losses differ from the library's" in capsys.readouterr().out


def test_the_stubs_name_the_open_exercise_and_the_file_without_a_traceback(capsys, monkeypatch):
    monkeypatch.chdir(ROOT / "chapters")  # where a chapter notebook runs; the file is the workspace's copy
    assert try_my_code("04", _losses) is None
    out = capsys.readouterr().out
    assert re.match(r"not done yet: Exercise 4\.\d", out)
    assert re.search(r"  \(your file: \S*exercises/04_\w+\.py\)\n$", out)  # the file of the exercise reached first
    assert "Traceback" not in out and out.count("\n") == 1


def test_an_exercise_key_is_named_once(capsys):
    try_my_code("4.1", _losses, path=STUBS)
    assert capsys.readouterr().out.startswith("not done yet: Exercise 4.1:")
    try_my_code("4.1", _losses, path=SOLUTIONS, what="losses", compare=lambda mine: True)
    assert capsys.readouterr().out == "exercise 4.1: your losses match the library's\n"


def test_a_bug_shows_the_learners_file_and_line(tmp_path, capsys):
    buggy = tmp_path / "04_tensor_autograd.py"
    source = SOLUTIONS.read_text()
    first_statement = "    if grad.shape == shape:\n        return grad\n"  # unbroadcast's body, after its docstring
    assert source.count(first_statement) == 1
    buggy.write_text(source.replace(first_statement, '    raise ValueError("my shapes are off")\n' + first_statement))
    bug_line = source[: source.index(first_statement)].count("\n") + 1

    original = grad_rules.unbroadcast
    assert try_my_code("04", _losses, path=buggy) is None
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("your code raised ValueError: my shapes are off")
    assert f"line {bug_line}" in first and 'raise ValueError("my shapes are off")' in first
    assert "Traceback" in out and f'{buggy}", line {bug_line}' in out  # the learner's frame is kept
    assert "grading/try_mine.py" not in out  # the helper's own frame is not
    assert grad_rules.unbroadcast is original


def test_loading_only_passes_the_learners_module(tmp_path, capsys):
    mine = tmp_path / "01_scalar_autograd.py"
    mine.write_text("def double(x):\n    return 2 * x\n")
    assert try_my_code("01", lambda module: module.double(21), plug_in=False, path=mine) == 42
    assert capsys.readouterr().out == ""


def test_a_syntax_error_names_the_file_and_line(tmp_path, capsys):
    mine = tmp_path / "01_scalar_autograd.py"
    mine.write_text("x = 1\ndef broken(:\n")
    assert try_my_code("01", lambda module: None, plug_in=False, path=mine) is None
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("your code raised SyntaxError") and "line 2" in first


def test_a_missing_file_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = []
    assert try_my_code("04", ran.append, path=tmp_path / "nowhere.py") is None
    assert "nowhere.py" in capsys.readouterr().out and ran == []
