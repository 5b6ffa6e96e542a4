"""BPE training: kernels vs twins, the chunk-count monoid, models (layout, nesting, lossless), settings errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import Tokenizer
from tokenizer.errors import ConfigError
from tokenizer.kernels.bpe_merges import learn_merges
from tokenizer.kernels.bpe_pair_rules import ALL_SPACE, FROZEN, LEAD_SPACE, NO_SPACE, SCRIPT_ANY
from tokenizer.kernels.chunk_chars import chars_to_symbols, weighted_char_counts
from tokenizer.kernels.chunk_count import (MODE_BEFORE_SPACE, MODE_BEFORE_SPACE_SYMBOL, MODE_WHOLE_DOCUMENT,
                                           count_chunk_table, count_spans, split_before_end)
from tokenizer.twins.bpe_merges import ref_learn_merges
from tokenizer.twins.chunk_chars import ref_chars_to_symbols, ref_weighted_char_counts
from tokenizer.twins.chunk_count import ref_count_chunk_table, ref_count_spans, ref_split_before
from tokenizer.trainers import bpe

words_strategy = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=9), min_size=1, max_size=6)


def run_kernel(words, counts, lengths, max_merges, min_count, max_len, attributes=None, symbol_bytes=None):
    symbols = np.array([s for w in words for s in w], np.int32)
    offsets = np.zeros(len(words) + 1, np.int64)
    offsets[1:] = np.cumsum([len(w) for w in words])
    if attributes is None:
        attributes = [(SCRIPT_ANY, SCRIPT_ANY, NO_SPACE)] * len(lengths)
    first, last, flags = (np.array(column, np.int64) for column in zip(*attributes))
    strings = symbol_bytes if symbol_bytes is not None else [bytes([k]) for k in range(len(lengths))]
    string_offsets = np.zeros(len(strings) + 1, np.int64)
    string_offsets[1:] = np.cumsum([len(b) for b in strings])
    left, right, merged = learn_merges(symbols, offsets, np.array(counts, np.int64), np.array(lengths, np.int64),
                                       first, last, flags, max_merges, min_count, max_len,
                                       np.frombuffer(b"".join(strings), np.uint8).copy(), string_offsets,
                                       symbol_bytes is not None)
    return list(zip(left.tolist(), right.tolist(), merged.tolist()))


def test_learn_merges_docstring_example():
    assert run_kernel([[0, 1, 0, 1], [0, 1]], [1, 2], [1, 1], 5, 1, 99) == [(0, 1, 4), (2, 2, 1)]


@settings(max_examples=200, deadline=None)
@given(words=words_strategy, data=st.data())
def test_learn_merges_matches_twin(words, data):
    counts = data.draw(st.lists(st.integers(1, 5), min_size=len(words), max_size=len(words)))
    lengths = data.draw(st.lists(st.integers(1, 2), min_size=4, max_size=4))
    max_merges = data.draw(st.integers(0, 12))
    min_count = data.draw(st.integers(1, 3))
    max_len = data.draw(st.integers(2, 9))
    assert run_kernel(words, counts, lengths, max_merges, min_count, max_len) == ref_learn_merges(
        words, counts, lengths, max_merges, min_count, max_len)


# symbol attributes as SentencePiece-style training sets them: (first script, last script, flags)
ATTRIBUTES = [(SCRIPT_ANY, SCRIPT_ANY, NO_SPACE), (1, 1, NO_SPACE), (2, 2, NO_SPACE),
              (SCRIPT_ANY, SCRIPT_ANY, ALL_SPACE | LEAD_SPACE), (SCRIPT_ANY, SCRIPT_ANY, FROZEN)]


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=9), min_size=1, max_size=6), data=st.data())
def test_learn_merges_with_piece_rules_matches_twin(words, data):
    counts = data.draw(st.lists(st.integers(1, 5), min_size=len(words), max_size=len(words)))
    attributes = data.draw(st.permutations(ATTRIBUTES))
    max_merges = data.draw(st.integers(0, 12))
    max_len = data.draw(st.integers(2, 6))
    got = run_kernel(words, counts, [1] * 5, max_merges, 1, max_len, attributes)
    assert got == ref_learn_merges(words, counts, [1] * 5, max_merges, 1, max_len, attributes)


# symbol strings for SentencePiece's ties: shared prefixes longer than the 7 bytes the heap keeps, a multi-byte
# character, the empty string and equal strings (the same merged string from two pairs)
STRING_CHOICES = [b"a", b"b", b"ab", b"abcdefghij", b"abcdefghik", b"\xe2\x96\x81", b"", b"a", b"\xff"]


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=9), min_size=1, max_size=6), data=st.data())
def test_learn_merges_with_sentencepiece_ties_matches_twin(words, data):
    counts = data.draw(st.lists(st.integers(1, 3), min_size=len(words), max_size=len(words)))
    strings = data.draw(st.lists(st.sampled_from(STRING_CHOICES), min_size=5, max_size=5))
    lengths = data.draw(st.lists(st.sampled_from([1, 2, 70]), min_size=5, max_size=5))  # 70 + 70 > 127: capped
    use_rules = data.draw(st.booleans())
    attributes = data.draw(st.permutations(ATTRIBUTES)) if use_rules else None
    max_merges = data.draw(st.integers(0, 12))
    max_len = data.draw(st.sampled_from([3, 6, 1000]))
    got = run_kernel(words, counts, lengths, max_merges, 1, max_len, attributes, strings)
    assert got == ref_learn_merges(words, counts, lengths, max_merges, 1, max_len, attributes, strings)


def test_sentencepiece_ties_hand_example():
    # ids: 0 "b", 1 "a", 2 "c"; every adjacent pair occurs once
    words = [[0, 1], [2, 1, 0], [1, 1, 1]]  # "ba", "cab", "aaa"
    # pair counts: (0,1) "ba" 1, (2,1) "ca" 1, (1,0) "ab" 1, (1,1) "aa" 2 -> "aa" first, then the smallest of
    # "ab", "ba", "ca" (two characters each; "aa"+"a" has three): "ab" = (1, 0); by smaller ids (0, 1) "ba"
    strings = [b"b", b"a", b"c"]
    assert run_kernel(words, [1, 1, 1], [1, 1, 1], 2, 1, 9, None, strings) == [(1, 1, 2), (1, 0, 1)]
    assert run_kernel(words, [1, 1, 1], [1, 1, 1], 2, 1, 9) == [(1, 1, 2), (0, 1, 1)]
    # fewer characters beats the smaller string: "c" + "a" with lengths 1 + 1 before "a" + "b" with 1 + 2
    assert run_kernel([[2, 1], [1, 0]], [1, 1], [2, 1, 1], 1, 1, 9, None, strings) == [(2, 1, 1)]


def test_piece_rules_hand_example():
    # ids: 0 "a" (script 1), 1 "," (script 2), 2 "▁", 3 tab (frozen)
    attributes = [(1, 1, NO_SPACE), (2, 2, NO_SPACE), (SCRIPT_ANY, SCRIPT_ANY, ALL_SPACE | LEAD_SPACE),
                  (SCRIPT_ANY, SCRIPT_ANY, FROZEN)]
    words = [[2, 2, 0, 0, 1, 3, 0]]  # "▁▁aa,<tab>a"
    merges = run_kernel(words, [1], [1, 1, 1, 1], 10, 1, 16, attributes)
    # allowed: ▁▁ (all spaces), ▁a (leading ▁), aa; never a, (scripts), ▁▁a, or anything with the tab
    assert merges == [(0, 0, 1), (2, 2, 1)]


@pytest.mark.parametrize("mode,delimiter", [(MODE_BEFORE_SPACE_SYMBOL, "\u2581".encode()),
                                            (MODE_BEFORE_SPACE, b" "), (MODE_WHOLE_DOCUMENT, None)])
@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.text(alphabet="ab \u2581\u2585\u2580é中", max_size=10), max_size=6),
       junk=st.lists(st.binary(max_size=5) | st.sampled_from([b"\xe2\x96", b"\x96\x81", b"\xe2"]), max_size=3))
def test_split_before_modes_match_twin(mode, delimiter, texts, junk):
    docs = [t.encode() for t in texts] + junk  # cut "▁" bytes at document ends never delimit
    data, offsets = bpe.pack_texts(docs)
    starts, ends, counts = count_chunk_table(mode, np.zeros(1, np.uint8), np.zeros(1, np.int16), data, offsets)
    got = [data[a:b].tobytes() for a, b in zip(starts, ends)]
    assert (got, counts.tolist()) == tuple(ref_count_chunk_table([ref_split_before(d, delimiter) for d in docs]))


def test_split_before_example():
    data = np.frombuffer(b"ab c", np.uint8)
    assert split_before_end(MODE_BEFORE_SPACE, data, 0, 4) == 2
    assert split_before_end(MODE_BEFORE_SPACE, data, 2, 4) == 4
    assert ref_split_before(b"a b  c", b" ") == [b"a", b" b", b" ", b" c"]


@settings(max_examples=100, deadline=None)
@given(spans=st.lists(st.binary(max_size=3), max_size=12), data=st.data())
def test_count_spans_matches_twin(spans, data):
    weights = data.draw(st.lists(st.integers(1, 9), min_size=len(spans), max_size=len(spans)))
    blob = b"".join(spans)
    ends = np.cumsum([len(s) for s in spans]).astype(np.int64)
    starts = ends - np.array([len(s) for s in spans], np.int64)
    first, counts = count_spans(np.frombuffer(blob, np.uint8), starts, ends, np.array(weights, np.int64))
    assert (first.tolist(), counts.tolist()) == ref_count_spans(spans, weights)


def table(result):
    return sorted(zip(bpe.sort_chunks(*result)[0], bpe.sort_chunks(*result)[1].tolist()))


@pytest.mark.parametrize("pretokenizer", ["byte_level", "sentencepiece"])
@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(alphabet="ab c\n中'", max_size=12), max_size=6), cut=st.integers(0, 6))
def test_chunk_counts_are_a_monoid(pretokenizer, texts, cut):
    s = bpe.BpeSettings(pretokenizer=pretokenizer)
    whole = bpe.count_chunks(*bpe.pack_texts(texts), s)
    parts = bpe.merge_chunk_counts(bpe.count_chunks(*bpe.pack_texts(texts[:cut]), s),
                                   bpe.count_chunks(*bpe.pack_texts(texts[cut:]), s))
    assert table(whole) == table(parts)
    assert table(bpe.merge_chunk_counts(bpe.empty_chunk_counts(), whole)) == table(whole)


def test_sentencepiece_chunks():
    s = bpe.BpeSettings(pretokenizer="sentencepiece")
    text, starts, ends = bpe.chunk_spans(*bpe.pack_texts(["a  bc\n\nd"]), s)
    chunks = [bytes(text[a:b]).decode() for a, b in zip(starts, ends)]
    assert chunks == ["a", "▁▁bc", "\n\n", "d"]


texts_strategy = st.lists(st.text(alphabet="abAB c\n\t中ひ'.9é\u0301\x00", max_size=12), max_size=6)


@pytest.mark.parametrize("pretokenizer,pattern", [("byte_level", "gpt2"), ("byte_level", "llama3"),
                                                  ("byte_level", "o200k"), ("sentencepiece", "gpt2")])
@settings(max_examples=60, deadline=None)
@given(texts=texts_strategy, junk=st.binary(max_size=4))
def test_count_chunk_table_matches_twin(pretokenizer, pattern, texts, junk):
    docs = [t.encode() for t in texts] + [junk]
    s = bpe.BpeSettings(pretokenizer=pretokenizer, pattern=pattern)
    text, starts, ends = bpe.chunk_spans(*bpe.pack_texts(docs), s)
    spans = [bytes(text[a:b]) for a, b in zip(starts, ends)]
    assert b"".join(spans) == b"".join(d.replace(b" ", "\u2581".encode()) if pretokenizer == "sentencepiece"
                                       else d for d in docs)
    chunk_data, chunk_offsets, counts = bpe.count_chunks(*bpe.pack_texts(docs), s)
    got = [chunk_data[a:b].tobytes() for a, b in zip(chunk_offsets[:-1], chunk_offsets[1:])]
    assert (got, counts.tolist()) == tuple(ref_count_chunk_table([spans]))


@settings(max_examples=100, deadline=None)
@given(spans=st.lists(st.text(alphabet="aé中\U0001F600 ").map(str.encode) | st.binary(max_size=5), max_size=6),
       data=st.data())
def test_char_kernels_match_twins(spans, data):
    weights = data.draw(st.lists(st.integers(1, 9), min_size=len(spans), max_size=len(spans)))
    blob = np.frombuffer(b"".join(spans), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in spans])]).astype(np.int64)
    totals = np.zeros(0x110000, np.int64)
    invalid = weighted_char_counts(blob, offsets, np.array(weights, np.int64), totals)
    expected, expected_invalid = ref_weighted_char_counts(spans, weights)
    assert invalid == expected_invalid
    assert {int(c): int(totals[c]) for c in np.flatnonzero(totals)} == expected
    char_symbol = np.full(0x110000, -1, np.int32)
    mapping = {0xE9: 300, 0x4E2D: 301}
    for cp, symbol in mapping.items():
        char_symbol[cp] = symbol
    symbols, symbol_offsets = chars_to_symbols(blob, offsets, char_symbol)
    got = [symbols[a:b].tolist() for a, b in zip(symbol_offsets[:-1], symbol_offsets[1:])]
    assert got == ref_chars_to_symbols(spans, mapping)


def test_required_characters_follow_coverage():
    data, offsets = bpe.pack_texts(["aaaab", "\tc"])
    counts = np.array([10, 1], np.int64)
    # a 40, b 10, tab 1, c 1 of 52: coverage is checked before each character; ties go to the smaller code point
    assert bpe.required_characters(data, offsets, counts, 0.98) == [(97, 40), (98, 10), (9, 1)]
    assert bpe.required_characters(data, offsets, counts, 0.99) == [(97, 40), (98, 10), (9, 1), (99, 1)]


def test_tabs_merge_like_any_character_as_in_sentencepiece(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    lines = ["\t\tfoo = 1;\t\t/* one */", "\t\tbar = 2;", "\t\t\treturn x;\t\t\t\\", "plain words here"] * 40
    model = bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(330,), pretokenizer="sentencepiece"))[330]
    ours = {p for p in model.pieces if b"\t" in p}
    (tmp_path / "tabs.txt").write_text("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(input=str(tmp_path / "tabs.txt"), model_prefix=str(tmp_path / "sp"), model_type="bpe",
                                   vocab_size=330, normalization_rule_name="identity", byte_fallback=True,
                                   remove_extra_whitespaces=False, add_dummy_prefix=False,
                                   allow_whitespace_only_pieces=True, minloglevel=2, hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    theirs = {sp.id_to_piece(i).encode() for i in range(sp.get_piece_size()) if "\t" in sp.id_to_piece(i)}
    assert {b"\t\t", b"\t\t\t", b"\t\t/*", b"\t\t\t\\"} <= ours & theirs, (sorted(ours), sorted(theirs))


def test_sentencepiece_pieces_obey_sentencepiece_rules():
    corpus = ["the cat's hat, the cat's bat.", "  indented  twice", "東京ひらがな2024年", "ab12 12ab"] * 5
    model = bpe.train_bpe_local(corpus, bpe.BpeSettings(vocab_sizes=(400,), pretokenizer="sentencepiece"))[400]
    space = "\u2581"
    pieces = []
    for piece in model.pieces[256:-3]:
        try:
            pieces.append(piece.decode())
        except UnicodeDecodeError:
            assert len(piece) < 3  # only a part of a character being assembled is not UTF-8
    assert {"\u2581the", "\u2581\u2581", "東京ひらがな", "2024", "ab"} <= set(pieces)
    for text in pieces:
        assert space not in text[1:] or set(text) == {space}, text
        assert len(text) <= 16
        assert not any(c.isascii() and c.isalpha() for c in text) or all(
            c.isascii() and c.isalpha() for c in text.lstrip(space)), text  # never "s," "t'" "ab1"


CORPUS = ["the cat sat on the mat", "the dog's bone", "  indented\tline\n", "中文中文 テキスト", "x" * 30] * 3


@pytest.mark.parametrize("pretokenizer,pattern", [("byte_level", "gpt2"), ("byte_level", "llama3"),
                                                  ("byte_level", "o200k"), ("sentencepiece", "gpt2")])
def test_models_are_nested_and_lossless(pretokenizer, pattern):
    s = bpe.BpeSettings(vocab_sizes=(280, 300), pretokenizer=pretokenizer, pattern=pattern)
    models = bpe.train_bpe_local(CORPUS, s)
    small, large = models[280], models[300]
    assert small.vocab_size <= 280 and large.vocab_size <= 300
    assert small.pieces[:-3] == large.pieces[:small.vocab_size - 3]
    assert small.pieces[:256] == [bytes([b]) for b in range(256)]
    assert large.algorithm == "bpe" and large.pieces[-3:] == [b"<pad>", b"<s>", b"</s>"]
    tok = Tokenizer(large)
    for text in CORPUS + ["unseen ✓ text\x00", ""]:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
    assert len(tok.encode(CORPUS[0])) < len(CORPUS[0])


def test_byte_level_model_replays_merges():
    model = bpe.train_bpe_local(["abab ab"] * 4, bpe.BpeSettings(vocab_sizes=(262,), special_tokens=()))[262]
    tok = Tokenizer(model)
    assert [tok.id_to_piece(i) for i in tok.encode("abab ab")] == [b"abab", b" ab"]


def test_same_model_for_any_document_order():
    s = bpe.BpeSettings(vocab_sizes=(300,))
    assert bpe.train_bpe_local(CORPUS, s)[300] == bpe.train_bpe_local(CORPUS[::-1], s)[300]


@pytest.mark.parametrize("kwargs", [{"vocab_sizes": (100,)}, {"pattern": "gpt4"}, {"pretokenizer": "bert"},
                                    {"min_count": 0}, {"max_piece_length": 1}, {"special_tokens": ("a", "a")}])
def test_bad_settings(kwargs):
    with pytest.raises(ConfigError):
        bpe.BpeSettings(**kwargs).validate()
