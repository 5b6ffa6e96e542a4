"""encode_with_offsets: the spans tile the input, each span holds its piece, byte pieces inside a character get the
character's span; the same offsets as tokenizers' Encoding.offsets on the exported model."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tokenizer.sample_models import sample_texts
from tokenizer import Model, Tokenizer
from tokenizer.interop.huggingface import save_huggingface
from tokenizer.offsets import char_units
from tokenizer.piece_types import PieceType

IDENTITY_MODELS = ("bytepiece", "bpe byte_level")
TRICKY = ["  héllo   wörld  ", "作者：张九龄", "a\u0301 e\u0301\u0302", "tab\tand\nnewline", "😀😀 x😀", ""]
TEXT = st.text(st.sampled_from(list("ab  \t\néü作者😀") + ["\u0301", "x"]), max_size=40)


def test_hand_example():
    tok = Tokenizer(Model.byte_level([b"ab"], [-1.0]))
    assert tok.encode_with_offsets("abé") == ([256, 0xC3, 0xA9], [(0, 2), (2, 3), (2, 3)])
    assert tok.encode_with_offsets("abé".encode()) == ([256, 0xC3, 0xA9], [(0, 2), (2, 4), (2, 4)])
    assert tok.encode_with_offsets(b"a\xffb") == ([97, 0xFF, 98], [(0, 1), (1, 2), (2, 3)])


def check_tiling(tok, name: str, text, ids, spans):
    data = text.encode() if isinstance(text, str) else text
    length = len(text)
    assert ids == tok.encode(text)
    assert len(spans) == len(ids)
    previous = (0, 0)
    for start, end in spans:
        assert 0 <= start <= end <= length
        assert start >= previous[0] and end >= previous[1]
        gap = text[previous[1]:start]
        assert start <= previous[1] or (name not in IDENTITY_MODELS and not gap.strip(" " if isinstance(text, str)
                                                                                      else b" ")), (gap, spans)
        previous = (start, end)
    if name in IDENTITY_MODELS:
        assert (spans[0][0], spans[-1][1]) == ((0, length) if ids else (0, 0)) if spans else not data
        # each piece's bytes lie where its span says, widened to whole characters
        bounds = char_units(data)
        units = bounds if isinstance(text, bytes) else list(range(len(bounds)))
        at = 0
        for i, (start, end) in zip(ids, spans):
            piece = tok.id_to_bytes(i)
            assert data[at:at + len(piece)] == piece
            first = max(k for k, b in enumerate(bounds) if b <= at)
            last = min(k for k, b in enumerate(bounds) if b >= at + len(piece))
            assert (start, end) == (units[first], units[last])
            at += len(piece)
        assert at == len(data)


@settings(max_examples=150, deadline=None)
@given(text=TEXT)
def test_spans_tile_the_text_and_hold_their_pieces(tokenizers, text):
    for name, tok in tokenizers.items():
        ids, spans = tok.encode_with_offsets(text)
        check_tiling(tok, name, text, ids, spans)
        if name in IDENTITY_MODELS:
            byte_ids, byte_spans = tok.encode_with_offsets(text.encode())
            assert byte_ids == ids
            check_tiling(tok, name, text.encode(), byte_ids, byte_spans)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=30))
def test_byte_offsets_of_any_bytes(tokenizers, data):
    for name in IDENTITY_MODELS:
        tok = tokenizers[name]
        ids, spans = tok.encode_with_offsets(data)
        check_tiling(tok, name, data, ids, spans)


def test_control_tokens_and_allowed_specials_have_their_spans(tokenizers):
    tok = tokenizers["bpe byte_level"]
    ids, spans = tok.encode_with_offsets("ab<s>c", allowed_special={"<s>"})
    assert ids[-2:-1] == [tok.bos_id] and spans[ids.index(tok.bos_id)] == (2, 5)
    assert spans[-1] == (5, 6)


@pytest.mark.parametrize("name", ["unigram", "bytepiece", "bpe sentencepiece", "bpe byte_level"])
def test_offsets_are_those_of_tokenizers(tokenizers, tmp_path, name):
    hf = pytest.importorskip("tokenizers")
    tok = tokenizers[name]
    save_huggingface(tok.model, tmp_path)
    theirs = hf.Tokenizer.from_file(os.path.join(tmp_path, "tokenizer.json"))
    compared = 0
    texts = sample_texts(40) + TRICKY
    for text in texts:
        encoding = theirs.encode(text, add_special_tokens=False)
        ids, spans = tok.encode_with_offsets(text)
        assert ids == encoding.ids, text
        assert spans == [tuple(o) for o in encoding.offsets], text
        compared += 1
    assert compared == len(texts)


def test_piece_types_of_an_unknown_piece_span_what_it_covers(tokenizers):
    tok = tokenizers["unigram"]
    assert tok.model.types[tok.unk_id] == PieceType.UNKNOWN
    text = "a ☃☃ b ☂"
    ids, spans = tok.encode_with_offsets(text)
    unknown = [s for i, s in zip(ids, spans) if i == tok.unk_id]
    assert unknown and all(set(text[s:e]) <= set("☃☂ ") for s, e in unknown)
    assert "".join(text[s:e] for s, e in unknown).replace(" ", "") == "☃☃☂"
