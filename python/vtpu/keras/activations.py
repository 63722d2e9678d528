# SPDX-License-Identifier: MIT
"""Activations libvtpu's layers compute: relu, tanh (Dense layers),
softmax (fused into the last Dense layer and the cross-entropy loss) and
linear (none). The functions
compute on numpy arrays, as a reference; layers take them or their names."""
import numpy as np

__all__ = ["relu", "tanh", "softmax", "linear", "get", "serialize"]


def relu(x):
    return np.maximum(np.asarray(x), 0)


def tanh(x):
    return np.tanh(np.asarray(x))


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def linear(x):
    return np.asarray(x)


_BY_NAME = {"relu": relu, "tanh": tanh, "softmax": softmax,
            "linear": linear}


def get(identifier, name="activation", where=""):
    """A layer's activation argument -> "relu", "tanh", "softmax" or None
    (linear).
    Anything else is a ValueError naming @name: libvtpu's graph has no other
    activation functions."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        key = identifier.lower()
        if key in _BY_NAME:
            return None if key == "linear" else key
        raise ValueError(
            "%s%s=%r: libvtpu's layers compute 'relu', 'tanh', "
            "'softmax' or 'linear' (None) only" % (where, name, identifier))
    for key, fn in _BY_NAME.items():
        if identifier is fn:
            return None if key == "linear" else key
    raise ValueError(
        "%s%s=%r: libvtpu's layers compute 'relu', 'tanh', 'softmax' or "
        "'linear' (None) only, given by name or as "
        "vtpu.keras.activations.relu, tanh, softmax, linear"
        % (where, name, identifier))


def serialize(act):
    return "linear" if act is None else act
