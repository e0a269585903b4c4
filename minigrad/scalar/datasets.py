"""Small 2-D classification datasets, generated here (no scikit-learn needed).

Each function returns ``(points, labels)``: a list of ``[x, y]`` pairs and a
list of labels in {-1.0, +1.0} (the form ``hinge_loss`` wants). The same
``seed`` always gives the same data.
"""

from __future__ import annotations

import math
import random

__all__ = ["make_moons", "make_spirals"]


def _check(n: int, name: str) -> None:
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"{name}: n must be an int >= 2, got {n!r}")


def make_moons(n: int = 100, noise: float = 0.1, seed: int = 0):
    """Two interleaving half circles: half the points per moon, Gaussian ``noise`` added."""
    _check(n, "make_moons")
    rng = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        upper = i % 2 == 0
        t = math.pi * rng.random()
        if upper:
            x, y, label = math.cos(t), math.sin(t), -1.0
        else:
            x, y, label = 1.0 - math.cos(t), 0.5 - math.sin(t), 1.0
        points.append([x + rng.gauss(0.0, noise), y + rng.gauss(0.0, noise)])
        labels.append(label)
    return points, labels


def make_spirals(n: int = 100, turns: float = 1.5, noise: float = 0.05, seed: int = 0):
    """Two intertwined spiral arms, one per class; harder than moons for a small MLP."""
    _check(n, "make_spirals")
    rng = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        arm = i % 2
        r = rng.random()
        angle = 2.0 * math.pi * turns * r + math.pi * arm
        points.append([r * math.cos(angle) + rng.gauss(0.0, noise), r * math.sin(angle) + rng.gauss(0.0, noise)])
        labels.append(1.0 if arm else -1.0)
    return points, labels
