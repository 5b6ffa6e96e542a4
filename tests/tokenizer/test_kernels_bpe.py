"""BPE kernel (with dropout) vs its pure-Python twin on random small vocabularies (many score ties)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import Model, PieceType, Tokenizer
from tokenizer.twins.bpe import ref_bpe

UNITS = [b"a", b"b", b"c", b" ", "\u00e9".encode(), "\u4e2d".encode(), b"\xff"]


@st.composite
def models(draw):
    byte_level = draw(st.booleans())
    fallback = draw(st.booleans())
    candidates = sorted({b"".join(c) for n in (1, 2, 3, 4) for c in itertools.product(UNITS[:6], repeat=n)})
    chosen = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=30, unique=True))
    if byte_level:
        chosen = [p for p in chosen if len(p) > 1]
    scores = [draw(st.sampled_from([-1.0, -2.0, -3.0, 0.0])) for _ in chosen]
    types = [draw(st.sampled_from([PieceType.NORMAL] * 8 + [PieceType.USER_DEFINED, PieceType.UNUSED]))
             for _ in chosen]
    if byte_level:
        pieces = [bytes([b]) for b in range(256)] + chosen
        all_scores = [-5.0] * 256 + scores
        all_types = [PieceType.NORMAL] * 256 + types
        unk = -1
    else:
        pieces = [b"<unk>"] + chosen + ([b"<0x%02X>" % b for b in range(256)] if fallback else [])
        all_scores = [0.0] + scores + ([0.0] * 256 if fallback else [])
        all_types = [PieceType.UNKNOWN] + types + ([PieceType.BYTE] * 256 if fallback else [])
        unk = 0
    return Model(pieces, np.array(all_scores, np.float32), np.array(all_types, np.int8), algorithm="bpe",
                 unk_id=unk, byte_fallback=fallback and not byte_level)


texts = st.lists(st.sampled_from(UNITS + [b"d"]), max_size=30).map(b"".join)


def twin(tok: Tokenizer, text: bytes, **kwargs):
    m, c = tok.model, tok.compiled
    types = m.types.tolist()
    pieces = {p: i for i, (p, t) in enumerate(zip(m.pieces, types)) if t in (PieceType.NORMAL, PieceType.USER_DEFINED)}
    user = {p for p, t in zip(m.pieces, types) if t == PieceType.USER_DEFINED}
    return ref_bpe(pieces, m.scores.tolist(), user, text, byte_mode=c.byte_mode, unk_id=c.unk_id,
                   byte_fallback=c.byte_fallback, byte_to_id=c.byte_to_id.tolist(), **kwargs)


@settings(max_examples=200, deadline=None)
@given(model=models(), text=texts)
def test_bpe_matches_twin(model, text):
    tok = Tokenizer(model)
    expected = twin(tok, text)
    assert tok.encode(text) == expected
    assert tok.encode_batch([text, text], num_threads=1) == [expected, expected]
    if tok.compiled.byte_mode or tok.compiled.byte_fallback:
        assert tok.decode_bytes(expected) == text


@settings(max_examples=150, deadline=None)
@given(model=models(), text=texts, seed=st.integers(0, 2**64 - 1), p=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
def test_bpe_dropout_matches_twin(model, text, seed, p):
    tok = Tokenizer(model)
    assert tok.encode(text, dropout=p, seed=seed) == twin(tok, text, dropout=p, seed_state=[seed])


def test_bpe_hand_example_leftmost_tie_and_frozen_user_defined():
    pieces = [bytes([b]) for b in range(256)] + [b"ab", b"bc"]
    model = Model(pieces, np.array([-5.0] * 256 + [-1.0, -1.0], np.float32), np.full(258, 1, np.int8),
                  algorithm="bpe")
    tok = Tokenizer(model)
    assert tok.encode(b"abc") == [256, 99]           # ab and bc tie: the leftmost pair merges
    assert tok.encode(b"abc", dropout=1.0) == [97, 98, 99]
    types = np.full(258, 1, np.int8)
    types[257] = PieceType.USER_DEFINED
    frozen = Tokenizer(Model(pieces, model.scores, types, algorithm="bpe"))
    assert frozen.encode(b"abc") == [97, 257]          # "bc" is matched first as an atomic user-defined symbol


WORD_UNITS = [b"a", b"b", "\u00e9".encode(), "\u4e2d".encode(), b"\xff"]
MARK = "\u2581".encode()


@st.composite
def word_models(draw):
    """SentencePiece-style models whose pieces never have a character other than "▁" before a "▁" (so texts are
    encoded word by word through the cache), sometimes with one piece that breaks the rule."""
    bodies = sorted({b"".join(c) for n in (1, 2, 3) for c in itertools.product(WORD_UNITS, repeat=n)})
    chosen = draw(st.lists(st.sampled_from(bodies), min_size=1, max_size=25, unique=True))
    pieces = [MARK] + [(MARK * draw(st.integers(0, 2))) + body for body in chosen]
    if draw(st.booleans()):
        pieces.append(b"a" + MARK)  # breaks the rule: no word cache
    pieces = list(dict.fromkeys(pieces))
    fallback = draw(st.booleans())
    scores = [draw(st.sampled_from([-1.0, -2.0, -3.0])) for _ in pieces]
    all_pieces = [b"<unk>"] + pieces + ([b"<0x%02X>" % b for b in range(256)] if fallback else [])
    all_scores = [0.0] + scores + ([0.0] * 256 if fallback else [])
    all_types = [PieceType.UNKNOWN] + [PieceType.NORMAL] * len(pieces) + ([PieceType.BYTE] * 256 if fallback else [])
    return Model(all_pieces, np.array(all_scores, np.float32), np.array(all_types, np.int8), algorithm="bpe",
                 unk_id=0, byte_fallback=fallback)


word_texts = st.lists(st.sampled_from(WORD_UNITS + [MARK, b"d"]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(model=word_models(), texts=st.lists(word_texts, min_size=1, max_size=6))
def test_word_by_word_encoding_with_its_cache_matches_twin(model, texts):
    tok = Tokenizer(model)
    expected = [twin(tok, text) for text in texts]
    assert tok.encode_batch(texts, num_threads=1) == expected  # words repeat across texts: cache hits
    assert [tok.encode(text) for text in texts] == expected
