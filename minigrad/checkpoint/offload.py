"""``save_on_cpu()``: keep what backward needs in host memory, not on the device, and bring it back when it is needed.

As ``torch.autograd.graph.save_on_cpu``, built on the core's saved-tensor
hooks (:mod:`minigrad.tensor.saved_tensors`)::

    with save_on_cpu(card="gtx1050") as offload:
        loss = loss_fn(model(x), y)   # every saved tensor is copied to the host; the device copy can go
    loss.backward()                   # each one is copied back to its device when its node needs it
    print(offload.summary())          # bytes moved each way, and the time they take over the card's PCIe link

Where offloading stands between storing and recomputing: it frees the same
device memory as checkpointing but pays in transfers instead of FLOPs, each
saved byte crossing the PCIe link twice (:mod:`.chain_costs` compares the two
per layer and per card).

Invariants
- ``pack`` copies the saved tensor into a host NumPy array and returns it in
  a small holder (not an array, so the memory registry does not count it as
  device memory: host memory is not the card's). The node keeps the holder;
  the device buffer goes when nothing else uses it.
- A buffer two nodes save (a ReLU's output, which the next Linear saves as
  its input) is copied once while its first copy lives and it has not been
  modified in place (same array, same version): the host holds it once and
  it crosses the bus once each way per unpack. PyTorch's ``save_on_cpu``
  copies it once per node.
- ``unpack`` copies the host array back to the tensor's device, into a new
  buffer counted as an activation again, and keeps the host copy (a second
  ``backward(retain_graph=True)`` unpacks it again).
- The values are copied exactly: gradients are bitwise those without offloading.
- Devices: on ``"cuda"`` (CuPy) the copies really cross the bus
  (``pin_memory=True``: into page-locked host memory, which the GPU copies
  from directly); on the CPU device host and device are the same memory, so
  the copies are real but the bus is modelled; the strict test device copies
  through its explicit ``get()`` as CuPy would.
- ``card`` (a profile name or :class:`~minigrad.memory.profiles.GPUProfile`)
  models the time: bytes / the card's PCIe bandwidth, each direction, at the
  link's theoretical rate and not overlapped with compute (a real run on
  CUDA streams can hide part of it).
- Everything a node saves is moved, parameters included (a Linear saves its
  weight), as PyTorch's ``save_on_cpu`` does; the weights' copies add
  transfers and, in backward, a short-lived device copy each.
- One ``with`` at a time per object (re-entering an active one raises); the
  figures add up over successive ``with`` blocks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from minigrad.memory import allocation_tag, format_bytes, get_profile
from minigrad.tensor import saved_tensors_hooks
from minigrad.tensor.tensor import make_tensor

__all__ = ["save_on_cpu", "OffloadSummary"]


@dataclass(frozen=True)
class OffloadSummary:
    """What a :class:`save_on_cpu` block moved, and (with a card) how long the moves take over its link."""

    tensors: int  # saved tensors packed to the host
    copies: int  # host copies made (a buffer two nodes save is copied once)
    bytes_offloaded: int  # device -> host
    bytes_restored: int  # host -> device (more than offloaded after a second backward over the same graph)
    host_bytes: int  # held on the host now
    peak_host_bytes: int
    card: str | None = None
    pcie_gb_s: float | None = None

    @property
    def offload_seconds(self) -> float | None:
        return None if self.pcie_gb_s is None else self.bytes_offloaded / (self.pcie_gb_s * 1e9)

    @property
    def restore_seconds(self) -> float | None:
        return None if self.pcie_gb_s is None else self.bytes_restored / (self.pcie_gb_s * 1e9)

    @property
    def transfer_seconds(self) -> float | None:
        """Both directions, one after the other: bytes / link bandwidth."""
        return None if self.pcie_gb_s is None else self.offload_seconds + self.restore_seconds

    def __str__(self) -> str:
        text = (f"save_on_cpu: {self.tensors} saved tensors in {self.copies} host copies, "
                f"{format_bytes(self.bytes_offloaded)} to the host, "
                f"{format_bytes(self.bytes_restored)} back; host holds {format_bytes(self.host_bytes)} "
                f"(peak {format_bytes(self.peak_host_bytes)})")
        if self.pcie_gb_s is not None:
            text += (f"; over the {self.card}'s PCIe link ({self.pcie_gb_s:g} GB/s per direction): "
                     f"{self.offload_seconds * 1e3:.3f} ms out + {self.restore_seconds * 1e3:.3f} ms back")
        return text


class _HostCopy:
    """A saved tensor's values on the host, and the device they go back to. Not an array: the registry skips it."""

    __slots__ = ("array", "device", "ledger", "source", "version", "__weakref__")

    def __init__(self, array, device, ledger: "save_on_cpu", source, version: int) -> None:
        self.array, self.device, self.ledger = array, device, ledger
        self.source, self.version = source, version  # a weak reference to the device array copied, and its version
        ledger._host_bytes += array.nbytes
        ledger._peak_host_bytes = max(ledger._peak_host_bytes, ledger._host_bytes)

    def __del__(self) -> None:
        self.ledger._host_bytes -= self.array.nbytes


class save_on_cpu:
    """Inside the ``with`` block, tensors saved for backward live in host memory until backward needs them.

    ``pin_memory``: page-locked host buffers on CUDA (faster copies; ignored on
    other devices). ``card``: a GPU profile whose PCIe link models the
    transfer time in :meth:`summary` (None: bytes only).
    """

    def __init__(self, pin_memory: bool = False, card=None) -> None:
        if not isinstance(pin_memory, (bool, np.bool_)):
            raise TypeError(f"save_on_cpu: pin_memory must be True or False, got {pin_memory!r}")
        self.pin_memory = bool(pin_memory)
        self.card = None if card is None else get_profile(card)
        if self.card is not None and self.card.pcie_gb_s is None:
            raise ValueError(f"save_on_cpu: the profile {self.card.short_name!r} has no PCIe bandwidth to model the "
                             "transfers with; give it one: GPUProfile(..., pcie_gb_s=15.75) for PCIe 3.0 x16")
        self._hooks = saved_tensors_hooks(self._pack, self._unpack)
        self._active = False
        self._copies: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(device array) -> its copy
        self._tensors = self._copied = self._offloaded = self._restored = 0
        self._host_bytes = self._peak_host_bytes = 0

    def __enter__(self) -> "save_on_cpu":
        if self._active:
            raise RuntimeError("save_on_cpu: this context is already active; nest a new save_on_cpu() instead")
        self._hooks.__enter__()
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        self._active = False
        self._hooks.__exit__(*exc)

    # ------------------------------------------------------------------ the hooks

    def _pack(self, t) -> _HostCopy:
        array, version = t._data, t._version_counter.value
        self._tensors += 1
        packed = self._copies.get(id(array))
        if packed is not None and packed.source() is array and packed.version == version:
            return packed  # a buffer another node saved, unchanged since: its copy serves both
        host = _to_host(array, t._device, self.pin_memory)
        self._copied += 1
        self._offloaded += host.nbytes
        packed = _HostCopy(host, t._device, self, weakref.ref(array), version)
        self._copies[id(array)] = packed
        return packed

    def _unpack(self, packed: _HostCopy):
        self._restored += packed.array.nbytes
        with allocation_tag("activation"):  # back on the device, what a node saved for backward again
            return make_tensor(_to_device(packed.array, packed.device), packed.device)

    # ------------------------------------------------------------------ figures

    def summary(self) -> OffloadSummary:
        card = self.card
        return OffloadSummary(self._tensors, self._copied, self._offloaded, self._restored, self._host_bytes,
                              self._peak_host_bytes, None if card is None else card.name,
                              None if card is None else card.pcie_gb_s)

    def __repr__(self) -> str:
        return f"<{self.summary()}>"


def _to_host(array, device, pin_memory: bool) -> np.ndarray:
    """A host NumPy copy of a device array (a copy on the CPU too: the device buffer may then go)."""
    if device.type == "cpu":
        return np.array(array, copy=True, order="K")  # the same memory layout: BLAS takes the same path
    if device.type == "cuda":  # CuPy: into a host array of the same layout, page-locked if asked
        import cupyx  # present wherever "cuda" arrays are

        order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
        host = (cupyx.empty_pinned(array.shape, array.dtype, order=order) if pin_memory
                else np.empty(array.shape, array.dtype, order=order))
        device.backend.xp.asarray(array, order=order).get(out=host)
        return host
    return device.backend.to_numpy(array)


def _to_device(host: np.ndarray, device):
    """A new device array holding ``host``'s values."""
    if device.type == "cpu":
        return host.copy(order="K")
    return device.backend.from_numpy(host, device.index)
