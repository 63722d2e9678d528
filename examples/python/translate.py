#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An encoder-decoder with Luong attention, in Keras' functional API, on vtpu.

examples/translate.c's model as Keras code: Embedding and LSTM for the
source; Embedding and LSTM from the encoder's final state for the target;
Attention over the encoder's steps (padding masked through mask_zero);
Dense tanh on [context, decoder]; Dense logits. Trained with Adam on
sentence pairs, teacher forcing (the decoder reads <start> y1 .. and
learns to say y1 .. <end>). Without --data it trains on dates written in
many human styles to their ISO form, a corpus it generates ("tuesday 24
november 2026" -> "2026-11-24"); with --data any tab-separated pair file.
After every epoch it greedily translates a few held-out sentences
(model.decode, vtpu's own: one submission per batch); at the end, all of
them, and prints the exact-match rate. --beam N translates by beam search
with N hypotheses per sentence instead of greedily. --save CK writes the
weights and, beside them, the vocabularies (CK.src.vocab, CK.tgt.vocab),
binding the checkpoint to them by their fingerprints; --load CK encodes
with those vocabularies and refuses a checkpoint trained with others.

    examples/python/translate.py --device cpu --epochs 12
    examples/python/translate.py --device cpu --beam 4
    examples/python/translate.py --device cpu --data spa.txt --pairs 30000
    examples/python/translate.py --device cpu --save dates.ckpt
    examples/python/translate.py --device cpu --epochs 0 --load dates.ckpt
"""
import os
import sys

import _example  # finds vtpu in a checkout
import numpy as np

import vtpu.keras as keras
import vtpu.text as text
from vtpu.keras import layers

EMBED, UNITS, COMBINE = 32, 128, 128    # examples/translate.c's sizes
SHOW = 4                                # translations printed per epoch

parser = _example.parser(__doc__, None, "a tab-separated file of sentence "
                         "pairs (default: generated dates)")
parser.add_argument("--epochs", type=int, default=12)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--pairs", type=int, default=20000,
                    help="pairs to generate or read (0: all of --data)")
parser.add_argument("--seed", type=int, default=1,
                    help="the corpus, weights and shuffling")
parser.add_argument("--beam", type=int, default=1,
                    help="hypotheses per sentence (1: greedy decoding)")
parser.add_argument("--save", metavar="CK",
                    help="save the weights, and the vocabularies beside them")
parser.add_argument("--load", metavar="CK",
                    help="start from --save's weights and vocabularies")
args = parser.parse_args()
if not 1 <= args.beam <= 64:
    parser.error("--beam must be 1 to 64, not %d" % args.beam)
HOW = "greedy" if args.beam == 1 else "beam search, width %d" % args.beam

# ---- the corpus: a tenth held out, vocabularies from the rest ------------
if args.data:
    pairs = text.load_pairs(args.data, args.pairs)
    mode = "words"
else:
    pairs = text.dates(args.pairs, seed=args.seed)
    mode = "chars"
n_test = max(len(pairs) // 10, 1)
n_train = len(pairs) - n_test


def vocab_path(ck, side):
    """Where --save puts a vocabulary beside checkpoint @ck."""
    return "%s.%s.vocab" % (ck, side)


def saved_vocabularies():
    """With --load, the vocabularies saved beside the checkpoint (the ids
    its weights were trained with): both, or neither (then built from the
    data, and the checkpoint says whether those are the same)."""
    if not args.load:
        return False
    paths = [vocab_path(args.load, side) for side in ("src", "tgt")]
    there = [os.path.exists(p) for p in paths]
    if there[0] != there[1]:
        sys.exit("translate.py: %s is missing (%s is there): --save writes "
                 "both" % (paths[there[0]], paths[not there[0]]))
    return there[0]


SAVED = saved_vocabularies()


def vocabulary(side, sentences):
    """The one saved beside --load's checkpoint, else one of the training
    split."""
    if not SAVED:
        return text.Vocabulary(sentences[:n_train], mode)
    path = vocab_path(args.load, side)
    v = text.Vocabulary.load(path)
    if v.mode != mode:
        sys.exit("translate.py: %s is a vocabulary of %s, and %s is "
                 "tokenized into %s" % (path, v.mode, args.data or
                                        "the generated corpus", mode))
    return v


src_vocab = vocabulary("src", [s for s, _ in pairs])
tgt_vocab = vocabulary("tgt", [t for _, t in pairs])
# the weights mean something only with these ids: the checkpoint says so
fingerprints = {"source vocabulary": src_vocab.fingerprint,
                "target vocabulary": tgt_vocab.fingerprint}


def encode(vocab, sentences):
    """uint32 [n, longest + 2]: <start> tokens <end>, padded with 0."""
    length = max(vocab.count(s) for s in sentences) + 2
    return np.stack([vocab.encode(s, length)[0] for s in sentences])


src = encode(src_vocab, [s for s, _ in pairs])
tgt = encode(tgt_vocab, [t for _, t in pairs])
dec_in = np.where(tgt[:, :-1] == text.END, text.PAD, tgt[:, :-1])
labels = tgt[:, 1:]
TS, TT = src.shape[1], labels.shape[1]
print("train on %d pairs, test on %d; vocabularies %d and %d, lengths %d "
      "and %d" % (n_train, n_test, len(src_vocab), len(tgt_vocab), TS,
                  TT + 1))

# ---- the model ----------------------------------------------------------
src_in = keras.Input(shape=(TS,), dtype="int32", name="source")
tgt_in = keras.Input(shape=(TT,), dtype="int32", name="target")
x = layers.Embedding(len(src_vocab), EMBED, mask_zero=True)(src_in)
enc_seq, h, c = layers.LSTM(UNITS, return_sequences=True,
                            return_state=True)(x)
y = layers.Embedding(len(tgt_vocab), EMBED)(tgt_in)
dec_seq = layers.LSTM(UNITS, return_sequences=True)(y,
                                                   initial_state=[h, c])
context = layers.Attention()([dec_seq, enc_seq])
z = layers.Concatenate()([context, dec_seq])
z = layers.Dense(COMBINE, activation="tanh")(z)
logits = layers.Dense(len(tgt_vocab))(z)
model = keras.Model(inputs=[src_in, tgt_in], outputs=logits)
model.summary()
model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(
                  from_logits=True, ignore_class=0),
              metrics=["accuracy"], device=args.device, seed=args.seed)


def translate(first, n, show):
    """Translations of pairs [first, first + n), greedy or by beam search:
    how many match the reference exactly; the first @show printed."""
    ids = model.decode([src[first:first + n], None], target=tgt_in,
                       beam_width=args.beam)
    right = 0
    for i in range(n):
        got = tgt_vocab.decode(ids[i])
        want = tgt_vocab.decode(tgt[first + i])     # normalised as got
        right += got == want
        if i < show:
            print("  %-32s -> %-16s %s" % (pairs[first + i][0], got,
                                          "ok" if got == want else want))
    return right


show = keras.callbacks.LambdaCallback(
    on_epoch_end=lambda epoch, logs: translate(n_train, min(SHOW, n_test),
                                               SHOW))
test = ([src[n_train:], dec_in[n_train:]], labels[n_train:])
if args.load:
    try:
        model.load_weights(args.load, metadata=fingerprints)
    except (OSError, ValueError) as e:
        why = str(e)
        if "the checkpoint's '" in why and SAVED:
            why += ("\ntranslate.py: %s.src.vocab and %s.tgt.vocab are not "
                    "the vocabularies %s was trained with"
                    % (args.load, args.load, args.load))
        elif "the checkpoint's '" in why:
            why += ("\ntranslate.py: the vocabularies of this data are not "
                    "the ones %s was trained with, which --save put beside "
                    "it" % args.load)
        elif "the checkpoint has no '" in why:
            why += ("\ntranslate.py: %s was saved without its vocabularies' "
                    "fingerprints: train and --save it again" % args.load)
        sys.exit("translate.py: " + why)
model.fit([src[:n_train], dec_in[:n_train]], labels[:n_train],
          batch_size=args.batch_size, epochs=args.epochs,
          validation_data=test, callbacks=[show])
loss, acc = model.evaluate(*test, verbose=0)
right = translate(n_train, n_test, 0)
print("test_loss: %.4f - test_acc: %.4f (tokens) - exact_match: %.4f (%d of "
      "%d held-out %s, %s)" % (loss, acc, right / n_test, right, n_test,
                               "pairs" if args.data else "dates", HOW))
if args.save:
    src_vocab.save(vocab_path(args.save, "src"))
    tgt_vocab.save(vocab_path(args.save, "tgt"))
    model.save_weights(args.save, metadata=fingerprints)
