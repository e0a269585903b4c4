"""Mixed precision: step time and tracked memory of float32, float16 autocast + GradScaler and bfloat16 autocast,
minigrad beside PyTorch CPU, for the chapter-05 MLP (batch 128) and the chapter-06 CNN (batch 64).

    python benchmarks/amp.py [--rounds 3] [--steps 30] [--models mlp cnn] [--device cpu]
    python benchmarks/amp.py --accuracy [--epochs 2] [--cnn]

Each contender (framework x precision x model) runs in its own process, ``--rounds`` times in turn, so a
burst of load on a shared machine falls on all of them; a round times ``--steps`` training steps (forward,
loss, backward, optimizer step, all on one MNIST batch) after warm-up steps, and the figure is the median
over rounds of each round's median step. Every framework's AMP/float32 ratio is its own float32 step's.
BLAS runs on one thread in every contender (``--threads``), so the contenders do not fight over the cores.

The tracked figures are minigrad's (``minigrad.amp.step_memory``: the peak by category and the activation
high-water mark of one step); autocast's copies of the weights and the batch are counted as parameter and
input bytes.

``--accuracy`` trains the chapter-05 MLP (Adam 1e-3, cosine schedule, batch 128, the same seed and batch
order) in each precision and reports test accuracy; acceptance: float16 + GradScaler and bfloat16 within
0.3 percentage points of float32.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mnist_common import epoch_orders, mnist_arrays  # noqa: E402

BATCH = {"mlp": 128, "cnn": 64}
PRECISIONS = ("float32", "float16", "bfloat16")
FRAMEWORKS = ("minigrad", "torch")


# ----------------------------------------------------------------------------------------------- minigrad

def minigrad_step(model_name: str, precision: str, x: np.ndarray, y: np.ndarray, device: str = "cpu"):
    """``(step, model, optimizer)``: one Adam step of the recipe's model on the batch ``(x, y)``."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.amp import GradScaler, autocast
    from minigrad.training.recipes import mnist_cnn, mnist_mlp

    if device != "cpu":
        import minigrad.gpu  # noqa: F401  (registers "cuda")
    mt.manual_seed(0)
    model = (mnist_mlp if model_name == "mlp" else mnist_cnn)()
    model.to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = mt.from_numpy(x).to(device), mt.from_numpy(y).to(device)
    scaler = GradScaler(device, enabled=precision == "float16")
    dtype = {"float16": mt.float16, "bfloat16": mt.bfloat16}.get(precision)

    def step():
        opt.zero_grad()
        with autocast(device, dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(model(xs), ys)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    return step, model, opt


def run_minigrad(args, batch) -> dict:
    from minigrad.amp import step_memory

    step, model, opt = minigrad_step(args.model, args.precision, *batch, device=args.device)
    for _ in range(args.warmup):
        step()
    memory = step_memory(step, model, opt)
    return {"step_times": _time_steps(step, args.steps, _sync_minigrad(args.device)), **memory}


def _sync_minigrad(device: str):
    if device == "cpu":
        return lambda: None
    import cupy

    return cupy.cuda.Device().synchronize


# ----------------------------------------------------------------------------------------------- PyTorch

def run_torch(args, batch) -> dict:
    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = args.device
    if args.model == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 10))
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x, y = (torch.from_numpy(a).to(device) for a in batch)
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device, enabled=args.precision == "float16")

    def step():
        opt.zero_grad()
        with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(args.warmup):
        step()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    return {"step_times": _time_steps(step, args.steps, sync)}


# ----------------------------------------------------------------------------------------------- timing

def _time_steps(step, steps: int, sync) -> list[float]:
    times = []
    for _ in range(steps):
        sync()
        begin = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - begin)
    return times


def one_batch(model: str, subset: bool) -> tuple[np.ndarray, np.ndarray]:
    (x, y), _ = mnist_arrays(subset)
    idx = epoch_orders(len(y), 1)[0][:BATCH[model]]
    return np.ascontiguousarray(x[idx]), y[idx]


def _child(args, extra: list[str]) -> dict | None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    command = [sys.executable, __file__, "--threads", str(args.threads), "--device", args.device] + extra
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  ({' '.join(extra)}: failed: {last})", file=sys.stderr)
        return None
    return json.loads(run.stdout.strip().splitlines()[-1])


def step_table(args) -> None:
    frameworks = [f for f in FRAMEWORKS if f != "torch" or _has_torch()]
    contenders = [(f, m, p) for m in args.models for f in frameworks for p in PRECISIONS]
    results: dict[tuple, list[dict]] = {c: [] for c in contenders}
    for _ in range(args.rounds):
        for framework, model, precision in contenders:
            r = _child(args, ["--only", framework, "--model", model, "--precision", precision,
                              "--steps", str(args.steps), "--warmup", str(args.warmup)]
                       + (["--subset"] if args.subset else []))
            if r is not None:
                results[(framework, model, precision)].append(r)
    print(f"Step time and tracked memory, {args.device}, {args.rounds} rounds (contenders alternating, each in its "
          f"own process), {args.steps} timed steps per round, BLAS threads {args.threads}")
    for model in args.models:
        print(f"\n  {model.upper()} (batch {BATCH[model]}, Adam)")
        print(f"  {'':<10} {'precision':<9} {'ms/step':>8} {'vs fp32':>8} {'rounds (ms)':<26} "
              f"{'activation':>11} {'act %':>6} {'peak':>9}  peak by category (KiB)")
        for framework in frameworks:
            base = _median_ms(results[(framework, model, "float32")])
            base_act = (results[(framework, model, "float32")] or [{}])[0].get("activation")
            for precision in PRECISIONS:
                rs = results[(framework, model, precision)]
                if not rs:
                    print(f"  {framework:<10} {precision:<9} {'-':>8}  (not run: see above)")
                    continue
                ms = _median_ms(rs)
                per_round = " ".join(f"{statistics.median(r['step_times']) * 1e3:.2f}" for r in rs)
                ratio = f"{ms / base:.2f}x" if base else "-"
                line = f"  {framework:<10} {precision:<9} {ms:>8.2f} {ratio:>8} {per_round:<26}"
                if "activation" in rs[0]:
                    act = rs[0]["activation"]
                    share = f"{act / base_act:.0%}" if base_act else "-"
                    split = ", ".join(f"{k} {v / 1024:.0f}" for k, v in rs[0]["peak_by_category"].items() if v)
                    line += f" {act / 1024:>9.0f}Ki {share:>6} {rs[0]['peak'] / 1024:>7.0f}Ki  {split}"
                print(line)
    print("\n  ms/step: median over rounds of each round's median step; vs fp32: against the same framework's "
          "float32 step; act %: activation high-water mark against float32's (targets: float16 <= 1.3x and "
          "bfloat16 <= 1.5x the float32 step, float16 activations <= 55 %)")


def _median_ms(rounds: list[dict]) -> float | None:
    if not rounds:
        return None
    return statistics.median(statistics.median(r["step_times"]) for r in rounds) * 1e3


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("  (PyTorch not installed: its columns are left out)")
        return False
    return True


# ----------------------------------------------------------------------------------------------- accuracy

def train_accuracy(args) -> dict:
    """Train ``args.model`` for ``args.epochs`` in ``args.precision``; the test accuracy after each epoch."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.amp import GradScaler, autocast
    from minigrad.training.recipes import RECIPES

    recipe = RECIPES["mnist-mlp" if args.model == "mlp" else "mnist-cnn"]
    (x, y), (xt, yt) = mnist_arrays(args.subset)
    mt.manual_seed(0)
    model = recipe.build()
    opt = optim.Adam(model.parameters(), lr=recipe.lr)
    steps_per_epoch = (len(y) + recipe.batch_size - 1) // recipe.batch_size
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    scaler = GradScaler("cpu", enabled=args.precision == "float16")
    dtype = {"float16": mt.float16, "bfloat16": mt.bfloat16}.get(args.precision)
    accuracies, skipped, begin = [], 0, time.perf_counter()
    for order in epoch_orders(len(y), args.epochs):
        model.train()
        for i in range(0, len(order), recipe.batch_size):
            idx = order[i:i + recipe.batch_size]
            opt.zero_grad()
            with autocast("cpu", dtype=dtype, enabled=dtype is not None):
                loss = loss_fn(model(mt.from_numpy(x[idx])), mt.from_numpy(y[idx]))
            scaler.scale(loss).backward()
            scale = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            skipped += scaler.get_scale() < scale
            sched.step()
        model.eval()
        correct = 0
        with mt.no_grad(), autocast("cpu", dtype=dtype, enabled=dtype is not None):
            for i in range(0, len(yt), 1000):
                correct += int((model(mt.from_numpy(xt[i:i + 1000])).float().numpy().argmax(1) == yt[i:i + 1000]).sum())
        accuracies.append(correct / len(yt))
    return {"accuracies": accuracies, "skipped_steps": int(skipped), "seconds": time.perf_counter() - begin,
            "final_scale": scaler.get_scale()}


def accuracy_table(args) -> None:
    models = ["mlp"] + (["cnn"] if args.cnn else [])
    print(f"Test accuracy after {args.epochs} epochs (same seed, same batch order), each precision in its own process")
    for model in models:
        results = {p: _child(args, ["--only-accuracy", "--model", model, "--precision", p, "--epochs", str(args.epochs)]
                             + (["--subset"] if args.subset else [])) for p in PRECISIONS}
        base = results["float32"]["accuracies"][-1] if results["float32"] else None
        print(f"\n  {model.upper()}")
        for p, r in results.items():
            if r is None:
                continue
            acc = r["accuracies"][-1]
            delta = f"{(acc - base) * 100:+.2f} pp" if base is not None else "-"
            epochs = " ".join(f"{a:.2%}" for a in r["accuracies"])
            print(f"  {p:<9} {acc:>8.2%} {delta:>10}   by epoch: {epochs}   skipped steps {r['skipped_steps']}, "
                  f"final scale {r['final_scale']:g}, {r['seconds']:.0f} s")
    print("\n  acceptance: float16 + GradScaler and bfloat16 within 0.3 percentage points of float32")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=30, help="timed steps per round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=list(BATCH))
    p.add_argument("--device", default="cpu", help='"cpu", or "cuda" where minigrad.gpu has a GPU')
    p.add_argument("--threads", type=int, default=1, help="BLAS / PyTorch threads in each contender")
    p.add_argument("--subset", action="store_true", help="the bundled MNIST subset (no download)")
    p.add_argument("--accuracy", action="store_true", help="train and compare test accuracies instead")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--cnn", action="store_true", help="with --accuracy: the CNN too")
    p.add_argument("--only", help=argparse.SUPPRESS)
    p.add_argument("--only-accuracy", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", default="mlp", help=argparse.SUPPRESS)
    p.add_argument("--precision", default="float32", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.only_accuracy:
        print(json.dumps(train_accuracy(args)))
    elif args.only:
        batch = one_batch(args.model, args.subset)
        print(json.dumps((run_minigrad if args.only == "minigrad" else run_torch)(args, batch)))
    elif args.accuracy:
        accuracy_table(args)
    else:
        step_table(args)


if __name__ == "__main__":
    main()
