"""The MNIST MLP and CNN epochs of two revisions of minigrad, taking turns: did a change make training slower?

Check out the other revision beside this one and point ``--baseline`` at it::

    git worktree add /tmp/minigrad-before <commit>
    python benchmarks/between_revisions.py --baseline /tmp/minigrad-before [--rounds 6] [--subset]

Each round runs every benchmark once per revision, in its own process, the
two revisions alternating (A B, then B A in the next round, so a drift of the
machine's speed hits both alike). Each process trains with that revision's own
copy of ``mnist_mlp.py`` / ``mnist_cnn.py`` (``--only minigrad``) with that
revision first on ``PYTHONPATH``. It prints each round's epoch times and the
ratio of the medians (this revision over the baseline; above 1 is slower).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BENCHMARKS = {"mlp": ("mnist_mlp.py", 1), "cnn": ("mnist_cnn.py", 1)}


def epoch_time(tree: Path, script: str, epochs: int, subset: bool) -> float:
    """The median epoch time of one ``--only minigrad`` run of ``tree``'s benchmark script, in its own process."""
    cmd = [sys.executable, str(tree / "benchmarks" / script), "--only", "minigrad", "--epochs", str(epochs)]
    if subset:
        cmd.append("--subset")
    env = dict(os.environ, PYTHONPATH=str(tree))
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    if run.returncode != 0:
        raise SystemExit(f"{tree}: {script} failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])["epoch_seconds"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, required=True, help="a checkout of the revision to compare against")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--subset", action="store_true", help="train on the shipped 5,000-image subset (a quick run)")
    p.add_argument("--only", choices=sorted(BENCHMARKS), help="run one benchmark only")
    args = p.parse_args()
    baseline = args.baseline.resolve()
    if not (baseline / "minigrad" / "__init__.py").is_file():
        raise SystemExit(f"--baseline {baseline}: no minigrad package there (check out a revision of this repository)")
    names = [args.only] if args.only else list(BENCHMARKS)
    times: dict[str, dict[str, list[float]]] = {n: {"this": [], "baseline": []} for n in names}
    for r in range(args.rounds):
        order = [("this", HERE), ("baseline", baseline)]
        if r % 2:
            order.reverse()
        for name in names:
            script, epochs = BENCHMARKS[name]
            for who, tree in order:
                times[name][who].append(epoch_time(tree, script, epochs, args.subset))
            print(f"round {r + 1}: {name} this {times[name]['this'][-1]:.3f}s, baseline {times[name]['baseline'][-1]:.3f}s",
                  flush=True)
    print(f"\n{args.rounds} rounds, turns alternating; epoch time medians (seconds):")
    for name in names:
        this, base = statistics.median(times[name]["this"]), statistics.median(times[name]["baseline"])
        pairs = sorted(a / b for a, b in zip(times[name]["this"], times[name]["baseline"]))
        print(f"  {name}: this {this:.3f}  baseline {base:.3f}  ratio of medians {this / base:.3f}  "
              f"(pairwise ratios {pairs[0]:.3f} .. {pairs[-1]:.3f})")


if __name__ == "__main__":
    main()
