#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The PyTorch reference for `vtpu-bench train`: the benchmark's models,
built as vtpu-bench builds them, trained on synthetic batches of the same
shapes with the same optimizer, timed per step on a fixed thread count.

vtpu-bench starts this once per configuration and talks to it over
stdin/stdout, so that the engine, OpenBLAS and PyTorch can be measured
alternately in one run:

    out: "ready <torch version> <settings>"   once torch is imported, or
         "error: <why>"                        when it cannot be (it exits)
    in:  "<model> <batch> <steps>"            a model of MODELS below,
                                               or "translate" (training)
                                               or "translate-decode"
    out: "<milliseconds per step>"

A model is built, and warmed up with two untimed steps, the first time it
is asked for; later requests only run steps, so the caller may time them.

"translate" is issue 26's encoder-decoder with Luong attention (class
Translate; its sizes TS, TT, VS, VT, E, H, A are shared with
tools/bench_train.c): a step trains it on one synthetic batch of padded
token ids (translate_batch()) with cross-entropy over the target tokens
that are not padding and Adam (1e-3, 0.9, 0.999, epsilon 1e-7 as Keras
and the engine). "translate-decode" times its greedy decoding instead: a
step decodes one batch, the encoder run once, then TT decoder steps, each
fed the previous step's argmax, under torch.inference_mode().

Needs Debian's python3-torch (run with /usr/bin/python3, not a pyenv one).

Two configurations (--config):
  best     PyTorch as a performance-minded user runs it on a CPU. Here:
           denormals flushed (the engine flushes them too; Adam's decaying
           moments are denormal-heavy), channels-last tensors for the
           convolutional models (oneDNN's preferred layout), gradients
           dropped rather than zeroed (zero_grad(set_to_none=True)),
           the greedy decoding loop compiled by torch.jit.script (the
           training step is left eager: scripted, it was no faster); and,
           set by vtpu-bench in this process's environment before it
           starts: glibc's malloc keeping freed blocks (MALLOC_MMAP_MAX_=0,
           a large MALLOC_TRIM_THRESHOLD_: else every step page-faults its
           gradients and activations back in), OpenBLAS's OpenMP build
           (libopenblas0-openmp) so that BLAS and PyTorch share one OpenMP
           pool, spinning between calls (OMP_WAIT_POLICY=ACTIVE) for a
           bounded time (GOMP_SPINCOUNT), so that its threads are asleep
           by the time another backend takes its turn.
  default  PyTorch as installed, nothing set: what a user gets first.
The settings actually in force are reported in the ready line.
"""
import argparse
import os
import sys
import time
from typing import Tuple

try:
    import torch
    from torch import nn
except Exception as e:  # missing or broken: vtpu-bench goes on without us
    print("error: %s: %s" % (type(e).__name__, e), flush=True)
    sys.exit(1)


# name -> (builder, input shape (C, H, W), classes); the same networks as
# tools/bench_train.c's models[]
def _mnist():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _fashion_mnist():
    return nn.Sequential(nn.Conv2d(1, 64, 3), nn.MaxPool2d(2), nn.ReLU(),
                         nn.Flatten(), nn.Linear(13 * 13 * 64, 10))


def _cifar10():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 512), nn.ReLU(),
        nn.Linear(512, 10))


def _lenet5():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def _mlp_wide():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 2048), nn.ReLU(),
                         nn.Linear(2048, 2048), nn.ReLU(),
                         nn.Linear(2048, 10))


# The engine's is libvtpu's vtpu_app_vgg() at width 64: the same layers in
# the same order (4751173 parameters).
def _vgg64():
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256 * 8 * 8, 256), nn.ReLU(),
        nn.Linear(256, 5))


# Issue 27's networks at 64x64, 5 classes (tf_flowers'), Keras' batch
# norm (momentum 0.99 is PyTorch's 0.01; epsilon 1e-3), "same" padding.
# The engine's are libvtpu's vtpu_app_resnet() and vtpu_app_xception():
# the same layers in the same order.
def _bn(c):
    return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)


class _Basic(nn.Module):
    """ResNet's basic block: two 3x3 convolutions, the shortcut a strided
    1x1 convolution with batch norm where the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), _bn(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), _bn(cout))
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride,
                                              bias=False), _bn(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


RESNET_WIDTHS = (32, 64, 128, 256)


def _resnet64():
    """ResNet-18's shape at a quarter of its width: a 7x7/2 stem and a
    3x3/2 max pool, four stages of two basic blocks, global average
    pooling, a dense layer."""
    layers = [nn.Conv2d(3, 32, 7, 2, 3, bias=False), _bn(32), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 32
    for i, w in enumerate(RESNET_WIDTHS):
        layers += [_Basic(cin, w, 1 if i == 0 else 2), _Basic(w, w, 1)]
        cin = w
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 5)]
    return nn.Sequential(*layers)


def _sep(cin, cout):
    """Keras' SeparableConv2D: a depthwise 3x3 without bias, then a
    pointwise 1x1 with bias."""
    return nn.Sequential(nn.Conv2d(cin, cin, 3, 1, 1, groups=cin,
                                   bias=False),
                         nn.Conv2d(cin, cout, 1))


class _XBlock(nn.Module):
    """The Keras "image classification from scratch" Xception block."""

    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReLU(), _sep(cin, cout), _bn(cout),
            nn.ReLU(), _sep(cout, cout), _bn(cout),
            nn.MaxPool2d(3, 2, 1))
        self.short = nn.Conv2d(cin, cout, 1, 2)

    def forward(self, x):
        return self.body(x) + self.short(x)


XCEPTION_WIDTHS = (64, 128, 256)


def _xception64():
    """keras.io's small Xception (image classification from scratch) at a
    quarter of its width: a 3x3/2 stem, three separable blocks with
    strided residuals, a last separable convolution, global average
    pooling, a dense layer."""
    layers = [nn.Conv2d(3, 32, 3, 2, 1), _bn(32), nn.ReLU()]
    cin = 32
    for w in XCEPTION_WIDTHS:
        layers.append(_XBlock(cin, w))
        cin = w
    layers += [_sep(cin, 384), _bn(384), nn.ReLU(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(384, 5)]
    return nn.Sequential(*layers)


MODELS = {
    "mnist": (_mnist, (1, 28, 28), 10),
    "fashion_mnist": (_fashion_mnist, (1, 28, 28), 10),
    "cifar10": (_cifar10, (3, 32, 32), 10),
    "lenet5": (_lenet5, (1, 28, 28), 10),
    "mlp_wide": (_mlp_wide, (1, 28, 28), 10),
    "vgg64": (_vgg64, (3, 64, 64), 5),
    "resnet64": (_resnet64, (3, 64, 64), 5),
    "xception64": (_xception64, (3, 64, 64), 5),
}


# The translation model of issue 26: an encoder-decoder with Luong
# attention over token ids. Its sizes; tools/bench_train.c must build the
# engine's network with the same ones.
TS = 24    # source length (padded)
TT = 12    # target length (padded): decoder inputs and labels
VS = 48    # source vocabulary
VT = 16    # target vocabulary
E = 32     # embedding width, source and target
H = 128    # LSTM units, encoder and decoder
A = 128    # attention combination: tanh(Linear(2H -> A)) before the logits
PAD, START, END = 0, 1, 2   # reserved ids (3: unknown); 4.. are words


class Translate(nn.Module):
    """Embedding(VS, E) -> LSTM(E, H) over the source, every step's h kept;
    Embedding(VT, E) -> LSTM(E, H) over the target input, starting from
    the encoder's last (h, c); Luong dot attention of the decoder's steps
    over the encoder's (keys at or past each source's length masked, as
    Keras' Attention()); tanh(Linear(2H -> A)) on [context, decoder h];
    Linear(A -> VT) logits. Sequences are time-major inside the LSTMs (what
    nn.LSTM runs on; batch_first only transposes around it) and
    batch-major around the attention, whose products are per example.
    TorchScript compiles it as it is (torch.jit.script)."""

    __constants__ = ["pad", "start", "tt"]

    def __init__(self):
        super().__init__()
        self.pad, self.start, self.tt = PAD, START, TT
        self.src_emb = nn.Embedding(VS, E)
        self.enc = nn.LSTM(E, H)
        self.tgt_emb = nn.Embedding(VT, E)
        self.dec = nn.LSTM(E, H)
        self.comb = nn.Linear(2 * H, A)
        self.out = nn.Linear(A, VT)

    def encode(self, src: torch.Tensor) -> Tuple[
            torch.Tensor, torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        """src [B, TS] ids -> every step's h [B, TS, H] (a view), the
        padding mask [B, 1, TS], the last (h, c)."""
        enc, state = self.enc(self.src_emb(src.t()))
        return enc.transpose(0, 1), (src == self.pad).unsqueeze(1), state

    def attend(self, dec: torch.Tensor, enc: torch.Tensor,
               mask: torch.Tensor) -> torch.Tensor:
        """dec [B, T, H] -> logits [B, T, VT]."""
        scores = torch.bmm(dec, enc.transpose(1, 2))
        scores = scores.masked_fill(mask, float("-inf"))
        ctx = torch.bmm(scores.softmax(-1), enc)
        return self.out(torch.tanh(self.comb(torch.cat((ctx, dec), -1))))

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: src [B, TS], tgt_in [B, TT] -> [B, TT, VT]."""
        enc, mask, state = self.encode(src)
        dec, _ = self.dec(self.tgt_emb(tgt_in.t()), state)
        return self.attend(dec.transpose(0, 1), enc, mask)

    @torch.jit.export
    def greedy(self, src: torch.Tensor) -> torch.Tensor:
        """src [B, TS] -> [B, TT] ids: the encoder once, then TT decoder
        steps, each fed the previous step's argmax (START first)."""
        enc, mask, state = self.encode(src)
        tok = torch.full((1, src.shape[0]), self.start, dtype=torch.long)
        out = []
        for _ in range(self.tt):
            dec, state = self.dec(self.tgt_emb(tok), state)
            logits = self.attend(dec.transpose(0, 1), enc, mask)
            tok = logits.argmax(-1).t()
            out.append(tok)
        return torch.cat(out).t()


def translate_batch(batch, gen):
    """Synthetic sentences as the engine's side makes them: sources of
    8..TS ids in 4..VS-1, then PAD; targets START, 4..TT-1 ids in 4..VT-1,
    END, then PAD. Returns (src [B, TS], decoder input [B, TT], labels
    [B, TT]: the next token, PAD where there is none)."""
    src = torch.zeros(batch, TS, dtype=torch.long)
    tgt = torch.zeros(batch, TT + 1, dtype=torch.long)
    for b in range(batch):
        n = int(torch.randint(8, TS + 1, (1,), generator=gen))
        src[b, :n] = torch.randint(4, VS, (n,), generator=gen)
        n = int(torch.randint(4, TT, (1,), generator=gen))
        tgt[b, 0] = START
        tgt[b, 1:n + 1] = torch.randint(4, VT, (n,), generator=gen)
        tgt[b, n + 1] = END
    return src, tgt[:, :TT].contiguous(), tgt[:, 1:].contiguous()


def translate_adam(net):
    """Adam as the engine's (Keras' epsilon)."""
    return torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999),
                            eps=1e-7)


class TranslateTrainer:
    """"translate": a training step on one synthetic batch; the loss is
    the mean cross-entropy over the labels that are not padding."""

    def __init__(self, batch, best):
        torch.manual_seed(1)
        self.net = Translate()
        self.src, self.tgt_in, self.labels = translate_batch(
            batch, torch.Generator().manual_seed(7))
        self.labels = self.labels.reshape(-1)
        self.best = best
        self.opt = translate_adam(self.net)
        self.loss = nn.CrossEntropyLoss(ignore_index=PAD)

    def step(self):
        self.opt.zero_grad(set_to_none=self.best)
        out = self.net(self.src, self.tgt_in)
        loss = self.loss(out.reshape(-1, VT), self.labels)
        loss.backward()
        self.opt.step()
        return loss


class TranslateDecoder:
    """"translate-decode": greedy decoding of one batch per step, no
    gradients."""

    def __init__(self, batch, best):
        torch.manual_seed(1)
        self.net = Translate().eval()
        if best:
            self.net = torch.jit.script(self.net)
        self.src, _, _ = translate_batch(batch,
                                         torch.Generator().manual_seed(7))

    def step(self):
        with torch.inference_mode():
            return self.net.greedy(self.src)


class Trainer:
    def __init__(self, model, batch, best):
        build, shape, classes = MODELS[model]
        torch.manual_seed(1)
        self.net = build()
        self.x = torch.rand((batch,) + shape)
        self.y = torch.randint(0, classes, (batch,))
        self.best = best
        if best and any(isinstance(m, nn.Conv2d)
                        for m in self.net.modules()):
            self.net = self.net.to(memory_format=torch.channels_last)
            self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.loss = nn.CrossEntropyLoss()

    def step(self):
        self.opt.zero_grad(set_to_none=self.best)
        out = self.net(self.x)
        self.loss(out, self.y).backward()
        self.opt.step()


# requests that are not MODELS: name -> class(batch, best) with step()
RUNNERS = {
    "translate": TranslateTrainer,
    "translate-decode": TranslateDecoder,
}


def blas_in_use():
    """Which OpenBLAS build this process mapped: "openmp", "pthread"..."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for kind in ("openblas-openmp", "openblas-pthread", "openblas-serial"):
        if kind in maps:
            return kind.split("-")[1]
    return "other"


def settings(best):
    s = ["blas=" + blas_in_use()]
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MALLOC_MMAP_MAX_",
                "MALLOC_TRIM_THRESHOLD_"):
        if var in os.environ:
            s.append("%s=%s" % (var, os.environ[var]))
    if best:
        s += ["flush_denormal", "channels_last", "set_to_none",
              "script_decode"]
    return ",".join(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--config", choices=("best", "default"), default="best")
    args = ap.parse_args()
    best = args.config == "best"
    torch.set_num_threads(args.threads)
    if best:
        torch.set_flush_denormal(True)
    # BLAS loads lazily: one small product maps it before we report it
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    print("ready %s %s" % (torch.__version__, settings(best)), flush=True)
    trainers = {}
    for line in sys.stdin:
        model, batch, steps = line.split()
        key = (model, int(batch))
        if key not in trainers:
            make = RUNNERS.get(model)
            trainers[key] = (make(int(batch), best) if make else
                             Trainer(model, int(batch), best))
            trainers[key].step()
            trainers[key].step()
        t = trainers[key]
        t0 = time.perf_counter()
        for _ in range(int(steps)):
            t.step()
        ms = (time.perf_counter() - t0) * 1e3 / int(steps)
        print("%.4f" % ms, flush=True)


if __name__ == "__main__":
    main()
