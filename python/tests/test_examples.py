# SPDX-License-Identifier: MIT
"""examples/python: the Fashion-MNIST seed's code is there as
docs/python.md's side-by-side table shows it, and both examples run, as
scripts, from another directory, on small copies of the datasets (the
full runs are docs/python.md's)."""
import gzip
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))
EXAMPLES = os.path.join(TOP, "examples", "python")
from _paths import SHARED  # noqa: E402

DOCS = os.path.join(TOP, "docs", "python.md")


def seed_code():
    """The seed notebook's Keras code, as it was: the left column of
    docs/python.md's side-by-side table (lines wrapped), without the TPU
    resolver and strategy, which the example leaves out."""
    with open(DOCS) as f:
        doc = f.read()
    table = doc.split("seed notebook (tf.keras on a TPU)", 1)[1]
    table = table.split("```", 1)[0].splitlines()
    rule, rows = table[1], table[2:]
    right = rule.index(" ")     # where the right column starts, at least
    seed = []
    for row in rows:
        m = re.match(r"( *)(\S.*?)(?= {2,}|$)", row)
        if m and len(m.group(1)) < right and not re.search(
                r"resolver|strategy", m.group(2)):
            seed.append(m.group(2))
    return "\n".join(seed)


def _code(text):
    """@text without its comments and white space: what the seed and the
    example are compared by (the table wraps lines)."""
    return re.sub(r"\s+", "", re.sub(r"(?m)^\s*#.*$", "", text))


def test_the_seeds_code_is_there_as_the_table_shows():
    with open(os.path.join(EXAMPLES, "fashion_mnist.py")) as f:
        text = f.read()
    block = re.search(r"# -+ the seed's code -+\n(.*)# -+ the result", text,
                      re.S).group(1)
    # the two changes the example makes to the seed's code: where the data
    # is, and the batch size spelled out (see its comment)
    example = _code(block).replace("load_data(args.data)", "load_data()")
    example = example.replace("validation_freq=5,batch_size=1000)",
                              "validation_freq=5)")
    seed = seed_code()
    assert "create_model()" in seed and "model.fit(" in seed, seed
    assert example == _code(seed.replace("tf.keras", "vtpu.keras"))

def _idx(path, magic, dims, data):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(np.ascontiguousarray(data).tobytes())


def small_copy(name, tmp_path, n_train, n_test):
    """The first images of a shared dataset, as IDX files in tmp_path."""
    import vtpu.datasets
    src = os.path.join(SHARED, name)
    if not os.path.isdir(src):
        pytest.skip("no %s" % src)
    mod = vtpu.datasets.mnist if name == "mnist" else \
        vtpu.datasets.fashion_mnist
    (x, y), (xt, yt) = mod.load_data(src)
    d = tmp_path / name
    d.mkdir()
    for split, xs, ys in (("train", x[:n_train], y[:n_train]),
                          ("t10k", xt[:n_test], yt[:n_test])):
        _idx(str(d / ("%s-images-idx3-ubyte.gz" % split)), 0x803,
             xs.shape, xs)
        _idx(str(d / ("%s-labels-idx1-ubyte.gz" % split)), 0x801,
             ys.shape, ys)
    return str(d)


def run(script, args, cwd):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)     # the example finds the checkout itself
    env.pop("VTPU_DEVICE", None)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] +
                       args, cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout
    return p.stdout


def test_fashion_mnist_example_runs(tmp_path):
    data = small_copy("fashion-mnist", tmp_path, 3000, 1000)
    out = run("fashion_mnist.py", ["--device", "cpu", "--data", data,
                                   "--seed", "1"], tmp_path)
    # 3 batches of 1000 an epoch (steps_per_epoch=60 is more than there
    # are), validation in the 5th epoch only
    epochs = re.findall(r"3/3 \[=+\] - .* - loss: (\S+) - acc: (\S+)(.*)\n",
                        out)
    assert len(epochs) == 5, out
    assert all("val_loss" not in e[2] for e in epochs[:4])
    assert "val_loss" in epochs[4][2], out
    acc = float(re.search(r"test_acc: (\S+)\n$", out).group(1))
    assert 0.4 < acc <= 1, out


def test_mnist_mlp_example_runs(tmp_path):
    data = small_copy("mnist", tmp_path, 2000, 500)
    out = run("mnist_mlp.py", ["--device", "cpu", "--data", data,
                               "--epochs", "2", "--seed", "1"], tmp_path)
    assert "Total params: 669,706" in out
    assert "2000 train samples" in out
    assert re.search(r"Epoch 2/2\n16/16 \[=+\]", out), out
    acc = float(re.search(r"Test accuracy: (\S+)\n$", out).group(1))
    assert acc > 0.8, out


def test_flowers_example_runs(tmp_path):
    # a folder of generated PNGs, three classes told apart by a bright half
    from test_keras_images import picture
    from test_imagefolder import write_png
    data = tmp_path / "flowers"
    for k, name in enumerate(["daisy", "roses", "tulips"]):
        (data / name).mkdir(parents=True)
        for j in range(20):
            write_png(data / name / ("%02d.png" % j), picture(k, j))
    out = run("flowers.py", ["--device", "cpu", "--data", str(data),
                             "--image-size", "16", "--epochs", "4"],
              tmp_path)
    assert "Found 60 files belonging to 3 classes." in out
    assert "Using 48 files for training." in out
    assert "['daisy', 'roses', 'tulips']" in out
    assert re.search(r"Epoch 4/4\n2/2 \[=+\].*val_loss", out), out
    acc = float(re.search(r"Validation accuracy: (\S+)\n$", out).group(1))
    assert acc > 0.6, out


def test_examples_say_what_they_take():
    for script in ("fashion_mnist.py", "mnist_mlp.py", "flowers.py"):
        out = subprocess.run([sys.executable, os.path.join(EXAMPLES, script),
                              "--help"], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        assert "--device" in out and "--data" in out


def test_translate_example_runs(tmp_path):
    # a short run on the generated dates: 2 epochs of 2000 pairs (the full
    # run, 12 epochs of 20000, is docs/python.md's)
    out = run("translate.py", ["--device", "cpu", "--pairs", "2000",
                               "--epochs", "2", "--seed", "1"], tmp_path)
    assert "train on 1800 pairs, test on 200" in out, out
    epochs = re.findall(r"29/29 \[=+\] - .* - loss: (\S+) - acc: (\S+) - "
                        r"val_loss: (\S+)", out)
    assert len(epochs) == 2, out
    assert float(epochs[1][0]) < float(epochs[0][0]), out
    # SHOW translations after each epoch: source -> output, reference
    shown = re.findall(r"(?m)^  \S.* -> \S+ +\S+$", out)
    assert len(shown) == 8, out
    m = re.search(r"exact_match: (\S+) \((\d+) of 200 held-out dates, "
                  r"greedy\)\n$", out)
    assert m and 0 <= float(m.group(1)) <= 1, out


def test_translate_example_save_load(tmp_path):
    # --save writes the vocabularies beside the weights; --load takes them
    # (the same held-out loss) and refuses others of the same size
    ck = str(tmp_path / "dates.ckpt")
    common = ["--device", "cpu", "--pairs", "500", "--seed", "2"]
    out = run("translate.py", common + ["--epochs", "1", "--save", ck],
              tmp_path)
    first = re.search(r"test_loss: (\S+)", out).group(1)
    assert os.path.exists(ck + ".src.vocab") and \
        os.path.exists(ck + ".tgt.vocab"), out
    out = run("translate.py", common + ["--epochs", "0", "--load", ck],
              tmp_path)
    assert re.search(r"test_loss: (\S+)", out).group(1) == first, out
    lines = open(ck + ".tgt.vocab").read().split("\n")
    lines[1], lines[2] = lines[2], lines[1]     # other ids, the same size
    with open(ck + ".tgt.vocab", "w") as f:
        f.write("\n".join(lines))
    bad = subprocess.run([sys.executable, os.path.join(EXAMPLES,
                                                       "translate.py")] +
                         common + ["--epochs", "0", "--load", ck],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    assert bad.returncode == 1, bad.stderr
    assert re.search(r"the checkpoint's 'target vocabulary' is "
                     r"'[0-9a-f]{16}', not '[0-9a-f]{16}'", bad.stderr), \
        bad.stderr
    assert "test_loss" not in bad.stdout
    assert "are not the vocabularies" in bad.stderr, bad.stderr


def test_translate_example_beam(tmp_path):
    # --beam N decodes by beam search; its exact-match line says so
    out = run("translate.py", ["--device", "cpu", "--pairs", "1000",
                               "--epochs", "1", "--beam", "3"], tmp_path)
    m = re.search(r"exact_match: (\S+) \((\d+) of 100 held-out dates, "
                  r"beam search, width 3\)\n$", out)
    assert m and 0 <= float(m.group(1)) <= 1, out
    bad = subprocess.run([sys.executable, os.path.join(EXAMPLES,
                                                       "translate.py"),
                          "--beam", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    assert bad.returncode == 2 and "--beam must be 1 to 64" in bad.stderr
