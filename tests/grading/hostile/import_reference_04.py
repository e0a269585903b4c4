"""Hostile (chapter 04): take the library's own rules instead of writing them."""
import importlib
import importlib.util
import os
import sys

try:
    from minigrad.tensor.grad_rules import (  # noqa: F401  (this file *is* grad_rules while graded)
        matmul_backward, mean_backward, sum_backward, unbroadcast,
    )
except ImportError:
    import minigrad

    path = os.path.join(os.path.dirname(minigrad.__file__), "tensor", "grad_rules.py")
    try:
        spec = importlib.util.spec_from_file_location("stolen_rules", path)
        stolen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(stolen)
    except Exception:
        sys.modules.pop("minigrad.tensor.grad_rules", None)
        sys.meta_path[:] = [f for f in sys.meta_path if "Submission" not in type(f).__name__]
        stolen = importlib.import_module("minigrad.tensor.grad_rules")
    globals().update({k: v for k, v in vars(stolen).items() if not k.startswith("__")})
