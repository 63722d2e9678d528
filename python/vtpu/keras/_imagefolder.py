# SPDX-License-Identifier: MIT
"""vtpu.keras.utils.image_dataset_from_directory: a folder of class
folders of JPEG and PNG files as a streamed dataset (libvtpu's
vtpu_image_folder_open()): nothing is decoded until it is read.

The dataset is what Keras' tf.data.Dataset of (images, labels) batches is
to its users: len() in batches, iteration yielding numpy batches (float32
images 0..255 (n, height, width, channels) as Keras', labels by
label_mode), class_names, and Model.fit / evaluate / predict take it.
fit() streams it (vtpu_model_fit_stream(): the library's decoding threads
fill a ring of device buffers while the device trains); evaluate(),
predict() and fit's validation_data read it in chunks through the same
decoders.

Files that cannot be decoded (corrupt, truncated, not an image) are
skipped as libvtpu skips them (their slot gets another good example of the
same read): each is a RuntimeWarning "PATH: skipped: WHY" from Python's
warnings module, and the dataset's .skipped counts them.
"""
import os
import tempfile
import warnings
import weakref

import numpy as np

from .._ffi import ffi, lib
from ._util import check_float, check_int

__all__ = ["image_dataset_from_directory", "ImageDataset"]

MAX_SIZE = 8192
# examples per read for evaluate, predict and validation (about 48 MiB of
# 64x64x3 images; fewer for larger images)
CHUNK_BYTES = 48 << 20

_LABEL_MODES = ("int", "categorical", "binary", None)


def _class_folders(d):
    """The class folders libvtpu sees (not hidden), sorted by byte value."""
    names = []
    for e in os.scandir(d):
        if not e.name.startswith(".") and e.is_dir():
            names.append(e.name)
    return sorted(names, key=os.fsencode)


class _Source:
    """Owns one struct vtpu_stream and the FILE * its warnings go to (a
    temporary file read after every call)."""

    def __init__(self, d, o, validation):
        self.log = tempfile.TemporaryFile()
        from ._cmodel import libc
        fd = os.dup(self.log.fileno())
        f = libc().fdopen(fd, b"w")
        if f == ffi.NULL:
            os.close(fd)
            raise OSError(ffi.errno, "fdopen failed")
        self.f = f
        self.done = 0
        o.warnings = f
        err = ffi.new("char[512]")
        s = lib.vtpu_image_folder_open(os.fsencode(d), o, validation, err,
                                       len(err))
        if s == ffi.NULL:
            e = ffi.errno
            self.close()
            from ._cmodel import c_error
            raise c_error(-e, ffi.string(err).decode("utf-8", "replace"))
        self.s = s
        info = ffi.new("struct vtpu_stream_info *")
        lib.vtpu_stream_get_info(s, info)
        self.n, self.classes = int(info.n), int(info.classes)
        self.shape = (int(info.height), int(info.width), int(info.channels))
        self._fin = weakref.finalize(self, _Source._free, s, f, self.log)

    @staticmethod
    def _free(s, f, log):
        from ._cmodel import libc
        lib.vtpu_stream_close(s)
        libc().fclose(f)
        log.close()

    def close(self):
        if getattr(self, "_fin", None) is not None:
            self._fin()
            return
        from ._cmodel import libc
        libc().fclose(self.f)
        self.log.close()

    def warn(self, stacklevel=3):
        """The warning lines written since the last call, as warnings."""
        from ._cmodel import libc
        libc().fflush(self.f)
        self.log.seek(self.done)
        data = self.log.read()
        end = data.rfind(b"\n") + 1
        self.done += end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            warnings.warn(line, RuntimeWarning, stacklevel=stacklevel)

    def read(self, idx):
        """Examples @idx (uint32): (uint8 images, uint32 labels, skipped)."""
        idx = np.ascontiguousarray(idx, dtype=np.uint32)
        k = len(idx)
        images = np.empty((k,) + self.shape, dtype=np.uint8)
        labels = np.empty(k, dtype=np.uint32)
        skipped = ffi.new("uint32_t *")
        ret = lib.vtpu_stream_read(
            self.s, ffi.cast("uint32_t *", ffi.from_buffer(idx)), k,
            ffi.cast("uint8_t *", ffi.from_buffer(images)),
            ffi.cast("uint32_t *", ffi.from_buffer(labels)), skipped)
        self.warn(4)
        if ret:
            from ._cmodel import c_error
            raise c_error(ret, "reading the image folder failed")
        return images, labels, int(skipped[0])


class ImageDataset:
    """One side of an image folder (see the module): batches of
    batch_size (the last one smaller), in an order drawn anew for every
    iteration when shuffle is set (Keras' reshuffle_each_iteration), else
    the loader's order (the files shuffled once by seed, see
    image_dataset_from_directory).

    Attributes: class_names, batch_size, image_size, channels, label_mode,
    shuffle, seed, num_examples (files on this side), skipped (files found
    corrupt so far by iteration, evaluate and predict; fit's are in its
    warnings), file count per side as Keras prints it."""

    def __init__(self, src, class_names, batch_size, label_mode, shuffle,
                 seed, subset):
        self._src = src
        self.class_names = list(class_names)
        self.batch_size = batch_size
        self.image_size = src.shape[:2]
        self.channels = src.shape[2]
        self.label_mode = label_mode
        self.shuffle = shuffle
        self.seed = seed
        self.subset = subset
        self.num_examples = src.n
        self.skipped = 0
        self._rng = np.random.default_rng(seed)

    @property
    def element_shape(self):
        """Keras' element_spec shapes: ((None, h, w, c), labels')."""
        return (None,) + self.image_size + (self.channels,)

    def __len__(self):
        return -(-self._src.n // self.batch_size)

    def __repr__(self):
        return ("<ImageDataset %s: %d examples, %d classes, batches of %d, "
                "images %dx%dx%d>" % (self.subset or "all", self._src.n,
                                      len(self.class_names), self.batch_size,
                                      self.image_size[0], self.image_size[1],
                                      self.channels))

    def _order(self):
        if self.shuffle:
            return self._rng.permutation(self._src.n).astype(np.uint32)
        return np.arange(self._src.n, dtype=np.uint32)

    def _read(self, idx):
        images, labels, skipped = self._src.read(idx)
        self.skipped += skipped
        return images, labels

    def _chunks(self, order=None):
        """(uint8 images, uint32 labels) in chunks of whole batches of
        about CHUNK_BYTES, in @order (default: this iteration's)."""
        if order is None:
            order = self._order()
        per = int(np.prod(self._src.shape))
        k = max(1, CHUNK_BYTES // per // self.batch_size) * self.batch_size
        for i in range(0, len(order), k):
            yield self._read(order[i:i + k])

    def _labels_out(self, labels):
        if self.label_mode == "int":
            return labels.astype(np.int32)
        if self.label_mode == "binary":
            return labels.astype(np.float32).reshape(-1, 1)
        out = np.zeros((len(labels), len(self.class_names)), np.float32)
        out[np.arange(len(labels)), labels] = 1
        return out

    def __iter__(self):
        """(images float32 (n, h, w, c) 0..255, labels) per batch, or the
        images alone with label_mode=None."""
        order = self._order()
        for i in range(0, len(order), self.batch_size):
            images, labels = self._read(order[i:i + self.batch_size])
            x = images.astype(np.float32)
            if self.label_mode is None:
                yield x
            else:
                yield x, self._labels_out(labels)

    def take(self, count):
        """The first @count batches of an iteration (a list)."""
        count = check_int(count, "count", 0)
        out = []
        for b in self:
            if len(out) == count:
                break
            out.append(b)
        return out

    def close(self):
        """Stop the decoding threads and free the source now (else when
        the dataset is collected)."""
        self._src.close()


def _check_image_size(image_size):
    if isinstance(image_size, (str, bytes)) or not hasattr(
            image_size, "__len__") or len(image_size) != 2:
        raise ValueError("image_dataset_from_directory: image_size=%r must "
                         "be (height, width)" % (image_size,))
    out = []
    for v, what in zip(image_size, ("height", "width")):
        out.append(check_int(v, "image_size's " + what, 1, MAX_SIZE,
                             where="image_dataset_from_directory: "))
    return tuple(out)


def _reject(name, value, default, why):
    if value is default or (value == default and type(value) is
                            type(default)):
        return
    raise ValueError("image_dataset_from_directory: %s=%r is not supported:"
                     " %s" % (name, value, why))


def image_dataset_from_directory(directory, labels="inferred",
                                 label_mode="int", class_names=None,
                                 color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True,
                                 seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear",
                                 follow_links=False,
                                 crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None,
                                 verbose=True, threads=0, **kwargs):
    """Keras' image_dataset_from_directory on libvtpu's streamed image
    folder: an ImageDataset (a list [training, validation] for
    subset="both").

    @directory holds one folder per class (their names sorted are
    class_names; hidden ones left out); each holds .jpg/.jpeg/.png files
    (any case; in folders below it too). The files are listed, shuffled
    with @seed (whatever @shuffle says: shuffle=False keeps that order
    rather than Keras' alphanumeric one) and split as Keras splits them:
    the last floor(validation_split * files) are the validation side, the
    same files for the same seed. Each image is decoded by libvtpu
    (libjpeg-turbo, libpng) to @color_mode ("rgb" or "grayscale") and
    resized to @image_size (height, width) when it is read.

    label_mode: "int" (int32 labels), "categorical" (float32 one-hot),
    "binary" (float32 (n, 1), two classes), or None (images only).
    threads: decoding threads (0: one per CPU), a vtpu extension.

    Not supported (each an error naming it): labels other than
    "inferred", color_mode="rgba", batch_size=None, a class_names order
    other than the folders' sorted one, interpolation other than the
    default (libvtpu averages the covered pixels when shrinking and is
    bilinear when enlarging), follow_links, crop_to_aspect_ratio,
    pad_to_aspect_ratio, data_format="channels_first".
    """
    where = "image_dataset_from_directory: "
    for k in kwargs:
        raise TypeError("image_dataset_from_directory: Keyword argument not "
                        "understood: %r" % (k,))
    if not isinstance(directory, (str, bytes, os.PathLike)):
        raise TypeError("image_dataset_from_directory: directory must be a "
                        "path, not %r" % (directory,))
    d = os.fsdecode(os.fspath(directory))
    if not isinstance(labels, str) or labels != "inferred":
        raise ValueError(
            "image_dataset_from_directory: labels=%r is not supported: the "
            "labels are inferred from the class folders (labels='inferred')"
            % (labels,))
    if label_mode not in _LABEL_MODES:
        raise ValueError("image_dataset_from_directory: label_mode=%r must "
                         "be 'int', 'categorical', 'binary' or None"
                         % (label_mode,))
    if color_mode not in ("rgb", "grayscale"):
        if color_mode == "rgba":
            raise ValueError("image_dataset_from_directory: color_mode='rgba'"
                             " is not supported: libvtpu decodes to 'rgb' or "
                             "'grayscale' (alpha is dropped)")
        raise ValueError("image_dataset_from_directory: color_mode=%r must "
                         "be 'rgb' or 'grayscale'" % (color_mode,))
    if batch_size is None:
        raise ValueError("image_dataset_from_directory: batch_size=None "
                         "(unbatched) is not supported: libvtpu reads "
                         "batches")
    batch_size = check_int(batch_size, "batch_size", 1, where=where)
    size = _check_image_size(image_size)
    if shuffle not in (True, False):
        raise TypeError("image_dataset_from_directory: shuffle=%r must be "
                        "True or False" % (shuffle,))
    if seed is not None:
        seed = check_int(seed, "seed", 0, 2**64 - 1, where=where)
    split = 0.0
    if validation_split is not None:
        split = check_float(validation_split, "validation_split", 0.0, 1.0,
                            min_open=True, max_open=True, where=where)
    if subset not in (None, "training", "validation", "both"):
        raise ValueError("image_dataset_from_directory: subset=%r must be "
                         "'training', 'validation' or 'both'" % (subset,))
    if subset is not None and not split:
        raise ValueError("image_dataset_from_directory: subset=%r needs a "
                         "validation_split" % (subset,))
    if split and subset is None:
        raise ValueError("image_dataset_from_directory: validation_split=%r "
                         "needs subset ('training', 'validation' or 'both')"
                         % (validation_split,))
    if split and shuffle and seed is None:
        raise ValueError("image_dataset_from_directory: validation_split "
                         "with shuffle=True needs a seed, so that training "
                         "and validation do not overlap")
    _reject("interpolation", interpolation, "bilinear",
            "libvtpu resizes by averaging the covered pixels when shrinking "
            "and bilinearly when enlarging (the default, 'bilinear')")
    _reject("follow_links", follow_links, False,
            "the class folders are read as they are")
    _reject("crop_to_aspect_ratio", crop_to_aspect_ratio, False,
            "images are resized to image_size whole")
    _reject("pad_to_aspect_ratio", pad_to_aspect_ratio, False,
            "images are resized to image_size whole")
    if data_format not in (None, "channels_last"):
        raise ValueError("image_dataset_from_directory: data_format=%r is "
                         "not supported: images are channels_last"
                         % (data_format,))
    threads = check_int(threads, "threads", 0, 4096, where=where)
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") if shuffle else 0

    if not os.path.exists(d):
        raise FileNotFoundError(2, "image_dataset_from_directory: no such "
                                "directory", d)
    if not os.path.isdir(d):
        raise NotADirectoryError(20, "image_dataset_from_directory: not a "
                                 "directory", d)
    names = _class_folders(d)
    if class_names is not None:
        if isinstance(class_names, str) or not all(
                isinstance(c, str) for c in class_names):
            raise TypeError("image_dataset_from_directory: class_names must "
                            "be a list of strings, not %r" % (class_names,))
        if sorted(class_names) != sorted(names):
            raise ValueError(
                "image_dataset_from_directory: the class_names passed did "
                "not match the names of the subdirectories of the target "
                "directory. Expected: %s, but received: %s"
                % (names, list(class_names)))
        if list(class_names) != names:
            raise ValueError(
                "image_dataset_from_directory: class_names=%r is not "
                "supported: libvtpu labels the class folders in sorted "
                "order, %s" % (list(class_names), names))

    o = ffi.new("struct vtpu_image_folder_opts *")
    o.sz = ffi.sizeof("struct vtpu_image_folder_opts")
    o.height, o.width = size
    o.channels = 3 if color_mode == "rgb" else 1
    o.validation_split = split
    o.seed = seed
    o.threads = threads
    sides = [_Source(d, o, False)]
    if split:
        sides.append(_Source(d, o, True))
    classes = sides[0].classes
    if classes != len(names):
        raise RuntimeError("image_dataset_from_directory: libvtpu found %d "
                           "class folders in %s, Python %d (%s)"
                           % (classes, d, len(names), names))
    if label_mode == "binary" and classes != 2:
        raise ValueError(
            "image_dataset_from_directory: label_mode='binary' needs "
            "exactly 2 classes, %s has %d (%s)" % (d, classes, names))
    total = sum(s.n for s in sides)
    if verbose:
        print("Found %d files belonging to %d classes." % (total, classes))

    def make(src, sub):
        return ImageDataset(src, names, batch_size, label_mode, shuffle,
                            seed, sub)

    if not split:
        return make(sides[0], None)
    if verbose and subset in ("training", "both"):
        print("Using %d files for training." % sides[0].n)
    if verbose and subset in ("validation", "both"):
        print("Using %d files for validation." % sides[1].n)
    if subset == "training":
        sides[1].close()
        return make(sides[0], "training")
    if subset == "validation":
        sides[0].close()
        return make(sides[1], "validation")
    return [make(sides[0], "training"), make(sides[1], "validation")]


def is_dataset(x):
    return isinstance(x, ImageDataset)

