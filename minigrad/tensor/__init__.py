"""Stage 2 (chapters 03-04): the tensor core — n-d arrays on NumPy with reverse-mode autograd.

Reading order
-------------
The files that carry the chapters' ideas, in the order to read them (1,607 lines in all):

Chapter 03 (data):

1. ``strides.py`` (281 lines): storage, shape, strides and offset; index to
   position and back; contiguity; broadcasting; the strides of permute,
   expand and view; the strided walk behind ``contiguous()``, in plain Python.
2. ``tensor.py`` (233 lines): the :class:`Tensor` — one backend array plus
   ``requires_grad``, ``grad_fn``, ``grad`` and the version counter (all set
   by ``init_tensor``); ``backward``, ``detach``, ``requires_grad_``.
3. ``ops/shape.py`` (169 lines): views — a new shape and strides over the
   same memory (transpose, expand with stride 0, view/reshape) — and their
   backward, which undoes the shape change; ``contiguous``.

Chapter 04 (autograd):

4. ``function.py`` (301 lines): :class:`Function` — ``forward``/``backward``,
   ``save_for_backward`` — and ``Function.apply``, which unwraps, runs the
   op on the device, wraps and records the node, each a short step; ``no_grad``.
5. ``op_table.py`` (64 lines): how ``x + y`` finds its op: the op modules
   register into a table the Tensor's methods read (the core imports no op).
6. ``ops/log_softmax.py`` (50 lines): one op written out as a ``Function``
   (exercise 4.4): a forward that cannot overflow, a backward from the
   saved output.
7. ``autograd.py`` (150 lines): the backward pass — topological order,
   gradients added up over the graph, leaves, ``retain_grad``,
   ``retain_graph`` (the driver is exercise 4.5).
8. ``grad_rules.py`` (137 lines): the backward rules with an idea in them
   (``unbroadcast``, matmul, sum/mean): exercises 4.1-4.3.
9. ``ops/inplace.py`` (114 lines): in-place ops and the version counter that
   catches a saved tensor modified before backward.
10. ``gradcheck.py`` (108 lines): backward against finite differences, in float64.

Extensions (not on the reading path)
------------------------------------
The layers of this package, bottom to top (a contract in ``pyproject.toml``
keeps imports pointing down): the building blocks (``backend``, ``dtypes``,
``strides``...), the Tensor's methods, the Tensor, the autograd core
(``function``, ``backward_steps``, ``autograd``), the ops, and the tools on
top (``gradcheck``, ``factories``).

The Tensor's methods and the helpers of the core, each named for what it does:

- ``tensor_methods.py`` (498 lines): the operator, reduction, shape and
  conversion methods (``x + y``, ``x.sum()``, ``x.view(...)``, ``x.to(...)``),
  each a one-line call into the op table; ``Tensor`` inherits them.
- ``accumulate_grad.py`` (39 lines): the graph node of a leaf that requires grad.
- ``from_data.py`` (51 lines): Python data (nested lists, numbers, arrays) to an array: the rules of ``tensor()``.
- ``op_errors.py`` (85 lines): a failed ``forward`` named by op and operands, and the line of the user's code.
- ``version_checks.py`` (65 lines): which saved arrays backward checks against which version counters.
- ``shape_args.py`` (42 lines): size arguments of the shape ops, ``-1`` inferred.
- ``gradcheck_result.py`` (35 lines): what ``gradcheck`` reports, and its error.
- ``backward_steps.py`` (157 lines): what the backward pass does besides its algorithm: a
  node's ``backward`` run and checked, a gradient stored in ``.grad`` without a needless copy, the seed.

The op catalogue (``ops/``): every op is a :class:`Function` built as
``function.py`` shows, its non-trivial rule in ``grad_rules.py``; read one or
two (``Mul``, ``Relu``, ``Sum``), look the rest up when you need them:

- ``ops/__init__.py`` (7 lines): what the catalogue is and how it plugs in.
- ``ops/elementwise.py`` (597 lines): arithmetic, activations, comparisons.
  GELU's ``erf`` approximation is there for PyTorch compatibility.
- ``ops/reduce.py`` (360 lines): sum, mean, max/min, var/std, vector norms, argmax.
- ``ops/matmul.py`` (109 lines): ``a @ b`` with 1-D and batched operands.
- ``ops/nn.py`` (151 lines): softmax, logsumexp (max subtracted first),
  ``log_softmax`` (its node is in ``ops/log_softmax.py``), one_hot, pad.
- ``ops/index.py`` (157 lines): ``x[key]`` (basic keys give views) and recorded ``x[key] = v``.
- ``ops/squeeze.py`` (61 lines): squeeze, unsqueeze, flatten: reshapes named by the dimensions they change.
- ``ops/join.py`` (126 lines): cat, stack, split, chunk.
- ``ops/convert.py`` (75 lines): casts, device moves, copies.
- ``ops/inplace_ops.py`` (82 lines): ``add_``, ``sub_``, ``mul_``, ``div_``, ``x[key] = v``, ``fill_``,
  ``zero_``, ``copy_``, by ``ops/inplace.py``'s rules.
- ``ops/inplace_writes.py`` (46 lines): writing into memory unrecorded, and NumPy's refusals as clear errors.
- ``strided_arrays.py`` (140 lines): the arrays of permute/expand/view/contiguous,
  built from ``strides.py`` when its functions are replaced (chapter 03's
  ``use_exercise``), NumPy's own ops otherwise (the speed path).
- ``factories.py`` (245 lines): ``tensor``, ``zeros``, ``randn``, ``arange``... with PyTorch's signatures.
- ``dtypes.py`` (206 lines): the six dtypes (and two storage-only float8s) and PyTorch's promotion rules (chapter 03, section 9).
- ``printing.py`` (78 lines): ``repr`` in PyTorch's style.
- ``rng.py`` (101 lines): one seeded generator per device, ``manual_seed``.
- ``errors.py`` (30 lines): the error classes and the operand descriptions in messages.

Device and dtype extension points, for the later stages (GPU, memory, mixed
precision, checkpointing), which plug in here instead of patching the core:

- ``backend.py`` (233 lines): the device registry (NumPy on the CPU, CuPy for ``"cuda"`` later).
- ``dispatch.py`` (125 lines): a device type's own kernel for an op.
- ``events.py`` (100 lines): what the core tells listeners: a tensor was made, an op ran, a node's backward ran, a gradient was stored.
- ``dtype_policy_slot.py`` (48 lines): the slot a mixed-precision policy fills (``minigrad.amp``).
- ``bfloat16_compute.py`` (142 lines): ops on bfloat16 and float16 data computed in
  float32 and rounded once.
- ``float16_casts.py`` (129 lines): speed path — float16 <-> float32 conversions by
  array arithmetic on the bits, in cache-sized blocks, NumPy's results bit for bit, 2-3x faster.
- ``fast_float16.py`` (44 lines): speed path — float16 matrix products on the
  CPU computed in float32 (NumPy's own are ~200x slower), equal to the clear
  rules' results rounded to float16.
- ``saved_tensors.py`` (122 lines): ``saved_tensors_hooks``, pack/unpack around
  what backward keeps (checkpointing, offloading).
- ``graph.py`` (5 lines): the same hooks under PyTorch's name ``graph.saved_tensors_hooks``.

Debugging:

- ``anomaly.py`` (138 lines): ``detect_anomaly`` names the op, and the line that ran it, where NaN or Inf first appears.

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
from minigrad.tensor import events, grad_rules, strides
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
    float8_e4m3fn,
    float8_e5m2,
    finfo,
    int64,
    is_floating_point,
    promote_types,
)
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
from minigrad.tensor.dtype_policy_slot import dtype_policy, get_dtype_policy, set_dtype_policy
from minigrad.tensor.saved_tensors import saved_tensors_hooks
from minigrad.tensor import graph
from minigrad.tensor.ops.convert import cast, clone
from minigrad.tensor.ops.elementwise import (
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
from minigrad.tensor.ops.index import getitem
from minigrad.tensor.ops import inplace_ops  # noqa: F401 (registers the in-place methods: add_, copy_, x[k] = v...)
from minigrad.tensor.ops.matmul import matmul
from minigrad.tensor.ops.nn import log_softmax, logsumexp, one_hot, pad, softmax
from minigrad.tensor.ops.reduce import all, amax, amin, any, argmax, argmin, max, mean, min, std, sum, var, vector_norm
from minigrad.tensor.ops.join import cat, chunk, concatenate, split, stack
from minigrad.tensor.ops.shape import contiguous, expand, permute, reshape, transpose, view
from minigrad.tensor.ops.squeeze import flatten, squeeze, unsqueeze
from minigrad.tensor.op_table import register as _register
from minigrad.tensor.rng import default_generator, fork_rng, generator_for, get_rng_state, manual_seed, set_rng_state

_register(backward)  # Tensor.backward() runs the backward pass through the op table, as the methods run ops

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
    "float16", "bfloat16", "float32", "float64", "int64", "bool_", "float8_e4m3fn", "float8_e5m2", "double", "half", "long",
    "default_float", "promote_types", "is_floating_point", "finfo",
    "Device", "Backend", "DeviceError", "device", "cpu", "register_backend", "unregister_backend",
    "get_backend", "registered_backends", "array_module", "ShapeError", "DTypeError",
    "set_default_device", "get_default_device", "register_op_impl", "unregister_op_impl", "registered_op_impls",
    # extension points
    "events", "strides", "grad_rules", "set_dtype_policy", "get_dtype_policy", "dtype_policy",
    "saved_tensors_hooks", "graph",
    # factories and random numbers
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand", "randn", "randint", "rand_like", "randn_like", "randperm",
    "arange", "linspace", "eye", "manual_seed", "default_generator", "get_rng_state", "set_rng_state",
    "fork_rng", "generator_for",
    # ops
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
    "leaky_relu", "gelu", "clamp", "clip", "maximum", "minimum", "where",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
    "mean", "amax", "amin", "var", "std", "vector_norm", "argmax", "argmin",
    "matmul", "reshape", "view", "transpose", "permute", "expand", "squeeze", "unsqueeze", "flatten",
    "contiguous", "cat", "concatenate", "stack", "split", "chunk", "getitem",
    "softmax", "log_softmax", "logsumexp", "one_hot", "pad", "cast", "clone", "unbroadcast",
]
