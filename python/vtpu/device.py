# SPDX-License-Identifier: MIT
"""The device API: libvtpu's vtpu.h from Python.

    import numpy as np
    import vtpu

    with vtpu.Device("/dev/vtpu0") as dev:       # or vtpu.Device("cpu")
        a = dev.buffer((64, 32))                 # float32, zeroed
        b = dev.buffer((32, 16))
        c = dev.buffer((64, 16))
        a.array[:] = np.random.rand(64, 32)      # numpy, mapped in place
        b.array[:] = np.random.rand(32, 16)
        cb = vtpu.CommandBuffer(dev)
        cb.gemm(a, b, c)                         # c = a @ b
        job = dev.queue().submit(cb)
        job.wait()
        print(c.array)

A Device is a /dev/vtpuN node, or "cpu": libvtpu's cpu backend, which
runs the same command streams with the same engine code in this process
(synchronously: its jobs have ended when submit() returns).

Buffers are mapped into the process; Buffer.array is a numpy view of
that mapping, no copy. The device writes it while a job runs: read it
after the job's wait(). A numpy view keeps the mapping alive, so a view
taken before Buffer.close() (or Device.close()) stays valid memory; the
Buffer itself refuses to be used once closed.

Errors from libvtpu or the device raise VtpuError (an OSError); an
argument that cannot be encoded (a negative size, a shape that does not
match, a buffer of another device) raises ValueError before anything
reaches the library.
"""
import errno as _errno
import fcntl
import functools
import glob
import math
import os
import re
import select
import weakref
from collections import namedtuple

import numpy as np
from cffi import FFI

from ._ffi import ffi, lib

__all__ = ["VtpuError", "Device", "devices", "Buffer", "CommandBuffer",
           "Queue", "Job", "Fence", "Window", "PARAMS"]

# munmap() for the mappings libvtpu made (vtpu_bo_destroy() would also
# close the handle, which may be shared: see Device._core).
_libc_ffi = FFI()
_libc_ffi.cdef("int munmap(void *addr, size_t length);")
_libc = _libc_ffi.dlopen(None)


def _enum(ctype, prefix):
    """{lower-case name without prefix: value} of a C enum."""
    return {name[len(prefix):].lower(): value
            for name, value in ffi.typeof(ctype).relements.items()
            if name.startswith(prefix) and not name.endswith("_COUNT")}


#: VTPU_PARAM_* by name: {"api_version": 0, "device_index": 1, ...}
PARAMS = _enum("enum vtpu_param", "VTPU_PARAM_")
_PRIORITIES = _enum("enum vtpu_queue_priority", "VTPU_QUEUE_PRIORITY_")
_EW_OPS = _enum("enum vtpu_ew_op", "VTPU_EW_")
_REDUCE_OPS = _enum("enum vtpu_reduce_op", "VTPU_REDUCE_")
_CAST_MODES = _enum("enum vtpu_cast_mode", "VTPU_CAST_")
_REASONS = {v: k for k, v in _enum("enum vtpu_error_reason",
                                   "VTPU_ERR_").items()}
# the engine's operand names, as vtpu_job_strerror() prints them
_OPERANDS = {v: (k.upper() if k in ("a", "b", "c") else k)
             for k, v in _enum("enum vtpu_operand_id",
                               "VTPU_OPERAND_").items()}

_F32 = ("float32",)
_U32 = ("uint32", "int32")      # labels, indices, counters
_BF16 = ("uint16",)             # bfloat16 bit patterns
_ANY = None


class VtpuError(OSError):
    """An error from libvtpu or the device.

    Attributes
    ----------
    errno : int
        The error number (``EINVAL`` for a rejected stream, ...).
    strerror : str
        What failed, with the library's explanation.
    command : int or None
        For a command stream the device rejected: the index of the bad
        command in its CommandBuffer.
    opcode : str or None
        Its opcode's name, e.g. ``"GEMM"``.
    operand : str or None
        The operand at fault, e.g. ``"B"``, ``"dst"`` (``"-"``: the
        command as a whole).
    reason : str or None
        Why, the uAPI's ``VTPU_ERR_*`` in lower case, e.g.
        ``"out_of_bounds"``.
    offset : int or None
        The command's byte offset in the stream.
    buffer : int or None
        For reason ``"bad_stride_repeat"``: the buffer index whose repeat
        stride walks off the buffer (``command`` is None then).
    status : str or None
        For a job that failed after it was queued: how it ended
        (``"error"``, ``"cancelled"``, ``"timed out"``).
    """

    def __init__(self, err, message, *, command=None, opcode=None,
                 operand=None, reason=None, offset=None, buffer=None,
                 status=None):
        super().__init__(err, message)
        self.command = command
        self.opcode = opcode
        self.operand = operand
        self.reason = reason
        self.offset = offset
        self.buffer = buffer
        self.status = status


def _check(ret, what):
    """Raise VtpuError for a libvtpu -errno return."""
    if ret < 0:
        raise VtpuError(-ret, "%s: %s" % (what, os.strerror(-ret)))
    return ret


def _closed_error(what):
    return VtpuError(_errno.EBADF, "%s is closed" % what)


def devices():
    """The vtpu device nodes present, ``/dev/vtpuN``, in order of N.

    Returns
    -------
    list of str
    """
    paths = [p for p in glob.glob("/dev/vtpu*")
             if re.fullmatch(r"/dev/vtpu\d+", p)]
    return sorted(paths, key=lambda p: int(p[len("/dev/vtpu"):]))


class _Core:
    """The C side of a Device, apart from the Device object so that the
    finalizers of it and of its buffers and queues can hold it.

    A device buffer's handle may be shared by several Buffers (importing
    a buffer the device already has gives its handle again), so handles
    are counted and closed when the last Buffer naming one is.
    """

    def __init__(self, dev, cpu):
        self.dev = dev          # struct vtpu_dev *, or NULL
        self.cpu = cpu          # struct vtpu_cpu *, or NULL
        self.handles = {}
        self.closed = False

    def ref(self, handle):
        self.handles[handle] = self.handles.get(handle, 0) + 1

    def unref(self, handle):
        if self.closed or handle not in self.handles:
            return
        self.handles[handle] -= 1
        if not self.handles[handle]:
            del self.handles[handle]
            # with map NULL, vtpu_bo_destroy() only closes the handle
            lib.vtpu_bo_destroy(self.dev, ffi.new("struct vtpu_bo *",
                                                  {"handle": handle}))

    def destroy_queue(self, queue_id):
        if not self.closed and self.dev != ffi.NULL:
            lib.vtpu_queue_destroy(self.dev, queue_id)

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.handles.clear()
        if self.dev != ffi.NULL:
            lib.vtpu_close(self.dev)    # closes every handle and queue
        if self.cpu != ffi.NULL:
            lib.vtpu_cpu_destroy(self.cpu)


def _unmapper(addr, size, cpu):
    """The destructor of a mapping: runs once no Buffer and no numpy view
    refers to it."""
    def release(_):
        if cpu:
            lib.vtpu_cpu_bo_destroy(ffi.new("struct vtpu_bo *", {
                "size": size, "map": ffi.cast("void *", addr)}))
        else:
            _libc.munmap(_libc_ffi.cast("void *", addr), size)
    return release


def _shape_nbytes(shape, dtype, nbytes):
    """(shape, dtype, nbytes, typed) of a buffer request."""
    if (shape is None) == (nbytes is None):
        raise ValueError("give a shape (with a dtype) or nbytes, not both")
    if nbytes is not None:
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError("nbytes must be positive, not %d" % nbytes)
        return (nbytes,), np.dtype(np.uint8), nbytes, False
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    shape = tuple(int(d) for d in shape)
    if any(d <= 0 for d in shape):
        raise ValueError("a buffer's dimensions must be positive: %s"
                         % (shape,))
    dtype = np.dtype(dtype)
    if dtype.hasobject or dtype.itemsize == 0:
        raise ValueError("dtype %s cannot live in device memory" % dtype)
    return shape, dtype, math.prod(shape) * dtype.itemsize, True


class _Closable:
    """What Device, Buffer, Fence and Queue share: a context manager that
    closes them, and a repr that says when they are closed."""

    def _describe(self):
        """The repr's words: the class and what it names."""
        raise NotImplementedError

    def __repr__(self):
        return "<vtpu.%s%s>" % (self._describe(),
                                " closed" if self.closed else "")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Device(_Closable):
    """A vtpu device, or the cpu backend.

    Parameters
    ----------
    path : str
        A device node (``"/dev/vtpu0"``, see :func:`devices`), or
        ``"cpu"`` for libvtpu's cpu backend: the same engine in this
        process; its submissions run synchronously, and their fences are
        signalled when submit() returns.
    threads : int, optional
        cpu backend only: worker threads (0: one per online CPU).
    gemm : {"engine", "openblas"}, optional
        cpu backend only: who computes GEMMs (OpenBLAS: the baseline).

    Raises
    ------
    VtpuError
        The node cannot be opened (the message says what to do, e.g.
        load vtpu.ko, or join the group the udev rule names).

    Notes
    -----
    A context manager: ``with vtpu.Device("cpu") as dev: ...`` closes it.
    """

    def __init__(self, path="/dev/vtpu0", *, threads=None, gemm=None):
        self.path = os.fspath(path)
        dev, cpu = ffi.NULL, ffi.NULL
        self._threads = 0
        if self.path == "cpu":
            self._threads = int(threads or 0)
            gemm_id = {None: lib.VTPU_CPU_GEMM_ENGINE,
                       "engine": lib.VTPU_CPU_GEMM_ENGINE,
                       "openblas": lib.VTPU_CPU_GEMM_OPENBLAS}.get(gemm)
            if gemm_id is None or self._threads < 0:
                raise ValueError("cpu backend: gemm must be 'engine' or "
                                 "'openblas', threads >= 0")
            cpu = lib.vtpu_cpu_create(self._threads, -1, gemm_id)
            if cpu == ffi.NULL:
                err = ffi.errno
                why = lib.vtpu_cpu_openblas() if gemm_id else ffi.NULL
                raise VtpuError(err, "cpu backend: %s%s" % (
                    os.strerror(err),
                    "" if why == ffi.NULL else
                    " (%s)" % ffi.string(why).decode()))
        else:
            if threads is not None or gemm is not None:
                raise ValueError("threads and gemm are for Device('cpu')")
            dev = lib.vtpu_open(self.path.encode())
            if dev == ffi.NULL:
                err = ffi.errno
                raise VtpuError(err, "open %s: %s%s" % (
                    self.path, os.strerror(err),
                    ffi.string(lib.vtpu_open_hint(err)).decode()))
        self._core = _Core(dev, cpu)
        self._close = weakref.finalize(self, self._core.close)
        self._cpu_queues = 0

    def _describe(self):
        return "Device %s" % self.path

    @property
    def closed(self):
        """True once close() was called."""
        return self._core.closed

    @property
    def is_cpu(self):
        """True for the cpu backend."""
        return self._core.cpu != ffi.NULL

    def close(self):
        """Close the device, its queues and its buffers' handles.

        Numpy views of its buffers stay valid memory (their mappings live
        until the last view is gone); the Device, its Buffers and Queues
        raise VtpuError from then on. Closing twice is harmless.
        """
        self._close()

    def _require_open(self):
        if self._core.closed:
            raise _closed_error("device %s" % self.path)
        return self._core

    def fileno(self):
        """The device's file descriptor (owned by the Device).

        Raises
        ------
        VtpuError
            For the cpu backend, which has none.
        """
        core = self._require_open()
        if self.is_cpu:
            raise VtpuError(_errno.ENODEV, "the cpu backend has no file "
                            "descriptor")
        return lib.vtpu_fd(core.dev)

    # ---- parameters ------------------------------------------------------

    def _cpu_params(self):
        return {"api_version": lib.VTPU_API_VERSION,
                "simd_level": lib.vtpu_cpu_simd(self._core.cpu),
                "num_cores": self._threads or os.cpu_count(),
                "max_cmds_size": lib.VTPU_SUBMIT_MAX_CMDS_SIZE,
                "max_handles": lib.VTPU_SUBMIT_MAX_HANDLES}

    def param(self, name):
        """One device parameter (VTPU_IOCTL_GET_PARAM).

        Parameters
        ----------
        name : str or int
            A ``VTPU_PARAM_*`` name, with or without the prefix, any case
            (``"mem_cap"``, ``"VTPU_PARAM_MEM_CAP"``), or its number.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            An unknown name.
        VtpuError
            The device does not know the parameter (an older module), or
            the cpu backend has no such thing (it answers api_version,
            simd_level, num_cores, max_cmds_size and max_handles).
        """
        core = self._require_open()
        if isinstance(name, str):
            key = name.lower()
            key = key[len("vtpu_param_"):] if key.startswith(
                "vtpu_param_") else key
            if key not in PARAMS:
                raise ValueError("unknown parameter %r; known: %s"
                                 % (name, ", ".join(PARAMS)))
            number = PARAMS[key]
        else:
            number = int(name)
            key = {v: k for k, v in PARAMS.items()}.get(number, str(number))
        if self.is_cpu:
            params = self._cpu_params()
            if key not in params:
                raise VtpuError(_errno.EINVAL, "the cpu backend has no "
                                "parameter %s" % key)
            return params[key]
        if not 0 <= number < 2**32:
            raise ValueError("parameter number %d out of range" % number)
        value = ffi.new("uint64_t *")
        _check(lib.vtpu_get_param(core.dev, number, value),
               "get_param %s" % key)
        return value[0]

    @property
    def info(self):
        """Every parameter the device answers, as {name: value}."""
        self._require_open()
        if self.is_cpu:
            return self._cpu_params()
        info = {}
        for key in PARAMS:
            try:
                info[key] = self.param(key)
            except VtpuError as e:
                if e.errno != _errno.EINVAL:   # EINVAL: an older module
                    raise
        return info

    # ---- buffers ---------------------------------------------------------

    def buffer(self, shape=None, dtype="float32", *, nbytes=None):
        """Allocate a zeroed buffer, mapped into this process.

        Parameters
        ----------
        shape : int or tuple of int
            The array's shape (elements of ``dtype``).
        dtype : numpy dtype, default "float32"
        nbytes : int, optional
            Instead of shape and dtype: an untyped buffer of this many
            bytes (its array is uint8).

        Returns
        -------
        Buffer

        Raises
        ------
        ValueError
            A bad shape, dtype or size.
        VtpuError
            The device refused (ENOSPC: its memory cap is reached).
        """
        core = self._require_open()
        shape, dtype, nbytes, typed = _shape_nbytes(shape, dtype, nbytes)
        bo = ffi.new("struct vtpu_bo *")
        if self.is_cpu:
            ret = lib.vtpu_cpu_bo_create(nbytes, bo)
        else:
            ret = lib.vtpu_bo_create(core.dev, nbytes, bo)
        _check(ret, "buffer of %d bytes" % nbytes)
        return Buffer(self, bo, shape, dtype, nbytes, typed)

    def import_buffer(self, fd, shape=None, dtype="float32", *,
                      nbytes=None):
        """A Buffer for a dma-buf's memory (vtpu_bo_import()).

        Parameters
        ----------
        fd : int or object with fileno()
            A dma-buf, e.g. from :meth:`Buffer.export` on any vtpu
            device. Not consumed: close it when you like.
        shape, dtype, nbytes
            As :meth:`buffer`; without any, an untyped buffer of the
            dma-buf's whole size.

        Returns
        -------
        Buffer
            Sharing the memory: writes through either side are seen by
            the other. Importing a buffer this device already has gives
            a second Buffer with the same handle; each may be closed on
            its own. A read-only dma-buf gives a read-only array.

        Raises
        ------
        VtpuError
            Not a dma-buf the device can import, or the cpu backend.
        ValueError
            The shape does not fit in the dma-buf.
        """
        core = self._require_open()
        if self.is_cpu:
            raise VtpuError(_errno.EOPNOTSUPP, "the cpu backend cannot "
                            "import dma-bufs: its buffers are process "
                            "memory; use a /dev/vtpuN device")
        fd = fd.fileno() if hasattr(fd, "fileno") else int(fd)
        try:
            read_only = (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
                         == os.O_RDONLY)
        except OSError as e:
            raise VtpuError(e.errno, "import fd %d: %s" % (fd, e.strerror))
        bo = ffi.new("struct vtpu_bo *")
        _check(lib.vtpu_bo_import(core.dev, fd, bo), "import fd %d" % fd)
        if shape is None and nbytes is None:
            nbytes = bo.size
        try:
            shape, dtype, nbytes, typed = _shape_nbytes(shape, dtype, nbytes)
            if nbytes > bo.size:
                raise ValueError("%d bytes do not fit in the dma-buf's %d"
                                 % (nbytes, bo.size))
        except ValueError:
            buf = Buffer(self, bo, (bo.size,), np.dtype(np.uint8), bo.size,
                         False)
            buf.close()
            raise
        return Buffer(self, bo, shape, dtype, nbytes, typed, read_only)

    # ---- queues ----------------------------------------------------------

    def queue(self, priority="normal", timeout_ms=0, in_fence_timeout_ms=0):
        """Create a queue: an ordered stream of jobs.

        Parameters
        ----------
        priority : {"low", "normal", "high"} or int, default "normal"
            The scheduling class (an int is the uAPI's enum
            vtpu_queue_priority: 0 is LOW). "high" needs CAP_SYS_NICE.
        timeout_ms : int, default 0
            Watchdog of each job from when it starts; 0: the device's.
        in_fence_timeout_ms : int, default 0
            How long a job may wait for its in-fence; 0: the device's.

        Returns
        -------
        Queue
        """
        return Queue(self, priority, timeout_ms, in_fence_timeout_ms)


class Buffer(_Closable):
    """A device buffer mapped into this process (see Device.buffer).

    Attributes
    ----------
    device : Device
    shape : tuple of int
    dtype : numpy.dtype
    nbytes : int
        The bytes the shape covers.
    size : int
        The buffer's bytes (page-rounded, >= nbytes).
    handle : int
        The device handle (0 on the cpu backend).
    """

    def __init__(self, device, bo, shape, dtype, nbytes, typed,
                 read_only=False):
        self.device = device
        self._bo = bo
        self.shape, self.dtype, self.nbytes = shape, dtype, nbytes
        self._typed = typed
        self._read_only = read_only
        self._closed = False
        core = device._core
        addr = int(ffi.cast("uintptr_t", bo.map))
        # numpy views hold this pointer (through ffi.buffer): the mapping
        # is released when the last of them and this Buffer are gone
        self._map = ffi.gc(ffi.cast("char *", bo.map),
                           _unmapper(addr, bo.size, device.is_cpu),
                           size=bo.size)
        self._array = None
        if device.is_cpu:
            self._release = None
        else:
            core.ref(bo.handle)
            self._release = weakref.finalize(self, core.unref, bo.handle)

    def _describe(self):
        return "Buffer %s %s on %s" % (self.shape, self.dtype,
                                       self.device.path)

    @property
    def closed(self):
        """True once this Buffer or its Device is closed."""
        return self._closed or self.device.closed

    def _require_open(self):
        if self.closed:
            raise _closed_error("buffer %s" % (self.shape,) if self._closed
                                else "device %s" % self.device.path)

    @property
    def handle(self):
        self._require_open()
        return self._bo.handle

    @property
    def size(self):
        self._require_open()
        return self._bo.size

    @property
    def array(self):
        """The buffer as a numpy array of its shape and dtype, mapped in
        place: writes through it are the device's data, and what a job
        wrote is there once the job has ended. No copy is made.

        The array keeps the mapping alive after the Buffer is closed.
        """
        self._require_open()
        if self._array is None:
            a = np.frombuffer(ffi.buffer(self._map, self.nbytes),
                              self.dtype).reshape(self.shape)
            if self._read_only:
                a.flags.writeable = False
            self._array = a
        return self._array

    def __array__(self, dtype=None, copy=None):
        if copy or (dtype is not None and np.dtype(dtype) != self.dtype):
            return np.array(self.array, dtype=dtype)
        return self.array

    def export(self):
        """Share the buffer as a dma-buf (vtpu_bo_export()).

        Returns
        -------
        int
            A dma-buf file descriptor (read/write, close-on-exec); the
            caller owns it (os.close()). Any vtpu device can import it
            (Device.import_buffer), and it can be mmap()ed.

        Raises
        ------
        VtpuError
            On the cpu backend, whose buffers are plain process memory.
        """
        self._require_open()
        if self.device.is_cpu:
            raise VtpuError(_errno.EOPNOTSUPP, "the cpu backend cannot "
                            "export buffers as dma-bufs: they are process "
                            "memory; use a /dev/vtpuN device")
        fd = ffi.new("int *")
        _check(lib.vtpu_bo_export(self.device._core.dev, self._bo, fd),
               "export")
        return fd[0]

    def close(self):
        """Close the buffer: its handle now (jobs still using it keep its
        memory until they end), its mapping once no numpy view of it is
        left. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        self._array = self._map = None
        if self._release is not None:
            self._release()


class Window(namedtuple("Window", "n h w c kh kw stride_h stride_w "
                                  "pad_h pad_w", defaults=(1, 1, 0, 0))):
    """A sliding window over a batch of NHWC images (struct vtpu_window):
    n images of h x w pixels and c channels, a kh x kw window moving by
    stride_h, stride_w (default 1) over the image padded with pad_h rows
    and pad_w columns of zeros (default 0)."""

    __slots__ = ()

    @property
    def out_shape(self):
        """(oh, ow): windows per image, down and across."""
        return ((self.h + 2 * self.pad_h - self.kh) // self.stride_h + 1,
                (self.w + 2 * self.pad_w - self.kw) // self.stride_w + 1)


def _window(win):
    if isinstance(win, dict):
        win = Window(**win)
    elif not isinstance(win, Window):
        win = Window(*win)
    return ffi.new("struct vtpu_window *", win._asdict())


def _name(table, value, what):
    """An enum value from its name (or the value itself)."""
    if isinstance(value, str):
        if value.lower() not in table:
            raise ValueError("unknown %s %r; known: %s"
                             % (what, value, ", ".join(table)))
        return table[value.lower()]
    return int(value)


def _command(method):
    """A builder: cffi's conversion errors (a negative or too large
    number, a wrong type) become ValueError naming the command."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            method(self, *args, **kwargs)
        except (OverflowError, TypeError) as e:
            raise ValueError("%s: %s" % (method.__name__, e)) from None
        return self
    return wrapper


def _agree(cmd, dims, detail=""):
    """{name: [candidates, None for unknown]} -> {name: the one value};
    ValueError when none is known or they disagree."""
    out = {}
    for d, vals in dims.items():
        known = {int(v) for v in vals if v is not None}
        if not known:
            raise ValueError("%s: give %s (no operand's shape says it)"
                             % (cmd, d))
        if len(known) > 1:
            raise ValueError("%s: the shapes disagree on %s%s"
                             % (cmd, d, detail))
        out[d] = known.pop()
    return out


def _gemm_dtype(cmd, a, dtype):
    """(A's and B's element check, VTPU_DTYPE_*) of a GEMM's inputs: as
    given, else bfloat16 when A is a uint16 buffer, else float32."""
    if dtype is None:
        first = a[0] if isinstance(a, tuple) else a
        dtype = ("bfloat16" if isinstance(first, Buffer) and
                 first.dtype == np.uint16 else "float32")
    ab = {"float32": _F32, "bfloat16": _BF16}.get(dtype)
    if ab is None:
        raise ValueError("%s: dtype must be 'float32' or 'bfloat16'" % cmd)
    return ab, (lib.VTPU_DTYPE_BF16 if dtype == "bfloat16"
                else lib.VTPU_DTYPE_F32)


class CommandBuffer:
    """A command stream being built (struct vtpu_cmdbuf), and the buffers
    its commands name.

    Parameters
    ----------
    device : Device, optional
        The device whose buffers it uses and whose queues run it; by
        default the device of the first buffer it is given.

    Notes
    -----
    Each builder method appends one command and returns the
    CommandBuffer, so calls can be chained. Operands are Buffers, or
    ``(Buffer, byte_offset)`` pairs; counts and shapes default to what
    the operands' shapes say. The device validates the whole stream at
    submit: what it rejects raises VtpuError naming the command, operand
    and reason. A builder raises ValueError for what cannot be encoded
    (and then appends nothing).
    """

    def __init__(self, device=None):
        self.device = device
        self._cb = ffi.new("struct vtpu_cmdbuf *")
        lib.vtpu_cmdbuf_init(self._cb)
        self._fini = weakref.finalize(self, lib.vtpu_cmdbuf_fini, self._cb)
        self._buffers = []      # index order, as vtpu_cmdbuf_use() gives
        self._count = 0

    def __len__(self):
        """The number of commands."""
        return self._count

    def __repr__(self):
        return "<vtpu.CommandBuffer %d commands, %d buffers>" % (
            self._count, len(self._buffers))

    @property
    def buffers(self):
        """The buffers named, in buffer-index order."""
        return tuple(self._buffers)

    @property
    def nbytes(self):
        """The stream's size in bytes."""
        return self._cb.size

    def reset(self):
        """Empty the stream, forgetting its buffers; keeps its memory."""
        lib.vtpu_cmdbuf_reset(self._cb)
        self._buffers = []
        self._count = 0
        return self

    def _bind(self, device):
        if self.device is None:
            self.device = device
        elif device is not self.device:
            raise ValueError("a buffer of %r in a command buffer of %r"
                             % (device, self.device))

    def _ref(self, operand, name, dtypes=_F32):
        """(buffer index, byte offset) of an operand, or (0, 0) for None;
        and the Buffer."""
        if operand is None:
            return (0, 0), None
        buf, off = operand if isinstance(operand, tuple) else (operand, 0)
        if not isinstance(buf, Buffer):
            raise ValueError("operand %s: a Buffer or (Buffer, byte_offset), "
                             "not %r" % (name, operand))
        buf._require_open()
        self._bind(buf.device)
        off = int(off)
        if not 0 <= off < buf.size:
            raise ValueError("operand %s: offset %d is outside the buffer "
                             "(%d bytes)" % (name, off, buf.size))
        if dtypes and buf._typed and buf.dtype.name not in dtypes:
            raise ValueError("operand %s is %s; the command wants %s"
                             % (name, buf.dtype, " or ".join(dtypes)))
        err = self._cb.error
        index = lib.vtpu_cmdbuf_use(self._cb, buf._bo)
        if index == 0xFFFFFFFF:
            ret, self._cb.error = self._cb.error, err
            _check(ret, "operand %s" % name)
        if index == len(self._buffers):
            self._buffers.append(buf)
        return (index, off), buf

    def _refs(self, **operands):
        """{name: (index, offset)} of operands given as name=(value,
        dtypes)."""
        return {name: self._ref(v, name, dtypes)[0]
                for name, (v, dtypes) in operands.items()}

    @staticmethod
    def _elems(operand, itemsize=4):
        """Elements from an operand's offset to the end of its shape."""
        if operand is None:
            raise ValueError("give count")
        buf, off = operand if isinstance(operand, tuple) else (operand, 0)
        return max(buf.nbytes - int(off), 0) // itemsize

    @staticmethod
    def _shape2(operand, ld=0):
        """A whole packed 2-D Buffer's shape, else None."""
        if isinstance(operand, Buffer) and operand._typed and not ld \
                and len(operand.shape) == 2:
            return operand.shape
        return None

    @classmethod
    def _mn(cls, what, operand, m, n, ld=0):
        """(m, n): as given, else from @operand's whole 2-D shape; a
        ValueError where either stays unknown."""
        shape = cls._shape2(operand, ld)
        m = shape[0] if m is None and shape else m
        n = shape[1] if n is None and shape else n
        if m is None or n is None:
            raise ValueError("%s: give m and n" % what)
        return m, n

    def _emit(self, what, fn, *args):
        """Call a vtpu_cmdbuf_* builder; a failure leaves the stream as it
        was (not poisoned) and raises."""
        err = self._cb.error
        ret = fn(self._cb, *args)
        if ret:
            self._cb.error = err
            _check(ret, "%s: the library refused the command" % what)
        self._count += 1

    # ---- commands --------------------------------------------------------

    @_command
    def append(self, command):
        """Append a raw command: bytes (or a cffi ``struct vtpu_cmd_*``)
        starting with a struct vtpu_cmd_hdr whose size is its length."""
        data = bytes(ffi.buffer(command)) if isinstance(
            command, ffi.CData) else bytes(command)
        hdr = ffi.from_buffer("struct vtpu_cmd_hdr *", data) \
            if len(data) >= 8 else None
        if hdr is None or hdr.size != len(data):
            raise ValueError("append: a command is a header whose size is "
                             "the command's length (%d bytes)" % len(data))
        self._emit("append", lib.vtpu_cmdbuf_append, ffi.from_buffer(data))

    @_command
    def gemm(self, a, b, c, bias=None, *, m=None, n=None, k=None,
             alpha=1.0, beta=0.0, trans_a=False, trans_b=False, relu=False,
             lda=0, ldb=0, ldc=0, dtype=None, flags=0):
        """C = act(alpha * op(A) @ op(B) + beta * C + bias).

        Parameters
        ----------
        a, b : operand
            float32, or bfloat16 bit patterns as uint16 (then
            ``dtype="bfloat16"`` is implied).
        c : operand
            float32 [m, n], read (with beta != 0) and written.
        bias : operand, optional
            float32 [n], added to every row.
        m, n, k : int, optional
            Default: from the 2-D shapes of whole, packed operands (A is
            m x k, or k x m with trans_a; B is k x n, or n x k with
            trans_b); they must agree.
        relu : bool
            C = max(C, 0) after the bias.
        lda, ldb, ldc : int
            Leading dimensions as stored; 0: packed.
        flags : int
            More VTPU_GEMM_* flags (e.g. the panel layouts).
        """
        dims = {"m": [m], "n": [n], "k": [k]}
        sa, sb, sc = (self._shape2(a, lda), self._shape2(b, ldb),
                      self._shape2(c, ldc))
        if sa:
            dims["m"].append(sa[1 if trans_a else 0])
            dims["k"].append(sa[0 if trans_a else 1])
        if sb:
            dims["k"].append(sb[1 if trans_b else 0])
            dims["n"].append(sb[0 if trans_b else 1])
        if sc:
            dims["m"].append(sc[0])
            dims["n"].append(sc[1])
        dims = _agree("gemm", dims, ": A %s%s, B %s%s, C %s" % (
            sa, " (transposed)" if trans_a else "",
            sb, " (transposed)" if trans_b else "", sc))
        ab, dt = _gemm_dtype("gemm", a, dtype)
        r = self._refs(a=(a, ab), b=(b, ab), c=(c, _F32), bias=(bias, _F32))
        flags |= ((lib.VTPU_GEMM_TRANS_A if trans_a else 0) |
                  (lib.VTPU_GEMM_TRANS_B if trans_b else 0) |
                  (lib.VTPU_GEMM_BIAS if bias is not None else 0) |
                  (lib.VTPU_GEMM_RELU if relu else 0))
        desc = ffi.new("struct vtpu_gemm_desc *", dict(
            dims, flags=flags, lda=lda, ldb=ldb, ldc=ldc,
            dtype=dt, alpha=alpha, beta=beta,
            a_buf=r["a"][0], a_off=r["a"][1], b_buf=r["b"][0],
            b_off=r["b"][1], c_buf=r["c"][0], c_off=r["c"][1],
            bias_buf=r["bias"][0], bias_off=r["bias"][1]))
        self._emit("gemm", lib.vtpu_cmdbuf_gemm, desc)

    @_command
    def fill(self, dst, value, count=None):
        """dst[0:count] = value (float32; count: default all of dst)."""
        (buf, off), _ = self._ref(dst, "dst")
        count = self._elems(dst) if count is None else count
        self._emit("fill", lib.vtpu_cmdbuf_fill, buf, off, count, value)

    @_command
    def copy(self, dst, src, nbytes=None):
        """Copy nbytes (default: all of src from its offset) from src to
        dst; they may not overlap."""
        r = self._refs(dst=(dst, _ANY), src=(src, _ANY))
        nbytes = self._elems(src, 1) if nbytes is None else nbytes
        self._emit("copy", lib.vtpu_cmdbuf_copy, *r["dst"], *r["src"],
                   nbytes)

    @_command
    def elementwise(self, op, x, y, z, *, count=None, alpha=0.0, beta=0.0):
        """z = op(x, y) over count float32 elements (default: all of x).

        op is "add", "sub", "mul", "scale" (alpha * x), "axpy" (alpha * x
        + y), "axpby", "relu", "relu_grad" (x > 0 ? y : 0),
        "add_scalar" (x + alpha), "sigmoid", "sigmoid_grad" (y * x * (1 -
        x), x the sigmoid's output), "tanh" or "tanh_grad" (y * (1 - x *
        x), x the tanh's output); y is None for the ops that do not read
        it; alpha and beta must be 0 for the ops that do not use them.
        """
        op = _name(_EW_OPS, op, "elementwise op")
        r = self._refs(x=(x, _F32), y=(y, _F32), z=(z, _F32))
        count = self._elems(x) if count is None else count
        self._emit("elementwise", lib.vtpu_cmdbuf_elementwise, op, count,
                   alpha, beta, r["x"], r["y"], r["z"])

    @_command
    def reduce(self, op, x, y, *, m=None, n=None, ldx=0, alpha=1.0,
               beta=0.0):
        """y = beta * y + sums of alpha * x [m, n]: over its rows ("cols":
        y[n], e.g. a bias gradient) or its columns ("rows": y[m]), or sums
        of alpha * x^2 over its columns ("sumsq_rows": y[m]); m and n
        default to x's 2-D shape."""
        op = _name(_REDUCE_OPS, op, "reduce op")
        m, n = self._mn("reduce", x, m, n, ldx)
        r = self._refs(x=(x, _F32), y=(y, _F32))
        self._emit("reduce", lib.vtpu_cmdbuf_reduce, op, m, n, ldx, alpha,
                   beta, r["x"], r["y"])

    @_command
    def argmax(self, x, y, *, m=None, n=None, ldx=0):
        """y (uint32 [m]) = the index of the first maximum of each row of
        x [m, n] (leading dimension ldx, 0: n): ties go to the lowest
        index, NaN is above every number (a row's first NaN wins), as
        numpy.argmax(x, axis=1); what embedding() reads as the next
        step's ids in greedy decoding. m and n default to x's 2-D shape."""
        m, n = self._mn("argmax", x, m, n, ldx)
        r = self._refs(x=(x, _F32), y=(y, _U32))
        self._emit("argmax", lib.vtpu_cmdbuf_argmax, m, n, ldx, r["x"],
                   r["y"])

    @staticmethod
    def _shape(operand):
        """A whole typed Buffer's shape, else None."""
        if isinstance(operand, Buffer) and operand._typed:
            return tuple(operand.shape)
        return None

    def _emb_dims(self, what, ids, table, n, vocab, dim):
        """n from ids' elements, vocab and dim from table's 2-D shape."""
        shape = self._shape2(table)
        n = self._elems(ids) if n is None else n
        vocab = shape[0] if vocab is None and shape else vocab
        dim = shape[1] if dim is None and shape else dim
        if vocab is None or dim is None:
            raise ValueError("%s: give vocab and dim (the table is not a "
                             "2-D buffer)" % what)
        return n, vocab, dim

    @_command
    def embedding(self, ids, table, y, *, n=None, vocab=None, dim=None):
        """y [n, dim] = the rows of table [vocab, dim] that ids (uint32
        [n]) name; an id >= vocab (e.g. 0xffffffff for padding) gives a
        zero row. n defaults to ids' elements, vocab and dim to table's
        2-D shape."""
        n, vocab, dim = self._emb_dims("embedding", ids, table, n, vocab,
                                       dim)
        r = self._refs(ids=(ids, _U32), table=(table, _F32), y=(y, _F32))
        self._emit("embedding", lib.vtpu_cmdbuf_embedding, n, vocab, dim,
                   r["ids"], r["table"], r["y"])

    @_command
    def embedding_grad(self, ids, dy, dtable, *, accumulate=False, n=None,
                       vocab=None, dim=None):
        """dtable [vocab, dim] = the rows of dy [n, dim] added at the rows
        ids name, in the order of the ids (ids >= vocab skipped); dtable is
        zeroed first, unless accumulate."""
        n, vocab, dim = self._emb_dims("embedding_grad", ids, dtable, n,
                                       vocab, dim)
        r = self._refs(ids=(ids, _U32), dy=(dy, _F32),
                       dtable=(dtable, _F32))
        self._emit("embedding_grad", lib.vtpu_cmdbuf_embedding_grad, n,
                   vocab, dim,
                   lib.VTPU_EMBEDDING_ACCUMULATE if accumulate else 0,
                   r["ids"], r["dy"], r["dtable"])

    @_command
    def gemm_batched(self, a, b, c, *, batch=None, m=None, n=None, k=None,
                     alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
                     lda=0, ldb=0, ldc=0, stride_a=None, stride_b=None,
                     stride_c=None, dtype=None):
        """C_i = alpha * op(A_i) @ op(B_i) + beta * C_i for i < batch, as
        attention's Q K^T and P V per sequence.

        Operands are whole, packed 3-D buffers ([batch, rows, cols]) or a
        2-D one for an A or B that every product shares (its stride 0);
        otherwise give the dimensions, the leading dimensions and the
        strides (elements from one matrix to the next; default: packed).
        dtype of A and B as for gemm.
        """
        def dims_of(op, ld, trans):
            """(batch or None, (rows, cols) of op(X) or None, 2-D?)"""
            shape = self._shape(op) if not ld else None
            if not shape or len(shape) not in (2, 3):
                return None, None, False
            rows, cols = shape[-2:]
            return (shape[0] if len(shape) == 3 else None,
                    (cols, rows) if trans else (rows, cols), len(shape) == 2)

        dims = {"batch": [batch], "m": [m], "n": [n], "k": [k]}
        ba, sa, a2 = dims_of(a, lda, trans_a)
        bb, sb, b2 = dims_of(b, ldb, trans_b)
        bc, sc, _ = dims_of(c, ldc, False)
        for bt in (ba, bb, bc):
            dims["batch"].append(bt)
        if sa:
            dims["m"].append(sa[0])
            dims["k"].append(sa[1])
        if sb:
            dims["k"].append(sb[0])
            dims["n"].append(sb[1])
        if sc:
            dims["m"].append(sc[0])
            dims["n"].append(sc[1])
        dims = _agree("gemm_batched", dims)
        m, n, k = dims["m"], dims["n"], dims["k"]
        ar, ac = (k, m) if trans_a else (m, k)
        br, bc_ = (n, k) if trans_b else (k, n)

        def packed(rows, cols, ld, shared):
            return 0 if shared else rows * (ld or cols)

        if stride_a is None:
            stride_a = packed(ar, ac, lda, a2)
        if stride_b is None:
            stride_b = packed(br, bc_, ldb, b2)
        if stride_c is None:
            stride_c = packed(m, n, ldc, False)
        ab, dt = _gemm_dtype("gemm_batched", a, dtype)
        r = self._refs(a=(a, ab), b=(b, ab), c=(c, _F32))
        desc = ffi.new("struct vtpu_gemm_batched_desc *", dict(
            dims, flags=((lib.VTPU_GEMM_TRANS_A if trans_a else 0) |
                         (lib.VTPU_GEMM_TRANS_B if trans_b else 0)),
            lda=lda, ldb=ldb, ldc=ldc, dtype=dt,
            alpha=alpha, beta=beta, stride_a=stride_a, stride_b=stride_b,
            stride_c=stride_c, a=r["a"], b=r["b"], c=r["c"]))
        self._emit("gemm_batched", lib.vtpu_cmdbuf_gemm_batched, desc)

    @_command
    def softmax_xent(self, logits, labels, loss, correct, *, dlogits=None,
                     probs=None, m=None, n=None, scale=None,
                     mean_valid=False):
        """Softmax cross-entropy of logits [m, n] against labels (uint32
        [m]): loss (float32 [1]) = scale * sum of -log softmax[label]
        (scale default 1/m: the mean), correct (uint32 [1]) = rows whose
        label is the argmax; optionally dlogits, the gradient of loss, and
        probs, the softmax (float32 [m, n] each). A label >= n marks an
        ignored row (padding); with mean_valid, loss and dlogits are
        scaled by scale / (rows not ignored) instead (scale default 1:
        the mean over the valid rows)."""
        m, n = self._mn("softmax_xent", logits, m, n)
        r = self._refs(logits=(logits, _F32), labels=(labels, _U32),
                       dlogits=(dlogits, _F32), loss=(loss, _F32),
                       correct=(correct, _U32), probs=(probs, _F32))
        flags = ((lib.VTPU_XENT_DLOGITS if dlogits is not None else 0) |
                 (lib.VTPU_XENT_PROBS if probs is not None else 0) |
                 (lib.VTPU_XENT_MEAN_VALID if mean_valid else 0))
        if scale is None:
            scale = 1.0 if mean_valid else 1.0 / m if m else 0.0
        desc = ffi.new("struct vtpu_xent_desc *", dict(
            r, m=m, n=n, flags=flags, scale=scale))
        self._emit("softmax_xent", lib.vtpu_cmdbuf_softmax_xent, desc)

    def _softmax(self, name, fn, x, y, dy, lengths, m, n, rows_per_group,
                 causal):
        m, n = self._mn(name, y, m, n)
        r = self._refs(x=(x, _F32), y=(y, _F32), dy=(dy, _F32),
                       lengths=(lengths, _U32))
        flags = ((lib.VTPU_SOFTMAX_LENGTHS if lengths is not None else 0) |
                 (lib.VTPU_SOFTMAX_CAUSAL if causal else 0))
        desc = ffi.new("struct vtpu_softmax_desc *", dict(
            r, m=m, n=n, rows_per_group=rows_per_group, flags=flags))
        self._emit(name, fn, desc)

    @_command
    def softmax(self, x, y, *, lengths=None, rows_per_group=1,
                causal=False, m=None, n=None):
        """y = softmax of x [m, n] over its last axis, masked: row r sees
        columns j < lengths[r // rows_per_group] (uint32, given or not)
        and, with causal, j <= r % rows_per_group; masked y are 0, a row
        with none valid is all 0. m and n default to y's 2-D shape."""
        self._softmax("softmax", lib.vtpu_cmdbuf_softmax, x, y, None,
                      lengths, m, n, rows_per_group, causal)

    @_command
    def softmax_grad(self, y, dy, dx, *, lengths=None, rows_per_group=1,
                     causal=False, m=None, n=None):
        """dx = y * (dy - sum(dy * y)) per row, from the forward's output
        y; give the forward's mask (masked dx are 0)."""
        self._softmax("softmax_grad", lib.vtpu_cmdbuf_softmax_grad, dx, y,
                      dy, lengths, m, n, rows_per_group, causal)

    def _lstm(self, name, fn, state, batch, hidden, row_stride,
              gate_stride, **operands):
        shape = self._shape2(state)
        batch = shape[0] if batch is None and shape else batch
        hidden = shape[1] if hidden is None and shape else hidden
        if batch is None or hidden is None:
            raise ValueError("%s: give batch and hidden" % name)
        r = self._refs(**{k: (v, _F32) for k, v in operands.items()})
        desc = ffi.new("struct vtpu_lstm_desc *", dict(
            r, batch=batch, hidden=hidden,
            row_stride=4 * hidden if row_stride is None else row_stride,
            gate_stride=hidden if gate_stride is None else gate_stride))
        self._emit(name, fn, desc)

    @_command
    def lstm_cell(self, gates, c_prev, act, c, tc, h, *, batch=None,
                  hidden=None, row_stride=None, gate_stride=None):
        """One LSTM step after its gates' GEMMs: gates (gate k of row b,
        column j at k * gate_stride + b * row_stride + j; by default
        [B, 4H], rows of the blocks i, f, g, o, PyTorch's order), c_prev
        [B, H] -> act (the activated gates, the layout of gates; may be
        gates itself), c = f * c_prev + i * g, tc = tanh(c), h = o * tc.
        batch and hidden default to c_prev's 2-D shape."""
        self._lstm("lstm_cell", lib.vtpu_cmdbuf_lstm_cell, c_prev, batch,
                   hidden, row_stride, gate_stride, gates=gates,
                   c_prev=c_prev, act=act, c=c, tc=tc, h=h)

    @_command
    def lstm_cell_grad(self, act, c_prev, tc, dh, dc_next, dgates, dc_prev,
                       *, batch=None, hidden=None, row_stride=None,
                       gate_stride=None):
        """The gradient of lstm_cell: from its act, c_prev and tc, dh and
        dc_next (the gradient of c from the next step), dgates (the
        layout of act; may be act itself) and dc_prev [B, H] (may be
        dc_next itself)."""
        self._lstm("lstm_cell_grad", lib.vtpu_cmdbuf_lstm_cell_grad, c_prev,
                   batch, hidden, row_stride, gate_stride, act=act,
                   c_prev=c_prev, tc=tc, dh=dh, dc_next=dc_next,
                   dgates=dgates, dc_prev=dc_prev)

    @_command
    def cast(self, mode, src, dst, count=None, *, scale=0.0, shift=0.0):
        """Convert count elements (default: all of src): mode
        "f32_to_bf16", "bf16_to_f32" (bfloat16 as uint16) or "u8_to_f32"
        (dst = src * scale + shift)."""
        mode = _name(_CAST_MODES, mode, "cast mode")
        types = {lib.VTPU_CAST_F32_TO_BF16: (_F32, _BF16),
                 lib.VTPU_CAST_BF16_TO_F32: (_BF16, _F32),
                 lib.VTPU_CAST_U8_TO_F32: (("uint8",), _F32)}.get(mode,
                                                                  (_ANY, _ANY))
        size = {lib.VTPU_CAST_F32_TO_BF16: 4,
                lib.VTPU_CAST_BF16_TO_F32: 2}.get(mode, 1)
        r = self._refs(src=(src, types[0]), dst=(dst, types[1]))
        count = self._elems(src, size) if count is None else count
        self._emit("cast", lib.vtpu_cmdbuf_cast, mode, count, scale, shift,
                   r["src"], r["dst"])

    @_command
    def im2col(self, window, image, cols):
        """cols [n*oh*ow, kh*kw*c] = im2col(image [n, h, w, c]);
        window: a Window (or its fields as a tuple or dict)."""
        r = self._refs(image=(image, _F32), cols=(cols, _F32))
        self._emit("im2col", lib.vtpu_cmdbuf_im2col, _window(window),
                   r["image"], r["cols"])

    @_command
    def col2im(self, window, cols, image):
        """image = col2im(cols), the adjoint of im2col (overwrites)."""
        r = self._refs(cols=(cols, _F32), image=(image, _F32))
        self._emit("col2im", lib.vtpu_cmdbuf_col2im, _window(window),
                   r["cols"], r["image"])

    @_command
    def maxpool(self, window, x, y, index):
        """y, index (uint32) = maxpool(x), all NHWC."""
        r = self._refs(x=(x, _F32), y=(y, _F32), index=(index, _U32))
        self._emit("maxpool", lib.vtpu_cmdbuf_maxpool, _window(window),
                   r["x"], r["y"], r["index"])

    @_command
    def maxpool_grad(self, window, dy, index, dx):
        """dx = the maxpool backward of dy at index (overwrites dx)."""
        r = self._refs(dy=(dy, _F32), index=(index, _U32), dx=(dx, _F32))
        self._emit("maxpool_grad", lib.vtpu_cmdbuf_maxpool_grad,
                   _window(window), r["dy"], r["index"], r["dx"])

    def _conv(self, what, fn, window, oc, weights, flags, **operands):
        if oc is None:
            shape = self._shape2(weights)
            if not shape:
                raise ValueError("%s: give oc (w is not a 2-D buffer)"
                                 % what)
            oc = shape[1]
        r = self._refs(**{k: (v, _F32) for k, v in operands.items()})
        desc = ffi.new("struct vtpu_conv_desc *", dict(
            r, win=_window(window)[0], oc=oc, flags=flags))
        self._emit(what, fn, desc)

    @_command
    def conv(self, window, x, w, y, *, bias=None, relu=False, oc=None):
        """y [n, oh, ow, oc] = act(conv(x [n, h, w, c], w [kh*kw*c, oc]) +
        bias [oc]); oc defaults to w's columns."""
        flags = ((lib.VTPU_CONV_BIAS if bias is not None else 0) |
                 (lib.VTPU_CONV_RELU if relu else 0))
        self._conv("conv", lib.vtpu_cmdbuf_conv, window, oc, w, flags,
                   x=x, w=w, bias=bias, y=y)

    @_command
    def conv_dgrad(self, window, dy, w, dx, *, accumulate=False, oc=None):
        """dx = the gradient of conv's input, from dy and w (stride 1);
        added to dx with accumulate."""
        self._conv("conv_dgrad", lib.vtpu_cmdbuf_conv_dgrad, window, oc, w,
                   lib.VTPU_CONV_ACCUMULATE if accumulate else 0,
                   x=dx, w=w, y=dy)

    @_command
    def conv_wgrad(self, window, x, dy, dw, *, accumulate=False, oc=None):
        """dw [kh*kw*c, oc] = the gradient of conv's weights, from x and
        dy; added to dw with accumulate."""
        self._conv("conv_wgrad", lib.vtpu_cmdbuf_conv_wgrad, window, oc, dw,
                   lib.VTPU_CONV_ACCUMULATE if accumulate else 0,
                   x=x, w=dw, y=dy)

    def _conv_pool(self, what, fn, window, pool, pool_stride, oc, weights,
                   flags, **operands):
        if oc is None:
            shape = self._shape2(weights)
            if not shape:
                raise ValueError("%s: give oc (w is not a 2-D buffer)"
                                 % what)
            oc = shape[1]
        ph, pw = (pool, pool) if np.isscalar(pool) else pool
        if pool_stride is None:
            pool_stride = (ph, pw)
        sh, sw = ((pool_stride, pool_stride) if np.isscalar(pool_stride)
                  else pool_stride)
        types = {"index": ("uint8",)}
        r = self._refs(**{k: (v, types.get(k, _F32))
                          for k, v in operands.items()})
        desc = ffi.new("struct vtpu_conv_pool_desc *", dict(
            r, win=_window(window)[0], oc=oc, pool_h=ph, pool_w=pw,
            pool_stride_h=sh, pool_stride_w=sw, flags=flags))
        self._emit(what, fn, desc)

    @_command
    def conv_pool(self, window, x, w, bias, y, index, *, pool,
                  pool_stride=None, relu=False, oc=None):
        """y, index (uint8 routes) = maxpool(conv(x, w) + bias), then ReLU
        with relu; pool: (ph, pw) or one int, pool_stride default pool."""
        self._conv_pool("conv_pool", lib.vtpu_cmdbuf_conv_pool, window,
                        pool, pool_stride, oc, w,
                        lib.VTPU_CONV_RELU if relu else 0,
                        x=x, w=w, bias=bias, y=y, index=index)

    @_command
    def conv_pool_wgrad(self, window, x, dy, index, dw, dbias, *, pool,
                        pool_stride=None, oc=None):
        """dw, dbias = the gradients of conv_pool's w and bias, from x, dy
        and the routes conv_pool wrote to index."""
        self._conv_pool("conv_pool_wgrad", lib.vtpu_cmdbuf_conv_pool_wgrad,
                        window, pool, pool_stride, oc, dw, 0,
                        x=x, w=dw, bias=dbias, dy=dy, index=index)

    @_command
    def sgd(self, param, grad, mom=None, *, lr, momentum=0.0,
            weight_decay=0.0, nesterov=False, count=None):
        """One SGD step on param, in place (mom: the momentum buffer,
        needed when momentum != 0)."""
        r = self._refs(param=(param, _F32), grad=(grad, _F32),
                       mom=(mom, _F32))
        count = self._elems(param) if count is None else count
        self._emit("sgd", lib.vtpu_cmdbuf_sgd, count, lr, momentum,
                   weight_decay, lib.VTPU_SGD_NESTEROV if nesterov else 0,
                   r["param"], r["grad"], r["mom"])

    @_command
    def clip_norm(self, sumsq, x, *, max_norm, count=None):
        """Clip by global norm, in place: x *= max_norm / sqrt(sumsq[0])
        when that norm is above max_norm (sumsq: float32 [1], the sum of
        the squares of all the gradients, from reduce("sumsq_rows", ...)
        with beta 0 then 1); count: default all of x."""
        r = self._refs(sumsq=(sumsq, _F32), x=(x, _F32))
        count = self._elems(x) if count is None else count
        self._emit("clip_norm", lib.vtpu_cmdbuf_clip_norm, count, max_norm,
                   r["sumsq"], r["x"])

    @_command
    def adam_step(self, state, *, beta1=0.9, beta2=0.999):
        """Advance the Adam state (float32 [2]) by one step."""
        (ref,) = self._refs(state=(state, _F32)).values()
        self._emit("adam_step", lib.vtpu_cmdbuf_adam_step, beta1, beta2,
                   ref)

    @_command
    def adam(self, param, grad, m, v, state, *, lr, beta1=0.9, beta2=0.999,
             eps=1e-7, weight_decay=0.0, decoupled=False, count=None):
        """One Adam step on param, in place (m, v: the moments; state:
        adam_step's); decoupled: AdamW's weight decay."""
        r = self._refs(param=(param, _F32), grad=(grad, _F32), m=(m, _F32),
                       v=(v, _F32), state=(state, _F32))
        count = self._elems(param) if count is None else count
        desc = ffi.new("struct vtpu_adam_desc *", dict(
            r, count=count, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
            weight_decay=weight_decay,
            flags=lib.VTPU_ADAM_DECOUPLED if decoupled else 0))
        self._emit("adam", lib.vtpu_cmdbuf_adam, desc)

    @_command
    def dropout(self, x, z, mask, step, *, rate, seed=0, count=None):
        """z = x * mask, mask kept-and-scaled (1 / (1 - rate)) or 0 per
        element, drawn from (seed, step[0], i); z may be x."""
        r = self._refs(x=(x, _F32), z=(z, _F32), mask=(mask, _F32),
                       step=(step, _F32))
        count = self._elems(x) if count is None else count
        self._emit("dropout", lib.vtpu_cmdbuf_dropout, count, rate, seed,
                   r["x"], r["z"], r["mask"], r["step"])

    # ---- submission ------------------------------------------------------

    def _check_submittable(self, device):
        if not self._count:
            raise ValueError("the command buffer is empty")
        if self.device is not device:
            raise ValueError("a command buffer of %r submitted to %r"
                             % (self.device, device))
        for buf in self._buffers:
            buf._require_open()

    def _rejection(self, job, ret):
        """The VtpuError of a failed vtpu_submit() or vtpu_cpu_run()."""
        e = job.error
        if e.reason == lib.VTPU_ERR_NONE:
            return VtpuError(-ret, "submit: %s" % os.strerror(-ret))
        text = ffi.new("char[]", 512)
        lib.vtpu_job_strerror(self._cb, job, text, len(text))
        text = ffi.string(text).decode(errors="replace")
        fields = {"reason": _REASONS.get(e.reason, str(e.reason)),
                  "operand": _OPERANDS.get(e.operand, str(e.operand))}
        if e.reason == lib.VTPU_ERR_BAD_STRIDE_REPEAT:
            fields["buffer"] = e.cmd
        else:
            fields.update(command=e.cmd, offset=e.offset)
            if e.offset + 8 <= self._cb.size:
                hdr = ffi.cast("struct vtpu_cmd_hdr *",
                               self._cb.data + e.offset)
                fields["opcode"] = ffi.string(
                    lib.vtpu_opcode_name(hdr.opcode)).decode()
        return VtpuError(-ret, "the device rejected the command stream: "
                         + text, **fields)


class Fence(_Closable):
    """A sync_file: signals when its job ends.

    Parameters
    ----------
    fd : int
        A sync_file file descriptor; the Fence owns it (closes it).

    Notes
    -----
    ``fileno()`` makes it usable with select, poll, selectors and
    asyncio (readable once signalled). A context manager; the fd is
    closed by close() or when the Fence is garbage-collected.
    """

    def __init__(self, fd, *, _signalled=False):
        self._fd = int(fd)
        self._always = _signalled   # the cpu backend's: an eventfd
        self._close = weakref.finalize(self, os.close, self._fd)

    @classmethod
    def _done(cls):
        """A fence already signalled (the cpu backend's jobs)."""
        return cls(os.eventfd(1, os.EFD_CLOEXEC), _signalled=True)

    def _describe(self):
        return "Fence fd %d" % self._fd

    @property
    def closed(self):
        return not self._close.alive

    def _require_open(self):
        if self.closed:
            raise _closed_error("fence")
        return self._fd

    def fileno(self):
        """The sync_file fd (owned by the Fence)."""
        return self._require_open()

    def close(self):
        """Close the fd (harmless twice)."""
        self._close()

    @property
    def signalled(self):
        """True once the fence has signalled (a poll, no wait)."""
        p = select.poll()
        p.register(self._require_open(), select.POLLIN)
        return bool(p.poll(0))

    def wait(self, timeout=None):
        """Wait for the fence.

        Parameters
        ----------
        timeout : float, optional
            Seconds; None waits for ever, 0 polls.

        Returns
        -------
        bool
            True when signalled, False at the timeout.

        Raises
        ------
        VtpuError
            The fence signalled an error: its job failed.
        """
        fd = self._require_open()
        if self._always:
            return True
        ms = -1 if timeout is None else min(max(math.ceil(timeout * 1000),
                                                0), 2**31 - 1)
        ret = lib.vtpu_fence_wait(fd, ms)
        if ret == -_errno.ETIME:
            return False
        _check(ret, "fence: its job failed")
        return True


class Queue(_Closable):
    """A queue of jobs on a device (see Device.queue).

    Attributes
    ----------
    device : Device
    id : int
        The queue id (on the cpu backend a number of this process's).
    """

    def __init__(self, device, priority, timeout_ms, in_fence_timeout_ms):
        core = device._require_open()
        self.device = device
        priority = _name(_PRIORITIES, priority, "priority")
        self._seqno = 0
        self._closed = False
        self._destroy = None
        if device.is_cpu:   # runs at submit: nothing to schedule
            device._cpu_queues += 1
            self.id = device._cpu_queues
            return
        try:
            opts = ffi.new("struct vtpu_queue_opts *", {
                "sz": ffi.sizeof("struct vtpu_queue_opts"),
                "priority": priority, "timeout_ms": timeout_ms,
                "in_fence_timeout_ms": in_fence_timeout_ms})
        except (OverflowError, TypeError) as e:
            raise ValueError("queue: %s" % e) from None
        qid = ffi.new("uint32_t *")
        _check(lib.vtpu_queue_create_opts(core.dev, opts, qid),
               "queue create")
        self.id = qid[0]
        self._destroy = weakref.finalize(self, core.destroy_queue, self.id)

    def _describe(self):
        return "Queue %d on %s" % (self.id, self.device.path)

    @property
    def closed(self):
        return self._closed or self.device.closed

    def close(self):
        """Destroy the queue: jobs not yet started are cancelled."""
        self._closed = True
        if self._destroy is not None:
            self._destroy()

    def submit(self, cmdbuf, in_fence=None, out_fence=True, repeat=1,
               strides=None, first_iter=0, no_implicit_sync=False):
        """Run a command stream.

        Parameters
        ----------
        cmdbuf : CommandBuffer
            Of this queue's device; it may be changed or submitted again
            as soon as submit() returns.
        in_fence : Fence or int, optional
            A sync_file the job waits for first (not consumed).
        out_fence : bool, default True
            Give the job a Fence (``job.fence``).
        repeat : int, default 1
            Run the stream this many times in one job.
        strides : sequence of int or dict, optional
            With repeat: per buffer (in ``cmdbuf.buffers`` order, or a
            dict {Buffer: stride}, others 0) the bytes iteration i shifts
            it by, times i (multiples of 4).
        first_iter : int, default 0
            With strides: the number of the first iteration.
        no_implicit_sync : bool, default False
            Neither wait for nor publish fences on shared (dma-buf)
            buffers.

        Returns
        -------
        Job

        Raises
        ------
        VtpuError
            The device rejected the stream (``command``, ``opcode``,
            ``operand`` and ``reason`` say where and why), or the submit
            failed (ENOSPC: too many jobs queued, wait for one).
        ValueError
            An empty stream, or a stream of another device.
        """
        core = self.device._require_open()
        if self.closed:
            raise _closed_error("queue %d" % self.id)
        cmdbuf._check_submittable(self.device)
        job = ffi.new("struct vtpu_job *")
        keep = None
        try:
            job.queue = self.id
            job.in_fence = -1
            job.want_out_fence = 1 if out_fence else 0
            job.repeat = repeat
            job.first_iter = first_iter
            job.no_implicit_sync = 1 if no_implicit_sync else 0
            if strides is not None:
                if isinstance(strides, dict):
                    strides = [strides.get(b, 0) for b in cmdbuf._buffers]
                if len(strides) != len(cmdbuf._buffers):
                    raise ValueError("strides: one per buffer (%d), not %d"
                                     % (len(cmdbuf._buffers), len(strides)))
                keep = ffi.new("uint64_t[]", list(strides))
                job.strides = keep
        except (OverflowError, TypeError) as e:
            raise ValueError("submit: %s" % e) from None

        if self.device.is_cpu:
            if isinstance(in_fence, Fence):
                in_fence.wait()
            elif in_fence is not None:
                Fence(os.dup(int(in_fence))).wait()
            ret = lib.vtpu_cpu_run(core.cpu, cmdbuf._cb, job)
        else:
            if isinstance(in_fence, Fence):
                # a cpu backend's fence has signalled: nothing to wait for
                job.in_fence = -1 if in_fence._always else in_fence.fileno()
            elif in_fence is not None:
                job.in_fence = int(in_fence)
            ret = lib.vtpu_submit(core.dev, cmdbuf._cb, job)
        if ret:
            raise cmdbuf._rejection(job, ret)
        self._seqno += 1
        fence = None
        if out_fence:
            fence = Fence._done() if self.device.is_cpu \
                else Fence(job.out_fence)
        return Job(self, job.seqno if not self.device.is_cpu
                   else self._seqno, fence)


class Job:
    """A submitted stream (see Queue.submit).

    Attributes
    ----------
    queue : Queue
    seqno : int
        Its number in the queue.
    fence : Fence or None
        Signals when it ends (owned by the Job; close it to free the fd
        early).
    """

    def __init__(self, queue, seqno, fence):
        self.queue, self.seqno, self.fence = queue, seqno, fence

    def __repr__(self):
        return "<vtpu.Job %d on queue %d>" % (self.seqno, self.queue.id)

    def _poll(self, timeout_ns):
        """(status, -errno) of the job: vtpu_wait()."""
        dev = self.queue.device
        core = dev._require_open()
        if dev.is_cpu:
            return lib.VTPU_JOB_DONE, 0
        status = ffi.new("uint32_t *")
        job_error = ffi.new("int32_t *")
        ret = lib.vtpu_wait(core.dev, self.queue.id, self.seqno, timeout_ns,
                            status, job_error)
        if ret and ret != -_errno.ETIME:
            _check(ret, "wait for job %d" % self.seqno)
        return status[0], job_error[0]

    @property
    def status(self):
        """How the job stands: "pending", "done", "error", "cancelled",
        "timed out" or "retired" (ended long ago)."""
        return ffi.string(lib.vtpu_status_name(self._poll(0)[0])).decode()

    def wait(self, timeout=None):
        """Wait for the job to end.

        Parameters
        ----------
        timeout : float, optional
            Seconds; None waits for ever, 0 polls.

        Returns
        -------
        bool
            True when it ended well, False at the timeout.

        Raises
        ------
        VtpuError
            It failed, was cancelled or timed out (``status`` says
            which, ``errno`` the job's error).
        """
        ns = -1 if timeout is None else max(int(timeout * 1e9), 0)
        status, err = self._poll(ns)
        if status == lib.VTPU_JOB_PENDING:
            return False
        if status == lib.VTPU_JOB_RETIRED and self.fence is not None \
                and not self.fence.closed:
            return self.fence.wait(0)   # its fence still knows
        if status in (lib.VTPU_JOB_DONE, lib.VTPU_JOB_RETIRED):
            return True
        name = ffi.string(lib.vtpu_status_name(status)).decode()
        err = -err if err < 0 else _errno.EIO
        raise VtpuError(err, "job %d on queue %d: %s: %s"
                        % (self.seqno, self.queue.id, name,
                           os.strerror(err)), status=name)
