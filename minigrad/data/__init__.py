"""Stage 3 (chapter 05): datasets, the DataLoader, transforms and MNIST."""

from minigrad.data.cache import data_root
from minigrad.data.dataset import Dataset, Subset, TensorDataset, random_split
from minigrad.data.idx import IDXError, parse_idx
from minigrad.data.loader import DataLoader, default_collate
from minigrad.data.mnist import MNIST, MNISTNotFound
from minigrad.data.transforms import Compose, Normalize, RandomCrop, RandomShift

__all__ = [
    "Dataset", "TensorDataset", "Subset", "random_split", "DataLoader", "default_collate",
    "MNIST", "MNISTNotFound", "IDXError", "parse_idx", "data_root",
    "Compose", "Normalize", "RandomCrop", "RandomShift",
]
