"""The grading child: load the submission as the graded library module, then answer probe requests.

Run by the grader as ``python -m minigrad.grading.child CONFIG_JSON`` inside
the sandbox. Requests arrive one at a time on an inherited pipe, answers go
back on another (see :mod:`minigrad.grading.wire`); the learner's prints go to
the log. Order of events:

1. read the submission file, put it in place of the graded library module
   (:func:`guard.install_finder`), import the check module to find its probes
   and run its ``prepare_child()`` if it has one (e.g. load the compiler
   libraries a probe needs, which the audit hook would refuse to load later);
2. install the audit hook, seal (forget the grading modules), load the submission;
3. say hello (with the load error, if any), then answer each request:
   ``{"id", "ok"}`` with the answer, or ``{"id", "error", "where", "mro"}``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

from minigrad.grading import guard, wire
from minigrad.grading.probing import probes_in


def _where(exc: BaseException, path: str) -> str | None:
    """``file.py:LINE`` of the deepest frame in the learner's file, else of the deepest frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if frame.filename == path:
            return f"{os.path.basename(path)}:{frame.lineno}"
    if isinstance(exc, SyntaxError) and exc.filename == path:
        return f"{os.path.basename(path)}:{exc.lineno}"
    return None


def _error(exc: BaseException, path: str) -> dict:
    message = str(exc)
    if isinstance(exc, SyntaxError):
        message = exc.msg
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    mro = [c.__name__ for c in type(exc).__mro__]
    return {"error": text[:2000], "where": _where(exc, path), "mro": mro}


def _resolve(module, qualname: str):
    target = module
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def call(submission, state, qualname, args, kwargs):
    """The generic probe: ``qualname(*args, **kwargs)`` from the learner's module."""
    return _resolve(submission, qualname)(*args, **kwargs)


def call_each(submission, state, qualname, arg_lists):
    """The generic probe over many inputs: ``[qualname(*args) for args in arg_lists]`` in one request."""
    fn = _resolve(submission, qualname)
    return [fn(*args) for args in arg_lists]


def _measure_depth(the_guard: guard.Guard, fn, *args):
    """(fn(*args), the deepest Python call stack reached, relative to the call)."""
    depth = [0, 0]

    def profile(frame, event, arg):
        if event == "call":
            depth[0] += 1
            if depth[0] > depth[1]:
                depth[1] = depth[0]
        elif event == "return":
            depth[0] -= 1

    with the_guard.harness():
        sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        with the_guard.harness():
            sys.setprofile(None)
    return result, depth[1]


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    requests, answers = config["requests_fd"], config["answers_fd"]
    path = config["submission"]
    with open(path, "rb") as f:
        source = f.read()
    guard.install_finder(config["module"], path, source)
    checks = importlib.import_module(config["checks"])
    if config["module"] in sys.modules:  # the submission must not run before the audit hook is in place
        raise RuntimeError(f"{config['checks']} imports {config['module']} at module level: import it inside functions")
    probes = probes_in(checks)
    probes["call"], probes["call_each"] = call, call_each
    prepare = getattr(checks, "prepare_child", None)
    if callable(prepare):
        prepare()
    the_guard = guard.Guard(config["protected_files"], config["protected_dirs"], (requests, answers), config.get("scratch_dir"))
    sys.addaudithook(the_guard)
    write_frame, read_frame, to_wire, WireError = wire.write_frame, wire.read_frame, wire.to_wire, wire.WireError
    guard.seal(the_guard)
    del checks

    submission, hello = None, {"hello": config["nonce"]}
    try:
        submission = importlib.import_module(config["module"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: they are the submission's
        hello.update(_error(exc, path))
    write_frame(answers, hello)

    state: dict = {}
    session = None
    while True:
        try:
            request = read_frame(requests)
        except EOFError:
            return 0
        if "bye" in request:
            write_frame(answers, {"bye": request["bye"]})
            return 0
        if request["session"] != session:
            session, state = request["session"], {}
        answer = {"id": request["id"]}
        try:
            if submission is None:
                raise RuntimeError("the submission could not be loaded")
            fn = probes[request["probe"]]
            args = wire.from_wire(request["args"])
            if request["probe"] == "call":
                args = list(args)
            if request.get("depth"):
                value, depth = _measure_depth(the_guard, fn, submission, state, *args)
                answer["ok"], answer["depth"] = to_wire(value), depth
            else:
                answer["ok"] = to_wire(fn(submission, state, *args))
        except WireError as exc:
            answer = {"id": request["id"], "error": f"your code returned {exc}", "where": None, "mro": ["WireError"]}
        except BaseException as exc:
            answer = {"id": request["id"], **_error(exc, path)}
        try:
            write_frame(answers, answer)
        except (TypeError, ValueError) as exc:  # e.g. a str that cannot be encoded
            write_frame(answers, {"id": request["id"], "error": f"an answer that cannot be sent: {exc}", "where": None, "mro": []})


if __name__ == "__main__":
    sys.exit(main(sys.argv))
