"""``autocast``: run each op of a region in the dtype PyTorch's op lists give it; a context manager and a decorator.

::

    model = MLP()                                   # float32 parameters: the master weights
    with autocast("cpu", dtype=mt.bfloat16):        # PyTorch's default on the CPU is bfloat16
        logits = model(x)                           # linear/matmul/conv in bfloat16
        loss = F.cross_entropy(logits, y)           # the loss in float32
    loss.backward()                                 # float32 gradients for the float32 weights

    @autocast("cuda")                               # float16 on CUDA by default
    def forward(x): ...

It is built on the core's dtype-policy slot (:mod:`.autocast_policy` is the
policy); nothing in the core knows about it.

Invariants (PyTorch's)
- Each region sets this thread's state for its device type on entry and
  restores the previous state on exit, also when the block raises; an
  ``enabled=False`` region inside an enabled one turns autocast off for its
  duration only. Another thread is unaffected.
- Tensors created inside a region (factories, ``tensor()``) keep the dtype
  they are given; only ops cast.
- The weight-cast cache lives from the entry of this thread's outermost
  region to its exit: one cast per parameter per region.
- A dtype autocast does not support on that device warns and disables the
  region (PyTorch: bfloat16 and float16 on the CPU and CUDA).
- The policy slot holds the autocast policy while any thread has a region
  open, and whatever it held before once none has.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings

from minigrad.amp import autocast_policy as policy, autocast_state
from minigrad.amp.autocast_state import DEFAULT_DTYPES, AutocastMode
from minigrad.amp.cast_cache import weight_cast_cache
from minigrad.tensor import bfloat16, float16, get_dtype_policy, set_dtype_policy
from minigrad.tensor.dtypes import as_dtype

__all__ = ["autocast"]

_SUPPORTED = (float16, bfloat16)
_slot_lock = threading.Lock()
_open_regions = 0  # in all threads
_policy_before = None


def _install() -> None:
    global _open_regions, _policy_before
    with _slot_lock:
        if _open_regions == 0:
            _policy_before = get_dtype_policy()
            set_dtype_policy(policy.autocast_policy)  # looked up here: use_exercise may have swapped it
        _open_regions += 1


def _uninstall() -> None:
    global _open_regions, _policy_before
    with _slot_lock:
        _open_regions -= 1
        if _open_regions == 0:
            set_dtype_policy(_policy_before)
            _policy_before = None


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=True)``; see the module docstring."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool = True) -> None:
        if not isinstance(device_type, str) or device_type not in DEFAULT_DTYPES:
            raise ValueError(
                f"autocast: device_type={device_type!r} is not supported; use 'cpu' or 'cuda' "
                f"(the type of the tensors' device, without an index)"
            )
        self.device_type = device_type
        self.fast_dtype = DEFAULT_DTYPES[device_type] if dtype is None else as_dtype(dtype)
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED:
            warnings.warn(
                f"In {device_type} autocast, but the target dtype {self.fast_dtype} is not supported. Disabling "
                f"autocast. Autocast supports float16 and bfloat16.", UserWarning, stacklevel=2,
            )
            self._enabled = False
        self._cache_enabled = bool(cache_enabled)
        self._saved: list = []  # one entry per entry into this object (re-entrant, e.g. recursion)

    def __enter__(self):
        new = AutocastMode(self._enabled, self.fast_dtype, self._cache_enabled)
        previous = autocast_state.set_mode(self.device_type, new)
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(weight_cast_cache())
            _install()
            stack.callback(_uninstall)
        except BaseException:
            stack.close()
            autocast_state.set_mode(self.device_type, previous)
            raise
        autocast_state.state.depth += 1
        self._saved.append((previous, stack))
        return self

    def __exit__(self, *exc) -> None:
        previous, stack = self._saved.pop()
        autocast_state.state.depth -= 1
        try:
            stack.close()
        finally:
            autocast_state.set_mode(self.device_type, previous)

    def __call__(self, fn):
        @functools.wraps(fn)
        def run_in_region(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return run_in_region

    def __repr__(self) -> str:
        return (f"autocast({self.device_type!r}, dtype={self.fast_dtype}, enabled={self._enabled}, "
                f"cache_enabled={self._cache_enabled})")
