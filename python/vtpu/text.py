# SPDX-License-Identifier: MIT
"""Text data for sequence models, over libvtpu's vtpu_text.h.

    pairs = vtpu.text.load_pairs("spa-eng/spa.txt")     # [(src, tgt), ...]
    pairs = vtpu.text.dates(20000, seed=1)  # ("24.11.26", "2026-11-24"), ...
    src = vtpu.text.Vocabulary([s for s, _ in pairs], "chars")
    ids, n = src.encode(pairs[0][0], 32)    # uint32 [32]: <start> .. <end> <pad>...
    src.decode(ids)                         # the normalised sentence again
    order, batches = vtpu.text.buckets(lengths, width=4, batch=64, seed=1)

Reserved ids in every vocabulary: PAD 0, START 1, END 2, UNK 3. Bad input
(a line without a tab, an empty sentence, a sentence longer than the
length asked for, a damaged vocabulary file) raises ValueError with the
file and line; a missing file FileNotFoundError.
"""
import errno as _errno
import os

import numpy as np

from ._ffi import ffi, lib

__all__ = ["PAD", "START", "END", "UNK", "load_pairs", "dates",
           "Vocabulary", "buckets"]

PAD, START, END, UNK = (lib.VTPU_TOK_PAD, lib.VTPU_TOK_START,
                        lib.VTPU_TOK_END, lib.VTPU_TOK_UNK)
_MODES = {"words": lib.VTPU_TOKENIZE_WORDS, "chars": lib.VTPU_TOKENIZE_CHARS}


def _check(ret, err, path=None):
    """Raise the exception that libvtpu's -errno and message call for."""
    if not ret:
        return
    msg = ffi.string(err).decode("utf-8", "replace")
    e = -ret
    if e == _errno.ENOENT:
        raise FileNotFoundError(e, msg, path)
    if e == _errno.ENOMEM:
        raise MemoryError(msg)
    if e in (_errno.EINVAL, _errno.E2BIG):
        raise ValueError(msg)
    raise OSError(e, msg, path)


def _pairs(p):
    try:
        return [(ffi.string(p.src[i]).decode("utf-8"),
                 ffi.string(p.tgt[i]).decode("utf-8")) for i in range(p.n)]
    finally:
        lib.vtpu_text_pairs_free(p)


def load_pairs(path, max_pairs=0):
    """The (source, target) sentences of a tab-separated file, in order."""
    p = ffi.new("struct vtpu_text_pairs *")
    err = ffi.new("char[512]")
    path = os.fsdecode(path)
    _check(lib.vtpu_text_load_pairs(os.fsencode(path), max_pairs, p, err,
                                    len(err)), err, path)
    return _pairs(p)


def dates(n, seed=0):
    """@n (human-written date, ISO 8601 date) pairs, the same for a seed."""
    if n <= 0:
        raise ValueError("dates: n must be positive")
    p = ffi.new("struct vtpu_text_pairs *")
    ret = lib.vtpu_text_dates(n, seed & (2**64 - 1), p)
    if ret:
        raise MemoryError("dates: out of memory")
    return _pairs(p)


class Vocabulary:
    """Tokens and ids: built from training sentences, or loaded from a
    file that save() wrote.

    Vocabulary(sentences, mode="words" or "chars", max_size=0, min_count=1)
    Vocabulary.load(path)
    """

    def __init__(self, sentences=None, mode="words", max_size=0,
                 min_count=1):
        self._v = ffi.new("struct vtpu_vocab *")
        if sentences is None:
            return
        if mode not in _MODES:
            raise ValueError("mode must be 'words' or 'chars', not %r"
                             % (mode,))
        keep = [ffi.new("char[]", s.encode("utf-8")) for s in sentences]
        arr = ffi.new("char *[]", keep)
        err = ffi.new("char[512]")
        _check(lib.vtpu_vocab_build(self._v, arr, len(keep), _MODES[mode],
                                    max_size, min_count, err, len(err)), err)

    @classmethod
    def load(cls, path):
        v = cls()
        err = ffi.new("char[512]")
        path = os.fsdecode(path)
        _check(lib.vtpu_vocab_load(v._v, os.fsencode(path), err, len(err)),
               err, path)
        return v

    def save(self, path):
        err = ffi.new("char[512]")
        path = os.fsdecode(path)
        _check(lib.vtpu_vocab_save(self._v, os.fsencode(path), err,
                                   len(err)), err, path)

    def __del__(self):
        v = getattr(self, "_v", None)
        if v is not None:
            lib.vtpu_vocab_free(v)

    def __len__(self):
        return self._v.size

    @property
    def mode(self):
        return "chars" if self._v.mode == lib.VTPU_TOKENIZE_CHARS else "words"

    @property
    def tokens(self):
        return [ffi.string(self._v.tokens[i]).decode("utf-8")
                for i in range(self._v.size)]

    @property
    def hash(self):
        """A fingerprint of the mode and the tokens in order (a 64-bit
        int)."""
        return lib.vtpu_vocab_hash(self._v)

    @property
    def fingerprint(self):
        """hash in 16 hex digits (vtpu_vocab_fingerprint()), as the
        translate example stores it:
        model.save_weights(path, metadata={"source vocabulary":
        v.fingerprint}), and load_weights with the same metadata refuses
        a checkpoint trained with another vocabulary."""
        out = ffi.new("char[]", lib.VTPU_VOCAB_FINGERPRINT_LEN)
        lib.vtpu_vocab_fingerprint(self._v, out)
        return ffi.string(out).decode("ascii")

    def id(self, token):
        b = token.encode("utf-8")
        return lib.vtpu_vocab_id(self._v, b, len(b))

    def count(self, sentence):
        """Tokens of @sentence (without <start> and <end>)."""
        return lib.vtpu_vocab_tokens(self._v, sentence.encode("utf-8"))

    def encode(self, sentence, length):
        """(uint32 [length] ids: <start>, the tokens, <end>, then <pad>;
        the ids before the padding)."""
        ids = np.empty(length, np.uint32)
        n = ffi.new("uint32_t *")
        err = ffi.new("char[512]")
        _check(lib.vtpu_vocab_encode(self._v, sentence.encode("utf-8"),
                                     length, ffi.from_buffer("uint32_t[]",
                                                             ids),
                                     n, err, len(err)), err)
        return ids, n[0]

    def decode(self, ids):
        """Text of @ids, stopping at <end>, skipping <start> and <pad>."""
        ids = np.ascontiguousarray(ids, np.uint32)
        src = ffi.from_buffer("uint32_t[]", ids)
        need = lib.vtpu_vocab_decode(self._v, src, len(ids), ffi.NULL, 0)
        out = ffi.new("char[]", need + 1)
        lib.vtpu_vocab_decode(self._v, src, len(ids), out, need + 1)
        return ffi.string(out).decode("utf-8", "replace")


def buckets(lengths, width, batch, seed=None):
    """One epoch's batches grouped by padded length.

    Returns (order, batches): order an int array of the examples in batch
    order, batches a list of (first, count, length): the batch's examples
    are order[first:first + count], all padded to length (a multiple of
    width). With a seed, examples are shuffled within a bucket and the
    batches' order too; without, sorted by length.
    """
    lens = np.ascontiguousarray(lengths, np.uint32)
    order = np.empty(len(lens), np.uint32)
    out = ffi.new("struct vtpu_text_batch[]", max(len(lens), 1))
    nb = ffi.new("uint32_t *")
    rng = ffi.NULL
    if seed is not None:
        rng = ffi.new("struct vtpu_rng *")
        lib.vtpu_rng_seed(rng, seed & (2**64 - 1))
    if len(lens) == 0 or width <= 0 or batch <= 0 or not lens.all():
        raise ValueError("buckets: lengths must be positive, width and "
                         "batch too")
    ret = lib.vtpu_text_buckets(ffi.from_buffer("uint32_t[]", lens),
                                len(lens), width, batch, rng,
                                ffi.from_buffer("uint32_t[]", order), out,
                                nb)
    if ret:
        raise MemoryError("buckets: out of memory")
    return order, [(out[i].first, out[i].count, out[i].len)
                   for i in range(nb[0])]
