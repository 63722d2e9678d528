# SPDX-License-Identifier: MIT
"""vtpu.keras.applications: libvtpu's ready-made networks as Models.

    model = keras.applications.ResNet18(input_shape=(64, 64, 3), classes=5)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])

ResNet18: vtpu_app_resnet(), a ResNet-18-shaped network (a 7x7 stride-2
convolution, batch norm, ReLU, a 3x3 stride-2 max pool; four stages of two
basic blocks of width, 2, 4 and 8 times width filters; global average
pooling; a dense classifier). Keras has no ResNet18; at width 64 it is
ResNet-18's shape, at the default width 32 a quarter of its filters.

Xception: vtpu_app_xception(), the small Xception of Keras' "image
classification from scratch" example (not keras.applications.Xception's
36 convolutions); the default width 32 is a quarter of the example's.

Both take raw 0..255 pixels as image_dataset_from_directory yields them
(the networks have no Rescaling: batch norm follows the first
convolution). They are Models like any other (compile, fit, evaluate,
predict, summary, get_weights/set_weights, save_weights/load_weights);
their layers are libvtpu's graph, so .layers holds the input only and
get_weights() is in libvtpu's order, named as libvtpu names them
(weight_names()). No pretrained weights: weights must be None.
"""
import os
import tempfile

from .._ffi import ffi, lib
from ._cmodel import CModel, c_error, libc
from ._util import check_int
from .layers import Input, c_shape
from .models import MAX_CLASSES, Model, _Compiled, default_device
from . import optimizers

__all__ = ["ResNet18", "Xception"]

MAX_WIDTH = 1024


class _Net:
    """What get_weights()' error messages name: the whole network."""

    def __init__(self, name):
        self.name = name


class _AppModel(Model):
    """A Model whose graph is built by a libvtpu application function."""

    def __init__(self, kind, fn, input_shape, classes, width, logits, name):
        self._init_common(name, kind)
        self._app = (fn, int(classes), int(width), logits)
        self._input = Input(shape=input_shape)
        self._input._layer._model = self
        self._nparams = self._graph_params()

    def _new_graph(self, g):
        """Build the network on @g, whose node 0 is the input: its
        output node, or the C error as an exception."""
        fn, classes, width, _ = self._app
        o = ffi.new("struct vtpu_app_opts *")
        o.sz = ffi.sizeof("struct vtpu_app_opts")
        o.width = width
        out = getattr(lib, fn)(g, 0, classes, o)
        if out < 0:
            raise c_error(out, "%s(input_shape=%s, classes=%d, width=%d): "
                          "libvtpu's %s refused it"
                          % (type(self).__name__, self._input.shape[1:],
                             classes, width, fn))
        return out

    def _graph_params(self):
        h, w, c = c_shape(self._input._feature_shape)
        cm = CModel(h, w, c)
        self._new_graph(cm.graph())
        return int(lib.vtpu_graph_num_params(cm.graph()))

    @property
    def layers(self):
        return [self._input._layer]

    @property
    def output_shape(self):
        return (None, self._app[1])

    def _classes(self):
        return self._app[1]

    def _plan(self, from_logits):
        logits = self._app[3]
        if logits and not from_logits:
            raise ValueError(
                "%s(classifier_activation=None) outputs logits: compile with "
                "loss=SparseCategoricalCrossentropy(from_logits=True)"
                % type(self).__name__)
        if from_logits and not logits:
            raise ValueError(
                "from_logits=True, but %s ends in softmax: use "
                "from_logits=False (or classifier_activation=None)"
                % type(self).__name__)
        return None

    def _build_c(self, batch, transform):
        cfg = self._compiled or _Compiled(
            optimizers.Adam(), (True, self._app[3],
                                "sparse_categorical_crossentropy"),
            [], default_device(), None, 0, 0)
        h, w, c = c_shape(self._input._feature_shape)
        cm = CModel(h, w, c)
        cm.set_output(self._new_graph(cm.graph()))
        self._compile_c(cm, cfg, {}, batch, transform)

    def _weight_list(self):
        cm = self._ensure_c(what="get_weights")
        net = _Net(self.name)
        return [(net, n, s) for n, s in cm.weight_infos()]

    def weight_names(self):
        """The names of get_weights()' arrays ("conv2d/kernel", ...)."""
        return [n for _, n, _ in self._weight_list()]

    def count_params(self):
        """Every weight's scalars, batch norms' moving statistics too, as
        Keras counts them (vtpu_graph_num_params())."""
        return self._nparams

    def summary(self, line_length=None, positions=None, print_fn=None,
                expand_nested=False, show_trainable=False, layer_range=None):
        """libvtpu's layer table of the network (vtpu_model_summary())."""
        if print_fn is None:
            print_fn = print
        h, w, c = c_shape(self._input._feature_shape)
        cm = CModel(h, w, c)
        cm.set_output(self._new_graph(cm.graph()))
        with tempfile.TemporaryFile() as log:
            f = libc().fdopen(os.dup(log.fileno()), b"w")
            if f == ffi.NULL:
                raise OSError(ffi.errno, "fdopen failed")
            try:
                lib.vtpu_model_summary(cm.p, f)
            finally:
                libc().fclose(f)
            log.seek(0)
            text = log.read().decode("utf-8", "replace")
        lines = text.rstrip("\n").split("\n")
        if lines and lines[0].startswith("Model: "):
            lines = lines[1:]           # libvtpu's name for it
        print_fn('Model: "%s"' % self.name)
        for line in lines:
            print_fn(line)


def _app(kind, fn, include_top, weights, input_tensor, input_shape, pooling,
         classes, classifier_activation, width, name, kwargs):
    where = "%s: " % kind
    for k in kwargs:
        raise TypeError("%sKeyword argument not understood: %r" % (where, k))
    if include_top is not True:
        raise ValueError("%sinclude_top=%r is not supported: libvtpu's "
                         "networks end in their classifier"
                         % (where, include_top))
    if weights is not None:
        raise ValueError("%sweights=%r is not supported: there are no "
                         "pretrained weights (weights=None: random "
                         "initialisation)" % (where, weights))
    if input_tensor is not None:
        raise ValueError("%sinput_tensor is not supported: give input_shape"
                         % where)
    if pooling is not None:
        raise ValueError("%spooling=%r is not supported: the network ends in "
                         "global average pooling and its classifier"
                         % (where, pooling))
    if classifier_activation not in ("softmax", None):
        raise ValueError("%sclassifier_activation=%r is not supported: "
                         "'softmax' or None (logits)"
                         % (where, classifier_activation))
    if input_shape is None:
        input_shape = (224, 224, 3)
    if isinstance(input_shape, (str, bytes)) or not hasattr(
            input_shape, "__len__") or len(input_shape) != 3:
        raise ValueError("%sinput_shape=%r must be (height, width, channels)"
                         % (where, input_shape))
    shape = tuple(check_int(v, "input_shape", 1, 8192, where=where)
                  for v in input_shape)
    classes = check_int(classes, "classes", 2, MAX_CLASSES, where=where)
    width = check_int(width, "width", 1, MAX_WIDTH, where=where)
    cls = type(kind, (_AppModel,), {"__doc__": _AppModel.__doc__})
    return cls(kind.lower(), fn, shape, classes, width,
               classifier_activation is None, name)


def ResNet18(include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", width=32, name=None, **kwargs):
    """A ResNet-18-shaped classifier (libvtpu's vtpu_app_resnet(), see the
    module) of @width first-stage filters (64: ResNet-18's) for images of
    @input_shape (default (224, 224, 3)) into @classes (2..256; Keras'
    default 1000 is too many for libvtpu's byte labels: pass classes=)."""
    return _app("ResNet18", "vtpu_app_resnet", include_top, weights,
                input_tensor, input_shape, pooling, classes,
                classifier_activation, width, name, kwargs)


def Xception(include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", width=32, name=None, **kwargs):
    """The small Xception of Keras' "image classification from scratch"
    example (libvtpu's vtpu_app_xception(), see the module) at @width
    (128: the example's) for images of @input_shape into @classes."""
    return _app("Xception", "vtpu_app_xception", include_top, weights,
                input_tensor, input_shape, pooling, classes,
                classifier_activation, width, name, kwargs)
