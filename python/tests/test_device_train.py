# SPDX-License-Identifier: MIT
"""A Keras model trained on /dev/vtpu0 (in the guest: selftests/vtpu/
test-python): the device and the cpu backend run the same engine code, so
the same model, data and seed give the same loss curve on both, within
float tolerance (the device's SIMD level may differ from the host's)."""
import os

import numpy as np
import pytest

import vtpu.keras as keras

DEV = "/dev/vtpu0"


def quadrants(n, seed):
    """4x4 images, one bright quadrant: the label says which."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n).astype(np.uint8)
    x = rng.integers(0, 100, (n, 4, 4, 1)).astype(np.uint8)
    for i, q in enumerate(y):
        r, c = divmod(int(q), 2)
        x[i, 2 * r:2 * r + 2, 2 * c:2 * c + 2, 0] += 128
    return x, y


def train(device, x, y, xv, yv):
    model = keras.Sequential([
        keras.layers.Flatten(input_shape=(4, 4, 1)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(4, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], device=device, seed=3)
    # raw 0..255 floats, as the seed articles feed them
    h = model.fit(x.astype(np.float32), y.astype(np.float32), batch_size=32,
                  epochs=4, verbose=0, validation_data=(xv, yv))
    return model, h


@pytest.mark.device
def test_keras_model_trains_on_the_device_as_on_the_cpu():
    if not os.path.exists(DEV):
        pytest.skip("no %s (runs in the guest)" % DEV)
    x, y = quadrants(512, 1)
    xv, yv = quadrants(128, 2)
    dev_model, dev = train(DEV, x, y, xv, yv)
    _, cpu = train("cpu", x, y, xv, yv)
    assert dev_model.device_info()["backend"].startswith(DEV), \
        dev_model.device_info()
    np.testing.assert_allclose(dev.history["loss"], cpu.history["loss"],
                               rtol=1e-3)
    assert dev.history["val_accuracy"][-1] > 0.9, dev.history
    loss, acc = dev_model.evaluate(xv, yv, verbose=0)
    probs = dev_model.predict(xv)
    assert probs.shape == (128, 4)
    assert abs(float((probs.argmax(axis=1) == yv).mean()) - acc) < 1e-6
