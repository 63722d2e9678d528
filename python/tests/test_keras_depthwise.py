# SPDX-License-Identifier: MIT
"""vtpu.keras' DepthwiseConv2D and SeparableConv2D on the host (libvtpu's
cpu backend): argument refusals, shapes, names, weights in Keras' layouts,
the forward pass against numpy, checkpoints, and a short training run."""
import re

import numpy as np
import pytest

import vtpu.keras as keras
from vtpu.keras import layers as L

from test_keras import compiled, quadrants


ERRORS = [
    (lambda: L.DepthwiseConv2D(3, dilation_rate=2), ValueError,
     "dilation_rate"),
    (lambda: L.SeparableConv2D(4, 3, dilation_rate=(2, 2)), ValueError,
     "dilation_rate"),
    (lambda: L.DepthwiseConv2D(3, use_bias=False), ValueError, "use_bias"),
    (lambda: L.SeparableConv2D(4, 3, use_bias=False), ValueError,
     "use_bias"),
    (lambda: L.DepthwiseConv2D(3, strides=(1, 2)), ValueError, "strides"),
    (lambda: L.DepthwiseConv2D(3, padding="causal"), ValueError, "padding"),
    (lambda: L.DepthwiseConv2D(3, activation="tanh"), ValueError,
     "activation"),
    (lambda: L.SeparableConv2D(4, 3, activation="softmax"), ValueError,
     "activation"),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=0), ValueError,
     "depth_multiplier"),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=29), ValueError,
     "depth_multiplier=29"),
    (lambda: L.DepthwiseConv2D(17), ValueError, "kernel_size"),
    (lambda: L.SeparableConv2D(4, 3, depth_multiplier=2), ValueError,
     "depth_multiplier"),
    (lambda: L.SeparableConv2D(0, 3), ValueError, "filters"),
    (lambda: L.DepthwiseConv2D(3, data_format="channels_first"),
     ValueError, "data_format"),
    (lambda: L.DepthwiseConv2D(3, depthwise_initializer="he_normal"),
     ValueError, "depthwise_initializer"),
    (lambda: L.SeparableConv2D(4, 3, pointwise_initializer="zeros"),
     ValueError, "pointwise_initializer"),
    (lambda: L.SeparableConv2D(4, 3, pointwise_regularizer="l2"),
     ValueError, "pointwise_regularizer"),
    (lambda: L.DepthwiseConv2D(3, bias_constraint=object()), ValueError,
     "bias_constraint"),
    (lambda: L.DepthwiseConv2D(3, frobnicate=1), TypeError, "frobnicate"),
]


@pytest.mark.parametrize("make,exc,name", ERRORS,
                         ids=["%d-%s" % (i, e[2])
                              for i, e in enumerate(ERRORS)])
def test_refusals_name_the_argument(make, exc, name):
    with pytest.raises(exc, match=re.escape(name)):
        make()


def test_refusal_messages_say_why():
    with pytest.raises(ValueError, match="not dilated"):
        L.DepthwiseConv2D(3, dilation_rate=2)
    with pytest.raises(ValueError, match="DepthwiseConv2D, then a 1x1"):
        L.SeparableConv2D(4, 3, depth_multiplier=2)
    x = keras.Input(shape=(2, 2, 1))
    with pytest.raises(ValueError, match="larger than the input"):
        L.DepthwiseConv2D(3)(x)
    with pytest.raises(ValueError, match="takes images"):
        L.SeparableConv2D(4, 3)(keras.Input(shape=(8,)))


def test_shapes_names_and_params(fresh_names):
    x = keras.Input(shape=(27, 27, 3))
    d = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2,
                          activation="relu")
    y = d(x)
    assert y.shape == (None, 14, 14, 6)
    s = L.SeparableConv2D(16, (2, 3), padding="same")
    z = s(y)                          # TF pads the odd row below
    assert z.shape == (None, 14, 14, 16)
    assert L.SeparableConv2D(4, (5, 3), strides=2)(z).shape == \
        (None, 5, 6, 4)
    assert (d.name, s.name) == ("depthwise_conv2d", "separable_conv2d")
    m = keras.Model(x, L.Dense(3, activation="softmax")(L.Flatten()(z)))
    # depthwise 3*3*3*2 + 6; separable 2*3*6 + 6*16 + 16
    assert d.count_params() == 60
    assert s.count_params() == 148
    assert m.count_params() == 60 + 148 + 14 * 14 * 16 * 3 + 3
    cfg = d.get_config()
    assert cfg["depth_multiplier"] == 2 and cfg["padding"] == "same"
    assert s.get_config()["filters"] == 16


def depthwise_ref(x, k, b, stride, padding, relu):
    """Keras' depthwise convolution in float64: x (n, h, w, c), k (kh, kw,
    c, m); TF's SAME padding (the odd pixel below and right)."""
    n, h, w, c = x.shape
    kh, kw, _, mult = k.shape
    if padding == "same":
        oh, ow = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + kh - h, 0) // 2
        pw = max((ow - 1) * stride + kw - w, 0) // 2
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
        ph = pw = 0
    xp = np.zeros((n, h + kh + stride * oh, w + kw + stride * ow, c))
    xp[:, ph:ph + h, pw:pw + w, :] = x
    y = np.zeros((n, oh, ow, c, mult))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride:i * stride + kh,
                       j * stride:j * stride + kw, :]
            y[:, i, j] = np.einsum("nyxc,yxcm->ncm", patch, k)
    y = y.reshape(n, oh, ow, c * mult)
    if b is not None:
        y = y + b
    return np.maximum(y, 0) if relu else y


def two_layer_model():
    return compiled(keras.Sequential([
        L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2,
                          activation="relu", input_shape=(6, 7, 2)),
        L.SeparableConv2D(3, (2, 3), padding="same", activation="relu"),
        L.Flatten(),
        L.Dense(4, activation="softmax"),
    ]))


def test_weights_in_keras_layouts_and_forward_matches_numpy():
    model = two_layer_model()
    shapes = [w.shape for w in model.get_weights()]
    assert shapes == [(3, 3, 2, 2), (4,), (2, 3, 4, 1), (1, 1, 4, 3), (3,),
                      (3 * 4 * 3, 4), (4,)]
    # glorot-uniform on Keras' fans: kh*kw*c + kh*kw*mult, c + filters
    w0 = model.get_weights()
    assert 0.5 * np.sqrt(6 / (18 + 18)) < np.abs(w0[0]).max() <= \
        np.sqrt(6 / (18 + 18))
    assert np.abs(w0[3]).max() <= np.sqrt(6 / (4 + 3))
    assert not w0[1].any() and not w0[4].any()
    rng = np.random.default_rng(7)
    ws = [(rng.normal(size=w.shape) * 0.05).astype(np.float32)
          for w in w0]
    model.set_weights(ws)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), ws))
    x = rng.integers(0, 256, (5, 6, 7, 2)).astype(np.uint8)
    y = depthwise_ref(x.astype(np.float64), ws[0], ws[1], 2, "same", True)
    assert y.shape == (5, 3, 4, 4)
    t = depthwise_ref(y, ws[2], None, 1, "same", False)
    z = np.maximum(t @ ws[3][0, 0] + ws[4], 0)
    logits = z.reshape(5, -1) @ ws[5] + ws[6]
    want = np.exp(logits - logits.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict(x, verbose=0), want,
                               rtol=1e-3, atol=1e-5)


def test_trains_and_checkpoints(tmp_path, fresh_names):
    x, y = quadrants(512, 1, size=8)
    xv, yv = quadrants(128, 2, size=8)
    inp = keras.Input(shape=(8, 8, 1))
    h = L.DepthwiseConv2D(3, padding="same", depth_multiplier=4,
                          activation="relu")(inp)
    h = L.SeparableConv2D(8, 3, strides=2, padding="same",
                          activation="relu")(h)
    out = L.Dense(4, activation="softmax")(L.Flatten()(h))
    model = compiled(keras.Model(inp, out), lr=3e-3)
    hist = model.fit(x, y, epochs=4, batch_size=32, verbose=0)
    loss = hist.history["loss"]
    assert loss[-1] < 0.7 * loss[0], loss
    want = model.predict(xv, verbose=0)
    ckpt = str(tmp_path / "sep.ckpt")
    model.save_weights(ckpt)
    npz = str(tmp_path / "sep.npz")
    model.save_weights(npz)
    with np.load(npz) as f:
        assert sorted(f.files) == [
            "dense/bias", "dense/kernel", "depthwise_conv2d/bias",
            "depthwise_conv2d/depthwise_kernel", "separable_conv2d/bias",
            "separable_conv2d/depthwise_kernel",
            "separable_conv2d/pointwise_kernel"]
    model.fit(x, y, epochs=1, verbose=0)          # move away
    model.load_weights(ckpt)
    np.testing.assert_array_equal(model.predict(xv, verbose=0), want)
    model.load_weights(npz)
    np.testing.assert_array_equal(model.predict(xv, verbose=0), want)
