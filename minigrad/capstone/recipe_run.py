"""An MNIST recipe trained as a :class:`TrainingRun`: what ``minigrad train`` runs with the capstone's options.

``train_recipe(name, config, ...)`` builds the recipe as ``train_mnist`` does
(the same model, Adam, cosine schedule and loaders, from the same seed),
resumes from ``resume`` if given, steps until ``epochs`` epochs are done,
saves the run every ``save_every`` steps and at the end to ``save_path``
(each save atomic: a killed run leaves its last checkpoint), and returns the
run with the seconds it took. :func:`summary` is the report printed after it.
"""

from __future__ import annotations

import time
from pathlib import Path

from tqdm.auto import tqdm

from minigrad.capstone.run_state import load_run
from minigrad.capstone.training_run import TrainingRun
from minigrad.memory import format_bytes, get_profile
from minigrad.training import check_save_path, evaluate
from minigrad.training.recipes import build_recipe

__all__ = ["train_recipe", "summary"]


def train_recipe(name: str, config, *, epochs=None, lr=None, seed: int = 0, data=None, subset: bool = False,
                 download: bool = True, device=None, resume=None, save_path=None, save_every: int | None = None,
                 progress: bool = True) -> tuple[TrainingRun, float]:
    """Train recipe ``name`` under ``config`` (see the module docstring); returns ``(run, seconds)``."""
    if save_every is not None and save_path is None:
        raise ValueError("train_recipe: save_every needs save_path (where to save the run)")
    if save_path is not None:
        check_save_path(save_path)
    state = load_run(resume) if resume is not None else None  # a bad --resume fails before any work
    setup = build_recipe(name, epochs, config.batch_size, lr, seed, data, subset, download, device)
    run = TrainingRun(setup.model, setup.optimizer, setup.train_loader, config, setup.loss_fn,
                      scheduler=setup.scheduler, test_loader=setup.test_loader)
    if state is not None:
        run.load_state_dict(state)
    total = setup.epochs * len(setup.train_loader)
    start = time.perf_counter()
    bar = tqdm(total=total, initial=min(run.step_count, total), desc=f"{name} ({config.label()})", leave=False,
               disable=not progress)
    with bar:
        while run.step_count < total:
            loss = run.step()
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}", epoch=run.epoch + 1, refresh=False)
            if run.position == 0 and run.history.epochs:
                record = run.history.epochs[-1]
                bar.write(f"epoch {record['epoch']}/{setup.epochs}: train loss {record['train_loss']:.4f}, test "
                          f"accuracy {record['test_accuracy']:.2%}")
            if save_every is not None and run.step_count % save_every == 0:
                run.save(save_path)
    if save_path is not None:
        run.save(save_path)
    return run, time.perf_counter() - start


def final_accuracy(run) -> float:
    """The test accuracy now: the last epoch's if the run ended on an epoch's end, else measured."""
    if run.position == 0 and run.history.epochs:
        return run.history.epochs[-1]["test_accuracy"]
    return evaluate(run.model, run.test_loader, run.loss_fn)[1]


def summary(run, seconds: float, save_path=None) -> str:
    """The report after a run: test accuracy, time, peak memory by category, reserved peak against the card."""
    steps = len(run.history.step_times)
    lines = [f"final test accuracy: {final_accuracy(run):.2%}",
             f"time: {seconds:.1f} s ({run.step_count} steps in all, {run.config.label()}"
             + (f", {1000 * sum(run.history.step_times) / steps:.1f} ms a step" if steps else "") + ")"]
    memory = run.memory
    if run.config.card is not None and memory.peak:
        parts = ", ".join(f"{name} {format_bytes(nbytes)}" for name, nbytes in memory.peak_by_category.items() if nbytes)
        lines.append(f"peak memory: {format_bytes(memory.peak)} ({parts})")
        card = get_profile(run.config.card)
        lines.append(f"reserved peak: {format_bytes(memory.peak_reserved)} of the {card.name}'s "
                     f"{format_bytes(card.memory_bytes)} ({format_bytes(card.usable_bytes)} usable after the CUDA "
                     f"context, {memory.peak_reserved / card.usable_bytes:.1%} of it)")
    if run.config.scaled:
        lines.append(f"loss scale: {run.scaler.get_scale():g} now, {sum(run.history.skipped)} step(s) skipped")
    if save_path is not None:
        lines.append(f"saved the run (resume with --resume {Path(save_path)}) to {save_path}")
    return "\n".join(lines)
