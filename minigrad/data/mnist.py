"""MNIST: 70,000 28x28 grey-scale digits (LeCun, Cortes and Burges; CC BY-SA 3.0).

``MNIST(train=True)`` looks for the four original IDX files in ``root`` (default:
``$MINIGRAD_DATA`` or the user cache), downloads them from the first working
mirror when allowed, and checks every file against its canonical MD5.
``MNIST(subset=True)`` uses the small copy shipped inside the package (the
first 5,000 training and 1,000 test images), so demos and tests run offline.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from minigrad.data.cache import data_root
from minigrad.data.dataset import Dataset
from minigrad.data.download import DownloadError, download, verified
from minigrad.data.idx import parse_idx, read_raw

MIRRORS = [
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
]

# MD5 of the uncompressed files: the canonical values.
FILES = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}

SUBSET_DIR = Path(__file__).resolve().parent / "mnist_subset"
SUBSET_SIZES = {"train": 5000, "test": 1000}


class MNISTNotFound(FileNotFoundError):
    """The MNIST files are not on disk and could not be downloaded.

    ``missing``: the file names; ``folders``: where they were looked for;
    ``download_errors``: why each download failed (empty with ``download=False``).
    :meth:`explain` words the message for another interface (the command
    line says ``--subset`` and ``--no-download``).
    """

    SUBSET_HINT = "or use MNIST(subset=True) for the small copy shipped with minigrad"

    def __init__(self, missing: list[str], folders: list[Path], root: Path, download_errors: list[str]):
        self.missing, self.folders, self.root, self.download_errors = missing, folders, root, download_errors
        super().__init__(self.explain())

    def __reduce__(self):
        return type(self), (self.missing, self.folders, self.root, self.download_errors)

    def explain(self, subset_hint: str = SUBSET_HINT, no_download: str = "download=False") -> str:
        looked = "\n  ".join(str(p) for p in self.folders)
        why = (
            "\nDownloads failed:\n" + "\n".join(self.download_errors)
            if self.download_errors
            else f"\n({no_download}: nothing was downloaded)"
        )
        return (
            f"MNIST files not found: {', '.join(m + '.gz' for m in self.missing)}.\n"
            f"Looked in:\n  {looked}\n"
            f"Put the four original files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
            f"t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) in {self.root / 'mnist'}, "
            f"or set MINIGRAD_DATA to the folder that holds them, {subset_hint}." + why
        )


def _candidates(root: Path) -> list[Path]:
    return [root, root / "mnist", root / "MNIST" / "raw"]


def _find(stem: str, root: Path) -> Path | None:
    for folder in _candidates(root):
        for name in (stem + ".gz", stem):
            path = folder / name
            if path.is_file():
                return path
    return None


@lru_cache(maxsize=8)
def _load(path: Path, mtime: float) -> np.ndarray:
    return parse_idx(read_raw(path), str(path))


def _read(path: Path) -> np.ndarray:
    return _load(path, path.stat().st_mtime)


def locate(split_files: list[str], root: Path, allow_download: bool) -> dict[str, Path]:
    """Paths of the requested MNIST files, verified; downloads missing ones when allowed."""
    found, missing = {}, []
    for stem in split_files:
        path = _find(stem, root)
        if path is not None and not verified(path, FILES[stem]):
            raise ValueError(
                f"MNIST: {path} does not match the canonical checksum (MD5 {FILES[stem]} of the uncompressed file); "
                f"it is corrupt or truncated - delete it and run again to download a fresh copy"
            )
        if path is None:
            missing.append(stem)
        else:
            found[stem] = path
    errors = []
    if missing and allow_download:
        for stem in list(missing):
            try:
                found[stem] = download(stem + ".gz", MIRRORS, FILES[stem], root / "mnist")
                missing.remove(stem)
            except DownloadError as err:
                errors.append(str(err))
    if missing:
        raise MNISTNotFound(missing, _candidates(root), root, errors)
    return found


class MNIST(Dataset):
    """The MNIST digits as a Dataset of ``(image, label)``.

    ``data``: uint8 array (N, 28, 28); ``targets``: int64 array (N,).
    An item is a float32 image of shape (1, 28, 28) scaled to [0, 1] and an int label.
    ``transform`` acts on batches of images, shape (N, 1, 28, 28).
    """

    def __init__(self, root=None, train: bool = True, download: bool = True, subset: bool = False, transform=None):
        split = "train" if train else "t10k"
        stems = [f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte"]
        if subset:
            images, labels = (_read(SUBSET_DIR / f"{stem}.gz") for stem in stems)
        else:
            self.root = Path(root).expanduser() if root is not None else data_root()
            paths = locate(stems, self.root, download)
            images, labels = (_read(paths[stem]) for stem in stems)
        if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
            raise ValueError(f"MNIST: {images.shape[0]} images of shape {images.shape[1:]} but {labels.shape[0]} labels")
        self.data = images
        self.targets = labels.astype(np.int64)
        self.train = train
        self.subset = subset
        self.transform = transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitems__(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """A batch at once: images float32 (B, 1, 28, 28) in [0, 1], labels int64 (B,)."""
        indices = np.asarray(indices, dtype=np.int64)
        images = self.data[indices].astype(np.float32)[:, None] * np.float32(1 / 255)
        if self.transform is not None:
            images = self.transform(images)
        return images, self.targets[indices]

    def __getitem__(self, index: int):
        images, labels = self.__getitems__([index])
        return images[0], int(labels[0])

    def __repr__(self) -> str:
        kind = "shipped subset" if self.subset else str(self.root)
        return f"MNIST({'train' if self.train else 'test'}, {len(self)} images, {kind})"
