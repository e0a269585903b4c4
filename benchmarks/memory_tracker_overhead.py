"""The cost of ``minigrad.memory.track()`` on the chapter-05 MNIST MLP (batch 128, Adam): one epoch
without a tracker and one with, alternated over several rounds, timed by process CPU time (the
machine's other load does not count); the best round of each is compared.

    python benchmarks/memory_tracker_overhead.py [--rounds 5] [--steps 469] [--subset]

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


def mlp_epoch_runner(steps: int | None = None, subset: bool = False, batch_size: int = 128):
    """A function ``run(tracker_factory)`` that trains the MLP for one epoch (or ``steps`` steps) and returns CPU seconds."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.training.recipes import RECIPES

    (x_train, y_train), _ = mnist_arrays(subset)
    n = len(x_train) // batch_size if steps is None else min(steps, len(x_train) // batch_size)
    batches = [(x_train[i * batch_size:(i + 1) * batch_size].copy(), y_train[i * batch_size:(i + 1) * batch_size].copy())
               for i in range(n)]  # copies, as a DataLoader makes (a slice would keep the whole set alive)
    mt.manual_seed(0)
    model = RECIPES["mnist-mlp"].build()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def run(tracker_factory=None) -> tuple[float, object]:
        gc.collect()
        tracker = tracker_factory() if tracker_factory is not None else None
        start = time.process_time()
        if tracker is not None:
            tracker.__enter__()
        try:
            for x, y in batches:
                optimizer.zero_grad()
                loss = loss_fn(model(mt.from_numpy(x)), mt.from_numpy(y))
                loss.backward()
                optimizer.step()
        finally:
            if tracker is not None:
                tracker.__exit__(None, None, None)
        return time.process_time() - start, tracker

    return run, n


def tracker_overhead(rounds: int = 5, steps: int | None = None, subset: bool = False, tracemalloc: bool = False) -> dict:
    """CPU seconds of the best untracked and best tracked epoch, and the overhead as a fraction."""
    from minigrad.memory.tracker import track

    run, n = mlp_epoch_runner(steps, subset)
    run()  # warm up: Adam's state, NumPy's caches
    plain, tracked, last = [], [], None
    for _ in range(rounds):
        plain.append(run()[0])
        seconds, last = run(lambda: track(tracemalloc=tracemalloc))
        tracked.append(seconds)
    best_plain, best_tracked = min(plain), min(tracked)
    return {"steps": n, "untracked_s": best_plain, "tracked_s": best_tracked,
            "overhead": best_tracked / best_plain - 1, "events_per_step": len(last.events) / n,
            "peak_bytes": last.peak, "median_overhead": float(np.median(tracked) / np.median(plain) - 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default: the whole epoch)")
    parser.add_argument("--subset", action="store_true", help="the bundled MNIST subset (no download)")
    parser.add_argument("--tracemalloc", action="store_true", help="also run tracemalloc while tracking")
    args = parser.parse_args()
    r = tracker_overhead(args.rounds, args.steps, args.subset, args.tracemalloc)
    print(f"MNIST MLP, batch 128, Adam, {r['steps']} steps, best of {args.rounds} rounds (process CPU time)")
    print(f"  untracked {r['untracked_s']:.3f} s   tracked {r['tracked_s']:.3f} s   overhead {r['overhead']:+.1%}"
          f" (medians {r['median_overhead']:+.1%}); {r['events_per_step']:.0f} events/step, peak {r['peak_bytes']:,} bytes")


if __name__ == "__main__":
    main()
