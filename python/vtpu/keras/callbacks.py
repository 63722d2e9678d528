# SPDX-License-Identifier: MIT
"""vtpu.keras.callbacks: per-epoch callbacks.

fit() runs whole epochs inside libvtpu (the steps of an epoch are one
compiled program replayed on the device), so callbacks see epochs and the
training as a whole: on_train_begin/end and on_epoch_begin/end(epoch,
logs), with self.model and self.params. A callback that overrides a
per-batch method (on_batch_end, on_train_batch_begin, ...) is refused with
NotImplementedError rather than silently never called.

Setting self.model.stop_training = True ends fit() after the epoch
(vtpu_model_stop()); an exception raised in a callback stops the training
and propagates out of fit().
"""
import inspect
import numbers
import os

import numpy as np

__all__ = ["Callback", "History", "LearningRateScheduler", "EarlyStopping",
           "LambdaCallback", "ModelCheckpoint"]

BATCH_METHODS = (
    "on_batch_begin", "on_batch_end", "on_train_batch_begin",
    "on_train_batch_end", "on_test_batch_begin", "on_test_batch_end",
    "on_predict_batch_begin", "on_predict_batch_end",
)


def _resolve_mode(mode, monitor):
    """mode 'auto' as Keras resolves it: 'max' for an accuracy, else
    'min'."""
    if mode == "auto":
        return "max" if "acc" in monitor and "loss" not in monitor else "min"
    return mode


class Callback:
    """Base class: override the epoch and train methods."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    # never called: fit() refuses callbacks that override these
    def _batch_method(self, batch, logs=None):
        pass

    on_batch_begin = on_batch_end = _batch_method
    on_train_batch_begin = on_train_batch_end = _batch_method
    on_test_batch_begin = on_test_batch_end = _batch_method
    on_predict_batch_begin = on_predict_batch_end = _batch_method


def per_batch(cb):
    """The per-batch methods @cb overrides."""
    return [m for m in BATCH_METHODS
            if getattr(type(cb), m, None) is not getattr(Callback, m)]


def check(callbacks):
    """fit(callbacks=...) -> a list of Callback objects, or an exception
    naming what is wrong."""
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        callbacks = [callbacks]
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError("callbacks must be a list of Callback objects, not %s"
                        % type(callbacks).__name__)
    out = []
    for cb in callbacks:
        if not isinstance(cb, Callback):
            raise TypeError("callbacks: %r is not a vtpu.keras.callbacks."
                            "Callback" % (cb,))
        batch = per_batch(cb)
        if getattr(cb, "_batch_hooks", None):
            batch = batch + cb._batch_hooks
        if batch:
            raise NotImplementedError(
                "callbacks: %s overrides %s: the steps of an epoch run "
                "inside libvtpu (one compiled program replayed on the "
                "device), so vtpu.keras calls callbacks per epoch only"
                % (type(cb).__name__, ", ".join(batch)))
        out.append(cb)
    return out


class History(Callback):
    """fit()'s return value: .history maps "loss", the metric's name and
    their "val_" forms to per-epoch lists (val_ ones only for the epochs
    that validated); .epoch lists the epochs (0-based)."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class LearningRateScheduler(Callback):
    """schedule(epoch) or schedule(epoch, lr) -> the epoch's learning rate,
    set before each epoch (libvtpu patches the compiled step in place)."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError("LearningRateScheduler: schedule must be "
                            "callable, not %r" % (schedule,))
        self.schedule = schedule
        self.verbose = verbose
        try:
            params = [p for p in inspect.signature(schedule).parameters
                      .values() if p.kind in (p.POSITIONAL_ONLY,
                                              p.POSITIONAL_OR_KEYWORD,
                                              p.VAR_POSITIONAL)]
            self._two = len(params) >= 2 or any(
                p.kind == p.VAR_POSITIONAL for p in params)
        except (TypeError, ValueError):
            self._two = True

    def on_epoch_begin(self, epoch, logs=None):
        opt = self.model.optimizer
        lr = opt.learning_rate
        new = self.schedule(epoch, lr) if self._two else self.schedule(epoch)
        if isinstance(new, (bool, np.bool_)) or not isinstance(
                new, numbers.Real) or not np.isfinite(new) or not new > 0:
            raise ValueError("LearningRateScheduler: schedule(%d) returned "
                             "%r: the learning rate must be a finite number "
                             "> 0" % (epoch, new))
        opt.learning_rate = float(new)
        if self.verbose > 0:
            print("\nEpoch %05d: LearningRateScheduler setting learning rate "
                  "to %s." % (epoch + 1, float(new)))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = self.model.optimizer.learning_rate


class EarlyStopping(Callback):
    """Stop when the monitored quantity stops improving (Keras' rules:
    patience epochs without an improvement of more than min_delta)."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0,
                 verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        if not isinstance(monitor, str):
            raise TypeError("EarlyStopping: monitor must be a log name such "
                            "as 'val_loss', not %r" % (monitor,))
        if mode not in ("auto", "min", "max"):
            raise ValueError("EarlyStopping: mode=%r must be 'auto', 'min' or "
                             "'max'" % (mode,))
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        mode = _resolve_mode(mode, monitor)
        self.mode = mode
        self.stopped_epoch = 0

    def _better(self, a, b):
        if self.mode == "min":
            return a < b - self.min_delta
        return a > b + self.min_delta

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.mode == "min" else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            if self.verbose > 0:
                print("EarlyStopping: %s is not in the logs (%s); skipping "
                      "this epoch" % (self.monitor,
                                      ", ".join(sorted(logs or {}))))
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(value, self.best):
            self.best = value
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best "
                          "epoch: %d." % (self.best_epoch + 1))
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print("Epoch %05d: early stopping" % (self.stopped_epoch + 1))


class LambdaCallback(Callback):
    """Callbacks from functions: on_epoch_begin(epoch, logs),
    on_epoch_end(epoch, logs), on_train_begin(logs), on_train_end(logs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None,
                 on_batch_begin=None, on_batch_end=None,
                 on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        self._batch_hooks = [k for k, v in (("on_batch_begin",
                                             on_batch_begin),
                                            ("on_batch_end", on_batch_end))
                             if v is not None]
        self._batch_hooks += [k for k in kwargs if k in BATCH_METHODS]
        for k in kwargs:
            if k not in BATCH_METHODS:
                raise TypeError("LambdaCallback: Keyword argument not "
                                "understood: %r" % (k,))
        if on_epoch_begin is not None:
            self.on_epoch_begin = on_epoch_begin
        if on_epoch_end is not None:
            self.on_epoch_end = on_epoch_end
        if on_train_begin is not None:
            self.on_train_begin = on_train_begin
        if on_train_end is not None:
            self.on_train_end = on_train_end


class ModelCheckpoint(Callback):
    """Save the weights after epochs (save_weights_only=True: the model
    itself cannot be saved, only its weights): filepath may hold
    {epoch} and log names ({val_loss:.2f}); a .npz name saves numpy
    arrays, another one libvtpu's checkpoint with the optimizer state."""

    def __init__(self, filepath, monitor="val_loss", verbose=0,
                 save_best_only=False, save_weights_only=False, mode="auto",
                 save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        if not save_weights_only:
            raise ValueError("ModelCheckpoint: save_weights_only=False is not "
                             "supported: vtpu.keras saves weights, not "
                             "models; pass save_weights_only=True")
        if save_freq != "epoch":
            raise ValueError("ModelCheckpoint: save_freq=%r is not supported:"
                             " callbacks run per epoch" % (save_freq,))
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        mode = _resolve_mode(mode, monitor)
        if mode not in ("min", "max"):
            raise ValueError("ModelCheckpoint: mode=%r must be 'auto', 'min' "
                             "or 'max'" % (mode,))
        self.mode = mode
        self.best = initial_value_threshold
        if self.best is None:
            self.best = np.inf if mode == "min" else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.save_best_only:
            value = logs.get(self.monitor)
            if value is None:
                return
            better = value < self.best if self.mode == "min" else \
                value > self.best
            if not better:
                return
            self.best = value
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.verbose > 0:
            print("\nEpoch %05d: saving model to %s" % (epoch + 1, path))
        self.model.save_weights(path)
