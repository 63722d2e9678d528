# SPDX-License-Identifier: MIT
"""Data parallelism from Python (issue 28): compile(devices=[...]) and
vtpu.keras.distribute.MirroredStrategy's scope replicate a model on cpu
backends (libvtpu's vtpu_model_compile_replicated()); two replicas train
as one backend at the same global batch, within the C tests' tolerance
(libvtpu/tests/test_strategy.c: 1e-6 relative on the epoch losses, 1e-5
on the weights), the same bits from run to run; fit, evaluate and predict
work; bad device lists raise clear errors."""
import numpy as np
import pytest

import vtpu.keras as keras
from vtpu.keras import distribute

N = 768     # 24 global batches of 32: no partial batch to leave out
BATCH = 32


def quadrants(n, seed):
    """4x4 images, one bright quadrant: the label says which."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n).astype(np.uint8)
    x = rng.integers(0, 100, (n, 4, 4, 1)).astype(np.uint8)
    for i, q in enumerate(y):
        r, c = divmod(int(q), 2)
        x[i, 2 * r:2 * r + 2, 2 * c:2 * c + 2, 0] += 128
    return x.astype(np.float32) / 255.0, y


def mlp():
    return keras.Sequential([
        keras.layers.Flatten(input_shape=(4, 4, 1)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(4, activation="softmax"),
    ])


def compile_(model, **kw):
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], seed=2, threads=1, **kw)
    return model


@pytest.fixture(scope="module")
def data():
    return quadrants(N, 1), quadrants(128, 2)


def train(data, **kw):
    (x, y), (xv, yv) = data
    model = compile_(mlp(), **kw)
    hist = model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0)
    return model, hist.history["loss"]


def test_two_replicas_train_as_one_backend(data):
    one, l1 = train(data, device="cpu")
    two, l2 = train(data, devices=["cpu", "cpu"])
    assert two._c.num_replicas() == 2 and one._c.num_replicas() == 1
    for a, b in zip(l1, l2):
        assert abs(a - b) <= 1e-6 * abs(a), (l1, l2)
    for w1, w2 in zip(one.get_weights(), two.get_weights()):
        assert np.max(np.abs(w1 - w2)) < 1e-5
    # it learnt, and evaluate / predict run on replica 0, whole batches
    (_, _), (xv, yv) = data
    r1 = one.evaluate(xv, yv, verbose=0)
    r2 = two.evaluate(xv, yv, verbose=0)
    assert r2[1] > 0.9
    assert abs(r1[0] - r2[0]) < 1e-4 * abs(r1[0])
    p1 = one.predict(xv, verbose=0)
    p2 = two.predict(xv, verbose=0, batch_size=50)
    assert p2.shape == (128, 4)
    assert np.max(np.abs(p1 - p2)) < 1e-4


def test_replicas_are_deterministic(data):
    _, la = train(data, devices=["cpu", "cpu"])
    a, _ = train(data, devices=["cpu", "cpu"])
    b, lb = train(data, devices=["cpu", "cpu"])
    assert la == lb
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)


def test_strategy_scope_replicates(data):
    strategy = distribute.MirroredStrategy(devices=["cpu", "cpu"])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        model = compile_(mlp())
    assert distribute.get_strategy() is None
    (x, y), _ = data
    _, ref = train(data, devices=["cpu", "cpu"])
    hist = model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0)
    assert model._c.num_replicas() == 2
    assert hist.history["loss"] == ref
    # another global batch: compiled again, the weights kept
    w = model.get_weights()
    model.fit(x, y, batch_size=64, epochs=0, verbose=0)
    assert model._c.num_replicas() == 2
    for a, b in zip(w, model.get_weights()):
        assert np.array_equal(a, b)


def test_bad_device_lists_raise(data):
    (x, y), _ = data
    with pytest.raises(ValueError, match="named twice"):
        compile_(mlp(), devices=["/dev/vtpu0", "/dev/vtpu0"])
    with pytest.raises(ValueError, match="named twice"):
        distribute.MirroredStrategy(devices=["cpu", "/dev/vtpu1",
                                             "/dev/vtpu1"])
    with pytest.raises(ValueError, match="1 to 64 devices, not 0"):
        compile_(mlp(), devices=[])
    with pytest.raises(ValueError, match="1 to 64 devices, not 65"):
        compile_(mlp(), devices=["cpu"] * 65)
    with pytest.raises(TypeError, match="list of"):
        compile_(mlp(), devices="cpu")
    with pytest.raises(TypeError, match="each must be"):
        compile_(mlp(), devices=["cpu", 3])
    with pytest.raises(ValueError, match="device='cpu' and devices"):
        compile_(mlp(), device="cpu", devices=["cpu", "cpu"])
    with pytest.raises(ValueError, match="cross_device_ops"):
        distribute.MirroredStrategy(devices=["cpu"], cross_device_ops=1)
    # libvtpu's refusals, before training: a global batch that does not
    # split, a device that is not there
    model = compile_(mlp(), devices=["cpu", "cpu", "cpu"])
    with pytest.raises(ValueError, match="does not split evenly between 3 "
                       "replicas"):
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    model = compile_(mlp(), devices=["cpu", "/dev/vtpu-none"])
    with pytest.raises(FileNotFoundError, match="replica 1: cannot open "
                       "/dev/vtpu-none"):
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)


def test_strategy_defaults():
    if distribute.all_devices():
        s = distribute.TPUStrategy()
        assert s.devices == tuple(distribute.all_devices())
    else:
        with pytest.raises(ValueError, match="there is no /dev/vtpuN"):
            distribute.MirroredStrategy()
        with pytest.raises(ValueError, match="there is no /dev/vtpuN"):
            distribute.TPUStrategy()
    s = distribute.TPUStrategy(devices=["cpu"] * 3, threads_per_replica=1)
    assert s.num_replicas_in_sync == 3 and s.threads_per_replica == 1
    with pytest.raises(ValueError, match="threads_per_replica"):
        distribute.MirroredStrategy(devices=["cpu"], threads_per_replica=0)
    # one device in a list: the plain model
    with s.scope(), distribute.MirroredStrategy(devices=["cpu"]).scope():
        model = compile_(mlp())
    model.fit(*quadrants(64, 3), batch_size=32, epochs=1, verbose=0)
    assert model._c.num_replicas() == 1


def test_multi_worker_alone_is_one_replica(data):
    """Not under mpirun: one worker, its one cpu replica the plain model's
    bits (libvtpu's vtpu_model_compile_distributed() with one rank is
    vtpu_model_compile_replicated()); under mpirun -np 2,
    selftests/vtpu/test-mpi checks two workers against two replicas."""
    strategy = distribute.MultiWorkerMirroredStrategy()
    assert (strategy.worker_index, strategy.num_workers) == (0, 1)
    assert strategy.devices == ("cpu",)
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope():
        model = compile_(mlp())
    (x, y), _ = data
    hist = model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0)
    assert model._c.num_replicas() == 1
    one, ref = train(data, device="cpu")
    assert hist.history["loss"] == ref
    for wa, wb in zip(model.get_weights(), one.get_weights()):
        assert np.array_equal(wa, wb)


def test_multi_worker_refuses_a_cluster_resolver():
    with pytest.raises(ValueError, match="the MPI job's ranks"):
        distribute.MultiWorkerMirroredStrategy(cluster_resolver=object())
    with pytest.raises(ValueError, match="named twice"):
        distribute.MultiWorkerMirroredStrategy(
            devices=["/dev/vtpu0", "/dev/vtpu0"])
