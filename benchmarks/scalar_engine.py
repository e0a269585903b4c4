"""One training step of MLP(2, [16, 16, 1]) on 100 points with the hinge loss.

The step: forward all points, hinge loss + L2 penalty, backward, SGD update.
Printed side by side with micrograd (``pip install micrograd``) running the
very same workload, when it is installed. Median over repeated runs.

    python benchmarks/scalar_engine.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from minigrad.scalar import MLP, hinge_loss, l2_penalty, make_moons, sgd_step

N_POINTS = 100
ALPHA = 1e-4
LR = 0.1


def minigrad_step(model, points, labels):
    scores = [model(x) for x in points]
    loss = hinge_loss(scores, labels) + l2_penalty(model.parameters(), ALPHA)
    model.zero_grad()
    loss.backward()
    sgd_step(model.parameters(), LR)
    return loss.data


def micrograd_step(model, points, labels):
    """The same step written as micrograd's own demo writes it."""
    from micrograd.engine import Value

    inputs = [list(map(Value, x)) for x in points]
    scores = list(map(model, inputs))
    losses = [(1 + -y * s).relu() for y, s in zip(labels, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = ALPHA * sum(p * p for p in model.parameters())
    loss = data_loss + reg_loss
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= LR * p.grad
    return loss.data


def median_seconds(step, repeats: int) -> float:
    step()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    points, labels = make_moons(N_POINTS, noise=0.1, seed=0)

    model = MLP(2, [16, 16, 1], activation="relu", seed=0)
    results = {"minigrad": median_seconds(lambda: minigrad_step(model, points, labels), args.repeats)}
    try:
        import micrograd.nn

        random.seed(0)
        theirs = micrograd.nn.MLP(2, [16, 16, 1])
        results["micrograd"] = median_seconds(lambda: micrograd_step(theirs, points, labels), args.repeats)
    except ImportError:
        pass

    print(f"MLP(2, [16, 16, 1]) training step on {N_POINTS} points, median of {args.repeats}")
    for name, seconds in results.items():
        print(f"  {name:<10} {seconds * 1e3:8.2f} ms")
    if "micrograd" in results:
        print(f"  speed-up over micrograd: {results['micrograd'] / results['minigrad']:.2f}x")
    else:
        print("  (micrograd not installed: pip install micrograd==0.1.0 to compare)")
    return results


if __name__ == "__main__":
    main()
