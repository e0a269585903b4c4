"""Selective checkpointing: the policy's ops keep their saved tensors, the rest are recomputed, gradients unchanged."""

import gc

import pytest

import minigrad.memory as mm
import minigrad.tensor as mt
from minigrad import nn
from minigrad.amp import autocast
from minigrad.checkpoint import CheckpointError, checkpoint, count_recomputes, save_expensive, selective_checkpoint_context
from minigrad.nn import functional as F
from minigrad.tensor import gradcheck


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.4), nn.Linear(16, 16), nn.BatchNorm1d(16),
                         nn.ReLU(), nn.Linear(16, 4))


def _grads(model, x, **kwargs):
    model.zero_grad()
    x.grad = None
    mt.manual_seed(9)
    y = checkpoint(model, x, **kwargs) if kwargs else model(x)
    (y ** 2).sum().backward()
    return [t.grad.numpy().copy() for t in (*model.parameters(), x)]


POLICIES = {
    "save_expensive": save_expensive,
    "save_all": lambda op: "save",
    "recompute_all": lambda op: "recompute",
    "save_activations": lambda op: "save" if op in ("gelu", "relu") else "recompute",
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_gradients_are_bitwise_those_of_the_plain_block(policy):
    model = _model()
    x = mt.randn(6, 8, requires_grad=True)
    plain = _grads(model, x)
    with count_recomputes() as recomputes:
        got = _grads(model, x, context_fn=selective_checkpoint_context(POLICIES[policy]))
    for a, b in zip(plain, got):
        assert a.tobytes() == b.tobytes()
    assert recomputes.count == (0 if policy == "save_all" else 1)  # nothing to recompute when all is kept


def test_under_autocast_too():
    model = _model()
    x = mt.randn(6, 8)

    def run(**kwargs):
        model.zero_grad()
        mt.manual_seed(9)
        with autocast("cpu", dtype=mt.bfloat16):
            y = checkpoint(model, x, **kwargs) if kwargs else model(x)
            loss = y.float().pow(2).sum()
        loss.backward()
        return [p.grad.numpy().copy() for p in model.parameters()]

    for a, b in zip(run(), run(context_fn=selective_checkpoint_context())):
        assert a.tobytes() == b.tobytes()


def _kept_after_forward(model, x, **kwargs):
    """Bytes alive after the forward besides the parameters and the output: what the graph keeps for backward.

    (Read as a total: the tracker files the tensors kept through saved-tensor hooks under other categories.)
    """
    model.zero_grad()
    gc.collect()  # the previous run's graph and gradients
    with mm.track() as mem:
        y = checkpoint(model, x, **kwargs)
        kept = mem.current - sum(p.nbytes for p in model.parameters()) - y.nbytes
        y.sum().backward()
    return kept


def test_save_expensive_keeps_what_linear_saved_and_drops_the_rest():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.GELU(), nn.Dropout(0.5), nn.Linear(32, 32), nn.GELU())
    x = mt.randn(16, 32)
    layer = 16 * 32 * 4
    everything = _kept_after_forward(model, x, context_fn=selective_checkpoint_context(lambda op: "save"))
    selective = _kept_after_forward(model, x, context_fn=selective_checkpoint_context())
    nothing = _kept_after_forward(model, x)
    assert nothing == x.nbytes  # the block's input, kept by the frame
    # linear 2 saved the dropout output; GELU's inputs and dropout's mask (a bool per element) are recomputed
    assert selective == x.nbytes + layer
    assert everything > selective + 2 * layer


def test_a_recompute_that_changes_shape_is_still_checked():
    state = {"n": 3}
    w = mt.randn(5, 4, requires_grad=True)
    y = checkpoint(lambda w: (w[:state["n"]] @ w.T).tanh(), w, context_fn=selective_checkpoint_context())
    state["n"] = 4
    with pytest.raises(CheckpointError, match="saved tensor 0 with shape"):
        y.sum().backward()


def test_bad_policies_and_misuse():
    with pytest.raises(TypeError, match="policy must be a callable"):
        selective_checkpoint_context("save")
    w = mt.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="returned 'keep' for op 'exp'"):
        checkpoint(lambda w: w.exp(), w, context_fn=selective_checkpoint_context(lambda op: "keep"))
    forward, _ = selective_checkpoint_context()()
    with pytest.raises(RuntimeError, match="inside checkpoint only"):
        with forward:
            pass


def test_float64_gradcheck_with_a_selective_policy():
    mt.manual_seed(0)
    lin = nn.Linear(3, 3).double()
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    ctx = selective_checkpoint_context()
    assert gradcheck(lambda x: checkpoint(lambda h: F.gelu(lin(h)).tanh() * h, x, context_fn=ctx), (x,))


def test_a_buffer_both_kinds_of_op_save_is_kept_once_never_recomputed_beside_itself():
    """A ReLU's output is saved by the ReLU ("recompute") and by the next Linear ("save"): the block keeps it
    and does not make it again, so its backward peak is no higher than saving everything."""
    from minigrad.memory.timeline import category_totals

    mt.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1)]
    block = nn.Sequential(*layers)
    x = mt.randn(32, 64)

    def measure(run):
        gc.collect()
        with mm.track(block) as mem:
            y = run()
            after_forward = mem.by_category()["activation"]
            y.sum().backward()
            del y
        rows = category_totals(mem.timeline, mem.baseline_by_category)
        return after_forward, max(r["activation"] for r in rows)

    save_all = measure(lambda: block(x))
    selective = measure(lambda: checkpoint(block, x, context_fn=selective_checkpoint_context(save_expensive)))
    layer = 32 * 64 * 4
    assert selective[0] == 7 * layer  # after forward: the Linear inputs only (the first one is x, data), no Dropout
    assert selective[0] < save_all[0]
    assert selective[1] <= save_all[1]  # measured: equal (the recompute holds what saving everything holds)
