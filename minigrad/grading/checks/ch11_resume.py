"""Graded checks for chapter 11, exercise 11.2 (resume a training run): ``exercises/11_run_state.py``.

In the child the learner's file *is* ``minigrad.capstone.run_state``, so a
``TrainingRun`` restores its state with the learner's ``restore``. A run
drawn here (a small MLP with dropout on shuffled synthetic data; float32, or
float16 with a loss scaler that overflows and backs off; one or more
micro-batches) is trained k steps in the child, its ``state_dict()`` taken,
trained on (so that nothing the learner shares with the state goes
unnoticed), and a freshly built run is loaded from that state and trained n
more steps. Its losses, loss scales, counters and parameters come back and
must equal, bit for bit, those of the same run trained k + n steps without
interruption, computed here with the library. A second run resumed from the
same state must continue exactly as the first. The smallest failing run is
reported.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

FEATURES, CLASSES = 6, 3


def prepare_child() -> None:
    """(child, before the audit hook and the submission) Import the stages a run uses and ask once whether CUDA
    is usable (a run saves every device's generator): that loads CuPy's libraries with ``ctypes``, which the audit
    hook refuses once it is in place. Not the capstone itself: importing it imports the submission."""
    import minigrad.amp  # noqa: F401
    import minigrad.checkpoint  # noqa: F401
    import minigrad.memory  # noqa: F401
    import minigrad.training  # noqa: F401
    from minigrad.gpu import cuda_available

    cuda_available()  # the answer is kept: later calls open nothing


def _build(s: dict):
    """(either side) The run of scenario ``s``, built the same way every time (seeded)."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.amp import GradScaler
    from minigrad.capstone import TrainConfig, TrainingRun
    from minigrad.data import DataLoader, TensorDataset

    data = np.random.default_rng(s["data_seed"])
    x = data.standard_normal((s["examples"], FEATURES)).astype(np.float32)
    y = data.integers(0, CLASSES, s["examples"])
    config = TrainConfig(batch_size=s["batch"], amp=s["amp"], accumulate=s["accumulate"])
    mt.manual_seed(s["seed"])
    model = nn.Sequential(nn.Linear(FEATURES, s["hidden"]), nn.ReLU(), nn.Dropout(s["p"]),
                          nn.Linear(s["hidden"], CLASSES))
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    loader = DataLoader(TensorDataset(mt.tensor(x), mt.tensor(y)), batch_size=s["batch"], shuffle=True,
                        seed=s["seed"] + 1, prefetch=0)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=s["stop"] + s["more"] + 3)
    scaler = GradScaler("cpu", init_scale=2.0**20, growth_interval=3) if s["amp"] == "float16" else None
    return TrainingRun(model, optimizer, loader, config, nn.CrossEntropyLoss(), scheduler=scheduler, scaler=scaler)


def _outcome(run) -> dict:
    """(either side) What a run's future was: every step's loss and scale, where it stands, its parameters."""
    return {"losses": list(run.history.losses), "scales": list(run.history.loss_scales),
            "counters": [run.step_count, run.epoch, run.position],
            "parameters": [np.array(p.detach().numpy()) for p in run.model.parameters()]}


def _uninterrupted(s: dict) -> dict:
    run = _build(s)
    for _ in range(s["stop"] + s["more"]):
        run.step()
    return _outcome(run)


@probe
def resumed(submission, state, s):
    """(child) Stop after ``stop`` steps, go on 2 more, then resume twice from the state taken at ``stop``."""
    first = _build(s)
    for _ in range(s["stop"]):
        first.step()
    saved = first.state_dict()
    for _ in range(2):
        first.step()
    outcomes = []
    for _ in range(2):
        run = _build(s)
        submission.load_run_state(run, saved)
        for _ in range(s["more"]):
            run.step()
        outcomes.append(_outcome(run))
    return outcomes


# --------------------------------------------------------------------------- scenarios


def _scenario(gen, amp=None, accumulate=1, stop=None, epochs_before=0) -> dict:
    batch = 4 * accumulate
    batches = int(gen.integers(3, 5))
    examples = batch * batches - int(gen.integers(0, 2))  # sometimes a short last batch
    if stop == "epoch end":
        stop = batches
    elif stop is None:
        stop = epochs_before * batches + int(gen.integers(1, batches))  # mid-epoch
    return {"seed": int(gen.integers(2**31)), "data_seed": int(gen.integers(2**31)), "hidden": int(gen.integers(4, 9)),
            "p": 0.3, "amp": amp, "accumulate": accumulate, "batch": batch, "examples": examples,
            "stop": stop, "more": batches + 1, "batches": batches}


def _describe(s: dict) -> str:
    precision = "float16 with a GradScaler (scale 2**20, growing every 3 steps)" if s["amp"] == "float16" else "float32"
    where = (f"at the end of epoch {s['stop'] // s['batches']}" if s["stop"] % s["batches"] == 0
             else f"after batch {s['stop'] % s['batches']} of epoch {s['stop'] // s['batches'] + 1}")
    return (f"a Linear-ReLU-Dropout(0.3)-Linear MLP (hidden {s['hidden']}), Adam with a cosine schedule, {precision}, "
            f"{s['examples']} shuffled examples in batches of {s['batch']} ({s['batches']} an epoch, accumulate "
            f"{s['accumulate']}); state_dict() after {s['stop']} step{'s' if s['stop'] != 1 else ''} ({where}), the "
            f"run goes on 2 steps, then a new run loads that state and trains {s['more']} more")


def _size(s: dict) -> int:
    return s["stop"] + s["more"] + s["hidden"] + (10 if s["amp"] else 0)


def _compare(mine: dict, expected: dict, s: dict, which: str, why: str) -> None:
    stop = s["stop"]
    if not _same(mine["losses"][:stop], expected["losses"][:stop]):
        raise AssertionError(f"{which}: its history of the first {stop} steps is {_rounded(mine['losses'][:stop])}, "
                             f"expected {_rounded(expected['losses'][:stop])}: the history comes back with the run")
    step = next((i for i, (a, b) in enumerate(zip(mine["losses"], expected["losses"])) if not _same([a], [b])), None)
    if step is not None or len(mine["losses"]) != len(expected["losses"]):
        first = stop if step is None else step
        raise AssertionError(
            f"{which}: the losses after resuming are {_rounded(mine['losses'][stop:])}, expected "
            f"{_rounded(expected['losses'][stop:])} (first difference at step {first + 1}): {why}")
    if mine["scales"] != expected["scales"]:
        raise AssertionError(f"{which}: the loss scales are {mine['scales'][stop:]}, expected "
                             f"{expected['scales'][stop:]}: the scaler's scale and growth tracker come back")
    if mine["counters"] != expected["counters"]:
        raise AssertionError(f"{which}: it ends at step {mine['counters'][0]}, epoch {mine['counters'][1]}, batch "
                             f"{mine['counters'][2]} of its epoch; expected {expected['counters']}: the counters "
                             f"come back")
    for index, (a, b) in enumerate(zip(mine["parameters"], expected["parameters"])):
        if not np.array_equal(a, b):
            raise AssertionError(f"{which}: parameter {index} differs from the uninterrupted run's (largest "
                                 f"difference {float(np.max(np.abs(np.asarray(a) - b))):.3g}): {why}")


def _same(a, b) -> bool:
    """Equal bit for bit as float64 values (a NaN equals a NaN)."""
    return len(a) == len(b) and np.array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                                                equal_nan=True)


def _rounded(values) -> list:
    return [round(float(v), 6) for v in values]


def _check(learner, scenarios, why: str, twice: bool = False) -> None:
    def attempt(s) -> None:
        outcomes = learner.probe("resumed", s)
        expected = _uninterrupted(s)
        _compare(outcomes[0], expected, s, "the resumed run", why)
        if twice:
            _compare(outcomes[1], expected, s, "a second run resumed from the same state", why + "; and loading a "
                     "state must copy it in: a run that shares the state's tensors changes the state as it trains")

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


@exercise("11.2")
def test_a_resumed_run_continues_bitwise(learner, rng):
    gen = np_generator(rng)
    _check(learner, [_scenario(gen), _scenario(gen, accumulate=2)],
           "a resumed run continues exactly as the run that was never stopped: the weights, the optimizer's "
           "moments, the schedule and the random-number generators (dropout) all come back")


@exercise("11.2")
def test_the_data_order_continues_where_the_run_stopped(learner, rng):
    gen = np_generator(rng)
    _check(learner, [_scenario(gen, epochs_before=1), _scenario(gen, stop="epoch end")],
           "the next batch is the one the stopped run would have taken next: the loader's order of this epoch, "
           "at the batch where it stopped, and the counters that tell when the epoch ends")


@exercise("11.2")
def test_the_loss_scaler_comes_back(learner, rng):
    gen = np_generator(rng)
    _check(learner, [_scenario(gen, amp="float16"), _scenario(gen, amp="float16", accumulate=2)],
           "with float16 the scale (backed off after the overflows so far) and its growth tracker come back, or "
           "the resumed run overflows, skips steps and scales differently")


@exercise("11.2")
def test_two_runs_resumed_from_one_state_agree(learner, rng):
    gen = np_generator(rng)
    _check(learner, [_scenario(gen), _scenario(gen, amp="float16")],
           "a state may be loaded more than once", twice=True)
