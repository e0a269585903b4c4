"""Is a learner's function recursive? Read from its source (never run), in the grader's process.

Exercise 1.4 asks for an *iterative* topological sort. The child also
measures how deep the learner's call stack grows on a long chain, but that
measurement runs next to the submission; this static check cannot be switched
off by it. It finds a cycle in the call graph among the functions the file
defines (module level, methods and nested functions), starting from one
function: direct recursion (``visit`` calls ``visit``) and mutual recursion
(``a`` calls ``b`` calls ``a``). Calls are matched by name (``f(...)``,
``self.f(...)``, ``cls.f(...)``), which is what recursion looks like in
practice; a cycle through ``getattr``/``eval`` is left to the depth
measurement.
"""

from __future__ import annotations

import ast


def _functions(tree: ast.AST) -> dict[str, list[ast.AST]]:
    found: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            name = node.name if not isinstance(node, ast.Lambda) else None
            if name is not None:
                found.setdefault(name, []).append(node)
    return found


def _called_names(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
                names.add(f.attr)
    return names


def recursion_cycle(source: str, start: str) -> list[str] | None:
    """A call cycle reachable from function ``start`` (``["visit", "visit"]``), or None if there is none.

    Raises ``SyntaxError`` if ``source`` does not parse.
    """
    functions = _functions(ast.parse(source))
    calls = {name: set().union(*(_called_names(f) for f in defs)) & functions.keys() for name, defs in functions.items()}
    if start not in calls:
        return None
    path: list[str] = []
    on_path: set[str] = set()
    done: set[str] = set()

    def visit(name: str) -> list[str] | None:  # iterative would be longer; the call graph is small
        path.append(name)
        on_path.add(name)
        for callee in sorted(calls[name]):
            if callee in on_path:
                return path[path.index(callee):] + [callee]
            if callee not in done:
                cycle = visit(callee)
                if cycle:
                    return cycle
        on_path.discard(name)
        done.add(name)
        path.pop()
        return None

    return visit(start)


def require_iterative(source: str, function: str) -> None:
    """Raise ``AssertionError`` naming the cycle if ``function`` in ``source`` recurses."""
    try:
        cycle = recursion_cycle(source, function)
    except SyntaxError as err:
        raise AssertionError(f"your file does not parse: {err}") from None
    if cycle:
        chain = " -> ".join(cycle)
        raise AssertionError(
            f"{function} must be iterative, but it recurses ({chain}); use an explicit stack "
            f"(a list you push to and pop from) instead of calling itself"
        )
