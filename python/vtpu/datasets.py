# SPDX-License-Identifier: MIT
"""The examples' datasets as numpy arrays, in Keras' shapes.

    (x_train, y_train), (x_test, y_test) = vtpu.datasets.mnist.load_data()

mnist and fashion_mnist: x uint8 (60000, 28, 28) and (10000, 28, 28),
y uint8 (60000,) and (10000,); cifar10: x uint8 (50000, 32, 32, 3) and
(10000, 32, 32, 3), y uint8 (50000, 1) and (10000, 1), as
tf.keras.datasets returns them. The files are read by libvtpu's loaders
(vtpu_load_mnist, vtpu_load_cifar10), which check them thoroughly.

Unlike Keras, nothing is downloaded here: @path is the directory the files
are in (tools/get-datasets fetches and verifies them), or a Keras-style
.npz file holding x_train, y_train, x_test and y_test. Without @path:
$VTPU_DATA/<name> when VTPU_DATA is set, else the first of
<checkout>/data/<name> (where tools/get-datasets puts them) and
./data/<name> (the C examples' default) that exists; <name> is mnist,
fashion-mnist or cifar10.

image_dataset_from_directory() reads a folder of class folders of JPEG and
PNG files, as tf.keras.utils.image_dataset_from_directory() (numpy arrays
rather than a tf.data.Dataset; libvtpu's vtpu_load_image_folder()).
"""
import errno as _errno
import os
import sys
import tempfile
import types
import warnings

import numpy as np

__all__ = ["mnist", "fashion_mnist", "cifar10",
           "image_dataset_from_directory"]

_TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(
    __file__)), os.pardir, os.pardir))


def _default_dirs(name):
    env = os.environ.get("VTPU_DATA")
    if env:
        return [os.path.join(env, name)]
    dirs = []
    if os.path.exists(os.path.join(_TOP, "tools", "get-datasets")):
        dirs.append(os.path.join(_TOP, "data", name))
    dirs.append(os.path.join("data", name))
    return dirs


def _missing(name, tried):
    return FileNotFoundError(
        _errno.ENOENT,
        "no %s dataset in %s: fetch it with tools/get-datasets (from a vtpu "
        "checkout: tools/get-datasets %s, or tools/get-datasets --from DIR "
        "for local copies), set VTPU_DATA to the folder holding %s/, or "
        "pass load_data(path=DIR)" % (name, " or ".join(tried), name, name),
        tried[0])


def _resolve(name, path):
    if path is not None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError("path must be a directory name, not %s"
                            % type(path).__name__)
        path = os.fsdecode(path)
        if not os.path.exists(path):
            raise _missing(name, [path])
        return path
    tried = _default_dirs(name)
    for d in tried:
        if os.path.isdir(d):
            return d
    raise _missing(name, tried)


def _from_npz(path, name):
    with np.load(path) as f:
        missing = [k for k in ("x_train", "y_train", "x_test", "y_test")
                   if k not in f]
        if missing:
            raise ValueError("%s: not a Keras %s file: no %s in it"
                             % (path, name, ", ".join(missing)))
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def _load(loader, d, train):
    from ._ffi import ffi, lib

    ds = ffi.new("struct vtpu_dataset *")
    err = ffi.new("char[512]")
    ret = getattr(lib, loader)(os.fsencode(d), train, ds, err, len(err))
    if ret:
        msg = ffi.string(err).decode("utf-8", "replace")
        e = -ret
        if e == _errno.ENOENT:
            raise FileNotFoundError(e, msg + " (tools/get-datasets fetches "
                                    "the datasets)", d)
        if e == _errno.ENOMEM:
            raise MemoryError(msg)
        if e == _errno.EINVAL:
            raise ValueError(msg)
        raise OSError(e, msg, d)
    try:
        shape = (ds.n, ds.height, ds.width, ds.channels)
        size = ds.n * ds.height * ds.width * ds.channels
        x = np.frombuffer(ffi.buffer(ds.images, size), np.uint8).copy()
        y = np.frombuffer(ffi.buffer(ds.labels, ds.n), np.uint8).copy()
    finally:
        lib.vtpu_dataset_free(ds)
    return x.reshape(shape), y


def _make(modname, name, loader, doc):
    def load_data(path=None):
        d = _resolve(name, path)
        if os.path.isfile(d) and d.endswith(".npz"):
            return _from_npz(d, name)
        if not os.path.isdir(d):
            raise NotADirectoryError(
                _errno.ENOTDIR, "load_data(path=...) wants the directory "
                "the %s files are in (or a Keras .npz file)" % name, d)
        x_train, y_train = _load(loader, d, True)
        x_test, y_test = _load(loader, d, False)
        if loader == "vtpu_load_mnist":
            # Keras: (n, 28, 28) images, (n,) labels
            x_train = x_train.reshape(x_train.shape[:3])
            x_test = x_test.reshape(x_test.shape[:3])
        else:
            # Keras: (n, 32, 32, 3) images, (n, 1) labels
            y_train, y_test = y_train[:, None], y_test[:, None]
        return (x_train, y_train), (x_test, y_test)

    load_data.__doc__ = doc
    mod = types.ModuleType(__name__ + "." + modname, doc)
    mod.load_data = load_data
    sys.modules[mod.__name__] = mod  # import vtpu.datasets.mnist works too
    return mod


mnist = _make("mnist", "mnist", "vtpu_load_mnist", """\
MNIST handwritten digits: (x_train, y_train), (x_test, y_test), uint8,
x (60000, 28, 28) / (10000, 28, 28), y (60000,) / (10000,) in 0..9.
@path: the directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
(see the module's documentation for the default).""")

fashion_mnist = _make("fashion_mnist", "fashion-mnist", "vtpu_load_mnist",
                      """\
Fashion-MNIST (Zalando's 28x28 clothing images, MNIST's format and shapes):
(x_train, y_train), (x_test, y_test), uint8, x (60000, 28, 28) /
(10000, 28, 28), y (60000,) / (10000,) in 0..9.""")

cifar10 = _make("cifar10", "cifar10", "vtpu_load_cifar10", """\
CIFAR-10, the binary version: (x_train, y_train), (x_test, y_test), uint8,
x (50000, 32, 32, 3) / (10000, 32, 32, 3) channels last, y (50000, 1) /
(10000, 1) in 0..9. @path: cifar-10-batches-bin or the directory holding
it.""")


class ImageFolder(tuple):
    """((x_train, y_train), (x_val, y_val)) with what Keras' dataset has:
    class_names (label i is class_names[i]), train_file_paths and
    val_file_paths (each example's file), and the counts files, skipped
    (corrupt, truncated, unreadable or too large: one RuntimeWarning each)
    and ignored (other files)."""


def _arrays(ffi, ds, hwc):
    shape = (ds.n,) + hwc
    size = ds.n * hwc[0] * hwc[1] * hwc[2]
    if not ds.n:    # no validation side: empty, in the same shape
        return (np.zeros(shape, np.uint8), np.zeros((0,), np.uint8))
    x = np.frombuffer(ffi.buffer(ds.images, size), np.uint8).copy()
    y = np.frombuffer(ffi.buffer(ds.labels, ds.n), np.uint8).copy()
    return x.reshape(shape), y


def _strings(ffi, v, n):
    if v == ffi.NULL:
        return []
    return [os.fsdecode(ffi.string(v[i])) for i in range(n)]


def image_dataset_from_directory(directory, image_size=(256, 256),
                                 channels=3, validation_split=None, seed=0,
                                 threads=0):
    """A folder of class folders of .jpg/.jpeg/.png files (any case) as
    ((x_train, y_train), (x_val, y_val)): x uint8 (n, height, width,
    channels), y uint8 (n,) labels, the class folders' names sorted
    (an ImageFolder, whose class_names name them).

    As Keras: the files are shuffled with @seed and the last
    floor(validation_split * files) are the validation side (the same for
    the same seed); files of other types and files directly in @directory
    are ignored; a class folder without images keeps its label. Images are
    decoded to @channels (1 or 3) whatever they hold, and resized to
    @image_size (height, width): an area filter to shrink, bilinear to
    enlarge. A file that cannot be decoded is skipped with a
    RuntimeWarning naming it. Without validation_split the validation
    arrays are empty. @threads: decoding threads (0: one per CPU)."""
    from ._ffi import ffi, lib
    from .keras._cmodel import c_error, libc

    h, w = (int(v) for v in image_size)
    split = float(validation_split or 0)
    o = ffi.new("struct vtpu_image_folder_opts *")
    o.sz = ffi.sizeof("struct vtpu_image_folder_opts")
    o.height, o.width, o.channels = h, w, int(channels)
    o.validation_split = split
    o.seed = int(seed) & (2 ** 64 - 1)
    o.threads = int(threads)
    train = ffi.new("struct vtpu_dataset *")
    val = ffi.new("struct vtpu_dataset *")
    info = ffi.new("struct vtpu_image_folder_info *")
    err = ffi.new("char[512]")
    d = os.fspath(directory)
    with tempfile.TemporaryFile() as log:
        f = libc().fdopen(os.dup(log.fileno()), b"w")
        if f == ffi.NULL:
            raise OSError(ffi.errno, "fdopen failed")
        o.warnings = f
        try:
            ret = lib.vtpu_load_image_folder(os.fsencode(d), o, train, val,
                                             info, err, len(err))
        finally:
            libc().fclose(f)
        log.seek(0)
        for line in log.read().decode("utf-8", "replace").splitlines():
            warnings.warn(line, RuntimeWarning, stacklevel=2)
    if ret:
        raise c_error(ret, ffi.string(err).decode("utf-8", "replace"))
    try:
        hwc = (h, w, int(channels))
        res = ImageFolder((_arrays(ffi, train, hwc), _arrays(ffi, val, hwc)))
        res.class_names = _strings(ffi, info.class_names, info.classes)
        res.train_file_paths = [os.path.join(d, p) for p in _strings(
            ffi, info.train_files, train.n)]
        res.val_file_paths = [os.path.join(d, p) for p in _strings(
            ffi, info.val_files, val.n)]
        res.files, res.skipped = info.files, info.skipped
        res.ignored = info.ignored
    finally:
        lib.vtpu_dataset_free(train)
        lib.vtpu_dataset_free(val)
        lib.vtpu_image_folder_info_free(info)
    return res
