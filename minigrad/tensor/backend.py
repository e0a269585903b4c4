"""Devices and the backends that hold their arrays.

A *backend* is an array library that can store a tensor's data: NumPy for the
CPU here; ``minigrad.gpu`` registers CuPy for ``"cuda"`` later, without
touching this stage. A *device* names one place where arrays live, such as
``cpu`` or ``cuda:0``. Every tensor records its device; an op whose tensor
operands sit on different devices raises a :class:`DeviceError` that says how
to move one of them (``x.to("cuda")``).

The ops are written against the array API that NumPy and CuPy share (methods
and operators on arrays, ufuncs such as ``np.exp`` that dispatch to CuPy
through ``__array_ufunc__``). Where an op needs a module-level function it asks
:func:`array_module` for the module of its data.

Invariants
- ``device(spec)`` returns the same ``Device`` object for equal specs, so
  devices can be compared with ``is`` on the hot path.
- ``cpu`` is always registered, as NumPy; it is the default device (where
  factories put tensors without ``device=``) unless ``set_default_device``
  names another.
- ``Backend.make_generator`` gives the device its own random generator
  (:mod:`~minigrad.tensor.rng`); per-op kernels of a device type are
  registered in :mod:`~minigrad.tensor.dispatch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = [
    "Backend", "Device", "DeviceError", "register_backend", "unregister_backend",
    "get_backend", "registered_backends", "device", "array_module", "transfer", "cpu",
    "set_default_device", "get_default_device", "register_backend_loader", "root_array",
]


class DeviceError(RuntimeError):
    """Tensors on different devices met in one op, or a device is unknown."""


@dataclass
class Backend:
    """What minigrad needs from an array library to keep tensors on a device type.

    ``name``: the device type (``"cpu"``, ``"cuda"``); ``xp``: the array module
    (``numpy``, ``cupy``); ``array_types``: the array classes it produces;
    ``to_numpy(array)`` copies to a NumPy array on the host;
    ``from_numpy(array, index)`` copies a NumPy array onto device ``index``;
    ``synchronize(index)`` waits for queued work (a no-op on the CPU);
    ``make_generator(seed, index)`` makes the device's random generator (see
    :mod:`~minigrad.tensor.rng`; None: draw on the host and copy over).
    """

    name: str
    xp: Any
    array_types: tuple = ()
    to_numpy: Callable[[Any], np.ndarray] = np.asarray
    from_numpy: Callable[[np.ndarray, int | None], Any] = lambda a, index=None: a
    synchronize: Callable[[int | None], None] = field(default=lambda index=None: None)
    default_index: int | None = None
    make_generator: Callable[[int | None, int | None], Any] | None = None


@dataclass(frozen=True, eq=False)
class Device:
    """A place where arrays live: a device type and, for accelerators, an index."""

    type: str
    index: int | None = None

    @property
    def backend(self) -> Backend:
        return get_backend(self.type)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type={self.type!r}" + ("" if self.index is None else f", index={self.index}") + ")"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except DeviceError:
                return False
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self):
        # one Device object per (type, index): copies and unpickled devices are the shared one
        return (device, (str(self),))

    def __copy__(self) -> "Device":
        return self

    def __deepcopy__(self, memo) -> "Device":
        return self


_BACKENDS: dict[str, Backend] = {}
_DEVICES: dict[tuple[str, int | None], Device] = {}
_XP_BY_TYPE: dict[type, Any] = {}
_LOADERS: dict[str, Callable[[], None]] = {}


def register_backend(backend: Backend) -> None:
    """Make ``backend.name`` a device type that tensors can live on (``x.to(name)``)."""
    _BACKENDS[backend.name] = backend
    for array_type in backend.array_types:
        _XP_BY_TYPE.setdefault(array_type, backend.xp)


def unregister_backend(name: str) -> None:
    """Remove a backend registered with :func:`register_backend` (tests use this); cpu stays."""
    if name == "cpu":
        raise DeviceError("the cpu backend cannot be unregistered")
    backend = _BACKENDS.pop(name, None)
    if backend is not None:
        for array_type in backend.array_types:
            if _XP_BY_TYPE.get(array_type) is backend.xp and array_type is not np.ndarray:
                del _XP_BY_TYPE[array_type]
    for key in [k for k in _DEVICES if k[0] == name]:
        del _DEVICES[key]
    global _default_device
    if _default_device.type == name:
        _default_device = cpu


def register_backend_loader(name: str, loader: Callable[[], None] | None) -> None:
    """Let device type ``name`` be registered on first use: ``loader()`` registers it or raises a DeviceError.

    A later stage uses this to register a device whose library is costly to
    import or may be missing (``minigrad.gpu`` and CuPy for ``"cuda"``): the
    import happens when a tensor first asks for the device, and the loader's
    error says what is missing. ``None`` removes the loader.
    """
    if loader is None:
        _LOADERS.pop(name, None)
    else:
        _LOADERS[name] = loader


def get_backend(name: str) -> Backend:
    backend = _BACKENDS.get(name)
    if backend is not None:
        return backend
    loader = _LOADERS.get(name)
    if loader is not None:
        loader()  # registers the backend, or raises a DeviceError saying why it cannot
        if name in _BACKENDS:
            return _BACKENDS[name]
    known = ", ".join(sorted(_BACKENDS))
    hint = " (import minigrad.gpu and install CuPy: pip install minigrad[gpu])" if name == "cuda" else ""
    raise DeviceError(f"unknown device type {name!r}; registered: {known}{hint}")


def registered_backends() -> tuple[str, ...]:
    return tuple(_BACKENDS)


def device(spec) -> Device:
    """``device("cpu")``, ``device("cuda:1")``, ``device(other_device)`` -> the one ``Device`` object for it."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"device must be a string like 'cpu' or 'cuda:0' or a Device, got {spec!r}")
    name, _, index = spec.partition(":")
    backend = get_backend(name)
    if index:
        if not index.isdigit():
            raise DeviceError(
                f"bad device {spec!r}: the index after ':' must be a whole number >= 0, as in "
                f"'{name}:0' (or '{name}' for the default one)"
            )
        idx: int | None = int(index)
    else:
        idx = backend.default_index
    key = (name, idx)
    dev = _DEVICES.get(key)
    if dev is None:
        dev = _DEVICES[key] = Device(name, idx)
    return dev


def array_module(array) -> Any:
    """The array module (``numpy``, ``cupy``) that works on ``array``."""
    return _XP_BY_TYPE.get(type(array), np)


def transfer(array, src: Device, dst: Device):
    """Copy ``array`` from device ``src`` to ``dst`` (through host memory); the same array if they match."""
    if src is dst:
        return array
    host = src.backend.to_numpy(array)
    out = dst.backend.from_numpy(host, dst.index)
    return out.copy() if out is array else out


register_backend(Backend("cpu", np, (np.ndarray,), np.asarray, lambda a, index=None: a))
cpu = device("cpu")
_default_device = cpu


def set_default_device(spec) -> None:
    """Where factories (``zeros``, ``randn``, ``tensor(...)``) put tensors when no ``device=`` is given.

    As ``torch.set_default_device``; ``cpu`` unless changed. ``from_numpy``
    stays on the CPU (it shares the NumPy array's memory).
    """
    global _default_device
    _default_device = device(spec)


def get_default_device() -> Device:
    return _default_device


def root_array(array):
    """The array that owns the memory ``array`` looks at (``array`` itself if it owns it).

    Follows ``.base`` through objects of other types too: NumPy's ``as_strided``
    views hang off a helper object whose ``.base`` is the array they read.
    """
    kind = type(array)
    base = array.base
    while base is not None:
        if type(base) is kind:
            array = base
        base = getattr(base, "base", None)
    return array
