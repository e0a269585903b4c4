"""A test-only device, ``"strict"``, whose arrays refuse to become NumPy arrays implicitly, as CuPy's do.

A library written for NumPy can call a host NumPy function on a GPU array by
accident (``np.asarray(x)``, ``np.lib.stride_tricks.as_strided(x, ...)``,
``x + host_array``). On CuPy that raises; on a machine without a GPU nobody
notices. The ``strict`` device makes it raise on every machine, so the test
suites find such calls before a GPU does. It mimics CuPy where CuPy draws the
line between device and host:

=========================================  ==========================================
works (as on CuPy)                         raises TypeError (as on CuPy)
=========================================  ==========================================
``np.exp(x)``, ``np.sum(x)``, ``np.where``  ``np.asarray(x)``, ``np.array(x)``,
  (ufuncs and ``__array_function__``          ``np.testing.*(x, ...)``,
  dispatch back to the array module)          ``np.lib.stride_tricks.as_strided(x)``
``x.item()``, ``x.tolist()``, ``float(x)``  ``x + host_ndarray``, ``x + [1, 2]``,
  on one element; ``x.get()`` (a copy)        ``np.concatenate([x, host])``
``strict_numpy.asarray(host)`` (upload)     ``x[...] = host_ndarray``,
index keys from the host (``x[host_idx]``)  ``host[...] = x``, ``memoryview(x)``
=========================================  ==========================================

``StrictArray`` is *not* an ``ndarray`` subclass (NumPy would read a subclass
without asking), it wraps one privately. ``strict_numpy`` is its array module,
as ``cupy`` is to ``numpy``: every NumPy function, returning StrictArrays;
reductions and scalar indexing give 0-d arrays, as CuPy's do. One difference
on purpose: every NumPy function works here, while CuPy lacks a few (there,
``__array_function__`` gives up and NumPy raises TypeError).

Use it in tests with ``register()`` (idempotent); the tensor and nn suites run
every test on it as well as on the CPU (see ``tests/conftest.py``).
"""

from __future__ import annotations

import types
import weakref

import numpy as np

__all__ = ["StrictArray", "strict_numpy", "StrictGenerator", "register", "unregister", "DEVICE_TYPE"]

DEVICE_TYPE = "strict"

_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed (strict test device, as on CuPy). "
    "Use the array module of the data (minigrad.tensor.array_module(x)) instead of numpy, "
    "or copy to the host explicitly: x.get() for an array, tensor.cpu() for a tensor"
)

# the StrictArray that wraps each memory-owning ndarray, so that ``view.base is owner`` holds as in NumPy
# (keyed by the ndarray's id: the StrictArray keeps its ndarray alive, so the id is not reused meanwhile)
_owners: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _memory_owner(array: np.ndarray) -> np.ndarray:
    """The last ndarray down ``array``'s chain of bases (through NumPy's as_strided helper objects too)."""
    owner, base = array, array.base
    while base is not None:
        if isinstance(base, np.ndarray):
            owner = base
        base = getattr(base, "base", None)
    return owner


def _host_operand_error(where: str, value) -> TypeError:
    return TypeError(
        f"{where}: a host numpy.ndarray (shape {value.shape}, {value.dtype}) met a strict-device array; "
        f"CuPy refuses this too. Move it to the device first (strict_numpy.asarray(a), or tensor.to(device))"
    )


def _unwrap(value, where: str):
    """The wrapped ndarray of StrictArrays (inside lists, tuples and dicts too); host ndarrays are refused."""
    kind = type(value)
    if kind is StrictArray:
        return value._a
    if kind is tuple or kind is list:
        items = [v._a if type(v) is StrictArray else _unwrap(v, where) for v in value]
        return items if kind is list else tuple(items)
    if kind is dict:
        return {k: _unwrap(v, where) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        raise _host_operand_error(where, value)
    return value


def _operands(values, where: str):
    """Operands of an operator or ufunc: StrictArrays and scalars only (CuPy refuses lists and host arrays here)."""
    for value in values:
        if type(value) in (list, tuple):
            raise TypeError(f"{where}: unsupported operand type {type(value).__name__} with a strict-device array "
                            f"(CuPy refuses it too); make it an array first: strict_numpy.asarray(...)")
    return _unwrap(values, where)


def _unwrap_key(key):
    """Index keys may be host arrays (CuPy uploads them); device arrays are unwrapped."""
    if type(key) is StrictArray:
        return key._a
    if type(key) is tuple:
        return tuple(_unwrap_key(k) for k in key)
    return key


def _wrap(value):
    """ndarrays and NumPy scalars become StrictArrays (0-d for scalars, as CuPy's reductions)."""
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if type(value) in (list, tuple):
        return type(value)(_wrap(v) for v in value)
    return value


class StrictArray:
    """An array on the strict test device: NumPy semantics, but no implicit trip to the host."""

    __slots__ = ("_a", "_owner", "__weakref__")

    def __init__(self, array: np.ndarray) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"StrictArray wraps a numpy.ndarray, got {type(array).__name__}")
        self._a = array
        root = _memory_owner(array)
        if root is array:
            _owners[id(array)] = self
            self._owner = None
        else:  # a view keeps its owner's wrapper alive, as a device view keeps its allocation
            owner = _owners.get(id(root))
            self._owner = owner if owner is not None and owner._a is root else StrictArray(root)

    # ------------------------------------------------------------------ the host boundary
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def get(self) -> np.ndarray:
        """An explicit copy on the host (``cupy.ndarray.get``)."""
        return self._a.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        where = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        for value in inputs + tuple(kwargs.get("out", ())):
            if type(value) is not StrictArray and getattr(type(value), "__array_ufunc__", 0) is None:
                return NotImplemented  # e.g. a Tensor: let its reflected operator run
        if method == "at":  # ufunc.at(array, indices, values): the indices are an index key
            args = (_unwrap(inputs[0], where), _unwrap_key(inputs[1]), *_operands(inputs[2:], where))
        else:
            args = _operands(inputs, where)
        out = kwargs.pop("out", None)
        if out is not None:
            kwargs["out"] = _unwrap(out, where)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        where = f"{func.__module__}.{func.__name__}"
        for t in types_:
            if t is not StrictArray and not issubclass(t, np.ndarray):
                return NotImplemented
        return _wrap(func(*_unwrap(args, where), **_unwrap(kwargs, where)))

    # ------------------------------------------------------------------ attributes and methods of ndarray
    def __getattr__(self, name: str):
        if name.startswith("__"):  # no __array_interface__ / __array_struct__: NumPy cannot read the memory
            raise AttributeError(name)
        if name == "data":
            raise AttributeError("StrictArray.data: device memory has no host buffer (use .get())")
        value = getattr(self._a, name)
        if not callable(value):
            return _wrap(value) if isinstance(value, np.ndarray) else value

        def method(*args, **kwargs):
            where = f"ndarray.{name}"
            return _wrap(value(*_unwrap(args, where), **_unwrap(kwargs, where)))

        return method

    @property
    def base(self):
        """The wrapper of the array that owns the memory (None for an owner), as ``view.base`` on CuPy."""
        return self._owner

    @property
    def __cuda_array_interface__(self) -> dict:
        """Where the data lives, as CuPy reports it (NumPy never reads this)."""
        iface = self._a.__array_interface__
        return {"data": iface["data"], "shape": iface["shape"], "typestr": iface["typestr"],
                "strides": iface["strides"], "version": 3}

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap_key(key)])

    def __setitem__(self, key, value) -> None:
        self._a[_unwrap_key(key)] = _unwrap(value, "StrictArray.__setitem__")

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self._a)))

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a.item()) if self._a.size == 1 else float(self._a)

    def __int__(self) -> int:
        return int(self._a.item()) if self._a.size == 1 else int(self._a)

    def __complex__(self) -> complex:
        return complex(self._a.item())

    def __repr__(self) -> str:
        return repr(self._a).replace("array(", "strict_array(", 1)

    def __str__(self) -> str:
        return str(self._a)

    def __copy__(self) -> "StrictArray":
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo) -> "StrictArray":
        return StrictArray(self._a.copy())

    def __reduce__(self):
        return (StrictArray, (self._a.copy(),))


_INPLACE = ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor")


def _operator(name: str):
    ndarray_method = getattr(np.ndarray, name)
    inplace = name.strip("_") in _INPLACE

    def op(self, *args):
        for other in args:
            if type(other) is not StrictArray and getattr(type(other), "__array_ufunc__", 0) is None:
                return NotImplemented
        result = ndarray_method(self._a, *_operands(args, f"StrictArray.{name}"))
        if result is NotImplemented:
            return result
        if inplace:  # the same object, as ndarray's in-place operators
            return self
        return _wrap(result)

    op.__name__ = name
    return op


for _name in (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod",
    "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or", "ror", "xor", "rxor", "lshift", "rshift",
    *_INPLACE, "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert",
):
    setattr(StrictArray, f"__{_name}__", _operator(f"__{_name}__"))
StrictArray.__hash__ = None


# ---------------------------------------------------------------------- the array module


_UPLOADS = {"asarray", "array", "asanyarray", "ascontiguousarray"}


class _StrictModule(types.ModuleType):
    """``numpy``'s names, working on and returning StrictArrays (``cupy`` to ``numpy``)."""

    def __init__(self, name: str, numpy_module) -> None:
        super().__init__(name)
        self._numpy = numpy_module
        self._submodules: dict[str, _StrictModule] = {}

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "ndarray":
            return StrictArray
        value = getattr(self._numpy, name)
        if isinstance(value, types.ModuleType):
            sub = self._submodules.get(name)
            if sub is None:
                sub = self._submodules[name] = _StrictModule(f"{self.__name__}.{name}", value)
            return sub
        if isinstance(value, (type, np.ufunc)) or not callable(value):
            return value  # dtypes, constants, and ufuncs (which dispatch through __array_ufunc__)
        where = f"strict_numpy.{name}"
        upload = name in _UPLOADS

        def function(*args, **kwargs):
            if upload and args and isinstance(args[0], np.ndarray):  # an explicit host -> device copy
                return StrictArray(value(args[0].copy(), *args[1:], **kwargs))
            return _wrap(value(*_unwrap(args, where), **_unwrap(kwargs, where)))

        function.__name__ = name
        return function


strict_numpy = _StrictModule("strict_numpy", np)


# ---------------------------------------------------------------------- random numbers on the device


class StrictGenerator:
    """The strict device's random generator: NumPy's PCG64 stream, drawn straight into StrictArrays.

    A seed gives the same numbers as the CPU generator, so a test seeded on one
    device can be compared with the other. ``get_state``/``set_state`` copy
    the state in and out (what ``minigrad.tensor.get_rng_state`` uses).
    """

    def __init__(self, seed: int | None = None) -> None:
        self._gen = np.random.Generator(np.random.PCG64(seed))

    def standard_normal(self, size, dtype=np.float64) -> StrictArray:
        return StrictArray(np.asarray(self._gen.standard_normal(size, dtype=dtype)))

    def random(self, size, dtype=np.float64) -> StrictArray:
        return StrictArray(np.asarray(self._gen.random(size, dtype=dtype)))

    def integers(self, low, high=None, size=None, dtype=np.int64) -> StrictArray:
        return StrictArray(np.asarray(self._gen.integers(low, high, size=size, dtype=dtype)))

    def permutation(self, n: int) -> StrictArray:
        return StrictArray(np.asarray(self._gen.permutation(n)))

    def get_state(self) -> dict:
        return self._gen.bit_generator.state

    def set_state(self, state: dict) -> None:
        self._gen.bit_generator.state = state


# ---------------------------------------------------------------------- the backend


def _to_numpy(array) -> np.ndarray:
    if type(array) is not StrictArray:
        raise TypeError(f"strict backend: expected a StrictArray, got {type(array).__name__}")
    return array.get()


def _from_numpy(array, index=None) -> StrictArray:
    return StrictArray(np.array(array, copy=True))


def register():
    """Register the ``"strict"`` device type (again is fine); returns its device."""
    from minigrad.tensor.backend import Backend, device, register_backend, registered_backends

    if DEVICE_TYPE not in registered_backends():
        register_backend(Backend(
            DEVICE_TYPE, strict_numpy, (StrictArray,), _to_numpy, _from_numpy, default_index=0,
            make_generator=lambda seed, index=None: StrictGenerator(seed),
        ))
    return device(DEVICE_TYPE)


def unregister() -> None:
    from minigrad.tensor.backend import unregister_backend

    unregister_backend(DEVICE_TYPE)
