"""Every differentiable op against float64 central differences, with broadcasting and non-contiguous inputs."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor.ops import convert as ops_convert, index as ops_index, shape as ops_shape


def rng(seed=0):
    return np.random.default_rng(seed)


def leaf(*shape, seed=0, layout="contiguous", low=None, away_from_zero=False):
    """A float64 leaf that requires grad; ``layout`` "transposed" or "sliced" gives a non-contiguous one."""
    g = rng(seed)
    if layout == "transposed":
        base_shape = shape[::-1]
    elif layout == "sliced" and shape:
        base_shape = shape[:-1] + (2 * shape[-1],)
    else:
        base_shape = shape
    data = g.standard_normal(base_shape)
    if away_from_zero:  # keep kinks (relu at 0, abs, clamp edges) out of the finite-difference step
        data = np.sign(data) * (0.2 + np.abs(data))
    if low is not None:
        data = np.abs(data) + low
    t = mt.tensor(data)  # float64, on the default device; the layout is made there, as a view
    if layout == "transposed":
        t = t.permute(*reversed(range(t.dim())))
    elif layout == "sliced" and shape:
        t = t[..., ::2]
    t = t.detach()
    assert layout == "contiguous" or not shape or not t.is_contiguous() or min(shape) == 1
    return t.requires_grad_()


LAYOUTS = ["contiguous", "transposed", "sliced"]


def check(fn, *inputs):
    result = mt.gradcheck(fn, list(inputs))
    assert result.ok, str(result)


# ----------------------------------------------------------------------------- elementwise binary, broadcasting

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "maximum": mt.maximum,
    "minimum": mt.minimum,
}
BROADCASTS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary_ops_with_broadcasting(name, shapes):
    a = leaf(*shapes[0], seed=1, low=0.5 if name in ("pow", "div") else None)
    b = leaf(*shapes[1], seed=2, low=0.5 if name in ("pow", "div") else None)
    check(BINARY[name], a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_binary_ops_on_non_contiguous_inputs(name, layout):
    positive = name in ("pow", "div")
    a = leaf(3, 4, seed=3, layout=layout, low=0.5 if positive else None)
    b = leaf(3, 4, seed=4, layout="transposed", low=0.5 if positive else None)
    check(BINARY[name], a, b)


@pytest.mark.parametrize(
    "fn",
    [lambda a: a + 2.5, lambda a: 2.5 - a, lambda a: a * -3, lambda a: 1.5 / a, lambda a: a**3, lambda a: a**-0.5,
     lambda a: 2.0**a, lambda a: -a],
    ids=["add", "rsub", "mul", "rdiv", "pow3", "pow-half", "rpow", "neg"],
)
def test_ops_with_python_numbers(fn):
    check(fn, leaf(2, 3, seed=5, low=0.5))


# ----------------------------------------------------------------------------- elementwise unary

UNARY = {
    "exp": (lambda a: a.exp(), {}),
    "log": (lambda a: a.log(), {"low": 0.3}),
    "sqrt": (lambda a: a.sqrt(), {"low": 0.3}),
    "tanh": (lambda a: a.tanh(), {}),
    "sigmoid": (lambda a: a.sigmoid(), {}),
    "relu": (lambda a: a.relu(), {"away_from_zero": True}),
    "leaky_relu": (lambda a: mt.leaky_relu(a, 0.1), {"away_from_zero": True}),
    "gelu": (lambda a: a.gelu(), {}),
    "gelu_tanh": (lambda a: a.gelu(approximate="tanh"), {}),
    "abs": (lambda a: a.abs(), {"away_from_zero": True}),
    "clamp": (lambda a: a.clamp(-0.5, 0.7), {"away_from_zero": True}),
    "clamp_min": (lambda a: a.clamp(min=0.1), {"away_from_zero": True}),
    "clamp_max": (lambda a: mt.clip(a, max=0.1), {"away_from_zero": True}),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unary_ops(name, layout):
    fn, opts = UNARY[name]
    check(fn, leaf(3, 4, seed=6, layout=layout, **opts))


def test_where_with_broadcasting():
    cond = mt.tensor(rng(7).standard_normal((3, 1)) > 0)
    check(lambda a, b: mt.where(cond, a, b), leaf(3, 4, seed=8), leaf(4, seed=9, layout="sliced"))
    check(lambda a: a.where(a > 0, 0.0), leaf(3, 4, seed=10, away_from_zero=True))


# ----------------------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum": lambda a, d, k: a.sum(d, keepdim=k),
    "mean": lambda a, d, k: a.mean(d, keepdim=k),
    "amax": lambda a, d, k: a.amax(d, keepdim=k),
    "amin": lambda a, d, k: mt.amin(a, d, keepdim=k),
    "var": lambda a, d, k: a.var(d, keepdim=k),
    "std": lambda a, d, k: a.std(d, keepdim=k),
    "logsumexp": lambda a, d, k: a.logsumexp(d if d is not None else (0, 1, 2), keepdim=k),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", [None, 1, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(name, dim, keepdim):
    layout = "transposed" if keepdim else "sliced"
    check(lambda a: REDUCTIONS[name](a, dim, keepdim), leaf(2, 3, 4, seed=11, layout=layout))


def test_max_and_min_along_a_dim_and_overall():
    check(lambda a: a.max(1).values, leaf(3, 4, seed=12))
    check(lambda a: a.min(0, keepdim=True).values, leaf(3, 4, seed=13, layout="transposed"))
    check(lambda a: a.max() + a.min(), leaf(3, 4, seed=14))
    check(lambda a: a.var(correction=0) + a.std(0, correction=0).sum(), leaf(3, 4, seed=15))


def test_max_splits_the_gradient_at_ties_like_pytorch():
    x = mt.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [0, 0.5, 0.5])


# ----------------------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_shapes(shapes):
    check(lambda a, b: a @ b, leaf(*shapes[0], seed=16), leaf(*shapes[1], seed=17))


@pytest.mark.parametrize("layouts", [("transposed", "sliced"), ("sliced", "transposed")])
def test_matmul_non_contiguous(layouts):
    check(mt.matmul, leaf(3, 4, seed=18, layout=layouts[0]), leaf(4, 5, seed=19, layout=layouts[1]))
    check(lambda a, b: a @ b.T, leaf(3, 4, seed=20), leaf(5, 4, seed=21, layout=layouts[1]))


def test_matmul_with_one_operand_constant():
    w = leaf(4, 5, seed=22)
    x = mt.tensor(rng(23).standard_normal((3, 4)), dtype=mt.float64)
    check(lambda w: x @ w, w)


# ----------------------------------------------------------------------------- shape ops and views

SHAPE_OPS = {
    "reshape": lambda a: a.reshape(4, 6),
    "reshape-1": lambda a: a.reshape(-1),
    "view": lambda a: a.contiguous().view(6, -1),
    "transpose": lambda a: a.transpose(0, 2),
    "permute": lambda a: a.permute(2, 0, 1),
    "T": lambda a: a.T,
    "mT": lambda a: a.mT,
    "expand": lambda a: a[:, :1].expand(3, 2, 3, 4),
    "expand_as": lambda a: a[:1].expand_as(a),
    "squeeze": lambda a: a[:, :1].squeeze(1),
    "squeeze_all": lambda a: a[:1, :1].squeeze(),
    "unsqueeze": lambda a: a.unsqueeze(-1),
    "flatten": lambda a: a.flatten(1),
    "contiguous": lambda a: a.contiguous(),
    "clone": lambda a: a.clone(),
    "split": lambda a: mt.cat([p * (i + 1) for i, p in enumerate(a.split(3, dim=2))], 2),
    "split_sizes": lambda a: a.split([1, 3], dim=-1)[1],
    "chunk": lambda a: a.chunk(3, dim=1)[1],
    "cat": lambda a: mt.cat([a, a * 2, a[:1]], 0),
    "stack": lambda a: mt.stack([a, a.exp()], 1),
    "pad": lambda a: mt.pad(a, (1, 2, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_shape_ops(name, layout):
    check(SHAPE_OPS[name], leaf(2, 3, 4, seed=24, layout=layout))


def test_cast_keeps_the_input_dtype_in_backward():
    x = mt.randn(3, requires_grad=True)
    y = x.double() * 2
    y.sum().backward()
    assert x.grad.dtype == mt.float32 and y.dtype == mt.float64


# ----------------------------------------------------------------------------- indexing

INDEXING = {
    "int": lambda a: a[1],
    "negative": lambda a: a[-1, :, 2],
    "slice_step": lambda a: a[:, ::2],
    "none_ellipsis": lambda a: a[None, ..., 1],
    "int_array": lambda a: a[mt.tensor([0, 1, 0])],
    "int_arrays_with_repeats": lambda a: a[[0, 1, 1, 0], :, [3, 2, 2, 3]],
    "mixed": lambda a: a[1:, mt.tensor([2, 0, 2])],
    "bool_mask": lambda a: a[a > 0],
    "bool_mask_rows": lambda a: a[mt.tensor([True, False])],
    "scalar": lambda a: a[1, 2, 3],
}


@pytest.mark.parametrize("name", sorted(INDEXING))
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_indexing(name, layout):
    check(INDEXING[name], leaf(2, 3, 4, seed=25, layout=layout, away_from_zero=True))


def test_setitem_is_differentiable_when_recorded():
    def fn(a, v):
        y = a * 1.0
        y[0, 1:3] = v
        y[1] = 2.0
        return y * a

    check(fn, leaf(3, 4, seed=26), leaf(2, seed=27))


def test_inplace_ops_on_non_leaves_are_differentiable():
    def fn(a, b):
        y = a * 2
        y += b
        y.mul_(a)
        y -= 1.0
        y.div_(b.abs() + 1)
        return y

    check(fn, leaf(3, 4, seed=28), leaf(4, seed=29))


# ----------------------------------------------------------------------------- nn ops


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax_family(dim, layout):
    check(lambda a: a.softmax(dim), leaf(3, 4, seed=30, layout=layout))
    check(lambda a: a.log_softmax(dim), leaf(3, 4, seed=31, layout=layout))
    check(lambda a: mt.logsumexp(a, dim, keepdim=True), leaf(3, 4, seed=32, layout=layout))


def test_cross_entropy_pipeline():
    labels = mt.tensor([2, 0, 3])

    def loss(logits, w):
        logp = (logits @ w).log_softmax(-1)
        return -logp[mt.arange(3), labels].mean()

    check(loss, leaf(3, 5, seed=33), leaf(5, 4, seed=34, layout="transposed"))


def test_convert_ops():
    check(lambda a: ops_convert.clone(a) * 2, leaf(3, seed=35))
    check(lambda a: ops_shape.contiguous(a.T), leaf(3, 2, seed=36))
    check(lambda a: ops_index.getitem(a, (slice(None), 0)), leaf(3, 2, seed=37))
