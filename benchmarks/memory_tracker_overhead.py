"""The cost of ``minigrad.memory.track()`` on the chapter-05 MNIST MLP epoch (batch 128, Adam).

    OPENBLAS_NUM_THREADS=1 python benchmarks/memory_tracker_overhead.py [--rounds 3] [--chunk 10] [--steps 468]

The epoch is the training loop of ``benchmarks/mnist_mlp.py``: each step gathers its batch from the
shuffled training set (a fresh array, as a DataLoader hands over), then forward, loss, ``zero_grad``,
backward and the Adam step. It runs in chunks of ``--chunk`` steps; every chunk runs once without a
tracker and once inside a fresh ``track(model, optimizer)`` (the default tracker: counters, timeline,
``by_module``; tracemalloc off, as ``track()``'s default is: it is the ground truth's own cost, about
+45 % per step against +8 % here; ``--ground-truth`` measures ``track(ground_truth=True)``), the order
alternating, timed by process CPU time, so a change in the machine's load falls on both about equally.

What a tracker costs once, however long the block, is timed apart: starting it (reporting the model's
parameters and the optimizer's state it finds there) and stopping it. The epoch's figure is what one
tracker around the whole epoch costs: the tracked chunks' extra time per step over the epoch's steps,
plus one start and stop. (With a fresh tracker for every chunk of 10 steps, those once-per-block costs
would be counted 47 times over.)

Each round runs in its own process: where the interpreter's and NumPy's memory land differs between
processes, and so does the overhead (by a few percent here), so the figure is the mean over rounds.
The target: at most 10 %.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mnist_common import epoch_orders, mnist_arrays  # noqa: E402

BATCH = 128


def mlp_trainer(subset: bool = False, steps: int | None = None):
    """``(train, batches, model, optimizer)``: ``train(batches)`` runs Adam steps of the chapter-05 MLP (built
    once) on the epoch's batches, each given as its index array into the training set."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.training.recipes import RECIPES

    (x, y), _ = mnist_arrays(subset)
    order = epoch_orders(len(y), 1)[0]
    batches = [order[i:i + BATCH] for i in range(0, len(order) - BATCH + 1, BATCH)][:steps]
    mt.manual_seed(0)
    model = RECIPES["mnist-mlp"].build()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def train(indices) -> None:
        for idx in indices:
            loss = loss_fn(model(mt.from_numpy(x[idx])), mt.from_numpy(y[idx]))  # the fancy index copies
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    return train, batches, model, optimizer


def one_round(steps: int | None = None, subset: bool = False, chunk: int = 10, ground_truth: bool = False) -> dict:
    """CPU seconds of the epoch's steps untracked and tracked, in alternating chunks (see the module docstring)."""
    from minigrad.memory.tracker import track

    train, batches, model, optimizer = mlp_trainer(subset, steps)
    train(batches[:chunk])  # warm up: Adam's state, NumPy's caches
    plain = tracked = start_stop = 0.0
    ratios, events = [], 0
    for i, start in enumerate(range(0, len(batches), chunk)):
        part = batches[start:start + chunk]
        times = {}
        for mode in (("plain", "tracked") if i % 2 == 0 else ("tracked", "plain")):
            gc.collect()
            if mode == "plain":
                begin = time.process_time()
                train(part)
                times[mode] = time.process_time() - begin
                continue
            tracker = track(model, optimizer, ground_truth=ground_truth)
            begin = time.process_time()
            tracker.__enter__()
            entered = time.process_time()
            try:
                train(part)
            finally:
                done = time.process_time()
                tracker.__exit__(None, None, None)
            start_stop += (entered - begin) + (time.process_time() - done)
            times[mode] = done - entered
            events += len(tracker.events)
        plain += times["plain"]
        tracked += times["tracked"]
        ratios.append(times["tracked"] / times["plain"] - 1)
    once = start_stop / len(ratios)  # one tracker's start and stop
    return {"steps": len(batches), "untracked_s": plain, "tracked_s": tracked, "overhead": (tracked + once) / plain - 1,
            "per_step_overhead": tracked / plain - 1, "median_chunk_overhead": float(np.median(ratios)),
            "events_per_step": events / len(batches), "start_stop_ms": 1000 * once}


def tracker_overhead(steps: int | None = None, subset: bool = False, chunk: int = 10, rounds: int = 3,
                     ground_truth: bool = False) -> dict:
    """``rounds`` rounds, each in its own process; returns them and the mean, lowest and highest overhead.

    ``overhead`` is an epoch's under one tracker (per-step cost plus one start and stop).
    """
    results = []
    for _ in range(rounds):
        command = [sys.executable, __file__, "--one-round", "--chunk", str(chunk)]
        command += ["--steps", str(steps)] if steps else []
        command += ["--subset"] if subset else []
        command += ["--ground-truth"] if ground_truth else []
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    overheads = [r["overhead"] for r in results]
    return {"rounds": results, "overhead": statistics.mean(overheads), "lowest": min(overheads),
            "highest": max(overheads), "steps": results[0]["steps"],
            "events_per_step": results[0]["events_per_step"],
            "start_stop_ms": statistics.mean(r["start_stop_ms"] for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each in its own process")
    parser.add_argument("--chunk", type=int, default=10, help="steps per alternating chunk")
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default: the whole epoch)")
    parser.add_argument("--subset", action="store_true", help="the bundled MNIST subset (no download)")
    parser.add_argument("--ground-truth", action="store_true",
                        help="track(ground_truth=True): tracemalloc beside the tracker (about +45 %% per step)")
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)  # a round, in a child process
    args = parser.parse_args()
    if args.one_round:
        print(json.dumps(one_round(args.steps, args.subset, args.chunk, args.ground_truth)))
        return
    r = tracker_overhead(args.steps, args.subset, args.chunk, args.rounds, args.ground_truth)
    what = "track(ground_truth=True): the tracker and tracemalloc" if args.ground_truth else "track(): the tracker alone"
    print(f"MNIST MLP epoch, batch 128, Adam, {r['steps']} steps, chunks of {args.chunk} alternated "
          f"(process CPU time), {len(r['rounds'])} rounds in their own processes; {what}")
    for k, one in enumerate(r["rounds"], 1):
        print(f"  round {k}: untracked {one['untracked_s']:.3f} s   tracked {one['tracked_s']:.3f} s   "
              f"epoch overhead {one['overhead']:+.1%} (per step {one['per_step_overhead']:+.1%}, "
              f"median chunk {one['median_chunk_overhead']:+.1%})")
    print(f"  epoch overhead {r['overhead']:+.1%} (mean; rounds from {r['lowest']:+.1%} to {r['highest']:+.1%}), "
          f"target <= 10 %; {r['events_per_step']:.0f} events/step; starting (with the model's and optimizer's "
          f"tensors) and stopping a tracker {r['start_stop_ms']:.2f} ms")


if __name__ == "__main__":
    main()
