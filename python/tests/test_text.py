# SPDX-License-Identifier: MIT
"""vtpu.text: sentence pairs, the date corpus, vocabularies and buckets
through libvtpu's vtpu_text.h, and what bad input raises."""
import numpy as np
import pytest

import vtpu.text as text


def test_load_pairs(tmp_path):
    f = tmp_path / "spa.txt"
    f.write_bytes("Go.\tVe.\r\n\nWho?\t\u00bfQui\u00e9n?\tCC-BY\n"
                  .encode("utf-8"))
    assert text.load_pairs(f) == [("Go.", "Ve."),
                                  ("Who?", "\u00bfQui\u00e9n?")]
    assert text.load_pairs(str(f), max_pairs=1) == [("Go.", "Ve.")]
    f.write_text("a\tb\nno tab\n")
    with pytest.raises(ValueError, match=r"spa.txt:2: no tab"):
        text.load_pairs(f)
    with pytest.raises(FileNotFoundError):
        text.load_pairs(tmp_path / "missing.txt")


def test_dates_deterministic_and_iso():
    a, b = text.dates(500, seed=3), text.dates(500, seed=3)
    assert a == b and a != text.dates(500, seed=4)
    for src, tgt in a:
        y, m, d = map(int, tgt.split("-"))
        assert 1950 <= y <= 2099 and 1 <= m <= 12 and 1 <= d <= 31
        assert str(d) in src
    with pytest.raises(ValueError):
        text.dates(0)


def test_vocabulary_round_trip(tmp_path):
    pairs = text.dates(2000, seed=1)
    src = text.Vocabulary([s for s, _ in pairs], "chars")
    tgt = text.Vocabulary([t for _, t in pairs], "chars")
    assert tgt.tokens[:4] == ["<pad>", "<start>", "<end>", "<unk>"]
    assert len(tgt) == 4 + 11 and tgt.mode == "chars"
    ids, n = tgt.encode(pairs[0][1], 16)
    assert ids.dtype == np.uint32 and ids.shape == (16,) and n == 12
    assert ids[0] == text.START and ids[11] == text.END
    assert not ids[12:].any()
    assert tgt.decode(ids) == pairs[0][1]
    assert src.decode(src.encode(pairs[0][0], 48)[0]) == pairs[0][0].lower()
    path = tmp_path / "src.vocab"
    src.save(path)
    again = text.Vocabulary.load(path)
    assert again.tokens == src.tokens and again.hash == src.hash
    assert again.hash != tgt.hash
    assert src.id("\u2603") == text.UNK
    with pytest.raises(ValueError, match="more than the 8"):
        tgt.encode("2026-11-24", 10)
    with pytest.raises(ValueError, match="empty sentence"):
        tgt.encode("", 10)
    path.write_text("vtpu-vocab 1 chars 6\na\na\n")
    with pytest.raises(ValueError, match=r":3: a duplicate token"):
        text.Vocabulary.load(path)


def test_words():
    v = text.Vocabulary(["\u00bfD\u00d3NDE est\u00e1 el ba\u00f1o?",
                         "El gato."], "words")
    assert v.count("\u00bfD\u00f3nde est\u00e1 el gato?") == 6
    ids, n = v.encode("El perro?", 8)
    assert v.decode(ids) == "el <unk> ?"
    with pytest.raises(ValueError, match="mode"):
        text.Vocabulary(["a"], "bytes")


def test_buckets():
    rng = np.random.default_rng(0)
    lens = rng.integers(3, 23, 1000)
    order, batches = text.buckets(lens, width=4, batch=32, seed=5)
    assert sorted(order.tolist()) == list(range(1000))
    for first, count, length in batches:
        assert 1 <= count <= 32 and length % 4 == 0
        got = lens[order[first:first + count]]
        assert (got <= length).all() and (got > length - 4).all()
    assert sum(c for _, c, _ in batches) == 1000
    again = text.buckets(lens, width=4, batch=32, seed=5)
    assert (again[0] == order).all() and again[1] == batches
    with pytest.raises(ValueError):
        text.buckets([3, 0], 4, 32)
