"""Datasets: anything with ``len()`` and indexing that returns one sample.

A dataset may also define ``__getitems__(indices)`` returning a whole batch at
once (as PyTorch's datasets may); the DataLoader uses it when present, which
turns a Python loop over samples into one NumPy fancy-index.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.tensor import Tensor


class Dataset:
    """Base class: subclasses define ``__len__`` and ``__getitem__``."""

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")


def _as_array(x) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


class TensorDataset(Dataset):
    """Samples are rows of the given tensors/arrays, which must share their first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        self.arrays = [_as_array(t) for t in tensors]
        sizes = {a.shape[0] if a.ndim else None for a in self.arrays}
        if len(sizes) != 1 or None in sizes:
            shapes = ", ".join(str(a.shape) for a in self.arrays)
            raise ValueError(f"TensorDataset: all tensors need the same first dimension; got shapes {shapes}")

    def __len__(self) -> int:
        return self.arrays[0].shape[0]

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)

    def __getitems__(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        return tuple(a[indices] for a in self.arrays)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        return self.dataset[int(self.indices[index])]

    def __getitems__(self, indices):
        picked = self.indices[np.asarray(indices, dtype=np.int64)]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(picked)
        return [self.dataset[int(i)] for i in picked]


def random_split(dataset, lengths, seed: int = 0) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (ints, or fractions summing to 1)."""
    n = len(dataset)
    lengths = list(lengths)
    if all(isinstance(x, float) for x in lengths):
        if not math.isclose(sum(lengths), 1.0, abs_tol=1e-6):
            raise ValueError(f"random_split: fractions must sum to 1, got {sum(lengths)}")
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):  # hand out the remainder round-robin, as PyTorch does
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths {lengths} sum to {sum(lengths)}, but the dataset has {n} samples")
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum([0, *lengths])
    return [Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
