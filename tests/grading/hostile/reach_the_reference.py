"""Hostile: get the library's reference engine (the solutions) by import, open, importlib, inspect, linecache."""
import importlib
import importlib.util
import inspect
import linecache
import os
import sys

import minigrad

_package = os.path.dirname(minigrad.__file__)
_engine = os.path.join(_package, "scalar", "engine.py")
_solution = os.path.join(os.path.dirname(_package), "solutions", "01_scalar_autograd.py")
_found = None


def _try(get):
    global _found
    if _found is None:
        try:
            text = get()
            if text and "def topological_order" in text:
                _found = text
        except Exception:
            pass


_try(lambda: open(_engine).read())
_try(lambda: open(_solution).read())
_try(lambda: os.read(os.open(_engine, os.O_RDONLY), 10**6).decode())
_try(lambda: "".join(linecache.getlines(_engine)))
_try(lambda: importlib.util.spec_from_file_location("ref_engine", _engine).loader.get_data(_engine).decode())


def _by_inspect():
    spec = importlib.util.spec_from_file_location("ref_engine2", _engine)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return inspect.getsource(module)


_try(_by_inspect)


def _by_import():
    sys.meta_path[:] = [f for f in sys.meta_path if "Submission" not in type(f).__name__]
    sys.modules.pop("minigrad.scalar.engine", None)
    module = importlib.import_module("minigrad.scalar.engine")
    return inspect.getsource(module) if getattr(module, "Value", None) is not None else None


_try(_by_import)


def _by_cache():
    import marshal

    folder = os.path.join(_package, "scalar", "__pycache__")
    for name in os.listdir(folder):
        if name.startswith("engine."):
            with open(os.path.join(folder, name), "rb") as f:
                code = marshal.loads(f.read()[16:])
            namespace = {"__name__": "ref"}
            exec(code, namespace)
            return inspect.getsource(namespace["Value"]) + "\ndef topological_order(): pass"


_try(_by_cache)

if _found is not None:
    exec(compile(_found, "reference", "exec"), globals())
else:
    raise ImportError("the reference is out of reach")
