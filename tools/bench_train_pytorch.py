#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The PyTorch reference for `vtpu-bench train`: the three example models,
built as the examples build them, trained on synthetic batches of the same
shapes with the same optimizer, timed per step on a fixed thread count.

vtpu-bench starts this once and talks to it over stdin/stdout, so that the
engine, OpenBLAS and PyTorch can be measured alternately in one run:

    out: "ready <torch version>"         once torch is imported, or
         "error: <why>"                  when it cannot be (then it exits)
    in:  "<model> <batch> <steps>"      model: mnist, fashion_mnist, cifar10
    out: "<milliseconds per step>"

A model is built, and warmed up with two untimed steps, the first time it
is asked for; later requests only run steps, so the caller may time them.

Needs Debian's python3-torch (run with /usr/bin/python3, not a pyenv one).

PyTorch at its best: Debian's build runs GEMMs in OpenBLAS's own threads
while its OpenMP threads spin-wait beside them, which on a 2-core machine
made it 2-3x slower (and its times swing with the machine's load), so
OMP_WAIT_POLICY is PASSIVE unless the caller set it.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
try:
    import torch  # noqa: E402 (after the OpenMP setting, which it reads)
    from torch import nn  # noqa: E402
except Exception as e:  # missing or broken: vtpu-bench goes on without us
    print("error: %s: %s" % (type(e).__name__, e), flush=True)
    sys.exit(1)


def build(model):
    if model == "mnist":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                            nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
        return net, (1, 28, 28)
    if model == "fashion_mnist":
        net = nn.Sequential(nn.Conv2d(1, 64, 3), nn.MaxPool2d(2), nn.ReLU(),
                            nn.Flatten(), nn.Linear(13 * 13 * 64, 10))
        return net, (1, 28, 28)
    if model == "cifar10":
        net = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 8 * 8, 512), nn.ReLU(),
            nn.Linear(512, 10))
        return net, (3, 32, 32)
    raise ValueError("unknown model " + model)


class Trainer:
    def __init__(self, model, batch):
        torch.manual_seed(1)
        self.net, shape = build(model)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.loss = nn.CrossEntropyLoss()
        self.x = torch.rand((batch,) + shape)
        self.y = torch.randint(0, 10, (batch,))

    def step(self):
        self.opt.zero_grad()
        out = self.net(self.x)
        self.loss(out, self.y).backward()
        self.opt.step()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("ready %s" % torch.__version__, flush=True)
    trainers = {}
    for line in sys.stdin:
        model, batch, steps = line.split()
        key = (model, int(batch))
        if key not in trainers:
            trainers[key] = Trainer(model, int(batch))
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
