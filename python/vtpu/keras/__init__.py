# SPDX-License-Identifier: MIT
"""vtpu.keras: a Keras-style training API on libvtpu's model API.

    import vtpu.keras as keras
    model = keras.Sequential([
        keras.layers.Flatten(input_shape=(28, 28)),
        keras.layers.Dense(512, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], device="/dev/vtpu0")
    model.fit(x_train / 255.0, y_train, epochs=5, batch_size=128)

As far as libvtpu's model API reaches: Sequential and functional models
(one image input, one output, residual Add), functional models of token
inputs (Embedding, LSTM, GRU, Attention, Concatenate, Dense on sequences:
an encoder-decoder, with greedy model.decode()), the layers in
vtpu.keras.layers, Adam and SGD, softmax cross-entropy, accuracy. Steps
run inside libvtpu (whole epochs per call); what it cannot do is an
exception naming the argument. docs/python.md has the table and the
differences from tf.keras.
"""
from .. import datasets
from . import activations, applications, backend, callbacks, distribute, \
    layers, losses, metrics, models, optimizers, utils
from .layers import Input
from .models import Model, Sequential

__all__ = ["Sequential", "Model", "Input", "activations", "applications",
           "backend",
           "callbacks", "distribute", "datasets", "layers", "losses", "metrics", "models",
           "optimizers", "utils"]
