"""Stage 7 (chapter 10): activation checkpointing - trading compute (and transfers) for memory.

``checkpoint(fn, *args)`` runs a block keeping only its inputs and runs it
again during backward; ``checkpoint_sequential`` cuts a chain into sqrt(n)
such blocks; ``save_on_cpu()`` moves saved activations to the host instead;
``plan(model, ...)`` chooses the segments to checkpoint for a memory budget
with the least recomputation (a dynamic program over the chain); and
``budget(nbytes)`` trains under a budget with no plan at all, evicting saved
activations and rematerializing them on demand (Dynamic Tensor
Rematerialization). Everything is measured by the memory stage's tracker.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (1,681 lines in all):

1. ``recompute.py`` (285 lines): ``checkpoint(fn, *args)`` runs a block keeping
   only its inputs and runs it again during backward, on the core's
   saved-tensor hooks; ``count_recomputes()``.
2. ``rng_states.py`` (37 lines): the random-number states the recompute starts
   from (dropout draws the same mask twice; exercise 10.2).
3. ``errors.py`` (10 lines): ``CheckpointError``, a recompute that does not match its first run.
4. ``reentrant.py`` (206 lines): the same idea as one Function, forward under
   ``no_grad`` and backward recomputing (PyTorch's reentrant variant; exercise 10.1).
5. ``batchnorm_stats.py`` (63 lines): the BatchNorm pitfall (running statistics
   updated twice) and its fix: every module's buffers put back after the recompute runs it.
6. ``segments.py`` (31 lines): where ``checkpoint_sequential`` cuts a chain (exercise 10.3).
7. ``chain_run.py`` (73 lines): running a chain with some segments checkpointed.
8. ``sequential.py`` (44 lines): ``checkpoint_sequential(functions, segments, input)``,
   the sqrt(n) trade-off.
9. ``selective.py`` (166 lines): ``selective_checkpoint_context(policy)``: keep what
   the expensive ops saved, recompute the rest (``save_expensive``).
10. ``offload.py`` (196 lines): ``save_on_cpu()``: saved activations to host memory and
    back, the PCIe time modelled on a card.
11. ``chain_dp.py`` (237 lines): the planning dynamic program over a chain, its memory
    model and a brute force to check it (exercise 10.4).
12. ``eviction.py`` (81 lines): the budget mode's choice of what to evict: lowest
    cost / (bytes x staleness), with the evicted neighbourhood's cost.
13. ``budget.py`` (252 lines): ``budget(nbytes)``: train under a budget with no plan.

Extensions (not on the reading path)
------------------------------------
What the reading path builds on, and ways to use it:

- ``wrapper.py`` (112 lines): ``CheckpointWrapper(module)`` and ``apply(model, which=...)``,
  checkpointing chosen submodules by configuration.
- ``chain_costs.py`` (309 lines): each layer's saved bytes and FLOPs, measured; offload
  or recompute, per layer and card.
- ``planner.py`` (209 lines): ``plan(model, input_shape, budget_bytes=..., card=...)``: the
  dynamic program on a measured chain, checked by measuring the planned step.
- ``budget_pool.py`` (466 lines): the budget mode's buffers: holding, evicting, rematerializing.
- ``budget_records.py`` (96 lines): its records of buffers, module calls and saved handles.
- ``budget_stats.py`` (82 lines): ``BudgetStats``, ``BudgetEvent``, ``BudgetError``.
- ``budget_cost.py`` (36 lines): what rerunning a module call costs, counted from shapes.
- ``budget_views.py`` (59 lines): a saved view cut back out of a remade buffer.
"""

from minigrad.checkpoint.budget import budget
from minigrad.checkpoint.budget_stats import BudgetError, BudgetEvent, BudgetStats
from minigrad.checkpoint.chain_costs import ChainCosts, measure_chain, offload_or_recompute, tradeoff_table
from minigrad.checkpoint.chain_dp import ChainPlan, brute_force_chain, plan_chain
from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint.offload import OffloadSummary, save_on_cpu
from minigrad.checkpoint.planner import Plan, plan
from minigrad.checkpoint.recompute import RecomputeCount, checkpoint, count_recomputes
from minigrad.checkpoint.reentrant import checkpoint_reentrant
from minigrad.checkpoint.segments import segment_bounds
from minigrad.checkpoint.selective import RECOMPUTE, SAVE, save_expensive, selective_checkpoint_context
from minigrad.checkpoint.sequential import checkpoint_sequential
from minigrad.checkpoint.wrapper import CheckpointWrapper, apply

__all__ = ["checkpoint", "CheckpointError", "count_recomputes", "RecomputeCount", "checkpoint_reentrant",
           "segment_bounds", "checkpoint_sequential", "CheckpointWrapper", "apply", "selective_checkpoint_context",
           "save_expensive", "SAVE", "RECOMPUTE", "save_on_cpu", "OffloadSummary", "measure_chain", "ChainCosts",
           "offload_or_recompute", "tradeoff_table", "plan_chain", "brute_force_chain", "ChainPlan", "plan", "Plan",
           "budget", "BudgetError", "BudgetEvent", "BudgetStats"]
