"""DataLoader, datasets, random_split and transforms."""

import threading

import numpy as np
import pytest

from minigrad.data import MNIST, DataLoader, Dataset, Normalize, RandomCrop, RandomShift, TensorDataset, random_split, Compose
from minigrad.tensor import Tensor, tensor


def _dataset(n=10):
    return TensorDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n))


@pytest.mark.parametrize("prefetch", [0, 2])
def test_batches_cover_the_dataset(prefetch):
    loader = DataLoader(_dataset(10), batch_size=4, prefetch=prefetch)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    x, y = batches[-1]
    assert isinstance(x, Tensor) and x.shape == (2, 2) and y.tolist() == [8, 9]
    assert DataLoader(_dataset(10), batch_size=4, drop_last=True).__len__() == 2
    assert len(list(DataLoader(_dataset(10), batch_size=4, drop_last=True))) == 2


def test_shuffle_is_seeded_and_differs_per_epoch():
    a = DataLoader(_dataset(20), batch_size=20, shuffle=True, seed=3)
    b = DataLoader(_dataset(20), batch_size=20, shuffle=True, seed=3)
    first_a, second_a = [next(iter(a))[1].tolist() for _ in range(2)]
    first_b = next(iter(b))[1].tolist()
    assert first_a == first_b and first_a != second_a
    assert sorted(first_a) == list(range(20))


def test_prefetch_gives_the_same_batches():
    plain = [y.tolist() for _, y in DataLoader(_dataset(50), batch_size=7, shuffle=True, seed=1, prefetch=0)]
    ahead = [y.tolist() for _, y in DataLoader(_dataset(50), batch_size=7, shuffle=True, seed=1, prefetch=3)]
    assert plain == ahead


def test_breaking_early_stops_the_worker():
    before = threading.active_count()
    for i, _ in enumerate(DataLoader(_dataset(100), batch_size=1, prefetch=2)):
        if i == 2:
            break
    assert threading.active_count() <= before


class Exploding(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("sample 2 is broken")
        return np.zeros(2), i


def test_dataset_errors_reach_the_training_loop():
    with pytest.raises(KeyError, match="sample 2 is broken"):
        list(DataLoader(Exploding(), batch_size=1))


def test_samples_without_getitems_are_collated():
    x, y = next(iter(DataLoader(Exploding(), batch_size=2)))
    assert x.shape == (2, 2) and y.tolist() == [0, 1]


def test_mnist_batches():
    x, y = next(iter(DataLoader(MNIST(subset=True), batch_size=32)))
    assert x.shape == (32, 1, 28, 28) and str(x.dtype) == "float32" and str(y.dtype) == "int64"


def test_random_split():
    parts = random_split(_dataset(10), [7, 3], seed=0)
    seen = sorted(int(p[i][1]) for p in parts for i in range(len(p)))
    assert [len(p) for p in parts] == [7, 3] and seen == list(range(10))
    assert [len(p) for p in random_split(_dataset(10), [0.5, 0.3, 0.2])] == [5, 3, 2]
    with pytest.raises(ValueError, match="sum to 9"):
        random_split(_dataset(10), [6, 3])


def test_tensor_dataset_checks_sizes():
    TensorDataset(tensor([[1.0], [2.0]]), tensor([0, 1]))
    with pytest.raises(ValueError, match=r"same first dimension; got shapes \(2, 1\), \(3,\)"):
        TensorDataset(np.zeros((2, 1)), np.zeros(3))


def test_bad_loader_arguments():
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        DataLoader(_dataset(), batch_size=0)


def test_transforms():
    images = np.random.default_rng(0).random((8, 1, 28, 28), dtype=np.float32)
    normal = Normalize([0.5], [0.25])(images)
    assert np.allclose(normal, (images - 0.5) / 0.25)
    shifted = RandomShift(2, seed=0)(images)
    assert shifted.shape == images.shape
    moved = [np.array_equal(shifted[i], images[i]) for i in range(8)]
    assert not all(moved)  # some images actually moved
    # a shifted image is the original moved: every shifted row/col window appears in the padded original
    cropped = RandomCrop(24, seed=0)(images)
    assert cropped.shape == (8, 1, 24, 24)
    assert Compose([RandomShift(1), Normalize([0.1307], [0.3081])])(images).shape == images.shape
    with pytest.raises(ValueError, match="larger than the padded image"):
        RandomCrop(30)(images)


def test_random_shift_is_a_pure_translation():
    image = np.zeros((1, 1, 5, 5), dtype=np.float32)
    image[0, 0, 2, 2] = 1.0
    out = RandomShift(2, seed=4)(image)
    assert out.sum() == 1.0  # the single bright pixel moved, nothing was blurred or lost


def _indices(batches):
    return [b[0].numpy().ravel().tolist() for b in batches]


@pytest.mark.parametrize("prefetch", [0, 2])
def test_state_dict_resumes_mid_epoch_with_the_same_order(prefetch):
    data = TensorDataset(tensor(np.arange(20).reshape(20, 1)))
    reference = DataLoader(data, batch_size=3, shuffle=True, seed=5, prefetch=prefetch)
    epochs = [_indices(reference), _indices(reference)]
    loader = DataLoader(data, batch_size=3, shuffle=True, seed=5, prefetch=prefetch)
    _indices(loader)
    batches = iter(loader)
    taken = [next(batches) for _ in range(4)]
    state = loader.state_dict()
    assert state["position"] == 4 and _indices(taken) == epochs[1][:4]
    resumed = DataLoader(data, batch_size=3, shuffle=True, seed=99, prefetch=prefetch)  # another seed: restored
    resumed.load_state_dict(state)
    assert resumed.state_dict()["position"] == 4
    assert _indices(resumed) == epochs[1][4:]  # the rest of the epoch, then the epochs after it as before
    reference_third = _indices(reference)
    assert _indices(resumed) == reference_third


def test_an_abandoned_iteration_still_starts_a_fresh_epoch():
    data = TensorDataset(tensor(np.arange(12).reshape(12, 1)))
    loader = DataLoader(data, batch_size=4, shuffle=True, seed=1, prefetch=0)
    for _ in loader:
        break
    assert len(_indices(loader)) == 3  # a whole epoch, not its remainder: only load_state_dict skips batches


def test_a_bad_loader_state_is_refused():
    loader = DataLoader(TensorDataset(tensor(np.arange(12).reshape(12, 1))), batch_size=4)
    with pytest.raises(ValueError, match="expected {'epoch_start', 'position'}"):
        loader.load_state_dict({"position": 1})
    with pytest.raises(ValueError, match=r"position=7 must be a whole number in \[0, 3\]"):
        loader.load_state_dict({"epoch_start": loader.state_dict()["epoch_start"], "position": 7})
    with pytest.raises(ValueError, match="epoch_start is not a state of this loader's PCG64 generator"):
        loader.load_state_dict({"epoch_start": {"bit_generator": "MT19937"}, "position": 0})
    assert loader.state_dict()["position"] == 0
