"""Stage 5 (chapter 08): where memory goes - and a caching allocator, built the way production ones are.

``track()`` counts every byte of a training step while it runs: ``current``,
``peak``, the split by category (parameter, gradient, optimizer_state,
activation, temporary, input, other) now and at the peak, a timeline of
allocations with the phases forward / backward / optimizer, and the bytes
each module's forward saved for backward (``by_module()``), with CuPy's
pool (GPU) beside it, and tracemalloc (CPU) with ``track(ground_truth=True)``
(off by default: it costs about +45 % per MLP step, the tracker alone about
+8 %). Every figure comes from one function, ``counting.count_events``: the
stream of allocation events in, the live bytes by category, the peak and
its split out (exercise 8.5).

``estimate(model, input_shape, batch_size, optimizer=...)`` gives a training
step's memory by category and its peak, for any batch size, from three small
measured batches extrapolated exactly; ``get_profile("gtx1050")`` and
``profiles_table()`` describe consumer GPUs, so ``Estimate.fits(profile)``
says whether a configuration fits a card - in reserved bytes, the step's
allocations replayed through the card's caching allocator, as the simulated
card decides.

``CachingAllocator`` hands out blocks carved from cached segments, with
PyTorch's size rules (512-byte rounding, a small pool of 2 MiB segments and
a large pool), best-fit or first-fit, splitting and coalescing,
``empty_cache()``, statistics shaped like ``torch.cuda.memory_stats()`` and a
fragmentation figure. ``replay(trace, policy)`` runs a recorded sequence of
allocations through it; ``record_trace`` records one from real code, and
``compare_policies_on_training_step()`` prints both policies' figures on a
recorded training step.

Reading order
-------------
Tracking, then the allocator from the rules up (1,897 lines in all):

1. ``categories.py`` (40 lines): the seven memory categories and which buffer tag falls into which.
2. ``storage.py`` (48 lines): the bytes a set of tensors holds, each buffer once (exercise 8.1).
3. ``step_arithmetic.py`` (50 lines): a Linear + ReLU MLP's step memory by category, from shapes (exercise 8.2).
4. Tracking, from the bottom up:

   - ``buffers.py`` (192 lines): the heart of it: a buffer is seen once (keyed by the array that owns
     the memory, so views add nothing) and known freed (a weak reference reports it when the last user goes).
   - ``listeners.py`` (245 lines): which event of the core, ``nn`` and ``optim`` gives a buffer which tag,
     listened to only while something observes.
   - ``counting.py`` (113 lines): the tracker's engine: allocation events in, live bytes by category, the peak
     and its split out (exercise 8.5).
   - ``tracker.py`` (477 lines): ``track()``: the events counted by ``counting``, phases, bytes saved per module.
5. ``timeline.py`` (100 lines): the timeline's rows and their running totals per category.
6. ``allocator/sizes.py`` (72 lines): rounding, the two pools, segment sizes, when to split (exercise 8.6).
7. ``allocator/blocks.py`` (69 lines): segments and the blocks that tile them.
8. ``allocator/pools.py`` (40 lines): a pool's free blocks, sorted by size and by address.
9. ``allocator/policies.py`` (37 lines): best fit and first fit.
10. ``allocator/caching_allocator.py`` (255 lines): ``malloc``, ``free`` with coalescing (exercises 8.3 split, 8.4 coalesce),
    ``empty_cache``, the capacity and its out-of-memory error.
11. ``allocator/trace_replay.py`` (159 lines): replaying a trace under a policy (malformed events refused), its states along the way.

Extensions (not on the reading path)
------------------------------------
What the tracking files build on:

- ``phases.py`` (97 lines): the phases of a step and the module running, from module and optimizer hooks.
- ``scratch.py`` (157 lines): an optimizer update's scratch memory, counted per update rule and held as one block.

Estimating a step's memory, and the cards it must fit:

- ``estimate.py`` (423 lines): ``estimate()`` and the ``Estimate`` it returns; why measuring three batches
  (and checking a fourth) is exact.
- ``estimate_law.py`` (157 lines): the affine law on every event of the step, checked on four batches, and the
  step's allocation sequence it yields.
- ``estimate_recording.py`` (338 lines): recording a training step's memory events at a small batch size.
- ``fit.py`` (130 lines): will it fit, in reserved bytes: the step's allocations replayed through the card's allocator.
- ``card_check.py`` (95 lines): one step on a simulated card, the answer every fit figure must agree with.
- ``profiles.py`` (210 lines): eight consumer GPUs (memory, bandwidth, non-tensor and tensor throughput, CUDA
  context), with sources.
- ``accumulation.py`` (188 lines): peak and reserved bytes against micro-batch size at one effective batch
  (gradient accumulation), and the fewest micro-batches that fit a card.
- ``owned.py`` (36 lines): the tensors a model or optimizer owns, with the tag each is counted under.
- ``ground_truth.py`` (68 lines): tracemalloc's and CuPy's pool's peaks, shown beside the tracker's.

A consumer card's budget, enforced:

- ``simulated_gpu.py`` (265 lines): ``simulated_gpu("gtx1050")``: a card's usable memory enforced through the caching allocator on every buffer.
- ``oom_report.py`` (152 lines): ``OutOfMemoryError`` and its report: categories, fragmentation, the segment it needed, largest tensors, ranked savings.

The allocator's support:

- ``allocator/__init__.py`` (28 lines): the allocator's package and the names it exports.
- ``allocator/device.py`` (50 lines): the device's ``malloc``/``free`` the allocator reserves segments from.
- ``allocator/stats.py`` (88 lines): the statistics, in ``torch.cuda.memory_stats()``'s shape.
- ``allocator/trace_recording.py`` (105 lines): a trace recorded from real training steps (MNIST MLP, CNN).
- ``allocator/cupy_allocator.py`` (60 lines): the allocator serving CuPy's arrays on a GPU.
"""

from minigrad.memory.accumulation import (
    AccumulationPoint, accumulation_estimates, estimate_at, fewest_steps_for, fewest_steps_that_fit,
    measure_accumulated_peak, peak_by_micro_batch,
)
from minigrad.memory.allocator import (
    AllocatorOutOfMemoryError, CachingAllocator, CupyCachingAllocator, ReplayResult, compare_policies,
    TraceError, compare_policies_on_training_step, record_trace, record_training_step, replay, replay_states,
)
from minigrad.memory.buffers import AllocationEvent, allocation_tag, buffer_id, live_buffers, live_bytes, set_buffer_tag
from minigrad.memory.categories import CATEGORIES
from minigrad.memory.estimate import OPTIMIZERS, Estimate, EstimateError, estimate, format_bytes
from minigrad.memory.listeners import (
    add_allocation_guard, add_allocation_observer, add_phase_observer, remove_allocation_guard,
    remove_allocation_observer, remove_phase_observer, report_temporary,
)
from minigrad.memory.oom_report import OOMReport, OutOfMemoryError
from minigrad.memory.phases import PhaseEvent
from minigrad.memory.profiles import PROFILES, GPUProfile, get_profile, profiles_table
from minigrad.memory.scratch import scratch_begin, scratch_end
from minigrad.memory.simulated_gpu import SimulatedGPU, simulated_gpu
from minigrad.memory.timeline import TimelineEvent
from minigrad.memory.tracker import Tracker, track

__all__ = [
    "AccumulationPoint", "accumulation_estimates", "estimate_at", "fewest_steps_for", "fewest_steps_that_fit",
    "measure_accumulated_peak", "peak_by_micro_batch",
    "AllocatorOutOfMemoryError", "CATEGORIES", "CachingAllocator", "CupyCachingAllocator", "Estimate", "EstimateError",
    "GPUProfile", "OOMReport", "OPTIMIZERS", "OutOfMemoryError", "PROFILES", "ReplayResult", "SimulatedGPU",
    "TimelineEvent", "TraceError", "Tracker", "compare_policies", "compare_policies_on_training_step", "estimate", "format_bytes",
    "get_profile", "profiles_table", "record_trace", "record_training_step", "replay", "replay_states",
    "simulated_gpu", "track",
    "AllocationEvent", "PhaseEvent", "add_allocation_observer", "remove_allocation_observer", "add_allocation_guard",
    "remove_allocation_guard", "add_phase_observer", "remove_phase_observer", "allocation_tag", "set_buffer_tag",
    "buffer_id", "live_buffers", "live_bytes", "report_temporary", "scratch_begin", "scratch_end",
]
