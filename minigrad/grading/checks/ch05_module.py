"""Graded checks for chapter 05, exercise 5.1: registering parameters and children in ``Module`` (``exercises/05_module.py``).

In the sandboxed child the learner's file *is* ``minigrad.nn.module``, so every
layer of the library (``Linear``, ``Sequential``...) registers through the
learner's ``__setattr__`` and is walked by the learner's ``named_modules``,
``named_parameters`` and ``state_dict``. Each check draws a fresh random tree
of modules here (parameters, buffers, plain attributes, a parameter and a
module shared by two parents, names assigned twice), has the child build it
and report what its methods see (names, and which of the tree's objects each
entry is), and builds the same tree here with the library's ``Module`` to
compare. The tree comes with every failure as the assignments that made it.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.probing import exercise, probe

NAMES = ["weight", "bias", "scale", "gain", "proj", "head", "embed", "norm", "block", "shift", "gate", "core",
         "encoder", "decoder", "mlp", "attn", "query", "key", "value", "out", "temperature", "offset"]


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


# ----------------------------------------------------------------------------- the random tree (grader side)


def random_tree(gen, reassign: bool = True) -> dict:
    """A module tree as plain data: ``nodes[i]`` lists node i's assignments ``[name, kind, payload]`` in order.

    Kinds: "param" (index into params), "child" (index of a later node),
    "buffer" ([index into buffers, persistent]), "plain" (an int), "none".
    Node 0 is the root; every other node hangs under an earlier one.
    """
    n = int(gen.integers(3, 7))
    params: list[np.ndarray] = []
    buffers: list[np.ndarray] = []
    items: list[list] = [[] for _ in range(n)]

    def new_param() -> int:
        params.append(gen.standard_normal(tuple(int(s) for s in gen.integers(1, 4, size=int(gen.integers(1, 3))))))
        return len(params) - 1

    for j in range(1, n):
        items[int(gen.integers(0, j))].append(["child", j])
    for node in items:
        node += [["param", new_param()] for _ in range(int(gen.integers(1, 4)))]
        if gen.random() < 0.5:
            buffers.append(gen.standard_normal(int(gen.integers(1, 4))))
            node.append(["buffer", [len(buffers) - 1, bool(gen.random() < 0.7)]])
        if gen.random() < 0.5:
            node.append(["plain", int(gen.integers(1000))])
        gen.shuffle(node)
    # a parameter and a module shared by two parents: listed once, under the first path
    k, i = int(gen.integers(len(params))), int(gen.integers(n))
    items[i].append(["param", k])
    j = int(gen.integers(2, n))
    items[int(gen.integers(0, j))].append(["child", j])

    nodes = []
    for node in items:
        names = [str(s) for s in gen.permutation(NAMES)[: len(node)]]
        nodes.append([[name, kind, payload] for name, (kind, payload) in zip(names, node)])
    if reassign:  # the same name assigned again, as another kind or the same kind
        node = nodes[int(gen.integers(n))]
        free = [name for name in NAMES if name not in {a[0] for a in node}]
        node += [[free[0], "plain", 7], [free[0], "param", new_param()]]  # a plain attribute becomes a parameter
        node += [[free[1], "param", new_param()], [free[1], "none", None]]  # a parameter becomes a None placeholder
        node += [[free[2], "param", new_param()], [free[2], "param", new_param()]]  # a parameter replaced by another
        i = int(gen.integers(n - 1))
        free = [name for name in NAMES if name not in {a[0] for a in nodes[i]}]
        nodes[i] += [[free[0], "param", new_param()], [free[0], "child", int(gen.integers(i + 1, n))]]  # then a module
    return {"params": params, "buffers": buffers, "nodes": nodes}


def describe(spec: dict) -> str:
    """The tree as the assignments that build it, on one line (for failure messages)."""
    lines = []
    for i, node in enumerate(spec["nodes"]):
        who = "root" if i == 0 else f"node{i}"
        for name, kind, payload in node:
            if kind == "param":
                shape = "x".join(str(s) for s in np.shape(spec["params"][payload])) or "scalar"
                lines.append(f"{who}.{name} = p{payload} ({shape})")
            elif kind == "child":
                lines.append(f"{who}.{name} = node{payload}")
            elif kind == "buffer":
                lines.append(f"{who}.register_buffer({name!r}, b{payload[0]}, persistent={payload[1]})")
            else:
                lines.append(f"{who}.{name} = {payload!r}")
    return "; ".join(lines)


# ----------------------------------------------------------------------------- building and reading it (both sides)


def build_tree(spec: dict):
    """The tree of ``spec`` built with whatever ``minigrad.nn.module`` is (the learner's in the child)."""
    import minigrad.tensor as mt
    from minigrad.nn.module import Module
    from minigrad.nn.parameter import Parameter

    class Node(Module):
        def forward(self, x):
            return x

    params = [Parameter(mt.tensor(np.asarray(a, dtype=np.float64))) for a in spec["params"]]
    buffers = [mt.tensor(np.asarray(a, dtype=np.float64)) for a in spec["buffers"]]
    nodes = [Node() for _ in spec["nodes"]]
    for node, assignments in zip(nodes, spec["nodes"]):
        for name, kind, payload in assignments:
            if kind == "param":
                setattr(node, name, params[payload])
            elif kind == "child":
                setattr(node, name, nodes[payload])
            elif kind == "buffer":
                node.register_buffer(name, buffers[payload[0]], persistent=payload[1])
            else:
                setattr(node, name, payload)
    return nodes, params, buffers


def _identify(x, nodes, params, buffers):
    """Which object of the tree ``x`` is: ["param", k], ["buffer", k], ["node", i], or a description."""
    for kind, pool in (("param", params), ("buffer", buffers), ("node", nodes)):
        for k, item in enumerate(pool):
            if x is item:
                return [kind, k]
    if x is None:
        return None
    if type(x) is int:
        return ["int", x]
    return ["other", type(x).__name__]


def _values(t):
    from minigrad.tensor import Tensor

    return np.array(t.detach().numpy()) if isinstance(t, Tensor) else None


def inspect_tree(spec: dict) -> dict:
    """What the tree's methods report, as plain data (the same code runs on the learner's and the library's Module)."""
    from minigrad.nn.parameter import Parameter

    nodes, params, buffers = build_tree(spec)
    root = nodes[0]

    def who(x):
        return _identify(x, nodes, params, buffers)

    attributes = []
    for i, assignments in enumerate(spec["nodes"]):
        for name in dict.fromkeys(a[0] for a in assignments):
            try:
                attributes.append([f"node{i}.{name}", who(getattr(nodes[i], name))])
            except AttributeError:
                attributes.append([f"node{i}.{name}", ["missing"]])
    state = root.state_dict()
    return {
        "named_parameters": [[name, who(p)] for name, p in root.named_parameters()],
        "parameters": [who(p) for p in root.parameters()],
        "own_parameters": [[name, who(p)] for name, p in root.named_parameters(recurse=False)],
        "prefixed": [name for name, _ in root.named_parameters(prefix="model")],
        "named_buffers": [[name, who(b)] for name, b in root.named_buffers()],
        "named_modules": [[name, who(m)] for name, m in root.named_modules()],
        "attributes": attributes,
        "state_dict_keys": list(state),
        "state_dict_values": [_values(v) for v in state.values()],
        "state_dict_detached": [not isinstance(v, Parameter) and not getattr(v, "requires_grad", True) for v in state.values()],
        "state_dict_keep_vars": [[key, who(v)] for key, v in root.state_dict(keep_vars=True).items()],
    }


def library_model_steps(seed: int, sizes, x, target, lr: float) -> dict:
    """An MLP of library layers: its parameter names, state_dict keys, and its parameters after one SGD step."""
    import minigrad.nn as nn
    import minigrad.nn.functional as F
    import minigrad.tensor as mt
    from minigrad import optim

    a, b, c = sizes
    model = nn.Sequential(
        nn.Linear(a, b, dtype=mt.float64, generator=seed), nn.ReLU(),
        nn.Linear(b, c, bias=False, dtype=mt.float64, generator=seed + 1),
    )
    names = [[name, list(p.shape)] for name, p in model.named_parameters()]
    opt = optim.SGD(model.parameters(), lr=lr)
    F.cross_entropy(model(mt.tensor(x)), mt.tensor(target)).backward()
    opt.step()
    return {
        "named_parameters": names,
        "state_dict_keys": list(model.state_dict()),
        "after_step": [_values(p) for p in model.parameters()],
    }


@probe
def tree(submission, state, spec):
    return inspect_tree(spec)


@probe
def library_model(submission, state, seed, sizes, x, target, lr):
    return library_model_steps(seed, sizes, x, target, lr)


@probe
def refusals(submission, state, values):
    """Assigning a plain tensor to a parameter's name, and assigning before ``super().__init__()``: what is raised."""
    import minigrad.tensor as mt
    from minigrad.nn.module import Module
    from minigrad.nn.parameter import Parameter

    class Early(Module):
        def __init__(self):
            self.weight = Parameter(mt.tensor(values))  # before super().__init__()
            super().__init__()

    raised = {}
    node = Module()
    node.weight = Parameter(mt.tensor(values))
    for what, action in (("tensor_to_parameter", lambda: setattr(node, "weight", mt.tensor(values))), ("early", Early)):
        try:
            action()
            raised[what] = None
        except Exception as exc:  # noqa: BLE001 - which exception the learner's code raised is the answer
            raised[what] = [type(exc).__name__, str(exc)]
    return raised


# ----------------------------------------------------------------------------- comparisons (grader side)


def _same(got, expected) -> bool:
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        return (isinstance(got, np.ndarray) and isinstance(expected, np.ndarray) and got.shape == expected.shape
                and np.allclose(got, expected, rtol=1e-12, atol=1e-12))
    if isinstance(expected, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(expected) and all(map(_same, got, expected))
    return got == expected


def _compare(answer: dict, expected: dict, fields, spec) -> None:
    for field in fields:
        got, want = answer.get(field), expected[field]
        if not _same(got, want):
            raise AssertionError(
                f"{field} of a random module tree differs from the library's:\n  got      {_short(got)}\n"
                f"  expected {_short(want)}\n  the tree (p: Parameters, b: buffers): {describe(spec)}"
            )


def _short(x):
    if isinstance(x, list) and any(isinstance(v, np.ndarray) for v in x):
        return [None if v is None else f"array{tuple(np.shape(v))}" for v in x]
    return x


@exercise("5.1")
def test_parameters_are_found_in_registration_order_with_dotted_names(learner, rng):
    gen = _np(rng)
    for reassign in (False, True, True):
        spec = random_tree(gen, reassign=reassign)
        answer = learner.probe("tree", spec)
        _compare(answer, inspect_tree(spec), ["own_parameters", "named_parameters", "parameters", "prefixed"], spec)


@exercise("5.1")
def test_assignments_sort_values_into_the_right_store(learner, rng):
    """Each name reads back what was assigned last, and a reassigned name leaves its old store."""
    gen = _np(rng)
    for _ in range(3):
        spec = random_tree(gen)
        answer = learner.probe("tree", spec)
        _compare(answer, inspect_tree(spec), ["attributes", "named_buffers", "named_parameters"], spec)


@exercise("5.1")
def test_named_modules_lists_every_module_once(learner, rng):
    gen = _np(rng)
    for _ in range(3):
        spec = random_tree(gen)
        answer = learner.probe("tree", spec)
        _compare(answer, inspect_tree(spec), ["named_modules"], spec)


@exercise("5.1")
def test_state_dict_holds_every_parameter_and_persistent_buffer(learner, rng):
    gen = _np(rng)
    for _ in range(3):
        spec = random_tree(gen)
        answer = learner.probe("tree", spec)
        _compare(answer, inspect_tree(spec),
                 ["state_dict_keys", "state_dict_values", "state_dict_detached", "state_dict_keep_vars"], spec)


@exercise("5.1")
def test_library_layers_register_and_train_through_your_module(learner, rng):
    """nn.Sequential of nn.Linear layers: the optimizer finds every parameter and one SGD step moves them."""
    gen = _np(rng)
    sizes = [int(s) for s in gen.integers(2, 6, size=3)]
    n = int(gen.integers(2, 6))
    x, target = gen.standard_normal((n, sizes[0])), gen.integers(0, sizes[2], size=n)
    seed, lr = int(gen.integers(2**31 - 2)), float(gen.uniform(0.1, 1.0))
    answer = learner.probe("library_model", seed, sizes, x, target, lr)
    expected = library_model_steps(seed, sizes, x, target, lr)
    for field in ("named_parameters", "state_dict_keys", "after_step"):
        if not _same(answer.get(field), expected[field]):
            raise AssertionError(
                f"Sequential(Linear({sizes[0]}, {sizes[1]}), ReLU(), Linear({sizes[1]}, {sizes[2]}, bias=False)): "
                f"{field} differs from the library's:\n  got      {_short(answer.get(field))}\n"
                f"  expected {_short(expected[field])}"
            )


@exercise("5.1")
def test_wrong_assignments_are_refused_with_a_clear_error(learner, rng):
    gen = _np(rng)
    answer = learner.probe("refusals", gen.standard_normal(3))
    got = answer["tensor_to_parameter"]
    assert got is not None and got[0] == "TypeError", (
        f"module.weight = tensor(...) where weight is a registered Parameter must raise the TypeError of "
        f"_set_registered (a plain tensor would silently stop being trained); got {got}"
    )
    got = answer["early"]
    assert got is not None and got[0] == "AttributeError" and "super().__init__()" in got[1], (
        f"assigning a Parameter before super().__init__() must raise the AttributeError of _check_initialised; got {got}"
    )
