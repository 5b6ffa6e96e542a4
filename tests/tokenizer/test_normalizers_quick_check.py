"""The NFC/NFKC fast path: a text whose characters are all in ``stable_characters(form)`` is in that form."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.errors import InputError
from tokenizer.kernels.normalize import TEXTS_MARKED, marked_texts
from tokenizer.twins.normalize import ref_marked_texts
from tokenizer.normalizers.unicode import NFC, NFKC, _COMPOSITION_SECONDS_14, composition_seconds, stable_characters

# Characters around the edges of the table: kana and their combining voiced marks, precomposed kana, Hangul jamo
# (leading, vowel, trailing) and syllables, Latin with and without combining marks, a singleton (Angstrom sign),
# CJK compatibility ideographs, fullwidth and halfwidth forms, Tibetan and Indic vowel signs that compose or
# decompose, an excluded composition, astral characters, ASCII.
TRICKY = ("かがカガ\u3099\u309a\u309b\u309c\u1100\u1161\u11a8\uac00\uac01\u3131eé\u0301\u0327\u212b\u00c5\uf900"
          "\uff21\uff76\u0f71\u0f72\u0f73\u0b47\u0b3e\u0b4b\u0cc6\u0cc2\u0cd5\u0958\u0915\u093c\u05d0\u05b7"
          "\U0001d15e\U0001f600\U00011099\U000110baa 漢字한")


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=6))
def test_a_text_of_stable_characters_is_normalized(form, text):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if marked_texts(data, np.array([0, len(data)], np.int64), stable_characters(form)) == TEXTS_MARKED:
        assert unicodedata.is_normalized(form, text)


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_every_pair_of_stable_characters_is_normalized(form):
    """Composition joins neighbours: every ordered pair of the tricky characters both marked stable (and every
    stable BMP character next to the tricky ones) stays as it is."""
    table = stable_characters(form)
    stable = [c for c in TRICKY if ord(c) < 0x80 or (ord(c) < 0x10000 and table[ord(c)])]
    assert len(stable) > 10
    for first in stable:
        for second in stable:
            assert unicodedata.is_normalized(form, first + second), (form, hex(ord(first)), hex(ord(second)))
    marked = np.flatnonzero(table)
    for cp in marked[::7].tolist():  # a spread sample of the whole table, each next to every tricky stable one
        for other in stable:
            assert unicodedata.is_normalized(form, chr(cp) + other) and unicodedata.is_normalized(form, other + chr(cp))


@settings(max_examples=300, deadline=None)
@given(blob=st.one_of(st.binary(max_size=24), st.text(alphabet=st.sampled_from(TRICKY), max_size=12)
                      .map(lambda t: t.encode("utf-8"))),
       cuts=st.lists(st.integers(0, 40), max_size=4), form=st.sampled_from(["NFC", "NFKC"]))
def test_the_kernel_agrees_with_its_twin(blob, cuts, form):
    """Texts cut anywhere, inside a character too (each must be valid UTF-8 on its own), empty ones included."""
    table = stable_characters(form)
    offsets = sorted([0, len(blob), *[min(cut, len(blob)) for cut in cuts]])
    texts = [blob[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    data = np.frombuffer(blob, dtype=np.uint8)
    assert marked_texts(data, np.array(offsets, np.int64), table) == ref_marked_texts(texts, table)
    assert marked_texts(data, np.zeros(0, np.int64), table) == ref_marked_texts([], table)  # no texts at all


def test_the_table_marks_what_it_should():
    nfc, nfkc = stable_characters("NFC"), stable_characters("NFKC")
    for char in "aが漢한カ、":
        assert nfc[ord(char)] and nfkc[ord(char)], char
    for char in "\u3099\u0301\u1161\u11a8\u212b\uf900":  # marks, jamo that compose, singletons
        assert not nfc[ord(char)] and not nfkc[ord(char)], hex(ord(char))
    assert nfc[0xFF21] and not nfkc[0xFF21]  # FULLWIDTH A: NFC keeps it, NFKC makes it "A"


def test_the_shipped_composition_seconds_match_this_unicode_database():
    if unicodedata.unidata_version != "14.0.0":
        pytest.skip(f"the shipped set is for Unicode 14.0.0, this Python has {unicodedata.unidata_version}")
    scanned = set()
    for cp in range(0x10000):
        decomposition = unicodedata.decomposition(chr(cp))
        if decomposition and not decomposition.startswith("<") and len(decomposition.split()) == 2:
            scanned.add(int(decomposition.split()[1], 16))
    assert scanned == set(_COMPOSITION_SECONDS_14)
    assert set(_COMPOSITION_SECONDS_14) < composition_seconds()


@pytest.mark.parametrize("normalizer", [NFC(), NFKC()])
def test_batches_come_out_as_per_text_normalization(normalizer):
    texts = ["がぎぐ漢字", "カ\u3099", "e\u0301", "ｶﾞ", "plain ascii", "", "한국어", "\u212b"]
    blobs = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64)
    out, out_offsets = normalizer.normalize_batch(data, offsets)
    got = [out[out_offsets[i]:out_offsets[i + 1]].tobytes() for i in range(len(texts))]
    assert got == [normalizer.normalize(b) for b in blobs]
    stable = texts[:1] + texts[4:7]
    blobs = [t.encode() for t in stable]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64)
    out, _ = normalizer.normalize_batch(data, offsets)
    assert out is data  # the fast path: nothing to change, nothing copied


@pytest.mark.parametrize("normalizer", [NFC(), NFKC()])
def test_a_batch_cut_inside_a_character_is_refused_as_per_text(normalizer):
    """Valid UTF-8 as a whole, but each text alone is not: the fast path must not take it."""
    data = np.frombuffer("漢é".encode(), dtype=np.uint8)
    with pytest.raises(InputError, match="valid UTF-8"):
        normalizer.normalize_batch(data, np.array([0, 4, 5], np.int64))
