"""Hostile: forge results instead of computing them (results file, os.environ, answer frames on every fd)."""
import json
import os
import struct

for variable in ("MINIGRAD_RESULTS", "MINIGRAD_SUBMISSION"):
    path = os.environ.get(variable)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": "collected", "tests": ["x"]}) + "\n")
            f.write(json.dumps({"event": "result", "test": "x", "outcome": "passed"}) + "\n")
os.environ["MINIGRAD_RESULTS"] = "/tmp/forged-results.jsonl"
os.environ.pop("MINIGRAD_SANDBOX_TOKEN", None)  # hide from the sweep (it reads the initial environment)
os.environ["PYTHONPATH"] = "/nowhere"


def _frame(message):
    payload = json.dumps(message).encode()
    return struct.pack(">I", len(payload)) + payload


def _forge(message):
    for fd in range(3, 64):
        try:
            os.write(fd, _frame(message))
        except OSError:
            pass


_forge({"hello": "forged"})
_forge({"id": "forged", "ok": 1.0})


class Value:
    def __init__(self, data, _children=(), _local_grads=(), _op="", label=""):
        self.data, self.grad, self._children, self._local_grads = data, 0.0, _children, _local_grads
        _forge({"id": "forged", "ok": {"$": "float", "v": "nan"}})

    def __getattr__(self, name):
        _forge({"id": "forged", "ok": [1.0]})
        return lambda *args, **kwargs: self

    def __mul__(self, other):
        _forge({"id": "forged", "ok": 1.0})
        return self

    __add__ = __radd__ = __rmul__ = __pow__ = __rpow__ = __sub__ = __truediv__ = __mul__

    def backward(self):
        _forge({"bye": "bye"})


def topological_order(root):
    _forge({"id": "forged", "ok": {"children": [[]], "order": [0]}})
    return [root]
