"""The tables of SentencePiece-style BPE (tokenizer.kernels.bpe_tables) vs their twin built with Python dicts
(tokenizer.twins.bpe_tables), array for array, on random vocabularies: characters of one to four bytes, invalid
bytes, pieces whose characters are no pieces (pseudo symbols), USER_DEFINED pieces, score ties, byte mode."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.bpe_tables import build_piece_pairs, piece_symbols
from tokenizer.kernels.double_array import DoubleArray
from tokenizer.twins.bpe_tables import ref_build_piece_pairs

UNITS = [b"a", b"b", b" ", "\u00e9".encode(), "\u4e2d".encode(), "\U0001f600".encode(), b"\xff"]
CANDIDATES = sorted({b"".join(c) for n in (1, 2, 3) for c in itertools.product(UNITS, repeat=n)})


@st.composite
def vocabularies(draw):
    """``(pieces, ids, merge_score, vocab_size, byte_mode, is_user_defined, units)`` as CompiledModel passes them."""
    pieces = draw(st.lists(st.sampled_from(CANDIDATES), min_size=1, max_size=40, unique=True))
    vocab_size = len(pieces) + draw(st.integers(0, 5))
    ids = np.array(sorted(draw(st.permutations(range(vocab_size)))[:len(pieces)]), np.int32)
    merge_score = np.array(draw(st.lists(st.sampled_from([0.0, -1.0, -2.0, -3.0]), min_size=vocab_size,
                                         max_size=vocab_size)), np.float32)
    is_user_defined = np.zeros(vocab_size, np.uint8)
    is_user_defined[ids] = draw(st.lists(st.sampled_from([0] * 6 + [1]), min_size=len(ids), max_size=len(ids)))
    units = DoubleArray.build(pieces, ids).units
    return pieces, ids, merge_score, vocab_size, draw(st.booleans()), is_user_defined, units


def assert_equal_tables(got, want, path="tables"):
    assert type(got) is type(want), path
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for k, (a, b) in enumerate(zip(got, want)):
            assert_equal_tables(a, b, f"{path}[{k}]")
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want), path
    else:
        assert got == want, path


@settings(max_examples=300, deadline=None)
@given(vocabulary=vocabularies())
def test_tables_equal_the_twins(vocabulary):
    assert_equal_tables(build_piece_pairs(*vocabulary), ref_build_piece_pairs(*vocabulary))


def test_hand_example_pseudo_character_and_its_merge():
    pieces = [b"a", b"ab", b"\xe4\xb8\xadb"]  # "b" and "中" are no pieces: pseudo 3 and 4 in order of appearance
    cut = piece_symbols(pieces, 3, False, DoubleArray.build(pieces, [0, 1, 2]).units)
    assert cut.pseudo == [b"b", "\u4e2d".encode()]
    assert cut.multi.tolist() == [1, 2] and cut.flat.tolist() == [0, 3, 4, 3] and cut.bounds.tolist() == [0, 2, 4]
    assert (cut.left[[1, 3]].tolist(), cut.right[[1, 3]].tolist()) == ([0, 4], [3, 3])
    pair_table, bits, byte_piece, *_ = build_piece_pairs(pieces, np.array([0, 1, 2], np.int32),
                                                         np.zeros(3, np.float32), 3, False, np.zeros(3, np.uint8),
                                                         DoubleArray.build(pieces, [0, 1, 2]).units)
    assert byte_piece[ord("a")] == 0 and byte_piece[ord("b")] == 3
