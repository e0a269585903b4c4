"""The tensor core's reading path stays small: Tensor and Function hold the ideas, the rest lives beside them.

``tensor.py`` and ``function.py`` do not import op modules (the ops import
them); the Tensor's one-line operator methods come from ``tensor_methods.py``
without giving tensors a ``__dict__`` (a tensor stays a fixed set of slots).
"""

import ast
from pathlib import Path

import minigrad.tensor as mt
from minigrad.tensor.tensor import Tensor
from minigrad.tensor.tensor_methods import TensorMethods

CORE = Path(mt.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module named in an import statement of ``path``, at any depth (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_tensor_and_function_do_not_import_op_modules():
    for name in ("tensor.py", "function.py"):
        ops = sorted(m for m in imported_modules(CORE / name) if m.rsplit(".", 1)[-1].startswith("ops_"))
        assert not ops, f"{name} imports op modules {ops}; call them from tensor_methods.py or the ops instead"


def test_operator_methods_are_inherited_and_tensors_keep_slots_only():
    assert issubclass(Tensor, TensorMethods)
    for name in ("__add__", "__matmul__", "__eq__", "sum", "view", "add_", "to", "numpy"):
        assert name not in vars(Tensor) and name in vars(TensorMethods), name
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert not hasattr(x, "__dict__")
    assert {x: 1}[x] == 1  # hashable by identity although == is elementwise
    assert (x + x).tolist() == [[2.0, 4.0], [6.0, 8.0]] and (x == x).all().item()


def test_the_methods_reach_the_moved_ops():
    x = mt.arange(6.0).reshape(2, 3).requires_grad_(True)
    pieces = x.split(1, dim=1) + x.chunk(3, dim=1)
    y = mt.cat(pieces, dim=1).unsqueeze(0).flatten(1).squeeze(0)
    assert y.shape == (12,)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
