# SPDX-License-Identifier: MIT
"""vtpu.keras models of token inputs on the host (libvtpu's cpu backend):
the encoder-decoder with attention of examples/translate.c written as
Keras functional code, trained on a small copy task until greedy decoding
gets it right; shapes, summary, weights in Keras' names and layouts, and
every refusal."""
import re

import numpy as np
import pytest

import vtpu.keras as keras
from vtpu import text
from vtpu.keras import layers as L

TS, TT, VS, VT = 8, 8, 12, 12      # steps and vocabularies (ids 4.. are words)


def copy_task(n, seed):
    """Sentences of 3..6 ids in 4..11 to themselves: (source, decoder
    input <start> y.., labels y.. <end>), padded with 0."""
    rng = np.random.default_rng(seed)
    src = np.zeros((n, TS), np.int32)
    dec = np.zeros((n, TT), np.int32)
    lab = np.zeros((n, TT), np.int32)
    for i in range(n):
        k = rng.integers(3, 7)
        s = rng.integers(4, VS, k)
        src[i, :k] = s
        dec[i, :k + 1] = [1] + list(s)
        lab[i, :k + 1] = list(s) + [2]
    return src, dec, lab


def seq2seq(units=32, embed=16, softmax=False, additive=0):
    """The model of the issue's sketch, small (additive > 0: Bahdanau's
    attention of so many units). Returns (model, tgt)."""
    src = keras.Input(shape=(TS,), dtype="int32")
    tgt = keras.Input(shape=(TT,), dtype="int32")
    x = L.Embedding(VS, embed, mask_zero=True)(src)
    enc_seq, h, c = L.LSTM(units, return_sequences=True,
                           return_state=True)(x)
    y = L.Embedding(VT, embed)(tgt)
    dec_seq = L.LSTM(units, return_sequences=True)(y, initial_state=[h, c])
    ctx = L.BahdanauAttention(additive)([dec_seq, enc_seq]) if additive \
        else L.Attention()([dec_seq, enc_seq])
    z = L.Concatenate()([ctx, dec_seq])
    z = L.Dense(units, activation="tanh")(z)
    logits = L.Dense(VT, activation="softmax" if softmax else None)(z)
    return keras.Model(inputs=[src, tgt], outputs=logits), tgt


def compiled(model, lr=1e-2, from_logits=True, **kw):
    loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=from_logits, ignore_class=0) if from_logits else \
        "sparse_categorical_crossentropy"
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=lr),
                  loss=loss, metrics=["accuracy"], device="cpu", seed=1,
                  threads=1, **kw)
    return model


def refuses_ignore_class(model):
    """compile(ignore_class=...) is for sequence outputs only."""
    with pytest.raises(ValueError, match="ignore_class"):
        model.compile(optimizer="adam", device="cpu",
                      loss=keras.losses.SparseCategoricalCrossentropy(
                          ignore_class=0))


@pytest.fixture(scope="module")
def trained():
    keras.backend.clear_session()
    model, tgt = seq2seq()
    compiled(model)
    src, dec, lab = copy_task(1500, 1)
    val = copy_task(200, 2)
    hist = model.fit([src, dec], lab, batch_size=64, epochs=15,
                     validation_data=([val[0], val[1]], val[2]), verbose=0)
    return model, tgt, hist, val


def test_fit_learns_and_decode_copies(trained):
    model, tgt, hist, (vs, vd, vl) = trained
    loss = hist.history["loss"]
    assert loss[-1] < loss[0] / 5, loss
    assert hist.history["val_accuracy"][-1] > 0.9, hist.history
    ids = model.decode([vs, None], target=tgt)
    assert ids.shape == (len(vs), TT) and ids.dtype == np.int32
    right = 0
    for i in range(len(vs)):
        n = int(np.sum(vl[i] > 0))
        right += bool((ids[i, :n] == vl[i, :n]).all())
    assert right >= 0.8 * len(vs), (right, ids[:4], vl[:4])
    # the target's ids are not read: any values give the same output
    again = model.decode([vs, np.full_like(vd, 5)], target=1)
    assert (again == ids).all()
    assert (model.decode([vs, None], target=tgt.name) == ids).all()


def _end_len(row):
    """Ids up to and including the first END (2), or all."""
    ends = np.flatnonzero(row == 2)
    return int(ends[0]) + 1 if len(ends) else len(row)


def test_beam_search(trained):
    model, tgt, _, (vs, vd, vl) = trained
    vs = vs[:60]
    greedy = model.decode([vs, None], target=tgt)
    # width 1 is greedy to the first END, padding after it
    one, s1 = model.decode([vs, None], target=tgt, return_scores=True)
    for g, b in zip(greedy, one):
        n = _end_len(g)
        assert (b[:n] == g[:n]).all() and (b[n:] == 0).all(), (g, b)
    ids, scores = model.decode([vs, None], target=tgt, beam_width=4,
                               return_scores=True)
    assert ids.shape == greedy.shape and ids.dtype == np.int32
    assert scores.shape == (len(vs),) and scores.dtype == np.float32
    assert (model.decode([vs, None], target=tgt, beam_width=4) == ids).all()

    def logprob(y):
        """Teacher-forced: <start> y.. fed, log p of y.. to END summed
        (the model is from_logits: predict gives log-probabilities)."""
        dec = np.zeros_like(y)
        dec[:, 0] = 1
        lens = [_end_len(r) for r in y]
        for i, n in enumerate(lens):
            dec[i, 1:n] = y[i, :n - 1]
        lp = model.predict([vs, dec], verbose=0)
        return np.array([sum(float(lp[i, t, y[i, t]]) for t in range(n))
                         for i, n in enumerate(lens)])

    lb, lg = logprob(ids), logprob(greedy)
    assert np.allclose(scores, lb, atol=1e-4), (scores, lb)
    assert np.allclose(s1, lg, atol=1e-4), (s1, lg)
    assert (lb >= lg - 1e-5).all(), (lb, lg)
    # normalised by length: ranked otherwise, scored the same way
    ids, scores = model.decode([vs, None], target=tgt, beam_width=3,
                               length_penalty=0.6, return_scores=True)
    assert np.allclose(scores, logprob(ids), atol=1e-4)
    with pytest.raises(ValueError, match=r"beam_width must be an integer "
                       r"in \[1, 64\], not 0"):
        model.decode([vs, None], target=tgt, beam_width=0)
    with pytest.raises(ValueError, match="beam_width"):
        model.decode([vs, None], target=tgt, beam_width=65)
    with pytest.raises(TypeError, match="beam_width"):
        model.decode([vs, None], target=tgt, beam_width=2.0)
    with pytest.raises(ValueError, match="length_penalty"):
        model.decode([vs, None], target=tgt, beam_width=2,
                     length_penalty=-1)
    # wider than the output's classes (VT = 12)
    with pytest.raises(ValueError, match="beam width 13: 1 to 12"):
        model.decode([vs, None], target=tgt, beam_width=13)


def test_evaluate_and_predict(trained):
    model, _, hist, (vs, vd, vl) = trained
    loss, acc = model.evaluate([vs, vd], vl, verbose=0)
    assert loss == pytest.approx(hist.history["val_loss"][-1], rel=1e-5)
    assert acc == pytest.approx(hist.history["val_accuracy"][-1], rel=1e-5)
    logp = model.predict([vs, vd], verbose=0)
    assert logp.shape == (len(vs), TT, VT) and logp.dtype == np.float32
    # from_logits: log-probabilities, as Model.predict gives them
    np.testing.assert_allclose(np.exp(logp).sum(-1), 1, rtol=1e-4)
    # the loss from them: the mean over the labels that are not padding
    ref = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0)(vl, logp)
    assert ref == pytest.approx(loss, rel=1e-4)
    assert model.evaluate([vs, vd], vl, verbose=0, return_dict=True) == {
        "loss": loss, "accuracy": acc}


def test_weights_in_keras_names_and_layouts(trained, tmp_path):
    model, _, _, (vs, vd, _) = trained
    emb = model.get_layer("embedding")
    assert [w.shape for w in emb.get_weights()] == [(VS, 16)]
    lstm = model.layers[3]
    assert isinstance(lstm, L.LSTM)
    k, r, b = lstm.get_weights()
    assert (k.shape, r.shape, b.shape) == ((16, 128), (32, 128), (128,))
    ws = model.get_weights()
    assert [w.shape for w in ws] == [
        (VS, 16), (16, 128), (32, 128), (128,), (VT, 16), (16, 128),
        (32, 128), (128,), (64, 32), (32,), (32, VT), (VT,)]
    before = model.predict([vs, vd], verbose=0)
    # a fresh model of the same structure takes them and predicts alike
    other, _ = seq2seq()
    compiled(other)
    other.set_weights(ws)
    np.testing.assert_allclose(other.predict([vs, vd], verbose=0), before,
                               rtol=1e-5, atol=1e-5)
    for a, w in zip(other.get_weights(), ws):
        assert (a == w).all()
    # .npz files carry libvtpu's names
    path = str(tmp_path / "w.npz")
    model.save_weights(path)
    with np.load(path) as f:
        assert {"embedding/embeddings", "lstm/kernel",
                "lstm/recurrent_kernel", "lstm_1/bias", "dense_1/kernel",
                "embedding_1/embeddings"} <= set(f.files)
    with pytest.raises(ValueError, match="lstm.*recurrent_kernel.*shape"):
        lstm.set_weights([k, r[:, :4], b])


def test_checkpoint_bound_to_its_vocabulary(trained, tmp_path):
    """save_weights(metadata=) binds the checkpoint to the vocabulary the
    copy task's ids stand for; load_weights(metadata=) takes the same one
    read back from its file and refuses another of the same size (which
    the shapes alone accept), loading nothing."""
    model = trained[0]
    ours = text.Vocabulary(["a b c d", "e f g h"])
    theirs = text.Vocabulary(["i j k l", "m n o p"])
    assert len(ours) == len(theirs) == VS
    ours.save(str(tmp_path / "src.vocab"))
    back = text.Vocabulary.load(str(tmp_path / "src.vocab"))
    assert back.fingerprint == ours.fingerprint != theirs.fingerprint
    assert re.fullmatch("[0-9a-f]{16}", ours.fingerprint)
    path = tmp_path / "s2s.ckpt"
    model.save_weights(path, metadata={"source vocabulary": ours.fingerprint,
                                       "task": "copy"})
    other, _ = seq2seq()
    compiled(other)
    before = other.get_weights()
    with pytest.raises(ValueError, match="the checkpoint's 'source "
                       "vocabulary' is '%s', not '%s'"
                       % (ours.fingerprint, theirs.fingerprint)):
        other.load_weights(path, metadata={
            "source vocabulary": theirs.fingerprint})
    with pytest.raises(ValueError, match="has no 'target vocabulary'"):
        other.load_weights(path, metadata={
            "target vocabulary": ours.fingerprint})
    for a, b in zip(other.get_weights(), before):
        assert (a == b).all()
    other.load_weights(path, metadata={"source vocabulary": back.fingerprint})
    for a, b in zip(other.get_weights(), model.get_weights()):
        assert (a == b).all()
    other.load_weights(path)            # without metadata: not checked
    model.save_weights(path)            # and saved without: none to match
    with pytest.raises(ValueError, match="the checkpoint has no 'source "
                       "vocabulary'"):
        other.load_weights(path, metadata={
            "source vocabulary": ours.fingerprint})
    with pytest.raises(ValueError, match="a NUL"):
        model.save_weights(path, metadata={"task": "co\0py"})
    with pytest.raises(ValueError, match="not .npz files"):
        model.save_weights(tmp_path / "w.npz", metadata={"task": "copy"})
    with pytest.raises(TypeError, match="keys and values are str"):
        model.save_weights(path, metadata={"task": 1})


def test_summary_and_shapes(fresh_names):
    model, _ = seq2seq()
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "lstm (LSTM)" in text and "'lstm[0][1]'" in text, text
    # LSTM(return_state=True)'s three outputs, wrapped as Keras does
    assert re.search(r"lstm \(LSTM\) +\[\(None, 8, 32\),.*\n +\(None, 32\),"
                     r".*\n +\(None, 32\)\]", text), text
    assert "attention (Attention)" in text and "(None, 8, 64)" in text
    e, lstm, lstm_1 = (model.get_layer(n) for n in
                       ("embedding", "lstm", "lstm_1"))
    assert e.count_params() == VS * 16
    assert lstm.count_params() == 16 * 128 + 32 * 128 + 128
    assert model.count_params() == sum(
        layer.count_params() for layer in model.layers)
    assert model.input_shape == [(None, TS), (None, TT)]
    assert model.output_shape == (None, TT, VT)
    assert model.inputs[0].dtype == "int32"
    # return_sequences=False: the last h
    x = keras.Input(shape=(5,), dtype="int32")
    h = L.LSTM(7)(L.Embedding(10, 3)(x))
    assert h.shape == (None, 7)
    assert L.LSTM(4, return_sequences=True).compute_output_shape(
        (None, 5, 3)) == (None, 5, 4)
    # weights before compile(): the model is made for them
    other, _ = seq2seq(units=4, embed=2, softmax=True)
    assert len(other.get_weights()) == 12


def test_softmax_output_and_a_vector_output(fresh_names):
    # Dense(softmax) and the plain loss: probabilities from predict
    model, tgt = seq2seq(units=8, embed=4, softmax=True)
    compiled(model, from_logits=False)
    src, dec, lab = copy_task(64, 3)
    model.fit([src, dec], lab, epochs=1, batch_size=32, verbose=0)
    p = model.predict([src, dec], verbose=0)
    np.testing.assert_allclose(p.sum(-1), 1, rtol=1e-4)
    assert (p >= 0).all()
    # a classifier on the encoder's last state: one label per example
    x = keras.Input(shape=(TS,), dtype="int32")
    h = L.LSTM(8)(L.Embedding(VS, 4)(x))
    clf = keras.Model(x, L.Dense(3, activation="softmax")(h))
    clf.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                metrics=["accuracy"], device="cpu", seed=1)
    y = (src[:, 0] % 3).astype(np.int64)
    clf.fit(src, y, epochs=2, batch_size=32, verbose=0)
    assert clf.predict(src, verbose=0).shape == (64, 3)
    assert len(clf.evaluate(src, y, verbose=0)) == 2
    refuses_ignore_class(clf)


def test_validation_split(fresh_names):
    model, _ = seq2seq(units=8, embed=4)
    compiled(model)
    src, dec, lab = copy_task(100, 4)
    h = model.fit([src, dec], lab, epochs=1, batch_size=20,
                  validation_split=0.2, verbose=0)
    assert set(h.history) == {"loss", "accuracy", "val_loss",
                              "val_accuracy"}


# ---- data refused --------------------------------------------------------

@pytest.fixture
def small(fresh_names):
    model, tgt = seq2seq(units=8, embed=4)
    compiled(model)
    return model, tgt, copy_task(40, 5)


def test_bad_data(small):
    model, tgt, (src, dec, lab) = small
    bad = src.copy()
    bad[3, 2] = VS
    with pytest.raises(ValueError, match=r"x\[0\] \(input 'input_1'\): id "
                       r"12 at example 3, step 2 is not below the "
                       r"vocabulary \(input_dim\) 12"):
        model.fit([bad, dec], lab, verbose=0)
    bad = src.copy()
    bad[0, 0] = -1
    with pytest.raises(ValueError, match="negative"):
        model.predict([bad, dec], verbose=0)
    bad = lab.copy()
    bad[5, 1] = VT
    with pytest.raises(ValueError, match=r"label 12 at example 5, step 1 is "
                       r"not below the output's 12 classes"):
        model.fit([src, dec], bad, verbose=0)
    with pytest.raises(ValueError, match=r"shape \(40, 7\): the input takes "
                       r"\(n, 8\)"):
        model.fit([src[:, :7], dec], lab, verbose=0)
    with pytest.raises(ValueError, match=r"labels \(40, 8\)"):
        model.fit([src, dec], lab[:, :6], verbose=0)
    with pytest.raises(ValueError, match="39 examples"):
        model.fit([src, dec[:39]], lab, verbose=0)
    with pytest.raises(ValueError, match="1 arrays for the model's 2 inputs"):
        model.fit(src, lab, verbose=0)
    with pytest.raises(TypeError, match="integer ids"):
        model.predict([src + 0.5, dec], verbose=0)
    with pytest.raises(ValueError, match=r"x\[0\].*is None"):
        model.decode([None, dec], target=tgt)
    with pytest.raises(ValueError, match="validation_data"):
        model.fit([src, dec], lab, verbose=0,
                  validation_data=([src, dec], lab[:, :3]))
    with pytest.raises(ValueError, match="not one of the model's inputs"):
        model.decode([src, None], target=keras.Input(shape=(TT,),
                                                     dtype="int32"))
    with pytest.raises(ValueError, match="not one of the model's inputs"):
        model.decode([src, None], target=2)
    # nothing above compiled a model or changed its weights
    w = model.get_weights()
    model.fit([src, dec], lab, epochs=1, verbose=0)
    assert any((a != b).any() for a, b in zip(model.get_weights(), w))


def test_decode_needs_a_target_as_long_as_the_output(fresh_names):
    src = keras.Input(shape=(TS,), dtype="int32")
    tgt = keras.Input(shape=(TT - 2,), dtype="int32")
    enc = L.LSTM(8, return_state=True)(L.Embedding(VS, 4)(src))
    dec = L.LSTM(8, return_sequences=True)(L.Embedding(VT, 4)(tgt),
                                           initial_state=enc[1:])
    model = keras.Model([src, tgt], L.Dense(VT)(dec))
    compiled(model)
    s, d, _ = copy_task(10, 6)
    with pytest.raises(ValueError, match="target 'input_1' has 8 steps, "
                       "the output 6"):
        model.decode([None, d[:, :6]], target=src)
    assert model.decode([s, None], target=tgt).shape == (10, 6)
    # a model of a vector output has nothing to decode
    x = keras.Input(shape=(TS,), dtype="int32")
    clf = keras.Model(x, L.Dense(3)(L.LSTM(4)(L.Embedding(VS, 2)(x))))
    _compile(clf)
    with pytest.raises(ValueError, match="not a sequence"):
        clf.decode([s], target=x)


# ---- models and layers refused ------------------------------------------

def tokens(steps=TS):
    return keras.Input(shape=(steps,), dtype="int32")


def seq(steps=TS, dim=8, vocab=VS, mask=False):
    return L.Embedding(vocab, dim, mask_zero=mask)(tokens(steps))


LAYER_ERRORS = [
    (lambda: L.Embedding(0, 4), ValueError, "input_dim"),
    (lambda: L.Embedding(10, 4, embeddings_initializer="normal"),
     ValueError, "embeddings_initializer"),
    (lambda: L.Embedding(10, 4, embeddings_regularizer="l2"), ValueError,
     "embeddings_regularizer"),
    (lambda: L.Embedding(10, 4, mask_zero=1), TypeError, "mask_zero"),
    (lambda: L.Embedding(10, 4)(keras.Input(shape=(5,))), ValueError,
     "integer Input"),
    (lambda: L.Embedding(10, 4, input_length=4)(tokens(5)), ValueError,
     "input_length"),
    (lambda: L.Embedding(10, 4)(seq()), ValueError, "integer Input"),
    (lambda: L.LSTM(0), ValueError, "units"),
    (lambda: L.LSTM(4, activation="relu"), ValueError, "activation"),
    (lambda: L.LSTM(4, recurrent_activation="hard_sigmoid"), ValueError,
     "recurrent_activation"),
    (lambda: L.LSTM(4, dropout=0.1), ValueError, "dropout"),
    (lambda: L.LSTM(4, recurrent_dropout=0.1), ValueError,
     "recurrent_dropout"),
    (lambda: L.LSTM(4, go_backwards=True), ValueError, "go_backwards"),
    (lambda: L.LSTM(4, stateful=True), ValueError, "stateful"),
    (lambda: L.LSTM(4, unit_forget_bias=False), ValueError,
     "unit_forget_bias"),
    (lambda: L.LSTM(4, use_bias=False), ValueError, "use_bias"),
    (lambda: L.LSTM(4, recurrent_initializer="identity"), ValueError,
     "recurrent_initializer"),
    (lambda: L.LSTM(4)(tokens()), ValueError, "Embedding"),
    (lambda: L.LSTM(4)(keras.Input(shape=(5, 3))), ValueError,
     "takes a sequence"),
    (lambda: L.LSTM(4)(seq(), initial_state=[L.LSTM(5)(seq())] * 2),
     ValueError, "initial_state's h"),
    (lambda: L.LSTM(4)(seq(), initial_state=[L.LSTM(4)(seq())]),
     ValueError, r"\[h, c\]"),
    (lambda: L.LSTM(4)(seq(), mask=np.ones(3)), ValueError, "mask"),
    (lambda: L.GRU(0), ValueError, "units"),
    (lambda: L.GRU(4, reset_after=False), ValueError, "reset_after"),
    (lambda: L.GRU(4, activation="relu"), ValueError, "activation"),
    (lambda: L.GRU(4, dropout=0.1), ValueError, "dropout"),
    (lambda: L.GRU(4, seed=3), ValueError, "seed"),
    (lambda: L.GRU(4, use_cudnn=True), ValueError, "use_cudnn"),
    (lambda: L.GRU(4, recurrent_initializer="identity"), ValueError,
     "recurrent_initializer"),
    (lambda: L.GRU(4, bias_initializer="ones"), ValueError,
     "bias_initializer"),
    (lambda: L.GRU(4)(tokens()), ValueError, "Embedding"),
    (lambda: L.GRU(4)(seq(), initial_state=L.GRU(5)(seq())), ValueError,
     "initial_state's h"),
    (lambda: L.GRU(4)(seq(), initial_state=[L.GRU(4)(seq())] * 2),
     ValueError, r"\[h\]"),
    (lambda: L.GRU(4)(seq(), initial_state=L.GRU(
        4, return_sequences=True)(seq())), ValueError, "initial_state's h"),
    (lambda: L.Attention(use_scale=True), ValueError, "use_scale"),
    (lambda: L.Attention(score_mode="concat"), ValueError, "score_mode"),
    (lambda: L.Attention(dropout=0.1), ValueError, "dropout"),
    (lambda: L.Attention()([seq(dim=8), seq(dim=6)]), ValueError,
     "same features"),
    (lambda: L.Attention()(seq()), ValueError, r"\[query, value\]"),
    (lambda: L.Attention()([seq(), seq(), seq()]), ValueError, "key"),
    (lambda: L.Attention()([seq(), seq()], return_attention_scores=True),
     ValueError, "return_attention_scores"),
    (lambda: L.Attention()([seq(), L.LSTM(8)(seq())]), ValueError,
     "takes a sequence"),
    (lambda: L.BahdanauAttention(0), ValueError, "units"),
    (lambda: L.BahdanauAttention(4097), ValueError, "units"),
    (lambda: L.BahdanauAttention(8)(seq()), ValueError,
     r"\[query, value\]"),
    (lambda: L.BahdanauAttention(8)([seq(), L.LSTM(8)(seq())]), ValueError,
     "takes a sequence"),
    (lambda: L.BahdanauAttention(4096)([seq(steps=65), seq()]), ValueError,
     "steps \\* units"),
    (lambda: L.Concatenate(axis=1), ValueError, "axis"),
    (lambda: L.Concatenate()([seq(), seq(), seq()]), ValueError,
     "2 inputs"),
    (lambda: L.Concatenate()([seq(steps=5), seq(steps=6)]), ValueError,
     "same steps"),
    (lambda: L.LSTM(4)(L.Concatenate()([seq(), seq()])), ValueError,
     "feeds Dense layers only"),
    (lambda: L.Dense(4)(tokens()), ValueError, "Embedding"),
    (lambda: L.Flatten()(seq()), ValueError, "images only"),
    (lambda: L.Conv2D(2, 3)(seq()), ValueError, "images"),
    (lambda: keras.Input(shape=(4, 2), dtype="int32"), ValueError,
     r"\(steps,\)"),
]


@pytest.mark.parametrize("make,exc,match", LAYER_ERRORS)
def test_layer_errors(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_dense_on_a_sequence_and_tanh():
    x = seq(dim=6)
    y = L.Dense(5, activation="tanh")(x)
    assert y.shape == (None, TS, 5)
    assert L.Dense(3)(L.LSTM(4)(x)).shape == (None, 3)


def _compile(model, **kw):
    model.compile(optimizer="adam", device="cpu",
                  loss=kw.pop("loss", keras.losses.
                              SparseCategoricalCrossentropy(
                                  from_logits=True)), **kw)


def test_model_errors(fresh_names):
    def model(last=None):
        src = tokens()
        s = L.LSTM(4, return_sequences=True)(L.Embedding(VS, 4)(src))
        return keras.Model(src, last(s) if last else L.Dense(VT)(s))

    # a last layer that is no Dense, softmax out of place, the wrong loss
    with pytest.raises(ValueError, match="ends in"):
        _compile(model(L.LSTM(4, return_sequences=True)))
    with pytest.raises(ValueError, match="no activation"):
        _compile(model(), loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="from_logits=True, but"):
        _compile(model(lambda s: L.Dense(VT, activation="softmax")(s)))
    with pytest.raises(ValueError, match="not the model's last layer"):
        _compile(model(lambda s: L.Dense(VT)(L.Dense(
            5, activation="softmax")(s))))
    with pytest.raises(ValueError, match="categorical_crossentropy.*class "
                       "ids"):
        _compile(model(), loss=keras.losses.CategoricalCrossentropy(
            from_logits=True))
    with pytest.raises(ValueError, match="1 units"):
        _compile(model(lambda s: L.Dense(1)(s)))
    with pytest.raises(ValueError, match="ignore_class"):
        keras.losses.SparseCategoricalCrossentropy(ignore_class=-1)
    src = tokens()
    logits = L.Dense(VT)(L.Embedding(VS, 4)(src))
    # inputs: disconnected, mixed with images, too many
    other = tokens()
    y = L.Concatenate()([L.Embedding(VS, 4)(other), L.Embedding(VS, 4)(
        tokens())])
    with pytest.raises(ValueError, match="disconnected"):
        keras.Model([other], L.Dense(VT)(y))
    img = keras.Input(shape=(4,))
    with pytest.raises(ValueError, match="either one input of images"):
        keras.Model([tokens(), img], L.Dense(VT)(L.Embedding(VS, 4)(
            tokens())))
    with pytest.raises(ValueError, match="up to 8"):
        ins = [tokens() for _ in range(9)]
        keras.Model(ins, L.Dense(VT)(L.Embedding(VS, 4)(ins[0])))
    with pytest.raises(ValueError, match="one output"):
        keras.Model(src, [logits, logits])
    with pytest.raises(NotImplementedError, match="Sequential"):
        keras.Sequential([keras.layers.InputLayer(shape=(5,),
                                                  dtype="int32"),
                          L.Embedding(10, 3)])
    # the image model refuses ignore_class
    m = keras.Sequential([L.Dense(2, input_shape=(3,),
                                  activation="softmax")])
    refuses_ignore_class(m)


def test_model_is_a_keras_model(fresh_names):
    model, _ = seq2seq(units=4, embed=2)
    assert isinstance(model, keras.Model)
    assert [type(l).__name__ for l in model.layers] == [
        "InputLayer", "InputLayer", "Embedding", "LSTM", "Embedding", "LSTM",
        "Attention", "Concatenate", "Dense", "Dense"]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_numbers_match_keras_formulas(fresh_names):
    """predict against numpy written from Keras' definitions, with the
    weights get_weights() gives: the LSTM's gates i, f, c, o in its
    kernels' columns, Luong attention masked at the source's padding
    (the steps from its first 0 on), Dense on each step."""
    src = tokens()
    e = L.Embedding(VS, 5, mask_zero=True)(src)
    s = L.LSTM(6, return_sequences=True)(e)
    a = L.Attention()([s, s])
    out = L.Dense(VT)(L.Concatenate()([a, s]))
    model = keras.Model(src, out)
    _compile(model)
    x, _, _ = copy_task(6, 7)
    x[0, 5] = 7         # ids after the padding: embedded, but masked
    emb, k, r, b, dk, db = model.get_weights()
    logp = model.predict(x, verbose=0)
    for n in range(len(x)):
        h, c = np.zeros(6), np.zeros(6)
        hs = []
        for t in range(TS):
            z = emb[x[n, t]] @ k + h @ r + b
            i, f, g, o = np.split(z, 4)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            hs.append(h)
        hs = np.array(hs)
        length = int(np.argmax(x[n] == 0)) if (x[n] == 0).any() else TS
        score = hs @ hs.T
        score[:, length:] = -np.inf
        w = np.exp(score - score.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        logits = np.concatenate([w @ hs, hs], 1) @ dk + db
        ref = logits - logits.max(1, keepdims=True)
        ref -= np.log(np.exp(ref).sum(1, keepdims=True))
        np.testing.assert_allclose(logp[n], ref, rtol=1e-4, atol=1e-4)


# ---- GRU -------------------------------------------------------------------

def gru_seq2seq(units=16, embed=8):
    """The encoder-decoder with GRUs: the encoder's h starts the decoder."""
    src = keras.Input(shape=(TS,), dtype="int32")
    tgt = keras.Input(shape=(TT,), dtype="int32")
    x = L.Embedding(VS, embed, mask_zero=True)(src)
    enc_seq, h = L.GRU(units, return_sequences=True, return_state=True)(x)
    y = L.Embedding(VT, embed)(tgt)
    dec_seq = L.GRU(units, return_sequences=True)(y, initial_state=h)
    ctx = L.Attention()([dec_seq, enc_seq])
    z = L.Dense(units, activation="tanh")(L.Concatenate()([ctx, dec_seq]))
    return keras.Model(inputs=[src, tgt], outputs=L.Dense(VT)(z)), tgt


def np_gru(x, k, r, b, h):
    """Keras' GRUCell (reset_after=True) over x (batch, steps, features)."""
    def sig(v):
        return 1 / (1 + np.exp(-v))

    u = r.shape[0]
    ys = []
    for t in range(x.shape[1]):
        xp = x[:, t] @ k + b[0]
        hp = h @ r + b[1]
        z = sig(xp[:, :u] + hp[:, :u])
        rr = sig(xp[:, u:2 * u] + hp[:, u:2 * u])
        hh = np.tanh(xp[:, 2 * u:] + rr * hp[:, 2 * u:])
        h = z * h + (1 - z) * hh
        ys.append(h)
    return np.stack(ys, 1)


def test_gru_in_keras_layouts_against_numpy(fresh_names):
    # Embedding -> GRU -> GRU(initial_state=[h]) -> Dense, Keras' weights
    x = keras.Input(shape=(6,), dtype="int32")
    e = L.Embedding(VS, 5)(x)
    s1, h1 = L.GRU(4, return_sequences=True, return_state=True)(e)
    s2 = L.GRU(4, return_sequences=True)([s1, h1])
    model = keras.Model(x, L.Dense(VT)(s2))
    _compile(model)
    g1, g2 = model.get_layer("gru"), model.get_layer("gru_1")
    assert [w.shape for w in g1.get_weights()] == [(5, 12), (4, 12),
                                                   (2, 12)]
    assert g1.count_params() == 5 * 12 + 4 * 12 + 2 * 12
    rng = np.random.default_rng(7)
    ws = [rng.uniform(-0.8, 0.8, w.shape).astype(np.float32)
          for w in model.get_weights()]
    model.set_weights(ws)
    ids = rng.integers(1, VS, (5, 6)).astype(np.int32)
    emb = ws[0][ids].astype(np.float64)
    y1 = np_gru(emb, *ws[1:4], np.zeros((5, 4)))
    y2 = np_gru(y1, *ws[4:7], y1[:, -1])
    logits = y2 @ ws[7] + ws[8]
    want = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(model.predict(ids, verbose=0), want,
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="gru.*bias.*shape"):
        g2.set_weights(g2.get_weights()[:2] + [np.zeros(24, np.float32)])


def test_gru_summary_and_shapes(fresh_names):
    model, _ = gru_seq2seq(units=32, embed=16)
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "gru (GRU)" in text and "'gru[0][1]'" in text, text
    # GRU(return_state=True)'s two outputs
    assert re.search(r"gru \(GRU\) +\[\(None, 8, 32\),.*\n +\(None, 32\)\]",
                     text), text
    assert model.get_layer("gru").count_params() == \
        16 * 96 + 32 * 96 + 2 * 96
    assert model.count_params() == sum(
        layer.count_params() for layer in model.layers)
    h = L.GRU(7)(seq())
    assert h.shape == (None, 7)
    assert L.GRU(4, return_sequences=True).compute_output_shape(
        (None, 5, 3)) == (None, 5, 4)
    assert L.GRU(3).get_config()["reset_after"] is True


def test_gru_fit_learns_and_decode_copies(fresh_names):
    model, tgt = gru_seq2seq(units=32, embed=16)
    compiled(model)
    src, dec, lab = copy_task(1500, 1)
    vs, vd, vl = copy_task(200, 2)
    hist = model.fit([src, dec], lab, batch_size=64, epochs=15,
                     validation_data=([vs, vd], vl), verbose=0)
    loss = hist.history["loss"]
    assert loss[-1] < loss[0] / 5, loss
    assert hist.history["val_accuracy"][-1] > 0.9, hist.history
    ids = model.decode([vs, None], target=tgt)
    right = sum(bool((ids[i, :n] == vl[i, :n]).all())
                for i, n in enumerate((vl > 0).sum(1)))
    assert right >= 0.8 * len(vs), (right, ids[:4], vl[:4])


def test_bahdanau_attention_learns_copy_and_decodes():
    """BahdanauAttention (the TF tutorial's, projections inside) in the
    encoder-decoder: weights in its shapes, and training lowers the loss
    (test_seq_model checks its decoding against step-by-step predict)."""
    model, tgt = seq2seq(additive=16)
    compiled(model)
    att = [la for la in model.layers
           if isinstance(la, L.BahdanauAttention)][0]
    assert [w.shape for w in att.get_weights()] == [(32, 16), (32, 16),
                                                    (16,)]
    assert att.count_params() == 32 * 16 * 2 + 16
    src, dec, lab = copy_task(256, 5)
    h = model.fit([src, dec], lab, batch_size=32, epochs=6, verbose=0)
    loss = h.history["loss"]
    assert loss[-1] < 0.7 * loss[0], loss


def test_failed_build_frees_the_graph_once(fresh_names, monkeypatch):
    """An error while the model is being built (here: naming the weights)
    propagates as itself; the graph is freed once (it was freed twice,
    through the model and directly: glibc aborted the interpreter)."""
    model, _ = seq2seq()
    compiled(model)

    def broken(self):
        raise RuntimeError("weight names unavailable")
    monkeypatch.setattr(type(model), "_weight_names", broken)
    src, dec, lab = copy_task(64, 3)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="weight names unavailable"):
            model.fit([src, dec], lab, batch_size=32, epochs=1, verbose=0)
