# SPDX-License-Identifier: MIT
"""vtpu.keras.optimizers: Adam and SGD (with momentum), the two optimizers
libvtpu compiles into its training step. Their state (moments, step
count) lives with the model's weights in device memory: it survives
changes of batch size and input scale, and libvtpu's checkpoints
(save_weights to a non-.npz path) keep it.

optimizer.learning_rate reads and sets the compiled model's rate
(vtpu_model_set_learning_rate(): no recompilation, state kept), as
Keras' callbacks do with model.optimizer.learning_rate."""
import weakref

from ._util import check_float

__all__ = ["Optimizer", "Adam", "SGD", "get"]

# libvtpu reads a 0 beta as "its default": a value whose 1 - beta is 1 in
# float32 and whose products vanish computes exactly what beta 0 does
_TINY = 1e-45


class Optimizer:
    _kind = None

    def __init__(self, learning_rate, name, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, weight_decay=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None,
                 jit_compile=True, lr=None, decay=0.0, **kwargs):
        where = "%s: " % type(self).__name__
        for k in kwargs:
            raise TypeError("%sKeyword argument not understood: %r"
                            % (where, k))
        if lr is not None:           # Keras 2's old name
            learning_rate = lr
        if callable(learning_rate) and not isinstance(learning_rate,
                                                      (int, float)):
            raise ValueError(
                "%slearning_rate=%r is not supported: a schedule object "
                "changes the rate every step inside the compiled program; "
                "use the LearningRateScheduler callback (per epoch)"
                % (where, learning_rate))
        self._lr = check_float(learning_rate, "learning_rate", 0,
                               min_open=True, where=where)
        for k, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                     ("global_clipnorm", global_clipnorm),
                     ("weight_decay", weight_decay)):
            if v is not None:
                raise ValueError("%s%s=%r is not supported: libvtpu's "
                                 "optimizer step has no gradient clipping "
                                 "or weight decay" % (where, k, v))
        if use_ema:
            raise ValueError("%suse_ema=True is not supported" % where)
        if decay:
            raise ValueError("%sdecay=%r is not supported: use the "
                             "LearningRateScheduler callback" % (where,
                                                                decay))
        self.name = name
        self._model = None

    def _bind(self, model):
        self._model = weakref.ref(model)

    def _c(self):
        m = self._model() if self._model else None
        return m._c if m is not None and m._c is not None else None

    @property
    def learning_rate(self):
        c = self._c()
        if c is not None:
            return float(c.learning_rate())
        return self._lr

    @learning_rate.setter
    def learning_rate(self, value):
        v = check_float(value, "learning_rate", 0, min_open=True,
                        where="%s: " % type(self).__name__)
        c = self._c()
        if c is not None:
            c.set_learning_rate(v)
        self._lr = v

    lr = learning_rate

    def get_config(self):
        return {"name": self.name, "learning_rate": self.learning_rate}

    def __repr__(self):
        return "<%s learning_rate=%g>" % (type(self).__name__,
                                          self.learning_rate)


class Adam(Optimizer):
    """Adam (Kingma and Ba), Keras' defaults."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-07, amsgrad=False, name="Adam", **kwargs):
        where = "Adam: "
        self.beta_1 = check_float(beta_1, "beta_1", 0, 1, max_open=True,
                                  where=where)
        self.beta_2 = check_float(beta_2, "beta_2", 0, 1, max_open=True,
                                  where=where)
        self.epsilon = check_float(epsilon, "epsilon", 0, min_open=True,
                                   where=where)
        if amsgrad:
            raise ValueError("%samsgrad=True is not supported: libvtpu's "
                             "Adam step is the original one" % where)
        super().__init__(learning_rate, name, **kwargs)

    def _c_opts(self, co, lib):
        co.optimizer = lib.VTPU_OPT_ADAM
        co.learning_rate = self._lr
        co.beta1 = self.beta_1 or _TINY
        co.beta2 = self.beta_2 or _TINY
        co.epsilon = self.epsilon

    def get_config(self):
        c = super().get_config()
        c.update(beta_1=self.beta_1, beta_2=self.beta_2,
                 epsilon=self.epsilon)
        return c


class SGD(Optimizer):
    """Stochastic gradient descent, with (heavy-ball) momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False,
                 name="SGD", **kwargs):
        where = "SGD: "
        self.momentum = check_float(momentum, "momentum", 0, 1, where=where)
        if nesterov:
            raise ValueError("%snesterov=True is not supported: libvtpu's "
                             "momentum is the heavy-ball kind" % where)
        self.nesterov = False
        super().__init__(learning_rate, name, **kwargs)

    def _c_opts(self, co, lib):
        co.optimizer = lib.VTPU_OPT_SGD
        co.learning_rate = self._lr
        co.momentum = self.momentum

    def get_config(self):
        c = super().get_config()
        c.update(momentum=self.momentum)
        return c


def get(identifier):
    """compile(optimizer=...) -> an Optimizer object."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        key = identifier.lower()
        if key == "adam":
            return Adam()
        if key == "sgd":
            return SGD()
    raise ValueError(
        "optimizer=%r is not supported: libvtpu's training step has Adam "
        "and SGD ('adam', 'sgd', vtpu.keras.optimizers.Adam(...) or "
        "SGD(...))" % (identifier,))
