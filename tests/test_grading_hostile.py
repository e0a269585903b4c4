"""Dishonest submissions score nothing: forging, patching, lying objects, reaching the reference, recursion.

Each file under tests/grading/hostile/ tries one way to gain points without
computing correct answers; the grader's verdict, computed in a process that
never runs submission code, gives it 0 on every exercise it attacks. The
audit hook of the grading child is tested event by event in
test_grading_guard.py.
"""

import sys
from pathlib import Path

import pytest

from minigrad.grading import grade

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = Path(__file__).resolve().parent / "grading" / "hostile"


def _scores(results):
    return {r.exercise.id: r.score for c in results for r in c.exercises}


def _outputs(results):
    return {r.exercise.id: r.output for c in results for r in c.exercises}


def _processes_with(needle: str) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle.encode() in (entry / "cmdline").read_bytes():
                    count += 1
            except OSError:
                pass
    return count


@pytest.mark.parametrize("name", ["forge_channel", "monkeypatch_everything", "lying_objects", "reach_the_reference"])
def test_hostile_chapter_01_scores_zero(name):
    results = grade("01", HOSTILE / f"{name}.py", timeout=30, show=False)
    scores = _scores(results)
    assert all(score == 0 for score in scores.values()), (scores, _outputs(results))


def test_reference_is_out_of_reach_with_a_clear_reason():
    results = grade("1.1", HOSTILE / "reach_the_reference.py", timeout=30, show=False)
    assert "the reference is out of reach" in _outputs(results)["1.1"]


def _recursive_chapter_01(tmp_path) -> Path:
    text = (ROOT / "solutions" / "01_scalar_autograd.py").read_text()
    start = text.index("def topological_order(root: Value) -> list[Value]:")
    end = len(text)
    recursive = '''def topological_order(root: Value) -> list[Value]:
    import sys

    sys.setrecursionlimit(10**6)
    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for child in node._children:
                visit(child)
            order.append(node)

    visit(root)
    return order
'''
    path = tmp_path / "01_recursive.py"
    path.write_text(text[:start] + recursive + text[end:])
    return path


def test_recursive_topological_sort_scores_zero_on_1_2(tmp_path):
    results = grade("01", _recursive_chapter_01(tmp_path), timeout=60, show=False)
    scores, outputs = _scores(results), _outputs(results)
    assert scores["1.2"] == 0, outputs["1.2"]
    assert "must be iterative" in outputs["1.2"] and "visit -> visit" in outputs["1.2"]
    assert scores["1.1"] == 4 and scores["1.3"] == 4  # the rest of the file is still graded on its merits


def test_a_recursive_helper_hidden_from_the_ast_check_is_caught_by_the_depth_probe(tmp_path):
    text = _recursive_chapter_01(tmp_path).read_text()
    text = text.replace("                visit(child)", "                globals()['vi' + 'sit'](child)")
    text = text.replace("    def visit(node):", "    global visit\n\n    def visit(node):")
    path = tmp_path / "01_hidden.py"
    path.write_text(text)
    results = grade("01", path, timeout=60, show=False)
    assert _scores(results)["1.2"] == 0
    assert "call depth" in _outputs(results)["1.2"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process sweeping is checked through /proc")
def test_processes_started_past_the_hook_are_swept(tmp_path):
    """Even a child started with the low-level fork_exec (no audit event) is killed when the exercise ends."""
    marker = "419.75"
    path = tmp_path / "01_spawner.py"
    path.write_text(
        (ROOT / "solutions" / "01_scalar_autograd.py").read_text()
        + f"""

def _spawn():
    import _posixsubprocess, os
    for new_session in (False, True):
        args = [b"/bin/sh", b"-c", b"sleep {marker}"]
        try:
            _posixsubprocess.fork_exec(args, [b"/bin/sh"], True, (), None, None, -1, -1, -1, -1, -1, -1,
                                       *os.pipe(), False, new_session, -1, None, None, None, -1, None, False)
        except Exception as err:
            print("could not spawn:", err)


_spawn()
"""
    )
    grade("1.1", path, timeout=20, show=False)
    assert _processes_with(f"sleep {marker}") == 0


def test_importing_the_reference_rules_scores_zero_on_chapter_04():
    results = grade("4.1", HOSTILE / "import_reference_04.py", timeout=60, show=False)
    assert all(score == 0 for score in _scores(results).values()), _outputs(results)


def test_a_backward_pass_that_recurses_through_the_graph_loses_points_on_4_5(tmp_path):
    text = (ROOT / "solutions" / "04_backward.py").read_text()
    recursive_order = '''    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for parent in node._parents:
                if parent:
                    visit(parent)
            order.append(node)

    visit(root)
    for node in reversed(order):
'''
    text = text.replace("    for node in reversed(topological_order(root)):\n", recursive_order, 1)
    assert "visit(root)" in text
    path = tmp_path / "04_backward.py"
    path.write_text(text)
    results = grade("4.5", path, timeout=60, show=False)
    scores, outputs = _scores(results), _outputs(results)
    assert 0 < scores["4.5"] < 5 and "20000" in outputs["4.5"].replace(",", "") and "RecursionError" in outputs["4.5"]
