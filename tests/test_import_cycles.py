"""No import cycle anywhere in minigrad, imports placed inside functions included.

A cycle makes import order load-bearing: no file of it can be read or
imported alone. The graph comes from grimp (what import-linter uses), which
records every ``import`` statement of a module, at module level or inside a
function; a package's ``__init__`` counts as a module of its own, so
``from minigrad.tensor import Tensor`` inside a file that ``minigrad/tensor/__init__.py``
imports is a cycle too.
"""

from __future__ import annotations

import sys
import textwrap

import grimp
import pytest


def cycles(graph, prefix: str) -> list[list[str]]:
    """The strongly connected components of more than one module among the modules named ``prefix...``."""
    modules = sorted(m for m in graph.modules if m == prefix or m.startswith(prefix + "."))
    inside = set(modules)
    edges = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    counter = 0
    for start in modules:  # Tarjan's algorithm, with an explicit stack instead of recursion
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe(graph, component: list[str]) -> str:
    members = set(component)
    lines = []
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer} line {detail['line_number']}: {detail['line_contents']}")
    return "\n".join(lines)


def test_minigrad_has_no_import_cycle():
    graph = grimp.build_graph("minigrad")
    found = cycles(graph, "minigrad")
    report = "\n\n".join(f"cycle of {len(c)} modules:\n{describe(graph, c)}" for c in found)
    assert not found, f"{len(found)} import cycle(s); make the imports point one way:\n{report}"


@pytest.fixture
def package_with_a_hidden_cycle(tmp_path, monkeypatch):
    """``pkg.a`` imports ``pkg.b`` at the top; ``pkg.b`` imports ``pkg.a`` inside a function."""
    root = tmp_path / "cyclepkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("from cyclepkg import b\n")
    (root / "b.py").write_text(textwrap.dedent("""\
        def late():
            from cyclepkg import a
            return a
    """))
    (root / "c.py").write_text("import cyclepkg.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "cyclepkg"
    for name in [m for m in sys.modules if m == "cyclepkg" or m.startswith("cyclepkg.")]:
        del sys.modules[name]


def test_the_check_finds_a_cycle_made_by_an_import_inside_a_function(package_with_a_hidden_cycle):
    graph = grimp.build_graph(package_with_a_hidden_cycle, cache_dir=None)
    found = cycles(graph, package_with_a_hidden_cycle)
    assert found == [["cyclepkg.a", "cyclepkg.b"]]
    assert "cyclepkg.b line 2: from cyclepkg import a" in describe(graph, found[0])
