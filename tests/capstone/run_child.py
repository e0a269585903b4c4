"""The child process of the capstone's tests: resume a run in a fresh interpreter, or save one over and over.

``run_child.py resume CHECKPOINT STEPS OUT CONFIG_JSON SCALER_JSON``: resume the tiny run from CHECKPOINT, take
STEPS steps, write its losses and parameters to OUT. ``run_child.py save-loop CHECKPOINT HIDDEN``: step and save
a larger run to CHECKPOINT forever, printing ``saving N`` as each save of step N begins (the parent kills it with
SIGKILL then, in the middle of that save).
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import minigrad  # noqa: E402
from minigrad.capstone import TrainConfig  # noqa: E402
from minigrad.capstone.training_run import TrainingRun  # noqa: E402
from tiny_runs import make_run, parameters  # noqa: E402


def resume(checkpoint: str, steps: str, out: str, config: str, scaler: str) -> None:
    pieces = make_run(TrainConfig(**json.loads(config)), scaler_kwargs=json.loads(scaler))
    run = TrainingRun.resume(checkpoint, pieces.model, pieces.optimizer, pieces.train_loader, pieces.config,
                             pieces.loss_fn, scheduler=pieces.scheduler, scaler=pieces.scaler)
    for _ in range(int(steps)):
        run.step()
    minigrad.save({"losses": run.history.losses, "scales": run.history.loss_scales, "parameters": parameters(run)},
                  out)


def save_loop(checkpoint: str, hidden: str) -> None:
    run = make_run(TrainConfig(batch_size=8), hidden=int(hidden), scheduler=False)
    while True:
        run.step()
        print(f"saving {run.step_count}", flush=True)
        run.save(checkpoint)


if __name__ == "__main__":
    {"resume": resume, "save-loop": save_loop}[sys.argv[1]](*sys.argv[2:])
