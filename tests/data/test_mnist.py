"""MNIST: IDX parsing, the shipped subset, the full files, checksums, downloads and clear errors."""

import functools
import gzip
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import numpy as np

import pytest

from minigrad.data import MNIST, IDXError, MNISTNotFound, parse_idx
from minigrad.data import mnist as mnist_module
from minigrad.data.download import DownloadError, content_md5, download
from minigrad.data.idx import read_raw, write_idx

SUBSET = mnist_module.SUBSET_DIR


def _full_mnist_root() -> Path | None:
    env = os.environ.get("MINIGRAD_DATA")
    if env and (Path(env) / "mnist" / "train-images-idx3-ubyte.gz").exists():
        return Path(env)
    return None


def test_idx_round_trip(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    for name in ("x.idx", "x.idx.gz"):
        write_idx(a, tmp_path / name)
        assert np.array_equal(parse_idx(read_raw(tmp_path / name)), a)


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"", "bad magic"),
        (b"\x01\x00\x08\x01", "bad magic"),
        (b"\x00\x00\x08\x02\x00\x00", "truncated header"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x05abc", "truncated or corrupt"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x02abc", "truncated or corrupt"),
    ],
)
def test_bad_idx_is_rejected(raw, message):
    with pytest.raises(IDXError, match=message):
        parse_idx(raw)


def test_truncated_gzip_is_rejected(tmp_path):
    data = (SUBSET / "t10k-labels-idx1-ubyte.gz").read_bytes()
    path = tmp_path / "t.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(IDXError, match="truncated or corrupt"):
        read_raw(path)


def test_shipped_subset():
    train, test = MNIST(subset=True), MNIST(train=False, subset=True)
    assert len(train) == 5000 and len(test) == 1000
    image, label = train[0]
    assert image.shape == (1, 28, 28) and image.dtype == np.float32 and 0 <= image.min() and image.max() <= 1
    assert label == 5  # the first training digit of MNIST is a 5
    assert np.bincount(train.targets).min() > 400  # every digit is well represented
    images, labels = train.__getitems__([0, 1, 2])
    assert images.shape == (3, 1, 28, 28) and labels.tolist()[:3] == train.targets[:3].tolist()


@pytest.mark.skipif(_full_mnist_root() is None, reason="full MNIST not available (set MINIGRAD_DATA)")
def test_full_mnist_from_minigrad_data():
    train = MNIST(train=True, download=False)
    test = MNIST(train=False, download=False)
    assert len(train) == 60000 and len(test) == 10000
    assert np.array_equal(train.data[:5000], MNIST(subset=True).data)
    assert np.bincount(test.targets).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_missing_files_error_says_where_it_looked(tmp_path):
    with pytest.raises(MNISTNotFound) as info:
        MNIST(root=tmp_path, download=False)
    text = str(info.value)
    assert str(tmp_path) in text and str(tmp_path / "mnist") in text
    assert "train-images-idx3-ubyte.gz" in text and "MINIGRAD_DATA" in text and "subset=True" in text


def test_corrupt_file_is_detected_not_used(tmp_path):
    folder = tmp_path / "mnist"
    folder.mkdir()
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(SUBSET / name, folder / name)  # valid IDX, but not the canonical full file
    with pytest.raises(ValueError, match="does not match the canonical checksum"):
        MNIST(root=tmp_path, train=False, download=False)


def test_default_root_follows_minigrad_data(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_DATA", str(tmp_path))
    with pytest.raises(MNISTNotFound, match=str(tmp_path)):
        MNIST(download=False)


@pytest.fixture
def mirror(tmp_path):
    """A local HTTP server standing in for a mirror, serving tmp_path/served."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_download_tries_mirrors_and_verifies(tmp_path, mirror):
    served, url = mirror
    name = "t10k-labels-idx1-ubyte.gz"
    shutil.copy(SUBSET / name, served / name)
    md5 = content_md5(served / name)
    dead = "http://127.0.0.1:9/"  # nothing listens on the discard port
    path = download(name, [dead, url], md5, tmp_path / "cache")
    assert path.read_bytes() == (served / name).read_bytes()
    with pytest.raises(DownloadError) as info:
        download(name, [url], "0" * 32, tmp_path / "other")
    assert "checksum mismatch" in str(info.value)
    assert not list((tmp_path / "other").glob("*"))  # nothing half-written is left behind


def test_mnist_downloads_when_missing(tmp_path, mirror, monkeypatch):
    served, url = mirror
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        shutil.copy(SUBSET / f"{stem}.gz", served / f"{stem}.gz")
        monkeypatch.setitem(mnist_module.FILES, stem, content_md5(served / f"{stem}.gz"))
    monkeypatch.setattr(mnist_module, "MIRRORS", [url])
    test = MNIST(root=tmp_path / "data", train=False, download=True)
    assert len(test) == 1000 and (tmp_path / "data" / "mnist" / "t10k-images-idx3-ubyte.gz").exists()


def test_uncompressed_files_are_found_too(tmp_path, monkeypatch):
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        raw = gzip.decompress((SUBSET / f"{stem}.gz").read_bytes())
        (tmp_path / stem).write_bytes(raw)
        monkeypatch.setitem(mnist_module.FILES, stem, content_md5(tmp_path / stem))
    assert len(MNIST(root=tmp_path, train=False, download=False)) == 1000


# ----------------------------------------------------------------------------- corrupt archives


def _flipped(data: bytes, position: int) -> bytes:
    flipped = bytearray(data)
    flipped[position] ^= 0x10
    return bytes(flipped)


LABELS = "t10k-labels-idx1-ubyte"


def test_bit_flipped_archive_is_a_checksum_failure_not_a_zlib_error(tmp_path, monkeypatch):
    import zlib

    data = (SUBSET / f"{LABELS}.gz").read_bytes()
    broken = _flipped(data, 10)  # inside the deflate stream
    with pytest.raises(zlib.error):
        gzip.decompress(broken)  # what used to escape from the checksum
    folder = tmp_path / "mnist"
    folder.mkdir()
    shutil.copy(SUBSET / "t10k-images-idx3-ubyte.gz", folder)
    monkeypatch.setitem(mnist_module.FILES, "t10k-images-idx3-ubyte", content_md5(folder / "t10k-images-idx3-ubyte.gz"))
    monkeypatch.setitem(mnist_module.FILES, LABELS, content_md5(SUBSET / f"{LABELS}.gz"))
    for position in (10, 38, 200, len(data) - 9):  # zlib.error, CRC failures, a bad length field
        (folder / f"{LABELS}.gz").write_bytes(_flipped(data, position))
        with pytest.raises(ValueError, match=f"MNIST: .*{LABELS}.gz does not match the canonical checksum"):
            MNIST(root=tmp_path, train=False, download=False)
        with pytest.raises(IDXError, match="cannot be decompressed.*truncated or corrupt"):
            read_raw(folder / f"{LABELS}.gz")


@pytest.fixture
def mirrors(tmp_path):
    """Local HTTP servers standing in for mirrors (127.0.0.1 only): ``serve(files, truncate=False) -> url``.

    ``truncate=True`` announces the full Content-Length but sends only half
    of the body, as a connection cut mid-download does.
    """
    servers = []

    def serve(files: dict[str, bytes], truncate: bool = False) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if truncate else body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_download_moves_on_from_a_corrupt_or_cut_copy_and_leaves_no_part_file(tmp_path, mirrors):
    name = f"{LABELS}.gz"
    good = (SUBSET / name).read_bytes()
    md5 = content_md5(SUBSET / name)
    corrupt = mirrors({name: _flipped(good, 10)})  # a zlib.error when checked
    crc = mirrors({name: _flipped(good, 38)})  # a CRC failure
    cut = mirrors({name: good}, truncate=True)  # fewer bytes than announced
    healthy = mirrors({name: good})
    folder = tmp_path / "cache"
    path = download(name, [corrupt, crc, cut, healthy], md5, folder)
    assert path.read_bytes() == good
    assert sorted(p.name for p in folder.iterdir()) == [name]  # no .part left by the bad copies
    with pytest.raises(DownloadError) as info:
        download(name, [corrupt, crc, cut], md5, tmp_path / "other")
    text = str(info.value)
    assert text.count("checksum mismatch") == 2 and "corrupt or truncated" in text
    assert f"{cut}{name}: the transfer stopped after 263 of 526 bytes" in text
    assert not list((tmp_path / "other").iterdir())


def test_an_interrupted_download_leaves_no_part_file(tmp_path, mirrors, monkeypatch):
    from minigrad.data import download as download_module

    def interrupted(url, out, name, timeout):
        out.write(b"half of the file")
        raise KeyboardInterrupt

    monkeypatch.setattr(download_module, "_fetch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        download("x.gz", [mirrors({})], "0" * 32, tmp_path / "cache")
    assert not list((tmp_path / "cache").iterdir())


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_downloaded_files_follow_the_umask(tmp_path, mirrors, umask):
    name = f"{LABELS}.gz"
    url = mirrors({name: (SUBSET / name).read_bytes()})
    previous = os.umask(umask)
    try:
        path = download(name, [url], content_md5(SUBSET / name), tmp_path / "cache")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not tempfile's 0o600


def test_missing_files_error_can_name_another_way_to_the_subset(tmp_path):
    with pytest.raises(MNISTNotFound) as info:
        MNIST(root=tmp_path, download=False)
    text = info.value.explain("or run the command with --subset")
    assert "or run the command with --subset." in text and "MNIST(subset=True)" not in text
    assert info.value.missing == ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
    import pickle

    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


@pytest.mark.parametrize("value", ["", "relative/cache"])
def test_an_empty_or_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path, value):
    """The XDG spec: a relative path in XDG_CACHE_HOME is invalid and must be ignored (else data lands in the cwd)."""
    from minigrad.data.cache import data_root

    monkeypatch.delenv("MINIGRAD_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    monkeypatch.setenv("HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert data_root() == tmp_path / ".cache" / "minigrad"
