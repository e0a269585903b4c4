"""Time one forward+backward of a small MNIST CNN in minigrad.nn and in PyTorch (CPU), side by side.

Not a test (pytest does not collect it). Run:  python benchmarks/cnn_step.py [--threads 2] [--batch 128] [--profile]

    conv(1->32, 3x3, pad 1) - relu - maxpool 2 - conv(32->64, 3x3, pad 1) - relu - maxpool 2 - linear(64*7*7 -> 10)

The thread count is applied to BLAS (OpenBLAS/MKL) through threadpoolctl when
available, else through the environment variables, which only work if set
before NumPy is imported: this script sets them itself, first thing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--repeat", type=int, default=15)
parser.add_argument("--profile", action="store_true", help="time each layer's forward and backward in minigrad")
args = parser.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)

import numpy as np  # noqa: E402

import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
import minigrad.tensor as mt  # noqa: E402


def build_minigrad():
    mt.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10),
    )


def timed(step, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0], times[len(times) // 2]


def main() -> None:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((args.batch, 1, 28, 28), dtype=np.float32)
    y_np = rng.integers(0, 10, args.batch)

    model = build_minigrad()
    x, y = mt.tensor(x_np), mt.tensor(y_np)

    def mg_step():
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()

    try:
        import torch
    except ImportError:
        torch = None
    steps = [("minigrad", mg_step)]
    if torch is not None:
        torch.set_num_threads(args.threads)
        tnet = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 10),
        )
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def torch_step():
            tnet.zero_grad()
            torch.nn.functional.cross_entropy(tnet(tx), ty).backward()

        steps.append(("pytorch", torch_step))

    for _, step in steps:  # warm up
        step(), step()
    # interleave the two so that a busy machine slows both alike
    results = {name: [] for name, _ in steps}
    for _ in range(args.repeat):
        for name, step in steps:
            start = time.perf_counter()
            step()
            results[name].append(time.perf_counter() - start)
    print(f"CNN forward+backward, batch {args.batch}, {args.threads} threads (best / median of {args.repeat}):")
    best = {}
    for name, ts in results.items():
        ts.sort()
        best[name] = ts[0]
        print(f"  {name:9s} {ts[0] * 1e3:8.1f} ms  {ts[len(ts) // 2] * 1e3:8.1f} ms")
    if "pytorch" in best:
        print(f"  minigrad / pytorch: {best['minigrad'] / best['pytorch']:.2f}x (best)")
    if args.profile:
        profile(model, x, y)


def profile(model, x, y, repeat: int = 7) -> None:
    """Median time of each layer's forward, and of each graph node's backward, in minigrad."""
    from minigrad.tensor import Function, topological_order

    print(f"\nminigrad forward per layer (median of {repeat}):")
    h = x
    for i, layer in enumerate(model):
        ts = []
        for _ in range(repeat):
            start = time.perf_counter()
            out = layer(h)
            ts.append(time.perf_counter() - start)
        print(f"  {i} {type(layer).__name__:10s} {sorted(ts)[repeat // 2] * 1e3:7.2f} ms")
        h = out

    # backward: wrap every Function subclass's backward with a timer for the duration of one pass
    per_node: dict[str, list[float]] = {}
    for _ in range(repeat):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        nodes = [n for n in reversed(topological_order(loss.grad_fn)) if isinstance(n, Function)]
        labels = {id(n): f"{k:2d} {n.name}" for k, n in enumerate(nodes)}
        spent: dict[str, float] = {}
        originals = {}
        for cls in {type(n) for n in nodes}:
            originals[cls] = cls.backward

            def timed_backward(ctx, grad, _orig=cls.backward):
                start = time.perf_counter()
                result = _orig(ctx, grad)
                spent[labels[id(ctx)]] = time.perf_counter() - start
                return result

            cls.backward = timed_backward
        start = time.perf_counter()
        try:
            loss.backward()
        finally:
            for cls, orig in originals.items():
                cls.backward = orig
        spent["   (whole backward)"] = time.perf_counter() - start
        for label, t in spent.items():
            per_node.setdefault(label, []).append(t)
    print(f"minigrad backward per node, in the order backward visits them (median of {repeat}):")
    for label, ts in sorted(per_node.items()):
        print(f"  {label:36s} {sorted(ts)[len(ts) // 2] * 1e3:7.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
