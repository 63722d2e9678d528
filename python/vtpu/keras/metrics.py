# SPDX-License-Identifier: MIT
"""vtpu.keras.metrics: libvtpu's training step counts the examples whose
most probable class is the label, so the metric is classification
accuracy, under the names Keras gives it: "accuracy" (or "acc"),
"sparse_categorical_accuracy", "categorical_accuracy", the functions below
or the metric objects. History and logs use the name as written."""
import numpy as np

__all__ = ["sparse_categorical_accuracy", "categorical_accuracy",
           "SparseCategoricalAccuracy", "CategoricalAccuracy", "Metric",
           "get"]


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) is the label, else 0.0."""
    y = np.asarray(y_true).reshape(np.shape(y_pred)[:-1])
    return (np.argmax(y_pred, axis=-1) == y).astype(np.float32)


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) is argmax(y_true), else 0.0."""
    return (np.argmax(y_pred, axis=-1) ==
            np.argmax(y_true, axis=-1)).astype(np.float32)


class Metric:
    """Base of the metric objects (only accuracies: see the module)."""

    def __init__(self, name=None, dtype=None):
        self.name = name or self._default_name

    def __call__(self, y_true, y_pred):
        return float(np.mean(self._fn(y_true, y_pred)))


class SparseCategoricalAccuracy(Metric):
    _default_name = "sparse_categorical_accuracy"
    _fn = staticmethod(sparse_categorical_accuracy)


class CategoricalAccuracy(Metric):
    _default_name = "categorical_accuracy"
    _fn = staticmethod(categorical_accuracy)


_NAMES = ("accuracy", "acc", "sparse_categorical_accuracy",
          "categorical_accuracy")


def get(identifier):
    """compile(metrics=[...]) entry -> the name logs use."""
    if isinstance(identifier, (SparseCategoricalAccuracy,
                               CategoricalAccuracy)):
        return identifier.name
    if identifier is sparse_categorical_accuracy:
        return "sparse_categorical_accuracy"
    if identifier is categorical_accuracy:
        return "categorical_accuracy"
    if isinstance(identifier, str) and identifier in _NAMES:
        return identifier
    raise ValueError(
        "metrics: %r is not supported: libvtpu's training step measures "
        "classification accuracy only ('accuracy', "
        "'sparse_categorical_accuracy', 'categorical_accuracy', or "
        "vtpu.keras.metrics' functions and objects of those)"
        % (identifier,))
