"""Errors raised in the learner's code keep the learner's traceback and name the learner's line."""

import traceback
from pathlib import Path

import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.grading import use_exercise

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"


def _wrong_copy(tmp_path: Path, name: str, right: str, wrong: str) -> Path:
    """The solution file ``name`` with the line ``right`` replaced by ``wrong`` (marked), written to tmp_path."""
    text = (SOLUTIONS / name).read_text()
    assert text.count(right) == 1, f"{name} changed: update this test"
    path = tmp_path / name
    path.write_text(text.replace(right, wrong + "  # wrong on purpose"))
    return path


def _wrong_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "wrong on purpose" in line)


def _frames(excinfo) -> list[tuple[str, int]]:
    """(file, line) of every frame of the exception and of the exceptions it was raised from."""
    found, exc = [], excinfo.value
    while exc is not None:
        found += [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return found


def test_a_wrong_chapter_04_rule_shows_the_learners_line(tmp_path):
    path = _wrong_copy(
        tmp_path, "04_tensor_autograd.py",
        "    return grad.sum(axis=axes, keepdims=True).reshape(shape)",
        "    return grad.reshape(shape)",
    )
    x = mt.randn(4, 3, requires_grad=True)
    b = mt.randn(3, requires_grad=True)
    with use_exercise("04", path):
        with pytest.raises(ValueError, match="cannot reshape") as excinfo:
            (x + b).sum().backward()
    assert (str(path), _wrong_line(path)) in _frames(excinfo)


def test_a_wrong_exercise_in_a_forward_pass_is_chained_and_named(tmp_path):
    path = _wrong_copy(
        tmp_path, "06_conv.py",
        "    strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)",
        "    strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw)",
    )
    mt.manual_seed(0)
    conv = nn.Conv2d(1, 2, 3)
    with use_exercise("6.1", path):
        with pytest.raises(mt.ShapeError) as excinfo:
            conv(mt.randn(2, 1, 6, 6))
    error = excinfo.value
    assert isinstance(error.__cause__, ValueError)  # chained: `from exc`, not `from None`
    failing = _wrong_line(path) + 1  # the learner's next line, as_strided(x, shape, strides), is where it fails
    assert "windows = as_strided" in path.read_text().splitlines()[failing - 1]
    assert f"{path}:{failing}, in im2col" in str(error)
    assert (str(path), failing) in _frames(excinfo)


class _Buggy(mt.Function):
    def forward(ctx, a):
        return a.reshape(7)  # a bug in the user's own op

    def backward(ctx, grad):
        return grad


def test_a_users_function_keeps_its_traceback_and_names_its_line():
    with pytest.raises(mt.ShapeError, match=r"test_learner_tracebacks.py:\d+, in forward") as excinfo:
        _Buggy.apply(mt.randn(2, 3))
    assert isinstance(excinfo.value.__cause__, ValueError)


def test_errors_inside_the_library_keep_their_short_message():
    with pytest.raises(mt.ShapeError) as excinfo:
        mt.ones(2, 3) + mt.ones(4)
    assert excinfo.value.__cause__ is None and "your code" not in str(excinfo.value)
    with pytest.raises(mt.ShapeError) as excinfo:
        mt.ones(2, 3) @ mt.ones(2, 3)
    assert "did you mean" in str(excinfo.value) and "your code" not in str(excinfo.value)
