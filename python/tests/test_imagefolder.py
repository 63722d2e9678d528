# SPDX-License-Identifier: MIT
"""vtpu.datasets.image_dataset_from_directory on a folder of PNG files
written here (a minimal PNG writer: no imaging module needed): Keras'
shapes, sorted class names, labels and pixels by file, the seeded split,
skipped files as warnings, and the errors."""
import os
import struct
import zlib

import numpy as np
import pytest

import vtpu.datasets as datasets

CLASSES = ["dog", "cat", "bird"]


def write_png(path, img):
    """@img uint8 (h, w, 3) as an 8-bit RGB PNG, or (h, w) as a grayscale
    one."""
    h, w = img.shape[:2]
    colour = 0 if img.ndim == 2 else 2

    def chunk(kind, data):
        body = kind + data
        return (struct.pack(">I", len(data)) + body
                + struct.pack(">I", zlib.crc32(body)))

    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n"
                + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0,
                                               0))
                + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))


def picture(k, j):
    rng = np.random.default_rng(100 * k + j)
    return rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)


@pytest.fixture
def folder(tmp_path):
    for k, name in enumerate(CLASSES):
        (tmp_path / name).mkdir()
        for j in range(10):
            write_png(tmp_path / name / ("%02d.png" % j), picture(k, j))
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    return tmp_path


def test_keras_shapes_labels_and_pixels(folder):
    (x, y), (xv, yv) = res = datasets.image_dataset_from_directory(
        folder, image_size=(8, 8))
    assert res.class_names == ["bird", "cat", "dog"]
    assert x.shape == (30, 8, 8, 3) and x.dtype == np.uint8
    assert y.shape == (30,) and y.dtype == np.uint8
    assert xv.shape == (0, 8, 8, 3) and yv.shape == (0,)
    assert (res.files, res.skipped, res.ignored) == (30, 0, 1)
    assert len(res.train_file_paths) == 30
    for img, label, path in zip(x, y, res.train_file_paths):
        cls, name = path.split(os.sep)[-2:]
        assert res.class_names[label] == cls
        # 8x8 to 8x8: no resizing, so the file's very pixels
        assert np.array_equal(img, picture(CLASSES.index(cls),
                                           int(name[:2])))


def test_resized_and_gray(folder):
    (x, _), _ = datasets.image_dataset_from_directory(
        folder, image_size=(4, 2), channels=1)
    assert x.shape == (30, 4, 2, 1)


def test_split_by_seed(folder):
    a = datasets.image_dataset_from_directory(
        folder, image_size=(8, 8), validation_split=0.2, seed=5)
    b = datasets.image_dataset_from_directory(
        folder, image_size=(8, 8), validation_split=0.2, seed=5)
    c = datasets.image_dataset_from_directory(
        folder, image_size=(8, 8), validation_split=0.2, seed=6)
    (x, y), (xv, yv) = a
    assert (len(x), len(xv)) == (24, 6)
    assert not set(a.train_file_paths) & set(a.val_file_paths)
    assert len(set(a.train_file_paths) | set(a.val_file_paths)) == 30
    assert a.val_file_paths == b.val_file_paths
    assert np.array_equal(xv, b[1][0]) and np.array_equal(yv, b[1][1])
    assert a.val_file_paths != c.val_file_paths


def test_bad_file_is_a_warning(folder):
    (folder / "dog" / "broken.jpg").write_bytes(b"\xff\xd8\xff garbage")
    with pytest.warns(RuntimeWarning, match="broken.jpg: skipped"):
        res = datasets.image_dataset_from_directory(folder,
                                                    image_size=(8, 8))
    assert (res.files, res.skipped) == (31, 1)
    assert len(res[0][0]) == 30


def test_keras_utils_name():
    # vtpu.keras.utils' is the streamed dataset (test_keras_images.py)
    import vtpu.keras as keras
    assert (keras.utils.image_dataset_from_directory
            is not datasets.image_dataset_from_directory)


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        datasets.image_dataset_from_directory(tmp_path / "nope")
    write_png(tmp_path / "a.png", picture(0, 0))
    with pytest.raises(ValueError, match="no class folders"):
        datasets.image_dataset_from_directory(tmp_path)
    (tmp_path / "c").mkdir()
    write_png(tmp_path / "c" / "a.png", picture(0, 0))
    with pytest.raises(ValueError, match="channels 2"):
        datasets.image_dataset_from_directory(tmp_path, channels=2)
