"""Stage 3 (chapter 05): datasets, the DataLoader, transforms and MNIST.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (579 lines in all):

1. ``dataset.py`` (89 lines): a dataset is ``len()`` plus indexing;
   ``TensorDataset``, ``Subset``, ``random_split``.
2. ``loader.py`` (180 lines): :class:`DataLoader` — seeded shuffling, batches,
   ``default_collate``, the next batches prepared in a background thread,
   ``state_dict`` to resume mid-epoch in the same order.
3. ``idx.py`` (60 lines): MNIST's IDX file format: a header, then raw bytes.
4. ``mnist.py`` (165 lines): :class:`MNIST` — find (or download) the four
   files, check them, serve whole batches by fancy indexing.
5. ``transforms.py`` (85 lines): ``Normalize``, ``Compose``, and the random
   crops and shifts used for augmentation.

Extensions (not on the reading path)
------------------------------------
- ``download.py`` (100 lines): download from the first working mirror, with a checksum.
- ``cache.py`` (25 lines): where datasets live (``$MINIGRAD_DATA`` or the user cache).
"""

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
