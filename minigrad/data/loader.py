"""DataLoader: batches from a dataset, shuffled by a seeded generator, prepared in the background.

A worker thread assembles the next ``prefetch`` batches while the training step
runs on the current one (NumPy's copies release the GIL, so the two overlap).
Each epoch draws a fresh permutation from the loader's generator: epochs differ,
runs repeat. With ``device=`` (``"cuda"``) each batch is copied to that device
in the worker thread too, so the host-to-device transfer of the next batch
overlaps the current step.

``state_dict()`` / ``load_state_dict()`` save and restore where the data
order stands: the generator's state the current epoch's order was drawn
from, and how many batches of it were handed out. Invariant: after
``load_state_dict(s)`` the next iteration yields exactly the batches the
saved loader had still to yield, in order (the order is drawn again from the
saved state; the batches handed out before are skipped, not fetched).
"""

from __future__ import annotations

import copy
import queue
import threading

import numpy as np

from minigrad.tensor import Tensor, device as as_device, tensor


def default_collate(batch):
    """Turn a batch into Tensors.

    ``batch`` is either what a dataset's ``__getitems__`` returned (a tuple of
    arrays, one per field) or a list of samples (tuples), which are stacked
    field by field.
    """
    if isinstance(batch, tuple) and all(isinstance(f, np.ndarray) for f in batch):
        fields = batch
    elif isinstance(batch, list) and batch and isinstance(batch[0], tuple):
        fields = tuple(np.stack([np.asarray(x.numpy() if isinstance(x, Tensor) else x) for x in column]) for column in zip(*batch))
    elif isinstance(batch, list):
        fields = (np.stack([np.asarray(x) for x in batch]),)
    else:
        raise TypeError(f"default_collate: cannot batch a {type(batch).__name__}; pass collate_fn=")
    return tuple(tensor(f) for f in fields) if len(fields) > 1 else tensor(fields[0])


def to_device(batch, device):
    """``batch`` (a Tensor, or a tuple/list/dict of them, nested) with every Tensor moved to ``device``."""
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


_DONE = object()


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``.

    shuffle: a new seeded permutation every epoch. drop_last: skip a final short
    batch. collate_fn: turns the fetched batch into what the loop receives
    (default: Tensors). prefetch: batches prepared ahead in a background thread
    (0 disables the thread). device: where the batches' tensors are handed
    over (default: where ``collate_fn`` made them, the CPU).
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 collate_fn=None, seed: int = 0, prefetch: int = 2, device=None):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if len(dataset) == 0:
            raise ValueError("DataLoader: the dataset is empty")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn or default_collate
        self.generator = np.random.default_rng(seed)
        self.prefetch = prefetch
        self.device = None if device is None else as_device(device)  # an unusable device fails here, not mid-epoch
        self._epoch_start = self._generator_state()  # the state the current (or next) epoch's order comes from
        self._position = 0  # batches of that epoch handed out so far
        self._resume_at = 0  # batches the next iteration skips (set by load_state_dict only)

    def __len__(self) -> int:
        n, b = len(self.dataset), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def _generator_state(self) -> dict:
        return copy.deepcopy(self.generator.bit_generator.state)

    def state_dict(self) -> dict:
        """Where the data order stands: ``{"epoch_start": generator state, "position": batches handed out}``."""
        if self._resume_at == 0 and self._position == 0:
            return {"epoch_start": self._generator_state(), "position": 0}
        return {"epoch_start": copy.deepcopy(self._epoch_start), "position": self._resume_at or self._position}

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`'s result: the next iteration yields the batches it had left."""
        if not isinstance(state, dict) or set(state) != {"epoch_start", "position"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"DataLoader.load_state_dict: expected {{'epoch_start', 'position'}} from "
                             f"DataLoader.state_dict(), got {got}")
        position = state["position"]
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position <= len(self):
            raise ValueError(f"DataLoader.load_state_dict: position={position!r} must be a whole number in "
                             f"[0, {len(self)}] (batches of one epoch); was it saved for another dataset or batch size?")
        try:
            self.generator.bit_generator.state = copy.deepcopy(state["epoch_start"])  # all or nothing
        except (TypeError, ValueError, KeyError) as err:
            raise ValueError(f"DataLoader.load_state_dict: epoch_start is not a state of this loader's "
                             f"{type(self.generator.bit_generator).__name__} generator ({err})") from None
        self._epoch_start, self._position, self._resume_at = self._generator_state(), 0, position

    def _index_batches(self) -> list[np.ndarray]:
        n = len(self.dataset)
        order = self.generator.permutation(n) if self.shuffle else np.arange(n)
        return [order[i : i + self.batch_size] for i in range(0, len(self) * self.batch_size, self.batch_size)]

    def _fetch(self, indices: np.ndarray):
        if hasattr(self.dataset, "__getitems__"):
            batch = self.dataset.__getitems__(indices)
        else:
            batch = [self.dataset[int(i)] for i in indices]
        batch = self.collate_fn(batch)
        return batch if self.device is None else to_device(batch, self.device)

    def __iter__(self):
        skip, self._resume_at = self._resume_at, 0
        self._epoch_start, self._position = self._generator_state(), skip
        batches = self._index_batches()[skip:]
        for item in self._batches(batches):
            self._position += 1
            yield item
        self._position = 0

    def _batches(self, batches):
        if self.prefetch <= 0:
            for indices in batches:
                yield self._fetch(indices)
            return
        ready: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()

        def work() -> None:
            try:
                for indices in batches:
                    item = self._fetch(indices)
                    while not stop.is_set():
                        try:
                            ready.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                ready.put(_DONE)
            except BaseException as err:  # hand the error to the consumer
                ready.put(err)

        worker = threading.Thread(target=work, name="minigrad-dataloader", daemon=True)
        worker.start()
        try:
            while True:
                item = ready.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join(timeout=5)

    def __repr__(self) -> str:
        return f"DataLoader({len(self.dataset)} samples, batch_size={self.batch_size}, shuffle={self.shuffle}, drop_last={self.drop_last})"
