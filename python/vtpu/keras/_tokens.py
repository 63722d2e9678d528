# SPDX-License-Identifier: MIT
"""Functional models of token inputs (sequence models), over libvtpu's
vtpu_model_create_graph() and the *_tokens() calls of vtpu_model.h.

    src = keras.Input(shape=(TS,), dtype="int32")
    tgt = keras.Input(shape=(TT,), dtype="int32")
    x = layers.Embedding(VS, 32, mask_zero=True)(src)
    enc, h, c = layers.LSTM(128, return_sequences=True,
                            return_state=True)(x)
    dec = layers.LSTM(128, return_sequences=True)(
        layers.Embedding(VT, 32)(tgt), initial_state=[h, c])
    z = layers.Concatenate()([layers.Attention()([dec, enc]), dec])
    logits = layers.Dense(VT)(layers.Dense(128, activation="tanh")(z))
    model = keras.Model(inputs=[src, tgt], outputs=logits)

keras.Model(inputs=...) with an integer Input makes a TokenModel. Its
data: per input an integer array (n, steps) of ids, sentences
left-aligned and padded with 0 (vtpu.text's PAD); labels (n, steps) of
class ids for a sequence output, 0 for padding (those steps count for
nothing in the loss and the accuracy), or (n,) for a vector output.
decode() is greedy decoding or beam search (not in tf.keras).
"""
import time

import numpy as np

from .. import _ffi
from . import _data, _imagefolder
from ._cmodel import CModel
from .layers import _Recurrent, Dense, Embedding, InputLayer, KerasTensor, \
    _graph_node
from .models import Model, _Compiled, _pass_args, _reached, _split_at, \
    default_device
from . import optimizers

__all__ = ["TokenModel"]

ffi, lib = _ffi.ffi, _ffi.lib

MAX_TOKEN_INPUTS = 8
MAX_CLASSES = 1 << 16       # VTPU_XENT_MAX_CLASSES
MAX_ID = 2**32 - 1


def _outputs_of(layer):
    """Every output tensor of @layer (an LSTM has three, a GRU two)."""
    outs = getattr(layer, "_all_outputs", None)
    if outs:
        return outs
    return [layer._outputs]


class TokenModel(Model):
    """A functional Model whose inputs are token ids (see the module)."""

    def __init__(self, inputs=None, outputs=None, name=None, **kwargs):
        for k in kwargs:
            raise TypeError("Model: Keyword argument not understood: %r"
                            % (k,))
        self._init_common(name, "model")
        if isinstance(inputs, dict):
            raise ValueError("Model: inputs as a dict is not supported: "
                             "give a list")
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else \
            [inputs]
        for t in ins:
            if not isinstance(t, KerasTensor) or \
                    not isinstance(t._layer, InputLayer):
                raise TypeError("Model: inputs must come from vtpu.keras."
                                "Input(), not %r" % (t,))
            if t.dtype == "float32":
                raise ValueError(
                    "Model: input %r is float32 beside inputs of token ids: "
                    "libvtpu's graph has either one input of images or up "
                    "to %d of token ids" % (t._layer.name,
                                            MAX_TOKEN_INPUTS))
        if len(ins) > MAX_TOKEN_INPUTS:
            raise ValueError("Model: %d token inputs: libvtpu takes up to %d"
                             % (len(ins), MAX_TOKEN_INPUTS))
        if len(set(id(t) for t in ins)) != len(ins):
            raise ValueError("Model: an input is listed twice")
        if isinstance(outputs, (list, tuple)):
            if len(outputs) != 1:
                raise ValueError("Model: %d outputs: libvtpu's models have "
                                 "one output (one loss)" % len(outputs))
            outputs = outputs[0]
        if not isinstance(outputs, KerasTensor):
            raise TypeError("Model: outputs must be a vtpu.keras tensor "
                            "(from a layer call), not %r" % (outputs,))
        self._set_token_graph(ins, outputs)

    def _set_token_graph(self, ins, out):
        layers = {}
        for t in _reached(out):
            if isinstance(t._layer, InputLayer):
                if not any(t is i for i in ins):
                    raise ValueError(
                        "Model: graph disconnected: the outputs depend on "
                        "input %r, which is not in the model's inputs"
                        % t._layer.name)
                continue
            layers[id(t._layer)] = t._layer
        if id(out._layer) in (id(i._layer) for i in ins):
            raise ValueError("Model: the output is an input")
        # creation order is an order in which every layer's inputs exist
        order = sorted(layers.values(),
                       key=lambda l: _outputs_of(l)[0]._serial)
        ops = [(l, l._inbound, _outputs_of(l)[0]) for l in order]
        self._claim([i._layer for i in ins] + order)
        self._inputs = ins
        self._input, self._output, self._ops = ins[0], out, ops
        # the vocabulary each input's ids must stay below: its embeddings'
        self._vocab = []
        for t in ins:
            dims = [l.input_dim for l in order
                    if isinstance(l, Embedding) and l._inbound[0] is t]
            self._vocab.append(min(dims) if dims else MAX_ID + 1)

    # ---- what it is ------------------------------------------------------

    @property
    def layers(self):
        return [t._layer for t in self._inputs] + [op[0] for op in self._ops]

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def input(self):
        return self._inputs[0] if len(self._inputs) == 1 else \
            list(self._inputs)

    @property
    def input_shape(self):
        s = [t.shape for t in self._inputs]
        return s[0] if len(s) == 1 else s

    def _sequence_output(self):
        return self._output._seq

    # ---- what libvtpu computes ----------------------------------------

    def _check_loss(self, cfg):
        if not cfg.sparse:
            raise ValueError(
                "compile: loss=%r is not supported for a model of token "
                "inputs: its labels are class ids (use "
                "'sparse_categorical_crossentropy')" % (cfg.loss_name,))
        if cfg.ignore_class is not None and not self._sequence_output():
            raise ValueError(
                "compile: ignore_class=%r is for sequence outputs (label 0 "
                "is padding there); the output %r is one class per example"
                % (cfg.ignore_class, self._output._layer.name))

    # Model's words, for softmax computed in the loss
    _SOFTMAX_TEXT = dict(
        only="in the loss, after the last Dense layer",
        into="the loss",
        twice="",
        logits=", or give it activation='softmax'",
        end="libvtpu's models of token inputs end in a Dense layer "
        "(logits, or softmax), fused with the cross-entropy loss",
        last="in the loss")

    def _plan(self, from_logits):
        """The Dense layer whose outputs are the logits of the loss.
        ValueError where the model does not fit libvtpu's rules."""
        logits = self._softmax_logits(from_logits)
        classes = self._classes()
        if classes < 2 or classes > MAX_CLASSES:
            raise ValueError("the last layer %r has %d units: libvtpu's loss "
                             "takes 2 to %d classes" % (logits.name, classes,
                                                         MAX_CLASSES))
        return logits

    def _build_c(self, batch, transform):
        # not compiled yet (get_weights first): the loss the output implies
        last = self._output._layer
        logits_out = isinstance(last, Dense) and last.activation is None
        cfg = self._compiled or _Compiled(
            optimizers.Adam(), (True, logits_out,
                                "sparse_categorical_crossentropy"),
            [], default_device(), None, 0, 0)
        logits = self._plan(cfg.from_logits)
        g = lib.vtpu_graph_create()
        if g == ffi.NULL:
            raise MemoryError("vtpu_graph_create failed")
        try:
            cm, names, token_nodes = self._graph(g, logits)
        except BaseException:
            lib.vtpu_graph_destroy(g)
            raise
        self._compile_c(cm, cfg, names, batch, _data.RAW)
        self._c_tokens = token_nodes

    def _graph(self, g, logits):
        """Build the model on libvtpu graph @g; return (the libvtpu model
        owning it, the weights' names per layer, the token inputs'
        nodes)."""

        class Ctx:
            softmax_dense = set()
            logits_dense = {logits}     # the loss applies the softmax
            tensor_nodes = {}

        nodes = Ctx.tensor_nodes
        token_nodes = []
        for t in self._inputs:
            n = _graph_node(lib.vtpu_graph_tokens(g, t._feature_shape[0]),
                            t._layer)
            nodes[id(t)] = n
            token_nodes.append(n)
        for layer, ins, _ in self._ops:
            in_nodes = [nodes[id(t)] for t in ins]
            if isinstance(layer, _Recurrent):
                for t, n in zip(layer._all_outputs,
                                layer._c_build_all(lib, g, in_nodes, Ctx)):
                    nodes[id(t)] = n
            else:
                nodes[id(layer._outputs)] = layer._c_build(lib, g, in_nodes,
                                                           Ctx)
        out_t = self._loss_tensor()
        ret = lib.vtpu_graph_loss(g, nodes[id(out_t)])
        if ret < 0:
            raise ValueError("the output %r: libvtpu's loss refused it "
                             "(errno %d)" % (out_t._layer.name, -ret))
        # Everything that can raise comes first: from here on the model
        # owns @g, and the caller's cleanup must not destroy it again.
        names = self._weight_names()
        p = lib.vtpu_model_create_graph(g)
        if p == ffi.NULL:
            raise ValueError("vtpu_model_create_graph refused the graph (%s)"
                             % ffi.errno)
        return CModel.of(p), names, token_nodes

    def _ensure_c(self, batch=None, transform=None, what=""):
        """The libvtpu model, compiled for @batch (None: any)."""
        if self._c is None:
            self._build_c(batch or 32, None)
            return self._c
        self._set_batch(batch)
        return self._c

    # ---- data ------------------------------------------------------------

    def _token_arrays(self, x, what, allow_none=None):
        """@x (an array per input, in the model's inputs' order; one array
        for a model of one input) as uint32 (n, steps) arrays, checked: an
        integer array of the input's steps, ids below its embeddings'
        input_dim. @allow_none: the input whose array may be None (then
        zeros)."""
        if isinstance(x, dict):
            raise TypeError("%s as a dict is not supported: give a list of "
                            "arrays in the order of the model's inputs"
                            % what)
        xs = list(x) if isinstance(x, (list, tuple)) else [x]
        if len(xs) != len(self._inputs):
            raise ValueError(
                "%s: %d arrays for the model's %d inputs (%s)"
                % (what, len(xs), len(self._inputs),
                   ", ".join(t._layer.name for t in self._inputs)))
        out, n = [], None
        for k, (a, t, vocab) in enumerate(zip(xs, self._inputs,
                                               self._vocab)):
            where = "%s[%d] (input %r)" % (what, k, t._layer.name) \
                if len(xs) > 1 else "%s (input %r)" % (what, t._layer.name)
            if a is None:
                if k != allow_none:
                    raise ValueError("%s is None: the model reads it" % where)
                out.append(None)
                continue
            a = _int_array(a, where)
            steps = t._feature_shape[0]
            if a.ndim != 2 or a.shape[1] != steps:
                raise ValueError(
                    "%s has shape %s: the input takes (n, %d) token ids, "
                    "sentences padded with 0 to %d steps"
                    % (where, a.shape, steps, steps))
            if n is None:
                n = a.shape[0]
            elif a.shape[0] != n:
                raise ValueError("%s has %d examples, the first input %d"
                                 % (where, a.shape[0], n))
            _check_range(a, 0, vocab, where, "id",
                         "the vocabulary (input_dim) %d of its Embedding"
                         % vocab if vocab <= MAX_ID else "2^32")
            out.append(np.ascontiguousarray(a, dtype=np.uint32))
        if n is None or n == 0:
            raise ValueError("%s: no examples" % what)
        for k, a in enumerate(out):
            if a is None:
                out[k] = np.zeros((n, self._inputs[k]._feature_shape[0]),
                                  np.uint32)
        return out, n

    def _token_labels(self, y, n, what):
        """@y as uint32 labels: (n, steps) for a sequence output (0:
        padding), else (n,); each below the classes."""
        classes = self._classes()
        a = _int_array(y, what)
        if self._sequence_output():
            steps = self._output._feature_shape[0]
            if a.ndim == 3 and a.shape[2] == 1:
                a = a[:, :, 0]
            if a.shape != (n, steps):
                raise ValueError(
                    "%s has shape %s: the output %r takes labels (%d, %d), "
                    "a class id per step (0 for padding)"
                    % (what, a.shape, self._output._layer.name, n, steps))
        else:
            if a.ndim == 2 and a.shape[1] == 1:
                a = a[:, 0]
            if a.shape != (n,):
                raise ValueError("%s has shape %s: the output %r takes labels "
                                 "(%d,), a class id per example"
                                 % (what, a.shape, self._output._layer.name,
                                    n))
        _check_range(a, 0, classes, what, "label",
                     "the output's %d classes" % classes)
        return np.ascontiguousarray(a, dtype=np.uint32)

    def _dataset(self, xs, labels):
        ds = ffi.new("struct vtpu_token_dataset *")
        ds.n = xs[0].shape[0]
        for k, a in enumerate(xs):
            ds.inputs[k] = ffi.cast("uint32_t *", ffi.from_buffer(a))
        if labels is not None:
            ds.labels = ffi.cast("uint32_t *", ffi.from_buffer(labels))
        return ds

    # ---- fit's hooks -----------------------------------------------------

    def _check_dataset(self, ds, what, need_labels):
        raise TypeError("%s: an image folder dataset is not input for a "
                        "model of token inputs: pass token id arrays"
                        % what)

    def _fit_data(self, x, y, validation_data, split):
        xs, n = self._token_arrays(x, "x")
        labels = self._token_labels(y, n, "y")
        val = None
        if validation_data is not None:
            vx, vn = self._token_arrays(validation_data[0],
                                        "validation_data[0]")
            val = (vx, self._token_labels(validation_data[1], vn,
                                          "validation_data[1]"))
        elif split > 0:
            at = _split_at(n, split)
            # the last examples, before any shuffling, as Keras
            val = ([a[at:] for a in xs], labels[at:])
            xs, labels, n = [a[:at] for a in xs], labels[:at], at
        train = self._dataset(xs, labels)
        vds = self._dataset(*val) if val else None
        return n, None, train, vds, (xs, labels, val)

    def _fit_validation(self, fo, val_ds):
        fo.token_validation = val_ds

    def _c_fit(self, cm, train_ds, fo):
        return lib.vtpu_model_fit_tokens(cm.p, train_ds, fo)

    # ---- evaluate, predict, decode ---------------------------------------

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto",
                 sample_weight=None, steps=None, callbacks=None,
                 max_queue_size=10, workers=1, use_multiprocessing=False,
                 return_dict=False):
        """[loss, accuracy] (or the loss alone without metrics) on (x, y):
        means over the labels that are not padding (label 0) for a
        sequence output."""
        if _imagefolder.is_dataset(x):
            self._check_dataset(x, "evaluate", True)
        self._need_compiled("evaluate")
        batch_size, verbose = _pass_args(
            "evaluate", batch_size, verbose,
            (max_queue_size, workers, use_multiprocessing),
            sample_weight=(sample_weight, None,
                           "libvtpu's loss weighs every label alike"),
            steps=(steps, None, "evaluate covers the whole set"),
            callbacks=(callbacks, None, "evaluate runs inside libvtpu"))
        if x is None or y is None:
            raise ValueError("evaluate: x and y are required (numpy arrays)")
        xs, n = self._token_arrays(x, "x")
        labels = self._token_labels(y, n, "y")
        cm = self._ensure_c(None if self._c is not None else
                            (batch_size or 32), what="evaluate")
        ds = self._dataset(xs, labels)
        loss, acc = ffi.new("double *"), ffi.new("double *")
        t0 = time.monotonic()
        cm.check(lib.vtpu_model_evaluate_tokens(cm.p, ds, loss, acc),
                 "evaluate")
        elapsed = time.monotonic() - t0
        names = self._compiled.metric_names
        logs = [("loss", loss[0])] + [(k, acc[0]) for k in names]
        if verbose:
            self._print_pass(n, elapsed, logs)
        if return_dict:
            return dict(logs)
        return loss[0] if not names else [v for _, v in logs]

    def predict(self, x, batch_size=None, verbose="auto", steps=None,
                callbacks=None, max_queue_size=10, workers=1,
                use_multiprocessing=False):
        """Probabilities, float32 (n, steps, classes) for a sequence output
        (teacher forcing: each step sees the given ids of every input), or
        (n, classes); log-probabilities for a model compiled with
        from_logits=True, as Model.predict."""
        if _imagefolder.is_dataset(x):
            self._check_dataset(x, "predict", False)
        batch_size, verbose = _pass_args(
            "predict", batch_size, verbose,
            (max_queue_size, workers, use_multiprocessing),
            steps=(steps, None, "predict covers the whole array"),
            callbacks=(callbacks, None, "predict runs inside libvtpu"))
        xs, n = self._token_arrays(x, "x")
        cm = self._ensure_c(None if self._c is not None else
                            (batch_size or 32), what="predict")
        shape = (n,) + self._output._feature_shape
        probs = np.empty(shape, dtype=np.float32)
        keep = [ffi.cast("uint32_t *", ffi.from_buffer(a)) for a in xs]
        ptrs = ffi.new("uint32_t *[]", keep)
        t0 = time.monotonic()
        cm.check(lib.vtpu_model_predict_tokens(
            cm.p, ffi.cast("const uint32_t *const *", ptrs), n,
            ffi.cast("float *", ffi.from_buffer(probs))), "predict")
        if verbose:
            self._print_pass(n, time.monotonic() - t0, [])
        if self._from_logits():
            np.maximum(probs, np.finfo(np.float32).tiny, out=probs)
            np.log(probs, out=probs)
        return probs

    def decode(self, x, target, batch_size=None, beam_width=1,
               length_penalty=0.0, return_scores=False):
        """Greedy decoding or beam search (vtpu's own, not in tf.keras):
        the model's sequence output generated step by step, fed back as
        the next step's ids of the token input @target (the decoder's
        input, which training fed the shifted target: teacher forcing).

        Greedy (beam_width=1, the default) feeds back each step's most
        probable id, vtpu_model_decode(): the layers that do not depend on
        @target (the encoder) run once; a batch is one submission.

        Beam search (beam_width > 1, or length_penalty or return_scores
        given), vtpu_model_decode_beam_opts(): beam_width hypotheses per
        sentence, each extended by every id at the next step, the best
        kept; one that said vtpu.text.END is finished, kept with its score
        and not extended. A score is the sum of the natural logs of the
        ids' probabilities. It runs from the host on the prediction
        program, each step predicting the whole output again for the
        hypotheses not finished: up to steps * beam_width times greedy's
        work. Width 1 gives greedy's ids.

        x: an array per input as for predict; @target's may be None (it is
            not read: step 0 reads vtpu.text.START, id 1)
        target: the decoder's Input tensor (or its index in inputs, or its
            name); it must be as long as the output
        beam_width: hypotheses per sentence, 1 to 64 and at most the
            output's classes
        length_penalty: alpha of GNMT's length normalisation (hypotheses
            ranked by score / ((5 + length) / 6) ** alpha, as the TF NMT
            tutorial's length_penalty_weight); 0 (the default) ranks by
            the plain score
        return_scores: also return each sentence's score
        Returns int32 (n, steps): the generated ids (a sentence ends at the
        first vtpu.text.END, id 2; Vocabulary.decode stops there; beam
        search pads with 0 after it), and with return_scores float32 (n,)
        the scores (sums of log-probabilities, not normalised)."""
        if not self._sequence_output():
            raise ValueError("decode: the output %r is not a sequence"
                             % self._output._layer.name)
        k = self._target_index(target)
        if self._inputs[k]._feature_shape[0] != \
                self._output._feature_shape[0]:
            raise ValueError(
                "decode: target %r has %d steps, the output %d: decoding "
                "feeds each output step back as the next input step"
                % (self._inputs[k]._layer.name,
                   self._inputs[k]._feature_shape[0],
                   self._output._feature_shape[0]))
        from ._util import check_float, check_int
        if batch_size is not None:
            check_int(batch_size, "batch_size", 1, where="decode: ")
        beam_width = check_int(beam_width, "beam_width", 1,
                               lib.VTPU_BEAM_MAX_WIDTH, where="decode: ")
        length_penalty = check_float(length_penalty, "length_penalty", 0,
                                     where="decode: ")
        beam = beam_width > 1 or length_penalty or return_scores
        xs, n = self._token_arrays(x, "x", allow_none=k)
        cm = self._ensure_c(None if self._c is not None else
                            (batch_size or 32), what="decode")
        out = np.empty((n, self._output._feature_shape[0]), dtype=np.uint32)
        keep = [ffi.cast("uint32_t *", ffi.from_buffer(a)) for a in xs]
        ptrs = ffi.new("uint32_t *[]", keep)
        ins = ffi.cast("const uint32_t *const *", ptrs)
        outp = ffi.cast("uint32_t *", ffi.from_buffer(out))
        if not beam:
            cm.check(lib.vtpu_model_decode(cm.p, self._c_tokens[k], ins, n,
                                           outp), "decode")
            return out.astype(np.int32)
        opts = ffi.new("struct vtpu_beam_opts *")
        opts.sz = ffi.sizeof("struct vtpu_beam_opts")
        opts.width = int(beam_width)
        opts.alpha = float(length_penalty)
        scores = np.empty(n, dtype=np.float32)
        cm.check(lib.vtpu_model_decode_beam_opts(
            cm.p, self._c_tokens[k], ins, n, opts, outp,
            ffi.cast("float *", ffi.from_buffer(scores))), "decode")
        if return_scores:
            return out.astype(np.int32), scores
        return out.astype(np.int32)

    def _target_index(self, target):
        for k, t in enumerate(self._inputs):
            if target is t:
                return k
        if isinstance(target, str):
            for k, t in enumerate(self._inputs):
                if t._layer.name == target:
                    return k
        elif isinstance(target, (int, np.integer)) and \
                not isinstance(target, bool) and \
                0 <= target < len(self._inputs):
            return int(target)
        raise ValueError(
            "decode: target=%r is not one of the model's inputs (%s): give "
            "the decoder's Input tensor, its index or its name"
            % (target, ", ".join(t._layer.name for t in self._inputs)))


def _int_array(a, where):
    """@a as an integer numpy array (token ids or class labels)."""
    if isinstance(a, KerasTensor):
        raise TypeError("%s is a symbolic tensor: give numpy arrays" % where)
    arr = np.asarray(a)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype.kind == "f" and arr.size and np.all(
                np.isfinite(arr)) and np.all(arr == np.round(arr)):
            return arr.astype(np.int64)
        raise TypeError("%s must hold integer ids, not %s" % (where,
                                                            arr.dtype))
    return arr


def _check_range(a, lo, hi, where, what, limit):
    """Every value of @a in [lo, hi), else a ValueError naming the first
    that is not (example and step)."""
    if not a.size:
        return
    bad = (a < lo) | (a >= hi)
    if not bad.any():
        return
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    pos = "example %d" % at[0] + (", step %d" % at[1] if len(at) > 1 else "")
    v = int(a[at])
    if v < lo:
        raise ValueError("%s: %s %d at %s is negative" % (where, what, v,
                                                          pos))
    raise ValueError("%s: %s %d at %s is not below %s"
                     % (where, what, v, pos, limit))

