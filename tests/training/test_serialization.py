"""save/load: bit-exact round trips, no pickle, clear errors."""

import zipfile

import numpy as np
import pytest

import minigrad
from minigrad.nn.serialization import CheckpointError, load, save
from minigrad.tensor import float16, float64, int64, randn, tensor


def test_round_trip_is_bit_exact(tmp_path):
    obj = {
        "weights": randn(3, 4),
        "half": randn(5).to(float16),
        "double": randn(2, 2).to(float64),
        "labels": tensor([1, 2, 3], dtype=int64),
        "trainable": randn(2, requires_grad=True),
        "array": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "state": {0: {"step": 3, "exp_avg": randn(4)}, 1: {}},
        "groups": [{"lr": 0.1, "params": [0, 1], "betas": (0.9, 0.999), "nesterov": False, "name": None}],
        "epoch": 7,
    }
    path = save(obj, tmp_path / "ckpt.npz")
    back = load(path)
    for key in ("weights", "half", "double", "labels"):
        assert back[key].dtype == obj[key].dtype
        assert back[key].numpy().tobytes() == obj[key].numpy().tobytes()
    assert back["trainable"].requires_grad
    assert np.array_equal(back["array"], obj["array"]) and back["array"].dtype == np.uint8
    assert list(back["state"]) == [0, 1] and back["state"][0]["step"] == 3
    assert back["groups"][0]["betas"] == (0.9, 0.999) and back["groups"][0]["name"] is None
    assert back["epoch"] == 7


def test_top_level_entry_points(tmp_path):
    minigrad.save({"x": tensor([1.0])}, tmp_path / "a.npz")
    assert minigrad.load(tmp_path / "a.npz")["x"].tolist() == [1.0]


def test_files_are_plain_npz_without_pickle(tmp_path):
    path = save({"x": tensor([1.0, 2.0])}, tmp_path / "a.npz")
    with np.load(path, allow_pickle=False) as archive:  # would raise if anything needed pickle
        assert "__structure__" in archive.files


def test_unsupported_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="save model.state_dict\\(\\), not the model"):
        save({"model": object()}, tmp_path / "a.npz")
    with pytest.raises(TypeError, match="keys must be strings or ints"):
        save({(1, 2): 3}, tmp_path / "a.npz")


def test_corrupt_truncated_and_foreign_files(tmp_path):
    path = save({"x": randn(100)}, tmp_path / "a.npz")
    data = path.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load(tmp_path / "cut.npz")
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    with pytest.raises(CheckpointError, match="not a minigrad checkpoint"):
        load(tmp_path / "plain.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(CheckpointError):
        load(tmp_path / "text.npz")
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        load(tmp_path / "missing.npz")
    assert zipfile.is_zipfile(path)
