# SPDX-License-Identifier: MIT
"""vtpu.datasets: Keras' shapes from libvtpu's loaders, the default
directories, and what a missing or broken dataset says."""
import gzip
import os
import struct

import numpy as np
import pytest

import vtpu.datasets as datasets

from _paths import SHARED  # noqa: E402


def need(name):
    d = os.path.join(SHARED, name)
    if not os.path.isdir(d):
        pytest.skip("no %s" % d)
    return d


@pytest.mark.parametrize("mod,name,first", [
    (datasets.mnist, "mnist", (5, 7)),
    (datasets.fashion_mnist, "fashion-mnist", (9, 9)),
])
def test_mnist_like_in_keras_shapes(mod, name, first):
    (x, y), (xt, yt) = mod.load_data(path=need(name))
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8
    assert y.shape == (60000,) and y.dtype == np.uint8
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    assert (int(y[0]), int(yt[0])) == first
    assert x.flags.c_contiguous and x.flags.writeable
    assert x.max() == 255 and x.min() == 0
    assert sorted(np.unique(y)) == list(range(10))
    assert np.bincount(y).min() > 5000


def test_default_directory_from_vtpu_data(monkeypatch):
    need("mnist")
    monkeypatch.setenv("VTPU_DATA", SHARED)
    (x, _), _ = datasets.mnist.load_data()
    assert x.shape == (60000, 28, 28)


def test_missing_dataset_says_where_and_how(monkeypatch, tmp_path):
    monkeypatch.setenv("VTPU_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        datasets.cifar10.load_data()
    msg = str(e.value)
    assert str(tmp_path / "cifar10") in msg and "tools/get-datasets" in msg
    with pytest.raises(FileNotFoundError, match="get-datasets"):
        datasets.mnist.load_data(path=str(tmp_path / "nowhere"))
    # a directory without the files: the loader names the file
    with pytest.raises(FileNotFoundError, match="train-images"):
        datasets.fashion_mnist.load_data(path=str(tmp_path))
    f = tmp_path / "file.bin"
    f.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        datasets.mnist.load_data(path=str(f))
    with pytest.raises(TypeError, match="path"):
        datasets.mnist.load_data(path=3)


def _idx(path, magic, dims, data):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(data.tobytes())


def write_mnist(d, n_train, n_test, rng, bad_label=False):
    os.makedirs(d, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        x = rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)
        y = rng.integers(0, 10, n).astype(np.uint8)
        if bad_label:
            y[-1] = 10
        _idx(os.path.join(d, "%s-images-idx3-ubyte.gz" % split), 0x803,
             (n, 28, 28), x)
        _idx(os.path.join(d, "%s-labels-idx1-ubyte.gz" % split), 0x801,
             (n,), y)
        out[split] = (x, y)
    return out


def test_mnist_files_are_read_exactly(tmp_path):
    rng = np.random.default_rng(1)
    want = write_mnist(str(tmp_path / "m"), 30, 7, rng)
    (x, y), (xt, yt) = datasets.mnist.load_data(path=str(tmp_path / "m"))
    assert np.array_equal(x, want["train"][0])
    assert np.array_equal(y, want["train"][1])
    assert np.array_equal(xt, want["t10k"][0])
    assert np.array_equal(yt, want["t10k"][1])


def test_a_broken_file_is_an_error_naming_it(tmp_path):
    write_mnist(str(tmp_path / "m"), 5, 5, np.random.default_rng(2),
                bad_label=True)
    with pytest.raises(ValueError, match="labels"):
        datasets.mnist.load_data(path=str(tmp_path / "m"))
    d = tmp_path / "t"
    write_mnist(str(d), 5, 5, np.random.default_rng(2))
    with open(d / "train-images-idx3-ubyte.gz", "r+b") as f:
        f.truncate(40)
    with pytest.raises(OSError, match="train-images"):
        datasets.mnist.load_data(path=str(d))


def write_cifar(d, counts, rng):
    """The binary version's batch files, @counts records each: 1 label
    byte, then the R, G and B planes (32x32 row-major)."""
    os.makedirs(d, exist_ok=True)
    names = ["data_batch_%d.bin" % i for i in range(1, 6)] + \
        ["test_batch.bin"]
    images, labels = [], []
    for name, n in zip(names, counts):
        x = rng.integers(0, 256, (n, 32, 32, 3)).astype(np.uint8)
        y = rng.integers(0, 10, n).astype(np.uint8)
        with open(os.path.join(d, name), "wb") as f:
            for i in range(n):
                f.write(bytes([y[i]]))
                f.write(np.ascontiguousarray(
                    x[i].transpose(2, 0, 1)).tobytes())
        images.append(x)
        labels.append(y)
    return (np.concatenate(images[:5]), np.concatenate(labels[:5])), \
        (images[5], labels[5])


def test_cifar10_in_keras_shapes(tmp_path):
    rng = np.random.default_rng(3)
    root = tmp_path / "cifar10"
    (x0, y0), (xt0, yt0) = write_cifar(str(root / "cifar-10-batches-bin"),
                                       (3, 2, 4, 1, 2, 5), rng)
    # the folder holding cifar-10-batches-bin, or that folder itself
    for path in (root, root / "cifar-10-batches-bin"):
        (x, y), (xt, yt) = datasets.cifar10.load_data(path=str(path))
        assert x.shape == (12, 32, 32, 3) and x.dtype == np.uint8
        assert y.shape == (12, 1) and y.dtype == np.uint8
        assert xt.shape == (5, 32, 32, 3) and yt.shape == (5, 1)
        assert np.array_equal(x, x0) and np.array_equal(y[:, 0], y0)
        assert np.array_equal(xt, xt0) and np.array_equal(yt[:, 0], yt0)


def test_cifar10_bad_batch_file(tmp_path):
    d = tmp_path / "c"
    write_cifar(str(d), (1, 1, 1, 1, 1, 1), np.random.default_rng(4))
    with open(d / "data_batch_3.bin", "ab") as f:
        f.write(b"\0" * 10)
    with pytest.raises(ValueError, match="data_batch_3"):
        datasets.cifar10.load_data(path=str(d))
    d = tmp_path / "c2"
    write_cifar(str(d), (1, 1, 1, 1, 1, 1), np.random.default_rng(4))
    os.remove(d / "test_batch.bin")
    with pytest.raises(FileNotFoundError, match="test_batch"):
        datasets.cifar10.load_data(path=str(d))


def test_keras_npz_files_and_module_imports(tmp_path):
    x = np.zeros((4, 28, 28), np.uint8)
    y = np.arange(4, dtype=np.uint8)
    p = tmp_path / "mnist.npz"
    np.savez(p, x_train=x, y_train=y, x_test=x[:2], y_test=y[:2])
    (a, b), (c, d) = datasets.mnist.load_data(path=str(p))
    assert a.shape == (4, 28, 28) and list(d) == [0, 1]
    np.savez(tmp_path / "bad.npz", x_train=x)
    with pytest.raises(ValueError, match="y_train"):
        datasets.mnist.load_data(path=str(tmp_path / "bad.npz"))
    import vtpu.datasets.fashion_mnist as fm
    import vtpu.keras
    assert fm is datasets.fashion_mnist
    assert vtpu.keras.datasets.cifar10 is datasets.cifar10
