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
result. When autograd is recording (some input requires grad and we are not
inside ``no_grad()``), the ``ctx`` object that ``forward`` filled in becomes
the output's ``grad_fn``: a node of the graph that ``backward()`` walks.

**Walking the graph** (what a graph drawer needs). Start from ``y.grad_fn``:

- ``node.name``: ``"MulBackward"``, ``"MatmulBackward"``, ... or
  ``"AccumulateGrad"`` for the node that deposits a leaf's gradient;
- ``node.next_functions``: one ``(parent_node, 0)`` pair per tensor input of
  the op, as in PyTorch; ``parent_node`` is the input's ``grad_fn``, its
  ``AccumulateGrad`` node if it is a leaf that requires grad, or ``None`` if no
  gradient flows to that input (``requires_grad=False``). Plain arguments
  (numbers, dims, index keys) do not appear;
- ``node.variable`` (``AccumulateGrad`` only): the leaf tensor itself;
- ``node.output_shape`` / ``node.output_dtype``: what the op produced; ``node.op``:
  the op's short name (``"mul"``); ``node.saved_tensors``: the arrays it keeps alive.

The graph does not keep op *outputs* alive (only what ``save_for_backward``
kept), so memory can be reclaimed as in PyTorch.

Deviations from PyTorch, on purpose: ``forward``/``backward`` see raw backend
arrays (NumPy/CuPy), not Tensors, because minigrad has no higher-order
gradients; ``saved_tensors`` therefore holds arrays. ``backward`` returns one
gradient per argument of ``forward`` (``None`` for plain arguments and for
inputs that need no gradient: see ``ctx.needs_input_grad``),
must not modify ``grad`` in place, and must return new arrays or views of
``grad`` (never an array it saved: the caller may adopt what it returns as a
leaf's ``.grad``).

**Saved tensors and versions.** ``save_for_backward`` records the version of
every input/output whose buffer a saved array uses (the array itself, or a
view of it, such as conv's im2col of a 1x1 kernel); if an in-place op changes
one of them before ``backward``, reading ``ctx.saved_tensors`` raises an error
naming the node. After ``backward()`` the saved arrays are released (unless
``retain_graph=True``), so a second backward through the same nodes raises.
Inside ``saved_tensors_hooks(pack, unpack)`` (:mod:`.saved_tensors`) a node
keeps ``pack(t)`` instead of each saved array and ``saved_tensors`` returns
what ``unpack`` gives back; the version checks run all the same.

**Errors.** NumPy's errors inside ``forward`` become a ``ShapeError`` /
``DTypeError`` naming the op and its operands. When the error comes from the
user's own code (their Function, or an exercise plugged in with
``use_exercise``) it is chained (``from exc``) and the message names the
user's file and line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sysconfig
import weakref

import numpy as np

from minigrad.tensor import anomaly as _anomaly
from minigrad.tensor import bfloat16_compute as _bf16
from minigrad.tensor import hooks
from minigrad.tensor import saved_tensors as _saved_tensors
from minigrad.tensor.backend import DeviceError
from minigrad.tensor.dtypes import bfloat16
from minigrad.tensor.dispatch import OP_IMPLS as _op_impls
from minigrad.tensor.dispatch import bind_forward as _bind_forward
from minigrad.tensor.errors import DTypeError, ShapeError, describe
from minigrad.tensor.tensor import Tensor, VersionCounter, init_tensor

__all__ = [
    "Function", "AccumulateGrad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
]


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


class AccumulateGrad:
    """The graph node of a leaf that requires grad: backward adds the incoming gradient to ``variable.grad``.

    A leaf keeps its node for life (``leaf._accum``); the node refers back to the
    leaf weakly (no reference cycle), so ``variable`` is None once the leaf is gone.
    """

    __slots__ = ("_variable", "output_shape", "output_dtype", "__weakref__")
    name = "AccumulateGrad"
    op = "accumulate_grad"
    _parents = ()
    next_functions = ()

    def __init__(self, variable: Tensor) -> None:
        self._variable = weakref.ref(variable)
        self.output_shape = variable.shape
        self.output_dtype = variable.dtype

    @property
    def variable(self) -> Tensor | None:
        return self._variable()

    def __repr__(self) -> str:
        return f"<AccumulateGrad for a leaf of shape {self.output_shape}>"


class Function:
    """Base class of differentiable ops; see the module docstring for the protocol and graph walking."""

    #: ``True`` for ops whose output is a view of their first argument, a tensor (shares memory and version counter).
    is_view = False
    #: ops that the dtype policy must not touch (the cast op itself).
    skip_dtype_policy = False
    #: set by ``forward`` when the output lives on another device than the inputs (``to(device)``).
    out_device = None
    #: set on nodes of ops on bfloat16 operands: backward runs in float32 (see :mod:`.bfloat16_compute`).
    _bf16 = False

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

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__ + "Backward"
        if "op" not in cls.__dict__:
            cls.op = _snake(cls.__name__)

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
            raise RuntimeError(
                f"{ctx.name}: trying to backward through the graph a second time: the tensors it saved "
                f"were freed by the first backward(). Pass retain_graph=True to the first backward() "
                f"if you need to call backward twice, or recompute the forward pass"
            )
        for index, counter, expected, shape in ctx._checks:
            if counter.value != expected:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation (saved by {ctx.name}, shape "
                    f"{tuple(shape)}) was modified by an in-place operation: version "
                    f"{counter.value}, expected {expected}. Fix: do not modify it in place after "
                    f"using it (write x = x + y instead of x += y), or .clone() it before the in-place op"
                )
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
        """Run the op on tensors (and plain values) and, when recording, attach the node to the output."""
        if hooks.policy is not None and not cls.skip_dtype_policy:
            args = _apply_dtype_policy(cls, args)
        ctx = _new(cls)
        arrays = []
        parents = []
        device = None
        record = False
        bf16 = False
        for a in args:
            if isinstance(a, Tensor):
                data = a._data
                arrays.append(data)
                if data.dtype is bfloat16:
                    bf16 = True
                if a._requires_grad:
                    record = True
                    parents.append(a.grad_fn or a._accum or a._accumulate_grad_node())
                else:
                    parents.append(None)
                if device is None:
                    device = a._device
                elif a._device is not device:
                    raise _device_error(cls, args)
            else:
                arrays.append(a)
                parents.append(NOT_A_TENSOR)
        # a device type may have registered its own kernel for this op (minigrad.tensor.dispatch)
        forward = _bind_forward(ctx, device.type) if _op_impls and device is not None else ctx.forward
        try:
            if bf16 and _bf16.applies(arrays):  # computed in float32, rounded to bfloat16
                out = _bf16.forward(ctx, arrays, kwargs)
            else:
                out = forward(*arrays, **kwargs)
        except (ShapeError, DTypeError, DeviceError, NotImplementedError):
            raise
        except (ValueError, TypeError, IndexError) as exc:
            where = user_frame(exc.__traceback__)
            if where is None and cls.__module__.startswith("minigrad."):  # NumPy refused: our message says it all
                raise ctx.explain_error(exc, args, kwargs) from None
            # the error comes from the user's code (their Function, or an exercise plugged in with
            # use_exercise): keep their traceback and name their line
            error = ctx.explain_error(exc, args, kwargs)
            if where is not None:
                error.args = (f"{error.args[0] if error.args else ''} (raised in your code at {where})",)
            raise error from exc
        if ctx.out_device is not None:
            device = ctx.out_device
        if isinstance(out, np.generic):  # NumPy turns 0-d results into scalars; keep arrays
            out = np.asarray(out)
        if _anomaly.enabled:
            _anomaly.check_forward(cls.__name__, args, out)
        if ctx.is_view:  # the output reads its input's memory: share the version counter
            base = args[0]
            version = base._version_counter
            if base._base is not None:
                base = base._base
        else:
            version = VersionCounter()
            base = None
        if record and _GradMode.enabled:
            # the node: which nodes its inputs came from, what it produced, the versions of what it saved
            ctx._parents = tuple(parents)
            ctx.output_shape = out.shape
            ctx.output_dtype = out.dtype
            result = init_tensor(_new(Tensor), out, device, True, ctx, version, base)
            if ctx._saved:
                ctx._checks = _version_checks(ctx._saved, args, result)
                if _saved_tensors.stack:
                    _saved_tensors.pack_saved(ctx, device)
            if hooks.observers:
                ctx._device = device
                hooks.track_node(ctx, out, device)
        else:
            result = init_tensor(_new(Tensor), out, device, False, None, version, base)
            if hooks.observers:
                hooks.track(out, hooks.TEMPORARY, device)
        return result

    def explain_error(ctx, exc: Exception, args, kwargs) -> Exception:
        """Turn a NumPy error inside ``forward`` into one that names the op and its operands."""
        operands = ", ".join(describe(a) for a in args)
        options = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        text = f"{ctx.op}: cannot apply to ({operands}{options}): {exc}"
        if isinstance(exc, ValueError):
            return ShapeError(text)
        if isinstance(exc, IndexError):
            return IndexError(text)
        return DTypeError(text)


def _library_folders() -> tuple[str, ...]:
    """Folders whose files are not the user's: this package, NumPy's, the standard library and site-packages."""
    folders = {os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(np.__file__)}
    paths = sysconfig.get_paths()
    folders.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(os.path.join(os.path.realpath(f), "") for f in folders)


_LIBRARY_FOLDERS: tuple[str, ...] | None = None


def user_frame(tb) -> str | None:
    """``"file:line, in function"`` of the innermost frame of traceback ``tb`` in the user's code, or None.

    The user's code is any file outside minigrad, NumPy and the Python
    installation: a learner's exercise file plugged in with ``use_exercise``,
    a script, a notebook cell.
    """
    global _LIBRARY_FOLDERS
    if _LIBRARY_FOLDERS is None:
        _LIBRARY_FOLDERS = _library_folders()
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.realpath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
        if not path.startswith(_LIBRARY_FOLDERS) and not code.co_filename.startswith("<frozen"):
            found = f"{code.co_filename}:{tb.tb_lineno}, in {code.co_name}"
        tb = tb.tb_next
    return found


def _version_checks(saved, args, result) -> tuple:
    """(index, version counter, version now, shape) for each saved array that uses an input's or the output's buffer.

    A saved array is checked against a tensor when it *is* the tensor's data or
    shares its buffer: a view of an input (conv's im2col of a 1x1 kernel) or
    the array the output is a view of (``amax(dim)``'s kept-dims result).
    """
    checks = []
    tensors = None
    for i, array in enumerate(saved):
        if array is result._data:
            checks.append((i, result._version_counter, result._version_counter.value, array.shape))
            continue
        for a in args:
            if isinstance(a, Tensor) and a._data is array:
                checks.append((i, a._version_counter, a._version_counter.value, array.shape))
                break
        else:
            if getattr(array, "base", None) is None and not hasattr(array, "shape"):
                continue  # a number or None, not a buffer
            if tensors is None:  # (root of the buffer, tensor) for the output and every tensor input
                tensors = [(hooks._root(result._data), result)]
                tensors += [(hooks._root(a._data), a) for a in args if isinstance(a, Tensor)]
            root = hooks._root(array)
            for buffer, t in tensors:
                if buffer is root:
                    checks.append((i, t._version_counter, t._version_counter.value, array.shape))
                    break
    return tuple(checks)


def _device_error(cls, args) -> DeviceError:
    tensors = [a for a in args if isinstance(a, Tensor)]
    where = ", ".join(f"{t.shape} on {t.device}" for t in tensors)
    first = tensors[0].device
    return DeviceError(
        f"{cls.op}: expected all tensors on the same device, got {where}. "
        f"Move them with .to('{first}') (or put everything on one device before the op)"
    )


def _apply_dtype_policy(cls, args) -> tuple:
    dtypes = tuple(a._data.dtype for a in args if isinstance(a, Tensor))
    target = hooks.policy(cls.op, dtypes)
    if target is None:
        return args
    from minigrad.tensor.cast_cache import cached_cast
    from minigrad.tensor.dtypes import as_dtype, is_floating_point

    target = as_dtype(target)
    return tuple(
        cached_cast(a, target) if isinstance(a, Tensor) and is_floating_point(a._data.dtype) and a._data.dtype != target else a
        for a in args
    )

