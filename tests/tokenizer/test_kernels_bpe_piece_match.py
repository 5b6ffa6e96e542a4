"""SentencePiece-style BPE by matching pieces (long stretches) vs the twin's merges, on random models built as
training builds them (each merge of two pieces already there, scoring below the one before)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import Model, PieceType, Tokenizer
from tokenizer.kernels.batch import piece_bpe_model
from tokenizer.kernels.bpe_tables import replayed_splits
from tokenizer.kernels.bpe_match import MEMO_WORDS, NOT_USABLE, match_pieces
from tokenizer.kernels.bpe_ranked import build_pair_table, merge_ranks
from tokenizer.kernels.tables import part
from tests.tokenizer.test_kernels_bpe import twin

CHARS = [b"a", b"b", b" ", "\u00e9".encode(), "\u4e2d".encode(), "\u2581".encode()]


@st.composite
def trained_models(draw, pseudo=True, user_defined=True):
    """A trained SentencePiece BPE model: ``<unk>``, the characters, then merges in order (scores -1, -2, ...);
    sometimes a character is left out (a pseudo symbol: it stays only inside merged pieces), a merged piece is
    USER_DEFINED, and byte fallback is on."""
    chars = draw(st.lists(st.sampled_from(CHARS), min_size=2, max_size=len(CHARS), unique=True))
    pieces = list(chars)
    for _ in range(draw(st.integers(1, 40))):
        joined = draw(st.sampled_from(pieces)) + draw(st.sampled_from(pieces))
        if joined not in pieces:
            pieces.append(joined)
    merged = pieces[len(chars):]
    kept = chars[1:] if pseudo and draw(st.booleans()) else chars
    types = [PieceType.NORMAL] * len(merged)
    if user_defined and draw(st.booleans()):
        types[draw(st.integers(0, len(merged) - 1))] = PieceType.USER_DEFINED
    fallback = draw(st.booleans())
    all_pieces = [b"<unk>"] + merged + kept + ([b"<0x%02X>" % b for b in range(256)] if fallback else [])
    scores = [0.0] + [-1.0 - i for i in range(len(merged))] + [-100.0 - i for i in range(len(kept))]
    all_types = [PieceType.UNKNOWN] + types + [PieceType.NORMAL] * len(kept)
    if fallback:
        scores += [0.0] * 256
        all_types += [PieceType.BYTE] * 256
    return Model(all_pieces, np.array(scores, np.float32), np.array(all_types, np.int8), algorithm="bpe", unk_id=0,
                 byte_fallback=fallback)


def long_texts(units):
    """Texts of up to 120 characters drawn from ``units``, often one short pattern repeated."""
    pattern = st.lists(st.sampled_from(units), min_size=1, max_size=6)
    return st.one_of(st.lists(st.sampled_from(units), max_size=120).map(b"".join),
                     st.tuples(pattern, st.integers(1, 40)).map(lambda c: b"".join(c[0]) * c[1]))


@settings(max_examples=300, deadline=None)
@given(model=trained_models(), text=long_texts(CHARS + [b"d"]))
def test_encoding_with_matching_equals_twin(model, text):
    """Through the Tokenizer (pseudo characters, USER_DEFINED pieces, unknown characters, byte fallback):
    stretches of more than SHORT_SYMBOLS characters are matched where matching does not give way."""
    tok = Tokenizer(model)
    assert _flags(tok)[8] == 1  # matching is on for every trained model
    expected = twin(tok, text)
    assert tok.encode(text) == expected
    assert tok.encode_batch([text, text[::-1]], num_threads=1) == [expected, twin(tok, text[::-1])]


@settings(max_examples=400, deadline=None)
@given(model=trained_models(pseudo=False, user_defined=False), data=st.data())
def test_match_pieces_never_giving_way_equals_twin(model, data):
    """match_pieces itself over a whole text of the model's characters, without patience: the twin's ids, or
    giving way where they hold a piece built out of score order (NOT_USABLE)."""
    tok = Tokenizer(model)
    chars = [p for p in model.pieces if p in CHARS]
    text = data.draw(long_texts(chars))
    (units, _, _, _, _, _, _, _, _, pair_table, bits, *_, match, _), _ = piece_bpe_model(*tok.compiled.record)
    match_units, *tables = match
    n = len(text) + 1
    stack, ends, dead = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32)
    memo, steps = np.zeros(MEMO_WORDS, np.int64), np.zeros(1, np.int64)
    top = match_pieces(units if match_units.shape[0] == 0 else match_units, pair_table, bits, *tables,
                       np.frombuffer(text, np.uint8), 0, len(text), stack, ends, dead, memo, 1 << 40, steps)
    expected = twin(tok, text)
    if top < 0:  # it gave way: right only where replay makes a piece that matching never keeps
        assert any(tables[0][i] == NOT_USABLE for i in expected)
    else:
        assert stack[:top].tolist() == expected
    longest = max(len(p) for p in model.pieces[1:])
    assert steps[0] <= (len(text) + 1) * (longest + 1)  # a position tries each of its prefix pieces at most once


def _flags(tok: Tokenizer) -> np.ndarray:
    """The flags table (13) of a SentencePiece-style BPE record (:func:`tokenizer.kernels.batch.piece_bpe_model`)."""
    longs = tok.compiled.record[4]
    return part(longs, longs, 13)


def test_replayed_splits_and_tables_hand_example():
    """Pieces a, b, c, ab (score -1), bc (-2), abc (-3): "abc" replays as ab + c (ab scores above bc), so its last
    merge splits it after "ab"; "bc" then "a": a + bc would also spell it, but replay never builds it that way."""
    pieces = [b"<unk>", b"ab", b"bc", b"abc", b"a", b"b", b"c"]
    model = Model(pieces, np.array([0, -1, -2, -3, -10, -11, -12], np.float32),
                  np.array([PieceType.UNKNOWN] + [PieceType.NORMAL] * 6, np.int8), algorithm="bpe", unk_id=0)
    tok = Tokenizer(model)
    _, *tables = piece_bpe_model(*tok.compiled.record)[0][-2]
    created, split_left, split_right, prefix_of, piece_length = tables
    assert created[3] > created[2] > created[1] >= 0 and created[4] == created[5] == created[6] < 0
    assert (split_left[3], split_right[3]) == (1, 6)
    assert (split_left[2], split_right[2]) == (5, 6)
    assert prefix_of[3] == 1 and prefix_of[1] == 4 and piece_length[3] == 3
    assert tok.encode(b"abc" * 10) == [3] * 10

    rank_of = merge_ranks(np.array([1, 2]), np.array([0, 1]), 7)
    pair_table, bits = build_pair_table(np.array([4, 5]), np.array([5, 6]), np.array([1, 2]), rank_of)
    split = np.empty(2, np.int64)
    replayed_splits(pair_table, bits, np.array([4, 5, 6, 4, 5], np.int64), np.array([0, 3, 5], np.int64),
                    np.array([1, 1], np.int32), split)
    assert split.tolist() == [-1, 1]  # "abc" replays to two symbols, "ab" to itself (split after "a")


def test_pieces_out_of_score_order_are_never_matched_and_invalid_utf8_turns_matching_off():
    """"aab" (score -1) is made of "aa" (-2), made after it: replay builds it in another order than its score
    says, so matching never keeps it (it gives way where replay gives it; the same ids). A piece of invalid UTF-8
    outside byte mode turns matching off: the heap replays every stretch; so does a model with no matchable
    piece."""
    types = np.array([PieceType.UNKNOWN] + [PieceType.NORMAL] * 4, np.int8)
    inverted = Model([b"<unk>", b"aab", b"aa", b"a", b"b"], np.array([0, -1, -2, -10, -11], np.float32), types,
                     algorithm="bpe", unk_id=0)
    tok = Tokenizer(inverted)
    created = piece_bpe_model(*tok.compiled.record)[0][-2][1]
    assert _flags(tok)[8] == 1 and created[1] == NOT_USABLE and created[2] >= 0
    text = b"aab" * 20 + b"aa" * 20
    assert tok.encode(text) == twin(tok, text) == [1] * 20 + [2] * 20
    only_unused = Model([b"<unk>", b" "], np.array([0, -1], np.float32),
                        np.array([PieceType.UNKNOWN, PieceType.UNUSED], np.int8), algorithm="bpe", unk_id=0)
    tok = Tokenizer(only_unused)  # no matchable piece: nothing to match
    assert _flags(tok)[8] == 0 and tok.encode(b"a b") == [0]
    invalid = Model([b"<unk>", b"a\xff", b"aa", b"a", b"\xff"], np.array([0, -1, -2, -10, -11], np.float32),
                    types, algorithm="bpe", unk_id=0)
    tok = Tokenizer(invalid)
    assert _flags(tok)[8] == 0
    assert tok.encode(b"a\xff" * 20) == twin(tok, b"a\xff" * 20) == [1] * 20
