"""Transforms on batches of images shaped (N, C, H, W), float32 NumPy arrays.

Random transforms own a seeded generator, so a run is reproducible.
"""

from __future__ import annotations

import numpy as np


class Compose:
    """Apply transforms one after another."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, images: np.ndarray) -> np.ndarray:
        for t in self.transforms:
            images = t(images)
        return images

    def __repr__(self) -> str:
        return f"Compose({self.transforms})"


class Normalize:
    """``(x - mean) / std`` per channel; MNIST's usual values are mean 0.1307, std 0.3081."""

    def __init__(self, mean, std):
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)
        if np.any(self.std <= 0):
            raise ValueError(f"Normalize: std must be positive, got {std}")

    def __call__(self, images: np.ndarray) -> np.ndarray:
        return (images - self.mean) / self.std

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean.ravel().tolist()}, std={self.std.ravel().tolist()})"


class RandomCrop:
    """Pad by ``padding`` then cut a random ``size`` x ``size`` window from each image.

    ``size=None`` keeps the input's size, which makes the crop a random shift.
    """

    def __init__(self, size: int | None, padding: int = 0, fill: float = 0.0, seed: int = 0):
        if padding < 0:
            raise ValueError(f"{type(self).__name__}: padding must be >= 0, got {padding}")
        self.size = None if size is None else int(size)
        self.padding = int(padding)
        self.fill = fill
        self.rng = np.random.default_rng(seed)

    def __call__(self, images: np.ndarray) -> np.ndarray:
        p = self.padding
        crop_h, crop_w = (images.shape[2], images.shape[3]) if self.size is None else (self.size, self.size)
        padded = np.pad(images, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=self.fill) if p else images
        n, c, h, w = padded.shape
        if crop_h > h or crop_w > w:
            raise ValueError(f"{type(self).__name__}: crop {crop_h}x{crop_w} is larger than the padded image {h}x{w}")
        top = self.rng.integers(0, h - crop_h + 1, size=n)
        left = self.rng.integers(0, w - crop_w + 1, size=n)
        rows = top[:, None] + np.arange(crop_h)[None, :]  # (N, crop_h)
        cols = left[:, None] + np.arange(crop_w)[None, :]  # (N, crop_w)
        batch = np.arange(n)[:, None, None, None]
        channel = np.arange(c)[None, :, None, None]
        return padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]

    def __repr__(self) -> str:
        return f"RandomCrop({self.size}, padding={self.padding})"


class RandomShift(RandomCrop):
    """Shift each image by up to ``max_shift`` pixels in each direction, filling with ``fill``.

    A cheap augmentation: a digit moved two pixels is still the same digit.
    """

    def __init__(self, max_shift: int = 2, fill: float = 0.0, seed: int = 0):
        super().__init__(None, padding=max_shift, fill=fill, seed=seed)

    def __repr__(self) -> str:
        return f"RandomShift(max_shift={self.padding})"
