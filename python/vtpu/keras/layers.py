# SPDX-License-Identifier: MIT
"""vtpu.keras.layers: the layers libvtpu's graph computes.

Shapes are Keras' (channels last); a layer called on a symbolic tensor
(vtpu.keras.Input) checks its input shape at once and raises, as Keras
does, before anything is compiled. Each layer becomes a node of libvtpu's
graph (vtpu_graph_*) when the model is compiled; Dropout(0), InputLayer,
Activation('linear') and a softmax folded into the Dense layer before it
are no node of their own.

Sequences: an Input of an integer dtype holds token ids (steps,);
Embedding turns them into a sequence (steps, features), which LSTM, GRU,
Attention, Concatenate and Dense (on the last axis) take. A tensor knows
whether it is a sequence and, as Keras' mask, which token input's padding
(id 0) marks its padded steps (Embedding(mask_zero=True)).

Every Keras argument is accepted by name; one libvtpu cannot honour
(use_bias=False, dilation_rate, data_format='channels_first', a regularizer,
a non-default initializer, ...) is a ValueError naming it, never ignored.
"""
import inspect
import itertools

import numpy as np

from . import activations, backend
from ._util import check_choice, check_float, check_int, check_pair

__all__ = [
    "Layer", "InputLayer", "Input", "Dense", "Conv2D", "Convolution2D",
    "DepthwiseConv2D", "SeparableConv2D", "SeparableConvolution2D",
    "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
    "GlobalAveragePooling2D", "GlobalAvgPool2D", "Flatten", "Dropout",
    "ReLU", "Activation", "RandomCrop", "RandomFlip", "Rescaling",
    "Softmax", "Add", "add", "Embedding", "LSTM", "GRU",
    "Attention",
    "BahdanauAttention",
    "Concatenate", "concatenate", "BatchNormalization",
]

# libvtpu's graph: at most 2^28 values per example in one node
MAX_NODE = 1 << 28
# and at most 2^24 along one dimension (VTPU_MAX_DIM): steps, a vocabulary
MAX_STEPS = 1 << 24
# attention's softmax runs over at most 2^16 steps (VTPU_SOFTMAX_MAX_COLS)
MAX_ATTENTION_STEPS = 1 << 16
# additive attention: VTPU_ADDITIVE_MAX_UNITS, VTPU_ADDITIVE_MAX_WORK
MAX_ADDITIVE_UNITS = 4096
MAX_ADDITIVE_WORK = 1 << 18

_serial = itertools.count()


def _shape_str(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


class KerasTensor:
    """A symbolic tensor: what Input() and a layer called on one return.
    @shape is Keras' full shape, (None,) + the per-example shape."""

    def __init__(self, feature_shape, layer, inputs, index=0,
                 dtype="float32", seq=False, mask=None):
        self._feature_shape = tuple(int(d) for d in feature_shape)
        self._layer = layer
        self._inputs = list(inputs)
        self._index = index
        self._serial = next(_serial)
        self._dtype = dtype
        # a sequence (steps, features): what Embedding, LSTM(return_
        # sequences=True), Attention and Dense on a sequence make
        self._seq = seq
        # Keras' mask, as libvtpu keeps it: the token input (a KerasTensor
        # of an integer Input) whose padding (id 0) marks the steps to skip
        self._mask = mask

    @property
    def shape(self):
        return (None,) + self._feature_shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._layer.name

    def __repr__(self):
        return "<KerasTensor: shape=%s dtype=%s (created by layer " \
            "'%s')>" % (_shape_str(self.shape), self._dtype,
                        self._layer.name)

    def __add__(self, other):
        """a + b: an Add layer (residual connections)."""
        if not isinstance(other, KerasTensor):
            return NotImplemented
        return Add()([self, other])

    def __array__(self, *args, **kwargs):
        raise TypeError("a symbolic KerasTensor has no values: build a "
                        "Model from it and call predict()")


def _feature_shape(shape, name, where):
    """A per-example shape: 1 to 3 positive ints (features; h, w; h, w, c)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError("%s%s must be a tuple of positive integers, not %r"
                        % (where, name, shape))
    if not 1 <= len(shape) <= 3:
        raise ValueError(
            "%s%s=%r: libvtpu's models take vectors (features,), 2-D "
            "(height, width) or 3-D (height, width, channels) examples"
            % (where, name, tuple(shape)))
    out = []
    for d in shape:
        if d is None:
            raise ValueError("%s%s=%r: every dimension must be known (libvtpu "
                             "compiles its programs for fixed shapes)"
                             % (where, name, tuple(shape)))
        out.append(check_int(d, name, 1, where=where))
    if int(np.prod(out)) > MAX_NODE:
        raise ValueError("%s%s=%r: more than 2^28 values per example"
                         % (where, name, tuple(shape)))
    return tuple(out)


def c_shape(shape):
    """Keras' per-example shape -> libvtpu's (h, w, c)."""
    if len(shape) == 3:
        return shape
    if len(shape) == 2:
        return (shape[0], shape[1], 1)
    return (1, 1, shape[0])


def _reject(where, name, value, default, why):
    """A Keras argument libvtpu cannot honour: ValueError unless default."""
    if value is default or (default is not None and value == default):
        return
    raise ValueError("%s%s=%r is not supported: %s" % (where, name, value,
                                                       why))


def _initializer(value, name, accepted, where, what):
    if isinstance(value, str) and value.replace("_", "").lower() in accepted:
        return
    if type(value).__name__.replace("_", "").lower() in accepted and \
            getattr(value, "seed", None) is None:
        return
    raise ValueError(
        "%s%s=%r is not supported: libvtpu initialises %s (seeded by "
        "compile(seed=...)); set other values with set_weights()"
        % (where, name, value, what))


_NO_REGULARIZERS = ("kernel_regularizer", "bias_regularizer",
                    "activity_regularizer", "kernel_constraint",
                    "bias_constraint")


def _check_weight_args(args, where, layer):
    """Refuse the weight arguments of Dense and Conv2D (@args: their
    locals()) that libvtpu's @layer does not take: no bias, other
    initializers, regularizers, constraints."""
    if args["use_bias"] is not True:
        raise ValueError("%suse_bias=%r is not supported: libvtpu's %s "
                         "always has a bias (set it to zeros with "
                         "set_weights())" % (where, args["use_bias"], layer))
    _initializer(args["kernel_initializer"], "kernel_initializer",
                 ("glorotuniform",), where, "kernels glorot-uniform")
    _initializer(args["bias_initializer"], "bias_initializer", ("zeros",),
                 where, "biases to zeros")
    for k in _NO_REGULARIZERS:
        if args[k] is not None:
            raise ValueError("%s%s=%r is not supported: libvtpu's training "
                             "step has no regularizers or constraints"
                             % (where, k, args[k]))


def _channels_last(data_format, where):
    if data_format not in (None, "channels_last"):
        raise ValueError("%sdata_format=%r is not supported: libvtpu's "
                         "images are channels_last (NHWC)"
                         % (where, data_format))


def _image_input(shapes, where, layer):
    """The (height, width, channels) input of @layer, which takes images."""
    (s,) = shapes
    if len(s) != 3:
        raise ValueError("%sinput of shape %s: %s takes images "
                         "(batch, height, width, channels)"
                         % (where, _shape_str((None,) + s), layer))
    return s


class Layer:
    """The base of vtpu.keras' layers. Custom subclasses cannot be compiled
    (libvtpu runs its own graph, not Python code)."""

    _prefix = None      # Keras' name prefix: the snake-case class name
    _has_weights = False

    def __init__(self, trainable=True, name=None, dtype=None,
                 input_shape=None, batch_input_shape=None, input_dim=None,
                 batch_size=None, **kwargs):
        where = "%s: " % type(self).__name__
        for k in kwargs:
            raise TypeError("%sKeyword argument not understood: %r"
                            % (where, k))
        if trainable is not True:
            raise ValueError("%strainable=%r is not supported: libvtpu "
                             "trains every layer's weights" % (where,
                                                               trainable))
        if dtype is not None:
            try:
                ok = np.dtype(dtype) == np.float32
            except TypeError:
                ok = False
            if not ok:
                raise ValueError("%sdtype=%r is not supported: libvtpu "
                                 "computes in float32" % (where, dtype))
        if name is not None and (not isinstance(name, str) or not name or
                                 "/" in name):
            raise ValueError("%sname=%r must be a non-empty string without "
                             "'/'" % (where, name))
        self.name = name or backend.unique_object_name(
            self._prefix or backend.to_snake_case(type(self).__name__))
        self._where = "%s %r: " % (type(self).__name__, self.name)
        shape = None
        if input_shape is not None:
            shape = _feature_shape(input_shape, "input_shape", where)
        if batch_input_shape is not None:
            if not isinstance(batch_input_shape, (tuple, list)) or \
                    len(batch_input_shape) < 2:
                raise ValueError("%sbatch_input_shape=%r must be (batch,) + "
                                 "the example's shape"
                                 % (where, batch_input_shape))
            if batch_input_shape[0] is not None:
                raise ValueError("%sbatch_input_shape=%r: a fixed batch size "
                                 "is not supported; pass fit(batch_size=...)"
                                 % (where, batch_input_shape))
            shape = _feature_shape(tuple(batch_input_shape[1:]),
                                   "batch_input_shape", where)
        if input_dim is not None:
            shape = (check_int(input_dim, "input_dim", 1, MAX_NODE,
                               where=where),)
        if batch_size is not None:
            raise ValueError("%sbatch_size=%r is not supported: pass "
                             "fit(batch_size=...)" % (where, batch_size))
        self._input_shape_arg = shape
        self._inbound = None     # the KerasTensors it was called on
        self._outputs = None     # the KerasTensor it made
        self._model = None       # the model it is part of

    # ---- calling on symbolic tensors -----------------------------------

    def __call__(self, inputs, *args, **kwargs):
        where = self._where
        if args or kwargs:
            names = ", ".join(list(kwargs) or ["a positional argument"])
            raise TypeError("%scalled with %s: vtpu.keras layers take one "
                            "input (Add: a list)" % (where, names))
        tensors = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        for t in tensors:
            if not isinstance(t, KerasTensor):
                raise TypeError(
                    "%scalled on %s: vtpu.keras layers are called on "
                    "symbolic tensors (vtpu.keras.Input(shape=...)) to build "
                    "a model; compute on data with model.predict()"
                    % (where, type(t).__name__))
        if self._inbound is not None:
            raise ValueError(
                "%sthe layer is used twice: shared layers (one layer, one "
                "set of weights, called on two inputs) are not supported by "
                "libvtpu's graph; create a second layer" % where)
        if type(self)._c_build is Layer._c_build:
            raise NotImplementedError(
                "%scustom layers cannot be compiled: libvtpu runs its own "
                "graph (%s)" % (where, _SUPPORTED))
        self._check_tensor_kinds(tensors)
        self._check_inputs(tensors)
        self._call_inputs = tensors
        shape = self._output_shape([t._feature_shape for t in tensors])
        out = KerasTensor(shape, self, tensors, seq=self._out_seq(tensors),
                          mask=self._out_mask(tensors))
        self._inbound = list(tensors)
        self._outputs = out
        return out

    _takes_tokens = False   # Embedding: an integer Input's token ids
    _call_inputs = ()       # the tensors of the call being made

    def _check_tensor_kinds(self, tensors):
        """Token ids only into Embedding; a Concatenate's output only into
        Dense (libvtpu reads a concatenation part by part, in one GEMM per
        part, and nothing else can)."""
        for t in tensors:
            if t._dtype != "float32" and not self._takes_tokens:
                raise ValueError(
                    "%scalled on %r, an input of token ids (dtype %s): "
                    "token ids go through an Embedding layer first"
                    % (self._where, t._layer.name, t._dtype))
            if isinstance(t._layer, Concatenate) and \
                    not isinstance(self, Dense):
                raise ValueError(
                    "%scalled on the output of Concatenate %r: libvtpu's "
                    "concatenation feeds Dense layers only (it is read "
                    "part by part, not copied)" % (self._where,
                                                   t._layer.name))

    def _out_mask(self, tensors):
        """Keras' mask propagation: element-wise layers pass their first
        input's on."""
        return tensors[0]._mask if tensors else None

    def _out_seq(self, tensors):
        """Whether the output is a sequence: element-wise layers keep
        their input's kind."""
        return bool(tensors) and tensors[0]._seq

    def _check_inputs(self, tensors):
        if len(tensors) != 1:
            raise ValueError("%stakes one input, not %d"
                             % (self._where, len(tensors)))

    def _output_shape(self, shapes):
        return shapes[0]

    def compute_output_shape(self, input_shape):
        """Keras' (None, ...) shape in -> the shape out."""
        if isinstance(input_shape, list):
            shapes = [tuple(s)[1:] for s in input_shape]
        else:
            shapes = [tuple(input_shape)[1:]]
        return (None,) + self._output_shape(shapes)

    # ---- what it is ----------------------------------------------------

    @property
    def built(self):
        return self._outputs is not None

    def _need_built(self, what):
        if not self.built:
            raise ValueError("%s%s: the layer has not been built (add it to "
                             "a model with a known input shape, or call it "
                             "on a tensor)" % (self._where, what))

    @property
    def input(self):
        self._need_built("input")
        return self._inbound[0] if len(self._inbound) == 1 else \
            list(self._inbound)

    @property
    def output(self):
        self._need_built("output")
        return self._outputs

    @property
    def input_shape(self):
        self._need_built("input_shape")
        s = [t.shape for t in self._inbound]
        return s[0] if len(s) == 1 else s

    @property
    def output_shape(self):
        self._need_built("output_shape")
        return self._outputs.shape

    @property
    def trainable(self):
        return True

    def _weight_shapes(self):
        """[(suffix, shape)] of its weights, Keras' order and layout."""
        return []

    def count_params(self):
        self._need_built("count_params()")
        return int(sum(np.prod(s) for _, s in self._weight_shapes()))

    def get_weights(self):
        """The layer's weights as numpy arrays (kernel, bias), read from the
        compiled model; [] for layers without weights."""
        if not self._weight_shapes():
            return []
        if self._model is None:
            raise ValueError("%sget_weights(): the layer is not part of a "
                             "model; libvtpu keeps weights per model"
                             % self._where)
        return self._model._layer_get_weights(self)

    def set_weights(self, weights):
        if self._model is None:
            if not self._weight_shapes() and not weights:
                return
            raise ValueError("%sset_weights(): the layer is not part of a "
                             "model; libvtpu keeps weights per model"
                             % self._where)
        self._model._layer_set_weights(self, weights)

    @property
    def weights(self):
        return self.get_weights()

    def get_config(self):
        return {"name": self.name, "trainable": True, "dtype": "float32"}

    def __repr__(self):
        return "<%s name=%s>" % (type(self).__name__, self.name)

    # ---- lowering to libvtpu's graph -----------------------------------

    def _c_build(self, lib, g, nodes, ctx):
        """Add the layer to graph @g on input nodes @nodes; return its node
        (or its input's, for layers that are no node of their own)."""
        raise NotImplementedError

    # kind of layer, for the model's checks
    _softmax = False     # a standalone softmax (folded into a Dense)
    _identity = False    # no node of its own


def _graph_node(ret, layer):
    if ret < 0:
        raise ValueError("%slibvtpu's graph refused the layer (errno %d)"
                         % (layer._where, -ret))
    return ret


def _int_dtype(dtype):
    """Whether @dtype is an integer type (an Input of token ids)."""
    if dtype is None:
        return False
    try:
        return np.issubdtype(np.dtype(dtype), np.integer)
    except TypeError:
        return False


class InputLayer(Layer):
    """The model's input: images (h, w, c), (h, w) or vectors (features,);
    with an integer dtype, token ids (steps,) for Embedding layers."""

    _identity = True

    def __init__(self, input_shape=None, batch_size=None, dtype=None,
                 input_tensor=None, sparse=None, name=None, ragged=None,
                 type_spec=None, shape=None, batch_shape=None, **kwargs):
        where = "InputLayer: "
        for k, v in (("input_tensor", input_tensor), ("type_spec", type_spec)):
            if v is not None:
                raise ValueError("%s%s is not supported" % (where, k))
        for k, v in (("sparse", sparse), ("ragged", ragged)):
            if v:
                raise ValueError("%s%s=True is not supported: libvtpu takes "
                                 "dense arrays" % (where, k))
        if shape is not None:
            if input_shape is not None:
                raise ValueError("%sgive shape or input_shape, not both"
                                 % where)
            input_shape = shape
        if batch_shape is not None:
            if batch_shape[0] is not None:
                raise ValueError("%sbatch_shape=%r: a fixed batch size is not "
                                 "supported; pass fit(batch_size=...)"
                                 % (where, batch_shape))
            input_shape = tuple(batch_shape[1:])
        if input_shape is None:
            raise ValueError("%sshape is required (Input(shape=(28, 28, 1)))"
                             % where)
        if name is None:
            name = backend.unique_object_name("input", zero_based=False)
        tokens = _int_dtype(dtype)
        super().__init__(name=name, dtype=None if tokens else dtype,
                         batch_size=batch_size, **kwargs)
        self._input_shape_arg = _feature_shape(input_shape, "shape", where)
        if tokens:
            # token ids: sentences of one padded length, for Embedding
            if len(self._input_shape_arg) != 1:
                raise ValueError(
                    "%sshape=%r with dtype=%r: an input of token ids has "
                    "shape (steps,) (each example a padded sentence)"
                    % (where, tuple(self._input_shape_arg), dtype))
            if self._input_shape_arg[0] > MAX_STEPS:
                raise ValueError("%sshape=%r: at most %d steps"
                                 % (where, tuple(self._input_shape_arg),
                                    MAX_STEPS))
        self._inbound = []
        self._outputs = KerasTensor(
            self._input_shape_arg, self, [],
            dtype=np.dtype(dtype).name if tokens else "float32")

    @property
    def input_shape(self):
        return self._outputs.shape

    def _c_build(self, lib, g, nodes, ctx):
        return 0    # vtpu_model_create() made the input node


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None,
          tensor=None, ragged=None, type_spec=None, batch_shape=None,
          **kwargs):
    """A symbolic input of per-example @shape (channels last), for the
    functional API: x = Input(shape=(28, 28, 1)); y = Dense(10)(x) ..."""
    if shape is None and batch_shape is None:
        raise ValueError("Input: shape is required, e.g. Input(shape=(28, "
                         "28, 1))")
    return InputLayer(input_shape=shape, batch_size=batch_size, name=name,
                      dtype=dtype, sparse=sparse, input_tensor=tensor,
                      ragged=ragged, type_spec=type_spec,
                      batch_shape=batch_shape, **kwargs).output


class Dense(Layer):
    """act(x @ kernel + bias) on a vector (add Flatten() before it for
    images) or on each step of a sequence (its last axis); kernel
    glorot-uniform, bias zeros. activation None, 'relu', 'tanh', or
    'softmax' only in the last layer (libvtpu fuses it with the
    cross-entropy loss)."""

    _has_weights = True
    _c_kind = "dense"

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        where = "Dense: "
        self.units = check_int(units, "units", 1, MAX_NODE, where=where)
        self.activation = activations.get(activation, where=where)
        _check_weight_args(locals(), where, "dense layer")
        super().__init__(**kwargs)

    def _output_shape(self, shapes):
        (s,) = shapes
        if self._call_inputs and self._call_inputs[0]._seq:
            # a sequence: the last axis, each step alike (Keras' Dense on a
            # 3-D input, or TimeDistributed(Dense))
            return (s[0], self.units)
        if len(s) != 1:
            raise ValueError(
                "%sinput of shape %s: Keras applies Dense to the last axis "
                "of a %d-D input, libvtpu's dense layer to the whole "
                "example (or to each step of a sequence); add Flatten() "
                "before it" % (self._where, _shape_str((None,) + s),
                               len(s) + 1))
        return (self.units,)

    def _weight_shapes(self):
        n = self._inbound[0]._feature_shape[-1]
        return [("kernel", (n, self.units)), ("bias", (self.units,))]

    def _c_build(self, lib, g, nodes, ctx):
        act = self.activation
        if self in ctx.softmax_dense:
            act = "softmax"
        if self in getattr(ctx, "logits_dense", ()):
            act = None      # a sequence loss applies the softmax itself
        code = {None: lib.VTPU_ACT_NONE, "relu": lib.VTPU_ACT_RELU,
                "tanh": lib.VTPU_ACT_TANH,
                "softmax": lib.VTPU_ACT_SOFTMAX}[act]
        return _graph_node(lib.vtpu_graph_dense(g, nodes[0], self.units,
                                                code), self)

    def get_config(self):
        c = super().get_config()
        c.update(units=self.units,
                 activation=activations.serialize(self.activation))
        return c


def _c_padding(lib, padding):
    """A layer's padding as libvtpu's enum vtpu_padding."""
    return lib.VTPU_PAD_SAME if padding == "same" else lib.VTPU_PAD_VALID


def _window_out(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1 if size >= k else 0
    return -(-size // s)


class Conv2D(Layer):
    """2-D convolution over (h, w, c) images, channels last: filters of
    kernel_size, one stride for both axes, 'valid' or 'same' padding (as
    TensorFlow pads when the total padding is even), activation None or
    'relu'."""

    _has_weights = True
    _c_kind = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), groups=1,
                 activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        where = "Conv2D: "
        self.filters = check_int(filters, "filters", 1, MAX_NODE,
                                 where=where)
        self.kernel_size = check_pair(kernel_size, "kernel_size", where)
        self.strides = check_pair(strides, "strides", where)
        if self.strides[0] != self.strides[1]:
            raise ValueError("%sstrides=%r is not supported: libvtpu's "
                             "convolution takes one stride for both axes"
                             % (where, strides))
        self.padding = check_choice(padding, "padding", ("valid", "same"),
                                    where)
        _channels_last(data_format, where)
        if check_pair(dilation_rate, "dilation_rate", where) != (1, 1):
            raise ValueError("%sdilation_rate=%r is not supported: libvtpu's "
                             "convolution is not dilated"
                             % (where, dilation_rate))
        if check_int(groups, "groups", 1, where=where) != 1:
            raise ValueError("%sgroups=%r is not supported: libvtpu's "
                             "convolution is not grouped" % (where, groups))
        self.activation = activations.get(activation, where=where)
        if self.activation == "softmax":
            raise ValueError("%sactivation='softmax' is not supported: "
                             "libvtpu computes softmax only in the last "
                             "Dense layer, fused with the loss" % where)
        if self.activation == "tanh":
            raise ValueError("%sactivation='tanh' is not supported: "
                             "libvtpu's convolution computes None or "
                             "'relu'" % where)
        _check_weight_args(locals(), where, "convolution")
        super().__init__(**kwargs)

    def _output_shape(self, shapes):
        s = _image_input(shapes, self._where, "Conv2D")
        out = []
        stride = self.strides[0]
        for size, k, axis in ((s[0], self.kernel_size[0], "height"),
                              (s[1], self.kernel_size[1], "width")):
            o = _window_out(size, k, stride, self.padding)
            if o < 1:
                raise ValueError("%skernel_size=%r is larger than the "
                                 "input's %s %d (padding='valid')"
                                 % (self._where, self.kernel_size, axis,
                                    size))
            if self.padding == "same":
                total = max((o - 1) * stride + k - size, 0)
                if total % 2:
                    raise ValueError(
                        "%spadding='same' with kernel_size=%r, strides=%r "
                        "on a %s of %d pads %d pixels: libvtpu pads both "
                        "sides alike and cannot put the odd one on one side "
                        "as TensorFlow does; use an odd kernel size, other "
                        "strides or padding='valid'"
                        % (self._where, self.kernel_size, self.strides, axis,
                           size, total))
            out.append(o)
        shape = (out[0], out[1], self.filters)
        if int(np.prod(shape)) > MAX_NODE:
            raise ValueError("%soutput %s: more than 2^28 values per example"
                             % (self._where, _shape_str((None,) + shape)))
        return shape

    def _weight_shapes(self):
        c = self._inbound[0]._feature_shape[2]
        kh, kw = self.kernel_size
        return [("kernel", (kh, kw, c, self.filters)),
                ("bias", (self.filters,))]

    def _c_build(self, lib, g, nodes, ctx):
        act = lib.VTPU_ACT_RELU if self.activation == "relu" else \
            lib.VTPU_ACT_NONE
        pad = _c_padding(lib, self.padding)
        return _graph_node(lib.vtpu_graph_conv2d(
            g, nodes[0], self.filters, self.kernel_size[0],
            self.kernel_size[1], self.strides[0], pad, act), self)

    def get_config(self):
        c = super().get_config()
        c.update(filters=self.filters, kernel_size=self.kernel_size,
                 strides=self.strides, padding=self.padding,
                 activation=activations.serialize(self.activation))
        return c


Convolution2D = Conv2D


# kh * kw * depth_multiplier of a depthwise kernel (VTPU_DWCONV_MAX_WORK)
MAX_DEPTHWISE_WORK = 256


def _check_depthwise_args(args, where, kernels):
    """Refuse what libvtpu's depthwise and separable convolutions do not
    take (@args: the layer's locals(); @kernels: its kernels' argument
    prefixes, "depthwise" and "pointwise"): dilation, channels first,
    no bias, other initializers, regularizers, constraints."""
    _channels_last(args["data_format"], where)
    if check_pair(args["dilation_rate"], "dilation_rate", where) != (1, 1):
        raise ValueError("%sdilation_rate=%r is not supported: libvtpu's "
                         "depthwise convolution is not dilated"
                         % (where, args["dilation_rate"]))
    if args["use_bias"] is not True:
        raise ValueError("%suse_bias=%r is not supported: libvtpu's "
                         "depthwise and separable convolutions always have "
                         "a bias (set it to zeros with set_weights())"
                         % (where, args["use_bias"]))
    for k in kernels:
        _initializer(args[k + "_initializer"], k + "_initializer",
                     ("glorotuniform",), where, "kernels glorot-uniform")
    _initializer(args["bias_initializer"], "bias_initializer", ("zeros",),
                 where, "biases to zeros")
    for k in ["%s_%s" % (w, r) for w in kernels + ("bias",)
              for r in ("regularizer", "constraint")] + \
            ["activity_regularizer"]:
        if args[k] is not None:
            raise ValueError("%s%s=%r is not supported: libvtpu's training "
                             "step has no regularizers or constraints"
                             % (where, k, args[k]))


class _DepthwiseBase(Layer):
    """What DepthwiseConv2D and SeparableConv2D share: the window (one
    stride for both axes; 'same' pads as TensorFlow does, the odd pixel
    below and right) and the activation (None or 'relu')."""

    _has_weights = True

    def _window_args(self, kernel_size, strides, padding, activation,
                     mult, where):
        self.kernel_size = check_pair(kernel_size, "kernel_size", where)
        self.strides = check_pair(strides, "strides", where)
        if self.strides[0] != self.strides[1]:
            raise ValueError("%sstrides=%r is not supported: libvtpu's "
                             "depthwise convolution takes one stride for "
                             "both axes" % (where, strides))
        self.padding = check_choice(padding, "padding", ("valid", "same"),
                                    where)
        if self.kernel_size[0] * self.kernel_size[1] * mult > \
                MAX_DEPTHWISE_WORK:
            raise ValueError("%skernel_size=%r with depth_multiplier=%d: "
                             "libvtpu's depthwise kernel has at most %d "
                             "taps times filters per channel"
                             % (where, kernel_size, mult,
                                MAX_DEPTHWISE_WORK))
        self.activation = activations.get(activation, where=where)
        if self.activation not in (None, "linear", "relu"):
            raise ValueError("%sactivation=%r is not supported: libvtpu's "
                             "depthwise and separable convolutions compute "
                             "None or 'relu'" % (where, self.activation))

    def _out_hw(self, s):
        out = []
        for size, k, axis in ((s[0], self.kernel_size[0], "height"),
                              (s[1], self.kernel_size[1], "width")):
            o = _window_out(size, k, self.strides[0], self.padding)
            if o < 1:
                raise ValueError("%skernel_size=%r is larger than the "
                                 "input's %s %d (padding='valid')"
                                 % (self._where, self.kernel_size, axis,
                                    size))
            out.append(o)
        return out

    def _c_args(self, lib):
        act = lib.VTPU_ACT_RELU if self.activation == "relu" else \
            lib.VTPU_ACT_NONE
        pad = _c_padding(lib, self.padding)
        return pad, act

    def get_config(self):
        c = super().get_config()
        c.update(kernel_size=self.kernel_size, strides=self.strides,
                 padding=self.padding,
                 activation=activations.serialize(self.activation))
        return c


class DepthwiseConv2D(_DepthwiseBase):
    """Depthwise 2-D convolution over (h, w, c) images, channels last:
    depth_multiplier filters of kernel_size for each channel (output
    channel c * depth_multiplier + m), weights depthwise_kernel (kh, kw,
    c, depth_multiplier) and bias (c * depth_multiplier,)."""

    _c_kind = "depthwise_conv2d"

    def __init__(self, kernel_size, strides=(1, 1), padding="valid",
                 depth_multiplier=1, data_format=None, dilation_rate=(1, 1),
                 activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        where = "DepthwiseConv2D: "
        self.depth_multiplier = check_int(depth_multiplier,
                                          "depth_multiplier", 1,
                                          MAX_DEPTHWISE_WORK, where=where)
        self._window_args(kernel_size, strides, padding, activation,
                          self.depth_multiplier, where)
        _check_depthwise_args(locals(), where, ("depthwise",))
        super().__init__(**kwargs)

    def _output_shape(self, shapes):
        s = _image_input(shapes, self._where, "DepthwiseConv2D")
        out = self._out_hw(s)
        shape = (out[0], out[1], s[2] * self.depth_multiplier)
        if s[2] * self.depth_multiplier > MAX_STEPS or \
                int(np.prod(shape)) > MAX_NODE:
            raise ValueError("%soutput %s: more than 2^24 channels or 2^28 "
                             "values per example"
                             % (self._where, _shape_str((None,) + shape)))
        return shape

    def _weight_shapes(self):
        c = self._inbound[0]._feature_shape[2]
        kh, kw = self.kernel_size
        return [("depthwise_kernel", (kh, kw, c, self.depth_multiplier)),
                ("bias", (c * self.depth_multiplier,))]

    def _c_build(self, lib, g, nodes, ctx):
        pad, act = self._c_args(lib)
        return _graph_node(lib.vtpu_graph_depthwise_conv2d(
            g, nodes[0], self.kernel_size[0], self.kernel_size[1],
            self.strides[0], pad, self.depth_multiplier, act), self)

    def get_config(self):
        c = super().get_config()
        c.update(depth_multiplier=self.depth_multiplier)
        return c


class SeparableConv2D(_DepthwiseBase):
    """Separable 2-D convolution, channels last: a depthwise convolution
    (one filter of kernel_size per channel, no bias), then a pointwise 1x1
    convolution to filters channels with the bias and the activation.
    Weights: depthwise_kernel (kh, kw, c, 1), pointwise_kernel (1, 1, c,
    filters), bias (filters,)."""

    _c_kind = "separable_conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1),
                 padding="valid", data_format=None, dilation_rate=(1, 1),
                 depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        where = "SeparableConv2D: "
        self.filters = check_int(filters, "filters", 1, MAX_NODE,
                                 where=where)
        if check_int(depth_multiplier, "depth_multiplier", 1,
                     where=where) != 1:
            raise ValueError("%sdepth_multiplier=%r is not supported: "
                             "libvtpu's separable convolution has one "
                             "depthwise filter per channel (use "
                             "DepthwiseConv2D, then a 1x1 Conv2D)"
                             % (where, depth_multiplier))
        self._window_args(kernel_size, strides, padding, activation, 1,
                          where)
        _check_depthwise_args(locals(), where, ("depthwise", "pointwise"))
        super().__init__(**kwargs)

    def _output_shape(self, shapes):
        s = _image_input(shapes, self._where, "SeparableConv2D")
        out = self._out_hw(s)
        shape = (out[0], out[1], self.filters)
        if int(np.prod(shape)) > MAX_NODE or \
                out[0] * out[1] * s[2] > MAX_NODE:
            raise ValueError("%soutput %s: more than 2^28 values per example"
                             % (self._where, _shape_str((None,) + shape)))
        return shape

    def _weight_shapes(self):
        c = self._inbound[0]._feature_shape[2]
        kh, kw = self.kernel_size
        return [("depthwise_kernel", (kh, kw, c, 1)),
                ("pointwise_kernel", (1, 1, c, self.filters)),
                ("bias", (self.filters,))]

    def _c_build(self, lib, g, nodes, ctx):
        pad, act = self._c_args(lib)
        return _graph_node(lib.vtpu_graph_separable_conv2d(
            g, nodes[0], self.filters, self.kernel_size[0],
            self.kernel_size[1], self.strides[0], pad, act), self)

    def get_config(self):
        c = super().get_config()
        c.update(filters=self.filters, depth_multiplier=1)
        return c


SeparableConvolution2D = SeparableConv2D


def _pool_args(self, pool_size, strides, padding, data_format, name):
    """pool_size, strides (None: the window), padding of a 2-D pooling."""
    where = name + ": "
    self.pool_size = check_pair(pool_size, "pool_size", where)
    self.strides = self.pool_size if strides is None else \
        check_pair(strides, "strides", where)
    self.padding = check_choice(padding, "padding", ("valid", "same"),
                                where)
    _channels_last(data_format, where)
    # stride = the window (any shape, 'valid') is libvtpu's plain pooling;
    # otherwise one stride serves both axes
    self._plain = self.strides == self.pool_size and self.padding == "valid"
    if not self._plain and self.strides[0] != self.strides[1]:
        raise ValueError(
            "%sstrides=%r is not supported: libvtpu's pooling takes one "
            "stride for both axes (or strides equal to pool_size=%r with "
            "padding='valid')" % (where, strides, self.pool_size))


def _pool_out(self, shapes, name):
    s = _image_input(shapes, self._where, name)
    out = []
    for size, k, axis in ((s[0], self.pool_size[0], "height"),
                          (s[1], self.pool_size[1], "width")):
        stride = self.strides[0 if axis == "height" else 1]
        o = _window_out(size, k, stride, self.padding)
        if o < 1:
            raise ValueError("%spool_size=%r is larger than the input's "
                             "%dx%d" % (self._where, self.pool_size, s[0],
                                        s[1]))
        out.append(o)
    return (out[0], out[1], s[2])


class _Pooling2D(Layer):
    """What MaxPooling2D and AveragePooling2D share: their arguments,
    output shape and config."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid",
                 data_format=None, **kwargs):
        _pool_args(self, pool_size, strides, padding, data_format,
                   type(self).__name__)
        self._check_pool_args()
        super().__init__(**kwargs)

    def _check_pool_args(self):
        """A subclass's own limits on the arguments, before Layer's."""

    def _output_shape(self, shapes):
        return _pool_out(self, shapes, type(self).__name__)

    def get_config(self):
        c = super().get_config()
        c.update(pool_size=self.pool_size, strides=self.strides,
                 padding=self.padding)
        return c


class MaxPooling2D(_Pooling2D):
    """Max over pool_size windows moving by strides (None: the window),
    padding 'valid' or 'same' (TensorFlow's split); padding never wins,
    ties give the gradient to the first maximum in window order."""

    def _c_build(self, lib, g, nodes, ctx):
        if self._plain:
            return _graph_node(lib.vtpu_graph_maxpool(
                g, nodes[0], self.pool_size[0], self.pool_size[1]), self)
        return _graph_node(lib.vtpu_graph_maxpool2d(
            g, nodes[0], self.pool_size[0], self.pool_size[1],
            self.strides[0], _c_padding(lib, self.padding)), self)


class AveragePooling2D(_Pooling2D):
    """The mean of pool_size windows moving by strides (None: the window;
    one stride for both axes), padding 'valid' or 'same' (TensorFlow's
    split; padding is not counted in a window's mean)."""

    def _check_pool_args(self):
        if self.strides[0] != self.strides[1]:
            raise ValueError(
                "AveragePooling2D: strides=%r is not supported: libvtpu's "
                "average pooling takes one stride for both axes"
                % (self.strides,))

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_avgpool(
            g, nodes[0], self.pool_size[0], self.pool_size[1],
            self.strides[0], _c_padding(lib, self.padding)), self)


class GlobalAveragePooling2D(Layer):
    """The mean over height and width of each channel: a vector of the
    channels per example (Dense can follow directly)."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        where = "GlobalAveragePooling2D: "
        _channels_last(data_format, where)
        if keepdims:
            raise ValueError("%skeepdims=True is not supported: libvtpu's "
                             "global average pooling gives a vector per "
                             "example" % where)
        super().__init__(**kwargs)

    def _output_shape(self, shapes):
        s = _image_input(shapes, self._where, "GlobalAveragePooling2D")
        return (s[2],)

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_global_avgpool(g, nodes[0]), self)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D


class Flatten(Layer):
    """The example as a vector (no data moves)."""

    def __init__(self, data_format=None, **kwargs):
        if data_format not in (None, "channels_last"):
            raise ValueError("Flatten: data_format=%r is not supported: "
                             "libvtpu's images are channels_last (NHWC)"
                             % (data_format,))
        super().__init__(**kwargs)

    def _check_inputs(self, tensors):
        super()._check_inputs(tensors)
        if tensors[0]._seq:
            raise ValueError(
                "%scalled on the sequence %r: libvtpu flattens images only "
                "(Dense acts on a sequence's last axis without it)"
                % (self._where, tensors[0]._layer.name))

    def _output_shape(self, shapes):
        return (int(np.prod(shapes[0])),)

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_flatten(g, nodes[0]), self)


class Dropout(Layer):
    """While training, zero each value with probability rate and scale the
    rest by 1/(1-rate), new masks every step (seeded by compile(seed=));
    the identity in evaluate() and predict()."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        where = "Dropout: "
        self.rate = check_float(rate, "rate", 0.0, 1.0, max_open=True,
                                where=where)
        if noise_shape is not None:
            raise ValueError("%snoise_shape=%r is not supported: libvtpu "
                             "drops each value independently"
                             % (where, noise_shape))
        if seed is not None:
            raise ValueError("%sseed=%r is not supported: libvtpu draws the "
                             "masks from the model's seed (compile(seed=...))"
                             % (where, seed))
        super().__init__(**kwargs)
        self._identity = self.rate == 0.0

    def _c_build(self, lib, g, nodes, ctx):
        if self._identity:
            return nodes[0]
        return _graph_node(lib.vtpu_graph_dropout(g, nodes[0], self.rate),
                           self)

    def get_config(self):
        c = super().get_config()
        c.update(rate=self.rate)
        return c


class BatchNormalization(Layer):
    """Batch normalisation over the last axis (the channels of an NHWC
    image, the features of a vector): training normalises with the batch's
    mean and biased variance and updates moving_mean and moving_variance
    (moving = moving * momentum + batch * (1 - momentum)); evaluate() and
    predict() use the moving ones. Weights gamma, beta, moving_mean,
    moving_variance, Keras' order; the moving ones are not trained."""

    _has_weights = True
    _c_kind = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                 scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        where = "BatchNormalization: "
        if axis not in (-1, [-1], (-1,)):
            raise ValueError("%saxis=%r is not supported: libvtpu normalises "
                             "the last axis (axis=-1: an NHWC image's "
                             "channels, a vector's features)" % (where, axis))
        self.momentum = check_float(momentum, "momentum", 0.0, 1.0,
                                    where=where)
        self.epsilon = check_float(epsilon, "epsilon", 0.0, 3.4e38,
                                   min_open=True, where=where)
        wanted = dict(center=True, scale=True, beta_initializer="zeros",
                      gamma_initializer="ones",
                      moving_mean_initializer="zeros",
                      moving_variance_initializer="ones",
                      beta_regularizer=None, gamma_regularizer=None,
                      beta_constraint=None, gamma_constraint=None,
                      synchronized=False)
        args = locals()
        for k, v in wanted.items():
            if args[k] != v:
                raise ValueError("%s%s=%r is not supported: libvtpu's batch "
                                 "norm has Keras' defaults (%s=%r)"
                                 % (where, k, args[k], k, v))
        super().__init__(**kwargs)

    def _check_inputs(self, tensors):
        super()._check_inputs(tensors)
        if tensors[0]._seq:
            raise ValueError("%scalled on the sequence %r: libvtpu's batch "
                             "norm takes images and vectors"
                             % (self._where, tensors[0]._layer.name))

    def _weight_shapes(self):
        c = self._inbound[0]._feature_shape[-1]
        return [(w, (c,)) for w in ("gamma", "beta", "moving_mean",
                                    "moving_variance")]

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_batchnorm(g, nodes[0],
                                                    self.momentum,
                                                    self.epsilon), self)

    def get_config(self):
        c = super().get_config()
        c.update(axis=-1, momentum=self.momentum, epsilon=self.epsilon)
def _no_seed(where, seed):
    if seed is not None:
        raise ValueError("%sseed=%r is not supported: libvtpu draws from the "
                         "model's seed (compile(seed=...))" % (where, seed))


class RandomCrop(Layer):
    """While training, a height x width window of each image at offsets
    drawn anew every step; the centre window in evaluate() and predict().
    Only after the input (or other preprocessing layers): it has no
    gradient."""

    def __init__(self, height, width, seed=None, **kwargs):
        where = "RandomCrop: "
        for name, v in (("height", height), ("width", width)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError("%s%s=%r must be a positive int"
                                 % (where, name, v))
        _no_seed(where, seed)
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_random_crop(
            g, nodes[0], self.height, self.width), self)

    def get_config(self):
        c = super().get_config()
        c.update(height=self.height, width=self.width)
        return c


class RandomFlip(Layer):
    """While training, each image flipped left-right with probability 1/2,
    drawn anew every step; the identity in evaluate() and predict(). Only
    mode="horizontal"; only after the input or other preprocessing."""

    def __init__(self, mode="horizontal", seed=None, **kwargs):
        where = "RandomFlip: "
        if mode != "horizontal":
            raise ValueError("%smode=%r is not supported: libvtpu flips "
                             "horizontally only (mode=\"horizontal\")"
                             % (where, mode))
        _no_seed(where, seed)
        super().__init__(**kwargs)
        self.mode = mode

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_random_flip(g, nodes[0]), self)

    def get_config(self):
        c = super().get_config()
        c.update(mode=self.mode)
        return c


class Rescaling(Layer):
    """y = x * scale + offset; right after the input it costs nothing (it
    joins the conversion from bytes)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        where = "Rescaling: "
        self.scale = check_float(scale, "scale", where=where)
        self.offset = check_float(offset, "offset", where=where)
        super().__init__(**kwargs)

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_rescaling(
            g, nodes[0], self.scale, self.offset), self)

    def get_config(self):
        c = super().get_config()
        c.update(scale=self.scale, offset=self.offset)
        return c


class ReLU(Layer):
    """max(x, 0)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0,
                 **kwargs):
        where = "ReLU: "
        if max_value is not None:
            raise ValueError("%smax_value=%r is not supported: libvtpu's ReLU "
                             "is max(x, 0)" % (where, max_value))
        for k, v in (("negative_slope", negative_slope),
                     ("threshold", threshold)):
            if check_float(v, k, where=where) != 0.0:
                raise ValueError("%s%s=%r is not supported: libvtpu's ReLU "
                                 "is max(x, 0)" % (where, k, v))
        super().__init__(**kwargs)

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_relu(g, nodes[0]), self)


class Activation(Layer):
    """Activation('relu'), ('linear') or ('softmax'): softmax only as the
    model's last layer, right after a Dense layer without activation (the
    pair becomes libvtpu's dense layer with softmax, fused with the loss)."""

    def __init__(self, activation, **kwargs):
        self.activation = activations.get(activation, where="Activation: ")
        if self.activation == "tanh":
            raise ValueError("Activation: 'tanh' is not supported as a layer "
                             "of its own: libvtpu computes tanh inside Dense "
                             "(Dense(units, activation='tanh'))")
        super().__init__(**kwargs)
        self._softmax = self.activation == "softmax"
        self._identity = self.activation is None or self._softmax

    def _c_build(self, lib, g, nodes, ctx):
        if self._identity:
            return nodes[0]
        return _graph_node(lib.vtpu_graph_relu(g, nodes[0]), self)

    def get_config(self):
        c = super().get_config()
        c.update(activation=activations.serialize(self.activation))
        return c


class Softmax(Layer):
    """softmax over the last axis: only as the model's last layer, right
    after a Dense layer without activation (see Activation)."""

    _softmax = True
    _identity = True

    def __init__(self, axis=-1, **kwargs):
        if isinstance(axis, (list, tuple)) or check_int(
                axis, "axis", -1, where="Softmax: ") != -1:
            raise ValueError("Softmax: axis=%r is not supported: softmax is "
                             "over the last axis (-1)" % (axis,))
        super().__init__(**kwargs)

    def _c_build(self, lib, g, nodes, ctx):
        return nodes[0]


class Add(Layer):
    """The sum of two or more inputs of the same shape (residual
    connections): Add()([x, y])."""

    def _check_inputs(self, tensors):
        if len(tensors) < 2:
            raise ValueError("%sAdd takes a list of at least 2 inputs, not "
                             "%d" % (self._where, len(tensors)))
        if len(set(id(t) for t in tensors)) != len(tensors):
            raise ValueError("%sthe same tensor is added to itself: libvtpu's "
                             "add takes two different nodes" % self._where)
        shapes = [t._feature_shape for t in tensors]
        if any(s != shapes[0] for s in shapes):
            raise ValueError("%sinputs of different shapes %s: Add takes "
                             "inputs of one shape" % (
                                 self._where, ", ".join(
                                     _shape_str((None,) + s)
                                     for s in shapes)))

    def _c_build(self, lib, g, nodes, ctx):
        node = nodes[0]
        for other in nodes[1:]:
            node = _graph_node(lib.vtpu_graph_add(g, node, other), self)
        return node


def add(inputs, **kwargs):
    """Add()(inputs)."""
    return Add(**kwargs)(inputs)


# ---- sequences -------------------------------------------------------------


def _reject_kw(where, **kw):
    """Keras arguments of the sequence layers that must stay at their
    defaults: each given as (value, default, why)."""
    for name, (value, default, why) in kw.items():
        if value is default or (default is not None and not isinstance(
                value, np.ndarray) and value == default):
            continue
        raise ValueError("%s%s=%r is not supported: %s"
                         % (where, name, value, why))


def _sequence_input(t, where, layer):
    """@t must be a sequence of features (batch, steps, features)."""
    if not t._seq:
        raise ValueError(
            "%sinput %r of shape %s: %s takes a sequence (batch, steps, "
            "features): the output of Embedding, LSTM or GRU("
            "return_sequences=True), Attention or a Dense layer on one"
            % (where, t._layer.name, _shape_str(t.shape), layer))


def _no_call_args(where, mask=None, training=None):
    if mask is not None:
        raise ValueError(
            "%smask=... is not supported: libvtpu's masks come from the "
            "token input's padding (id 0), through Embedding(mask_zero="
            "True)" % where)
    if training is not None:
        raise ValueError("%straining=%r is not supported: libvtpu decides "
                         "(fit trains, evaluate and predict do not)"
                         % (where, training))


class Embedding(Layer):
    """Each token id replaced by its row of embeddings (input_dim,
    output_dim), uniform in +-0.05 at first (Keras' 'uniform'), called on
    an integer Input (steps,): a sequence (steps, output_dim).

    mask_zero=True marks id 0 as padding, as Keras: an Attention layer
    whose value (keys) comes from this sequence ignores the padded steps.
    The ids a model is given are checked: an id >= input_dim is a
    ValueError naming the input, example and step."""

    _has_weights = True
    _c_kind = "embedding"
    _takes_tokens = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False,
                 input_length=None, sparse=False, **kwargs):
        where = "Embedding: "
        self.input_dim = check_int(input_dim, "input_dim", 1, MAX_STEPS,
                                   where=where)
        self.output_dim = check_int(output_dim, "output_dim", 1, MAX_STEPS,
                                    where=where)
        if self.input_dim * self.output_dim > 1 << 36:
            raise ValueError("%s%d x %d embeddings: more than 2^36 values"
                             % (where, self.input_dim, self.output_dim))
        _initializer(embeddings_initializer, "embeddings_initializer",
                     ("uniform", "randomuniform"), where,
                     "embeddings uniform in +-0.05")
        _reject_kw(where, embeddings_regularizer=(
            embeddings_regularizer, None, "libvtpu's training step has no "
            "regularizers or constraints"),
            activity_regularizer=(activity_regularizer, None,
                                  "libvtpu's training step has no "
                                  "regularizers"),
            embeddings_constraint=(embeddings_constraint, None,
                                   "libvtpu's training step has no "
                                   "constraints"),
            sparse=(sparse, False, "libvtpu's gradients are dense"))
        if not isinstance(mask_zero, (bool, np.bool_)):
            raise TypeError("%smask_zero must be True or False, not %r"
                            % (where, mask_zero))
        self.mask_zero = bool(mask_zero)
        self.input_length = None if input_length is None else check_int(
            input_length, "input_length", 1, MAX_STEPS, where=where)
        super().__init__(**kwargs)

    def _check_inputs(self, tensors):
        if len(tensors) != 1:
            raise ValueError("%stakes one input, not %d"
                             % (self._where, len(tensors)))
        t = tensors[0]
        if t._dtype == "float32" or not isinstance(t._layer, InputLayer):
            raise ValueError(
                "%scalled on %r (dtype %s, shape %s): Embedding takes the "
                "token ids of an integer Input, Input(shape=(steps,), "
                "dtype='int32')" % (self._where, t._layer.name, t._dtype,
                                    _shape_str(t.shape)))
        if self.input_length is not None and \
                self.input_length != t._feature_shape[0]:
            raise ValueError("%sinput_length=%d, but the input has %d steps"
                             % (self._where, self.input_length,
                                t._feature_shape[0]))

    def _output_shape(self, shapes):
        return (shapes[0][0], self.output_dim)

    def _out_seq(self, tensors):
        return True

    def _out_mask(self, tensors):
        return tensors[0] if self.mask_zero else None

    def _weight_shapes(self):
        return [("embeddings", (self.input_dim, self.output_dim))]

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_embedding(
            g, nodes[0], self.input_dim, self.output_dim), self)

    def get_config(self):
        c = super().get_config()
        c.update(input_dim=self.input_dim, output_dim=self.output_dim,
                 mask_zero=self.mask_zero, input_length=self.input_length)
        return c


class _Recurrent(Layer):
    """What LSTM and GRU share: tanh and sigmoid, the gates side by side in
    the kernels, outputs [output, h(, c)], initial_state, unrolled over the
    sequence's steps in libvtpu's compiled step."""

    _has_weights = True
    _gates = 4                  # the gates' column blocks in the kernels
    _bias_rows = None           # GRU: 2, the input's bias and the recurrent
    _states = ("h", "c")
    _bias_what = "biases to zeros"

    # Keras' arguments of both, in order (after units); a subclass's own
    # follow the one that names them in its _own_args
    _ARGS = (("activation", "tanh"), ("recurrent_activation", "sigmoid"),
             ("use_bias", True), ("kernel_initializer", "glorot_uniform"),
             ("recurrent_initializer", "orthogonal"),
             ("bias_initializer", "zeros"), ("kernel_regularizer", None),
             ("recurrent_regularizer", None), ("bias_regularizer", None),
             ("activity_regularizer", None), ("kernel_constraint", None),
             ("recurrent_constraint", None), ("bias_constraint", None),
             ("dropout", 0.0), ("recurrent_dropout", 0.0),
             ("return_sequences", False), ("return_state", False),
             ("go_backwards", False), ("stateful", False),
             ("time_major", False), ("unroll", False))
    _own_args = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        P = inspect.Parameter
        params = [P("units", P.POSITIONAL_OR_KEYWORD)]
        for name, default in cls._ARGS:
            for n, d in ((name, default),) + cls._own_args.get(name, ()):
                params.append(P(n, P.POSITIONAL_OR_KEYWORD, default=d))
        params.append(P("kwargs", P.VAR_KEYWORD))
        # what inspect.signature() and help() show, and what __init__ binds
        cls.__signature__ = inspect.Signature(params)

    def _own_rejected(self, args):
        """The subclass's own arguments libvtpu refuses, for _reject_kw."""
        return {}

    def __init__(self, *args, **kwargs):
        """The arguments as the class's __signature__ (Keras')."""
        bound = type(self).__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        args = bound.arguments
        rejected = self._own_rejected(args)
        kind = type(self).__name__
        where = "%s: " % kind
        units, activation = args["units"], args["activation"]
        recurrent_activation = args["recurrent_activation"]
        use_bias = args["use_bias"]
        self.units = check_int(units, "units", 1, MAX_STEPS // self._gates,
                               where=where)
        if activations.get(activation, "activation", where) != "tanh":
            raise ValueError("%sactivation=%r is not supported: libvtpu's "
                             "%s computes tanh" % (where, activation, kind))
        if recurrent_activation != "sigmoid":
            raise ValueError("%srecurrent_activation=%r is not supported: "
                             "libvtpu's %s gates with 'sigmoid'"
                             % (where, recurrent_activation, kind))
        if use_bias is not True:
            raise ValueError("%suse_bias=%r is not supported: libvtpu's %s "
                             "always has a bias" % (where, use_bias, kind))
        _initializer(args["kernel_initializer"], "kernel_initializer",
                     ("glorotuniform",), where, "kernels glorot-uniform")
        _initializer(args["recurrent_initializer"], "recurrent_initializer",
                     ("orthogonal", "glorotuniform"), where,
                     "the recurrent kernel glorot-uniform (for 'orthogonal' "
                     "too)")
        _initializer(args["bias_initializer"], "bias_initializer",
                     ("zeros",), where, self._bias_what)
        why_reg = "libvtpu's training step has no regularizers or " \
            "constraints"
        for k in ("kernel_regularizer", "recurrent_regularizer",
                  "bias_regularizer", "activity_regularizer",
                  "kernel_constraint", "recurrent_constraint",
                  "bias_constraint"):
            rejected[k] = (args[k], None, why_reg)
        rejected.update(
            dropout=(args["dropout"], 0.0, "libvtpu's %s has no dropout "
                     "(add a Dropout layer before it)" % kind),
            recurrent_dropout=(args["recurrent_dropout"], 0.0,
                               "libvtpu's %s has no recurrent dropout"
                               % kind),
            go_backwards=(args["go_backwards"], False, "libvtpu's %s runs "
                          "forwards" % kind),
            stateful=(args["stateful"], False, "the state starts afresh "
                      "each batch (or from initial_state)"),
            time_major=(args["time_major"], False, "inputs are (batch, "
                        "steps, features)"))
        _reject_kw(where, **rejected)
        for k in ("return_sequences", "return_state", "unroll"):
            if not isinstance(args[k], (bool, np.bool_)):
                raise TypeError("%s%s must be True or False, not %r"
                                % (where, k, args[k]))
        self.return_sequences = bool(args["return_sequences"])
        self.return_state = bool(args["return_state"])
        super().__init__(**args["kwargs"])
        self._all_outputs = None

    def __call__(self, inputs, initial_state=None, mask=None, training=None,
                 **kwargs):
        where = self._where
        kind = type(self).__name__
        nst = len(self._states)
        states = "[%s]" % ", ".join(self._states)
        for k in kwargs:
            raise TypeError("%scalled with %s: %s takes inputs, "
                            "initial_state" % (where, k, kind))
        _no_call_args(where, mask, training)
        if isinstance(inputs, (list, tuple)):
            # Keras also takes [x, h, c] ([x, h] for a GRU)
            if len(inputs) == 1 + nst and initial_state is None:
                inputs, initial_state = inputs[0], list(inputs[1:])
            elif len(inputs) == 1:
                inputs = inputs[0]
            else:
                raise ValueError("%stakes one input (and initial_state=%s), "
                                 "not a list of %d" % (where, states,
                                                       len(inputs)))
        tensors = [inputs]
        if isinstance(initial_state, KerasTensor) and nst == 1:
            initial_state = [initial_state]
        if initial_state is not None:
            if not isinstance(initial_state, (list, tuple)) or \
                    len(initial_state) != nst:
                raise ValueError("%sinitial_state must be %s, %s of shape "
                                 "(batch, %d)"
                                 % (where, states, "two tensors" if nst > 1
                                    else "a tensor", self.units))
            tensors += list(initial_state)
        for t in tensors:
            if not isinstance(t, KerasTensor):
                raise TypeError(
                    "%scalled on %s: vtpu.keras layers are called on "
                    "symbolic tensors to build a model"
                    % (where, type(t).__name__))
        if self._inbound is not None:
            raise ValueError(
                "%sthe layer is used twice: shared layers are not supported "
                "by libvtpu's graph; create a second layer" % where)
        self._check_tensor_kinds(tensors)
        x = tensors[0]
        _sequence_input(x, where, kind)
        for what, t in zip(self._states, tensors[1:]):
            if t._seq or t._feature_shape != (self.units,):
                raise ValueError(
                    "%sinitial_state's %s %r has shape %s: it must be "
                    "(None, %d), a state of this %s's units (an encoder "
                    "%s's %s)" % (where, what, t._layer.name,
                                  _shape_str(t.shape), self.units, kind,
                                  kind, " or ".join(self._states)))
        steps = x._feature_shape[0]
        seq = KerasTensor((steps, self.units), self, tensors, 0, seq=True,
                          mask=x._mask)
        outs = [KerasTensor((self.units,), self, tensors, 1 + i)
                for i in range(nst)]
        first = seq if self.return_sequences else \
            KerasTensor((self.units,), self, tensors, 0)
        self._inbound = tensors
        self._all_outputs = [first] + outs
        self._outputs = self._all_outputs if self.return_state else first
        return self._outputs

    def _c_build_all(self, lib, g, nodes, ctx):
        """The C nodes of [output, h(, c)]: vtpu_graph_lstm() or
        vtpu_graph_gru() on the input's node and the initial states' (-1
        each without initial_state)."""
        from .._ffi import ffi
        out = ffi.new("struct vtpu_%s_nodes *" % self._c_kind)
        states = list(nodes[1:]) or [-1] * len(self._states)
        build = getattr(lib, "vtpu_graph_" + self._c_kind)
        _graph_node(build(g, nodes[0], self.units, *states, out), self)
        return [out.seq if self.return_sequences else out.h] + \
            [getattr(out, s) for s in self._states]

    def _output_shape(self, shapes):
        # compute_output_shape(): the first output's
        if self.return_sequences:
            return (shapes[0][0], self.units)
        return (self.units,)

    def _weight_shapes(self):
        d = self._inbound[0]._feature_shape[-1]
        u, g = self.units, self._gates
        bias = (g * u,) if self._bias_rows is None else \
            (self._bias_rows, g * u)
        return [("kernel", (d, g * u)), ("recurrent_kernel", (u, g * u)),
                ("bias", bias)]

    def get_config(self):
        c = super().get_config()
        c.update(units=self.units, return_sequences=self.return_sequences,
                 return_state=self.return_state)
        return c


class LSTM(_Recurrent):
    """Keras' LSTM (gates i, f, c, o; tanh and sigmoid; kernel (features,
    4 units), recurrent_kernel (units, 4 units), bias (4 units) with the
    forget gate's part 1 at first), unrolled over the sequence's steps in
    libvtpu's compiled step.

    lstm(x) -> the last h (units,); return_sequences=True: every step's h
    (steps, units); return_state=True: [output, h, c]. initial_state=[h, c]
    (two vectors of units, an encoder's final state) starts it there,
    otherwise at zeros. The recurrent kernel starts glorot-uniform, not
    orthogonal as in Keras. The steps are not masked: every step of the
    padded length runs (see docs/python.md)."""

    _c_kind = "lstm"
    _bias_what = "biases to zeros (the forget gate's to 1)"

    _own_args = {"bias_initializer": (("unit_forget_bias", True),)}

    def _own_rejected(self, args):
        return dict(unit_forget_bias=(args["unit_forget_bias"], True,
                                      "libvtpu starts the forget gate's "
                                      "bias at 1"))


class GRU(_Recurrent):
    """Keras' GRU with its default reset_after=True (gates z, r, h; tanh
    and sigmoid; kernel (features, 3 units), recurrent_kernel (units,
    3 units), bias (2, 3 units): the input's bias and the recurrent one),
    unrolled over the sequence's steps in libvtpu's compiled step:
    z = sigmoid(x W_z + b_iz + h U_z + b_rz), r likewise, h~ = tanh(x W_h +
    b_ih + r * (h U_h + b_rh)), h' = z * h + (1 - z) * h~.

    gru(x) -> the last h (units,); return_sequences=True: every step's h
    (steps, units); return_state=True: [output, h]. initial_state=h (or
    [h]: a vector of units, an encoder's final state) starts it there,
    otherwise at zeros. The recurrent kernel starts glorot-uniform, not
    orthogonal as in Keras. The steps are not masked: every step of the
    padded length runs (see docs/python.md)."""

    _c_kind = "gru"
    _gates = 3
    _bias_rows = 2
    _states = ("h",)

    _own_args = {"recurrent_dropout": (("seed", None),),
                 "unroll": (("reset_after", True), ("use_cudnn", "auto"))}

    def _own_rejected(self, args):
        use_cudnn = args["use_cudnn"]
        return dict(
            reset_after=(args["reset_after"], True, "libvtpu's GRU applies "
                         "the reset gate after the recurrent product "
                         "(Keras' TF2 default)"),
            seed=(args["seed"], None, "libvtpu's GRU has no dropout to seed"),
            use_cudnn=("auto" if use_cudnn is False else use_cudnn, "auto",
                       "libvtpu runs no cuDNN kernel"))

    def get_config(self):
        c = super().get_config()
        c.update(reset_after=True)
        return c


class Attention(Layer):
    """Luong's dot-product attention, Keras' Attention()([query, value]):
    for each step of query, softmax(query . value^T) over value's steps,
    then their weighted sum of value: a sequence as long as query, as
    wide as both (query and value have the same features; key is value).
    Value's steps that are padding (a mask from Embedding(mask_zero=True)
    on the token input it comes from) get no weight."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0,
                 causal=False, **kwargs):
        where = "Attention: "
        _reject_kw(where,
                   use_scale=(use_scale, False, "libvtpu's attention is "
                              "unscaled (Luong's dot product)"),
                   score_mode=(score_mode, "dot", "libvtpu's attention "
                               "scores with the dot product"),
                   dropout=(dropout, 0.0, "libvtpu's attention has no "
                            "dropout"),
                   causal=(causal, False, "libvtpu's attention is not "
                           "causal"))
        super().__init__(**kwargs)
        self._value_mask = None

    def __call__(self, inputs, mask=None, training=None,
                 return_attention_scores=False, use_causal_mask=False,
                 **kwargs):
        where = self._where
        for k in kwargs:
            raise TypeError("%scalled with %s: Attention takes [query, "
                            "value]" % (where, k))
        _no_call_args(where, mask, training)
        _reject_kw(where,
                   return_attention_scores=(
                       return_attention_scores, False,
                       "libvtpu's attention does not return its scores"),
                   use_causal_mask=(use_causal_mask, False,
                                    "libvtpu's attention is not causal"))
        if not isinstance(inputs, (list, tuple)) or \
                len(inputs) not in (2, 3):
            raise ValueError("%stakes a list [query, value] (or [query, "
                             "value, key] with key the value)" % where)
        if len(inputs) == 3:
            if inputs[2] is not inputs[1]:
                raise ValueError("%sa key other than the value is not "
                                 "supported: libvtpu's attention scores "
                                 "the value itself" % where)
            inputs = inputs[:2]
        return super().__call__(list(inputs))

    def _check_inputs(self, tensors):
        q, v = tensors
        _sequence_input(q, self._where, "Attention's query")
        _sequence_input(v, self._where, "Attention's value")
        if q._feature_shape[1] != v._feature_shape[1]:
            raise ValueError(
                "%squery %s and value %s: the dot product needs the same "
                "features" % (self._where, _shape_str(q.shape),
                              _shape_str(v.shape)))
        if v._feature_shape[0] > MAX_ATTENTION_STEPS:
            raise ValueError("%svalue of %d steps: libvtpu's attention "
                             "takes at most %d" % (
                                 self._where, v._feature_shape[0],
                                 MAX_ATTENTION_STEPS))
        self._value_mask = v._mask

    def _output_shape(self, shapes):
        return shapes[0]

    def _c_build(self, lib, g, nodes, ctx):
        mask = -1 if self._value_mask is None else \
            ctx.tensor_nodes[id(self._value_mask)]
        return _graph_node(lib.vtpu_graph_attention(g, nodes[0], nodes[1],
                                                    mask), self)


class BahdanauAttention(Layer):
    """Bahdanau's additive attention as the TensorFlow NMT tutorial's
    BahdanauAttention(units) layer: called on [query, value], it scores
    each query step q_t against each value step k_s as v . tanh(W1 q_t +
    W2 k_s), softmax over value's steps (padding masked as Attention's),
    then their weighted sum of value: a sequence as long as query, as wide
    as value. Unlike Keras' AdditiveAttention, the projections W1
    ("query_kernel", (query features, units)) and W2 ("key_kernel",
    (value features, units)), dense without bias, are the layer's own
    weights, with v ("scale", (units,)); query and value may differ in
    width (libvtpu's vtpu_graph_additive_attention())."""

    _c_kind = "additive_attention"

    def __init__(self, units, **kwargs):
        if isinstance(units, bool) or not isinstance(units, int) or \
                not 1 <= units <= MAX_ADDITIVE_UNITS:
            raise ValueError("BahdanauAttention: units=%r: libvtpu takes "
                             "1..%d" % (units, MAX_ADDITIVE_UNITS))
        super().__init__(**kwargs)
        self.units = units
        self._value_mask = None

    def __call__(self, inputs, **kwargs):
        where = self._where
        for k in kwargs:
            raise TypeError("%scalled with %s: BahdanauAttention takes "
                            "[query, value]" % (where, k))
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError("%stakes a list [query, value]" % where)
        return super().__call__(list(inputs))

    def _check_inputs(self, tensors):
        q, v = tensors
        _sequence_input(q, self._where, "BahdanauAttention's query")
        _sequence_input(v, self._where, "BahdanauAttention's value")
        for t, what in ((q, "query"), (v, "value")):
            if t._feature_shape[0] * self.units > MAX_ADDITIVE_WORK:
                raise ValueError(
                    "%s%s of %d steps with %d units: libvtpu takes steps "
                    "* units at most %d" % (
                        self._where, what, t._feature_shape[0], self.units,
                        MAX_ADDITIVE_WORK))
        if v._feature_shape[0] > MAX_ATTENTION_STEPS:
            raise ValueError("%svalue of %d steps: libvtpu's attention "
                             "takes at most %d" % (
                                 self._where, v._feature_shape[0],
                                 MAX_ATTENTION_STEPS))
        self._value_mask = v._mask

    def _output_shape(self, shapes):
        return (shapes[0][0], shapes[1][1])

    def _weight_shapes(self):
        q, v = self._inbound
        u = self.units
        return [("query_kernel", (q._feature_shape[-1], u)),
                ("key_kernel", (v._feature_shape[-1], u)),
                ("scale", (u,))]

    def get_config(self):
        c = super().get_config()
        c.update(units=self.units)
        return c

    def _c_build(self, lib, g, nodes, ctx):
        mask = -1 if self._value_mask is None else \
            ctx.tensor_nodes[id(self._value_mask)]
        return _graph_node(lib.vtpu_graph_additive_attention(
            g, nodes[0], nodes[1], mask, self.units), self)


class Concatenate(Layer):
    """Two inputs side by side along the last axis: two sequences of the
    same steps, or two vectors. Only Dense layers may take its output
    (libvtpu's dense layer reads the parts in place; nothing is copied)."""

    def __init__(self, axis=-1, **kwargs):
        if isinstance(axis, bool) or axis not in (-1,):
            raise ValueError("Concatenate: axis=%r is not supported: "
                             "libvtpu concatenates along the last axis (-1)"
                             % (axis,))
        super().__init__(**kwargs)

    def _check_inputs(self, tensors):
        if len(tensors) != 2:
            raise ValueError("%stakes a list of 2 inputs, not %d: libvtpu "
                             "concatenates two tensors" % (self._where,
                                                           len(tensors)))
        a, b = tensors
        ok = (a._seq and b._seq and a._feature_shape[0] ==
              b._feature_shape[0]) or \
            (not a._seq and not b._seq and len(a._feature_shape) == 1 and
             len(b._feature_shape) == 1)
        if not ok:
            raise ValueError(
                "%sinputs %s and %s: libvtpu concatenates two sequences of "
                "the same steps or two vectors" % (
                    self._where, _shape_str(a.shape), _shape_str(b.shape)))

    def _output_shape(self, shapes):
        a, b = shapes
        return a[:-1] + (a[-1] + b[-1],)

    def _c_build(self, lib, g, nodes, ctx):
        return _graph_node(lib.vtpu_graph_concat(g, nodes[0], nodes[1]),
                           self)

    def get_config(self):
        c = super().get_config()
        c.update(axis=-1)
        return c


def concatenate(inputs, axis=-1, **kwargs):
    """Concatenate(axis)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)


_SUPPORTED = ("Dense, Conv2D, DepthwiseConv2D, SeparableConv2D, "
              "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, "
              "Flatten, Dropout, BatchNormalization, ReLU, RandomCrop, RandomFlip, "
              "Rescaling, "
              "Activation, Softmax, Add, Embedding, LSTM, GRU, Attention, "
              "Concatenate, Input/InputLayer")


def __getattr__(name):
    # tf.keras.layers.BatchNormalization and friends: say what there is
    if name[:1].isupper():
        raise AttributeError(
            "vtpu.keras.layers has no %s: libvtpu's graph computes %s"
            % (name, _SUPPORTED))
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
