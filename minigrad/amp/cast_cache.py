"""The weight-cast cache: inside one mixed-precision region, each weight is cast once.

Under autocast (``minigrad.amp``, built on the core's dtype-policy slot)
every op casts its float32 operands to float16 or bfloat16 before computing.
A weight used by several ops (a tied embedding, an RNN cell applied at every
time step, the same layer called twice) would be cast once per use: the same
work and a new low-precision copy each time. PyTorch's autocast keeps the cast
copy of each parameter for the rest of the region; this module is that cache::

    with weight_cast_cache() as cache:       # autocast opens one per region
        a = cached_cast(w, bfloat16)          # cast (recorded: gradients reach w)
        b = cached_cast(w, bfloat16)          # the same tensor, no second cast
    # leaving the outermost region empties the cache

Invariants
- Only leaves that require grad (parameters) are cached; anything else is
  cast on every call (an activation is used once, and keeping it would keep
  it alive).
- An entry is keyed by the source tensor's identity, its version counter,
  the target dtype and whether autograd records: an in-place change of the
  weight (``optimizer.step()``, ``w.mul_(2)``) bumps its version, so the next
  use casts again; a copy cast under ``no_grad()`` is never handed out where
  gradients must flow.
- Regions nest; the inner ones share the outermost region's cache. Regions
  belong to a thread (as PyTorch's autocast cache): another thread has its own.
- :func:`~minigrad.amp.casting_policy.casting_policy` casts through
  :func:`cached_cast`, so a policy gets the cache just by running inside
  :func:`weight_cast_cache`.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

from minigrad.tensor import Tensor, cast, is_grad_enabled
from minigrad.tensor.dtypes import as_dtype

__all__ = ["WeightCastCache", "weight_cast_cache", "cached_cast", "active_cache"]


class WeightCastCache:
    """The casts made in one region: ``hits`` (casts saved) and ``misses`` (casts made) count the cached calls."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def cast(self, source: Tensor, dtype) -> Tensor:
        """``source`` cast to ``dtype``, reusing this region's copy while ``source`` is unchanged."""
        key = (id(source), dtype, is_grad_enabled())
        entry = self._entries.get(key)
        if entry is not None:
            ref, data, version, result = entry
            if ref() is source and data is source._data and version == source._version_counter.value:
                self.hits += 1
                return result
        result = cast(source, dtype)
        self.misses += 1
        self._entries[key] = (weakref.ref(source), source._data, source._version_counter.value, result)
        return result

    def clear(self) -> None:
        self._entries.clear()


class _Regions(threading.local):
    def __init__(self) -> None:
        self.open: list[WeightCastCache] = []  # this thread's open regions, outermost first


_regions = _Regions()


def active_cache() -> WeightCastCache | None:
    """The cache of this thread's outermost open region, or None outside :func:`weight_cast_cache`."""
    regions = _regions.open
    return regions[0] if regions else None


@contextmanager
def weight_cast_cache():
    """Cache the casts of weights made inside the block; the cache is emptied when the outermost block ends."""
    regions = _regions.open
    cache = regions[0] if regions else WeightCastCache()
    regions.append(cache)
    try:
        yield cache
    finally:
        regions.pop()
        if not regions:
            cache.clear()


def cached_cast(x: Tensor, dtype) -> Tensor:
    """``x`` cast to ``dtype`` (differentiable), from the region's cache when ``x`` is a parameter-like leaf."""
    dtype = as_dtype(dtype)
    if x._data.dtype == dtype:
        return x
    regions = _regions.open
    if regions and x._requires_grad and x.grad_fn is None:
        return regions[0].cast(x, dtype)
    return cast(x, dtype)
