"""autocast: PyTorch's op lists through the dtype-policy slot, nesting, threads, the weight cache, gradients' dtypes."""

import threading

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad import nn
from minigrad.amp import autocast, get_autocast_dtype, is_autocast_enabled
from minigrad.amp.cast_cache import active_cache
from minigrad.amp.op_lists import FLOAT32, LOWER_PRECISION, PROMOTE, category
from minigrad.tensor.dispatch import FUNCTIONS_BY_NAME

BF16, F16, F32 = mt.bfloat16, mt.float16, mt.float32


def inputs(lib, dtype=None):
    """The same data as minigrad and torch tensors (float32 unless ``dtype`` names one)."""
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((4, 6)), "w": rng.standard_normal((5, 6)), "img": rng.standard_normal((2, 3, 6, 6)),
        "cw": rng.standard_normal((4, 3, 3, 3)), "c": rng.standard_normal(3), "p": rng.uniform(0.1, 0.9, (4, 6)),
    }
    if lib == "mt":
        made = {k: mt.tensor(v, dtype=dtype or F32) for k, v in arrays.items()}
        made["labels"] = mt.tensor([0, 1, 2, 3])
        made["mask"] = made["x"] > 0
        return made
    import torch

    made = {k: torch.tensor(v, dtype=getattr(torch, str(dtype or F32))) for k, v in arrays.items()}
    made["labels"] = torch.tensor([0, 1, 2, 3])
    made["mask"] = made["x"] > 0
    return made


def _setitem(lib, t):
    y = t["x"].clone()
    y[0] = t["x"][1]
    return y


def _batch_norm(lib, t, f):
    return f.batch_norm(t["img"], t["c"] * 0, t["c"] * 0 + 1, t["c"], t["c"], training=True)


# op (Function.op) -> call(lib, tensors, functional_module); the same code runs on minigrad and torch
CALLS = {
    "abs": lambda lib, t, f: t["x"].abs(),
    "add": lambda lib, t, f: t["x"] + t["x"],
    "amax": lambda lib, t, f: t["x"].amax(1),
    "amin": lambda lib, t, f: t["x"].amin(1),
    "avg_pool2d": lambda lib, t, f: f.avg_pool2d(t["img"], 2),
    "batch_norm": _batch_norm,
    "binary_cross_entropy_with_logits": lambda lib, t, f: f.binary_cross_entropy_with_logits(t["x"], t["p"]),
    "cast": lambda lib, t, f: t["x"].to(lib.float64),
    "cat": lambda lib, t, f: lib.cat([t["x"], t["x"]]),
    "clamp": lambda lib, t, f: t["x"].clamp(-1.0, 1.0),
    "clone": lambda lib, t, f: t["x"].clone(),
    "contiguous": lambda lib, t, f: t["x"].T.contiguous(),
    "conv2d": lambda lib, t, f: f.conv2d(t["img"], t["cw"]),
    "cross_entropy": lambda lib, t, f: f.cross_entropy(t["x"], t["labels"]),
    "div": lambda lib, t, f: t["x"] / 2.0,
    "dropout": lambda lib, t, f: f.dropout(t["x"], 0.5, training=True),
    "exp": lambda lib, t, f: t["x"].exp(),
    "expand": lambda lib, t, f: t["x"][:1].expand(4, 6),
    "gelu": lambda lib, t, f: f.gelu(t["x"]),
    "getitem": lambda lib, t, f: t["x"][1:3],
    "leaky_relu": lambda lib, t, f: f.leaky_relu(t["x"]),
    "linear": lambda lib, t, f: f.linear(t["x"], t["w"]),
    "log": lambda lib, t, f: t["p"].log(),
    "log_softmax": lambda lib, t, f: t["x"].log_softmax(1),
    "logsumexp": lambda lib, t, f: t["x"].logsumexp(1),
    "matmul": lambda lib, t, f: t["x"] @ t["w"].T,
    "max_pool2d": lambda lib, t, f: f.max_pool2d(t["img"], 2),
    "maximum": lambda lib, t, f: lib.maximum(t["x"], t["p"]),
    "mean": lambda lib, t, f: t["x"].mean(),
    "minimum": lambda lib, t, f: lib.minimum(t["x"], t["p"]),
    "mul": lambda lib, t, f: t["x"] * t["p"],
    "neg": lambda lib, t, f: -t["x"],
    "nll_loss": lambda lib, t, f: f.nll_loss(t["x"], t["labels"]),
    "pad": lambda lib, t, f: f.pad(t["x"], (1, 1)),
    "permute": lambda lib, t, f: t["img"].permute(0, 2, 3, 1),
    "pow": lambda lib, t, f: t["x"] ** 2,
    "relu": lambda lib, t, f: f.relu(t["x"]),
    "reshape": lambda lib, t, f: t["x"].T.reshape(24),
    "setitem": lambda lib, t, f: _setitem(lib, t),
    "sigmoid": lambda lib, t, f: t["x"].sigmoid(),
    "softmax": lambda lib, t, f: t["x"].softmax(1),
    "sqrt": lambda lib, t, f: t["p"].sqrt(),
    "squeeze": lambda lib, t, f: t["x"][:1].squeeze(0),
    "stack": lambda lib, t, f: lib.stack([t["x"], t["p"]]),
    "std": lambda lib, t, f: t["x"].std(1),
    "sub": lambda lib, t, f: t["x"] - t["p"],
    "sum": lambda lib, t, f: t["x"].sum(),
    "tanh": lambda lib, t, f: t["x"].tanh(),
    "unsqueeze": lambda lib, t, f: t["x"].unsqueeze(0),
    "var": lambda lib, t, f: t["x"].var(1),
    "vector_norm": lambda lib, t, f: t["x"].norm(),
    "view": lambda lib, t, f: t["x"].view(24),
    "where": lambda lib, t, f: lib.where(t["mask"], t["x"], t["p"]),
}
NOT_USER_OPS = {  # Function subclasses that are not ops a user calls
    "__broadcasting": "base class of the binary ops", "__indexing": "base class of getitem/setitem",
    "backward_hook_input": "nn's module backward hooks", "backward_hook_output": "nn's module backward hooks",
    "to_device": "a device move: runs only between two devices, in the input's dtype",
    "checkpoint": "chapter 10's reentrant checkpoint: a block, not an op (the ops inside it follow autocast)",
}


def test_every_op_of_the_library_is_in_the_table():
    names = {op for op, classes in FUNCTIONS_BY_NAME.items() if any(c.__module__.startswith("minigrad.") for c in classes)}
    assert names - set(NOT_USER_OPS) == set(CALLS), "new ops must be added to CALLS (or NOT_USER_OPS)"
    for device_type in ("cpu", "cuda"):
        for lists in (LOWER_PRECISION, FLOAT32, PROMOTE):
            assert lists[device_type] - {"rdiv"} <= names


def expected_dtype(device_type, op, autocast_dtype, input_dtype=F32):
    kind = category(device_type, op, ())
    if op == "cast":
        return mt.float64
    return {"lower": autocast_dtype, "float32": F32}.get(kind, input_dtype)


@pytest.mark.parametrize("autocast_dtype", [BF16, F16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(CALLS))
def test_the_autocast_dtype_of_every_op_on_the_cpu(op, autocast_dtype):
    t = inputs("mt")
    with autocast("cpu", dtype=autocast_dtype):
        out = CALLS[op](mt, t, F)
    assert out.dtype is expected_dtype("cpu", op, autocast_dtype), f"{op} under autocast({autocast_dtype})"


@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(CALLS))
def test_the_autocast_dtype_of_every_op_matches_torch_cpu_autocast(op, autocast_dtype, torch):
    with autocast("cpu", dtype=autocast_dtype):
        ours = CALLS[op](mt, inputs("mt"), F).dtype
    with torch.autocast("cpu", dtype=getattr(torch, autocast_dtype)):
        theirs = CALLS[op](torch, inputs("torch"), torch.nn.functional).dtype
    assert str(ours) == str(theirs).replace("torch.", ""), f"{op}: ours {ours}, torch {theirs}"


@pytest.mark.parametrize("op", sorted(CALLS))
def test_float32_ops_widen_reduced_precision_inputs_and_the_others_keep_them(op, torch):
    t = inputs("mt", dtype=BF16)
    with autocast("cpu", dtype=BF16):
        ours = CALLS[op](mt, t, F).dtype
    assert ours is expected_dtype("cpu", op, BF16, input_dtype=BF16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        theirs = CALLS[op](torch, inputs("torch", dtype=BF16), torch.nn.functional).dtype
    assert str(ours) == str(theirs).replace("torch.", ""), f"{op}: ours {ours}, torch {theirs}"


def test_the_cuda_lists_decide_the_cuda_dtypes():
    assert category("cuda", "exp", ()) == "float32" and category("cpu", "exp", ()) is None
    assert category("cuda", "div", (2.0, None)) == "float32" and category("cuda", "div", (None, 2.0)) is None
    assert category("cuda", "matmul", ()) == "lower" and category("cuda", "cat", ()) == "promote"
    for op in ("softmax", "log_softmax", "sum", "vector_norm", "pow", "log", "cross_entropy"):
        assert expected_dtype("cuda", op, F16) is F32


def test_autocast_cuda_leaves_cpu_tensors_alone():
    x, w = mt.randn(3, 4), mt.randn(4, 2)
    with autocast("cuda", dtype=F16):
        assert (x @ w).dtype is F32 and x.exp().dtype is F32
        assert is_autocast_enabled("cuda") and not is_autocast_enabled("cpu")
        assert get_autocast_dtype("cuda") is F16


def test_float64_tensors_are_never_cast():
    x = mt.randn(3, 4, dtype=mt.float64)
    with autocast("cpu"):
        assert (x @ x.T).dtype is mt.float64
        assert F.cross_entropy(x, mt.tensor([0, 1, 2])).dtype is mt.float64


def test_nesting_disabling_and_exceptions_restore_the_state():
    x, w = mt.randn(3, 4), mt.randn(4, 2)
    assert not is_autocast_enabled("cpu") and get_autocast_dtype("cpu") is BF16
    with autocast("cpu", dtype=BF16):
        assert (x @ w).dtype is BF16
        with autocast("cpu", enabled=False):
            assert (x @ w).dtype is F32 and not is_autocast_enabled("cpu")
        with autocast("cpu", dtype=F16):
            assert (x @ w).dtype is F16
        assert (x @ w).dtype is BF16
        with pytest.raises(KeyError):
            with autocast("cpu", enabled=False):
                raise KeyError("inside")
        assert is_autocast_enabled("cpu") and (x @ w).dtype is BF16
    assert not is_autocast_enabled("cpu") and (x @ w).dtype is F32
    assert mt.get_dtype_policy() is None


def test_a_policy_installed_before_comes_back_after():
    def mine(cls, args):
        return args

    with mt.dtype_policy(mine):
        with autocast("cpu"):
            assert mt.get_dtype_policy() is not mine
        assert mt.get_dtype_policy() is mine


def test_the_decorator_opens_a_region_per_call_and_can_recurse():
    region = autocast("cpu", dtype=BF16)

    @region
    def product(x, w, depth=0):
        inner = product(x, w, depth - 1) if depth else None
        assert is_autocast_enabled("cpu")
        return x @ w, inner

    out, inner = product(mt.randn(2, 3), mt.randn(3, 2), depth=2)
    assert out.dtype is BF16 and inner[0].dtype is BF16
    assert not is_autocast_enabled("cpu") and product.__name__ == "product"


def test_the_state_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = is_autocast_enabled("cpu")
        seen["dtype"] = (mt.randn(2, 3) @ mt.randn(3, 2)).dtype

    with autocast("cpu"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert (mt.randn(2, 3) @ mt.randn(3, 2)).dtype is BF16
    assert seen == {"enabled": False, "dtype": F32}


def test_tensors_created_inside_keep_their_dtype():
    with autocast("cpu"):
        assert mt.zeros(3).dtype is F32 and mt.tensor([1.0]).dtype is F32 and mt.randn(2).dtype is F32
        assert mt.ones(2, dtype=F16).dtype is F16 and mt.arange(3).dtype is mt.int64


def test_gradients_come_back_in_each_forward_operands_dtype():
    layer = nn.Linear(6, 3)
    x = mt.randn(4, 6, requires_grad=True)
    with autocast("cpu", dtype=BF16):
        logits = layer(x)
        loss = F.cross_entropy(logits, mt.tensor([0, 1, 2, 0]))
    assert logits.dtype is BF16 and loss.dtype is F32
    loss.backward()
    assert layer.weight.grad.dtype is F32 and layer.bias.grad.dtype is F32 and x.grad.dtype is F32
    # the same gradient by hand: the op computed in bfloat16, its gradients converted back
    w16 = layer.weight.detach().bfloat16().requires_grad_()
    b16 = layer.bias.detach().bfloat16().requires_grad_()
    x16 = x.detach().bfloat16().requires_grad_()
    F.cross_entropy(F.linear(x16, w16, b16).float(), mt.tensor([0, 1, 2, 0])).backward()
    np.testing.assert_array_equal(layer.weight.grad.cpu().numpy(), w16.grad.float().cpu().numpy())
    np.testing.assert_array_equal(x.grad.cpu().numpy(), x16.grad.float().cpu().numpy())


def test_gradients_match_torch_autocast(torch):
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((8, 5)), rng.standard_normal((3, 5)), rng.standard_normal(3)
    ours = [mt.tensor(a, dtype=F32, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in (x, w, b)]
    labels = [0, 1, 2, 0, 1, 2, 0, 1]
    with autocast("cpu", dtype=BF16):
        F.cross_entropy(F.linear(*ours), mt.tensor(labels)).backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.nn.functional.cross_entropy(torch.nn.functional.linear(*theirs), torch.tensor(labels)).backward()
    for o, t in zip(ours, theirs):
        assert str(o.grad.dtype) == str(t.grad.dtype).replace("torch.", "")
        np.testing.assert_allclose(o.grad.cpu().numpy(), t.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_a_weight_is_cast_once_per_region_and_the_cache_empties_at_the_outermost_exit():
    layer = nn.Linear(4, 4)
    x = mt.randn(2, 4)
    with autocast("cpu") as region:
        cache = active_cache()
        for _ in range(3):
            x = layer(x).float()
        with autocast("cpu"):
            layer(x)
            assert active_cache() is cache
        assert (cache.misses, cache.hits) == (2, 6)  # weight and bias cast once, reused 6 times
        assert region.fast_dtype is BF16
    assert active_cache() is None and len(cache) == 0
    with autocast("cpu", cache_enabled=False):
        layer(x)
        assert len(active_cache()) == 0


def test_unsupported_dtypes_warn_and_disable_and_bad_device_types_raise():
    with pytest.warns(UserWarning, match="target dtype float64 is not supported. Disabling autocast"):
        region = autocast("cpu", dtype=mt.float64)
    with region:
        assert not is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="autocast: device_type='gpu' is not supported; use 'cpu' or 'cuda'"):
        autocast("gpu")
