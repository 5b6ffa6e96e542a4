"""Character double array (:mod:`tokenizer.kernels.char_trie`) vs its twins, and the unigram Viterbi over
characters vs the Viterbi twin, on keys and texts with multi-byte characters, invalid bytes and cut-off
characters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import PieceType, Tokenizer
from tokenizer.kernels.char_trie import CHAR_IS_LEAF, CHAR_NOT_A_TARGET, CHAR_PAYLOAD_SHIFT, CHAR_TAG_MASK, CharTrie, \
    char_ids_into
from tokenizer.kernels.unigram import viterbi_chars_into
from tokenizer.twins.char_trie import ref_char_ids, ref_char_units_prefixes, ref_characters
from tokenizer.twins.unigram import ref_viterbi

from tests.tokenizer.test_kernels_unigram import SCORES, build, twin_args

# Characters of every length, a newline, invalid bytes (a stray continuation, a lead byte, 0xFF) and a cut-off
# 3-byte character, whose bytes are invalid alone but start a valid character before the right continuation.
PARTS = [b"a", b"b", b"\n", "é".encode(), "中".encode(), "😀".encode(), b"\x80", b"\xe4", b"\xff", b"\xe4\xb8",
         b"\xad"]
keys_lists = st.lists(st.lists(st.sampled_from(PARTS), min_size=1, max_size=4).map(b"".join), min_size=1,
                      max_size=30, unique=True)
texts = st.lists(st.sampled_from(PARTS + [b"c", "ü".encode()]), max_size=25).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(keys=keys_lists, text=texts)
def test_char_ids_and_lookups_match_the_twins(keys, text):
    trie = CharTrie.build(keys, np.arange(len(keys)) * 3 + 1)
    data = np.frombuffer(text, np.uint8)
    ids = np.full(len(text) + 1, 99, np.int32)
    m = char_ids_into(trie.pages, trie.blocks, data, 0, len(text), ids, 1)
    expected_ids = ref_char_ids(keys, text)
    assert ids[1:1 + m].tolist() == expected_ids and ids[0] == 99
    chars = ref_characters(text)
    table = {key: 3 * i + 1 for i, key in enumerate(keys)}
    for start in range(len(chars)):
        # a key that the text holds from a character boundary to another splits into the text's characters there
        expected = [(table[b"".join(chars[start:end])], end - start) for end in range(start + 1, len(chars) + 1)
                    if b"".join(chars[start:end]) in table]
        assert ref_char_units_prefixes(trie.units, expected_ids, start) == expected


@settings(max_examples=100, deadline=None)
@given(keys=keys_lists)
def test_every_base_is_its_own_and_in_bounds(keys):
    trie = CharTrie.build(keys, np.arange(len(keys)))
    units = trie.units.tolist()
    alphabet = int((trie.blocks >= 0).sum())
    bases = [u >> CHAR_PAYLOAD_SHIFT for u in units[1:]
             if (u & CHAR_TAG_MASK) != CHAR_NOT_A_TARGET and not u & CHAR_IS_LEAF] + [units[0] >> CHAR_PAYLOAD_SHIFT]
    assert len(bases) == len(set(bases))
    assert all(b + alphabet + 1 <= len(units) for b in bases)
    assert trie.units.dtype == np.int64


def test_hand_example():
    trie = CharTrie.build(["中".encode(), "中国".encode(), b"a"], [5, 6, 7])
    ids = ref_char_ids(["中".encode(), "中国".encode(), b"a"], "中国a".encode())
    assert ids == [0, 2, 1]  # 中 is in two keys; a (U+0061) before 国 (U+56FD)
    assert ref_char_units_prefixes(trie.units, ids, 0) == [(5, 1), (6, 2)]
    assert ref_char_units_prefixes(trie.units, ids, 2) == [(7, 1)]


@st.composite
def char_vocabularies(draw):
    chosen = draw(keys_lists)
    scores = [draw(st.sampled_from(SCORES)) for _ in chosen]
    types = [draw(st.sampled_from([PieceType.NORMAL] * 8 + [PieceType.USER_DEFINED])) for _ in chosen]
    return chosen, scores, types


@settings(max_examples=200, deadline=None)
@given(vocab=char_vocabularies(), text=texts, fallback=st.booleans(), split=st.booleans())
def test_character_viterbi_matches_the_twin(vocab, text, fallback, split):
    """Pieces with invalid bytes or a cut-off character match only where the text splits into the same
    characters; the kernel (called directly, its work arrays and ``out`` full of stale values) and the twin agree
    on every text."""
    tok = Tokenizer(build(*vocab, byte_level=False, byte_fallback=fallback, split=split))
    pieces, c = twin_args(tok)
    assert not c.byte_mode and c.record[0].dtype == np.int64
    data = np.frombuffer(text, np.uint8)
    n = len(text)
    stale = np.random.default_rng(n)
    best_score = stale.normal(size=n + 1).astype(np.float32)
    best_start, best_id = stale.integers(-9, 9, n + 1, dtype=np.int32), stale.integers(-9, 9, n + 1, dtype=np.int32)
    out = stale.integers(-9, 99, n + 2, dtype=np.int32)
    before = int(out[0])
    trie = CharTrie.build(list(pieces), list(pieces.values()), reverse=True)
    end = viterbi_chars_into(trie.units, trie.pages, trie.blocks, c.piece_score, split, c.unk_id, fallback,
                             c.byte_to_id, c.unk_score, data, 0, n, best_score, best_start, best_id, out, 1)
    expected = ref_viterbi(pieces, c.piece_score, text, byte_mode=False, split_after_newlines=split,
                           unk_score=c.unk_score, score_dtype=np.float32, unk_id=c.unk_id, byte_fallback=fallback,
                           byte_to_id=c.byte_to_id.tolist())
    assert out[0] == before and out[1:end].tolist() == expected
    assert tok.encode(text) == expected
    if fallback:
        assert tok.decode_bytes(expected) == text
