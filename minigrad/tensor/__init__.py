"""Stage 2 (chapters 03-04): the tensor core — n-d arrays on NumPy with reverse-mode autograd.

Chapter 03 (data): :mod:`.strides` (shapes, strides, broadcasting in plain
Python), :class:`Tensor` views without copies, dtypes, devices.
Chapter 04 (autograd): :class:`Function` nodes, :mod:`.autograd` (the
backward pass), :mod:`.grad_rules` (the backward rules with an idea in them:
``unbroadcast``, matmul, reductions, log_softmax, the graph order; the chapter's
exercises), ``no_grad``, version counters, ``gradcheck``.

Extension points for later stages live in :mod:`.backend` (device registry),
:mod:`.hooks` (allocation observers, dtype policy), :mod:`.cast_cache` (each
weight cast once per autocast region), :mod:`.saved_tensors`
(``saved_tensors_hooks``, also as ``graph.saved_tensors_hooks``: pack/unpack
around what backward keeps, for checkpointing and offloading).

Typical use, as in PyTorch::

    import minigrad.tensor as mt
    x = mt.randn(128, 784)
    W = mt.randn(784, 10, requires_grad=True)
    loss = (x @ W).log_softmax(-1)[mt.arange(128), y].mean().neg()
    loss.backward()            # W.grad is d(loss)/dW

``mt.sum``, ``mt.max``, ``mt.min``, ``mt.abs``, ``mt.all``, ``mt.any``, ``mt.pow``,
``mt.float`` and ``mt.bool`` exist as in PyTorch but are left out of ``__all__``,
so ``from minigrad.tensor import *`` does not hide Python's builtins.
"""

from minigrad.tensor.tensor import ReduceResult, Tensor, VersionCounter, shares_memory  # noqa: I001 (first)
from minigrad.tensor import grad_rules, hooks, strides
from minigrad.tensor.autograd import backward, topological_order
from minigrad.tensor.backend import (
    Backend,
    Device,
    DeviceError,
    array_module,
    device,
    get_backend,
    get_default_device,
    register_backend,
    registered_backends,
    set_default_device,
    unregister_backend,
)
from minigrad.tensor.dispatch import register_op_impl, registered_op_impls, unregister_op_impl
from minigrad.tensor.dtypes import (
    bfloat16,
    bool_,
    default_float,
    float16,
    float32,
    float64,
    finfo,
    int64,
    is_floating_point,
    promote_types,
)
from minigrad.tensor.cast_cache import cached_cast, weight_cast_cache
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from minigrad.tensor.function import (
    AccumulateGrad,
    Function,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minigrad.tensor.grad_rules import unbroadcast
from minigrad.tensor.gradcheck import GradcheckError, GradcheckResult, gradcheck
from minigrad.tensor.anomaly import AnomalyError, detect_anomaly
from minigrad.tensor.hooks import (
    AllocationEvent,
    add_allocation_observer,
    allocation_tag,
    dtype_policy,
    get_dtype_policy,
    remove_allocation_observer,
    set_buffer_tag,
    set_dtype_policy,
)
from minigrad.tensor.saved_tensors import saved_tensors_hooks
from minigrad.tensor import graph
from minigrad.tensor.ops_convert import cast, clone
from minigrad.tensor.ops_elementwise import (
    abs,
    add,
    clamp,
    clip,
    div,
    eq,
    exp,
    ge,
    gelu,
    gt,
    le,
    leaky_relu,
    log,
    logical_and,
    logical_not,
    logical_or,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    relu,
    sigmoid,
    sqrt,
    sub,
    tanh,
    where,
)
from minigrad.tensor.ops_index import getitem
from minigrad.tensor.ops_matmul import matmul
from minigrad.tensor.ops_nn import log_softmax, logsumexp, one_hot, pad, softmax
from minigrad.tensor.ops_reduce import all, amax, amin, any, argmax, argmin, max, mean, min, std, sum, var
from minigrad.tensor.ops_shape import (
    cat,
    chunk,
    concatenate,
    contiguous,
    expand,
    flatten,
    permute,
    reshape,
    split,
    squeeze,
    stack,
    transpose,
    unsqueeze,
    view,
)
from minigrad.tensor.rng import default_generator, fork_rng, generator_for, get_rng_state, manual_seed, set_rng_state

cpu = device("cpu")
float = float32  # noqa: A001 - PyTorch aliases
double = float64
half = float16
long = int64
bool = bool_  # noqa: A001

__all__ = [
    # the tensor and its graph
    "Tensor", "VersionCounter", "ReduceResult", "shares_memory", "Function", "AccumulateGrad",
    "backward", "topological_order", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "gradcheck", "GradcheckError", "GradcheckResult", "detect_anomaly", "AnomalyError",
    # dtypes, devices, errors
    "float16", "bfloat16", "float32", "float64", "int64", "bool_", "double", "half", "long",
    "default_float", "promote_types", "is_floating_point", "finfo",
    "Device", "Backend", "DeviceError", "device", "cpu", "register_backend", "unregister_backend",
    "get_backend", "registered_backends", "array_module", "ShapeError", "DTypeError",
    "set_default_device", "get_default_device", "register_op_impl", "unregister_op_impl", "registered_op_impls",
    # extension points
    "hooks", "strides", "grad_rules", "AllocationEvent", "add_allocation_observer", "remove_allocation_observer",
    "allocation_tag", "set_buffer_tag", "set_dtype_policy", "get_dtype_policy", "dtype_policy",
    "weight_cast_cache", "cached_cast", "saved_tensors_hooks", "graph",
    # factories and random numbers
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand", "randn", "randint", "rand_like", "randn_like", "randperm",
    "arange", "linspace", "eye", "manual_seed", "default_generator", "get_rng_state", "set_rng_state",
    "fork_rng", "generator_for",
    # ops
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
    "leaky_relu", "gelu", "clamp", "clip", "maximum", "minimum", "where",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
    "mean", "amax", "amin", "var", "std", "argmax", "argmin",
    "matmul", "reshape", "view", "transpose", "permute", "expand", "squeeze", "unsqueeze", "flatten",
    "contiguous", "cat", "concatenate", "stack", "split", "chunk", "getitem",
    "softmax", "log_softmax", "logsumexp", "one_hot", "pad", "cast", "clone", "unbroadcast",
]
