"""Unigram Viterbi and sampling kernels vs their pure-Python twins, on random small vocabularies (many ties)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import Model, PieceType, Tokenizer
from tokenizer.kernels.random import new_state
from tokenizer.kernels.unigram import log_add, sample_into
from tokenizer.kernels.utf8 import char_length
from tokenizer.twins.unigram import ref_log_add, ref_sample, ref_viterbi
from tokenizer.twins.utf8 import ref_char_length

UNITS = [b"a", b"b", b"c", b"\n", "\u00e9".encode(), "\u4e2d".encode(), b"\xff", b"\xe4"]
SCORES = [-1.0, -1.5, -2.0, -3.0, -0.5]


@st.composite
def vocabularies(draw, byte_level: bool):
    """(pieces, scores, types) over UNITS: short concatenations, few distinct scores, a few USER_DEFINED/UNUSED."""
    candidates = sorted({b"".join(c) for n in (1, 2, 3) for c in itertools.product(UNITS[:6], repeat=n)})
    chosen = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=25, unique=True))
    if byte_level:
        chosen = [p for p in chosen if len(p) > 1]
    scores = [draw(st.sampled_from(SCORES)) for _ in chosen]
    types = [draw(st.sampled_from([PieceType.NORMAL] * 8 + [PieceType.USER_DEFINED, PieceType.UNUSED]))
             for _ in chosen]
    return chosen, scores, types


def build(pieces, scores, types, *, byte_level, byte_fallback=False, algorithm="unigram", split=False,
          counts=False):
    if byte_level:
        all_pieces = [bytes([b]) for b in range(256)] + list(pieces)
        all_scores = [-4.0] * 256 + list(scores)
        all_types = [PieceType.NORMAL] * 256 + list(types)
        unk = -1
    else:
        all_pieces = [b"<unk>", b"<s>"] + list(pieces)
        all_scores = [0.0, 0.0] + list(scores)
        all_types = [PieceType.UNKNOWN, PieceType.CONTROL] + list(types)
        unk = 0
        if byte_fallback:
            all_pieces += [b"<0x%02X>" % b for b in range(256)]
            all_scores += [0.0] * 256
            all_types += [PieceType.BYTE] * 256
    provenance = {}
    if counts:
        provenance["log_count_scores"] = {
            "counts": [1 + (len(p) * 7919 + sum(p)) % 13 for p in all_pieces]}
    return Model(all_pieces, np.array(all_scores, np.float32), np.array(all_types, np.int8), algorithm=algorithm,
                 unk_id=unk, bos_id=-1 if byte_level else 1, byte_fallback=byte_fallback,
                 pretokenizer={"name": "none", "split_after_newlines": split}, provenance=provenance)


def twin_args(tok: Tokenizer):
    c = tok.compiled
    m = tok.model
    pieces = {p: i for i, (p, t) in enumerate(zip(m.pieces, m.types.tolist()))
              if t in (PieceType.NORMAL, PieceType.USER_DEFINED)}
    return pieces, c


texts = st.lists(st.sampled_from(UNITS + [b"d"]), max_size=30).map(b"".join)


@settings(max_examples=150, deadline=None)
@given(vocab=vocabularies(byte_level=False), text=texts, fallback=st.booleans(), split=st.booleans())
def test_viterbi_matches_twin_char_mode(vocab, text, fallback, split):
    tok = Tokenizer(build(*vocab, byte_level=False, byte_fallback=fallback, split=split))
    pieces, c = twin_args(tok)
    assert not c.byte_mode
    expected = ref_viterbi(pieces, c.piece_score, text, byte_mode=False, split_after_newlines=split,
                           unk_score=c.unk_score, score_dtype=np.float32, unk_id=c.unk_id,
                           byte_fallback=fallback, byte_to_id=c.byte_to_id.tolist())
    assert tok.encode(text) == expected
    if fallback:
        assert tok.decode_bytes(expected) == text


@settings(max_examples=150, deadline=None)
@given(vocab=vocabularies(byte_level=True), text=texts, split=st.booleans(), counts=st.booleans())
def test_viterbi_matches_twin_byte_mode(vocab, text, split, counts):
    tok = Tokenizer(build(*vocab, byte_level=True, split=split, counts=counts))
    pieces, c = twin_args(tok)
    assert c.byte_mode
    assert c.score_dtype == (np.float64 if counts else np.float32)
    expected = ref_viterbi(pieces, c.piece_score, text, byte_mode=True, split_after_newlines=split,
                           unk_score=c.unk_score, score_dtype=c.score_dtype)
    assert tok.encode(text) == expected
    assert tok.decode_bytes(expected) == text


def test_viterbi_hand_example_and_tie():
    tok = Tokenizer(build([b"a", b"b", b"ab"], [-1.0, -1.0, -1.5], [PieceType.NORMAL] * 3, byte_level=False))
    assert tok.encode(b"ab") == [4]
    tie = Tokenizer(build([b"a", b"b", b"ab"], [-1.0, -1.0, -2.0], [PieceType.NORMAL] * 3, byte_level=False))
    assert tie.encode(b"ab") == [4]  # equal scores: the first path found ("ab", from start 0) is kept
    worse = Tokenizer(build([b"a", b"b", b"ab"], [-1.0, -1.0, -2.5], [PieceType.NORMAL] * 3, byte_level=False))
    assert worse.encode(b"ab") == [2, 3]


def test_unknown_runs_merge_and_byte_fallback():
    model = build([b"a"], [-1.0], [PieceType.NORMAL], byte_level=False)
    tok = Tokenizer(model)
    assert tok.encode("xy\u4e2da z".encode()) == [0, 2, 0]  # x, y, 中 merge into one unk; "a"; " z" one unk
    fallback = Tokenizer(build([b"a"], [-1.0], [PieceType.NORMAL], byte_level=False, byte_fallback=True))
    ids = fallback.encode("x\u4e2d".encode())
    assert [fallback.id_to_piece(i) for i in ids] == [b"<0x78>", b"<0xE4>", b"<0xB8>", b"<0xAD>"]


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=12))
def test_char_length_matches_twin(data):
    array = np.frombuffer(data, dtype=np.uint8)
    for pos in range(len(data)):
        assert char_length(array, pos, len(data)) == ref_char_length(data, pos)


@settings(max_examples=100, deadline=None)
@given(vocab=vocabularies(byte_level=False), text=texts, seed=st.integers(0, 2**64 - 1),
       alpha=st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]), byte_level=st.booleans(), split=st.booleans())
def test_sampling_matches_twin(vocab, text, seed, alpha, byte_level, split):
    pieces_list, scores, types = vocab
    if byte_level:
        keep = [i for i, p in enumerate(pieces_list) if len(p) > 1]
        pieces_list = [pieces_list[i] for i in keep]
        scores = [scores[i] for i in keep]
        types = [types[i] for i in keep]
    tok = Tokenizer(build(pieces_list, scores, types, byte_level=byte_level, split=split))
    pieces, c = twin_args(tok)
    expected = ref_sample(pieces, c.piece_score, text, alpha=alpha, seed_state=[seed],
                          byte_mode=c.byte_mode, split_after_newlines=split, unk_score=float(c.unk_score),
                          unk_id=c.unk_id, byte_to_id=c.byte_to_id.tolist())
    assert tok.encode(text, alpha=alpha, seed=seed) == expected


def test_sampling_distribution_is_exact():
    """Empirical path frequencies match exp(alpha * score) / Z over an enumerated lattice."""
    pieces = [b"ab", b"bc", b"abc"]
    scores = [-1.0, -1.5, -2.5]
    tok = Tokenizer(build(pieces, scores, [PieceType.NORMAL] * 3, byte_level=True))
    alpha = 0.7
    byte = -4.0
    paths = {  # every segmentation of "abc" and its score
        (97, 98, 99): 3 * byte, (256, 99): -1.0 + byte, (97, 257): byte - 1.5, (258,): -2.5,
    }
    z = sum(math.exp(alpha * s) for s in paths.values())
    draws = 20000
    state = new_state(123)
    data = np.frombuffer(b"abc", np.uint8)
    c = tok.compiled
    out = np.empty(4, np.int32)
    counter = Counter()
    for _ in range(draws):
        n = sample_into(c.units, c.piece_score, c.byte_to_id, c.byte_mode, False, -1, False,
                        c.unk_score, alpha, state, data, 0, 3, np.empty(4), np.empty(4, np.int32),
                        np.empty(8, np.int32), np.empty(8, np.int32), np.empty(8), out, 0)
        counter[tuple(out[:n].tolist())] += 1
    assert set(counter) <= set(paths)
    for path, s in paths.items():
        p = math.exp(alpha * s) / z
        sigma = math.sqrt(p * (1 - p) / draws)
        assert abs(counter[path] / draws - p) < 5 * sigma, (path, counter[path] / draws, p)


def test_sampling_needs_seed_for_reproducibility_and_checks_alpha():
    tok = Tokenizer(build([b"ab", b"bc"], [-1.0, -1.0], [PieceType.NORMAL] * 2, byte_level=True))
    text = "abcabcabc" * 20
    assert tok.encode(text, alpha=0.3, seed=5) == tok.encode(text, alpha=0.3, seed=5)
    assert tok.decode(tok.encode(text, alpha=0.3, seed=5)) == text
    with pytest.raises(ValueError, match="alpha"):
        tok.encode(text, alpha=-1.0)
    with pytest.raises(ValueError, match="dropout"):
        tok.encode(text, dropout=0.1)


LOG_VALUES = st.one_of(st.just(-math.inf), st.floats(-800.0, 800.0))


@settings(max_examples=200, deadline=None)
@given(LOG_VALUES, LOG_VALUES)
def test_log_add_matches_its_twin(a, b):
    got, want = float(log_add(a, b)), ref_log_add(a, b)
    assert got == want or math.isclose(got, want, rel_tol=1e-15, abs_tol=1e-300)
    assert float(log_add(b, a)) == got  # symmetric
