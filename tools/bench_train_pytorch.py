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
    in:  "<model> <batch> <steps>"            a model of MODELS below
    out: "<milliseconds per step>"

A model is built, and warmed up with two untimed steps, the first time it
is asked for; later requests only run steps, so the caller may time them.

Needs Debian's python3-torch (run with /usr/bin/python3, not a pyenv one).

Two configurations (--config):
  best     PyTorch as a performance-minded user runs it on a CPU. Here:
           denormals flushed (the engine flushes them too; Adam's decaying
           moments are denormal-heavy), channels-last tensors for the
           convolutional models (oneDNN's preferred layout), gradients
           dropped rather than zeroed (zero_grad(set_to_none=True)); and,
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


def _vgg64():
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256 * 8 * 8, 256), nn.ReLU(),
        nn.Linear(256, 5))


MODELS = {
    "mnist": (_mnist, (1, 28, 28), 10),
    "fashion_mnist": (_fashion_mnist, (1, 28, 28), 10),
    "cifar10": (_cifar10, (3, 32, 32), 10),
    "lenet5": (_lenet5, (1, 28, 28), 10),
    "mlp_wide": (_mlp_wide, (1, 28, 28), 10),
    "vgg64": (_vgg64, (3, 64, 64), 5),
}


class Trainer:
    def __init__(self, model, batch, best):
        build, shape, classes = MODELS[model]
        torch.manual_seed(1)
        self.net = build()
        self.x = torch.rand((batch,) + shape)
        self.y = torch.randint(0, classes, (batch,))
        self.best = best
        if best and any(isinstance(m, nn.Conv2d) for m in self.net):
            self.net = self.net.to(memory_format=torch.channels_last)
            self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.loss = nn.CrossEntropyLoss()

    def step(self):
        self.opt.zero_grad(set_to_none=self.best)
        out = self.net(self.x)
        self.loss(out, self.y).backward()
        self.opt.step()


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
        s += ["flush_denormal", "channels_last", "set_to_none"]
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
            trainers[key] = Trainer(model, int(batch), best)
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
