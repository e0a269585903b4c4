"""Forward values and gradients against PyTorch on random cases (skipped when torch is not installed).

Each case is written once, against a library ``lib`` that is either
``minigrad.tensor`` or ``torch``: the names are the same, which is the point.
"""

import numpy as np
import pytest

import minigrad.tensor as mt

torch = pytest.importorskip("torch")


def F(lib):
    """Where the functional ops live: torch.nn.functional, or minigrad.tensor itself."""
    return torch.nn.functional if lib is torch else mt


CASES = {
    "mlp_cross_entropy": (
        [(6, 5), (5, 4), (4,)],
        lambda lib, x, w, b: -(x @ w + b).relu().log_softmax(dim=1)[lib.arange(6), lib.tensor([0, 3, 1, 2, 3, 0])].mean(),
    ),
    "broadcast_arith": ([(3, 1, 4), (2, 4), ()], lambda lib, a, b, c: ((a * b - c) / (b.abs() + 1)) ** 2),
    "activations": ([(4, 5)], lambda lib, a: a.tanh() + a.sigmoid() * F(lib).gelu(a) - a.exp().log() + a.clamp(-0.5, 0.5)),
    "gelu_tanh": ([(4, 5)], lambda lib, a: F(lib).gelu(a, approximate="tanh")),
    "leaky_relu": ([(4, 5)], lambda lib, a: F(lib).leaky_relu(a, 0.1)),
    "reductions": (
        [(2, 3, 4)],
        lambda lib, a: a.sum((0, 2), keepdim=True) + a.mean(1, keepdim=True) + a.amax((1, 2), keepdim=True)
        + a.var(2, keepdim=True) + a.std(keepdim=True) + a.logsumexp(1, keepdim=True),
    ),
    "max_min_dim": ([(3, 5)], lambda lib, a: a.max(1).values + a.min(1, keepdim=True).values.squeeze(1)),
    "batched_matmul": ([(2, 1, 3, 4), (3, 4, 2)], lambda lib, a, b: a @ b),
    "vector_matmul": ([(4,), (2, 4, 3)], lambda lib, a, b: lib.matmul(a, b)),
    "views": (
        [(2, 3, 4)],
        lambda lib, a: a.permute(2, 0, 1).reshape(4, 6).T.flatten()[::2].unsqueeze(0).expand(3, 12) * 2,
    ),
    "indexing": ([(4, 5)], lambda lib, a: a[lib.tensor([0, 2, 2]), 1:] + a[1:2, lib.tensor([4, 4, 0, 1])].sum()),
    "mask": ([(4, 5)], lambda lib, a: a[a > 0].sum() + a[:, None, 1].sum()),
    "cat_stack_split": (
        [(3, 4), (3, 2)],
        lambda lib, a, b: lib.stack([x.sum(1) for x in lib.cat([a, b], 1).split(3, dim=1)], 0),
    ),
    "chunk_softmax": ([(4, 6)], lambda lib, a: lib.cat([c.softmax(0) for c in a.chunk(3, dim=1)], 1)),
    "where_max_min": (
        [(3, 4), (4,)],
        lambda lib, a, b: lib.where(a > 0, a, b) + lib.maximum(a, b) - lib.minimum(a, b * 2),
    ),
    "pad": ([(2, 3)], lambda lib, a: F(lib).pad(a, (1, 2, 1, 0))),
    "one_hot_loss": ([(5, 3)], lambda lib, a: (F(lib).one_hot(lib.tensor([0, 2, 1, 1, 0]), 3) * a.log_softmax(-1)).sum()),
    "pow_sqrt": ([(3, 3)], lambda lib, a: (a.abs() + 0.5).sqrt() ** 1.5 + 2.0 ** a),
}


def _to_torch(a: np.ndarray):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def _to_mt(a: np.ndarray):
    return mt.tensor(a, dtype=mt.float64, requires_grad=True)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_forward_and_backward_match_pytorch(name, seed):
    shapes, fn = CASES[name]
    gen = np.random.default_rng(seed)
    arrays = [gen.standard_normal(s) for s in shapes]
    ours = [_to_mt(a) for a in arrays]
    theirs = [_to_torch(a) for a in arrays]
    out_mt = fn(mt, *ours)
    out_torch = fn(torch, *theirs)
    np.testing.assert_allclose(out_mt.detach().cpu().numpy(), out_torch.detach().cpu().numpy(), rtol=1e-10, atol=1e-12)
    weights = gen.standard_normal(out_torch.shape)
    (out_mt * mt.tensor(weights)).sum().backward()
    (out_torch * torch.tensor(weights)).sum().backward()
    for o, t in zip(ours, theirs):
        expected = t.grad.cpu().numpy() if t.grad is not None else np.zeros(t.shape)
        got = o.grad.cpu().numpy() if o.grad is not None else np.zeros(o.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_float32_mlp_step_matches_pytorch():
    gen = np.random.default_rng(0)
    x = gen.standard_normal((16, 8)).astype(np.float32)
    w = gen.standard_normal((8, 3)).astype(np.float32)
    y = gen.integers(0, 3, 16)
    wm, wt = mt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    lm = -(mt.tensor(x) @ wm).log_softmax(1)[mt.arange(16), mt.tensor(y)].mean()
    lt = torch.nn.functional.cross_entropy(torch.tensor(x) @ wt, torch.tensor(y))
    lm.backward()
    lt.backward()
    assert lm.item() == pytest.approx(lt.item(), rel=1e-5)
    np.testing.assert_allclose(wm.grad.cpu().numpy(), wt.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
