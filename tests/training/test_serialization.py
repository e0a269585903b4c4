"""save/load: bit-exact round trips, no pickle, clear errors."""

import os
import stat
import zipfile
from pathlib import Path

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


# ----------------------------------------------------------------------------- atomic writes


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_save_leaves_no_temporary_file_and_keeps_the_old_checkpoint(tmp_path, monkeypatch, failure):
    path = save({"x": tensor([1.0])}, tmp_path / "a.npz")
    before = path.read_bytes()

    def savez_that_fails(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise failure

    monkeypatch.setattr(np, "savez", savez_that_fails)
    with pytest.raises(type(failure)):
        save({"x": tensor([2.0])}, path)
    assert _files(tmp_path) == ["a.npz"] and path.read_bytes() == before


def test_save_to_a_folder_fails_cleanly(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(IsADirectoryError):
        save({"x": tensor([1.0])}, tmp_path / "run")
    assert _files(tmp_path / "run") == [] and _files(tmp_path) == ["run"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_save_keeps_permissions_and_new_files_follow_the_umask(tmp_path):
    path = save({"x": tensor([1.0])}, tmp_path / "shared.npz")
    os.chmod(path, 0o640)
    save({"x": tensor([2.0])}, path)
    assert path.stat().st_mode & 0o777 == 0o640  # replacing it kept its mode
    for umask in (0o022, 0o077):
        previous = os.umask(umask)
        try:
            fresh = save({"x": tensor([1.0])}, tmp_path / f"new{umask:o}.npz")
        finally:
            os.umask(previous)
        assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask  # not tempfile's 0o600


def test_save_fsyncs_the_file_before_the_rename_and_then_the_folder(tmp_path, monkeypatch):
    import minigrad.files as files

    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    save({"x": tensor([1.0])}, tmp_path / "a.npz")
    expected = [("fsync", "file"), ("replace", "a.npz")] + ([("fsync", "folder")] if os.name == "posix" else [])
    assert events == expected


# ----------------------------------------------------------------------------- load never lets another error escape


def _checkpoint_bytes(tmp_path) -> tuple[bytes, dict]:
    obj = {"model": {"w": randn(4, 3), "b": tensor([1, 2, 3], dtype=int64)}, "step": 3, "betas": (0.9, 0.99),
           "array": np.arange(5, dtype=np.uint8), "name": "mlp"}
    return save(obj, tmp_path / "good.npz").read_bytes(), obj


def _same(back, obj) -> bool:
    return (
        back["model"]["w"].numpy().tobytes() == obj["model"]["w"].numpy().tobytes()
        and back["model"]["b"].tolist() == [1, 2, 3] and back["step"] == 3 and back["betas"] == (0.9, 0.99)
        and np.array_equal(back["array"], obj["array"]) and back["name"] == "mlp"
    )


def _expect_checkpoint_error(path, match=None):
    with pytest.raises(CheckpointError) as info:
        load(path)
    assert "allow_pickle" not in str(info.value)
    if match is not None:
        assert match in str(info.value), str(info.value)
    return info.value


def test_load_bit_flips_and_truncations(tmp_path):
    """Every single-bit flip and every truncation: a CheckpointError, or (flips in unused zip fields) the same content."""
    data, obj = _checkpoint_bytes(tmp_path)
    rng = np.random.default_rng(0)  # fixed: the same flips on every run
    path = tmp_path / "damaged.npz"
    loaded_fine = 0
    for position in range(len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(damaged))
        try:
            back = load(path)
        except CheckpointError as err:
            assert "allow_pickle" not in str(err)
        else:
            loaded_fine += 1
            assert _same(back, obj), f"a flip at byte {position} changed the content without an error"
    assert loaded_fine < len(data) // 3  # most flips are caught (CRC, headers, sizes)
    for length in range(0, len(data), 7):
        path.write_bytes(data[:length])
        _expect_checkpoint_error(path)


def _npz(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


def _npy(array=None, *, header=None, data=b"", version=(1, 0)) -> bytes:
    import io

    buffer = io.BytesIO()
    if array is not None:
        np.lib.format.write_array(buffer, array, allow_pickle=True)
        return buffer.getvalue()
    writer = np.lib.format.write_array_header_1_0 if version == (1, 0) else np.lib.format.write_array_header_2_0
    writer(buffer, header)
    return buffer.getvalue() + data


def _structure(root, **fields) -> bytes:
    import json

    doc = {"format": "minigrad-checkpoint", "version": 1, "root": root, **fields}
    return _npy(np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8))


HUGE = {"descr": "<f4", "fortran_order": False, "shape": (10**12,)}

CRAFTED = {
    "no structure": ({"a.npy": _npy(np.zeros(3))}, "not a minigrad checkpoint"),
    "structure of floats": ({"__structure__.npy": _npy(np.zeros(3))}, "not bytes"),
    "structure not JSON": ({"__structure__.npy": _npy(np.frombuffer(b"{oops", dtype=np.uint8))}, "not valid JSON"),
    "structure not UTF-8": ({"__structure__.npy": _npy(np.frombuffer(b"\xff\xfe", dtype=np.uint8))}, "not valid JSON"),
    "structure a list": ({"__structure__.npy": _npy(np.frombuffer(b"[1, 2]", dtype=np.uint8))}, "not a minigrad checkpoint"),
    "version a string": ({"__structure__.npy": _structure(1, version="1")}, "format version '1'"),
    "version true": ({"__structure__.npy": _structure(1, version=True)}, "format version True"),
    "newer version": ({"__structure__.npy": _structure(1, version=99)}, "newer minigrad"),
    "no root": ({"__structure__.npy": _npy(np.frombuffer(b'{"format": "minigrad-checkpoint", "version": 1}', dtype=np.uint8))}, "no 'root'"),
    "missing member": ({"__structure__.npy": _structure({"__tensor__": "t7"})}, "refers to the array 't7', which the file does not contain"),
    "member key not a string": ({"__structure__.npy": _structure({"__ndarray__": [1]})}, "refers to the array"),
    "bad pair": ({"__structure__.npy": _structure({"__dict__": [[1, 2, 3]]})}, "where a [key, value] pair"),
    "bool key": ({"__structure__.npy": _structure({"__dict__": [[True, 2]]})}, "where a [key, value] pair"),
    "dict not a list": ({"__structure__.npy": _structure({"__dict__": {"a": 1}})}, "unknown entry"),
    "unknown marker": ({"__structure__.npy": _structure({"__module__": "os"})}, "unknown entry ['__module__']"),
    "requires_grad a string": ({"__structure__.npy": _structure({"__tensor__": "t0", "requires_grad": "yes"}),
                                "t0.npy": _npy(np.zeros(2))}, "requires_grad='yes'"),
    "tensor of strings": ({"__structure__.npy": _structure({"__tensor__": "t0"}), "t0.npy": _npy(np.array(["a", "b"]))},
                          "cannot be a tensor"),
    "int tensor requiring grad": ({"__structure__.npy": _structure({"__tensor__": "t0", "requires_grad": True}),
                                   "t0.npy": _npy(np.arange(2))}, "cannot be a tensor"),
    "object array": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                      "t0.npy": _npy(np.array([{"a": 1}, None], dtype=object))}, "holds Python objects"),
    "huge shape": ({"__structure__.npy": _structure({"__tensor__": "t0"}), "t0.npy": _npy(header=HUGE, data=b"\0" * 16)},
                   "header says shape (1000000000000,) of float32 (4000000000000 bytes) but the entry holds 16 bytes"),
    "huge 2-d shape": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                        "t0.npy": _npy(header={**HUGE, "shape": (2**40, 2**40)}, data=b"\0" * 8)}, "is damaged"),
    "negative shape": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                        "t0.npy": _npy(header={**HUGE, "shape": (-4,)}, data=b"\0" * 16)}, "is damaged"),
    "too little data": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                         "t0.npy": _npy(np.zeros(10))[:-8]}, "is damaged"),
    "version 2 header": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                          "t0.npy": _npy(header={**HUGE, "shape": (5,)}, data=b"\0" * 16, version=(2, 0))}, "is damaged"),
    "version 3 header": ({"__structure__.npy": _structure({"__ndarray__": "t0"}),
                          "t0.npy": b"\x93NUMPY\x03\x00" + _npy(np.zeros(2))[8:]}, "format version (3, 0)"),
    "not npy at all": ({"__structure__.npy": b"hello"}, "malformed .npy header"),
    "huge header": ({"__structure__.npy": _npy(header={**HUGE, "shape": (0,) * 5000})}, "malformed .npy header"),
    "deep nesting": ({"__structure__.npy": _npy(np.frombuffer(
        b'{"format": "minigrad-checkpoint", "version": 1, "root": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        dtype=np.uint8))}, "nested too deeply"),
    "nesting beyond the limit": ({"__structure__.npy": _npy(np.frombuffer(
        b'{"format": "minigrad-checkpoint", "version": 1, "root": ' + b"[" * 500 + b"]" * 500 + b"}",
        dtype=np.uint8))}, "nested more than"),
}


@pytest.mark.parametrize("case", CRAFTED)
def test_load_refuses_crafted_archives_with_its_own_error(tmp_path, case):
    members, message = CRAFTED[case]
    _expect_checkpoint_error(_npz(tmp_path / "crafted.npz", members), message)


def test_load_refuses_folders_empty_files_and_other_formats(tmp_path):
    _expect_checkpoint_error(tmp_path, "is a folder, not a checkpoint file")
    (tmp_path / "empty.npz").write_bytes(b"")
    _expect_checkpoint_error(tmp_path / "empty.npz", "corrupt or truncated")
    np.save(tmp_path / "single.npy", np.zeros(3))
    _expect_checkpoint_error(tmp_path / "single.npy", "corrupt or truncated")
    import gzip

    (tmp_path / "zipped.npz").write_bytes(gzip.compress(b"not a zip"))
    _expect_checkpoint_error(tmp_path / "zipped.npz")
    np.savez_compressed(tmp_path / "plain.npz", a=np.zeros(3))
    _expect_checkpoint_error(tmp_path / "plain.npz", "not a minigrad checkpoint")


def test_load_reads_compressed_and_unreferenced_members(tmp_path):
    data, obj = _checkpoint_bytes(tmp_path)
    with zipfile.ZipFile(tmp_path / "good.npz") as src, zipfile.ZipFile(tmp_path / "deflated.npz", "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("extra.npy", b"whatever: it is never read")
    assert _same(load(tmp_path / "deflated.npz"), obj)
