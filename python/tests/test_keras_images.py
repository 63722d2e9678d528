# SPDX-License-Identifier: MIT
"""vtpu.keras.utils.image_dataset_from_directory (libvtpu's streamed image
folder) and Model.fit / evaluate / predict on it, on folders of PNG (RGB,
grayscale) and baseline JPEG files written here (no imaging module
needed: zlib for PNG, a small encoder below for JPEG): the batches
are the library's decoded pixels, a small net learns a separable task,
a streamed fit trains to the very weights of an in-memory one, bad files
are warnings, bad arguments errors naming them. Then
keras.applications (parameter counts against libvtpu's own) and
compile(fold_batch_norm=False) (predictions within 1e-5 of the folded
ones)."""
import os
import struct

import numpy as np
import pytest

import vtpu.datasets as datasets
import vtpu.keras as keras
from vtpu._ffi import ffi, lib
from test_imagefolder import write_png

SIZE = 12
CLASSES = ["left", "right", "top"]
PER_CLASS = 24


ZIGZAG = [8 * r + c for r, c in sorted(
    ((r, c) for r in range(8) for c in range(8)),
    key=lambda p: (p[0] + p[1], p[0] if (p[0] + p[1]) % 2 else p[1]))]
# the DCT-II of an 8x8 block as a matrix: F = T f T'
_T = np.array([[(np.sqrt(0.125) if u == 0 else 0.5) *
                np.cos((2 * x + 1) * u * np.pi / 16) for x in range(8)]
               for u in range(8)])


def _huffman(symbols, length):
    """A canonical code giving every one of @symbols @length bits: (the
    DHT segment's 16 counts and values, {symbol: (code, length)})."""
    counts = [0] * 16
    counts[length - 1] = len(symbols)
    return (bytes(counts) + bytes(symbols),
            {s: (i, length) for i, s in enumerate(symbols)})


def write_gray_jpeg(path, img):
    """@img uint8 (h, w) as a baseline grayscale JPEG: quantisation 1
    everywhere (nearly lossless), flat Huffman codes of our own (valid:
    every code is given in the file's DHT segments)."""
    h, w = img.shape
    ph, pw = -(-h // 8) * 8, -(-w // 8) * 8
    a = np.pad(img.astype(np.float64) - 128, ((0, ph - h), (0, pw - w)),
               mode="edge")
    dc_seg, dc = _huffman(list(range(12)), 4)
    ac_syms = [0x00, 0xF0] + [(r << 4) | s for r in range(16)
                              for s in range(1, 11)]
    ac_seg, ac = _huffman(ac_syms, 8)
    bits = []

    def put(code, n):
        bits.extend((code >> (n - 1 - i)) & 1 for i in range(n))

    def value(v):
        size = int(abs(v)).bit_length()
        return size, (v if v >= 0 else v + (1 << size) - 1)

    prev = 0
    for by in range(0, ph, 8):
        for bx in range(0, pw, 8):
            f = np.rint(_T @ a[by:by + 8, bx:bx + 8] @ _T.T).astype(int)
            z = f.reshape(64)[ZIGZAG]
            size, v = value(z[0] - prev)
            prev = z[0]
            put(*dc[size])
            put(v, size)
            run = 0
            for c in z[1:]:
                if c == 0:
                    run += 1
                    continue
                while run > 15:
                    put(*ac[0xF0])
                    run -= 16
                size, v = value(c)
                put(*ac[(run << 4) | size])
                put(v, size)
                run = 0
            if run:
                put(*ac[0x00])
    bits.extend([1] * (-len(bits) % 8))
    data = bytearray()
    for i in range(0, len(bits), 8):
        byte = int("".join(map(str, bits[i:i + 8])), 2)
        data.append(byte)
        if byte == 0xFF:
            data.append(0)

    def seg(marker, body):
        return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body

    with open(path, "wb") as out:
        out.write(b"\xff\xd8"
                  + seg(0xDB, b"\0" + bytes([1] * 64))
                  + seg(0xC0, struct.pack(">BHHBBBB", 8, h, w, 1, 1, 0x11,
                                          0))
                  + seg(0xC4, b"\x00" + dc_seg)
                  + seg(0xC4, b"\x10" + ac_seg)
                  + seg(0xDA, b"\x01\x01\x00\x00\x3f\x00")
                  + bytes(data) + b"\xff\xd9")


def picture(k, j):
    """Noise with a bright half: left, right or top by class @k."""
    rng = np.random.default_rng(1000 * k + j)
    img = rng.integers(0, 96, (SIZE, SIZE, 3), dtype=np.uint8)
    half = SIZE // 2
    if k == 0:
        img[:, :half] += 140
    elif k == 1:
        img[:, half:] += 140
    else:
        img[:half] += 140
    return img


@pytest.fixture
def folder(tmp_path):
    for k, name in enumerate(CLASSES):
        (tmp_path / name).mkdir()
        for j in range(PER_CLASS):
            img = picture(k, j)
            path = tmp_path / name / ("%02d.png" % j)
            if j % 4 == 3:      # every fourth a grayscale PNG
                write_png(path, img[..., 0])
            elif j % 4 == 1:    # and one a grayscale JPEG
                write_gray_jpeg(path.with_suffix(".jpg"), img[..., 0])
            else:
                write_png(path, img)
    return tmp_path


def load(folder, **kw):
    kw.setdefault("image_size", (SIZE, SIZE))
    kw.setdefault("verbose", False)
    return keras.utils.image_dataset_from_directory(folder, **kw)


def small_net(bn=True):
    layers = [keras.layers.Rescaling(1 / 255, input_shape=(SIZE, SIZE, 3)),
              keras.layers.Conv2D(6, 3)]
    if bn:
        layers.append(keras.layers.BatchNormalization())
    layers += [keras.layers.ReLU(), keras.layers.MaxPooling2D(2),
               keras.layers.Flatten(),
               keras.layers.Dense(3, activation="softmax")]
    m = keras.Sequential(layers)
    m.compile(optimizer=keras.optimizers.Adam(0.01),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              device="cpu", seed=11, threads=2)
    return m


# ---- the dataset ----------------------------------------------------------

def test_batches_are_the_loaders_pixels(folder, capsys):
    ds = keras.utils.image_dataset_from_directory(
        folder, image_size=(SIZE, SIZE), batch_size=10, shuffle=False,
        seed=3)
    assert "Found 72 files belonging to 3 classes." in capsys.readouterr().out
    assert ds.class_names == ["left", "right", "top"]
    assert len(ds) == 8 and ds.num_examples == 72
    batches = list(ds)
    assert [len(b[0]) for b in batches] == [10] * 7 + [2]
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    assert x.dtype == np.float32 and x.shape == (72, SIZE, SIZE, 3)
    assert y.dtype == np.int32 and np.bincount(y).tolist() == [24] * 3
    # the same files in the same order as the numpy loader's, same seed
    (ax, ay), _ = datasets.image_dataset_from_directory(
        folder, image_size=(SIZE, SIZE), seed=3)
    assert np.array_equal(x, ax) and np.array_equal(y, ay)
    # shuffled: another order each iteration, the same examples
    sh = load(folder, batch_size=10, seed=3)
    o1 = np.concatenate([b[0] for b in sh])
    o2 = np.concatenate([b[0] for b in sh])
    assert not np.array_equal(o1, o2)
    key = sorted(e.tobytes() for e in x)
    assert sorted(e.tobytes() for e in o1) == key
    assert sorted(e.tobytes() for e in o2) == key


def test_every_kind_of_file_decoded(folder):
    """Each example is its file's image: RGB PNGs exactly, grayscale PNGs
    copied to the three channels, the JPEGs (quantisation 1) within the
    IDCT's rounding."""
    ds = load(folder, seed=8, shuffle=False, batch_size=16)
    x = np.concatenate([b[0] for b in ds])
    paths = datasets.image_dataset_from_directory(
        folder, image_size=(SIZE, SIZE), seed=8).train_file_paths
    kinds = set()
    for img, path in zip(x, paths):
        cls, name = path.split(os.sep)[-2:]
        j = int(name[:2])
        want = picture(CLASSES.index(cls), j)
        if j % 4 in (1, 3):
            want = np.repeat(want[..., :1], 3, axis=2)
        err = np.abs(img - want).max()
        assert err <= (2 if name.endswith(".jpg") else 0), path
        kinds.add((name[-3:], j % 4 in (1, 3)))
    assert kinds == {("png", False), ("png", True), ("jpg", True)}


def test_label_modes_and_gray(folder):
    xb, yb = next(iter(load(folder, label_mode="categorical", seed=1)))
    assert yb.dtype == np.float32 and yb.shape == (32, 3)
    assert np.all(yb.sum(axis=1) == 1)
    only = next(iter(load(folder, label_mode=None, seed=1)))
    assert isinstance(only, np.ndarray) and only.shape == (32, SIZE, SIZE, 3)
    g = next(iter(load(folder, color_mode="grayscale", image_size=(4, 6),
                       seed=1)))[0]
    assert g.shape == (32, 4, 6, 1)
    with pytest.raises(ValueError, match="binary.*2 classes"):
        load(folder, label_mode="binary")
    (folder / "top").rename(folder / ".top")     # hidden: not a class
    xb, yb = next(iter(load(folder, label_mode="binary", seed=1)))
    assert yb.shape == (32, 1) and set(yb.ravel()) <= {0.0, 1.0}


def test_split_by_seed(folder, capsys):
    tr, va = load(folder, validation_split=0.25, subset="both", seed=5,
                  verbose=True)
    out = capsys.readouterr().out
    assert "Using 54 files for training." in out
    assert "Using 18 files for validation." in out
    assert (tr.num_examples, va.num_examples) == (54, 18)
    a = {e.tobytes() for b in tr for e in b[0]}
    v = {e.tobytes() for b in va for e in b[0]}
    assert len(a) == 54 and len(v) == 18 and not a & v
    only = load(folder, validation_split=0.25, subset="validation", seed=5,
                shuffle=False)
    assert {e.tobytes() for b in only for e in b[0]} == v
    other = load(folder, validation_split=0.25, subset="validation", seed=6)
    assert {e.tobytes() for b in other for e in b[0]} != v


# ---- models on it -----------------------------------------------------------

def test_fit_learns(folder):
    tr, va = load(folder, validation_split=0.25, subset="both", seed=5,
                  batch_size=8)
    m = small_net()
    h = m.fit(tr, epochs=12, validation_data=va, verbose=0)
    assert set(h.history) == {"loss", "accuracy", "val_loss",
                              "val_accuracy"}
    assert h.history["loss"][-1] < h.history["loss"][0]
    loss, acc = m.evaluate(va, verbose=0)
    assert acc > 0.8            # chance: 1/3
    assert abs(acc - h.history["val_accuracy"][-1]) < 1e-6
    # predict follows the dataset's order: unshuffled, the labels' order
    va2 = load(folder, validation_split=0.25, subset="validation", seed=5,
               shuffle=False)
    p = m.predict(va2, verbose=0)
    y = np.concatenate([b[1] for b in va2])
    assert p.shape == (18, 3)
    assert np.isclose(np.mean(p.argmax(axis=1) == y), acc)
    # numpy validation data with a dataset, and a dataset with numpy x
    xv = np.concatenate([b[0] for b in va2]).astype(np.uint8)
    m.fit(tr, epochs=1, validation_data=(xv, y), verbose=0)
    xt = np.concatenate([b[0] for b in load(folder, validation_split=0.25,
                                            subset="training", seed=5,
                                            shuffle=False)])
    yt = np.concatenate([b[1] for b in load(folder, validation_split=0.25,
                                            subset="training", seed=5,
                                            shuffle=False)])
    h = m.fit(xt.astype(np.uint8), yt, epochs=1, validation_data=va2,
              verbose=0)
    assert h.history["val_accuracy"][0] > 0.8


@pytest.mark.parametrize("shuffle", [True, False])
def test_streamed_fit_equals_in_memory(folder, shuffle):
    """vtpu_model_fit_stream() draws the order as vtpu_model_fit() does:
    the same files in the same order give the same weights, bit for bit."""
    ds = load(folder, seed=7, batch_size=8, shuffle=shuffle)
    (x, y), _ = datasets.image_dataset_from_directory(
        folder, image_size=(SIZE, SIZE), seed=7)
    a, b = small_net(), small_net()
    ha = a.fit(ds, epochs=2, verbose=0)
    hb = b.fit(x, y, batch_size=8, epochs=2, shuffle=shuffle, verbose=0)
    assert ha.streamed and not hb.streamed
    assert ha.history == hb.history
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)


def test_arrays_over_the_memory_cap_are_streamed():
    """compile(cpu_mem_cap=): a training set that does not fit is streamed
    by vtpu_model_fit() itself, to the same weights."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (3000, SIZE, SIZE, 3), dtype=np.uint8)
    y = rng.integers(0, 3, 3000)

    def net(cap):
        m = keras.Sequential([
            keras.layers.Conv2D(4, 3, input_shape=(SIZE, SIZE, 3)),
            keras.layers.Flatten(),
            keras.layers.Dense(3, activation="softmax")])
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  device="cpu", seed=2, cpu_mem_cap=cap)
        return m

    a, b = net(None), net(1 << 20)      # the set is 1.3 MB
    ha = a.fit(x, y, batch_size=32, epochs=2, verbose=0)
    hb = b.fit(x, y, batch_size=32, epochs=2, verbose=0)
    assert hb.streamed and not ha.streamed
    assert ha.history == hb.history
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)
    with pytest.raises(OSError, match="No space left"):
        net(4096).get_weights()
    with pytest.raises(ValueError, match="cpu_mem_cap"):
        net(0)
    m = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    with pytest.raises(ValueError, match="cpu_mem_cap is for device='cpu'"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  device="/dev/vtpu0", cpu_mem_cap=1 << 20)


def test_corrupt_file_is_a_warning(folder):
    (folder / "left" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n junk")
    ds = load(folder, seed=2, batch_size=8)
    assert ds.num_examples == 73
    m = small_net()
    with pytest.warns(RuntimeWarning) as rec:
        m.fit(ds, epochs=2, verbose=0)
    msgs = [str(r.message) for r in rec]
    assert any("broken.png: skipped" in s for s in msgs)
    assert any("fit: 2 examples of 2 epochs" in s for s in msgs)
    with pytest.warns(RuntimeWarning, match="broken.png: skipped"):
        n = sum(len(b[0]) for b in ds)
    assert n == 73 and ds.skipped == 1     # a good one took its slot


def test_dataset_errors(folder, tmp_path_factory):
    with pytest.raises(FileNotFoundError, match="nope"):
        load(folder / "nope")
    empty = tmp_path_factory.mktemp("empty")
    write_png(empty / "a.png", picture(0, 0))
    with pytest.raises(ValueError, match="no class folders"):
        load(empty)
    for size in [(0, 8), (8, 9000), (8,), "ab", 8, (8.5, 8)]:
        with pytest.raises((ValueError, TypeError), match="image_size"):
            load(folder, image_size=size)
    bad = [(dict(labels=[0, 1]), "labels"),
           (dict(labels=None), "labels"),
           (dict(label_mode="sparse"), "label_mode"),
           (dict(color_mode="rgba"), "color_mode"),
           (dict(batch_size=None), "batch_size"),
           (dict(batch_size=0), "batch_size"),
           (dict(interpolation="nearest"), "interpolation"),
           (dict(follow_links=True), "follow_links"),
           (dict(crop_to_aspect_ratio=True), "crop_to_aspect_ratio"),
           (dict(pad_to_aspect_ratio=True), "pad_to_aspect_ratio"),
           (dict(data_format="channels_first"), "data_format"),
           (dict(validation_split=0.2, seed=1), "subset"),
           (dict(subset="training"), "validation_split"),
           (dict(validation_split=0.2, subset="both"), "seed"),
           (dict(validation_split=1.5, subset="both", seed=1),
            "validation_split"),
           (dict(subset="all", validation_split=0.2, seed=1), "subset"),
           (dict(class_names=["a", "b", "c"]), "did not match"),
           (dict(class_names=["top", "left", "right"]), "sorted"),
           (dict(seed=-1), "seed")]
    for kw, what in bad:
        with pytest.raises(ValueError, match=what):
            load(folder, **kw)
    with pytest.raises(TypeError, match="smart_resize"):
        load(folder, smart_resize=True)


def test_model_rejects(folder):
    ds = load(folder, seed=1)
    m = small_net()
    with pytest.raises(ValueError, match="y is not supported"):
        m.fit(ds, np.zeros(72))
    with pytest.raises(ValueError, match="batch_size"):
        m.fit(ds, batch_size=4)
    with pytest.raises(ValueError, match="validation_split"):
        m.fit(ds, validation_split=0.2)
    with pytest.raises(ValueError, match="images are 8x8x3"):
        m.fit(load(folder, seed=1, image_size=(8, 8)))
    with pytest.raises(ValueError, match="label_mode='categorical'"):
        m.fit(load(folder, seed=1, label_mode="categorical"))
    with pytest.raises(ValueError, match="no labels"):
        m.evaluate(load(folder, seed=1, label_mode=None))
    with pytest.raises(ValueError, match="batch_size"):
        m.predict(ds, batch_size=4)
    assert m.predict(load(folder, seed=1, label_mode=None),
                     verbose=0).shape == (72, 3)
    c = keras.Sequential([keras.layers.Flatten(input_shape=(SIZE, SIZE, 3)),
                          keras.layers.Dense(3, activation="softmax")])
    c.compile(optimizer="adam", loss="categorical_crossentropy",
              device="cpu", seed=1)
    c.fit(load(folder, seed=1, label_mode="categorical"), verbose=0)
    with pytest.raises(ValueError, match="label_mode='int'"):
        c.evaluate(ds)


def test_token_models_refuse_datasets(folder):
    ds = load(folder, seed=1)
    inp = keras.Input(shape=(5,), dtype="int32")
    x = keras.layers.LSTM(4)(keras.layers.Embedding(10, 4)(inp))
    m = keras.Model(inp, keras.layers.Dense(3, activation="softmax")(x))
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              device="cpu")
    for call in (m.fit, m.evaluate, m.predict):
        with pytest.raises(TypeError, match="token inputs"):
            call(ds)


# ---- applications -----------------------------------------------------------

def c_params(fn, shape, classes, width):
    g = lib.vtpu_graph_create()
    try:
        x = lib.vtpu_graph_input(g, *shape)
        o = ffi.new("struct vtpu_app_opts *")
        o.sz = ffi.sizeof("struct vtpu_app_opts")
        o.width = width
        assert getattr(lib, fn)(g, x, classes, o) >= 0
        return lib.vtpu_graph_num_params(g)
    finally:
        lib.vtpu_graph_destroy(g)


@pytest.mark.parametrize("app,fn", [
    (keras.applications.ResNet18, "vtpu_app_resnet"),
    (keras.applications.Xception, "vtpu_app_xception")])
def test_applications_parameters(app, fn):
    for shape, classes, width in [((64, 64, 3), 5, 32), ((32, 48, 1), 7, 4),
                                  ((40, 40, 3), 2, 8)]:
        m = app(input_shape=shape, classes=classes, width=width)
        assert m.count_params() == c_params(fn, shape, classes, width)
        assert m.output_shape == (None, classes)
    # the sizes libvtpu's header gives (test_model.c's resnet count)
    if fn == "vtpu_app_resnet":
        assert app(input_shape=(64, 64, 3), classes=5).count_params() == \
            2800165 + 3 * 2400
    else:
        n = app(input_shape=(64, 64, 3), classes=5).count_params()
        assert 0.285e6 < n < 0.295e6
    # the weights libvtpu holds are what count_params says
    m = app(input_shape=(32, 32, 3), classes=3, width=4)
    ws = m.get_weights()
    assert sum(w.size for w in ws) == m.count_params()
    assert len(m.weight_names()) == len(ws)


def test_applications_train_like_any_model(folder):
    tr = load(folder, image_size=(32, 32), seed=4, batch_size=16)
    m = keras.applications.ResNet18(input_shape=(32, 32, 3), classes=3,
                                    width=4)
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              metrics=["accuracy"], device="cpu", seed=3)
    lines = []
    m.summary(print_fn=lines.append)
    assert lines[0] == 'Model: "%s"' % m.name
    assert any("Total params: {:,}".format(m.count_params()).replace(",", "")
               in s.replace(",", "") for s in lines)
    h = m.fit(tr, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])
    ws = m.get_weights()
    p = m.predict(tr, verbose=0)
    m.set_weights([w * 0 for w in ws])
    m.set_weights(ws)
    assert p.shape == (72, 3)
    lg = keras.applications.Xception(input_shape=(32, 32, 3), classes=3,
                                     width=4, classifier_activation=None)
    with pytest.raises(ValueError, match="from_logits=True"):
        lg.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    lg.compile(optimizer="adam", device="cpu", loss=keras.losses.
               SparseCategoricalCrossentropy(from_logits=True))
    lp = lg.predict(tr, verbose=0)
    assert np.allclose(np.exp(lp).sum(axis=1), 1, atol=1e-5)


def test_applications_errors():
    ok = dict(input_shape=(32, 32, 3), classes=3)
    for app in (keras.applications.ResNet18, keras.applications.Xception):
        for kw, what in [(dict(weights="imagenet"), "weights"),
                         (dict(include_top=False), "include_top"),
                         (dict(pooling="avg"), "pooling"),
                         (dict(classes=1000), "classes"),
                         (dict(classes=1), "classes"),
                         (dict(input_shape=(32, 32)), "input_shape"),
                         (dict(width=0), "width"),
                         (dict(classifier_activation="relu"),
                          "classifier_activation")]:
            with pytest.raises(ValueError, match=what):
                app(**dict(ok, **kw))
        with pytest.raises(TypeError, match="alpha"):
            app(alpha=1.0, **ok)
    with pytest.raises(ValueError, match="width"):
        keras.applications.ResNet18(width=1025, **ok)     # libvtpu's limit
    # 'same' padding all the way: even tiny images go through
    assert keras.applications.ResNet18(input_shape=(2, 2, 3), classes=3,
                                       width=2).output_shape == (None, 3)


# ---- batch norm folding -----------------------------------------------------

def bn_net(fold):
    # momentum 0.5: the moving statistics follow the batches' within the
    # few steps of the test
    inp = keras.Input(shape=(SIZE, SIZE, 3))
    x = keras.layers.Conv2D(6, 3)(inp)
    x = keras.layers.BatchNormalization(momentum=0.5)(x)
    x = keras.layers.ReLU()(x)
    y = keras.layers.Conv2D(6, 3, padding="same")(x)
    y = keras.layers.BatchNormalization(momentum=0.5, epsilon=1e-2)(y)
    x = keras.layers.Add()([x, y])
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(8)(x)
    x = keras.layers.BatchNormalization(momentum=0.5)(x)
    x = keras.layers.ReLU()(x)
    out = keras.layers.Dense(3, activation="softmax")(x)
    m = keras.Model(inp, out)
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              device="cpu", seed=5, fold_batch_norm=fold)
    return m


def test_fold_batch_norm_agrees():
    """compile(fold_batch_norm=False) (vtpu_compile_opts.no_bn_fold) runs
    the batch norms as such; folded into the convolutions and the dense
    layer they give the same predictions within 1e-5."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 256, (40, SIZE, SIZE, 3)) / 255.0
    y = rng.integers(0, 3, 40)
    folded, plain = bn_net(True), bn_net(False)
    folded.fit(x, y, epochs=3, batch_size=8, verbose=0)
    # scales and offsets away from the identity: the folding has work
    ws = []
    for w, (layer, name, _) in zip(folded.get_weights(),
                                   folded._weight_list()):
        kind = name.split("/")[-1]
        if kind == "gamma":
            w = rng.uniform(0.5, 2, w.shape).astype(np.float32)
        elif kind == "beta":
            w = rng.normal(0, 0.5, w.shape).astype(np.float32)
        ws.append(w)
    folded.set_weights(ws)
    plain.set_weights(ws)
    pf, pp = folded.predict(x, verbose=0), plain.predict(x, verbose=0)
    print("fold: max |difference| %.3g" % np.max(np.abs(pf - pp)))
    assert np.max(np.abs(pf - pp)) <= 1e-5
    assert np.min(pf) < 0.2 and np.max(pf) > 0.5   # not uniform
    lf = folded.evaluate(x, y, verbose=0)
    lp = plain.evaluate(x, y, verbose=0)
    assert abs(lf - lp) <= 1e-5 * max(1, abs(lp))
    with pytest.raises(TypeError, match="fold_batch_norm"):
        bn_net("no")
