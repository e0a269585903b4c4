"""Shared parts of the MNIST benchmarks: data as arrays, a runner that measures each
contender in its own process (so peak memory is its own), and the result table."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MEAN, STD = 0.1307, 0.3081


def mnist_arrays(subset: bool = False):
    """Normalised float32 images (N, 1, 28, 28) and int64 labels, train and test."""
    from minigrad.data import MNIST

    out = []
    for train in (True, False):
        ds = MNIST(train=train, subset=subset)
        x = (ds.data.astype(np.float32)[:, None] / 255.0 - MEAN) / STD
        out.append((x.astype(np.float32), ds.targets))
    return out


def epoch_orders(n: int, epochs: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) for _ in range(epochs)]


def peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 if sys.platform != "darwin" else rss / 2**20


def compare(script: str, description: str, contenders: dict, title, default_epochs: int, default_batch: int) -> None:
    """The benchmark's entry point: with ``--only NAME`` run one contender here and print its
    results as JSON; otherwise run every contender in its own process, ``--rounds`` times in
    turn (so a burst of load on a shared machine does not fall on one contender only), and
    print the table. ``title(args)`` names the workload in the table's heading."""
    args = parse(description, default_epochs, default_batch)
    if args.only:
        print(json.dumps(contenders[args.only](args, mnist_arrays(args.subset))))
        return
    names = list(contenders)
    if "torch" in names:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("  (PyTorch not installed: pip install torch==2.13.0 to compare)")
            names.remove("torch")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            r = run_contender(Path(script), name, args)
            if r is not None:
                runs[name].append(r)
    report(title(args), {name: merge_rounds(rs) for name, rs in runs.items() if rs})


def merge_rounds(rounds: list[dict]) -> dict:
    """One contender's rounds as one result: the median and the best of all its epoch times."""
    times = [t for r in rounds for t in r["epoch_times"]]
    return {
        "epoch_seconds": float(np.median(times)),
        "best_epoch_seconds": float(np.min(times)),
        "epoch_times": times,
        "test_accuracy": rounds[0]["test_accuracy"],  # every round trains the same way
        "peak_rss_mb": max(r["peak_rss_mb"] for r in rounds),
    }


def run_contender(script: Path, name: str, args: argparse.Namespace) -> dict | None:
    """Run ``script --only name`` in a fresh process; it prints one JSON line of results."""
    cmd = [sys.executable, str(script), "--only", name, "--epochs", str(args.epochs), "--batch-size", str(args.batch_size)]
    if args.subset:
        cmd.append("--subset")
    run = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if run.returncode != 0:
        print(f"  {name}: failed\n{run.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(run.stdout.strip().splitlines()[-1])


def report(title: str, results: dict[str, dict]) -> None:
    print(title)
    print(f"  {'':<12} {'epoch time':>11} {'best':>8} {'vs numpy':>9} {'vs torch':>9} {'test acc':>9} {'peak RSS':>9}")
    base = results.get("numpy", {}).get("epoch_seconds")
    torch = results.get("torch", {}).get("epoch_seconds")
    for name, r in results.items():
        rel_np = f"{r['epoch_seconds'] / base:.2f}x" if base else "-"
        rel_t = f"{r['epoch_seconds'] / torch:.2f}x" if torch else "-"
        print(
            f"  {name:<12} {r['epoch_seconds']:>10.2f}s {r['best_epoch_seconds']:>7.2f}s {rel_np:>9} {rel_t:>9} "
            f"{r['test_accuracy']:>8.2%} {r['peak_rss_mb']:>7.0f}MB"
        )
    rounds = {len(r["epoch_times"]) for r in results.values()}
    print(
        "  epoch time: median over all epochs of all rounds (best: the fastest) of one training pass "
        f"(forward, backward, optimizer step) over the training set; {'/'.join(map(str, sorted(rounds)))} epochs each"
    )


def parse(description: str, default_epochs: int, default_batch: int) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--epochs", type=int, default=default_epochs)
    p.add_argument("--batch-size", type=int, default=default_batch)
    p.add_argument("--subset", action="store_true", help="use the shipped 5,000-image subset (quick smoke run)")
    p.add_argument("--rounds", type=int, default=3, help="run every contender this many times, in turn (default 3)")
    p.add_argument("--only", help=argparse.SUPPRESS)
    return p.parse_args()


def timed_epochs(train_one_epoch, evaluate, epochs: int) -> dict:
    times = []
    for epoch in range(epochs):
        start = time.perf_counter()
        train_one_epoch(epoch)
        times.append(time.perf_counter() - start)
    return {"epoch_seconds": float(np.median(times)), "epoch_times": times, "test_accuracy": float(evaluate()), "peak_rss_mb": peak_rss_mb()}
