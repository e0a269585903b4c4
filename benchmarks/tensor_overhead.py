"""Per-op overhead of the tensor core: one training step of an MLP 784-256-128-10.

The step: forward (ReLU hidden layers), cross-entropy through log_softmax,
backward, plain SGD update, at batch 128 in float32. The same step is written
three ways and timed side by side, interleaved so that machine noise hits all
of them alike:

- minigrad.tensor (autograd builds the graph and runs the backward pass);
- hand-written NumPy (the anchor: the same arithmetic with no framework);
- PyTorch on the CPU, when it is installed (same number of threads as NumPy).

The figure that matters is minigrad / NumPy: what the graph, the Python
dispatch and the bookkeeping cost on top of the arithmetic (goal: <= 1.2x).
Each figure is the median over ``--steps`` steps; the whole measurement is
repeated ``--rounds`` times and the quietest round (fastest NumPy) is shown,
because other processes on a small machine disturb single rounds.

    python benchmarks/tensor_overhead.py [--steps 50] [--warmup 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import minigrad.tensor as mt

SIZES = (784, 256, 128, 10)
BATCH = 128
LR = 0.01


def numpy_threads() -> int:
    try:
        from threadpoolctl import threadpool_info

        for pool in threadpool_info():
            if pool.get("user_api") == "blas":
                return int(pool["num_threads"])
    except ImportError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def make_problem(seed: int = 0):
    gen = np.random.default_rng(seed)
    x = gen.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = gen.integers(0, SIZES[-1], BATCH)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        params.append((gen.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return x, y, params


def numpy_step_factory(x, y, params):
    """Forward, backward and SGD written out by hand in NumPy."""
    W1, b1, W2, b2, W3, b3 = [p.copy() for p in params]
    rows = np.arange(BATCH)

    def step():
        a1 = x @ W1 + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ W2 + b2
        h2 = np.maximum(a2, 0)
        z = h2 @ W3 + b3
        zs = z - z.max(axis=1, keepdims=True)
        logp = zs - np.log(np.exp(zs).sum(axis=1, keepdims=True))
        loss = -logp[rows, y].mean()
        dlogp = np.zeros_like(logp)
        dlogp[rows, y] = -1.0 / BATCH
        dz = dlogp - np.exp(logp) * dlogp.sum(axis=1, keepdims=True)
        dW3 = h2.T @ dz
        db3 = dz.sum(axis=0)
        da2 = (dz @ W3.T) * (a2 > 0)
        dW2 = h1.T @ da2
        db2 = da2.sum(axis=0)
        da1 = (da2 @ W2.T) * (a1 > 0)
        dW1 = x.T @ da1
        db1 = da1.sum(axis=0)
        for p, g in ((W1, dW1), (b1, db1), (W2, dW2), (b2, db2), (W3, dW3), (b3, db3)):
            p -= LR * g
        return float(loss)

    return step


def minigrad_step_factory(x, y, params):
    """The same step as a minigrad user writes it."""
    xt = mt.tensor(x)
    rows, labels = mt.arange(BATCH), mt.tensor(y)
    W1, b1, W2, b2, W3, b3 = ps = [mt.tensor(p, requires_grad=True) for p in params]

    def step():
        h1 = (xt @ W1 + b1).relu()
        h2 = (h1 @ W2 + b2).relu()
        logp = (h2 @ W3 + b3).log_softmax(dim=1)
        loss = -logp[rows, labels].mean()
        loss.backward()
        with mt.no_grad():
            for p in ps:  # what optim.SGD does
                p.add_(p.grad, alpha=-LR)
                p.grad = None
        return loss.item()

    return step


def torch_step_factory(x, y, params, torch):
    xt = torch.from_numpy(x)
    labels = torch.from_numpy(y)
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    W1, b1, W2, b2, W3, b3 = ps
    rows = torch.arange(BATCH)

    def step():
        h1 = (xt @ W1 + b1).relu()
        h2 = (h1 @ W2 + b2).relu()
        logp = (h2 @ W3 + b3).log_softmax(dim=1)
        loss = -logp[rows, labels].mean()
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p.add_(p.grad, alpha=-LR)
                p.grad = None
        return loss.item()

    return step


def time_interleaved(steps: dict, n: int, warmup: int) -> dict[str, float]:
    """Median seconds per step of each function, alternating between them so drift hits all alike."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(n):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="repeat the measurement, keep the quietest round")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    x, y, params = make_problem()
    steps = {"numpy": numpy_step_factory(x, y, params), "minigrad": minigrad_step_factory(x, y, params)}
    threads = numpy_threads()
    try:
        import torch

        torch.set_num_threads(threads)
        steps["pytorch"] = torch_step_factory(x, y, params, torch)
    except ImportError:
        torch = None

    first = {name: step() for name, step in steps.items()}  # same weights, same data: same loss
    # best of a few rounds (the one where NumPy was fastest: the quietest machine), as timeit does
    rounds = []
    for _ in range(args.rounds):
        medians = time_interleaved({k: v for k, v in steps.items() if k != "pytorch"}, args.steps, args.warmup)
        rounds.append(medians)
    medians = min(rounds, key=lambda m: m["numpy"])
    if "pytorch" in steps:  # timed on its own: its OpenMP threads spin after each op and would slow NumPy's
        medians["pytorch"] = min(
            time_interleaved({"pytorch": steps["pytorch"]}, args.steps, args.warmup)["pytorch"]
            for _ in range(args.rounds)
        )

    print(
        f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32: forward + backward + SGD step, "
        f"median of {args.steps} steps after {args.warmup} warm-up steps, best of {args.rounds} rounds "
        f"({threads} BLAS threads)"
    )
    if load_before == load_before:  # not nan
        print(f"  (1-minute load average before the run: {load_before:.1f} on {os.cpu_count()} cores; "
              f"other busy processes slow BLAS threads down and blur the ratios)")
    for name, seconds in medians.items():
        ratio = seconds / medians["numpy"]
        print(f"  {name:<9} {seconds * 1e3:8.3f} ms   {ratio:5.2f}x NumPy   (first loss {first[name]:.6f})")
    if torch is None:
        print("  (PyTorch not installed: pip install torch to compare)")
    return medians


if __name__ == "__main__":
    main()
