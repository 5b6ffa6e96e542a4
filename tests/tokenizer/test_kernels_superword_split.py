"""Superword BPE's coarse split: the kernel against its Python twin, the `regex` module and Hugging Face
``tokenizers``' ``Split`` (behavior Isolated), on text and arbitrary bytes; chunks tile the input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.pretokenize_patterns import PATTERN_TEXT
from tokenizer.twins.pretokenize import ref_superword_chunks
from tests.tokenizer.test_kernels_pretokenize import kernel_split

ALPHABET = list("ab'sZ9١² \n\r\t  　!?.,-/_中ひé") + ["\u2028", "\x85", "\u00a0"]
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)


def regex_chunks(text: str, pattern: str = "superword") -> list[bytes]:
    """The pattern's matches and the stretches between them, with the `regex` module."""
    regex = pytest.importorskip("regex")
    out, at = [], 0
    for match in regex.finditer(PATTERN_TEXT[pattern], text):
        if match.start() > at:
            out.append(text[at:match.start()])
        out.append(match.group())
        at = match.end()
    if at < len(text):
        out.append(text[at:])
    return [piece.encode() for piece in out]


def test_docstring_example():
    text, expected = b"Hi there, 12345 ok...\n", [b"Hi there, ", b"123", b"45", b" ok", b"...\n"]
    assert kernel_split(text, "superword") == expected == ref_superword_chunks(text)


def test_spaces_stay_inside_and_line_breaks_end_a_chunk():
    assert kernel_split(b"by the way  it  \nis", "superword") == [b"by the way", b" ", b" it", b"  \n", b"is"]


def test_superbpe_keeps_line_breaks_inside():
    assert kernel_split(b"by the way  it  \nis", "superbpe") == [b"by the way", b" ", b" it", b"  ", b"\nis"]


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_kernel_matches_twin_and_regex_module(pattern, text):
    data = text.encode()
    got = kernel_split(data, pattern)
    assert got == ref_superword_chunks(data, pattern) == regex_chunks(text, pattern)
    assert b"".join(got) == data and all(got)


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=40))
def test_arbitrary_bytes_tile(pattern, data):
    got = kernel_split(data, pattern)
    assert got == ref_superword_chunks(data, pattern)
    assert b"".join(got) == data and all(got)


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_hugging_face_split_agrees(pattern, text):
    tokenizers = pytest.importorskip("tokenizers")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(PATTERN_TEXT[pattern]), behavior="isolated")
    assert [piece.encode() for piece, _ in split.pre_tokenize_str(text)] == kernel_split(text.encode(), pattern)


def test_a_long_stretch_without_matches_is_one_chunk():
    """Single spaces between letters and single punctuation never match: 100 kB of them is one chunk (the
    trailing space before the end of the text matches on its own)."""
    data = b"a b, " * 20000
    assert kernel_split(data, "superword") == [data[:-1], b" "] == ref_superword_chunks(data)
