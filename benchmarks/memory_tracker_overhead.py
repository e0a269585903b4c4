"""The cost of ``minigrad.memory.track()`` on the chapter-05 MNIST MLP (batch 128, Adam): an epoch
run in chunks of steps, each chunk once without a tracker and once with (alternating), timed by
process CPU time (the machine's other load counts less); the sums are compared.

    python benchmarks/memory_tracker_overhead.py [--chunk 10] [--steps 469] [--subset]

The target: tracking (counters, timeline, by_module) costs at most 10 % of an epoch. tracemalloc,
the ground truth beside it, costs far more and is measured apart (``track(tracemalloc=True)``).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mnist_common import mnist_arrays  # noqa: E402


def mlp_batches(steps: int | None = None, subset: bool = False, batch_size: int = 128) -> list:
    """The epoch's batches as copies, as a DataLoader makes them (a slice would keep the whole set alive)."""
    (x_train, y_train), _ = mnist_arrays(subset)
    n = len(x_train) // batch_size if steps is None else min(steps, len(x_train) // batch_size)
    return [(x_train[i * batch_size:(i + 1) * batch_size].copy(), y_train[i * batch_size:(i + 1) * batch_size].copy())
            for i in range(n)]


def mlp_trainer():
    """``train(batches)``: Adam steps of the chapter-05 MLP (built once) over the given batches."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.training.recipes import RECIPES

    mt.manual_seed(0)
    model = RECIPES["mnist-mlp"].build()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def train(batches) -> None:
        for x, y in batches:
            optimizer.zero_grad()
            loss = loss_fn(model(mt.from_numpy(x)), mt.from_numpy(y))
            loss.backward()
            optimizer.step()

    return train


def tracker_overhead(steps: int | None = None, subset: bool = False, chunk: int = 10, tracemalloc: bool = False) -> dict:
    """CPU seconds of an epoch untracked and tracked, measured in alternating chunks of ``chunk`` steps.

    Every chunk of batches runs twice, once plain and once inside a fresh
    ``track()`` (the order alternates), so a change in the machine's load
    falls on both about equally. Returns the sums, the overhead as a
    fraction, and the median of the per-chunk overheads.
    """
    from minigrad.memory.tracker import track

    batches = mlp_batches(steps, subset)
    train = mlp_trainer()
    train(batches[:chunk])  # warm up: Adam's state, NumPy's caches
    plain = tracked = 0.0
    ratios, events = [], 0
    for i, start in enumerate(range(0, len(batches), chunk)):
        part = batches[start:start + chunk]
        times = {}
        for mode in (("plain", "tracked") if i % 2 == 0 else ("tracked", "plain")):
            gc.collect()
            tracker = track(tracemalloc=tracemalloc) if mode == "tracked" else None
            begin = time.process_time()
            if tracker is None:
                train(part)
            else:
                with tracker:
                    train(part)
                events += len(tracker.events)
            times[mode] = time.process_time() - begin
        plain += times["plain"]
        tracked += times["tracked"]
        ratios.append(times["tracked"] / times["plain"] - 1)
    return {"steps": len(batches), "untracked_s": plain, "tracked_s": tracked, "overhead": tracked / plain - 1,
            "median_chunk_overhead": float(np.median(ratios)), "events_per_step": events / len(batches)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=10, help="steps per alternating chunk")
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default: the whole epoch)")
    parser.add_argument("--subset", action="store_true", help="the bundled MNIST subset (no download)")
    parser.add_argument("--tracemalloc", action="store_true", help="also run tracemalloc while tracking")
    args = parser.parse_args()
    r = tracker_overhead(args.steps, args.subset, args.chunk, args.tracemalloc)
    print(f"MNIST MLP, batch 128, Adam, {r['steps']} steps, chunks of {args.chunk} alternated (process CPU time)")
    print(f"  untracked {r['untracked_s']:.3f} s   tracked {r['tracked_s']:.3f} s   overhead {r['overhead']:+.1%}"
          f" (median over chunks {r['median_chunk_overhead']:+.1%}); {r['events_per_step']:.0f} events/step")


if __name__ == "__main__":
    main()
