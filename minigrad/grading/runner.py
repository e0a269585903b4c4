"""Grade a learner's file: the checks run here, the learner's code in one sandboxed child per exercise.

The trust boundary: this process imports the (trusted) check modules, chooses
every input, and computes every verdict; it never imports or runs the
submission. The child (:mod:`minigrad.grading.child`) loads the submission and
only answers probe requests, one at a time, over a pipe, with plain data
(:mod:`minigrad.grading.wire`). Whatever it sends can only be an answer: the
checks compare answers with the library's reference and with finite
differences computed here, so only correct answers score. The checks that
exist and the points come from this process's own import of the check module
and from the manifest, never from the child.

One child per exercise means an infinite loop or a crash in one exercise
costs only that exercise's points. Scores are ``points * passed / checks``
(0 if a ``required`` check fails); the maximum always comes from the manifest.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from minigrad.grading import guard, sandbox, wire
from minigrad.grading.loader import check_file_matches, find_exercise_file
from minigrad.grading.manifest import PACKAGE_DIR, Exercise, Part, chapter, chapters, part_of, parts
from minigrad.grading.probing import Learner, LearnerError, check_seed, checks_in

DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_MB = 2048
MIN_MEMORY_MB = 512  # the child imports NumPy and the library before it runs any of the learner's code



@dataclass
class ExerciseResult:
    exercise: Exercise
    score: float
    status: str  # "passed", "partial", "failed", "not started", "timeout" or "crashed"
    output: str  # every failure in full, then how to replay the run (Gradescope's output)
    checks_passed: int = 0
    checks_total: int = 0
    seed: int | None = None
    summary: str | None = None  # the few lines the table shows (None: the start of ``output``)
    load_error: str | None = None  # why the submission could not be loaded (a SyntaxError, a refused import...), if so

    @property
    def max_score(self) -> float:
        return self.exercise.points


@dataclass
class PartResult:
    """The results of one exercise file."""

    part: Part
    file: Path
    exercises: list[ExerciseResult] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(r.score for r in self.exercises)

    @property
    def max_score(self) -> float:
        return self.part.max_points


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class ChildGone(Exception):
    """The child timed out or died: no more answers for this exercise."""

    def __init__(self, message: str, timed_out: bool):
        super().__init__(message)
        self.timed_out = timed_out


class LoadError(LearnerError):
    """The submission could not be loaded (same for every seed)."""


class ProtocolError(Exception):
    """The answer channel carried something other than one well-formed answer per request."""


class _Channel:
    """The parent's end of the grading channel: one request, then exactly one answer, before the deadline."""

    def __init__(self, requests_fd: int, answers_fd: int, deadline: float, timeout: float):
        self.requests, self.answers, self.timeout = requests_fd, answers_fd, timeout
        self.budget = deadline - time.monotonic()  # seconds of waiting for the child left (the checks' own time is free)
        self.session = 0
        self.broken: Exception | None = None
        self.errors: list[LearnerError] = []  # what the learner's code raised during the current session

    def next_session(self) -> None:
        self.session += 1
        self.errors = []

    def _read(self) -> dict:
        start = time.monotonic()
        try:
            return wire.read_frame(self.answers, start + self.budget)
        except wire.ChannelTimeout:
            self.broken = ChildGone(f"timed out after {self.timeout:g} s (an infinite loop?)", True)
        except (wire.ChannelClosed, OSError):
            self.broken = ChildGone("did not finish: the process died (sys.exit/os._exit/crash?)", False)
        except wire.WireError as err:
            self.broken = ProtocolError(f"the answer channel carried a malformed frame: {err}")
        finally:
            self.budget -= time.monotonic() - start
        raise self.broken

    def hello(self, nonce: str) -> dict:
        frame = self._read()
        if frame.get("hello") != nonce or not set(frame) <= {"hello", "error", "where", "mro"}:
            self.broken = ProtocolError("the answer channel carried a frame before the grader's greeting")
            raise self.broken
        return frame

    def ask(self, probe: str, args, depth: bool = False):
        if self.broken is not None:
            raise self.broken
        request_id = secrets.token_hex(12)
        message = {"id": request_id, "session": self.session, "probe": probe, "args": wire.to_wire(args), "depth": depth}
        try:
            wire.write_frame(self.requests, message)
        except OSError:
            self.broken = ChildGone("did not finish: the process died (sys.exit/os._exit/crash?)", False)
            raise self.broken from None
        frame = self._read()
        if frame.get("id") != request_id:
            self.broken = ProtocolError("the answer channel carried an answer for a request the grader never made")
            raise self.broken
        if "error" in frame:
            if not set(frame) <= {"id", "error", "where", "mro"}:
                self.broken = ProtocolError("a malformed error answer")
                raise self.broken
            error, where, mro = frame["error"], frame.get("where"), frame.get("mro") or []
            if type(error) is not str or not (where is None or type(where) is str) or not all(type(m) is str for m in mro):
                self.broken = ProtocolError("a malformed error answer")
                raise self.broken
            self.errors.append(LearnerError(error, where, tuple(mro)))
            raise self.errors[-1]
        if set(frame) != ({"id", "ok", "depth"} if depth else {"id", "ok"}):
            self.broken = ProtocolError("a malformed answer")
            raise self.broken
        try:
            value = wire.from_wire(frame["ok"])
        except wire.WireError as err:
            self.broken = ProtocolError(f"an answer that is not plain data: {err}")
            raise self.broken from None
        if depth:
            if type(frame["depth"]) is not int:
                self.broken = ProtocolError("a malformed stack depth")
                raise self.broken
            return value, frame["depth"]
        return value

    def bye(self) -> None:
        """End the conversation; any frame other than the child's goodbye is a forged one."""
        if self.broken is not None:
            return
        try:
            wire.write_frame(self.requests, {"bye": "bye"})
            frame = wire.read_frame(self.answers, time.monotonic() + max(0.0, min(self.budget, 5.0)))
        except (OSError, EOFError, TimeoutError, wire.WireError):
            return
        if frame != {"bye": "bye"}:
            self.broken = ProtocolError("the answer channel carried an answer for a request the grader never made")


def module_name(part: Part) -> str:
    """The dotted name of the library module ``part`` is carved from (``minigrad.tensor.grad_rules``)."""
    relative = part.source.resolve().relative_to(PACKAGE_DIR).with_suffix("")
    return ".".join((PACKAGE_DIR.name, *relative.parts))


def _check_module(part: Part) -> ModuleType:
    return importlib.import_module(f"minigrad.grading.checks.{part.checks.stem}")


def _child_config(part: Part, file: Path, requests: int, answers: int, nonce: str, scratch: str) -> dict:
    repo = PACKAGE_DIR.parent if (PACKAGE_DIR.parent / "solutions").is_dir() else None
    files, dirs = guard.protected_paths([p.source for p in parts()], part.source, repo)
    if file.resolve() == part.source.resolve():  # grading the reference itself
        files = [f for f in files if Path(f).resolve() != file.resolve()]
    return {
        "requests_fd": requests, "answers_fd": answers, "submission": str(file), "module": module_name(part),
        "checks": f"minigrad.grading.checks.{part.checks.stem}", "nonce": nonce,
        "protected_files": [str(f) for f in files], "protected_dirs": [str(d) for d in dirs],
        "scratch_dir": scratch,  # the child's working folder, the only place it may change files
    }


def _failure(check, err: BaseException) -> str:
    """One failing check: its name and what went wrong (continuation lines indented)."""
    if isinstance(err, (ChildGone, ProtocolError, LoadError, AssertionError, LearnerError)):
        message = str(err) or "assertion failed"
    else:
        message = f"{type(err).__name__}: {err}"
    if len(message) > 2000:
        message = message[:2000] + " ..."
    return f"{check.__name__}: " + "\n    ".join(message.strip().splitlines())


def _hit_stub(exercise_id: str, err: BaseException, raised: list[LearnerError]) -> bool:
    """Did this check fail on the learner's untouched stub of exercise ``exercise_id``?"""
    mark = re.compile(rf"NotImplementedError\b[^\n]{{0,80}}?Exercise {re.escape(exercise_id)}:")  # also as the simulator words it
    return any(mark.search(text) for text in [str(err), *(e.message for e in raised if e.is_a("NotImplementedError"))])


def _shown(file: Path) -> str:
    """``file`` as the learner would type it: relative to the current folder when it is inside it."""
    try:
        return str(file.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(file)


def not_started_line(part: Part, exercise: Exercise, file: Path, failures: list[str]) -> str:
    """The one line for an untouched exercise: the file to open (at the first stub hit) and the hint, once."""
    from minigrad.grading.carve import find_regions

    regions = [r for r in find_regions(part.source.read_text().splitlines()) if r.exercise == exercise.id]
    hint = next((r.hint for r in regions if any(r.hint in f for f in failures)), regions[0].hint if regions else "")
    line = next((m.group(1) for f in failures for m in [re.search(rf"\(({re.escape(file.name)}:\d+)\)", f)] if m), None)
    where = f"{_shown(file).removesuffix(file.name)}{line}" if line else _shown(file)
    return f"open {where} (hint: {hint})"


def replay_line(exercise: Exercise, seed: int) -> str:
    return f"replay: minigrad grade {exercise.id} --seed {seed}"


def grade_exercise(part: Part, exercise: Exercise, file: Path, timeout: float, memory_mb: int, seed: int | None = None) -> ExerciseResult:
    """Run the exercise's checks here, with the submission answering probes in a sandboxed child."""
    checks = checks_in(_check_module(part), exercise.id)
    if not checks:
        raise RuntimeError(f"exercise {exercise.id} has no checks in {part.checks.name}")
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    source = file.read_text(errors="replace")
    nonce = secrets.token_hex(12)
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    messages: list[str] = []
    failed_required: list[str] = []
    passed = 0
    load_message = None
    stubbed = 0  # checks that failed on this exercise's untouched stub
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIGRAD_RESULTS", "PYTEST_", "PYTHONBREAKPOINT"))}
        config = _child_config(part, file, requests_r, answers_w, nonce, tmp)
        command = [sys.executable, "-m", "minigrad.grading.child", json.dumps(config)]
        box = sandbox.start(command, timeout=timeout, memory_mb=memory_mb, env=env, cwd=tmp,
                            log_path=Path(tmp) / "log.txt", pass_fds=(requests_r, answers_w))
        os.close(requests_r)
        os.close(answers_w)
        channel = _Channel(requests_w, answers_r, box.start + timeout, timeout)
        try:
            load_error = None
            try:
                hello = channel.hello(nonce)
                if "error" in hello:
                    load_error = LoadError(f"could not load your file: {hello['error']}", hello.get("where"))
                    load_message = str(hello["error"])[:300] + (f" ({hello['where']})" if hello.get("where") else "")
            except (ChildGone, ProtocolError):
                pass
            learner = Learner(channel.ask, source, file)
            for check in checks:
                channel.next_session()
                try:
                    if load_error is not None:
                        raise load_error
                    if channel.broken is not None:
                        raise channel.broken
                    check(learner, random.Random(check_seed(seed, check.__name__)))
                    passed += 1
                except Exception as err:  # any failure of a check costs that check
                    messages.append(_failure(check, err))
                    stubbed += _hit_stub(exercise.id, err, channel.errors)
                    if getattr(check, "_required", False):
                        failed_required.append(check.__name__)
            channel.bye()
            if channel.broken is not None and passed:
                messages.append(str(channel.broken))
                passed = 0
        finally:
            os.close(requests_w)
            os.close(answers_r)
            output = box.finish()
        timed_out = isinstance(channel.broken, ChildGone) and channel.broken.timed_out
    if timed_out:
        status = "timeout"
    elif passed == len(checks):
        status = "passed"
    else:
        status = "partial" if passed else "failed"
    score = round(exercise.points * passed / len(checks), 2)
    if status == "failed" and stubbed == len(checks):
        line = not_started_line(part, exercise, file, messages)
        return ExerciseResult(exercise, 0.0, "not started", f"not started: {line}", 0, len(checks), seed, line)
    notes = []
    if failed_required:
        score = 0.0
        status = "failed"
        notes.append(f"{', '.join(failed_required)} must pass for this exercise to score")
    if status == "passed":
        return ExerciseResult(exercise, score, status, "", passed, len(checks), seed)
    printed = ["your code printed:\n" + _tail(output, 8)] if output.strip() else []
    replay = replay_line(exercise, seed)
    text = "\n".join([*notes, *messages, *printed, replay])
    return ExerciseResult(exercise, score, status, text, passed, len(checks), seed, _summary(notes, messages, replay), load_message)


def _summary(notes: list[str], failures: list[str], replay: str, first_lines: int = 8) -> str:
    """The table's view of a failing exercise: the first failure in full, the others by name, the replay line."""
    lines = [*notes, *(failures[0].splitlines()[:first_lines] if failures else [])]
    if len(failures) > 1:
        lines.append(f"also failing: {', '.join(f.split(':', 1)[0] for f in failures[1:])}")
    return "\n".join([*lines, replay])


def grade_part(
    part: Part,
    file: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    seed: int | None = None,
    strict: bool = True,
) -> PartResult:
    """Grade one exercise file (default: the workspace's copy, ``exercises/NN_*.py`` in it).

    A file that looks like another chapter's raises ValueError if ``strict``, else scores 0 saying so.
    """
    check_limits(timeout, memory_mb)
    path = Path(file).resolve() if file else find_exercise_file(part)
    if path.is_dir():
        raise ValueError(f"--file {file}: is a folder; pass the exercise file itself (e.g. --file {Path(file) / part.file}) or use --dir {file}")
    if not path.is_file():
        raise FileNotFoundError(f"grade {part.chapter}: no such file {path}")
    result = PartResult(part, path)
    try:
        check_file_matches(part, path)
    except ValueError as err:
        if strict:
            raise
        result.exercises = [ExerciseResult(e, 0.0, "failed", str(err), 0, 0, seed) for e in part.exercises]
        return result
    for exercise in part.exercises:
        result.exercises.append(grade_exercise(part, exercise, path, timeout, memory_mb, seed))
    return result


def check_limits(timeout: float, memory_mb: int) -> None:
    """Raise ValueError naming the option, the value and a fix for limits the grader cannot run under."""
    if not (isinstance(timeout, (int, float)) and timeout > 0 and timeout == timeout and timeout != float("inf")):
        raise ValueError(f"--timeout {timeout}: must be a positive number of seconds per exercise (default {DEFAULT_TIMEOUT:g}), e.g. --timeout 60")
    if not isinstance(memory_mb, int) or memory_mb < MIN_MEMORY_MB:
        raise ValueError(
            f"--memory-mb {memory_mb}: below the minimum of {MIN_MEMORY_MB} MB the grader needs to start Python with NumPy "
            f"(default {DEFAULT_MEMORY_MB}); e.g. --memory-mb {DEFAULT_MEMORY_MB}"
        )


def resolve_files(which: str, file: str | Path | None, folder: str | Path | None, reference: bool) -> list[tuple[Part, Path | None]]:
    """The exercise files to grade, each with the file to grade (None: the workspace's copy)."""
    if which == "all":
        selected = [p for c in chapters().values() for p in c.parts]
    elif "." in which:  # an exercise id: the file that holds it
        selected = [part_of(which)]
    else:
        selected = list(chapter(which).parts)
    if file is not None and len(selected) > 1:
        by_name = [p for p in selected if p.file == Path(file).name]
        if len(by_name) != 1:
            names = ", ".join(p.file for p in selected)
            raise ValueError(
                f"grade {which}: this grades {len(selected)} files ({names}); name your file like one of them, "
                f"grade one exercise's file (e.g. `minigrad grade {selected[-1].exercises[0].id} --file ...`), "
                f"or use --dir for a folder of exercise files"
            )
        selected = by_name
    files: list[tuple[Part, Path | None]] = []
    for p in selected:
        if reference:
            files.append((p, p.source))
        elif file is not None:
            files.append((p, Path(file)))
        elif folder is not None:
            files.append((p, Path(folder) / p.file))
        else:
            files.append((p, None))
    return files
