# SPDX-License-Identifier: MIT
"""A struct vtpu_model and the calls vtpu.keras makes on it: every failure
is an exception carrying vtpu_model_error()'s text."""
import errno
import os
import sys

import numpy as np

from .._ffi import ffi, lib

_libc = None


def libc():
    """The C library (fdopen, fflush, fclose), from the process' global
    symbols."""
    global _libc
    if _libc is None:
        _libc = ffi.dlopen(None)
    return _libc


def c_error(ret, msg):
    """libvtpu's -errno and message -> the Python exception."""
    e = -ret if ret < 0 else ret
    if e == errno.ENOENT:
        return FileNotFoundError(e, msg)
    if e == errno.ENOMEM:
        return MemoryError(msg)
    if e in (errno.EINVAL, errno.ENOKEY, errno.EKEYREJECTED):
        return ValueError(msg)     # the last two: a checkpoint's metadata
    return OSError(e, "%s (%s)" % (msg, os.strerror(e)))


def _floats(a):
    """A float * to the data of @a, a C-contiguous float32 array."""
    return ffi.cast("float *", ffi.from_buffer(a))


def dataset(images, labels, classes):
    """A struct vtpu_dataset over numpy arrays (no copy): @images uint8
    C-contiguous (n, ...) with its (h, w, c), @labels uint8 (n,) or None.
    The caller keeps the arrays alive while libvtpu uses the struct."""
    arr, (h, w, c) = images
    ds = ffi.new("struct vtpu_dataset *")
    ds.n = arr.shape[0]
    ds.height, ds.width, ds.channels = h, w, c
    ds.classes = classes
    ds.images = ffi.cast("uint8_t *", ffi.from_buffer(arr))
    if labels is not None:
        ds.labels = ffi.cast("uint8_t *", ffi.from_buffer(labels))
    return ds


class StdoutFile:
    """A FILE * on a dup of Python's stdout, for libvtpu's progress output;
    None when sys.stdout has no file descriptor (captured, a notebook
    without one)."""

    def __init__(self):
        self.f = None
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):
            return
        sys.stdout.flush()
        d = os.dup(fd)
        f = libc().fdopen(d, b"w")
        if f == ffi.NULL:
            os.close(d)
            return
        self.f = f

    def flush(self):
        if self.f is not None:
            libc().fflush(self.f)

    def close(self):
        if self.f is not None:
            libc().fclose(self.f)
            self.f = None


class CModel:
    """Owns a struct vtpu_model."""

    def __init__(self, h, w, c):
        p = lib.vtpu_model_create(h, w, c)
        if p == ffi.NULL:
            raise MemoryError("vtpu_model_create(%d, %d, %d) failed"
                              % (h, w, c))
        self.p = ffi.gc(p, lib.vtpu_model_destroy)
        self.keep = []      # what the struct points into (device string)

    @classmethod
    def of(cls, p):
        """Own @p, a struct vtpu_model * made otherwise
        (vtpu_model_create_graph)."""
        self = cls.__new__(cls)
        self.p = ffi.gc(p, lib.vtpu_model_destroy)
        self.keep = []
        return self

    def error(self):
        return ffi.string(lib.vtpu_model_error(self.p)).decode("utf-8",
                                                               "replace")

    def check(self, ret, what):
        if ret:
            msg = self.error() or os.strerror(-ret)
            raise c_error(ret, "%s: %s" % (what, msg))

    def graph(self):
        return lib.vtpu_model_graph(self.p)

    def compile(self, co):
        self.check(lib.vtpu_model_compile(self.p, co), "compile")

    def compile_replicated(self, devices, n, co):
        self.check(lib.vtpu_model_compile_replicated(self.p, devices, n, co),
                   "compile")

    def compile_distributed(self, devices, n, co):
        self.check(lib.vtpu_model_compile_distributed(self.p, devices, n,
                                                       co), "compile")

    def num_replicas(self):
        return lib.vtpu_model_num_replicas(self.p)

    def set_output(self, node):
        self.check(lib.vtpu_model_set_output(self.p, node), "output")

    def set_batch(self, batch):
        self.check(lib.vtpu_model_set_batch(self.p, batch), "batch_size")

    def set_input_scale(self, scale, shift):
        self.check(lib.vtpu_model_set_input_scale(self.p, scale, shift),
                   "input transform")

    def learning_rate(self):
        return lib.vtpu_model_learning_rate(self.p)

    def set_learning_rate(self, lr):
        self.check(lib.vtpu_model_set_learning_rate(self.p, lr),
                   "learning_rate")

    def stop(self):
        lib.vtpu_model_stop(self.p)

    def info(self):
        i = ffi.new("struct vtpu_model_info *")
        self.check(lib.vtpu_model_info(self.p, i), "device_info")
        return {
            "params": int(i.params),
            "commands": int(i.commands),
            "stream_bytes": int(i.stream_bytes),
            "state_bytes": int(i.state_bytes),
            "work_bytes": int(i.work_bytes),
            "naive_bytes": int(i.naive_bytes),
            "compile_ms": float(i.compile_ms),
            "backend": ffi.string(i.backend).decode("utf-8", "replace"),
        }

    def weight_infos(self):
        out = []
        wi = ffi.new("struct vtpu_weight_info *")
        for i in range(lib.vtpu_model_num_weights(self.p)):
            self.check(lib.vtpu_model_weight_info(self.p, i, wi),
                       "weight %d" % i)
            out.append((ffi.string(wi.name).decode(),
                        tuple(int(wi.shape[d]) for d in range(wi.ndim))))
        return out

    def get_weight(self, i, shape):
        a = np.empty(shape, dtype=np.float32)
        self.check(lib.vtpu_model_get_weights(self.p, i, _floats(a), a.size),
                   "get_weights")
        return a

    def set_weight(self, i, a):
        a = np.ascontiguousarray(a, dtype=np.float32)
        self.check(lib.vtpu_model_set_weights(self.p, i, _floats(a), a.size),
                   "set_weights")

    def fit(self, train, fo):
        return lib.vtpu_model_fit(self.p, train, fo)

    def evaluate(self, ds):
        loss = ffi.new("double *")
        acc = ffi.new("double *")
        self.check(lib.vtpu_model_evaluate(self.p, ds, loss, acc),
                   "evaluate")
        return loss[0], acc[0]

    def predict(self, images, classes):
        n = images.shape[0]
        probs = np.empty((n, classes), dtype=np.float32)
        self.check(lib.vtpu_model_predict(
            self.p, ffi.cast("uint8_t *", ffi.from_buffer(images)), n,
            _floats(probs)), "predict")
        return probs

    def save(self, path, metadata=None):
        meta, keep = _meta(metadata)
        self.check(lib.vtpu_model_save_meta(self.p, os.fsencode(path), meta,
                                            len(keep)),
                   "save_weights(%r)" % os.fsdecode(path))

    def load(self, path, metadata=None):
        meta, keep = _meta(metadata)
        self.check(lib.vtpu_model_load_meta(self.p, os.fsencode(path), meta,
                                            len(keep)),
                   "load_weights(%r)" % os.fsdecode(path))


def _meta(metadata):
    """A dict of str to str as struct vtpu_ckpt_meta[], and the strings
    that must outlive the call."""
    items = sorted((metadata or {}).items())
    keep = []
    for k, v in items:
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError("metadata: keys and values are str: %r"
                            % ((k, v),))
        if "\0" in k or "\0" in v:
            raise ValueError("metadata: a NUL in %r" % ((k, v),))
        keep.append((ffi.new("char[]", k.encode("utf-8")),
                     ffi.new("char[]", v.encode("utf-8"))))
    meta = ffi.new("struct vtpu_ckpt_meta[]", max(1, len(keep)))
    for i, (k, v) in enumerate(keep):
        meta[i].key = k
        meta[i].value = v
    return meta, keep


def progress_line(step, total, elapsed, metrics, final=True):
    """One Keras progress bar line, formatted by libvtpu as its own."""
    m = ffi.new("struct vtpu_metric[]", max(1, len(metrics)))
    names = [ffi.new("char[]", k.encode()) for k, _ in metrics]
    for i, (_, v) in enumerate(metrics):
        m[i].name = names[i]
        m[i].value = v
    buf = ffi.new("char[]", 1024)
    lib.vtpu_progress_format(buf, len(buf), step, total, elapsed, final, m,
                             len(metrics))
    return ffi.string(buf).decode()
