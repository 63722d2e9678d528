# SPDX-License-Identifier: MIT
"""vtpu.keras.losses: libvtpu trains with one loss, softmax cross-entropy
(the last Dense layer's softmax fused with it, as Keras computes it from
logits internally). It takes integer labels (sparse_categorical_
crossentropy) or one-hot rows (categorical_crossentropy, converted to
indices). The functions compute the losses on numpy arrays, as a
reference."""
import numpy as np

from ._util import check_float

__all__ = ["sparse_categorical_crossentropy", "categorical_crossentropy",
           "SparseCategoricalCrossentropy", "CategoricalCrossentropy",
           "Loss", "get"]


def _log_probs(y_pred, from_logits, axis):
    p = np.asarray(y_pred, dtype=np.float64)
    if from_logits:
        p = p - p.max(axis=axis, keepdims=True)
        return p - np.log(np.exp(p).sum(axis=axis, keepdims=True))
    p = p / p.sum(axis=axis, keepdims=True)
    return np.log(np.clip(p, 1e-7, 1 - 1e-7))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False,
                                    axis=-1):
    """-log p[label] per example."""
    lp = _log_probs(y_pred, from_logits, axis)
    y = np.asarray(y_true).reshape(lp.shape[:-1]).astype(np.intp)
    return -np.take_along_axis(lp, y[..., None], axis=-1)[..., 0]


def categorical_crossentropy(y_true, y_pred, from_logits=False,
                             label_smoothing=0.0, axis=-1):
    """-sum(y_true * log p) per example."""
    y = np.asarray(y_true, dtype=np.float64)
    if label_smoothing:
        y = y * (1 - label_smoothing) + label_smoothing / y.shape[-1]
    return -(y * _log_probs(y_pred, from_logits, axis)).sum(axis=axis)


class Loss:
    """Base of the loss objects (Keras' tf.keras.losses.Loss)."""

    _sparse = True

    def __init__(self, from_logits=False, reduction="auto", name=None):
        where = "%s: " % type(self).__name__
        if not isinstance(from_logits, (bool, np.bool_)):
            raise TypeError("%sfrom_logits must be True or False, not %r"
                            % (where, from_logits))
        if reduction not in ("auto", "sum_over_batch_size"):
            raise ValueError("%sreduction=%r is not supported: libvtpu "
                             "trains on the mean over the batch" % (where,
                                                                   reduction))
        self.from_logits = bool(from_logits)
        self.reduction = reduction
        self.name = name or self._default_name

    def __call__(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        return float(np.mean(self._fn(y_true, y_pred)))

    def get_config(self):
        return {"from_logits": self.from_logits, "name": self.name}


class SparseCategoricalCrossentropy(Loss):
    _default_name = "sparse_categorical_crossentropy"

    def __init__(self, from_logits=False, ignore_class=None,
                 reduction="auto", name=None):
        if ignore_class is not None and (isinstance(
                ignore_class, bool) or ignore_class != 0):
            raise ValueError("SparseCategoricalCrossentropy: ignore_class=%r "
                             "is not supported: libvtpu ignores label 0 "
                             "(padding) of sequence outputs, and no other"
                             % (ignore_class,))
        self.ignore_class = None if ignore_class is None else 0
        super().__init__(from_logits, reduction, name)

    def _fn(self, y_true, y_pred):
        return sparse_categorical_crossentropy(y_true, y_pred,
                                               self.from_logits)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if self.ignore_class is None:
            return super().__call__(y_true, y_pred, sample_weight)
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        y = np.asarray(y_true)
        keep = y.reshape(np.shape(y_pred)[:-1]) != self.ignore_class
        losses = self._fn(np.where(keep, y.reshape(keep.shape), 0), y_pred)
        return float(losses[keep].mean()) if keep.any() else 0.0

    def get_config(self):
        c = super().get_config()
        c.update(ignore_class=self.ignore_class)
        return c


class CategoricalCrossentropy(Loss):
    _default_name = "categorical_crossentropy"
    _sparse = False

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="auto", name=None):
        where = "CategoricalCrossentropy: "
        if check_float(label_smoothing, "label_smoothing", 0, 1,
                       where=where) != 0:
            raise ValueError("%slabel_smoothing=%r is not supported: "
                             "libvtpu's loss takes class indices"
                             % (where, label_smoothing))
        if axis != -1:
            raise ValueError("%saxis=%r is not supported: the classes are "
                             "the last axis" % (where, axis))
        super().__init__(from_logits, reduction, name)

    def _fn(self, y_true, y_pred):
        return categorical_crossentropy(y_true, y_pred, self.from_logits)


def get(identifier):
    """compile(loss=...) -> (sparse?, from_logits, name). Anything but the
    two cross-entropies is a ValueError naming loss."""
    if isinstance(identifier, Loss):
        return identifier._sparse, identifier.from_logits, identifier.name
    if identifier is sparse_categorical_crossentropy:
        return True, False, "sparse_categorical_crossentropy"
    if identifier is categorical_crossentropy:
        return False, False, "categorical_crossentropy"
    if isinstance(identifier, str):
        key = identifier.lower()
        if key in ("sparse_categorical_crossentropy",
                   "sparsecategoricalcrossentropy"):
            return True, False, "sparse_categorical_crossentropy"
        if key in ("categorical_crossentropy", "categoricalcrossentropy"):
            return False, False, "categorical_crossentropy"
    raise ValueError(
        "loss=%r is not supported: libvtpu trains with softmax cross-entropy"
        ", 'sparse_categorical_crossentropy' (class indices) or "
        "'categorical_crossentropy' (one-hot labels), as a name, a "
        "vtpu.keras.losses function or a Loss object" % (identifier,))
