# SPDX-License-Identifier: MIT
"""vtpu.keras.models: Sequential and the functional Model, trained by
libvtpu.

A model is a graph of vtpu.keras.layers; compile() records how to train
(optimizer, loss, metrics, and vtpu's device, seed and threads). Keras'
compile() knows no batch size and no data, and libvtpu compiles its
programs for both, so the libvtpu model (struct vtpu_model) is made on
first need: fit, evaluate, predict, get/set_weights, save/load_weights,
device_info. Later batch sizes (vtpu_model_set_batch) and input
transforms (vtpu_model_set_input_scale) keep the weights and the
optimizer's state, as Keras does. compile() again keeps the weights and
starts the optimizer afresh, as Keras does.

The steps of an epoch run inside libvtpu: Python adds no per-step cost.
Models of token inputs (sequence models) are vtpu.keras._tokens'
TokenModel, which Model(inputs=...) makes when an input holds token ids.
"""
import errno
import os
import sys
import time
import warnings

import numpy as np

from .. import _ffi
from . import backend, callbacks as cbmod, losses, metrics as mmod, \
    optimizers
from . import _data, _imagefolder, distribute
from ._cmodel import CModel, StdoutFile, c_error, dataset, progress_line
from ._util import check_float, check_int
from .layers import Dense, InputLayer, KerasTensor, Layer, c_shape, \
    _shape_str

__all__ = ["Model", "Sequential"]

ffi, lib = _ffi.ffi, _ffi.lib

MAX_CLASSES = 256


def _reached(out):
    """Every tensor that @out depends on, and @out, once each."""
    seen, stack = set(), [out]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        yield t
        stack.extend(t._inputs)


def default_device():
    """$VTPU_DEVICE, else /dev/vtpu0 when it exists, else "cpu"."""
    env = os.environ.get("VTPU_DEVICE")
    if env:
        return env
    return "/dev/vtpu0" if os.path.exists("/dev/vtpu0") else "cpu"


def _verbose(v, what="verbose"):
    if v == "auto":
        return 1
    return check_int(v, what, 0, 2)


def _reject_args(where, **kw):
    """Keras arguments vtpu.keras cannot honour: each must be its default
    (given as (value, default, why))."""
    for name, (value, default, why) in kw.items():
        if value is default or (value is not None and default is not None
                                and not isinstance(value, np.ndarray)
                                and value == default):
            continue
        raise ValueError("%s: %s=%r is not supported: %s"
                         % (where, name, value, why))


def _for_generators(max_queue_size, workers, use_multiprocessing):
    """_reject_args() entries for Keras' arguments for generators."""
    return dict(max_queue_size=(max_queue_size, 10, "for generators"),
                workers=(workers, 1, "for generators"),
                use_multiprocessing=(use_multiprocessing, False,
                                     "for generators"))


def _pass_args(what, batch_size, verbose, generators, **rejected):
    """(batch_size, verbose) of evaluate or predict (@what), checked, and
    the arguments it cannot honour refused: @rejected (as _reject_args
    takes them), then @generators (max_queue_size, workers,
    use_multiprocessing)."""
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", 1,
                               where=what + ": ")
    verbose = _verbose(verbose)
    _reject_args(what, **rejected, **_for_generators(*generators))
    return batch_size, verbose


def _split_at(n, split):
    """Where validation_split=@split cuts @n examples."""
    at = int(n * (1.0 - split))
    if at < 1 or at >= n:
        raise ValueError("fit: validation_split=%r of %d examples leaves %d "
                         "for training and %d for validation"
                         % (split, n, at, n - at))
    return at


def _fmt(v):
    return ("%.4e" if 0 < abs(v) <= 1e-3 else "%.4f") % v


class _Compiled:
    """What compile() recorded."""

    def __init__(self, optimizer, loss, metrics, device, seed, threads,
                 gemm):
        self.optimizer = optimizer
        self.sparse, self.from_logits, self.loss_name = loss
        self.metric_names = metrics
        self.device = device
        self.seed = seed
        self.threads = threads
        self.gemm = gemm
        self.ignore_class = None
        self.fold_batch_norm = True
        self.cpu_mem_cap = 0


def _token_inputs(inputs):
    """Whether Model(inputs=...) names an Input of token ids."""
    ts = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    return any(isinstance(t, KerasTensor) and t.dtype != "float32"
               for t in ts)


class Model:
    """The functional model: Model(inputs=Input(...), outputs=tensor), one
    input, one output (a softmax over the classes, or logits with
    from_logits=True). See the module for how it trains.

    With inputs of token ids (Input(shape=(steps,), dtype="int32"), up to
    8), a model of sequences: see vtpu.keras._tokens."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and _token_inputs(kwargs.get(
                "inputs", args[0] if args else None)):
            from ._tokens import TokenModel
            cls = TokenModel
        return super().__new__(cls)

    def __init__(self, inputs=None, outputs=None, name=None, **kwargs):
        for k in kwargs:
            raise TypeError("Model: Keyword argument not understood: %r"
                            % (k,))
        self._init_common(name, "model")
        if inputs is None and outputs is None:
            if type(self) is not Model:
                raise NotImplementedError(
                    "subclassed models (a call() method in Python) cannot "
                    "be compiled by libvtpu: build a Sequential or a "
                    "functional Model(inputs, outputs)")
            raise TypeError("Model: inputs and outputs are required, as in "
                            "Model(inputs=Input(shape=...), outputs=y)")
        self._set_graph(self._one(inputs, "inputs"),
                        self._one(outputs, "outputs"))

    # ---- the graph -----------------------------------------------------

    def _init_common(self, name, prefix):
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError("name=%r must be a non-empty string" % (name,))
        self.name = name or backend.unique_object_name(prefix)
        self._input = None          # KerasTensor of the InputLayer
        self._output = None
        self._ops = []              # (layer, [input tensors], output)
        self._c = None              # CModel, made on first need
        self._c_batch = None
        self._c_names = {}          # layer -> its tensors' C names
        self._transform = None      # (scale, shift) set by data
        self._pending = None        # weights for the next C model
        self._compiled = None
        self.optimizer = None
        self.loss = None
        self.stop_training = False
        self.history = None
        self._fitting = False

    @staticmethod
    def _one(t, what):
        if isinstance(t, (list, tuple)):
            if len(t) != 1:
                raise ValueError(
                    "Model: %d %s: libvtpu's models have one input and one "
                    "output" % (len(t), what))
            t = t[0]
        if isinstance(t, dict):
            raise ValueError("Model: %s as a dict: libvtpu's models have one "
                             "input and one output" % what)
        if not isinstance(t, KerasTensor):
            raise TypeError("Model: %s must be a vtpu.keras tensor (from "
                            "Input() or a layer call), not %r" % (what, t))
        return t

    def _set_graph(self, inp, out):
        if not isinstance(inp._layer, InputLayer):
            raise ValueError("Model: inputs must come from vtpu.keras.Input()"
                             ", not from layer %r" % inp._layer.name)
        tensors = []
        for t in _reached(out):
            tensors.append(t)
            if not t._inputs and t is not inp:
                raise ValueError(
                    "Model: graph disconnected: %r is reached from the "
                    "outputs but is not the model's input %r (libvtpu's "
                    "models have one input)" % (t._layer.name,
                                                inp._layer.name))
        if not any(t is inp for t in tensors):
            raise ValueError("Model: the outputs do not depend on the input "
                             "%r" % inp._layer.name)
        tensors.sort(key=lambda t: t._serial)
        ops = [(t._layer, t._inputs, t) for t in tensors if t is not inp]
        self._claim([inp._layer] + [op[0] for op in ops])
        self._input, self._output, self._ops = inp, out, ops

    def _claim(self, layers):
        """Make @layers (the model's, inputs' first) this model's: each
        in no other model, their names unique."""
        names = {}
        for layer in layers:
            if layer._model is not None and layer._model is not self:
                raise ValueError(
                    "Model: layer %r belongs to model %r already: libvtpu "
                    "keeps weights per model (a layer cannot be shared "
                    "between models)" % (layer.name, layer._model.name))
            if layer.name in names:
                raise ValueError('Model: the name "%s" is used 2 times in '
                                 'the model: layer names must be unique'
                                 % layer.name)
            names[layer.name] = layer
        for layer in names.values():
            layer._model = self

    @property
    def layers(self):
        return [self._input._layer] + [op[0] for op in self._ops]

    def _need_built(self, what):
        if self._input is None:
            raise ValueError(
                "%s: the model has not been built: give the first layer an "
                "input_shape, add an InputLayer, call build(), or fit it on "
                "data" % what)

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self.layers[check_int(index, "index", -len(self.layers),
                                         len(self.layers) - 1)]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError("No such layer: %s. Existing layers are: %s."
                         % (name, [layer.name for layer in self.layers]))

    @property
    def inputs(self):
        return [self._input] if self._input is not None else None

    @property
    def outputs(self):
        return [self._output] if self._output is not None else None

    @property
    def input(self):
        return self._input

    @property
    def output(self):
        return self._output

    @property
    def input_shape(self):
        self._need_built("input_shape")
        return self._input.shape

    @property
    def output_shape(self):
        self._need_built("output_shape")
        return self._output.shape

    def _classes(self):
        return self._output._feature_shape[-1]

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            "calling a model (nesting it in another, or on data) is not "
            "supported: libvtpu compiles one flat graph; use predict() for "
            "data")

    # ---- what libvtpu computes ----------------------------------------

    # the words of _softmax_logits' errors: where libvtpu computes softmax
    _SOFTMAX_TEXT = dict(
        only="fused into the last Dense layer (with the cross-entropy loss)",
        into="that Dense layer",
        twice="the loss would apply softmax twice; ",
        logits=" (or CategoricalCrossentropy), or end the model in softmax "
        "(activation='softmax' or a Softmax layer): libvtpu's loss is "
        "softmax cross-entropy",
        end="libvtpu's models end in a Dense layer with softmax (fused with "
        "the cross-entropy loss), or one without activation and "
        "from_logits=True",
        last="in the last Dense layer, fused with the cross-entropy loss")

    def _softmax_logits(self, from_logits):
        """The Dense layer whose outputs are the logits of the loss's
        softmax: the last layer, or the one before a last Softmax layer.
        ValueError where the model computes softmax elsewhere, or
        from_logits does not fit the end of the model."""
        text = self._SOFTMAX_TEXT
        consumers = {}
        for layer, ins, out in self._ops:
            for t in ins:
                consumers[id(t)] = consumers.get(id(t), 0) + 1
        out = self._output
        last = out._layer
        if last._softmax:
            src = out._inputs[0]
            d = src._layer
            if not (isinstance(d, Dense) and d.activation is None):
                raise ValueError(
                    "%r (softmax) follows %r: libvtpu computes softmax only "
                    "%s, so a softmax must come right after a Dense layer "
                    "without activation" % (last.name, d.name, text["only"]))
            if consumers.get(id(src), 0) > 1:
                raise ValueError(
                    "the output of %r feeds %r (softmax) and other layers: "
                    "libvtpu fuses the softmax into %s"
                    % (d.name, last.name, text["into"]))
            if from_logits:
                raise ValueError(
                    "from_logits=True, but the model ends in softmax (%r): "
                    "%suse from_logits=False" % (last.name, text["twice"]))
            logits = d
        elif isinstance(last, Dense) and last.activation == "softmax":
            if from_logits:
                raise ValueError(
                    "from_logits=True, but the last layer %r has "
                    "activation='softmax': %suse from_logits=False"
                    % (last.name, text["twice"]))
            logits = last
        elif isinstance(last, Dense) and last.activation is None:
            if not from_logits:
                raise ValueError(
                    "the last layer %r has no activation: its outputs are "
                    "logits; compile with loss=SparseCategoricalCrossentropy"
                    "(from_logits=True)%s" % (last.name, text["logits"]))
            logits = last
        else:
            raise ValueError("the model ends in %r (%s): %s"
                             % (last.name, type(last).__name__, text["end"]))
        for layer, ins, t in self._ops:
            if t is out or layer is logits:
                continue
            if layer._softmax or (isinstance(layer, Dense) and
                                  layer.activation == "softmax"):
                raise ValueError(
                    "%r computes softmax but is not the model's last layer: "
                    "libvtpu computes softmax only %s"
                    % (layer.name, text["last"]))
        return logits

    def _plan(self, from_logits):
        """The layers as libvtpu's graph: which Dense layer becomes the
        dense-softmax output node (None: the last, with its own softmax).
        ValueError where the model does not fit libvtpu's rules (softmax
        only at the end, after a Dense)."""
        logits = self._softmax_logits(from_logits)
        last = self._output._layer
        classes = self._classes()
        if classes < 2 or classes > MAX_CLASSES:
            raise ValueError(
                "the last layer %r has %d units: libvtpu classifies into 2 "
                "to %d classes (its labels are bytes)"
                % (last.name, classes, MAX_CLASSES))
        if logits is last and last.activation == "softmax":
            return None
        return logits

    def _loss_tensor(self):
        """The tensor the loss reads: the output, or a last Softmax
        layer's input (the loss applies the softmax)."""
        out = self._output
        return out._inputs[0] if out._layer._softmax else out

    def _from_logits(self):
        return self._compiled.from_logits if self._compiled else False

    def _build_c(self, batch, transform):
        """Make and compile the libvtpu model."""
        cfg = self._compiled or _Compiled(
            optimizers.Adam(), (True, False, "sparse_categorical_crossentropy"),
            [], default_device(), None, 0, 0)
        fused = self._plan(cfg.from_logits)
        h, w, c = c_shape(self._input._feature_shape)
        cm = CModel(h, w, c)
        g = cm.graph()

        class Ctx:
            softmax_dense = {fused} if fused is not None else set()

        nodes = {id(self._input): 0}
        for layer, ins, out in self._ops:
            nodes[id(out)] = layer._c_build(lib, g, [nodes[id(t)]
                                                     for t in ins], Ctx)
        cm.set_output(nodes[id(self._loss_tensor())])
        self._compile_c(cm, cfg, self._weight_names(), batch, transform)

    def _weight_names(self):
        """Per layer with weights, the names libvtpu gives its weights:
        "<kind>/<weight>", the kind numbered from its second layer on
        ("dense_1/kernel")."""
        counts, names = {}, {}
        for layer, _, _ in self._ops:
            if layer._weight_shapes():
                prefix = layer._c_kind
                k = counts.get(prefix, 0)
                counts[prefix] = k + 1
                base = prefix if k == 0 else "%s_%d" % (prefix, k)
                names[layer] = ["%s/%s" % (base, s)
                                for s, _ in layer._weight_shapes()]
        return names

    def _compile_c(self, cm, cfg, names, batch, transform):
        """Compile @cm, the libvtpu model of this one, as compile() said;
        check that libvtpu named the weights of @names' layers as
        expected; make it the model's."""
        co = ffi.new("struct vtpu_compile_opts *")
        co.sz = ffi.sizeof("struct vtpu_compile_opts")
        dev = ffi.new("char[]", cfg.device.encode())
        cm.keep.append(dev)
        co.device = dev
        co.cpu_gemm = cfg.gemm
        co.threads = cfg.threads
        cfg.optimizer._c_opts(co, lib)
        co.batch = batch
        seed = cfg.seed if cfg.seed is not None else backend._seed
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        co.seed = seed
        co.input_scale = float(transform[0])
        co.input_shift = float(transform[1])
        co.no_bn_fold = 0 if getattr(cfg, "fold_batch_norm", True) else 1
        co.cpu_mem_cap = getattr(cfg, "cpu_mem_cap", 0)
        devices = getattr(cfg, "devices", None)
        if devices:
            devs = [ffi.new("char[]", d.encode()) for d in devices]
            arr = ffi.new("char *[]", devs)
            cm.keep.extend(devs + [arr])
            if getattr(cfg, "distributed", False):
                cm.compile_distributed(arr, len(devices), co)
            else:
                cm.compile_replicated(arr, len(devices), co)
        else:
            cm.compile(co)

        # the names libvtpu gave the weights are the ones counted above
        infos = cm.weight_infos()
        index = {n: (i, s) for i, (n, s) in enumerate(infos)}
        for layer, ns in names.items():
            for n, (_, shape) in zip(ns, layer._weight_shapes()):
                if n not in index or index[n][1] != tuple(shape):
                    raise RuntimeError("vtpu.keras: libvtpu named the weights"
                                       " %s, not as expected (%s)"
                                       % ([i[0] for i in infos], n))
        self._c, self._c_batch, self._c_names = cm, batch, names
        self._c_index = index
        self._c_transform = (np.float32(transform[0]),
                             np.float32(transform[1]))
        if cfg.optimizer is not None:
            cfg.optimizer._bind(self)
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._set_all(pending)

    def _ensure_c(self, batch=None, transform=None, what=""):
        """The libvtpu model for @batch (None: any) and input @transform
        (None: any)."""
        self._need_built(what)
        if self._c is None:
            self._build_c(batch or 32, transform if transform is not None
                          else (self._transform or _data.RAW))
            if transform is not None:
                self._transform = transform
            return self._c
        self._set_batch(batch)
        if transform is not None:
            t = (np.float32(transform[0]), np.float32(transform[1]))
            if t != self._c_transform:
                self._c.set_input_scale(float(t[0]), float(t[1]))
                self._c_transform = t
            self._transform = t
        return self._c

    def _set_batch(self, batch):
        """Run the libvtpu model at @batch (None: as it is)."""
        if batch is None or batch == self._c_batch:
            return
        if getattr(self._compiled, "devices", None):
            # replicas are compiled for one global batch: compile again,
            # keeping the weights (not the optimizer's moments)
            self._pending = self.get_weights()
            transform = self._c_transform
            self._c = None
            self._build_c(batch, transform)
            return
        self._c.set_batch(batch)
        self._c_batch = batch

    def _need_compiled(self, what):
        if self._compiled is None:
            raise RuntimeError("%s: you must compile your model before "
                               "training/testing. Use model.compile(optimizer"
                               ", loss)." % what)

    # ---- compile ---------------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, metrics=None,
                loss_weights=None, weighted_metrics=None, run_eagerly=None,
                steps_per_execution=None, jit_compile=None, device=None,
                seed=None, threads=None, gemm=None, fold_batch_norm=True,
                cpu_mem_cap=None, devices=None, **kwargs):
        """Keras' compile, plus where and how libvtpu trains:

        device: "/dev/vtpuN" or "cpu" (libvtpu's engine in user space);
            default $VTPU_DEVICE, else /dev/vtpu0 if it exists, else "cpu"
        seed: weight initialisation, shuffling and dropout masks (default:
            vtpu.keras.utils.set_random_seed()'s, else random)
        threads: cpu backend threads (default: one per CPU)
        gemm: cpu backend matrix products, "engine" (default) or
            "openblas"
        fold_batch_norm: evaluate and predict fold a BatchNormalization
            right after a Conv2D or Dense without activation into its
            weights (True, the default); False runs every batch norm as
            one (vtpu_compile_opts.no_bn_fold)
        cpu_mem_cap: device "cpu": the bytes of buffer memory the model may
            hold, as a device's mem_cap_mb (None: no cap); fit streams a
            training set that does not fit (vtpu_compile_opts.cpu_mem_cap)
        devices: data parallelism, one replica per device: a list of
            "/dev/vtpuN" and "cpu" (each "cpu" a backend of its own, of
            @threads workers, default the CPUs / the cpu replicas), or
            "all" (every /dev/vtpuN); default: the devices of the
            vtpu.keras.distribute strategy whose scope() is open, else one
            device (@device). fit's batch_size is the global batch, split
            evenly between the replicas (vtpu_model_compile_replicated())
        """
        for k in kwargs:
            raise TypeError("compile: Keyword argument not understood: %r"
                            % (k,))
        if loss_weights is not None:
            raise ValueError("compile: loss_weights=%r is not supported: one "
                             "output, one loss" % (loss_weights,))
        if weighted_metrics is not None:
            raise ValueError("compile: weighted_metrics=%r is not supported: "
                             "there are no sample weights"
                             % (weighted_metrics,))
        if run_eagerly:
            raise ValueError("compile: run_eagerly=True is not supported: "
                             "libvtpu runs compiled programs")
        if steps_per_execution not in (None, 1):
            raise ValueError("compile: steps_per_execution=%r is not "
                             "supported: libvtpu runs whole epochs per call "
                             "already" % (steps_per_execution,))
        if jit_compile is False:
            raise ValueError("compile: jit_compile=False is not supported: "
                             "libvtpu always compiles")
        if optimizer == "rmsprop":
            raise ValueError(
                "compile: optimizer='rmsprop' (Keras' default) is not "
                "supported: libvtpu's training step has Adam and SGD; pass "
                "optimizer='adam' or 'sgd'")
        opt = optimizers.get(optimizer)
        if loss is None:
            raise ValueError("compile: loss is required "
                             "('sparse_categorical_crossentropy' or "
                             "'categorical_crossentropy')")
        lossinfo = losses.get(loss)
        if metrics is None:
            metrics = []
        if isinstance(metrics, (str, mmod.Metric)) or callable(metrics):
            metrics = [metrics]
        if isinstance(metrics, dict) or not isinstance(metrics,
                                                       (list, tuple)):
            raise TypeError("compile: metrics must be a list, not %r"
                            % (metrics,))
        names = []
        for m in metrics:
            n = mmod.get(m)
            if n not in names:
                names.append(n)
        strategy = distribute.get_strategy()
        if devices is not None:
            if device is not None:
                raise ValueError("compile: device=%r and devices=%r: name "
                                 "one device, or the replicas' devices"
                                 % (device, devices))
            devices = distribute.check_devices(devices, "compile: ")
        elif strategy is not None and device is None:
            devices = list(strategy.devices)
            if threads is None:
                threads = strategy.threads_per_replica
        distributed = (devices is not None and strategy is not None and
                       getattr(strategy, "distributed", False))
        if devices is not None:
            device = devices[0]
            ncpu = devices.count("cpu")
            if threads is None and ncpu > 1:
                # the CPUs shared out between the cpu replicas, which run
                # at once: not one worker per CPU each
                threads = max(1, len(os.sched_getaffinity(0)) // ncpu)
            if len(devices) == 1 and not distributed:
                devices = None
        if device is None:
            device = default_device()
        if not isinstance(device, str) or not device or "\0" in device:
            raise TypeError("compile: device must be '/dev/vtpuN' or 'cpu', "
                            "not %r" % (device,))
        if seed is not None:
            seed = check_int(seed, "seed", 0, 2**64 - 1, where="compile: ")
        threads = 0 if threads is None else check_int(
            threads, "threads", 0, 4096, where="compile: ")
        if gemm is None:
            gemm = 0
        else:
            g = {"engine": 0, "openblas": 1}.get(gemm)
            if g is None:
                raise ValueError("compile: gemm=%r must be 'engine' or "
                                 "'openblas'" % (gemm,))
            gemm = g
        if fold_batch_norm not in (True, False):
            raise TypeError("compile: fold_batch_norm=%r must be True or "
                            "False" % (fold_batch_norm,))
        cfg = _Compiled(opt, lossinfo, names, device, seed, threads, gemm)
        cfg.ignore_class = getattr(loss, "ignore_class", None)
        cfg.fold_batch_norm = bool(fold_batch_norm)
        cfg.devices = devices
        cfg.distributed = distributed
        if cpu_mem_cap is not None:
            cfg.cpu_mem_cap = check_int(cpu_mem_cap, "cpu_mem_cap", 1,
                                        2**64 - 1, where="compile: ")
            if device != "cpu" or devices is not None:
                raise ValueError("compile: cpu_mem_cap is for device='cpu' "
                                 "(a device's cap is its module parameter "
                                 "mem_cap_mb), not %r" % (device,))
        if self._fitting:
            raise RuntimeError("compile: the model is being trained (called "
                               "from a callback?)")
        if self._input is not None:
            self._check_loss(cfg)
            self._plan(cfg.from_logits)     # raise now, as Keras would
        if self._c is not None:
            # Keras: compiling again keeps the weights, not the optimizer
            self._pending = self.get_weights()
            self._c = None
        self._compiled = cfg
        self.optimizer = opt
        opt._bind(self)
        self.loss = loss

    def _check_loss(self, cfg):
        if cfg.ignore_class is not None:
            raise ValueError(
                "compile: ignore_class=%r is not supported for a model of "
                "images: every label is a class (sequence outputs ignore "
                "padding, label 0)" % (cfg.ignore_class,))

    @property
    def metrics_names(self):
        if self._compiled is None:
            return []
        return ["loss"] + list(self._compiled.metric_names)

    # ---- data ------------------------------------------------------------

    def _maybe_build(self, x):
        """Sequential models without an input shape are built from the
        first data they see."""

    def _images(self, x, what, fixed):
        self._maybe_build(x)
        self._need_built(what)
        shape = self._input._feature_shape
        arr, t = _data.images(x, shape, what, self._transform, fixed)
        return (arr, c_shape(shape)), t

    def _labels(self, y, n, what):
        return _data.labels(y, n, self._classes(), not self._compiled.sparse,
                            what)

    # ---- fit -------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto",
            callbacks=None, validation_split=0.0, validation_data=None,
            shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1,
            max_queue_size=10, workers=1, use_multiprocessing=False):
        """Train for @epochs on numpy arrays (see vtpu.keras._data for the
        input rules), or on an ImageDataset (image_dataset_from_directory:
        streamed by libvtpu, vtpu_model_fit_stream(); its batch size and
        shuffle are the dataset's, and files that cannot be decoded are
        RuntimeWarnings); returns a History."""
        self._need_compiled("fit")
        if self._fitting:
            raise RuntimeError("fit: the model is being trained already "
                               "(fit called from a callback?)")
        where = "fit"
        batch = 32 if batch_size is None else check_int(
            batch_size, "batch_size", 1, where="fit: ")
        epochs = check_int(epochs, "epochs", 0, where="fit: ")
        verbose = _verbose(verbose)
        freq = validation_freq
        if isinstance(freq, (list, tuple, set)):
            raise ValueError("fit: validation_freq=%r is not supported: "
                             "libvtpu validates every n-th epoch (an "
                             "integer)" % (freq,))
        freq = check_int(freq, "validation_freq", 1, where="fit: ")
        steps = None if steps_per_epoch is None else check_int(
            steps_per_epoch, "steps_per_epoch", 1, where="fit: ")
        if initial_epoch != 0:
            check_int(initial_epoch, "initial_epoch", 0, where="fit: ")
            raise ValueError("fit: initial_epoch=%r is not supported: fit "
                             "starts at epoch 0 (the optimizer's state "
                             "carries over between fit() calls)"
                             % (initial_epoch,))
        if shuffle not in (True, False):
            raise ValueError("fit: shuffle=%r is not supported: True or False"
                             % (shuffle,))
        _reject_args(
            where,
            class_weight=(class_weight, None,
                          "libvtpu's loss weighs every example alike"),
            sample_weight=(sample_weight, None,
                           "libvtpu's loss weighs every example alike"),
            validation_steps=(validation_steps, None,
                              "validation covers the validation set"),
            validation_batch_size=(validation_batch_size, None,
                                   "validation runs at the training batch "
                                   "size (the results do not depend on "
                                   "it)"),
            **_for_generators(max_queue_size, workers, use_multiprocessing))
        split = check_float(validation_split, "validation_split", 0.0, 1.0,
                            max_open=True, where="fit: ")
        cbs = cbmod.check(callbacks)
        stream = None
        if _imagefolder.is_dataset(x):
            stream = x
            if y is not None:
                raise ValueError("fit: y is not supported when x is a "
                                 "dataset (its batches hold the labels)")
            if batch_size is not None:
                raise ValueError("fit: batch_size is not supported when x "
                                 "is a dataset (batches of the dataset's "
                                 "batch_size)")
            if split:
                raise ValueError(
                    "fit: validation_split is not supported when x is a "
                    "dataset: pass validation_data, e.g. the validation "
                    "side of image_dataset_from_directory(subset=...)")
            batch = x.batch_size
            shuffle = x.shuffle
        elif x is None or y is None:
            raise ValueError("fit: x and y are required (numpy arrays)")

        # data first: nothing changes if it is refused
        if validation_data is not None and \
                not _imagefolder.is_dataset(validation_data):
            if not isinstance(validation_data, (list, tuple)) or \
                    len(validation_data) not in (2, 3):
                raise ValueError("fit: validation_data must be a tuple "
                                 "(x_val, y_val)")
            if len(validation_data) == 3 and validation_data[2] is not None:
                raise ValueError("fit: validation_data's sample weights are "
                                 "not supported")
        if stream is not None:
            n, t, train_ds, val_ds, keep = self._fit_stream_data(
                stream, validation_data)
        else:
            n, t, train_ds, val_ds, keep = self._fit_data(
                x, y, validation_data, split)
        # a batch larger than the data set is one batch of all of it (as
        # Keras); compiled for that, not for the larger size
        batch = min(batch, n)
        cm = self._ensure_c(batch, t, "fit")
        val = val_ds is not None

        history = cbmod.History()
        cbs = cbs + [history]
        total = -(-n // batch)
        if steps:
            total = min(total, steps)
        params = {"verbose": verbose, "epochs": epochs, "steps": total}
        for cb in cbs:
            cb.set_model(self)
            cb.set_params(params)
        self.history = history
        self.stop_training = False
        run = _Run(self, cm, cbs, verbose, epochs, total, freq,
                   val)
        for cb in cbs:
            cb.on_train_begin()
        if epochs == 0:
            for cb in cbs:
                cb.on_train_end()
            return history

        fo = ffi.new("struct vtpu_fit_opts *")
        fo.sz = ffi.sizeof("struct vtpu_fit_opts")
        fo.epochs = epochs
        fo.no_shuffle = not shuffle
        if val_ds is not None:
            self._fit_validation(fo, val_ds)
        fo.max_steps = steps or 0
        fo.validation_freq = freq
        fo.on_epoch = run.on_epoch
        if run.begin_hooks:
            fo.lr_schedule = run.lr_schedule
        out = StdoutFile() if verbose == 1 else None
        if out is not None and out.f is not None:
            fo.progress = out.f
            run.out = out
        else:
            run.own_lines = verbose > 0
        self._fitting = True
        try:
            if stream is not None:
                ret = lib.vtpu_model_fit_stream(cm.p, train_ds, fo)
            else:
                ret = self._c_fit(cm, train_ds, fo)
        finally:
            self._fitting = False
            if out is not None:
                out.close()
            sys.stdout.flush()
            if stream is not None:
                stream._src.warn()
        # vtpu's: whether libvtpu streamed the training set (an image
        # folder, or arrays over compile(cpu_mem_cap=)'s or the device's
        # memory) through a ring of device buffers
        history.streamed = run.streamed
        if run.skipped:
            warnings.warn("fit: %d examples of %d epochs came from files that"
                          " could not be decoded (each replaced by another "
                          "good example of its read)" % (run.skipped,
                                                         run.epochs_done),
                          RuntimeWarning, stacklevel=2)
        # the arrays train_ds and val_ds point into lived until here
        del keep
        if run.error is not None:
            raise run.error
        if ret:
            raise c_error(ret, "fit: " + cm.error())
        for cb in cbs:
            cb.on_train_end(run.last_logs)
        return history

    def _fit_data(self, x, y, validation_data, split):
        """fit's data as libvtpu's datasets: (examples, input transform,
        training set, validation set or None, the arrays they point
        into)."""
        images, t = self._images(x, "x", fixed=False)
        n = images[0].shape[0]
        labels = self._labels(y, n, "y")
        val = None
        if _imagefolder.is_dataset(validation_data):
            self._check_dataset(validation_data, "fit: validation_data",
                                True)
            validation_data = self._dataset_arrays(validation_data,
                                                   "validation_data")
        if validation_data is not None:
            saved, self._transform = self._transform, t
            try:
                vx, _ = self._images(validation_data[0],
                                     "validation_data[0]", fixed=True)
            finally:
                self._transform = saved
            vy = self._labels(validation_data[1], vx[0].shape[0],
                              "validation_data[1]")
            val = (vx, vy)
        elif split > 0:
            at = _split_at(n, split)
            # the last examples, before any shuffling, as Keras
            val = ((images[0][at:], images[1]), labels[at:])
            images = (images[0][:at], images[1])
            labels = labels[:at]
            n = at
        classes = self._classes()
        train_ds = dataset(images, labels, classes)
        val_ds = dataset(val[0], val[1], classes) if val else None
        return n, t, train_ds, val_ds, (images, labels, val)

    def _fit_validation(self, fo, val_ds):
        fo.validation = val_ds

    # ---- image folders (vtpu.keras._imagefolder) -------------------------

    def _check_dataset(self, ds, what, need_labels):
        """@ds against the model: its image shape, its labels for the
        loss; a Sequential without an input shape is built for it."""
        if self._input is None and getattr(self, "_pending_layers", None):
            self.build(ds.element_shape)
            if self._compiled is not None:
                self._plan(self._compiled.from_logits)
        self._need_built(what)
        want = c_shape(self._input._feature_shape)
        if tuple(want) != tuple(ds._src.shape):
            raise ValueError("%s: the dataset's images are %s, the model "
                             "takes %s" % (what, "x".join(
                                 map(str, ds._src.shape)), _shape_str(
                                     self._input.shape)))
        if not need_labels:
            return
        if ds.label_mode is None:
            raise ValueError("%s: the dataset has no labels (label_mode="
                             "None)" % what)
        if (ds.label_mode == "categorical") == self._compiled.sparse:
            raise ValueError(
                "%s: the dataset's label_mode=%r does not fit the loss %r "
                "('categorical' goes with categorical_crossentropy, 'int' "
                "and 'binary' with sparse_categorical_crossentropy)"
                % (what, ds.label_mode, self._compiled.loss_name))
        if len(ds.class_names) > self._classes():
            raise ValueError("%s: the dataset has %d classes, the model's "
                             "last layer %d units" % (
                                 what, len(ds.class_names), self._classes()))

    def _dataset_arrays(self, ds, what):
        """All of @ds, in its order, as (uint8 images, uint8 labels)."""
        xs, ys = [], []
        for images, labels in ds._chunks(np.arange(ds.num_examples,
                                                   dtype=np.uint32)):
            xs.append(images)
            ys.append(labels.astype(np.uint8))
        return np.concatenate(xs), np.concatenate(ys)

    def _fit_stream_data(self, stream, validation_data):
        """fit's data for an ImageDataset: _fit_data's, the training set
        the struct vtpu_stream."""
        self._check_dataset(stream, "fit", True)
        t = _data.RAW       # the pixels as Keras' datasets yield them
        val = None
        if validation_data is not None:
            if _imagefolder.is_dataset(validation_data):
                self._check_dataset(validation_data, "fit: validation_data",
                                    True)
                vx, vy = self._dataset_arrays(validation_data,
                                              "validation_data")
            else:
                vx, vy = validation_data[0], validation_data[1]
            saved, self._transform = self._transform, t
            try:
                vi, _ = self._images(vx, "validation_data[0]", fixed=True)
            finally:
                self._transform = saved
            vy = self._labels(vy, vi[0].shape[0], "validation_data[1]")
            val = (vi, vy)
        val_ds = dataset(val[0], val[1], self._classes()) if val else None
        return stream.num_examples, t, stream._src.s, val_ds, val

    def _c_fit(self, cm, train_ds, fo):
        return cm.fit(train_ds, fo)

    # ---- evaluate, predict ---------------------------------------------

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto",
                 sample_weight=None, steps=None, callbacks=None,
                 max_queue_size=10, workers=1, use_multiprocessing=False,
                 return_dict=False):
        """[loss, accuracy] (or the loss alone without metrics) on (x, y).
        batch_size only chunks the work (the result does not depend on it):
        the model's current batch size is used unless this call compiles
        it."""
        self._need_compiled("evaluate")
        batch_size, verbose = _pass_args(
            "evaluate", batch_size, verbose,
            (max_queue_size, workers, use_multiprocessing),
            sample_weight=(sample_weight, None,
                           "libvtpu's loss weighs every example alike"),
            steps=(steps, None, "evaluate covers the whole set"),
            callbacks=(callbacks, None, "evaluate runs inside libvtpu"))
        if _imagefolder.is_dataset(x):
            n, loss, acc, elapsed = self._evaluate_dataset(x, y, batch_size)
        else:
            if x is None or y is None:
                raise ValueError("evaluate: x and y are required (numpy "
                                 "arrays)")
            images, t = self._images(x, "x", fixed=True)
            labels = self._labels(y, images[0].shape[0], "y")
            cm = self._ensure_c(None if self._c is not None else
                                (batch_size or 32), t, "evaluate")
            ds = dataset(images, labels, self._classes())
            t0 = time.monotonic()
            loss, acc = cm.evaluate(ds)
            elapsed = time.monotonic() - t0
            n = images[0].shape[0]
        names = self._compiled.metric_names
        logs = [("loss", loss)] + [(k, acc) for k in names]
        if verbose:
            self._print_pass(n, elapsed, logs)
        if return_dict:
            return dict(logs)
        return loss if not names else [v for _, v in logs]

    def _dataset_chunks(self, ds, batch_size, what):
        """(libvtpu model, uint8 images as _images gives them, uint8
        labels) per chunk of the ImageDataset @ds, in its order."""
        if batch_size is not None:
            raise ValueError("%s: batch_size is not supported when x is a "
                             "dataset (batches of the dataset's "
                             "batch_size)" % what)
        for images, labels in ds._chunks():
            images, t = self._images(images, "x", fixed=True)
            cm = self._ensure_c(None if self._c is not None else
                                ds.batch_size, t, what)
            yield cm, images, labels.astype(np.uint8)
        ds._src.warn(4)

    def _evaluate_dataset(self, ds, y, batch_size):
        """evaluate() on an ImageDataset, read in chunks: (examples, loss,
        accuracy, seconds); the means weigh every example alike."""
        if y is not None:
            raise ValueError("evaluate: y is not supported when x is a "
                             "dataset (its batches hold the labels)")
        self._check_dataset(ds, "evaluate", True)
        n, loss, acc, elapsed = 0, 0.0, 0.0, 0.0
        for cm, images, labels in self._dataset_chunks(ds, batch_size,
                                                       "evaluate"):
            k = len(labels)
            t0 = time.monotonic()
            lo, ac = cm.evaluate(dataset(images, labels, self._classes()))
            elapsed += time.monotonic() - t0
            n, loss, acc = n + k, loss + lo * k, acc + ac * k
        return n, loss / n, acc / n, elapsed

    def predict(self, x, batch_size=None, verbose="auto", steps=None,
                callbacks=None, max_queue_size=10, workers=1,
                use_multiprocessing=False):
        """Class probabilities, float32 (n, classes). A model compiled with
        from_logits=True returns log-probabilities: libvtpu computes
        softmax in the output layer, so the logits themselves are lost, but
        their log-softmax (the logits minus a per-example constant: the
        same argmax, softmax and loss) is not."""
        batch_size, verbose = _pass_args(
            "predict", batch_size, verbose,
            (max_queue_size, workers, use_multiprocessing),
            steps=(steps, None, "predict covers the whole array"),
            callbacks=(callbacks, None, "predict runs inside libvtpu"))
        if _imagefolder.is_dataset(x):
            # in the dataset's order: as Keras, one iteration of it
            self._check_dataset(x, "predict", False)
            out, elapsed = [], 0.0
            for cm, images, _ in self._dataset_chunks(x, batch_size,
                                                      "predict"):
                t0 = time.monotonic()
                out.append(cm.predict(images[0], self._classes()))
                elapsed += time.monotonic() - t0
            probs = np.concatenate(out)
        else:
            images, t = self._images(x, "x", fixed=True)
            cm = self._ensure_c(None if self._c is not None else
                                (batch_size or 32), t, "predict")
            t0 = time.monotonic()
            probs = cm.predict(images[0], self._classes())
            elapsed = time.monotonic() - t0
        if verbose:
            self._print_pass(probs.shape[0], elapsed, [])
        if self._from_logits():
            np.maximum(probs, np.finfo(np.float32).tiny, out=probs)
            np.log(probs, out=probs)
        return probs

    def _print_pass(self, n, elapsed, logs):
        """evaluate's and predict's progress line: one pass over @n
        examples, done."""
        total = -(-n // self._c_batch)
        sys.stdout.write(progress_line(total, total, elapsed, logs) + "\n")
        sys.stdout.flush()

    def predict_on_batch(self, x):
        return self.predict(x, verbose=0)

    def train_on_batch(self, *args, **kwargs):
        raise NotImplementedError(
            "train_on_batch: the steps run inside libvtpu, whole epochs at a "
            "time; use fit()")

    def test_on_batch(self, x, y=None, **kwargs):
        return self.evaluate(x, y, verbose=0, **kwargs)

    # ---- weights ---------------------------------------------------------

    def _weight_list(self):
        """[(layer, C name, shape)] in Keras' order (by layer)."""
        out = []
        for layer in self.layers:
            for (s, shape) in layer._weight_shapes():
                out.append((layer, "%s/%s" % (self._c_base(layer), s),
                            tuple(shape)))
        return out

    def _c_base(self, layer):
        """The libvtpu name of @layer ("dense_1"): its place among the
        model's layers of its kind."""
        kind = layer._c_kind
        k = 0
        for other in self.layers:
            if other is layer:
                break
            if other._weight_shapes() and other._c_kind == kind:
                k += 1
        return kind if k == 0 else "%s_%d" % (kind, k)

    def get_weights(self):
        """The weights as numpy float32 arrays, layer by layer (kernel, bias)
        in Keras' layouts: Dense (inputs, units), Conv2D (kh, kw, channels,
        filters)."""
        cm = self._ensure_c(what="get_weights")
        return [cm.get_weight(self._c_index[n][0], s)
                for _, n, s in self._weight_list()]

    def _check_weights(self, wl, weights, where):
        if not isinstance(weights, (list, tuple)):
            raise TypeError("%s: weights must be a list of numpy arrays, not "
                            "%s" % (where, type(weights).__name__))
        if len(weights) != len(wl):
            raise ValueError("%s: %d arrays given, the %s has %d (%s)"
                             % (where, len(weights), "layer" if len(wl) <= 2
                                and len(set(l for l, _, _ in wl)) == 1
                                else "model", len(wl),
                                ", ".join(n for _, n, _ in wl)))
        out = []
        for (layer, n, shape), w in zip(wl, weights):
            try:
                a = np.asarray(w, dtype=np.float32)
            except (TypeError, ValueError) as e:
                raise TypeError("%s: layer %r weight %s: %s"
                                % (where, layer.name, n, e))
            if a.shape != shape:
                raise ValueError(
                    "%s: layer %r weight %s has shape %s, the layer's is %s"
                    % (where, layer.name, n.split("/")[-1], a.shape, shape))
            if not np.all(np.isfinite(a)):
                raise ValueError("%s: layer %r weight %s holds values that "
                                 "are not finite" % (where, layer.name, n))
            out.append(a)
        return out

    def set_weights(self, weights):
        """Set every weight from numpy arrays in get_weights()' order and
        shapes; the optimizer's state is kept."""
        wl = self._weight_list()
        arrays = self._check_weights(wl, weights, "set_weights")
        self._set_all(list(zip([n for _, n, _ in wl], arrays)))

    def _set_all(self, named):
        cm = self._ensure_c(what="set_weights")
        if named and not isinstance(named[0], tuple):
            named = list(zip([n for _, n, _ in self._weight_list()], named))
        for n, a in named:
            cm.set_weight(self._c_index[n][0], a)

    def _layer_get_weights(self, layer):
        cm = self._ensure_c(what="get_weights")
        return [cm.get_weight(self._c_index[n][0], s)
                for l, n, s in self._weight_list() if l is layer]

    def _layer_set_weights(self, layer, weights):
        wl = [e for e in self._weight_list() if e[0] is layer]
        arrays = self._check_weights(wl, weights, "%r set_weights"
                                     % layer.name)
        self._set_all(list(zip([n for _, n, _ in wl], arrays)))

    def save_weights(self, filepath, overwrite=True, save_format=None,
                     options=None, metadata=None):
        """A path ending in .npz: the weights as numpy arrays named as
        libvtpu names them ("dense/kernel", "conv2d_1/bias", ...: by the
        model's structure, not the session's layer names). Any other path:
        libvtpu's checkpoint (vtpu_model_save: the weights and the
        optimizer's state, CRC-checked, written atomically), with
        metadata (a dict of str to str, e.g. {"source vocabulary":
        vocab.fingerprint}) stored beside them for load_weights to
        require."""
        path = os.fspath(filepath)
        if metadata and str(path).endswith(".npz"):
            raise ValueError("save_weights(%r): metadata is kept in "
                             "libvtpu's checkpoints, not .npz files" % path)
        if save_format is not None and save_format not in ("npz", "vtpu"):
            raise ValueError("save_weights: save_format=%r is not supported: "
                             "a .npz path saves numpy arrays, any other "
                             "libvtpu's checkpoint" % (save_format,))
        if options is not None:
            raise ValueError("save_weights: options is not supported")
        if str(path).endswith((".h5", ".hdf5", ".keras")):
            raise ValueError("save_weights(%r): HDF5 and .keras files are "
                             "not supported: use a .npz path (numpy arrays) "
                             "or another one (libvtpu's checkpoint)" % path)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(errno.EEXIST, "save_weights: exists and "
                                  "overwrite=False", path)
        if path.endswith(".npz"):
            named = {n: w for (_, n, _), w in zip(self._weight_list(),
                                                  self.get_weights())}
            np.savez(path, **named)
            return
        self._ensure_c(what="save_weights").save(path, metadata)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False,
                     options=None, metadata=None):
        """What save_weights wrote: a .npz (every name and shape must match
        this model's) or libvtpu's checkpoint (the optimizer's state too).
        With metadata, the checkpoint must hold each key with the same
        value (ValueError, and nothing loaded, if not): a checkpoint
        trained with one vocabulary refuses another."""
        path = os.fspath(filepath)
        if metadata and path.endswith(".npz"):
            raise ValueError("load_weights(%r): metadata is kept in "
                             "libvtpu's checkpoints, not .npz files" % path)
        if by_name or skip_mismatch or options is not None:
            raise ValueError("load_weights: by_name, skip_mismatch and "
                             "options are not supported: names and shapes "
                             "must match")
        if path.endswith(".npz"):
            if not os.path.exists(path):
                raise FileNotFoundError(errno.ENOENT, "load_weights", path)
            wl = self._weight_list()
            with np.load(path) as f:
                have, want = set(f.files), set(n for _, n, _ in wl)
                if have != want:
                    raise ValueError(
                        "load_weights(%r): the file's tensors %s are not the "
                        "model's %s" % (path, sorted(have), sorted(want)))
                arrays = [f[n] for _, n, _ in wl]
            self._check_weights(wl, arrays, "load_weights(%r)" % path)
            self._set_all(list(zip([n for _, n, _ in wl], arrays)))
            return
        self._ensure_c(what="load_weights").load(path, metadata)

    def save(self, *args, **kwargs):
        raise NotImplementedError(
            "save: vtpu.keras saves weights, not models (rebuild the model "
            "in code and use save_weights/load_weights)")

    def count_params(self):
        self._need_built("count_params")
        return int(sum(layer.count_params() for layer in self.layers))

    def device_info(self):
        """What libvtpu made of the model (struct vtpu_model_info): params,
        commands per step, stream_bytes, state_bytes, work_bytes,
        naive_bytes, compile_ms, backend."""
        return self._ensure_c(what="device_info").info()

    # ---- summary ---------------------------------------------------------

    def _sequential_like(self):
        for layer, ins, _ in self._ops:
            if len(ins) != 1:
                return False
        used = [id(t) for _, ins, _ in self._ops for t in ins]
        return len(used) == len(set(used))

    def summary(self, line_length=None, positions=None, print_fn=None,
                expand_nested=False, show_trainable=False, layer_range=None):
        """Keras' layer table: name (type), output shape, parameters."""
        self._need_built("summary")
        if print_fn is None:
            print_fn = print
        seq = isinstance(self, Sequential) or self._sequential_like()
        if seq:
            line_length = line_length or 65
            positions = positions or [0.45, 0.85, 1.0]
            header = ["Layer (type)", "Output Shape", "Param #"]
        else:
            line_length = line_length or 98
            positions = positions or [0.33, 0.55, 0.67, 1.0]
            header = ["Layer (type)", "Output Shape", "Param #",
                      "Connected to"]
        if positions[-1] <= 1:
            positions = [int(line_length * p) for p in positions]

        def row(fields):
            left = [str(f) for f in fields]
            while any(left):
                line = ""
                for col in range(len(left)):
                    start = positions[col - 1] if col else 0
                    end = positions[col]
                    space = 2 if col != len(positions) - 1 else 0
                    cut = end - start - space
                    fit = left[col][:cut]
                    cands = [fit.find(x) + len(x) for x in
                             ("),", "},", "],", "',") if fit.find(x) >= 0]
                    if cands:
                        cut = min(cands)
                        fit = fit[:cut]
                    if col == 0:
                        line += " "
                    line += fit + " " * space
                    left[col] = left[col][cut:]
                    line += " " * (positions[col] - len(line))
                print_fn(line)

        print_fn('Model: "%s"' % self.name)
        print_fn("_" * line_length)
        row(header)
        print_fn("=" * line_length)
        layers = self.layers
        if isinstance(self, Sequential):
            layers = layers[1:]
        for i, layer in enumerate(layers):
            name = "%s (%s)" % (layer.name, type(layer).__name__)
            out = layer.output
            if isinstance(layer, InputLayer):
                shape = "[%s]" % _shape_str(out.shape)
            elif isinstance(out, list):
                shape = "[%s]" % ", ".join(_shape_str(t.shape) for t in out)
            else:
                shape = _shape_str(out.shape)
            fields = [name, shape, layer.count_params()]
            if not seq:
                fields.append("[%s]" % ", ".join(
                    "'%s[0][%d]'" % (t._layer.name, t._index)
                    for t in layer._inbound) if layer._inbound else "[]")
            row(fields)
            print_fn("=" * line_length if i == len(layers) - 1
                     else " " * line_length)
        total = self.count_params()
        print_fn("Total params: {:,}".format(total))
        print_fn("Trainable params: {:,}".format(total))
        print_fn("Non-trainable params: 0")
        print_fn("_" * line_length)

    def __repr__(self):
        return "<%s name=%s>" % (type(self).__name__, self.name)


class _Run:
    """One fit(): the trampolines libvtpu calls between epochs."""

    def __init__(self, model, cm, cbs, verbose, epochs, total, freq,
                 has_val):
        self.model, self.cm, self.cbs = model, cm, cbs
        self.verbose, self.epochs, self.total = verbose, epochs, total
        self.freq, self.has_val = freq, has_val
        self.skipped = 0            # streamed: undecodable examples
        self.streamed = False       # an epoch was streamed
        self.epochs_done = 0
        self.error = None
        self.out = None
        self.own_lines = False
        self.last_logs = None
        self.begin_hooks = [cb for cb in cbs if _overrides(cb,
                                                           "on_epoch_begin")]
        self.on_epoch = ffi.callback(
            "void(void *, const struct vtpu_epoch_stats *)", self._on_epoch)
        self.lr_schedule = ffi.callback(
            "float(void *, uint32_t, uint32_t, float)", self._lr_schedule)

    def _fail(self, e):
        if self.error is None:
            self.error = e
        self.cm.stop()

    def _lr_schedule(self, ctx, epoch, epochs, lr):
        if self.error is not None:
            return lr
        try:
            for cb in self.begin_hooks:
                cb.on_epoch_begin(epoch - 1, {})
            return self.cm.learning_rate()
        except BaseException as e:     # raised again after fit returns
            self._fail(e)
            return lr

    def _on_epoch(self, ctx, st):
        if self.error is not None:
            return
        self.skipped += st.skipped
        self.streamed = self.streamed or bool(st.streamed)
        self.epochs_done = st.epoch
        try:
            if self.out is not None:
                self.out.flush()
            e = st.epoch
            names = self.model._compiled.metric_names
            logs = {"loss": st.loss}
            for k in names:
                logs[k] = st.acc
            if self.has_val and (e % self.freq == 0 or e == self.epochs):
                logs["val_loss"] = st.val_loss
                for k in names:
                    logs["val_" + k] = st.val_acc
            if self.own_lines:
                self._line(st, logs)
            for cb in self.cbs:
                cb.on_epoch_end(e - 1, logs)
            self.last_logs = logs
            sys.stdout.flush()
            if self.model.stop_training:
                self.cm.stop()
        except BaseException as ex:
            self._fail(ex)

    def _line(self, st, logs):
        metrics = list(logs.items())
        if self.verbose == 1:
            line = progress_line(st.steps, self.total, st.seconds, metrics)
        else:
            line = "%d/%d - %.0fs - %s - %.0fms/step" % (
                st.steps, self.total, st.seconds,
                " - ".join("%s: %s" % (k, _fmt(v)) for k, v in metrics),
                st.ms_per_step)
        print("Epoch %d/%d\n%s" % (st.epoch, self.epochs, line))


def _overrides(cb, method):
    if method in vars(cb):          # LambdaCallback's functions
        return True
    return getattr(type(cb), method) is not getattr(cbmod.Callback, method)


class Sequential(Model):
    """A stack of layers: Sequential([layers...]) or .add(layer). Built as
    soon as the input shape is known (the first layer's input_shape, an
    InputLayer, build(), or the first data)."""

    def __init__(self, layers=None, name=None):
        self._init_common(name, "sequential")
        self._layers = []           # without the InputLayer
        self._pending_layers = []   # added before the input shape was known
        if layers is not None:
            if isinstance(layers, Layer):
                layers = [layers]
            if not isinstance(layers, (list, tuple)):
                raise TypeError("Sequential: layers must be a list of "
                                "layers, not %r" % (layers,))
            for layer in layers:
                self.add(layer)

    @property
    def layers(self):
        if self._input is None:
            return list(self._pending_layers)
        return [self._input._layer] + list(self._layers)

    def add(self, layer):
        """Append @layer (its input is the last layer's output)."""
        if isinstance(layer, KerasTensor) and isinstance(layer._layer,
                                                         InputLayer):
            layer = layer._layer
        if isinstance(layer, Model):
            raise NotImplementedError(
                "Sequential.add(%r): nested models are not supported: "
                "libvtpu compiles one flat graph; add the layers" % layer)
        if not isinstance(layer, Layer):
            raise TypeError("Sequential.add: %r is not a vtpu.keras layer"
                            % (layer,))
        if self._c is not None:
            raise ValueError(
                "Sequential.add: the model is in use already (its weights "
                "live in libvtpu); build the whole model before fit, "
                "evaluate, predict or get_weights")
        if isinstance(layer, InputLayer):
            if self._input is not None or self._pending_layers:
                raise ValueError("Sequential.add: an InputLayer must be the "
                                 "first layer")
            self._start(layer)
            return
        if layer._model is not None or layer.built:
            raise ValueError(
                "Sequential.add: layer %r is used already: shared layers "
                "are not supported by libvtpu's graph; create a new layer"
                % layer.name)
        if self._input is None:
            if not self._pending_layers and \
                    layer._input_shape_arg is not None:
                self._start(InputLayer(input_shape=layer._input_shape_arg))
            else:
                self._pending_layers.append(layer)
                return
        self._append(layer)

    def _start(self, input_layer):
        if input_layer.output.dtype != "float32":
            raise NotImplementedError(
                "Sequential: an input of token ids (dtype %r) is not "
                "supported: build models of sequences with the functional "
                "Model(inputs, outputs)" % input_layer.output.dtype)
        self._input = input_layer.output
        self._output = self._input
        input_layer._model = self
        for layer in self._pending_layers:
            self._append(layer)
        self._pending_layers = []

    def _append(self, layer):
        names = set(l.name for l in self.layers)
        if layer.name in names:
            raise ValueError('Sequential.add: the name "%s" is used 2 times '
                             'in the model: layer names must be unique'
                             % layer.name)
        out = layer(self._output)
        layer._model = self
        self._layers.append(layer)
        self._ops.append((layer, [self._output], out))
        self._output = out

    def pop(self):
        """Remove the last layer."""
        if self._c is not None:
            raise ValueError("Sequential.pop: the model is in use already")
        if self._input is None:
            if not self._pending_layers:
                raise TypeError("There are no layers in the model.")
            self._pending_layers.pop()
            return
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self._ops.pop()
        layer._model = None
        layer._inbound = None
        layer._outputs = None
        self._output = self._ops[-1][2] if self._ops else self._input

    def build(self, input_shape=None):
        """Build for inputs of Keras' shape (None,) + the example's."""
        if input_shape is None:
            self._need_built("build")
            return
        if self._input is not None:
            if tuple(input_shape)[1:] != self._input._feature_shape:
                raise ValueError("build: the model is built for %s already"
                                 % _shape_str(self._input.shape))
            return
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 2:
            raise ValueError("build: input_shape must be (None,) + the "
                             "example's shape, not %r" % (input_shape,))
        self._start(InputLayer(input_shape=tuple(input_shape)[1:]))

    def _maybe_build(self, x):
        if self._input is None and self._pending_layers:
            a = _data.as_array(x, "x")
            if a.ndim < 2:
                raise ValueError("x has shape %r: examples must have a shape"
                                 % (a.shape,))
            self.build((None,) + a.shape[1:])
            if self._compiled is not None:
                self._plan(self._compiled.from_logits)
