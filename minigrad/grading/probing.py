"""What a check module is made of: checks (run by the grader) and probes (run next to the submission).

A *check* is a plain function ``check(learner, rng)`` marked with the exercise
it grades. It runs in the grader's own process, which never imports or runs
the submission: it chooses inputs with ``rng``, asks the submission for
answers through ``learner``, and asserts on them against the library's
reference or finite differences it computes itself::

    @exercise("3.1")
    def check_strides(learner, rng):
        shape = (rng.randint(1, 5), 3)
        assert learner.strides_for_shape(shape) == (3, 1)

``learner.NAME(*args)`` calls the submission's function ``NAME`` (``"Value.tanh"``
style dotted names via ``learner.call``) in the sandboxed child and returns the
result as plain data: numbers, str, tuples/lists/dicts, NumPy arrays. An
exception raised there comes back as :class:`LearnerError` naming the
learner's file and line.

A *probe* is a function ``probe(submission, state, *args)`` marked with
:func:`probe`, for answers that need more than one call (build a graph of the
learner's ``Value`` objects, run their backward, read the gradients). Probes
run in the child with the learner's module; ``state`` is a dict that lives
for one check, so a check may use several probes on the same objects. A
probe's return value is the submission's answer: the check must verify it,
never trust it.
"""

from __future__ import annotations

import functools
import hashlib


def exercise(exercise_id: str, required: bool = False):
    """Mark a check function as grading exercise ``exercise_id`` (e.g. ``"1.4"``).

    ``required``: if this check fails, the whole exercise scores 0 (e.g. "the sort must be iterative").
    """

    def mark(fn):
        fn._exercise = exercise_id
        fn._required = required
        return fn

    return mark


def probe(fn):
    """Mark ``fn(submission, state, *args)`` as a probe the child may run on request."""
    fn._probe = True
    return fn


def checks_in(module, exercise_id: str | None = None) -> list:
    """The check functions of a check module, in source order (only ``exercise_id``'s if given)."""
    found = [
        fn for fn in vars(module).values()
        if callable(fn) and getattr(fn, "_exercise", None) is not None and getattr(fn, "__module__", None) == module.__name__
    ]
    found.sort(key=lambda fn: fn.__code__.co_firstlineno)
    return [fn for fn in found if exercise_id is None or fn._exercise == exercise_id]


def probes_in(module) -> dict:
    return {name: fn for name, fn in vars(module).items() if callable(fn) and getattr(fn, "_probe", False)}


def check_seed(seed: int, check_name: str) -> int:
    """The seed of one check, derived from the run's seed (``--seed N`` replays a run)."""
    digest = hashlib.sha256(f"{seed}:{check_name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class LearnerError(Exception):
    """The submission raised while computing an answer; ``where`` is ``file.py:LINE`` of the learner's code."""

    def __init__(self, message: str, where: str | None = None, mro: tuple[str, ...] = ()):
        self.message = message
        self.where = where
        self.mro = tuple(mro)
        super().__init__(f"{message} ({where})" if where else message)

    def is_a(self, *names: str) -> bool:
        """Did the learner raise one of these exception types (by class name, subclasses included)?"""
        return any(name in self.mro for name in names)


class Learner:
    """The submission, seen from the grader: every attribute call runs in the sandboxed child."""

    def __init__(self, ask, source: str, path):
        self._ask = ask
        self.source = source
        self.path = path

    def call(self, qualname: str, *args, **kwargs):
        """``qualname(*args, **kwargs)`` in the learner's module (``"Value"``, ``"Neuron.parameters"``)."""
        return self._ask("call", (qualname, list(args), kwargs))

    def call_each(self, qualname: str, arg_lists) -> list:
        """``[qualname(*args) for args in arg_lists]`` in one round trip."""
        return self._ask("call_each", (qualname, [list(a) for a in arg_lists]))

    def defined_at(self, qualname: str) -> str:
        """``FILE:LINE`` of the learner's ``def`` of ``qualname`` (``"Value.backward"``), read from the source, never run."""
        import ast
        from pathlib import Path

        name = Path(str(self.path)).name
        try:
            body = ast.parse(self.source).body
        except (SyntaxError, ValueError):
            return name
        node = None
        for part in qualname.split("."):
            node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         and n.name == part), None)
            if node is None:
                return name
            body = node.body
        return f"{name}:{node.lineno}"

    def probe(self, name: str, *args, depth: bool = False):
        """Run the check module's probe ``name``; with ``depth=True`` returns ``(answer, max_stack_depth)``."""
        return self._ask(name, list(args), depth=depth)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self.call, name)


def sequence(x, what: str):
    """(child side) ``x`` if it is exactly a list or tuple; never trust a look-alike's ``__len__``/``__iter__``."""
    if type(x) not in (list, tuple):
        raise TypeError(f"{what} must be a list or tuple, got {type(x).__name__}")
    return x


def must_raise(learner_call, names: tuple[str, ...], what: str) -> LearnerError:
    """``learner_call()`` must raise one of the exception types ``names``; say what it returned otherwise."""
    try:
        result = learner_call()
    except LearnerError as err:
        if err.is_a(*names):
            return err
        raise AssertionError(f"{what} raised {err}; it must raise {' or '.join(names)}") from None
    raise AssertionError(f"{what} returned {result!r}; it must raise {' or '.join(names)}")
