"""The same kernel source for the real GPU: hand it to ``cupyx.jit`` with minigrad's names swapped for CuPy's.

A kernel refers to ``jit.threadIdx``, ``jit.syncthreads`` and so on, where
``jit`` is :mod:`minigrad.gpu.jit`. ``cupyx.jit`` transpiles a function by
reading its source and looking up the names it uses in the function's
globals and closure, and only understands its own objects. So for the GPU
the kernel gets a copy of its function object (same code, same source) whose
globals and closure map every object of minigrad's dialect (the table in
``dialect.py``, which ``jit`` exports) to the ``cupyx.jit`` object of the
same name, e.g. ``jit`` -> ``cupyx.jit`` and ``threadIdx`` ->
``cupyx.jit.threadIdx``, and each device function it calls to that
function's ``cupyx.jit`` compilation. The math functions of minigrad's jit
(``jit.exp``...) become CuPy's ufuncs, which ``cupyx.jit`` calls on scalars:
``jit`` itself maps to a copy of ``cupyx.jit`` that also holds them. CuPy is
imported here only, and only when used.
"""

from __future__ import annotations

import importlib
import types
import warnings

from minigrad.gpu import dialect
from minigrad.gpu.dialect import KERNEL_NAMES, MATH_NAMES, DeviceFunction
from minigrad.gpu.errors import KernelError, KernelSourceError

_INSTALL = 'pip install "minigrad[gpu]" (NVIDIA GPU with CUDA 12)'


def import_cupyx_jit():
    """``cupyx.jit``, or an ImportError saying how to install it and that the simulator needs none of it."""
    try:
        return importlib.import_module("cupyx.jit")
    except ImportError as exc:
        raise ImportError(
            f"running a kernel on the GPU needs CuPy, which is not installed ({exc}); {_INSTALL}. "
            f"Without it, launch the kernel with NumPy arrays to run it on minigrad's simulator."
        ) from exc


# Kernels reach most names through the module they import them from (``jit.threadIdx``): that module,
# known here by its name (it imports this one), becomes cupyx.jit.
_JIT_MODULE = "minigrad.gpu.jit"
# The dialect's objects by identity; plain numbers (warpsize) stay as they are: 32 is 32 in both.
_NAMES = {id(getattr(dialect, name)): name for name in (*KERNEL_NAMES, *MATH_NAMES)
          if not isinstance(getattr(dialect, name), int)}
_GPU_JIT: list = []
_DEVICE_FUNCTIONS: dict[DeviceFunction, object] = {}
_BUILDING: set = set()  # device functions whose translation is under way (a recursive one meets itself)


def _translated(value, theirs):
    """``value`` with any object of minigrad's dialect replaced by its cupyx.jit counterpart."""
    if isinstance(value, types.ModuleType) and value.__name__ == _JIT_MODULE:
        return _gpu_jit(theirs)
    if isinstance(value, DeviceFunction):
        return cupy_device_function(value)
    name = _NAMES.get(id(value))
    return value if name is None else getattr(_gpu_jit(theirs), name)


def _gpu_jit(theirs):
    """``cupyx.jit`` plus CuPy's ufuncs under the names of minigrad's math functions (``jit.exp`` -> ``cupy.exp``)."""
    if not _GPU_JIT:
        import cupy

        namespace = types.ModuleType(theirs.__name__, theirs.__doc__)
        namespace.__dict__.update(vars(theirs))
        for name in MATH_NAMES:
            setattr(namespace, name, getattr(cupy, name))
        _GPU_JIT.append(namespace)
    return _GPU_JIT[0]


def _translated_cell(cell, theirs):
    try:
        return types.CellType(_translated(cell.cell_contents, theirs))
    except ValueError:  # an empty cell (a variable not yet assigned) stays empty
        return cell


def cupy_function(func):
    """A copy of ``func`` whose globals and closure point at ``cupyx.jit`` instead of ``minigrad.gpu.jit``."""
    theirs = import_cupyx_jit()
    missing = [name for name in ("rawkernel", *KERNEL_NAMES) if not hasattr(theirs, name)]
    if missing:
        raise KernelError(f"this CuPy's cupyx.jit lacks {', '.join(missing)}; upgrade CuPy (cupy-cuda12x>=13)")
    used = set(func.__code__.co_names)
    namespace = dict(func.__globals__)
    for name in used & namespace.keys():
        namespace[name] = _translated(namespace[name], theirs)
    closure = tuple(_translated_cell(cell, theirs) for cell in (func.__closure__ or ()))
    copy = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__, closure or None)
    copy.__module__ = func.__module__
    copy.__qualname__ = func.__qualname__
    return copy


def cupy_kernel(func):
    """The ``cupyx.jit.rawkernel`` of ``func``, ready to launch on CuPy arrays."""
    return _cupyx_rawkernel(func, device=False)


def cupy_device_function(helper: DeviceFunction):
    """The ``cupyx.jit.rawkernel(device=True)`` of a device function, for kernels that call it (made once)."""
    if helper not in _DEVICE_FUNCTIONS:
        if helper in _BUILDING:
            raise KernelSourceError(
                f"device function '{helper.name}' calls itself; cupyx.jit does not support recursion: "
                f"write it as a loop"
            )
        _BUILDING.add(helper)
        try:
            _DEVICE_FUNCTIONS[helper] = _cupyx_rawkernel(helper.func, device=True)
        finally:
            _BUILDING.discard(helper)
    return _DEVICE_FUNCTIONS[helper]


def _cupyx_rawkernel(func, device: bool):
    theirs = import_cupyx_jit()
    with warnings.catch_warnings():  # "cupyx.jit.rawkernel is experimental": known, and pinned in pyproject
        warnings.simplefilter("ignore", FutureWarning)
        return theirs.rawkernel(device=device)(cupy_function(func))
