"""Regex pre-split and SentencePiece-style chunk kernels vs their Python twins, vs the `regex` module, and basic
properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.pretokenize_patterns import PATTERN_TEXT
from tokenizer.kernels.pretokenize import (PATTERNS, char_class_table, escape_spaces_packed,
                                           pretokenize_batch, pretokenize_into, sentencepiece_chunk_end)
from tokenizer.twins.pretokenize import ref_pretokenize, ref_sentencepiece_chunks

ALPHABET = list("ab'sStTdlLrevmſ Z9١²\n\r\t  　!?.,-_中文ひらがなé") + ["\u2028", "\x85", "\u00a0"]
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)


def kernel_split(data: bytes, pattern: str) -> list[bytes]:
    array = np.frombuffer(data, dtype=np.uint8)
    ends = np.empty(len(data) + 1, np.int64)
    n = pretokenize_into(char_class_table(), PATTERNS[pattern], array, 0, len(data), ends, 0)
    bounds = [0] + ends[:n].tolist()
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def test_docstring_example():
    assert kernel_split(b"I'm  ok!!\n", "gpt2") == [b"I", b"'m", b" ", b" ok", b"!!", b"\n"]


@pytest.mark.parametrize("pattern", ["gpt2", "llama3"])
@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_kernel_matches_twin_and_tiles(pattern, text):
    data = text.encode()
    got = kernel_split(data, pattern)
    assert got == ref_pretokenize(data, pattern)
    assert b"".join(got) == data and all(got)


@pytest.mark.parametrize("pattern", ["gpt2", "llama3"])
@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_kernel_matches_regex_module(pattern, text):
    regex = pytest.importorskip("regex")
    expected = [m.encode() for m in regex.findall(PATTERN_TEXT[pattern], text)]
    assert kernel_split(text.encode(), pattern) == expected


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=40))
def test_arbitrary_bytes_tile(data):
    for pattern in PATTERNS:
        got = kernel_split(data, pattern)
        assert b"".join(got) == data
        assert got == ref_pretokenize(data, pattern)


def test_batch_never_crosses_documents():
    docs = [b"hello world", b"", b" x", b"  "]
    data = np.frombuffer(b"".join(docs), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(d) for d in docs]).astype(np.int64)
    ends = np.empty(len(data), np.int64)
    per_doc = np.empty(len(docs), np.int64)
    total = pretokenize_batch(char_class_table(), PATTERNS["gpt2"], data, offsets, ends, per_doc)
    assert per_doc.tolist() == [2, 0, 1, 1] and total == 4
    assert ends[:total].tolist() == [5, 11, 13, 15]


SP_ALPHABET = ALPHABET + ["\u2581", "\x00", "\u0301", "ア", "ー", "Ω"]


def sentencepiece_split(data: bytes) -> list[bytes]:
    from tokenizer.trainers.bpe import sentencepiece_script_table

    array = np.frombuffer(data, dtype=np.uint8)
    out, pos = [], 0
    while pos < len(data):
        end = sentencepiece_chunk_end(sentencepiece_script_table(), array, pos, len(data))
        out.append(data[pos:end])
        pos = end
    return out


def test_sentencepiece_docstring_example():
    text = "a\u2581\u2581bc\n\nd".encode()
    assert sentencepiece_split(text) == [b"a", "\u2581\u2581bc".encode(), b"\n\n", b"d"]
    assert sentencepiece_split("ab,東京ひらがな\tx".encode()) == [b"ab", b",", "東京ひらがな".encode(), b"\t", b"x"]


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(SP_ALPHABET), max_size=40), junk=st.binary(max_size=3))
def test_sentencepiece_chunks_match_twin(text, junk):
    from tokenizer.trainers.bpe import sentencepiece_script_table

    data = text.encode() + junk
    got = sentencepiece_split(data)
    assert got == ref_sentencepiece_chunks(data, sentencepiece_script_table())
    assert b"".join(got) == data and all(got)


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(st.binary(max_size=8).map(lambda b: b.replace(b"\x01", b" ")), max_size=5))
def test_escape_spaces(docs):
    data = np.frombuffer(b"".join(docs), np.uint8)
    offsets = np.cumsum([0] + [len(d) for d in docs]).astype(np.int64)
    out = np.empty(len(data) + 2 * int(np.count_nonzero(data == 0x20)), np.uint8)
    out_offsets = np.empty(len(offsets), np.int64)
    written = escape_spaces_packed(data, offsets, out, out_offsets)
    escaped = [d.replace(b" ", "\u2581".encode()) for d in docs]
    assert written == len(out) and out.tobytes() == b"".join(escaped)
    assert out_offsets.tolist() == np.cumsum([0] + [len(d) for d in escaped]).tolist()


def test_the_stored_class_table_is_the_classified_one_and_a_damaged_one_is_not_used(tmp_path):
    from tokenizer.kernels.pretokenize import _classified, _store_table, _stored_table, char_class_table

    classified = _classified()
    assert np.array_equal(char_class_table(), classified)  # whether this process loaded it or classified it
    path = str(tmp_path / "classes.npy")
    assert _stored_table(path) is None  # none there yet
    _store_table(path, classified)
    assert np.array_equal(_stored_table(path), classified)
    data = bytearray(open(path, "rb").read())
    data[ord("a")] ^= 1  # one byte flipped: its checksum no longer matches
    open(path, "wb").write(bytes(data))
    assert _stored_table(path) is None
