"""Everything an op keeps for backward goes through ``save_for_backward``.

Saved-tensor hooks (checkpointing, offloading) and the memory stage see what
a node keeps only there. The invariant, over the whole catalogue: right after
``apply``, no array (anything with ``nbytes``, or a tensor) is reachable from
a node's attributes outside ``_saved`` (directly or inside a tuple, list or
dict). Every ``Function`` subclass of minigrad is run on small inputs that
require grad; the test fails for a new op it does not run.
"""

import importlib
import pkgutil

import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.checkpoint.reentrant import checkpoint_reentrant
from minigrad.nn.functional.conv import Conv2dFunction
from minigrad.nn.functional.pooling import MaxPool2dFunction
from minigrad.tensor import events
from minigrad.tensor.function import Function

ABSTRACT = {"_Broadcasting", "_Indexing"}  # bases of ops, never applied themselves


def _holds_an_array(value) -> bool:
    if hasattr(value, "nbytes") or hasattr(value, "_data"):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_an_array(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_an_array(v) for v in value.values())
    return False


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _catalogue() -> set[str]:
    for info in pkgutil.walk_packages(minigrad.__path__, "minigrad."):
        if info.name.startswith(("minigrad.gpu", "minigrad.viz", "minigrad.grading", "minigrad.testing")):
            continue  # device glue (needs CuPy), and nothing of these defines ops
        importlib.import_module(info.name)
    return {c.__name__ for c in _subclasses(Function) if c.__module__.startswith("minigrad.")
            and not c.__module__.startswith("minigrad.gpu")} - ABSTRACT


def _run_every_op(twin):
    r = lambda *shape: mt.randn(*shape, requires_grad=True)  # noqa: E731
    x, y = r(2, 3), r(2, 3)
    ops = [
        lambda: x + y, lambda: x - y, lambda: x * y, lambda: x / (y.abs() + 1), lambda: -x, lambda: x.exp(),
        lambda: x.abs().log(), lambda: x.abs().sqrt(), lambda: x.tanh(), lambda: x.sigmoid(), lambda: x.relu(),
        lambda: mt.leaky_relu(x), lambda: mt.gelu(x), lambda: x.clamp(-0.5, 0.5), lambda: mt.maximum(x, y),
        lambda: mt.minimum(x, y), lambda: x.abs() ** 2.5, lambda: mt.where(x > 0, x, y), lambda: x[0],
        lambda: x[:, mt.tensor([0, 2])], lambda: x[[1, 0]], lambda: x[x > 0], lambda: mt.cat([x, y]),
        lambda: mt.stack([x, y]), lambda: x.log_softmax(-1), lambda: x @ y.T, lambda: x.logsumexp(-1),
        lambda: mt.pad(x, (1, 1)), lambda: x.softmax(-1), lambda: x.amax(-1), lambda: x.amin(0), lambda: x.mean(),
        lambda: x.sum(0), lambda: x.var(), lambda: x.std(0), lambda: x.norm(), lambda: x.norm(1, dim=0), lambda: x.norm(float("inf")), lambda: x.norm(3.0), lambda: x.T.contiguous(), lambda: x[:1].expand(3, 3),
        lambda: x.permute(1, 0), lambda: x.reshape(3, 2), lambda: x.view(6), lambda: x.unsqueeze(0).squeeze(0),
        lambda: x.double(), lambda: x.clone(), lambda: mt.split(x, 1)[0], lambda: mt.chunk(x, 3, 1)[1],
        lambda: x.to(twin),
    ]
    for op in ops:
        op()
    z = x.clone()
    z[0] = y[1]
    z[mt.tensor([1])] = y[0]
    img = r(2, 1, 6, 6)
    F.conv2d(img, r(2, 1, 3, 3), r(2), padding=1)
    Conv2dFunction.apply(img, r(2, 1, 3, 3), r(2), (1, 1), (1, 1), (1, 1))
    F.max_pool2d(img, 2)
    MaxPool2dFunction.apply(img, (2, 2), (2, 2), (0, 0), (3, 3))
    F.avg_pool2d(img, 3, 1, 1)
    F.avg_pool2d(img, 3, 1, 1, count_include_pad=False)
    targets = mt.tensor([0, 2])
    F.cross_entropy(x, targets)
    F.cross_entropy(x, targets, label_smoothing=0.1)
    F.nll_loss(x.log_softmax(-1), targets)
    F.binary_cross_entropy_with_logits(x, mt.rand(2, 3))
    F.dropout(x, 0.5, training=True)
    F.linear(x, r(4, 3), r(4))
    nn.BatchNorm2d(1)(img)
    hooked = nn.Linear(3, 2)
    hooked.register_full_backward_hook(lambda m, gi, go: None)
    hooked(x)
    checkpoint_reentrant(lambda a, s: a * s, x, 2.0)


@pytest.mark.host_only
def test_no_op_keeps_an_array_outside_save_for_backward(twin_device):
    offenders: dict[str, set[str]] = {}
    seen: set[str] = set()

    def on_op(cls, node, out, device):
        if node is not None:
            seen.add(cls.__name__)
            held = {name for name, value in vars(node).items() if name != "_saved" and _holds_an_array(value)}
            if held:
                offenders.setdefault(cls.__name__, set()).update(held)

    with events.listen("op_ran", on_op):
        _run_every_op(twin_device)
    assert not offenders, f"ops keeping arrays outside save_for_backward (attribute names): {offenders}"
    missing = sorted(_catalogue() - seen)
    assert not missing, f"add these ops to _run_every_op: {missing}"


def test_the_check_notices_an_array_on_ctx():
    class Sneaky(Function):
        def forward(ctx, a):
            ctx.copy = a * 2
            return a * 1.0

        def backward(ctx, grad):
            return grad

    held = []
    with events.listen("op_ran", lambda cls, node, out, device: held.append(
            [n for n, v in vars(node).items() if n != "_saved" and _holds_an_array(v)])):
        Sneaky.apply(mt.ones(2, requires_grad=True))
    assert held == [["copy"]]
    assert _holds_an_array((1, [np.ones(1)])) and not _holds_an_array((1, "a", slice(None)))
