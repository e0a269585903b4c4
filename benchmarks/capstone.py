"""The capstone at full size: the chapter-06 CNN at an effective batch of 16,384 on the simulated GTX 1050 (2 GB),
and the accuracy of the configuration that fits against the unconstrained float32 run.

    python benchmarks/capstone.py [--epochs 2] [--scale 32] [--skip-full-step]

Part 1 (full size). Each configuration chapter 11's search tries - float32, float16, + 4 checkpointed
segments, then accumulation, up to the first the card runs - is estimated (chapter 08's estimate, its step
replayed through the card's allocator, which empties its cache and retries when full: a fitting step's
reserved peak is the card's, one that does not fit shows what it would reserve on a card big enough), then
one real step of it runs on a fresh simulated GTX 1050 (``tracked_step``): the ones that do not fit stop with
the card's out-of-memory error, the one that fits reports its tracked and reserved peaks. A step at this batch
takes tens of seconds on a CPU, which is why the chapter estimates it and this script runs it.

Part 2 (accuracy). Training 16,384-example steps on a CPU for epochs is hours, so both runs are scaled down
by ``--scale`` (default 32): effective batch 16,384 / 32 = 512, the same knobs, on a GTX 1050 whose memory
and CUDA context are divided by the same factor. The float32 run has no card (no limit); the fitted run
trains inside the scaled card. Same seed, same data order, full MNIST, Adam 2e-3, ``--epochs`` epochs;
test accuracy on the 10,000 test images, step times (median) and the fitted run's reserved peak.

Needs the MNIST files (``$MINIGRAD_DATA`` or a download).
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import time

import numpy as np

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.capstone import TrainConfig, TrainingRun, fitting_configuration, tracked_step
from minigrad.data import DataLoader
from minigrad.data.mnist import MNIST
from minigrad.data.transforms import Normalize
from minigrad.memory import format_bytes, get_profile
from minigrad.training import evaluate
from minigrad.training.recipes import MNIST_MEAN, MNIST_STD, mnist_cnn

BATCH = 16384
SEGMENTS = 4


def scaled_card(scale: int):
    """The GTX 1050 with its memory and CUDA context divided by ``scale``."""
    card = get_profile("gtx1050")
    return dataclasses.replace(card, name=f"GTX 1050 at 1/{scale} scale", short_name=f"gtx1050/{scale}",
                               memory_bytes=card.memory_bytes // scale, context_bytes=card.context_bytes // scale)


def full_size(run_steps: bool) -> None:
    card = get_profile("gtx1050")
    mt.manual_seed(0)
    search = fitting_configuration(mnist_cnn(), (1, 28, 28), BATCH, card, checkpoint=SEGMENTS)
    print(search.table())
    if not run_steps:
        return
    print(f"\none real step of each on a fresh simulated {card.name}:")
    print(f"{'configuration':<40} {'estimate: allocated':>20} {'reserved':>10} {'card: allocated':>16} {'reserved':>10}"
          f" {'step s':>7}  verdict")
    for step in search.tried:
        start = time.perf_counter()
        tracked = tracked_step(mnist_cnn(), (1, 28, 28), step.config)
        seconds = time.perf_counter() - start
        verdict = "fits" if tracked.fits else f"out of memory ({tracked.error[:60]}...)"
        print(f"{step.label:<40} {format_bytes(step.peak):>20} {format_bytes(step.reserved):>10} "
              f"{format_bytes(tracked.peak):>16} {format_bytes(tracked.reserved):>10} {seconds:>7.1f}  {verdict}")


def train(config, epochs: int, train_set, test_set) -> tuple[float, float, TrainingRun]:
    mt.manual_seed(0)
    model = mnist_cnn()
    run = TrainingRun(model, optim.Adam(model.parameters(), lr=2e-3),
                      DataLoader(train_set, batch_size=config.batch_size, shuffle=True, seed=0, drop_last=True),
                      config, nn.CrossEntropyLoss())
    while run.epoch < epochs:
        run.step()
    accuracy = evaluate(run.model, DataLoader(test_set, batch_size=1000), run.loss_fn)[1]
    return accuracy, statistics.median(run.history.step_times), run


def accuracy(epochs: int, scale: int) -> None:
    card = scaled_card(scale)
    batch = BATCH // scale
    search = fitting_configuration(mnist_cnn(), (1, 28, 28), batch, card, checkpoint=SEGMENTS)
    transform = Normalize([MNIST_MEAN], [MNIST_STD])
    train_set, test_set = MNIST(train=True, transform=transform), MNIST(train=False, transform=transform)
    print(f"\naccuracy, scaled by {scale}: effective batch {batch}, {epochs} epochs of full MNIST, Adam 2e-3, seed 0")
    print(f"{'run':<48} {'test accuracy':>13} {'median step':>12} {'reserved peak':>14}")
    plain_accuracy, plain_step, _ = train(TrainConfig(batch), epochs, train_set, test_set)
    print(f"{'float32, no limit':<48} {plain_accuracy:>13.2%} {plain_step:>11.3f}s {'-':>14}")
    fitted_accuracy, fitted_step, run = train(search.config, epochs, train_set, test_set)
    print(f"{search.config.label() + ' on ' + card.name:<48} {fitted_accuracy:>13.2%} {fitted_step:>11.3f}s "
          f"{format_bytes(run.memory.peak_reserved):>14}  (of {format_bytes(card.usable_bytes)} usable)")
    print(f"difference: {100 * (fitted_accuracy - plain_accuracy):+.2f} percentage points; step time "
          f"{fitted_step / plain_step:.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scale", type=int, default=32)
    parser.add_argument("--skip-full-step", action="store_true", help="estimate the full-size steps, do not run them")
    parser.add_argument("--skip-accuracy", action="store_true")
    args = parser.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}, NumPy {np.__version__}")
    full_size(not args.skip_full_step)
    if not args.skip_accuracy:
        accuracy(args.epochs, args.scale)


if __name__ == "__main__":
    main()
