# SPDX-License-Identifier: MIT
"""vtpu.keras.distribute: data-parallel training, TPUStrategy's idiom.

    strategy = vtpu.keras.distribute.MirroredStrategy(devices=["cpu", "cpu"])
    with strategy.scope():
        model = keras.Sequential([...])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=128)     # 64 examples on each replica

A model compiled inside the scope (or with compile(devices=[...])) is
replicated by libvtpu's vtpu_model_compile_replicated(): one replica per
device, each training on its share of the global batch, the gradients
summed across the replicas (in a fixed order) before one identical
update. evaluate, predict and the weights use replica 0 with the whole
batch. docs/python.md, "Data parallelism".

MultiWorkerMirroredStrategy does the same across the processes of an MPI
job (`mpirun -np 2 python3 train.py`; libvtpu's
vtpu_model_compile_distributed()).
"""
import atexit
import contextlib
import glob
import re

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy", "TPUStrategy",
           "get_strategy", "has_strategy"]

MAX_REPLICAS = 64

_current = []   # the strategies whose scope() is open, innermost last


def all_devices():
    """Every /dev/vtpuN, in order of N."""
    devs = glob.glob("/dev/vtpu[0-9]*")
    devs = [d for d in devs if re.fullmatch(r"/dev/vtpu[0-9]+", d)]
    return sorted(devs, key=lambda d: int(d[len("/dev/vtpu"):]))


def check_devices(devices, where):
    """@devices as a list of libvtpu device names, or a ValueError /
    TypeError saying what is wrong with it: "all", or a list of "cpu" and
    "/dev/vtpuN", 1 to 64 of them, no device twice ("cpu" may repeat:
    each is a backend of its own)."""
    if devices == "all":
        devs = all_devices()
        if not devs:
            raise ValueError("%sdevices='all': there is no /dev/vtpuN "
                             "(load the module with devices=N, or name "
                             "'cpu' replicas)" % where)
        return devs
    if isinstance(devices, (str, bytes)) or not isinstance(
            devices, (list, tuple)):
        raise TypeError("%sdevices must be a list of '/dev/vtpuN' or 'cpu' "
                        "(or 'all'), not %r" % (where, devices))
    if not 1 <= len(devices) <= MAX_REPLICAS:
        raise ValueError("%sdevices: 1 to %d devices, not %d"
                         % (where, MAX_REPLICAS, len(devices)))
    seen = set()
    for d in devices:
        if not isinstance(d, str) or not d or "\0" in d:
            raise TypeError("%sdevices: each must be '/dev/vtpuN' or 'cpu', "
                            "not %r" % (where, d))
        if d != "cpu" and d in seen:
            raise ValueError("%sdevices: %s is named twice: each device can "
                             "hold one replica ('cpu' may repeat)"
                             % (where, d))
        seen.add(d)
    return list(devices)


class MirroredStrategy:
    """Synchronous data parallelism on several devices of this machine
    (tf.distribute.MirroredStrategy's and TPUStrategy's idiom).

    devices: a list of "/dev/vtpuN" and "cpu" (each "cpu" a backend of
        its own), or None: every /dev/vtpuN there is (at least one)
    threads_per_replica: cpu replicas' worker threads (None: compile()'s
        threads, whose default is one per CPU)
    """

    def __init__(self, devices=None, threads_per_replica=None,
                 cross_device_ops=None):
        if cross_device_ops is not None:
            raise ValueError("MirroredStrategy: cross_device_ops=%r is not "
                             "supported: libvtpu all-reduces with engine "
                             "commands in a fixed order"
                             % (cross_device_ops,))
        where = "MirroredStrategy: "
        self._devices = check_devices("all" if devices is None else devices,
                                      where)
        if threads_per_replica is not None:
            if (not isinstance(threads_per_replica, int) or
                    isinstance(threads_per_replica, bool) or
                    not 1 <= threads_per_replica <= 4096):
                raise ValueError("%sthreads_per_replica=%r must be an "
                                 "integer from 1 to 4096"
                                 % (where, threads_per_replica))
        self.threads_per_replica = threads_per_replica

    @property
    def devices(self):
        return tuple(self._devices)

    @property
    def num_replicas_in_sync(self):
        return len(self._devices)

    @contextlib.contextmanager
    def scope(self):
        """Models compiled inside are replicated on the strategy's
        devices."""
        _current.append(self)
        try:
            yield self
        finally:
            _current.pop()

    def __repr__(self):
        return "MirroredStrategy(devices=%r)" % (self._devices,)


class TPUStrategy(MirroredStrategy):
    """The seeds' name for it: MirroredStrategy on the /dev/vtpuN devices
    (or @devices). @tpu_cluster_resolver is accepted and ignored when
    None."""

    def __init__(self, tpu_cluster_resolver=None, devices=None, **kw):
        if tpu_cluster_resolver is not None:
            raise ValueError("TPUStrategy: tpu_cluster_resolver=%r is not "
                             "supported: the devices are this machine's "
                             "/dev/vtpuN" % (tpu_cluster_resolver,))
        super().__init__(devices=devices, **kw)


class MultiWorkerMirroredStrategy(MirroredStrategy):
    """Synchronous data parallelism across the processes (workers) of an
    MPI job, each with its local replicas on @devices (default one cpu
    backend): tf.distribute.MultiWorkerMirroredStrategy's idiom over Open
    MPI. Run the script under mpirun (`mpirun -np 2 python3 train.py`);
    alone it is one worker. The global batch is split between every
    worker's replicas; each worker must build the same model and fit the
    same data (libvtpu checks and refuses a difference on every worker);
    the gradients are summed across the workers in a fixed order, so the
    workers' weights stay equal. Print and save from worker 0
    (`strategy.worker_index == 0`). Raises RuntimeError when libvtpu was
    built without MPI and the script runs as several workers.
    """

    def __init__(self, devices=None, threads_per_replica=None,
                 cluster_resolver=None, communication_options=None):
        from .._ffi import ffi, lib

        if cluster_resolver is not None or communication_options is not None:
            raise ValueError("MultiWorkerMirroredStrategy: the workers are "
                             "the MPI job's ranks (mpirun): no "
                             "cluster_resolver or communication_options")
        super().__init__(devices=["cpu"] if devices is None else devices,
                         threads_per_replica=threads_per_replica)
        if lib.vtpu_dist_init(ffi.NULL, ffi.NULL):
            raise RuntimeError("MultiWorkerMirroredStrategy: cannot join "
                               "the MPI job (is libvtpu built with MPI?)")
        if not _dist_exit:
            _dist_exit.append(atexit.register(lib.vtpu_dist_finalize))
        self.worker_index = lib.vtpu_dist_rank()
        self.num_workers = lib.vtpu_dist_size()
        self.distributed = True

    @property
    def num_replicas_in_sync(self):
        return self.num_workers * len(self._devices)

    def __repr__(self):
        return ("MultiWorkerMirroredStrategy(devices=%r, worker %d of %d)"
                % (self._devices, self.worker_index, self.num_workers))


_dist_exit = []


def has_strategy():
    return bool(_current)


def get_strategy():
    """The strategy whose scope is open, or None."""
    return _current[-1] if _current else None
