"""Stage 5's figures in one run: the tracker's cost, its peaks against the estimate and the ground truth,
and both allocator policies on replayed training steps.

    OPENBLAS_NUM_THREADS=1 python benchmarks/memory.py [--steps 469] [--subset] [--skip-overhead]

1. Tracker overhead on the chapter-05 MNIST MLP epoch (batch 128, Adam), process CPU time, plain and
   tracked chunks alternated, the mean of rounds in their own processes (``memory_tracker_overhead.py``);
   the target is at most 10 %.
2. For the chapter-05 MLP (batch 128) and the chapter-06 CNN (batch 64 and 1024), Adam, a steady
   training step (the second: Adam's moments exist): the tracked peak, ``estimate()``'s peak
   (allocated) beside the bytes the caching allocator reserves for the same step (the estimate's
   replay, and a real step on a simulated card big enough), tracemalloc's peak and the process's peak RSS. Each case runs in its own process, so the RSS is
   that case's. With PyTorch installed, the bytes PyTorch CPU holds in parameters, gradients and
   Adam state for the same parameter shapes stand beside minigrad's (torch.cuda is not available
   here, and the CPU allocator keeps no statistics, so the comparable figure is the tensor bytes).
3. The allocation trace of one training step of each model replayed through the caching allocator
   under best fit and first fit: peak reserved and fragmentation.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

MIB = 2 ** 20
CASES = {"mlp-128": ("mnist_mlp", 128), "cnn-64": ("mnist_cnn", 64), "cnn-1024": ("mnist_cnn", 1024)}
BIG_CARD = "t4"  # 16 GiB: every case fits, so the card's reserved peak is the step's own


def measure_case(case: str) -> dict:
    """One case's figures, measured in this process (call it in a fresh one for a meaningful peak RSS)."""
    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.memory import estimate, track
    from minigrad.memory.card_check import train_on_card
    from minigrad.training import recipes

    build, batch = getattr(recipes, CASES[case][0]), CASES[case][1]
    # first, while nothing else is on the registry (a simulated card counts every buffer it knows)
    predicted = estimate(build(), (1, 28, 28), batch, optimizer="adam")
    on_card = train_on_card(build(), (1, 28, 28), batch, BIG_CARD, optimizer="adam")
    assert on_card.fits and on_card.foreign == 0, on_card
    mt.manual_seed(0)
    model = build()
    optimizer = optim.Adam(model.parameters())
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        x, y = mt.randn(batch, 1, 28, 28), mt.randint(0, 10, (batch,))
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    step()  # the first step makes Adam's state
    with track(model, optimizer, ground_truth=True) as mem:
        step()
    held = mem.by_category()
    return {
        "tracked_peak": mem.peak,
        "estimate_peak": predicted.peak,
        "estimate_reserved": predicted.reserved,
        "card_reserved": on_card.peak_reserved,
        "tracemalloc_peak": mem.tracemalloc_peak,
        "peak_rss": peak_rss(),
        "model_state": held["parameter"] + held["gradient"] + held["optimizer_state"],
        "torch_model_state": torch_model_state([tuple(p.shape) for p in model.parameters()]),
    }


def peak_rss() -> int:
    """This process's peak resident set size in bytes.

    Linux's ``VmHWM`` where there is one: ``getrusage``'s ``ru_maxrss`` is carried over from the parent
    through fork and exec, so in a child of a large parent it reads the parent's peak.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def torch_model_state(shapes: list[tuple]) -> int | None:
    """Bytes of PyTorch CPU's parameters, gradients and Adam state after one step (None without PyTorch)."""
    try:
        import torch
    except ImportError:
        return None
    params = [torch.zeros(shape, requires_grad=True) for shape in shapes]
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer = torch.optim.Adam(params)
    optimizer.step()
    tensors = params + [p.grad for p in params]
    tensors += [t for state in optimizer.state.values() for t in state.values() if torch.is_tensor(t) and t.dim()]
    return sum(t.element_size() * t.nelement() for t in tensors)


def case_in_subprocess(case: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--case", case], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def peaks_table(cases) -> str:
    lines = [f"{'case (Adam)':<12} {'tracked':>9} {'estimate':>9} {'diff':>7} {'reserved':>9} {'on card':>8}"
             f" {'tracemalloc':>12} {'peak RSS':>9} {'params+grads+Adam':>18} {'PyTorch CPU':>12}   (MiB)",
             f"{'':<12} {'allocated':>9} {'allocated':>9} {'':>7} {'estimate':>9} {'reserved':>8}"]
    for case in cases:
        r = case_in_subprocess(case)
        diff = r["tracked_peak"] / r["estimate_peak"] - 1
        torch_state = "n/a" if r["torch_model_state"] is None else f"{r['torch_model_state'] / MIB:.2f}"
        lines.append(f"{case:<12} {r['tracked_peak'] / MIB:>9.2f} {r['estimate_peak'] / MIB:>9.2f} {diff:>+7.1%} "
                     f"{r['estimate_reserved'] / MIB:>9.2f} {r['card_reserved'] / MIB:>8.2f} "
                     f"{r['tracemalloc_peak'] / MIB:>12.2f} {r['peak_rss'] / MIB:>9.1f} "
                     f"{r['model_state'] / MIB:>18.2f} {torch_state:>12}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="steps of the overhead epoch (default: all)")
    parser.add_argument("--chunk", type=int, default=10, help="steps per alternating chunk")
    parser.add_argument("--rounds", type=int, default=3, help="overhead rounds, each in its own process")
    parser.add_argument("--subset", action="store_true", help="the bundled MNIST subset (no download)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--case", choices=list(CASES), help=argparse.SUPPRESS)  # one case, in a child process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(measure_case(args.case)))
        return

    if not args.skip_overhead:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from memory_tracker_overhead import tracker_overhead

        r = tracker_overhead(args.steps, args.subset, args.chunk, args.rounds)
        print(f"1. tracker overhead, MNIST MLP epoch (batch 128, Adam, {r['steps']} steps, process CPU time, "
              f"{len(r['rounds'])} rounds in their own processes), one tracker around the epoch: {r['overhead']:+.1%} (mean; rounds from "
              f"{r['lowest']:+.1%} to {r['highest']:+.1%}), target <= 10 %; {r['events_per_step']:.0f} events/step")
    print("\n2. a steady training step: tracked peak vs estimate (allocated), reserved by the caching allocator "
          "(the estimate's replay and a step on a simulated T4), vs ground truth")
    print(peaks_table(CASES))

    from minigrad.memory.allocator import compare_policies_on_training_step

    print("\n3. allocator policies on a replayed training step")
    for model, batch in (("mnist-mlp", 128), ("mnist-cnn", 64)):
        compare_policies_on_training_step(model, batch)


if __name__ == "__main__":
    main()
