"""Saving a training run and resuming it: everything its future depends on, and the checks before restoring it.

A run's state is its model, optimizer, loss scaler and scheduler; its
counters (optimizer steps, finished epochs, batches of the current epoch
consumed); the data order (the loader's generator state the current epoch's
order was drawn from, and the position within it); the state of every
random-number generator minigrad has (the CPU's, and CUDA's when a GPU is
usable: dropout draws from them); and its history and memory peaks. It is
written with :func:`minigrad.save` (no pickle; atomic, so a crash while
saving leaves the previous checkpoint as it was).

Invariant: a run saved after k steps and resumed - in the same process or a
fresh one - continues with exactly the losses and parameters, bitwise, of
the run that was never interrupted (on the CPU; a GPU's kernels may not
repeat bitwise). :func:`run_state_dict` is a snapshot (copies, not the
run's own tensors), so training on never changes a state already taken.

Before anything is restored, :func:`check_compatible` refuses a state of
another model, optimizer, dataset or configuration, naming what differs: a
different batch size or accumulation would change the update and the data
order (the losses could not continue), a different ``amp`` the numbers. A
different ``card`` or ``checkpoint`` is allowed: they change memory and
time, never the numbers.
"""

from __future__ import annotations

import copy
from dataclasses import asdict

import numpy as np

from minigrad.capstone.run_history import RunHistory, RunMemory
from minigrad.gpu import cuda_available
from minigrad.nn.serialization import load, save
from minigrad.tensor import Tensor, get_rng_state, set_rng_state

__all__ = ["run_state_dict", "check_compatible", "restore", "load_run_state", "save_run", "load_run",
           "rng_states", "set_rng_states"]

FORMAT = "minigrad-training-run"
VERSION = 1
NUMERIC_FIELDS = ("batch_size", "accumulate", "amp", "optimizer")  # config fields that change the numbers
WHO = "TrainingRun.load_state_dict"


def rng_states() -> dict:
    """A copy of every generator's state: ``{"cpu": ...}``, and ``"cuda"`` where a GPU is usable."""
    states = {"cpu": get_rng_state("cpu")}
    if cuda_available():
        states["cuda"] = get_rng_state("cuda")
    return states


def set_rng_states(states: dict) -> None:
    """Put each generator named in ``states`` back (a CUDA state is skipped where no GPU is usable)."""
    for device, state in states.items():
        if device == "cpu" or cuda_available():
            set_rng_state(copy.deepcopy(state), device)


def _snapshot(obj):
    """``obj`` with every tensor, array and container copied (nothing shared with the live run)."""
    if isinstance(obj, Tensor):
        return obj.detach().clone()
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: _snapshot(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_snapshot(v) for v in obj)
    return copy.deepcopy(obj)


def run_state_dict(run) -> dict:
    """A snapshot of ``run`` (see the module docstring), as nested dicts that :func:`minigrad.save` writes."""
    loader = run.train_loader
    return _snapshot({
        "format": FORMAT, "version": VERSION,
        "config": asdict(run.config),
        "model": run.model.state_dict(),
        "optimizer": {"type": type(run.optimizer).__name__, "state": run.optimizer.state_dict()},
        "scaler": run.scaler.state_dict(),
        "scheduler": None if run.scheduler is None else {"type": type(run.scheduler).__name__,
                                                          "state": run.scheduler.state_dict()},
        "counters": {"step": run.step_count, "epoch": run.epoch, "position": run.position},
        "data": {"samples": len(loader.dataset), "batches": len(loader), "order": loader.state_dict()},
        "rng": rng_states(),
        "history": run.history.state_dict(),
        "memory": run.memory.state_dict(),
    })


def _model_differences(saved: dict, own: dict) -> list[str]:
    missing = [k for k in own if k not in saved]
    extra = [k for k in saved if k not in own]
    lines = []
    if missing:
        lines.append(f"this model has {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}, which the "
                     f"checkpoint lacks")
    if extra:
        lines.append(f"the checkpoint has {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}, which this "
                     f"model lacks")
    for key in [k for k in own if k in saved]:
        theirs, ours = saved[key], own[key]
        if tuple(getattr(theirs, "shape", ())) != tuple(ours.shape) or getattr(theirs, "dtype", None) != ours.dtype:
            lines.append(f"{key} is {tuple(getattr(theirs, 'shape', ()))} {getattr(theirs, 'dtype', '?')} in the "
                         f"checkpoint, {tuple(ours.shape)} {ours.dtype} here")
    return lines


def _config_differences(saved: dict, config) -> list[str]:
    own = asdict(config)
    lines = []
    if (saved.get("batch_size"), saved.get("accumulate")) != (own["batch_size"], own["accumulate"]):
        lines.append(
            f"the checkpoint's run takes steps of batch_size={saved.get('batch_size')} as accumulate="
            f"{saved.get('accumulate')} micro-batch(es); this one batch_size={own['batch_size']}, accumulate="
            f"{own['accumulate']}: a different batch changes every update and the data order, and a different "
            f"split rounds the sum of gradients differently, so the losses could not continue as they would have "
            f"- resume with batch_size={saved.get('batch_size')} and accumulate={saved.get('accumulate')}, or "
            f"start a new run")
    for name in ("amp", "optimizer"):
        if saved.get(name) != own[name]:
            lines.append(f"config.{name} is {saved.get(name)!r} in the checkpoint, {own[name]!r} here")
    return lines


def check_compatible(run, state) -> None:
    """Raise ``ValueError`` naming every difference between ``state`` and ``run`` that resuming could not keep."""
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        keys = sorted(state)[:8] if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{WHO}: not a training run's state (it holds {keys}); resume from a file written by "
                         f"TrainingRun.save or `minigrad train --save-every`")
    if state.get("version") != VERSION:
        raise ValueError(f"{WHO}: the state has format version {state.get('version')!r}; this minigrad reads {VERSION}")
    missing = [k for k in ("config", "model", "optimizer", "scaler", "scheduler", "counters", "data", "rng",
                           "history", "memory") if k not in state]
    if missing:
        raise ValueError(f"{WHO}: the state lacks {', '.join(missing)}; the file is damaged, save it again")
    problems = _config_differences(state["config"], run.config)
    model_lines = _model_differences(state["model"], run.model.state_dict())
    if model_lines:
        problems.append(f"it is a checkpoint of another model ({'; '.join(model_lines[:6])})")
    if state["optimizer"].get("type") != type(run.optimizer).__name__:
        problems.append(f"its optimizer is {state['optimizer'].get('type')}, this run's {type(run.optimizer).__name__}")
    saved_scheduler = None if state["scheduler"] is None else state["scheduler"].get("type")
    own_scheduler = None if run.scheduler is None else type(run.scheduler).__name__
    if saved_scheduler != own_scheduler:
        problems.append(f"its scheduler is {saved_scheduler}, this run's {own_scheduler}")
    data, loader = state["data"], run.train_loader
    if (data.get("samples"), data.get("batches")) != (len(loader.dataset), len(loader)):
        problems.append(f"its data had {data.get('samples')} examples in {data.get('batches')} batches, this run's "
                        f"loader {len(loader.dataset)} in {len(loader)}: another dataset (or subset)")
    counters, history = state["counters"], state["history"]
    if not problems and (len(history.get("losses", ())) != counters.get("step")
                         or not 0 <= counters.get("position", -1) < len(loader)):
        problems.append(f"its counters (step {counters.get('step')}, position {counters.get('position')}) do not "
                        f"match its history of {len(history.get('losses', ()))} steps; the file is damaged")
    if problems:
        raise ValueError(f"{WHO}: cannot resume this run from that state:\n  - " + "\n  - ".join(problems))


def restore(run, state: dict) -> None:
    """Put everything ``state`` (checked by :func:`check_compatible`) holds back into ``run``."""
    run.drop_batches()  # the next step asks the loader for its batches again, from the restored order
    run.memory = RunMemory.from_state(state["memory"])
    ### BEGIN SOLUTION 11.2 | Every piece the next step reads must come back: the weights, the optimizer's moments (copied in, not shared with the state), the scaler's scale, the schedule, the counters, the data order at the batch where the run stopped (not the epoch's start), every generator's state, and the history.
    run.model.load_state_dict(state["model"])
    run.optimizer.load_state_dict(state["optimizer"]["state"])
    run.scaler.load_state_dict(state["scaler"])
    if run.scheduler is not None:
        run.scheduler.load_state_dict(copy.deepcopy(state["scheduler"]["state"]))
    counters = state["counters"]
    run.step_count, run.epoch, run.position = counters["step"], counters["epoch"], counters["position"]
    run.train_loader.load_state_dict(state["data"]["order"])
    set_rng_states(state["rng"])
    run.history = RunHistory.from_state(state["history"])
    ### END SOLUTION


def load_run_state(run, state: dict) -> None:
    """Check ``state`` against ``run``, then restore it (nothing changes if the check fails)."""
    check_compatible(run, state)
    restore(run, state)


def save_run(run, path):
    """Write ``run``'s state to ``path`` atomically; returns the path."""
    return save(run_state_dict(run), path)


def load_run(path) -> dict:
    """Read a run's state written by :func:`save_run`; a corrupt or truncated file raises ``CheckpointError``."""
    state = load(path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        keys = sorted(state)[:8] if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"resume: {path} is a minigrad checkpoint but not a training run's (it holds {keys}); "
                         f"resume from a file written by TrainingRun.save or `minigrad train --save-every`")
    return state
