"""The BytePiece training kernels against their pure-Python twins (tokenizer.twins.bytepiece_chunk, ngram_count,
ngram_segment, piece_lattice)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.kernels.byte_string_count import (RADIX_SORT_MIN, argsort_byte_strings_kernel, argsort_words,
                                                 count_byte_strings_kernel, merge_byte_string_counts_kernel)
from tokenizer.kernels.double_array import DoubleArray
from tokenizer.kernels.ngram_count import merge_sorted_counts_kernel, pack_ngram, sort_keys_kernel, unpack_ngram
from tokenizer.kernels.piece_lattice import next_unit, piece_at
from tokenizer.trainers.bytepiece import (
    TrainSettings, build_ngram_model, chunk_texts, count_ngrams, pack_texts, piece_list, segment_chunks,
    PieceModel,
)
from tokenizer.twins.bytepiece_chunk import ref_chunk_text
from tokenizer.twins.double_array import ref_common_prefix_search
from tokenizer.twins.ngram_count import ref_count_ngrams, ref_sort_keys
from tokenizer.twins.ngram_segment import ref_ngram_log_probs, ref_ngram_viterbi
from tokenizer.twins.piece_lattice import ref_piece_expected_counts, ref_piece_viterbi

ALPHABET = "ab \n1２é你ü\t"
texts_strategy = st.lists(st.text(alphabet=ALPHABET, max_size=40), max_size=8)
SETTINGS = dict(max_examples=80, deadline=None)


def _chunks(data, offsets):
    return [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(offsets) - 1)]


# ------------------------------------------------------------------------------------------------------ packing
@given(st.binary(min_size=1, max_size=7), st.binary(min_size=1, max_size=7))
@settings(**SETTINGS)
def test_packed_keys_sort_like_bytes(a, b):
    assert unpack_ngram(pack_ngram(a)) == a
    assert (pack_ngram(a) < pack_ngram(b)) == (a < b)
    assert 0 < pack_ngram(a) < 2 ** 59


def test_pack_example():
    assert pack_ngram(b"ab") == (0x61 << 51) | (0x62 << 43) | 2


# ------------------------------------------------------------------------------------------------------ chunking
@given(texts_strategy, st.sampled_from([0, 1, 3, 10000]), st.booleans(), st.sampled_from([1, 2, 100]))
@settings(**SETTINGS)
def test_chunking_matches_bytepiece_regex(texts, max_chars, isolate_digits, max_newlines):
    s = TrainSettings(max_chunk_chars=max_chars, isolate_digits=isolate_digits, max_newline_run=max_newlines)
    data, offsets = chunk_texts(*pack_texts(texts), s)
    expected = [c.encode() for t in texts for c in ref_chunk_text(t, max_chars, isolate_digits, max_newlines)]
    assert _chunks(data, offsets) == expected


def test_chunking_example():
    s = TrainSettings()
    assert _chunks(*chunk_texts(*pack_texts(["ab\n\ncd"]), s)) == [b"ab\n\n", b"cd"]
    s = TrainSettings(isolate_digits=True)
    assert _chunks(*chunk_texts(*pack_texts(["a12"]), s)) == [b"a", b"1", b"2"]


@given(st.lists(st.binary(max_size=30), max_size=6))
@settings(**SETTINGS)
def test_chunking_identity_keeps_every_byte(blobs):
    data, offsets = chunk_texts(*pack_texts(blobs), TrainSettings(max_chunk_chars=4))
    assert b"".join(_chunks(data, offsets)) == b"".join(blobs)
    assert all(len(c) > 0 for c in _chunks(data, offsets))


def test_digit_table_matches_re():
    import re

    from tokenizer.trainers.bytepiece.chunks import _digit_table

    table = _digit_table()
    for cp in list(range(0, 0x3000)) + list(range(0xFF00, 0xFF20)) + list(range(0x1D7C0, 0x1D800)):
        assert table[cp] == (re.match(r"\d", chr(cp)) is not None)


# ------------------------------------------------------------------------------------------------------ counting
@given(texts_strategy, st.integers(1, 7))
@settings(**SETTINGS)
def test_count_ngrams_matches_dict_count(texts, order):
    data, offsets = chunk_texts(*pack_texts(texts), TrainSettings())
    keys, counts = count_ngrams(data, offsets, order)
    assert np.all(np.diff(keys) > 0)
    got = {unpack_ngram(k): int(c) for k, c in zip(keys, counts)}
    assert got == ref_count_ngrams(_chunks(data, offsets), order)


@given(texts_strategy, st.integers(1, 7), st.integers(1, 64))
@settings(**SETTINGS)
def test_count_ngrams_blocks_do_not_change_counts(texts, order, block):
    data, offsets = chunk_texts(*pack_texts(texts), TrainSettings())
    a = count_ngrams(data, offsets, order)
    b = count_ngrams(data, offsets, order, block_positions=block)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_count_ngrams_example():
    keys, counts = count_ngrams(np.frombuffer(b"aab", np.uint8), np.array([0, 3]), 2)
    assert {unpack_ngram(k): int(c) for k, c in zip(keys, counts)} == {b"a": 2, b"aa": 1, b"ab": 1, b"b": 1}


@given(st.one_of(st.lists(st.integers(0, (1 << 63) - 1), max_size=300),
                 st.lists(st.sampled_from([0, 1, 7, 1 << 11, (1 << 58) | 5, (1 << 62) + 3]), max_size=300),
                 st.lists(st.binary(min_size=1, max_size=7), max_size=300).map(lambda grams: [pack_ngram(g) for g in grams])))
@settings(max_examples=200, deadline=None)
def test_radix_sort_matches_sorted(keys):
    array = np.array(keys, np.int64)
    sort_keys_kernel(array, np.empty(len(keys) + 3, np.int64))
    assert array.tolist() == ref_sort_keys(keys)


def test_radix_sort_example():
    keys = np.array([5, 3, 5, 0], np.int64)
    sort_keys_kernel(keys, np.empty(4, np.int64))
    assert keys.tolist() == [0, 3, 5, 5]


@given(st.dictionaries(st.integers(0, 1000), st.integers(1, 9)), st.dictionaries(st.integers(0, 1000),
                                                                                 st.integers(1, 9)))
@settings(**SETTINGS)
def test_merge_sorted_counts(a, b):
    ka, kb = sorted(a), sorted(b)
    keys, counts = merge_sorted_counts_kernel(np.array(ka, np.int64), np.array([a[k] for k in ka], np.int64),
                                                np.array(kb, np.int64), np.array([b[k] for k in kb], np.int64))
    assert dict(zip(keys.tolist(), counts.tolist())) == dict(Counter(a) + Counter(b))
    assert keys.tolist() == sorted(set(a) | set(b))


# ------------------------------------------------------------------------------------------------------ n-gram LM
@given(texts_strategy, st.integers(1, 6), st.integers(1, 3), st.booleans())
@settings(**SETTINGS)
def test_ngram_model_and_viterbi_match_bytepiece(texts, order, min_count, ensure_unicode):
    s = TrainSettings(order=order, min_count=min_count, ensure_unicode=ensure_unicode)
    data, offsets = chunk_texts(*pack_texts(texts), s)
    chunks = _chunks(data, offsets)
    model = build_ngram_model(*count_ngrams(data, offsets, order), s)
    log_probs = ref_ngram_log_probs(ref_count_ngrams(chunks, order), order, min_count)
    assert {unpack_ngram(k): float(v) for k, v in zip(model.keys, model.log_probs)} == log_probs
    ends = segment_chunks(model, data, offsets)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    got = [data[a:b].tobytes() for a, b in zip(starts, ends)]
    expected = [p for c in chunks for p in ref_ngram_viterbi(c, log_probs, order, ensure_unicode)]
    assert got == expected



def _assert_viterbi_matches_twin(chunks: list[bytes], s: TrainSettings) -> None:
    """The n-gram Viterbi's pieces over ``chunks`` (a model counted on them) equal the twin's, chunk by chunk."""
    data, offsets = pack_texts(chunks)
    model = build_ngram_model(*count_ngrams(data, offsets, s.order), s)
    log_probs = {unpack_ngram(k): float(v) for k, v in zip(model.keys, model.log_probs)}
    ends = segment_chunks(model, data, offsets)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    got = [data[a:b].tobytes() for a, b in zip(starts, ends)]
    assert got == [p for c in chunks if c for p in ref_ngram_viterbi(c, log_probs, s.order, s.ensure_unicode)]

@given(st.lists(st.binary(max_size=12), min_size=1, max_size=6).filter(any), st.integers(1, 7), st.booleans())
@settings(**SETTINGS)
def test_ngram_viterbi_on_arbitrary_bytes(chunks, order, ensure_unicode):
    """Invalid UTF-8 and unreachable states (all -inf) follow numpy's argmax semantics exactly; empty chunks give
    no piece."""
    _assert_viterbi_matches_twin(chunks, TrainSettings(order=order, min_count=2, ensure_unicode=ensure_unicode))


@given(st.lists(st.text(alphabet="ab", min_size=1, max_size=60), min_size=1, max_size=6), st.integers(1, 7),
       st.integers(1, 3))
@settings(**SETTINGS)
def test_ngram_viterbi_on_repetitive_chunks(texts, order, min_count):
    """Few distinct bytes: long pieces (the last state kept for many bytes), equal scores, chunks longer and shorter
    than the kernel's prefetch distance."""
    _assert_viterbi_matches_twin([t.encode() for t in texts], TrainSettings(order=order, min_count=min_count))


# ------------------------------------------------------------------------------------------------------ byte strings
@given(st.lists(st.binary(max_size=5), max_size=40))
@settings(**SETTINGS)
def test_count_byte_strings(strings):
    data, offsets = pack_texts(strings)
    piece_data, piece_offsets, counts = count_byte_strings_kernel(data, offsets[:-1].copy(), offsets[1:].copy())
    expected = sorted(Counter(strings).items())
    assert list(zip(piece_list(piece_data, piece_offsets), counts.tolist())) == expected


@given(st.dictionaries(st.binary(max_size=4), st.integers(1, 9)), st.dictionaries(st.binary(max_size=4),
                                                                                  st.integers(1, 9)))
@settings(**SETTINGS)
def test_merge_byte_string_counts(a, b):
    da, oa = pack_texts(sorted(a))
    db, ob = pack_texts(sorted(b))
    out = merge_byte_string_counts_kernel(da, oa, np.array([a[k] for k in sorted(a)], np.int64),
                                            db, ob, np.array([b[k] for k in sorted(b)], np.int64))
    expected = sorted((Counter(a) + Counter(b)).items())
    assert list(zip(piece_list(out[0], out[1]), out[2].tolist())) == expected


# ------------------------------------------------------------------------------------------------------ piece Viterbi
pieces_strategy = st.dictionaries(st.binary(min_size=2, max_size=4, ).filter(lambda b: True),
                                  st.integers(1, 50), max_size=12)


def _piece_model(extra: dict[bytes, int], alphabet: bytes):
    counts = {bytes([b]): 1 + b % 7 for b in alphabet}
    counts.update(extra)
    pieces = sorted(counts)
    return PieceModel(pieces, np.array([counts[p] for p in pieces], np.int64)), pieces


@given(pieces_strategy, st.lists(st.binary(max_size=10), max_size=6))
@settings(**SETTINGS)
def test_piece_viterbi_matches_reference(extra, texts):
    alphabet = bytes(sorted(set(b"".join(texts)) | set(b"".join(extra))))
    model, pieces = _piece_model(extra, alphabet)
    scores = {p: float(s) for p, s in zip(pieces, model.scores)}
    data, offsets = pack_texts(texts)
    counts, n_tokens = model.viterbi_counts(data, offsets)
    expected = Counter()
    for t in texts:
        expected.update(ref_piece_viterbi(t, scores))
    assert {p: int(c) for p, c in zip(pieces, counts) if c} == dict(expected)
    assert n_tokens == sum(expected.values())
    for t in texts:
        assert model.segment(t) == ref_piece_viterbi(t, scores)


def test_piece_viterbi_example():
    model = PieceModel([b"a", b"ab", b"b"], np.array([2, 1, 1]))
    assert model.segment(b"ab") == [b"ab"]  # log .25 > log .5 + log .25


@given(st.lists(st.binary(min_size=1, max_size=5), max_size=30), st.binary(max_size=12), st.booleans())
@settings(**SETTINGS)
def test_piece_walk_finds_the_pieces_starting_at_each_byte(pieces, text, wide):
    """next_unit / piece_at (the walk of every piece_lattice kernel) visit the pieces starting at a position
    shortest first: ref_common_prefix_search over a dict."""
    pieces = sorted(set(pieces))
    units = DoubleArray.build(pieces, wide=wide).units
    index = {p: i for i, p in enumerate(pieces)}
    for start in range(len(text)):
        found, node = [], units[0]
        for end in range(start + 1, len(text) + 1):
            node = next_unit(units, node, text[end - 1])
            if node < 0:
                break
            if piece_at(units, node) >= 0:
                found.append((int(piece_at(units, node)), end - start))
        assert found == ref_common_prefix_search(index, text, start)


def test_piece_model_skips_empty_pieces_and_matches_the_last_of_repeated_ones():
    """As the hash trie it replaced: an empty piece matches nothing, a repeated piece is matched at its last index."""
    model = PieceModel([b"a", b"", b"b", b"b"], np.array([2, 1, 1, 3]))
    counts, n_tokens = model.viterbi_counts(*pack_texts([b"abab", b""]))
    assert counts.tolist() == [2, 0, 0, 2] and n_tokens == 4
    assert model.segment(b"ab") == [b"a", b"b"]


@given(pieces_strategy, st.lists(st.binary(min_size=1, max_size=6), max_size=4))
@settings(**SETTINGS)
def test_expected_counts_match_enumeration(extra, texts):
    alphabet = bytes(sorted(set(b"".join(texts)) | set(b"".join(extra))))
    model, pieces = _piece_model(extra, alphabet)
    probs = {p: math.exp(s) for p, s in zip(pieces, model.scores)}
    data, offsets = pack_texts(texts)
    expected_counts, log_likelihood = model.expected_counts(data, offsets)
    reference = Counter()
    for t in texts:
        for p, v in ref_piece_expected_counts(t, probs).items():
            reference[p] += v
    for p, v in zip(pieces, expected_counts):
        assert v == pytest.approx(reference.get(p, 0.0), rel=1e-9, abs=1e-9)


@given(pieces_strategy, st.lists(st.binary(max_size=10), max_size=6))
@settings(**SETTINGS)
def test_adjacent_pair_counts_match_reference(extra, texts):
    alphabet = bytes(sorted(set(b"".join(texts)) | set(b"".join(extra))))
    model, pieces = _piece_model(extra, alphabet)
    scores = {p: float(s) for p, s in zip(pieces, model.scores)}
    index = {p: i for i, p in enumerate(pieces)}
    data, offsets = pack_texts(texts)
    counts, (keys, pair_counts) = model.viterbi_counts_and_pairs(data, offsets)
    expected = Counter()
    for t in texts:
        segmentation = ref_piece_viterbi(t, scores)
        expected.update((index[a] << 32) | index[b] for a, b in zip(segmentation, segmentation[1:]))
    assert dict(zip(keys.tolist(), pair_counts.tolist())) == dict(expected)
    assert keys.tolist() == sorted(expected)


@given(st.lists(st.binary(max_size=20).map(lambda b: b"\x00\x01prefix_" * (len(b) % 3) + b), max_size=80))
@settings(**SETTINGS)
def test_argsort_byte_strings_is_stable_and_sorts_by_bytes(strings):
    """Strings with long common prefixes (runs of equal first words, short and long) and duplicates."""
    data, offsets = pack_texts(strings)
    order = argsort_byte_strings_kernel(data, offsets[:-1].copy(), np.diff(offsets))
    assert order.tolist() == sorted(range(len(strings)), key=lambda i: (strings[i], i))


@given(st.lists(st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2**16, 2**63, 2**64 - 1]), min_size=1,
                max_size=300), st.booleans())
@settings(**SETTINGS)
def test_argsort_words_is_a_stable_sort(words, radix):
    """With ``radix``, the words repeated past RADIX_SORT_MIN (the radix passes; equal words), else numpy's sort."""
    words = np.array(words * (RADIX_SORT_MIN // len(words) + 1 if radix else 1), np.uint64)
    order = argsort_words(words)
    assert order.tolist() == sorted(range(len(words)), key=lambda i: (int(words[i]), i))
