# SPDX-License-Identifier: MIT
"""vtpu.keras on the host (libvtpu's cpu backend): argument checks, shapes
and summary(), the input and label rules, weights, callbacks, the
functional API, the C trainer's loss curve, and peak memory."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vtpu.keras as keras
from vtpu.keras import _data
from vtpu.keras import layers as L

TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))
from _paths import SHARED  # noqa: E402
MNIST = os.path.join(SHARED, "mnist")
FASHION = os.path.join(SHARED, "fashion-mnist")


def quadrants(n, seed, size=4):
    """size x size images, one bright quadrant: the label says which."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n).astype(np.uint8)
    x = rng.integers(0, 100, (n, size, size, 1)).astype(np.uint8)
    h = size // 2
    for i, q in enumerate(y):
        r, c = divmod(int(q), 2)
        x[i, h * r:h * r + h, h * c:h * c + h, 0] += 128
    return x, y


def mlp(units=16, input_shape=(4, 4, 1), classes=4):
    return keras.Sequential([
        L.Flatten(input_shape=input_shape),
        L.Dense(units, activation="relu"),
        L.Dense(classes, activation="softmax"),
    ])


def compiled(model=None, lr=1e-2, seed=3, **kw):
    model = model or mlp()
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=lr),
                  loss=kw.pop("loss", "sparse_categorical_crossentropy"),
                  metrics=kw.pop("metrics", ["accuracy"]), device="cpu",
                  seed=seed, threads=1, **kw)
    return model


@pytest.fixture(scope="module")
def quad():
    return quadrants(256, 1), quadrants(64, 2)


# ---- layer arguments -----------------------------------------------------

LAYER_ERRORS = [
    (lambda: L.Dense(0), ValueError, "units"),
    (lambda: L.Dense(-3), ValueError, "units"),
    (lambda: L.Dense(2.5), TypeError, "units"),
    (lambda: L.Dense(True), TypeError, "units"),
    (lambda: L.Dense(1 << 29), ValueError, "units"),
    (lambda: L.Dense(10, activation="sigmoid"), ValueError, "activation"),
    (lambda: L.Conv2D(8, 3, activation="tanh"), ValueError, "activation"),
    (lambda: L.Activation("tanh"), ValueError, "Dense"),
    (lambda: L.Dense(10, activation=np.tanh), ValueError, "activation"),
    (lambda: L.Dense(10, use_bias=False), ValueError, "use_bias"),
    (lambda: L.Dense(10, kernel_initializer="he_normal"), ValueError,
     "kernel_initializer"),
    (lambda: L.Dense(10, bias_initializer="ones"), ValueError,
     "bias_initializer"),
    (lambda: L.Dense(10, kernel_regularizer="l2"), ValueError,
     "kernel_regularizer"),
    (lambda: L.Dense(10, activity_regularizer="l1"), ValueError,
     "activity_regularizer"),
    (lambda: L.Dense(10, kernel_constraint=object()), ValueError,
     "kernel_constraint"),
    (lambda: L.Dense(10, trainable=False), ValueError, "trainable"),
    (lambda: L.Dense(10, dtype="float16"), ValueError, "dtype"),
    (lambda: L.Dense(10, frobnicate=1), TypeError, "frobnicate"),
    (lambda: L.Dense(10, name=""), ValueError, "name"),
    (lambda: L.Dense(10, name="a/b"), ValueError, "name"),
    (lambda: L.Dense(10, input_shape=(None, 3)), ValueError, "input_shape"),
    (lambda: L.Dense(10, input_shape=(1, 2, 3, 4)), ValueError,
     "input_shape"),
    (lambda: L.Dense(10, input_shape=(0,)), ValueError, "input_shape"),
    (lambda: L.Dense(10, input_shape="abc"), TypeError, "input_shape"),
    (lambda: L.Dense(10, input_dim=0), ValueError, "input_dim"),
    (lambda: L.Dense(10, batch_input_shape=(32, 4)), ValueError,
     "batch_input_shape"),
    (lambda: L.Dense(10, batch_size=32), ValueError, "batch_size"),
    (lambda: L.Conv2D(0, 3), ValueError, "filters"),
    (lambda: L.Conv2D(8, 0), ValueError, "kernel_size"),
    (lambda: L.Conv2D(8, (3, 3, 3)), ValueError, "kernel_size"),
    (lambda: L.Conv2D(8, "3"), TypeError, "kernel_size"),
    (lambda: L.Conv2D(8, 3, strides=(1, 2)), ValueError, "strides"),
    (lambda: L.Conv2D(8, 3, strides=0), ValueError, "strides"),
    (lambda: L.Conv2D(8, 3, padding="causal"), ValueError, "padding"),
    (lambda: L.Conv2D(8, 3, padding=1), TypeError, "padding"),
    (lambda: L.Conv2D(8, 3, data_format="channels_first"), ValueError,
     "data_format"),
    (lambda: L.Conv2D(8, 3, dilation_rate=2), ValueError, "dilation_rate"),
    (lambda: L.Conv2D(8, 3, groups=2), ValueError, "groups"),
    (lambda: L.Conv2D(8, 3, activation="softmax"), ValueError, "activation"),
    (lambda: L.Conv2D(8, 3, activation="sigmoid"), ValueError, "activation"),
    (lambda: L.Conv2D(8, 3, use_bias=False), ValueError, "use_bias"),
    (lambda: L.Conv2D(8, 3, kernel_initializer="zeros"), ValueError,
     "kernel_initializer"),
    (lambda: L.Conv2D(8, 3, bias_constraint=object()), ValueError,
     "bias_constraint"),
    (lambda: L.MaxPooling2D(pool_size=(2, 2), strides=(1, 2)), ValueError,
     "strides"),
    (lambda: L.MaxPooling2D(pool_size=3, strides=0), ValueError, "strides"),
    (lambda: L.MaxPooling2D(pool_size=0), ValueError, "pool_size"),
    (lambda: L.MaxPooling2D(padding="full"), ValueError, "padding"),
    (lambda: L.AveragePooling2D(pool_size=(2, 3)), ValueError, "strides"),
    (lambda: L.AveragePooling2D(pool_size=0), ValueError, "pool_size"),
    (lambda: L.AveragePooling2D(padding="causal"), ValueError, "padding"),
    (lambda: L.AveragePooling2D(data_format="channels_first"), ValueError,
     "data_format"),
    (lambda: L.GlobalAveragePooling2D(keepdims=True), ValueError,
     "keepdims"),
    (lambda: L.GlobalAveragePooling2D(data_format="channels_first"),
     ValueError, "data_format"),
    (lambda: L.MaxPooling2D(data_format="channels_first"), ValueError,
     "data_format"),
    (lambda: L.Flatten(data_format="channels_first"), ValueError,
     "data_format"),
    (lambda: L.Dropout(1.0), ValueError, "rate"),
    (lambda: L.Dropout(-0.1), ValueError, "rate"),
    (lambda: L.Dropout("0.5"), TypeError, "rate"),
    (lambda: L.Dropout(0.5, noise_shape=(1, 4)), ValueError, "noise_shape"),
    (lambda: L.Dropout(0.5, seed=1), ValueError, "seed"),
    (lambda: L.RandomFlip("vertical"), ValueError, "horizontal"),
    (lambda: L.RandomFlip("horizontal_and_vertical"), ValueError, "mode"),
    (lambda: L.RandomFlip(seed=3), ValueError, "seed"),
    (lambda: L.RandomCrop(0, 4), ValueError, "height"),
    (lambda: L.RandomCrop(4, 2.5), ValueError, "width"),
    (lambda: L.RandomCrop(4, 4, seed=1), ValueError, "seed"),
    (lambda: L.Rescaling(float("nan")), ValueError, "scale"),
    (lambda: L.Rescaling(1.0, "0"), TypeError, "offset"),
    (lambda: L.ReLU(max_value=6.0), ValueError, "max_value"),
    (lambda: L.ReLU(negative_slope=0.1), ValueError, "negative_slope"),
    (lambda: L.ReLU(threshold=1.0), ValueError, "threshold"),
    (lambda: L.Activation("gelu"), ValueError, "activation"),
    (lambda: L.Softmax(axis=1), ValueError, "axis"),
    (lambda: L.Input(), ValueError, "shape"),
    (lambda: L.Input(shape=(28, None)), ValueError, "shape"),
    (lambda: L.Input(shape=(4,), batch_size=8), ValueError, "batch_size"),
    (lambda: L.Input(shape=(4,), sparse=True), ValueError, "sparse"),
    (lambda: L.InputLayer(), ValueError, "shape"),
    (lambda: L.BatchNormalization(axis=1), ValueError, "axis"),
    (lambda: L.BatchNormalization(axis=3), ValueError, "axis"),
    (lambda: L.BatchNormalization(momentum=1.5), ValueError, "momentum"),
    (lambda: L.BatchNormalization(epsilon=0.0), ValueError, "epsilon"),
    (lambda: L.BatchNormalization(center=False), ValueError, "center"),
    (lambda: L.LayerNormalization(), AttributeError, "LayerNormalization"),
]


@pytest.mark.parametrize("make,exc,name", LAYER_ERRORS,
                         ids=["%d-%s" % (i, e[2])
                              for i, e in enumerate(LAYER_ERRORS)])
def test_layer_argument_errors_name_the_argument(make, exc, name):
    with pytest.raises(exc, match=re.escape(name)):
        make()


SHAPE_ERRORS = [
    # (layers on an Input of shape, the argument or problem named)
    ((28, 28, 1), lambda: L.Dense(10), "Flatten"),
    ((28, 28), lambda: L.Dense(10), "Flatten"),
    ((28, 28), lambda: L.Conv2D(4, 3), "Conv2D takes images"),
    ((10,), lambda: L.MaxPooling2D(), "MaxPooling2D takes images"),
    ((2, 2, 1), lambda: L.Conv2D(4, 3), "kernel_size"),
    ((1, 5, 1), lambda: L.MaxPooling2D(), "pool_size"),
    ((10,), lambda: L.AveragePooling2D(), "AveragePooling2D takes images"),
    ((1, 5, 1), lambda: L.AveragePooling2D(), "pool_size"),
    ((10,), lambda: L.GlobalAveragePooling2D(),
     "GlobalAveragePooling2D takes images"),
    ((28, 28, 1), lambda: L.Conv2D(4, 4, padding="same"), "padding"),
    ((28, 28, 1), lambda: L.Conv2D(4, 2, strides=1, padding="same"),
     "padding"),
]


@pytest.mark.parametrize("shape,make,name", SHAPE_ERRORS)
def test_layer_shape_errors_say_why(shape, make, name):
    x = keras.Input(shape=shape)
    with pytest.raises(ValueError, match=re.escape(name)):
        make()(x)


def test_layer_used_twice_is_an_error():
    x = keras.Input(shape=(4,))
    d = L.Dense(4)
    d(x)
    with pytest.raises(ValueError, match="used twice"):
        d(x)
    with pytest.raises(ValueError, match="used already"):
        keras.Sequential([L.Input(shape=(4,)), d])
    with pytest.raises(TypeError, match="symbolic tensors"):
        L.Dense(3)(np.zeros((2, 4), np.float32))


def test_custom_layers_cannot_be_compiled():
    class Mine(L.Layer):
        pass

    with pytest.raises(NotImplementedError, match="custom layers"):
        Mine()(keras.Input(shape=(4,)))


# ---- shapes and summary() -------------------------------------------------

def seed_model():
    """The Fashion-MNIST seed's model."""
    model = keras.models.Sequential()
    model.add(L.Conv2D(64, (3, 3), input_shape=(28, 28, 1)))
    model.add(L.MaxPooling2D(pool_size=(2, 2), strides=(2, 2)))
    model.add(L.Activation("relu"))
    model.add(L.Flatten())
    model.add(L.Dense(10))
    model.add(L.Activation("softmax"))
    return model


def test_seed_model_shapes_params_and_summary(fresh_names, capsys):
    model = seed_model()
    shapes = [layer.output_shape for layer in model.layers[1:]]
    assert shapes == [(None, 26, 26, 64), (None, 13, 13, 64),
                      (None, 13, 13, 64), (None, 10816), (None, 10),
                      (None, 10)]
    params = [layer.count_params() for layer in model.layers[1:]]
    assert params == [640, 0, 0, 0, 108170, 0]
    assert model.count_params() == 108810
    model.summary()
    out = capsys.readouterr().out
    # tf.keras 2.x prints exactly these lines for the seed's model
    expected = textwrap.dedent('''\
        Model: "sequential"
        _________________________________________________________________
         Layer (type)                Output Shape              Param #   
        =================================================================
         conv2d (Conv2D)             (None, 26, 26, 64)        640       
                                                                         
         max_pooling2d (MaxPooling2D  (None, 13, 13, 64)       0         
         )                                                               
                                                                         
         activation (Activation)     (None, 13, 13, 64)        0         
                                                                         
         flatten (Flatten)           (None, 10816)             0         
                                                                         
         dense (Dense)               (None, 10)                108170    
                                                                         
         activation_1 (Activation)   (None, 10)                0         
        =================================================================
        Total params: 108,810
        Trainable params: 108,810
        Non-trainable params: 0
        _________________________________________________________________
        ''')
    # (dedent drops the blank rows' spaces: compare without trailing ones)
    assert [l.rstrip() for l in out.splitlines()] == \
        [l.rstrip() for l in expected.splitlines()]
    assert all(len(l) == 65 for l in out.splitlines()[1:-4])
    compiled(model)
    assert model.device_info()["params"] == 108810


def test_names_count_per_session_as_keras(fresh_names):
    a = L.Dense(3)
    b = L.Dense(3)
    c = L.Conv2D(2, 3)
    m = L.MaxPooling2D()
    r = L.ReLU()
    assert (a.name, b.name, c.name, m.name, r.name) == \
        ("dense", "dense_1", "conv2d", "max_pooling2d", "re_lu")
    assert keras.Input(shape=(3,)).name == "input_1"
    assert keras.Sequential().name == "sequential"


def test_more_shapes(fresh_names):
    # 27 rows, kernel 3, stride 2, "same": 14 rows, one padded each side
    x = keras.Input(shape=(27, 27, 3))
    y = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    assert y.shape == (None, 14, 14, 8)
    y = L.Conv2D(8, (5, 3), padding="valid")(y)
    assert y.shape == (None, 10, 12, 8)
    y = L.MaxPooling2D(pool_size=(3, 2))(y)
    assert y.shape == (None, 3, 6, 8)
    assert L.Flatten()(y).shape == (None, 144)
    m = keras.Sequential([L.Flatten(input_shape=(28, 28)),
                          L.Dense(512, activation="relu"), L.Dropout(0.2),
                          L.Dense(512, activation="relu"), L.Dropout(0.2),
                          L.Dense(10, activation="softmax")])
    assert m.count_params() == 669706
    assert m.input_shape == (None, 28, 28)
    assert m.output_shape == (None, 10)
    assert m.layers[2].input_shape == (None, 784)


def test_sequential_builds_from_data_and_summary_before_says_so():
    m = keras.Sequential([L.Flatten(), L.Dense(4, activation="softmax")])
    with pytest.raises(ValueError, match="not been built"):
        m.summary()
    compiled(m)
    x, y = quadrants(64, 5)
    m.fit(x[..., 0], y, epochs=1, verbose=0)
    assert m.input_shape == (None, 4, 4)
    assert m.count_params() == 16 * 4 + 4


def test_softmax_rules():
    x = keras.Input(shape=(8,))
    h = L.Dense(8)(x)
    s = L.Softmax()(h)
    y = L.Dense(4, activation="softmax")(s)
    m = keras.Model(x, y)
    with pytest.raises(ValueError, match="not the model's last layer"):
        compiled(m)
    x = keras.Input(shape=(8,))
    y = L.Softmax()(L.ReLU()(L.Dense(4)(x)))
    with pytest.raises(ValueError, match="right after a Dense"):
        compiled(keras.Model(x, y))
    x = keras.Input(shape=(8,))
    y = L.Dense(4, activation="relu")(x)
    with pytest.raises(ValueError, match="ends in"):
        compiled(keras.Model(x, L.ReLU()(y)))
    x = keras.Input(shape=(8,))
    with pytest.raises(ValueError, match="logits"):
        compiled(keras.Model(x, L.Dense(4)(L.Dense(4)(x))))
    x = keras.Input(shape=(8,))
    with pytest.raises(ValueError, match="from_logits=True"):
        compiled(keras.Model(x, L.Dense(4, activation="softmax")(x)),
                 loss=keras.losses.SparseCategoricalCrossentropy(
                     from_logits=True))
    x = keras.Input(shape=(8,))
    with pytest.raises(ValueError, match="2 to 256 classes"):
        compiled(keras.Model(x, L.Dense(300, activation="softmax")(x)))


# ---- compile, fit, evaluate, predict arguments ---------------------------

def _fit_kw(**kw):
    def run(model, x, y):
        return model.fit(x, y, verbose=0, **kw)
    return run


COMPILE_ERRORS = [
    (dict(optimizer="rmsprop"), ValueError, "optimizer"),
    (dict(optimizer="adagrad"), ValueError, "optimizer"),
    (dict(optimizer=3), ValueError, "optimizer"),
    (dict(loss="mse"), ValueError, "loss"),
    (dict(loss=None), ValueError, "loss"),
    (dict(metrics=["mse"]), ValueError, "metrics"),
    (dict(metrics="accuracy", device=3), TypeError, "device"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(seed=1.5), TypeError, "seed"),
    (dict(threads="2"), TypeError, "threads"),
    (dict(gemm="mkl"), ValueError, "gemm"),
    (dict(loss_weights=[1.0]), ValueError, "loss_weights"),
    (dict(run_eagerly=True), ValueError, "run_eagerly"),
    (dict(steps_per_execution=8), ValueError, "steps_per_execution"),
    (dict(bogus=1), TypeError, "bogus"),
]


@pytest.mark.parametrize("kw,exc,name", COMPILE_ERRORS,
                         ids=[e[2] for e in COMPILE_ERRORS])
def test_compile_argument_errors(kw, exc, name):
    args = dict(optimizer="adam", loss="sparse_categorical_crossentropy")
    args.update(kw)
    with pytest.raises(exc, match=re.escape(name)):
        mlp().compile(**args)


OPTIMIZER_ERRORS = [
    (lambda: keras.optimizers.Adam(learning_rate=0), "learning_rate"),
    (lambda: keras.optimizers.Adam(learning_rate=float("nan")),
     "learning_rate"),
    (lambda: keras.optimizers.Adam(learning_rate=lambda step: 0.1),
     "learning_rate"),
    (lambda: keras.optimizers.Adam(beta_1=1.0), "beta_1"),
    (lambda: keras.optimizers.Adam(beta_2=-0.1), "beta_2"),
    (lambda: keras.optimizers.Adam(epsilon=0), "epsilon"),
    (lambda: keras.optimizers.Adam(amsgrad=True), "amsgrad"),
    (lambda: keras.optimizers.Adam(clipnorm=1.0), "clipnorm"),
    (lambda: keras.optimizers.Adam(weight_decay=0.01), "weight_decay"),
    (lambda: keras.optimizers.SGD(momentum=1.5), "momentum"),
    (lambda: keras.optimizers.SGD(nesterov=True), "nesterov"),
    (lambda: keras.optimizers.SGD(decay=0.1), "decay"),
    (lambda: keras.losses.CategoricalCrossentropy(label_smoothing=0.1),
     "label_smoothing"),
    (lambda: keras.losses.SparseCategoricalCrossentropy(from_logits=1),
     "from_logits"),
    (lambda: keras.losses.SparseCategoricalCrossentropy(reduction="sum"),
     "reduction"),
]


@pytest.mark.parametrize("make,name", OPTIMIZER_ERRORS,
                         ids=[e[1] for e in OPTIMIZER_ERRORS])
def test_optimizer_and_loss_argument_errors(make, name):
    with pytest.raises((ValueError, TypeError), match=re.escape(name)):
        make()


FIT_ERRORS = [
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.0), TypeError, "batch_size"),
    (dict(epochs=-1), ValueError, "epochs"),
    (dict(verbose=3), ValueError, "verbose"),
    (dict(validation_split=1.0), ValueError, "validation_split"),
    (dict(validation_split=0.999), ValueError, "validation_split"),
    (dict(validation_freq=0), ValueError, "validation_freq"),
    (dict(validation_freq=[1, 2]), ValueError, "validation_freq"),
    (dict(steps_per_epoch=0), ValueError, "steps_per_epoch"),
    (dict(initial_epoch=2), ValueError, "initial_epoch"),
    (dict(shuffle="batch"), ValueError, "shuffle"),
    (dict(class_weight={0: 1.0}), ValueError, "class_weight"),
    (dict(sample_weight=np.ones(256)), ValueError, "sample_weight"),
    (dict(validation_batch_size=64), ValueError, "validation_batch_size"),
    (dict(workers=4), ValueError, "workers"),
    (dict(validation_data=(1, 2, 3, 4)), ValueError, "validation_data"),
    (dict(callbacks=[object()]), TypeError, "callbacks"),
    (dict(callbacks="x"), TypeError, "callbacks"),
]


@pytest.mark.parametrize("kw,exc,name", FIT_ERRORS,
                         ids=[e[2] for e in FIT_ERRORS])
def test_fit_argument_errors(quad, kw, exc, name):
    (x, y), _ = quad
    model = compiled()
    kw.setdefault("verbose", 0)
    with pytest.raises(exc, match=re.escape(name)):
        model.fit(x, y, **kw)


def test_fit_before_compile_and_other_call_errors(quad):
    (x, y), _ = quad
    model = mlp()
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y)
    with pytest.raises(RuntimeError, match="compile"):
        model.evaluate(x, y)
    model = compiled()
    with pytest.raises(ValueError, match="batch_size"):
        model.evaluate(x, y, batch_size=-1, verbose=0)
    with pytest.raises(ValueError, match="steps"):
        model.predict(x, steps=3, verbose=0)
    with pytest.raises(ValueError, match="x and y"):
        model.fit(x)
    with pytest.raises(NotImplementedError, match="save_weights"):
        model.save("m.keras")
    with pytest.raises(NotImplementedError, match="fit"):
        model.train_on_batch(x, y)
    with pytest.raises(NotImplementedError, match="nest"):
        model(x)


def test_errors_from_libvtpu_carry_its_message(quad):
    (x, y), _ = quad
    model = mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  device="/dev/vtpu-none")
    with pytest.raises(FileNotFoundError, match="vtpu-none"):
        model.fit(x, y, verbose=0)
    # 3x3x1 images in batches of 1: 9 bytes a step, libvtpu wants 4-byte
    # multiples
    m = compiled(mlp(input_shape=(3, 3, 1)))
    with pytest.raises(ValueError, match="multiple of 4"):
        m.fit(np.zeros((8, 3, 3, 1), np.uint8), np.zeros(8), batch_size=1,
              verbose=0)


# ---- input data ------------------------------------------------------------

def test_uint8_images_are_used_in_place(quad):
    (x, y), _ = quad
    arr, t = _data.images(x, (4, 4, 1), "x")
    assert arr is x and t == _data.RAW
    arr, _ = _data.images(x[..., 0], (4, 4, 1), "x")   # no channel axis
    assert np.shares_memory(arr, x)
    nc = np.asfortranarray(x)
    arr, _ = _data.images(nc, (4, 4, 1), "x")
    assert arr.flags.c_contiguous and np.array_equal(arr, x)


@pytest.mark.parametrize("kind", ["raw", "unit", "unit64", "std", "halves",
                                  "int64", "sparse_values"])
def test_float_images_are_8bit_pixels_scaled(kind, monkeypatch):
    # a sample of a few images: one that can miss values, so that the
    # conversion must look at all of them
    monkeypatch.setattr(_data, "SAMPLE", 100)
    rng = np.random.default_rng(7)
    px = rng.integers(0, 256, (500, 6, 6, 1)).astype(np.uint8)
    if kind == "sparse_values":
        # values the sample is unlikely to hold all of: only 3 images use
        # odd pixel values
        px &= 0xFE
        px[[17, 250]] |= 1
    f = px.astype(np.float32)
    data, scale, shift = {
        "raw": (f, 1, 0),
        "unit": (f / 255.0, np.float32(1) / np.float32(255), 0),
        "unit64": (px / 255.0, np.float32(1) / np.float32(255), 0),
        "std": ((f / 255.0 - 0.3) / 0.25, None, None),
        "halves": (f / 2.0 - 1.0, 0.5, -1.0),
        "int64": (px.astype(np.int64), 1, 0),
        "sparse_values": ((f / 255.0 - 0.3) / 0.25, None, None),
    }[kind]
    full = []
    real = _data._all_values
    monkeypatch.setattr(_data, "_all_values",
                        lambda *a: full.append(1) or real(*a))
    arr, t = _data.images(data, (6, 6, 1), "x")
    assert arr.dtype == np.uint8 and arr.flags.c_contiguous
    assert bool(full) == (kind == "sparse_values")
    if scale is not None:
        assert t == (np.float32(scale), np.float32(shift))
    # what the compiled program feeds the model is the data, within float
    # tolerance
    back = arr.astype(np.float32) * t[0] + t[1]
    np.testing.assert_allclose(back, data, rtol=1e-6, atol=1e-6)
    assert np.array_equal(arr.astype(int) - arr.min(),
                          px.astype(int) - px.min())


@pytest.mark.parametrize("data,match", [
    (np.random.default_rng(1).normal(size=(100, 4, 4, 1)), "256 distinct"),
    (np.arange(0, 512, dtype=np.float32).reshape(32, 4, 4, 1),
     "8-bit image data"),
    (np.full((4, 4, 4, 1), np.nan, np.float32), "NaN"),
    (np.array([0, 1, 2, 2.7], np.float32).repeat(16).reshape(4, 4, 4, 1),
     "8-bit image data"),
])
def test_float_input_that_is_not_image_data_is_refused(quad, data, match):
    model = compiled()
    with pytest.raises(ValueError, match=match):
        model.fit(data, np.zeros(len(data)), verbose=0)


@pytest.mark.parametrize("x,exc,match", [
    (np.zeros((8, 4, 4, 2), np.uint8), ValueError, "shape"),
    (np.zeros((8, 16), np.uint8), ValueError, "shape"),
    (np.zeros((0, 4, 4, 1), np.uint8), ValueError, "no examples"),
    (np.zeros((8, 4, 4, 1), np.complex64), TypeError, "dtype"),
    (np.zeros((8, 4, 4, 1), bool), TypeError, "dtype"),
    (np.array([["a"] * 16] * 8), TypeError, "dtype"),
    ("images", TypeError, "numpy array"),
    ([np.zeros((8, 4, 4, 1))], TypeError, "list of arrays"),
    (iter([1, 2]), TypeError, "numpy array"),
])
def test_bad_x_is_refused(x, exc, match):
    model = compiled()
    with pytest.raises(exc, match=match):
        model.fit(x, np.zeros(8), verbose=0)
    with pytest.raises(exc, match=match):
        model.predict(x, verbose=0)


def test_evaluation_data_must_share_the_models_transform(quad):
    (x, y), (xv, yv) = quad
    model = compiled()
    model.fit(x.astype(np.float32) / 255.0, y, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="trained on pixel \\* 1/255"):
        model.evaluate(x, y, verbose=0)          # raw uint8 values
    with pytest.raises(ValueError, match="validation_data"):
        model.fit(x / 255.0, y, epochs=1, verbose=0,
                  validation_data=(xv.astype(np.float32), yv))
    # a subset of the values (no pixel 0 or 255) is still pixel / 255
    sub = np.clip(xv, 10, 200).astype(np.float32) / 255.0
    loss, acc = model.evaluate(sub, yv, verbose=0)
    assert np.isfinite(loss)
    # raw model: uint8 and raw floats are the same data
    raw = compiled()
    raw.fit(x.astype(np.float32), y.astype(np.float32), epochs=1, verbose=0)
    a = raw.evaluate(xv, yv, verbose=0)
    b = raw.evaluate(xv.astype(np.float64), yv.astype(np.float32),
                     verbose=0)
    assert a == b


LABEL_ERRORS = [
    (np.full(256, 0.5, np.float32), "whole numbers"),
    (np.full(256, 4), "label 4"),
    (np.full(256, -1), "label -1"),
    (np.zeros(255), "255 labels"),
    (np.zeros((256, 2)), "shape"),
    (np.eye(4)[np.zeros(256, int)], "one-hot"),
    (np.full(256, np.nan), "whole numbers"),
    (np.array(["a"] * 256), "dtype"),
]


@pytest.mark.parametrize("y,match", LABEL_ERRORS,
                         ids=[e[1] for e in LABEL_ERRORS])
def test_bad_labels_are_refused(quad, y, match):
    (x, _), _ = quad
    model = compiled()
    with pytest.raises((ValueError, TypeError), match=match):
        model.fit(x, y, verbose=0)


def test_label_forms(quad):
    (x, y), (xv, yv) = quad
    ref = compiled(seed=5)
    h0 = ref.fit(x, y, epochs=2, verbose=0, shuffle=False).history["loss"]
    for form in (y.astype(np.float32), y.astype(np.int64)[:, None],
                 y.astype(np.float64)):
        m = compiled(seed=5)
        h = m.fit(x, form, epochs=2, verbose=0, shuffle=False)
        assert h.history["loss"] == h0
    cat = compiled(seed=5, loss="categorical_crossentropy")
    onehot = keras.utils.to_categorical(y, 4)
    h = cat.fit(x, onehot, epochs=2, verbose=0, shuffle=False)
    assert h.history["loss"] == h0
    with pytest.raises(ValueError, match="one-hot"):
        cat.fit(x, y, epochs=1, verbose=0)
    soft = onehot * 0.9 + 0.025
    with pytest.raises(ValueError, match="one-hot"):
        cat.fit(x, soft, epochs=1, verbose=0)


# ---- weights ---------------------------------------------------------------

def test_weights_round_trip_and_the_forward_pass():
    x = keras.Input(shape=(5,))
    h = L.Dense(3, activation="relu")(x)
    y = L.Dense(4, activation="softmax")(h)
    model = compiled(keras.Model(x, y))
    shapes = [w.shape for w in model.get_weights()]
    assert shapes == [(5, 3), (3,), (3, 4), (4,)]
    rng = np.random.default_rng(0)
    ws = [rng.normal(size=s).astype(np.float32) for s in shapes]
    model.set_weights(ws)
    for a, b in zip(model.get_weights(), ws):
        assert np.array_equal(a, b)
    assert all(np.array_equal(a, b) for a, b in
               zip(model.layers[2].get_weights(), ws[2:]))
    assert model.layers[0].get_weights() == []
    data = rng.integers(0, 256, (7, 5)).astype(np.float32) / 255.0
    hid = np.maximum(data @ ws[0] + ws[1], 0)
    logits = hid @ ws[2] + ws[3]
    want = np.exp(logits - logits.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    got = model.predict(data, verbose=0)
    assert got.dtype == np.float32 and got.shape == (7, 4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_conv_forward_matches_numpy():
    model = compiled(keras.Sequential([
        L.Conv2D(3, (2, 3), activation="relu", input_shape=(5, 6, 2)),
        L.MaxPooling2D(pool_size=(2, 2)),
        L.Flatten(),
        L.Dense(4, activation="softmax"),
    ]))
    rng = np.random.default_rng(1)
    ws = [rng.normal(size=w.shape).astype(np.float32) * 0.3
          for w in model.get_weights()]
    model.set_weights(ws)
    k, b, dk, db = ws
    x = rng.integers(0, 256, (3, 5, 6, 2)).astype(np.uint8)
    xf = x.astype(np.float64)
    conv = np.zeros((3, 4, 4, 3))
    for i in range(4):
        for j in range(4):
            patch = xf[:, i:i + 2, j:j + 3, :]
            conv[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3],
                                                            [0, 1, 2]))
    conv = np.maximum(conv + b, 0)
    pool = conv.reshape(3, 2, 2, 2, 2, 3).max(axis=(2, 4))
    logits = pool.reshape(3, -1) @ dk + db
    want = np.exp(logits - logits.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict(x, verbose=0), want,
                               rtol=1e-3, atol=1e-5)


def test_set_weights_checks_shapes():
    model = compiled(mlp(units=8))
    ws = model.get_weights()
    with pytest.raises(ValueError, match="'dense.*' weight kernel has shape"):
        model.set_weights([ws[0].T] + ws[1:])
    with pytest.raises(ValueError, match="arrays given"):
        model.set_weights(ws[:2])
    bad = [w.copy() for w in ws]
    bad[1][0] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        model.set_weights(bad)
    with pytest.raises(ValueError, match="set_weights"):
        model.layers[1].set_weights([ws[0]])
    with pytest.raises(TypeError, match="list"):
        model.set_weights(ws[0])
    after = model.get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(after, ws))


def test_npz_and_checkpoint_save_load(tmp_path, quad):
    (x, y), (xv, yv) = quad
    model = compiled()
    model.fit(x, y, epochs=2, verbose=0)
    want = model.predict(xv, verbose=0)
    npz = str(tmp_path / "w.npz")
    model.save_weights(npz)
    with np.load(npz) as f:
        assert sorted(f.files) == ["dense/bias", "dense/kernel",
                                   "dense_1/bias", "dense_1/kernel"]
    other = compiled(seed=99)          # other names in this session
    assert other.layers[1].name != model.layers[1].name
    other.load_weights(npz)
    np.testing.assert_array_equal(other.predict(xv, verbose=0), want)
    ckpt = str(tmp_path / "w.ckpt")
    model.save_weights(ckpt)
    third = compiled(seed=98)
    third.load_weights(ckpt)
    np.testing.assert_array_equal(third.predict(xv, verbose=0), want)
    # libvtpu's checkpoint keeps Adam's state: both continue alike
    h1 = model.fit(x, y, epochs=1, verbose=0, shuffle=False)
    h3 = third.fit(x, y, epochs=1, verbose=0, shuffle=False)
    assert h1.history["loss"] == h3.history["loss"]
    wrong = compiled(mlp(units=8))
    with pytest.raises(ValueError, match="shape"):
        wrong.load_weights(npz)
    with pytest.raises(ValueError):
        wrong.load_weights(ckpt)
    with pytest.raises(FileNotFoundError):
        wrong.load_weights(str(tmp_path / "none.ckpt"))
    with pytest.raises(ValueError, match="HDF5"):
        model.save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(FileExistsError):
        model.save_weights(npz, overwrite=False)


def test_batch_size_input_transform_and_recompile_keep_the_weights(quad):
    (x, y), (xv, yv) = quad
    model = compiled()
    model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    w = model.get_weights()
    loss = model.evaluate(xv, yv, verbose=0)[0]
    model.optimizer.learning_rate = 1e-30
    assert model.optimizer.learning_rate == pytest.approx(1e-30)
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert model.device_info()["params"] == model.count_params()
    np.testing.assert_allclose(model.evaluate(xv, yv, verbose=0)[0], loss,
                               rtol=1e-5)
    for a, b in zip(model.get_weights(), w):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # another input transform: the same weights see x / 255 now
    model.fit(x / 255.0, y, epochs=1, batch_size=16, verbose=0)
    for a, b in zip(model.get_weights(), w):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert model.evaluate(xv / 255.0, yv, verbose=0)[0] != \
        pytest.approx(loss, rel=1e-3)
    # compile again: Keras keeps the weights, not the optimizer
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  device="cpu")
    for a, b in zip(model.get_weights(), w):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert model.optimizer.learning_rate == pytest.approx(0.01)


# libvtpu once evicted the program a pass held (model.c get_prog())
def test_many_batch_sizes_give_the_same_results(quad):
    (x, y), _ = quad
    xv, yv = quadrants(50, 2)
    a = compiled(lr=1e-3)
    for b in (3, 5, 7, 9, 11, 13, 15, 23):     # 64 % b != 0: 2 programs each
        a.fit(x[:64], y[:64], batch_size=b, epochs=1, verbose=0)
    b = compiled(seed=9)
    b.set_weights(a.get_weights())
    # evaluate runs at each model's own batch (23 and 32): sums differ in
    # the last bits
    assert a.evaluate(xv, yv, verbose=0) == \
        pytest.approx(b.evaluate(xv, yv, verbose=0), rel=1e-6)
    np.testing.assert_array_equal(a.predict(xv, verbose=0),
                                  b.predict(xv, verbose=0))


# ---- fit, History, callbacks ----------------------------------------------

def test_history_and_metric_names(quad):
    (x, y), (xv, yv) = quad
    model = compiled(metrics=[keras.metrics.sparse_categorical_accuracy])
    h = model.fit(x, y, epochs=3, batch_size=32, verbose=0,
                  validation_data=(xv, yv), validation_freq=2)
    assert h.epoch == [0, 1, 2]
    assert sorted(h.history) == ["loss", "sparse_categorical_accuracy",
                                 "val_loss",
                                 "val_sparse_categorical_accuracy"]
    assert len(h.history["loss"]) == 3
    assert len(h.history["val_loss"]) == 2      # epochs 2 and 3 (the last)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert model.history is h
    loss, acc = model.evaluate(xv, yv, verbose=0)
    assert loss == pytest.approx(h.history["val_loss"][-1], rel=1e-6)
    assert acc == pytest.approx(
        h.history["val_sparse_categorical_accuracy"][-1])
    assert model.metrics_names == ["loss", "sparse_categorical_accuracy"]
    assert model.evaluate(xv, yv, verbose=0, return_dict=True) == {
        "loss": loss, "sparse_categorical_accuracy": acc}
    probs = model.predict(xv, verbose=0)
    assert abs(float((probs.argmax(1) == yv).mean()) - acc) < 1e-9
    plain = compiled(metrics=None)
    h = plain.fit(x, y, epochs=1, verbose=0, validation_split=0.25)
    assert sorted(h.history) == ["loss", "val_loss"]
    assert isinstance(plain.evaluate(xv, yv, verbose=0), float)


def test_validation_split_takes_the_last_examples(quad):
    (x, y), _ = quad
    a = compiled(seed=4)
    ha = a.fit(x, y, epochs=1, verbose=0, validation_split=0.25,
               shuffle=False)
    b = compiled(seed=4)
    hb = b.fit(x[:192], y[:192], epochs=1, verbose=0,
               validation_data=(x[192:], y[192:]), shuffle=False)
    assert ha.history == hb.history


def test_steps_per_epoch(quad, capfd):
    (x, y), _ = quad

    class Params(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.steps = self.params["steps"]

    p = Params()
    model = compiled()
    h = model.fit(x, y, batch_size=16, epochs=2, steps_per_epoch=3,
                  verbose=2, callbacks=[p])
    assert p.steps == 3 and len(h.history["loss"]) == 2
    assert capfd.readouterr().out.count("3/3 - ") == 2


def test_early_stopping_stops_and_restores(quad):
    (x, y), (xv, yv) = quad
    model = compiled()
    es = keras.callbacks.EarlyStopping(monitor="loss", min_delta=100.0,
                                       patience=1)
    h = model.fit(x, y, epochs=10, verbose=0, callbacks=[es])
    assert h.epoch == [0, 1] and es.stopped_epoch == 1

    class Snap(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                self.first = self.model.get_weights()

    snap = Snap()
    model = compiled()
    es = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=100.0,
                                       patience=2, restore_best_weights=True)
    h = model.fit(x, y, epochs=10, verbose=0, validation_data=(xv, yv),
                  callbacks=[snap, es])
    assert h.epoch == [0, 1, 2]
    for a, b in zip(model.get_weights(), snap.first):
        np.testing.assert_array_equal(a, b)


def test_learning_rate_scheduler_sets_the_rate(quad):
    (x, y), _ = quad
    seen = []
    model = compiled(lr=1e-2)
    sched = keras.callbacks.LearningRateScheduler(
        lambda epoch, lr: seen.append((epoch, lr)) or lr / 10)
    h = model.fit(x, y, epochs=3, verbose=0, callbacks=[sched])
    assert [e for e, _ in seen] == [0, 1, 2]
    np.testing.assert_allclose([lr for _, lr in seen], [1e-2, 1e-3, 1e-4],
                               rtol=1e-6)
    np.testing.assert_allclose(h.history["lr"], [1e-3, 1e-4, 1e-5],
                               rtol=1e-6)
    assert model.optimizer.learning_rate == pytest.approx(1e-5, rel=1e-6)
    # a rate that freezes the weights: they do not move
    w = model.get_weights()
    frozen = keras.callbacks.LearningRateScheduler(lambda epoch: 1e-30)
    model.fit(x, y, epochs=2, verbose=0, callbacks=[frozen])
    for a, b in zip(model.get_weights(), w):
        np.testing.assert_allclose(a, b, atol=1e-6)
    bad = keras.callbacks.LearningRateScheduler(lambda epoch: -1.0)
    with pytest.raises(ValueError, match="schedule"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[bad])


def test_callback_exceptions_propagate_and_stop_training(quad):
    (x, y), _ = quad

    class Boom(keras.callbacks.Callback):
        epochs = []

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append(epoch)
            if epoch == 1:
                raise KeyError("boom at %d" % epoch)

    model = compiled()
    b = Boom()
    with pytest.raises(KeyError, match="boom at 1"):
        model.fit(x, y, epochs=10, verbose=0, callbacks=[b])
    assert b.epochs == [0, 1]

    class Begin(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            raise RuntimeError("no epochs today")

    with pytest.raises(RuntimeError, match="no epochs today"):
        model.fit(x, y, epochs=3, verbose=0, callbacks=[Begin()])

    class Stop(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 2:
                self.model.stop_training = True

    h = model.fit(x, y, epochs=10, verbose=0, callbacks=[Stop()])
    assert h.epoch == [0, 1, 2]
    # the model trains on afterwards
    h = model.fit(x, y, epochs=2, verbose=0)
    assert h.epoch == [0, 1]


def test_callbacks_may_evaluate_and_predict_but_not_fit(quad):
    (x, y), (xv, yv) = quad
    seen = []

    class Eval(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((self.model.evaluate(xv, yv, verbose=0),
                         self.model.predict(xv, verbose=0).argmax(1)))

    model = compiled()
    h = model.fit(x, y, epochs=2, verbose=0, validation_data=(xv, yv),
                  callbacks=[Eval()])
    assert [s[0][0] for s in seen] == h.history["val_loss"]
    assert abs(float((seen[1][1] == yv).mean()) -
               h.history["val_accuracy"][1]) < 1e-9

    class Refit(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.fit(x, y, verbose=0)

    with pytest.raises(RuntimeError, match="being trained"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[Refit()])


def test_per_batch_callbacks_are_refused(quad):
    (x, y), _ = quad

    class PerBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            pass

    model = compiled()
    with pytest.raises(NotImplementedError, match="inside libvtpu"):
        model.fit(x, y, verbose=0, callbacks=[PerBatch()])
    with pytest.raises(NotImplementedError, match="on_batch_end"):
        model.fit(x, y, verbose=0, callbacks=[keras.callbacks.LambdaCallback(
            on_batch_end=lambda b, logs: None)])


def test_progress_output(quad, capsys):
    (x, y), (xv, yv) = quad
    model = compiled()
    # sys.stdout without a file descriptor (pytest's capsys): one line per
    # epoch from Python
    model.fit(x, y, epochs=2, verbose=1, validation_data=(xv, yv))
    out = capsys.readouterr().out
    assert re.search(r"Epoch 2/2\n8/8 \[=+\] - .* - loss: \d+\.\d{4} - "
                     r"accuracy: \d\.\d{4} - val_loss: \d+\.\d{4} - "
                     r"val_accuracy: \d\.\d{4}\n", out), out


def test_progress_output_from_libvtpu(quad, capfd):
    (x, y), _ = quad
    model = compiled()
    model.fit(x, y, epochs=2, verbose=1)
    print("after")
    out = capfd.readouterr().out
    assert re.search(r"Epoch 1/2\n.*8/8 \[=+\] - .*loss: \d+\.\d{4}.*\n"
                     r"Epoch 2/2\n.*\nafter\n$", out), out
    model.fit(x, y, epochs=1, verbose=2)
    out = capfd.readouterr().out
    assert re.match(r"Epoch 1/1\n8/8 - \d+s - loss: [\d.e+-]+ - accuracy: "
                    r"\d\.\d{4} - \d+ms/step\n$", out), out
    model.fit(x, y, epochs=1, verbose=0)
    assert capfd.readouterr().out == ""


# ---- the functional API ----------------------------------------------------

def test_functional_residual_model_trains(fresh_names, capsys):
    inp = keras.Input(shape=(8, 8, 1))
    c1 = L.Conv2D(4, 3, padding="same", activation="relu")(inp)
    c2 = L.Conv2D(4, 3, padding="same")(c1)
    r = L.ReLU()(L.Add()([c1, c2]))
    p = L.MaxPooling2D()(r)
    f = L.Flatten()(p)
    d = L.Dense(16, activation="relu")(f)
    d2 = L.Dense(16)(d)
    s = L.ReLU()(d + d2)            # KerasTensor + KerasTensor: Add
    out = L.Softmax()(L.Dense(4)(L.Dropout(0.1)(s)))
    model = keras.Model(inputs=inp, outputs=out)
    assert model.count_params() == 40 + 148 + 64 * 16 + 16 + 272 + 68
    model.summary()
    text = capsys.readouterr().out
    assert "Connected to" in text and "'conv2d[0][0]'" in text
    assert "input_1 (InputLayer)" in text and "[(None, 8, 8, 1)]" in text
    compiled(model, lr=1e-2)
    x, y = quadrants(256, 3, size=8)
    xv, yv = quadrants(64, 4, size=8)
    h = model.fit(x, y, epochs=6, batch_size=32, verbose=0,
                  validation_data=(xv, yv))
    assert h.history["val_accuracy"][-1] > 0.9, h.history
    assert [w.shape for w in model.get_weights()] == [
        (3, 3, 1, 4), (4,), (3, 3, 4, 4), (4,), (64, 16), (16,), (16, 16),
        (16,), (16, 4), (4,)]
    assert model.device_info()["params"] == model.count_params()


def test_functional_graph_errors():
    a = keras.Input(shape=(4,))
    b = keras.Input(shape=(4,))
    with pytest.raises(ValueError, match="one input"):
        keras.Model([a, b], L.Dense(2, activation="softmax")(a))
    s = L.Add()([L.Dense(4)(a), L.Dense(4)(b)])
    with pytest.raises(ValueError, match="disconnected"):
        keras.Model(a, L.Dense(2, activation="softmax")(s))
    with pytest.raises(ValueError, match="Add"):
        L.Add()([a])
    x = keras.Input(shape=(4,))
    with pytest.raises(ValueError, match="itself"):
        L.Add()([x, x])
    with pytest.raises(ValueError, match="different shapes"):
        L.Add()([L.Dense(3)(x), L.Dense(5)(x)])
    with pytest.raises(TypeError, match="inputs and outputs"):
        keras.Model()

    class Sub(keras.Model):
        def call(self, x):
            return x

    with pytest.raises(NotImplementedError, match="subclassed"):
        Sub()
    y = L.Dense(2, activation="softmax")(x)
    keras.Model(x, y)
    with pytest.raises(ValueError, match="belongs to model"):
        keras.Model(x, y)


def test_from_logits_predicts_log_probabilities(quad):
    (x, y), (xv, yv) = quad
    model = keras.Sequential([L.Flatten(input_shape=(4, 4, 1)),
                              L.Dense(16, activation="relu"), L.Dense(4)])
    with pytest.raises(ValueError, match="logits"):
        model.predict(xv, verbose=0)
    model.compile(optimizer="adam", loss=keras.losses.
                  SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["acc"], device="cpu", seed=2)
    h = model.fit(x, y, epochs=2, verbose=0)
    assert "acc" in h.history
    lp = model.predict(xv, verbose=0)
    np.testing.assert_allclose(np.exp(lp).sum(1), 1, rtol=1e-5)
    assert np.all(lp <= 0)


# ---- the C trainer's loss curve -------------------------------------------

def _c_trainer(name, args):
    exe = os.path.join(TOP, "build", "bin", name)
    if not os.path.exists(exe):
        pytest.skip("no %s (make)" % exe)
    out = subprocess.run([exe, "--device", "cpu", "--threads", "2"] + args,
                         check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    epochs = re.findall(r"- loss: (\S+) - acc: (\S+) - val_loss: (\S+) - "
                        r"val_acc: (\S+)\n", out)
    return [tuple(float(v) for v in e) for e in epochs], out


def _py_curve(model, data, test, epochs, batch, transform):
    (x, y), (xt, yt) = data, test
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], device="cpu", seed=3, threads=2)
    h = model.fit(transform(x), y, epochs=epochs, batch_size=batch,
                  verbose=0, validation_data=(transform(xt), yt))
    return list(zip(h.history["loss"], h.history["accuracy"],
                    h.history["val_loss"], h.history["val_accuracy"]))


def test_mnist_mlp_loss_curve_is_the_c_trainers():
    if not os.path.isdir(MNIST):
        pytest.skip("no %s" % MNIST)
    c, out = _c_trainer("mnist", ["--data", MNIST, "--epochs", "2",
                                  "--limit", "2000", "--test-limit", "500",
                                  "--seed", "3"])
    assert len(c) == 2, out
    (x, y), (xt, yt) = keras.datasets.mnist.load_data(MNIST)
    model = keras.Sequential([
        L.Flatten(input_shape=(28, 28)), L.Dense(512, activation="relu"),
        L.Dense(512, activation="relu"), L.Dense(10, activation="softmax")])
    # the C trainer feeds x / 255 (its default input scale), batch 128
    py = _py_curve(model, (x[:2000], y[:2000]), (xt[:500], yt[:500]), 2, 128,
                   lambda a: a.astype(np.float32) / 255.0)
    np.testing.assert_allclose(np.array(py), np.array(c), atol=6e-5)


def test_fashion_conv_loss_curve_is_the_c_trainers():
    if not os.path.isdir(FASHION):
        pytest.skip("no %s" % FASHION)
    c, out = _c_trainer("fashion_mnist", ["--data", FASHION, "--epochs", "2",
                                          "--limit", "1000", "--test-limit",
                                          "500", "--batch", "250", "--seed",
                                          "3"])
    assert len(c) == 2, out
    (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_data(FASHION)
    keras.backend.clear_session()
    model = seed_model()
    # the C trainer's --input-scale 0.05: x / 20
    py = _py_curve(model, (x[:1000, ..., None], y[:1000]),
                   (xt[:500, ..., None], yt[:500]), 2, 250,
                   lambda a: a.astype(np.float32) / 20.0)
    np.testing.assert_allclose(np.array(py), np.array(c), atol=6e-5)


# ---- memory ----------------------------------------------------------------

MEMORY_CHILD = r"""
import resource, sys
import numpy as np
sys.path.insert(0, %(python)r)
import vtpu.keras as keras

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * %(page)d

n = %(n)d
# float32 raw pixels, made a chunk at a time: no large temporaries, so the
# peak so far is what the process holds now
x = np.empty((n, 28, 28, 1), np.float32)
rng = np.random.default_rng(0)
for i in range(0, n, 5000):
    x[i:i + 5000] = rng.integers(0, 256, x[i:i + 5000].shape, np.uint8)
y = (np.arange(n) %% 10).astype(np.float32)
model = keras.Sequential([keras.layers.Flatten(input_shape=(28, 28, 1)),
                          keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              device="cpu", seed=1, threads=1)
model.get_weights()   # the libvtpu model and its backend, before measuring
model.fit(x[:64], y[:64], batch_size=64, epochs=1, verbose=0)
base = rss()
model.fit(x, y, batch_size=1000, epochs=1, steps_per_epoch=1, verbose=0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(base, peak, x.nbytes)
"""


def test_fit_copies_the_data_set_once():
    n = 60000
    code = MEMORY_CHILD % dict(python=os.path.join(TOP, "python"), n=n,
                               page=os.sysconf("SC_PAGE_SIZE"))
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    base, peak, fbytes = (int(v) for v in out.split())
    pixels = n * 28 * 28
    # one uint8 copy (the float -> uint8 conversion), one device copy of
    # the images (uint8) and labels (u32), and a margin for the program and
    # conversion chunks; a second uint8 copy would exceed it, a float copy
    # far more
    allowed = pixels + (pixels + 4 * n) + 16 * 2**20
    assert fbytes == 4 * pixels
    assert peak - base <= allowed, \
        "fit grew the peak RSS by %.1f MiB, allowed %.1f MiB" % (
            (peak - base) / 2**20, allowed / 2**20)
    # and the measurement sees the copies that must be there
    assert peak - base >= 2 * pixels * 0.9


def _bn_images(n, seed):
    """8x8x1 u8 images: class 1 when the left half is the brighter."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 128, (n, 8, 8, 1)).astype(np.uint8)
    y = rng.integers(0, 2, n)
    x[y == 1, :, :4, :] += 100
    x[y == 0, :, 4:, :] += 100
    return x, y


def test_batchnorm_trains_moves_stats_and_evaluate_uses_them():
    inp = L.Input(shape=(8, 8, 1))
    h = L.Conv2D(4, (3, 3))(inp)
    h = L.BatchNormalization(momentum=0.9)(h)
    h = L.ReLU()(h)
    h = L.Flatten()(h)
    out = L.Dense(2, activation="softmax")(h)
    model = compiled(keras.Model(inp, out), lr=1e-2)
    bn = model.layers[2]
    assert isinstance(bn, L.BatchNormalization)
    g, b, mm, mv = bn.get_weights()
    assert [w.shape for w in (g, b, mm, mv)] == [(4,)] * 4
    assert np.all(g == 1) and np.all(b == 0)
    assert np.all(mm == 0) and np.all(mv == 1)
    x, y = _bn_images(384, 1)
    model.fit(x, y, epochs=4, batch_size=32, verbose=0)
    g, b, mm, mv = bn.get_weights()
    assert np.all(mm != 0) and np.all(mv != 1)
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc > 0.9
    # predict with the moving statistics, by numpy
    k, cb, g, b, mm, mv, dk, db = model.get_weights()
    xt, _ = _bn_images(5, 2)
    xf = xt.astype(np.float64)
    conv = np.zeros((5, 6, 6, 4))
    for i in range(6):
        for j in range(6):
            conv[:, i, j, :] = np.tensordot(xf[:, i:i + 3, j:j + 3, :], k,
                                            axes=([1, 2, 3], [0, 1, 2]))
    conv += cb
    h = np.maximum(g * (conv - mm) / np.sqrt(mv + 1e-3) + b, 0)
    logits = h.reshape(5, -1) @ dk + db
    want = np.exp(logits - logits.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict(xt, verbose=0), want,
                               rtol=1e-3, atol=1e-5)
    # the moving variance is what evaluate reads
    bn.set_weights([g, b, mm, mv * 16])
    loss2, _ = model.evaluate(x, y, verbose=0)
    assert loss2 != loss



def test_batchnorm_in_sequential_after_dense():
    model = compiled(keras.Sequential([
        L.Flatten(input_shape=(8, 8, 1)),
        L.Dense(8),
        L.BatchNormalization(),
        L.ReLU(),
        L.Dense(2, activation="softmax"),
    ]))
    ws = model.get_weights()
    assert [w.shape for w in ws] == [(64, 8), (8,), (8,), (8,), (8,), (8,),
                                     (8, 2), (2,)]
    (bn,) = [la for la in model.layers
             if isinstance(la, L.BatchNormalization)]
    assert bn.count_params() == 32
    x, y = _bn_images(256, 3)
    model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    mm = bn.get_weights()[2]
    assert np.all(mm != 0)
    with pytest.raises(ValueError, match="sequence"):
        inp = L.Input(shape=(5,), dtype="int32")
        L.BatchNormalization()(L.Embedding(10, 4)(inp))
def test_pooling_shapes(fresh_names):
    x = keras.Input(shape=(8, 7, 3))
    # Keras' sizes: 'same' -> ceil(size / stride)
    assert L.AveragePooling2D(3, strides=2, padding="same")(x).shape == \
        (None, 4, 4, 3)
    assert L.AveragePooling2D()(x).shape == (None, 4, 3, 3)
    assert L.AveragePooling2D(3, strides=1)(x).shape == (None, 6, 5, 3)
    assert L.GlobalAveragePooling2D()(x).shape == (None, 3)
    y = keras.Input(shape=(9, 9, 2))
    assert L.MaxPooling2D(3, strides=2, padding="same")(y).shape == \
        (None, 5, 5, 2)
    assert L.MaxPooling2D(3, strides=1)(y).shape == (None, 7, 7, 2)
    assert L.MaxPooling2D((2, 3))(y).shape == (None, 4, 3, 2)
    assert L.MaxPooling2D(3, strides=2, padding="same")(x).shape == \
        (None, 4, 4, 3)
    assert L.GlobalAveragePooling2D().name == "global_average_pooling2d_1"
    assert L.AveragePooling2D().name == "average_pooling2d_3"


def test_pooling_trains(fresh_names):
    rng = np.random.default_rng(7)
    xs = rng.integers(0, 256, size=(64, 10, 9, 2)).astype(np.uint8)
    ys = (xs[:, :4].mean(axis=(1, 2, 3)) > xs[:, 5:].mean(axis=(1, 2, 3)))
    ys = ys.astype(np.int64)
    model = keras.Sequential([
        keras.Input(shape=(10, 9, 2)),
        L.Conv2D(4, 3, padding="same", activation="relu"),
        L.MaxPooling2D(3, strides=2, padding="same"),
        L.AveragePooling2D(2, strides=1),
        L.Conv2D(4, 1, activation="relu"),
        L.GlobalAveragePooling2D(),
        L.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    h = model.fit(xs, ys, batch_size=16, epochs=3, verbose=0)
    loss = h.history["loss"]
    assert len(loss) == 3 and all(np.isfinite(loss))
    p = model.predict(xs[:5], verbose=0)
    assert p.shape == (5, 2)
    assert np.allclose(p.sum(axis=1), 1, atol=1e-5)
