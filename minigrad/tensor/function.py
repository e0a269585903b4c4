"""Function: one differentiable op, and the node it leaves in the graph.

An op is a subclass of :class:`Function` with two methods::

    class Mul(Function):
        def forward(ctx, a, b):            # arrays in, array out
            ctx.save_for_backward(a, b)    # what backward will need
            return a * b

        def backward(ctx, grad):           # d(loss)/d(out) in ...
            a, b = ctx.saved_tensors
            return grad * b, grad * a      # ... d(loss)/d(each input) out

    y = Mul.apply(x, w)                    # tensors in, tensor out

``apply`` unwraps the tensors, runs ``forward`` on their arrays and wraps the
result. When autograd is recording (some input requires grad, not inside
``no_grad()``), the ``ctx`` that ``forward`` filled in becomes the output's
``grad_fn``: a graph node with ``name`` (``"MulBackward"``), ``op``
(``"mul"``), ``output_shape``, ``saved_tensors`` and, as in PyTorch,
``next_functions``: one ``(parent, 0)`` per tensor input, ``parent`` being the
input's ``grad_fn``, the :class:`AccumulateGrad` node of a leaf that requires
grad, or ``None``. The graph keeps what ``save_for_backward`` kept, not outputs.

Unlike PyTorch, ``forward``/``backward`` see backend arrays, not Tensors (no
higher-order gradients). ``backward`` returns one gradient per argument of
``forward`` (``None`` for plain arguments and where ``ctx.needs_input_grad``
is False), never modifies ``grad`` in place and never returns an array it saved.
Reading ``ctx.saved_tensors`` raises if an in-place op changed a saved tensor
(:mod:`.version_checks`) or a first ``backward()`` freed them (no ``retain_graph``).
"""

from __future__ import annotations

import contextlib
import re

import numpy as np

from minigrad.tensor import anomaly as _anomaly
from minigrad.tensor import bfloat16_compute as _bf16
from minigrad.tensor import dtype_policy_slot as _policy
from minigrad.tensor import events
from minigrad.tensor import op_errors as _op_errors
from minigrad.tensor import saved_tensors as _saved_tensors
from minigrad.tensor.backend import DeviceError
from minigrad.tensor.dtypes import bfloat16, float16
from minigrad.tensor.dispatch import OP_IMPLS as _op_impls
from minigrad.tensor.dispatch import bind_forward as _bind_forward
from minigrad.tensor.dispatch import note_function
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.accumulate_grad import AccumulateGrad
from minigrad.tensor.tensor import Tensor, VersionCounter, init_tensor
from minigrad.tensor.version_checks import freed_error, modified_error, version_checks

__all__ = ["Function", "AccumulateGrad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


class _GradMode:
    enabled = True


def is_grad_enabled() -> bool:
    return _GradMode.enabled


class set_grad_enabled(contextlib.ContextDecorator):
    """Turn recording on or off inside a ``with`` block (or for a decorated function)."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(_GradMode.enabled)
        _GradMode.enabled = self.mode
        return self

    def __exit__(self, *exc) -> None:
        _GradMode.enabled = self._previous.pop()


class no_grad(set_grad_enabled):
    """Ops inside ``with no_grad():`` build no graph: outputs have ``requires_grad=False``.

    Use it for evaluation and for updating parameters in place (the optimizer step).
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Turn recording back on inside a ``no_grad()`` block."""

    def __init__(self) -> None:
        super().__init__(True)


_new = object.__new__


class _NotATensor:
    """Marks, in a node's parents, an argument of forward that was not a tensor (a number, a dim...)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_A_TENSOR"


NOT_A_TENSOR = _NotATensor()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Function:
    """Base class of differentiable ops; see the module docstring for the protocol and graph walking."""

    #: ``True`` for ops whose output is a view of their first argument, a tensor (shares memory and version counter).
    is_view = False
    #: ops that the dtype policy must not touch (the cast op itself).
    skip_dtype_policy = False
    #: set by ``forward`` when the output lives on another device than the inputs (``to(device)``).
    out_device = None
    #: set on nodes computed in float32 from operands stored in this dtype (bfloat16 or float16): backward runs in
    #: float32 too (see :mod:`.bfloat16_compute`).
    _storage = None

    # defaults, overwritten per node by ``apply``
    _parents: tuple = ()
    _saved: tuple | None = ()
    _checks: tuple = ()
    _retain = None
    _unpack = None
    _device = None
    output_shape: tuple = ()
    output_dtype = None
    name = "FunctionBackward"
    op = "function"
    backward_op = "function_backward"  # what made the gradients its backward returns

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__ + "Backward"
        if "op" not in cls.__dict__:
            cls.op = _snake(cls.__name__)
        cls.backward_op = cls.op + "_backward"
        note_function(cls)

    # ------------------------------------------------------------- the protocol

    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(f"{type(ctx).__name__}.forward(ctx, *arrays) must return the output array")

    def backward(ctx, grad):
        raise NotImplementedError(
            f"{type(ctx).__name__}.backward(ctx, grad) must return one gradient (or None) per input of forward"
        )

    def save_for_backward(ctx, *arrays) -> None:
        """Keep ``arrays`` (inputs, the output, or anything computed) for ``backward``."""
        ctx._saved = arrays

    @property
    def saved_tensors(ctx) -> tuple:
        """The arrays given to ``save_for_backward``, after checking none was modified in place since."""
        saved = ctx._saved
        if saved is None:
            raise freed_error(ctx)
        for index, counter, expected, shape in ctx._checks:
            if counter.value != expected:
                raise modified_error(ctx, counter.value, expected, shape)
        if ctx._unpack is not None:  # packed by saved-tensor hooks: the unpack hook gives the arrays back
            return _saved_tensors.unpack_saved(ctx)
        return saved

    @property
    def next_functions(self) -> tuple:
        """``((parent_node_or_None, 0), ...)``, one pair per *tensor* input, as in PyTorch."""
        return tuple((p, 0) for p in self._parents if p is not NOT_A_TENSOR)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """One flag per argument of ``forward``: does a gradient flow to it? ``backward`` may return None for the others."""
        return tuple(map(bool, self._parents))

    def __repr__(self) -> str:
        return f"<{self.name}>"

    # ------------------------------------------------------------- running an op

    @classmethod
    def apply(cls, *args, **kwargs) -> Tensor:
        """Unwrap the tensors, run ``forward`` on their arrays on their device, wrap the result, record the node."""
        if _policy.policy is not None and not cls.skip_dtype_policy:  # the dtype-policy slot (autocast)
            args = _policy.policy(cls, args)
        ctx = _new(cls)
        arrays, parents, device, record, narrow = _unwrap(cls, args)
        out = _run_forward(ctx, arrays, args, kwargs, device, narrow)
        if ctx.out_device is not None:  # the op moved its result (to(device))
            device = ctx.out_device
        if _anomaly.enabled:  # detect_anomaly()
            _anomaly.check_forward(cls.__name__, args, out)
        result = _wrap(ctx, out, device, args, record and _GradMode.enabled)
        node = _record(ctx, parents, out, result, args, device) if result._requires_grad else None
        if _anomaly.enabled and node is not None:  # its backward's error names where the forward ran
            node.anomaly_site = _anomaly.forward_site()
        for listener in events.op_ran:  # what made which buffer (minigrad.memory listens)
            listener(cls, node, out, device)
        return result

    def explain_error(ctx, exc: Exception, args, kwargs) -> Exception:
        """The error to raise when NumPy refused ``forward``: it names the op and its operands (ops may refine it)."""
        return _op_errors.explain_error(ctx, exc, args, kwargs)


# --------------------------------------------------------------------------- the steps of Function.apply


def _unwrap(cls, args) -> tuple:
    """``(arrays, parents, device, record, narrow)``: the backend arrays of ``args``, one parent node per argument
    (the input's ``grad_fn`` or leaf node, None if it needs no gradient, NOT_A_TENSOR for plain values), the one
    device of the tensors, whether any requires grad, and the 16-bit float dtype of an operand (None if none)."""
    arrays = []
    parents = []
    device = None
    record = False
    narrow = None
    for a in args:
        if isinstance(a, Tensor):
            data = a._data
            arrays.append(data)
            if data.dtype is bfloat16 or data.dtype is float16:
                narrow = data.dtype
            if a._requires_grad:
                record = True
                parents.append(a.grad_fn or a._accum or a._accumulate_grad_node())
            else:
                parents.append(None)
            if device is None:
                device = a._device
            elif a._device is not device:
                raise _op_errors.device_error(cls, args)
        else:
            arrays.append(a)
            parents.append(NOT_A_TENSOR)
    return arrays, parents, device, record, narrow


def _run_forward(ctx, arrays, args, kwargs, device, narrow):
    """The output array of ``ctx.forward`` (or of the kernel its device type registered, see :mod:`.dispatch`);
    bfloat16 and float16 operands are computed in float32 (:mod:`.bfloat16_compute`); NumPy's refusals become
    errors naming the op and its operands."""
    forward = _bind_forward(ctx, device.type) if _op_impls and device is not None else ctx.forward
    try:
        if narrow is not None and _bf16.applies(type(ctx), arrays, narrow):  # computed in float32, rounded once
            out = _bf16.forward(ctx, forward, arrays, kwargs, narrow)
        else:
            out = forward(*arrays, **kwargs)
    except (ShapeError, DTypeError, DeviceError, NotImplementedError):
        raise
    except (ValueError, TypeError, IndexError) as exc:  # named by op and operands (see op_errors.py)
        error, in_user_code = _op_errors.forward_error(ctx, exc, args, kwargs)
        raise error from (exc if in_user_code else None)
    if isinstance(out, np.generic):  # NumPy turns 0-d results into scalars; keep arrays
        out = np.asarray(out)
    return out


def _wrap(ctx, out, device, args, recording: bool) -> Tensor:
    """The output tensor; a view shares its input's version counter and base; ``grad_fn`` is the node if recording."""
    if ctx.is_view:  # the output reads its input's memory
        base = args[0]
        version = base._version_counter
        if base._base is not None:
            base = base._base
    else:
        version = VersionCounter()
        base = None
    return init_tensor(_new(Tensor), out, device, recording, ctx if recording else None, version, base)


def _record(ctx, parents, out, result, args, device):
    """Make ``ctx`` a graph node (its parents, what it produced, its device, the versions of what it saved, packed
    if saved-tensor hooks ask) and return it."""
    ctx._parents = tuple(parents)
    ctx.output_shape = out.shape
    ctx.output_dtype = out.dtype
    ctx._device = device
    if ctx._saved:
        ctx._checks = version_checks(ctx._saved, args, result)
        if _saved_tensors.stack:  # saved-tensor hooks
            _saved_tensors.pack_saved(ctx, device)
    return ctx
