"""The caching allocator: PyTorch's CUDA allocator rebuilt on a model of device memory, and traces to run through it.

The allocator knows requests only as sizes and addresses, never tensors: the
size rules (``sizes.py``), segments cut into blocks (``blocks.py``), the
pools of free blocks (``pools.py``) and the fit policies that search them
(``policies.py``) come together in ``CachingAllocator``
(``caching_allocator.py``), which reserves its segments from a
``DeviceMemory`` (``device.py``) and counts in ``torch.cuda.memory_stats()``'s
shape (``stats.py``). A trace is a list of allocations and frees: ``replay``
runs one under a policy (``trace_replay.py``), ``record_trace`` records one
from real training steps (``trace_recording.py``), and
``CupyCachingAllocator`` serves CuPy's arrays on a GPU from the allocator
(``cupy_allocator.py``). The rest of :mod:`minigrad.memory` (the simulated
cards, their out-of-memory report) builds on this package; nothing here
imports it.
"""

from minigrad.memory.allocator.caching_allocator import AllocatorOutOfMemoryError, CachingAllocator
from minigrad.memory.allocator.cupy_allocator import CupyCachingAllocator
from minigrad.memory.allocator.trace_recording import (
    compare_policies_on_training_step, record_trace, record_training_step,
)
from minigrad.memory.allocator.trace_replay import ReplayResult, TraceError, compare_policies, replay, replay_states

__all__ = [
    "AllocatorOutOfMemoryError", "CachingAllocator", "CupyCachingAllocator", "ReplayResult", "compare_policies",
    "compare_policies_on_training_step", "record_trace", "record_training_step", "replay", "replay_states", "TraceError",
]
