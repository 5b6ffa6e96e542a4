"""BytePiece training: monoid laws, partition independence, pruning, models, settings errors."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels.ngram_count import pack_ngram, unpack_ngram
from tokenizer.model import Model, PieceType
from tokenizer.trainers.bytepiece import (
    EStepStatistics, PieceModel, TrainSettings, build_model, build_ngram_model, chunk_texts, count_maximal_ngrams,
    count_ngrams, expand_prefix_form, leading_pair, prefix_form,
    candidate_mask, complete_bytes, em_e_step, em_m_step, empty_counts, prune_candidates, resegment_counts,
    empty_piece_counts, join_counts, merge_counts, merge_piece_counts, pack_texts, piece_list, prune_pieces,
    segment_and_count_pieces, train_bytepiece_local,
)

ALPHABET = "ab \n1２é你ü"
SETTINGS = dict(max_examples=60, deadline=None)


def _corpus(seed: int = 0, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    words = ["the", "cat", "sat", "on", "mat", "数据", "模型", "训练", "中文", "日本語", "テスト", "über", "naïve",
             "12", "345", "\n", "  "]
    return ["".join(rng.choice(words) + rng.choice(" ,") for _ in range(rng.randint(1, 25))) + "\n" * (i % 3)
            for i in range(n)]


def _counts_of(texts, order, s=TrainSettings()):
    return count_ngrams(*chunk_texts(*pack_texts(texts), s), order)


def _equal(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------------------ monoid laws
@given(st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=10), st.integers(1, 7), st.data())
@settings(**SETTINGS)
def test_ngram_counts_are_a_monoid(texts, order, data):
    whole = _counts_of(texts, order)
    cut = data.draw(st.integers(0, len(texts)))
    assert _equal(merge_counts(_counts_of(texts[:cut], order), _counts_of(texts[cut:], order)), whole)
    assert _equal(merge_counts(whole, empty_counts()), whole)
    assert _equal(merge_counts(empty_counts(), whole), whole)
    a, b, c = _counts_of(texts[:cut], order), _counts_of(texts[cut:], order), _counts_of(texts[::2], order)
    assert _equal(merge_counts(merge_counts(a, b), c), merge_counts(a, merge_counts(b, c)))
    assert _equal(merge_counts(a, b), merge_counts(b, a))


@given(st.lists(st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=6), max_size=6), st.integers(1, 5))
@settings(**SETTINGS)
def test_join_counts_is_the_sum_of_the_tables_and_empties_the_list(shards, order):
    tables = [_counts_of(texts, order) for texts in shards]
    expected = empty_counts()
    for table in tables:
        expected = merge_counts(expected, table)
    assert _equal(join_counts(tables), expected)
    assert tables == []  # emptied, so the caller's buffers can go
    keys, counts = join_counts([(np.array([1, 5]), np.array([2, 1])), (np.array([3, 5]), np.array([4, 4]))])
    assert keys.tolist() == [1, 3, 5] and counts.tolist() == [2, 4, 5] and keys.dtype == counts.dtype == np.int64


@given(st.lists(st.lists(st.text(alphabet=ALPHABET + "\x00\x7f", max_size=30), max_size=6), max_size=6),
       st.integers(1, 7), st.integers(1, 5))
@settings(**SETTINGS)
def test_prefix_forms_summed_and_split_by_leading_pair_expand_to_the_ngram_counts(shards, order, buckets):
    """What the n-gram reduce does: each shard's longest n-grams in prefix form, summed, cut into buckets by their
    first two bytes, each bucket expanded on its own: together, exactly the n-gram counts of all the text."""
    s = TrainSettings()
    forms = [prefix_form(count_maximal_ngrams(*chunk_texts(*pack_texts(texts), s), order)) for texts in shards]
    summed = empty_counts()
    for form in forms:
        summed = merge_counts(summed, form)
    bucket = leading_pair(summed[0]) % buckets
    parts = [expand_prefix_form((summed[0][bucket == b], summed[1][bucket == b])) for b in range(buckets)]
    assert _equal(join_counts(parts), _counts_of([t for texts in shards for t in texts], order))
    assert np.array_equal(np.sort(summed[0]), summed[0])  # prefix forms stay sorted and distinct under merges


def test_prefix_form_by_hand():
    """``aab`` at order 2: longest n-grams aa, ab, b; single bytes a: 2, b: 1 exact; the reduce adds the rest."""
    longest = count_maximal_ngrams(*pack_texts(["aab"]), 2)
    grams = lambda table: {unpack_ngram(k): int(c) for k, c in zip(*table)}  # noqa: E731
    assert grams(longest) == {b"aa": 1, b"ab": 1, b"b": 1}
    assert grams(prefix_form(longest)) == {b"a": 2, b"aa": 1, b"ab": 1, b"b": 1}
    assert grams(expand_prefix_form((np.array([pack_ngram(b"a"), pack_ngram(b"ab"), pack_ngram(b"abc")]),
                                     np.array([5, 2, 1])))) == {b"a": 5, b"ab": 3, b"abc": 1}
    assert leading_pair(np.array([pack_ngram(b"abc")])).tolist() == leading_pair(
        np.array([pack_ngram(b"ab")])).tolist()


@given(st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=10), st.data())
@settings(**SETTINGS)
def test_piece_counts_are_a_monoid(texts, data):
    s = TrainSettings(order=3, min_count=2)
    lm = build_ngram_model(*_counts_of(texts, 3, s), s)

    def pieces(part):
        return segment_and_count_pieces(lm, *chunk_texts(*pack_texts(part), s), s)

    whole = pieces(texts)
    cut = data.draw(st.integers(0, len(texts)))
    assert _equal(merge_piece_counts(pieces(texts[:cut]), pieces(texts[cut:])), whole)
    assert _equal(merge_piece_counts(whole, empty_piece_counts()), whole)
    names = piece_list(whole[0], whole[1])
    assert names == sorted(names) and len(set(names)) == len(names)


def test_training_is_independent_of_sharding():
    texts = _corpus(1, 200)
    s = TrainSettings(order=4, min_count=2, vocab_sizes=(400, 300), normalization="nfc")
    one = train_bytepiece_local(texts, s, shard_bytes=1 << 30)
    many = train_bytepiece_local(texts, s, shard_bytes=200)
    assert set(one) == {400, 300}
    for size in one:
        assert one[size].to_bytes() == many[size].to_bytes()


# ------------------------------------------------------------------------------------------------------ pruning
def test_prune_pieces_rules():
    s = TrainSettings(min_count=3, max_piece_length=3, vocab_sizes=(1000,))
    pieces = [b"ab", b"abcd", b"cd", b"x", b"zz"]
    counts = np.array([5, 9, 4, 2, 2])
    (kept, kept_counts), = prune_pieces(pieces, counts, s).values()
    got = dict(zip(kept, kept_counts.tolist()))
    # all 256 bytes present; "abcd" is too long: its 9 go to "ab" and "cd"; "zz" is too rare: its 2 go to "z" x2
    assert len([p for p in kept if len(p) == 1]) == 256
    assert got[b"ab"] == 14 and got[b"cd"] == 13 and got[b"z"] == 1 + 4 and got[b"x"] == 2
    assert b"abcd" not in got and b"zz" not in got


def test_prune_pieces_nested_and_capped():
    texts = _corpus(2, 300)
    s = TrainSettings(order=5, min_count=2, vocab_sizes=(300, 280, 270))
    data, offsets = chunk_texts(*pack_texts(texts), s)
    lm = build_ngram_model(*count_ngrams(data, offsets, s.order), s)
    piece_data, piece_offsets, counts = segment_and_count_pieces(lm, data, offsets, s)
    result = prune_pieces((piece_data, piece_offsets), counts, s)
    assert list(result) == [300, 280, 270]
    previous = None
    for size, (pieces, piece_counts) in result.items():
        assert len(pieces) <= size - len(s.special_tokens)
        assert sum(len(p) == 1 for p in pieces) == 256
        assert pieces == sorted(pieces) and np.all(piece_counts > 0)
        if previous is not None:
            assert set(pieces) <= set(previous)
        previous = pieces


def test_pruned_pieces_are_their_own_best_segmentation():
    texts = _corpus(3, 200)
    s = TrainSettings(order=6, min_count=2, vocab_sizes=(320,))
    (pieces, counts), = train_pieces(texts, s).values()
    model = PieceModel(pieces, counts)
    for p in pieces:
        assert model.segment(p) == [p]


def train_pieces(texts, s):
    data, offsets = chunk_texts(*pack_texts(texts), s)
    lm = build_ngram_model(*count_ngrams(data, offsets, s.order), s)
    piece_data, piece_offsets, counts = segment_and_count_pieces(lm, data, offsets, s)
    return prune_pieces((piece_data, piece_offsets), counts, s)


# ------------------------------------------------------------------------------------------------------ models
def test_model_layout_and_scores():
    texts = _corpus(4, 150)
    s = TrainSettings(order=4, min_count=2, vocab_sizes=(290,), normalization="nfc")
    (pieces, counts), = train_pieces(texts, s).values()
    model = build_model(pieces, counts, s, {"corpus_fingerprint": "sha256:test"})
    assert isinstance(model, Model)
    n_multi = len(pieces) - 256
    assert model.vocab_size == 256 + n_multi + 3
    assert model.pieces[:256] == [bytes([b]) for b in range(256)]
    multi = model.pieces[256:256 + n_multi]
    assert multi == sorted(multi, key=lambda p: (len(p), p))
    assert model.pieces[-3:] == [b"<pad>", b"<s>", b"</s>"]
    assert (model.pad_id, model.bos_id, model.eos_id) == (256 + n_multi, 257 + n_multi, 258 + n_multi)
    assert list(model.types[-3:]) == [PieceType.CONTROL] * 3
    by_piece = dict(zip(pieces, counts.tolist()))
    total = sum(by_piece.values())
    for i in (0, 97, 256, 256 + n_multi - 1):
        expected = np.log(by_piece[model.pieces[i]] / total)   # in steps of 2**-13 (tokenizer.model)
        assert model.scores[i] == round(expected * 2**13) / 2**13 and abs(model.scores[i] - expected) <= 2**-14
    assert model.provenance["corpus_fingerprint"] == "sha256:test"
    assert model.provenance["settings"]["min_count"] == 2
    assert model.normalizer == {"name": "nfc"}
    assert Model.from_bytes(model.to_bytes()) == model


def test_local_training_is_deterministic_and_picklable():
    texts = _corpus(5, 120)
    s = TrainSettings(order=4, min_count=2, vocab_sizes=(300,))
    a = train_bytepiece_local(texts, s)[300]
    b = train_bytepiece_local(list(texts), s)[300]
    assert a.to_bytes() == b.to_bytes()
    data, offsets = chunk_texts(*pack_texts(texts), s)
    lm = build_ngram_model(*count_ngrams(data, offsets, s.order), s)
    lm.lookup_table()
    clone = pickle.loads(pickle.dumps(lm))
    assert _equal(segment_and_count_pieces(clone, data, offsets, s), segment_and_count_pieces(lm, data, offsets, s))


def test_identity_training_accepts_any_bytes_and_segments_losslessly():
    rng = random.Random(6)
    texts = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(60)] + [b"abab\x00ab"] * 20
    s = TrainSettings(order=3, min_count=2, vocab_sizes=(300,))
    model = train_bytepiece_local(texts, s)[300]
    assert model.vocab_size >= 259
    pieces = [p for p, t in zip(model.pieces, model.types) if t == PieceType.NORMAL]
    piece_model = PieceModel(sorted(pieces), np.ones(len(pieces), np.int64))
    for t in texts:
        assert b"".join(piece_model.segment(t)) == t


# ------------------------------------------------------------------------------------------------------ EM refinement
def test_em_refinement_does_not_lose_compression():
    texts = _corpus(7, 300)
    base = TrainSettings(order=6, min_count=2, vocab_sizes=(320,), normalization="nfc")
    plain = train_bytepiece_local(texts, base)[320]
    refined = train_bytepiece_local(texts, TrainSettings(**{**base.to_dict(), "vocab_sizes": (320,),
                                                            "special_tokens": base.special_tokens,
                                                            "refine_em_rounds": 2}))[320]
    data, offsets = chunk_texts(*pack_texts(texts), base)

    def tokens(model):
        normal = [(p, s) for p, s, t in zip(model.pieces, model.scores, model.types) if t == PieceType.NORMAL]
        normal.sort()
        pm = PieceModel([p for p, _ in normal], np.ones(len(normal), np.int64))
        pm.scores = np.array([s for _, s in normal], np.float64)
        return pm.viterbi_counts(data, offsets)[1]

    assert plain.vocab_size <= refined.vocab_size <= 320
    assert tokens(refined) < tokens(plain)


def test_em_m_step_fills_free_slots_with_frequent_pairs():
    pieces = [bytes([b]) for b in range(256)]
    a, b = pieces.index(b"a"), pieces.index(b"b")
    stats = EStepStatistics(np.ones(256, np.int64), (np.array([(a << 32) | b], np.int64), np.array([5], np.int64)))
    s = TrainSettings(min_count=2)
    new_pieces, new_counts = em_m_step(pieces, stats, s, capacity=257)
    assert len(new_pieces) == 257 and dict(zip(new_pieces, new_counts.tolist()))[b"ab"] == 5
    assert em_m_step(pieces, stats, s, capacity=256)[0] == pieces
    assert em_m_step(pieces, stats, TrainSettings(min_count=6), capacity=257)[0] == pieces


# ------------------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("kwargs, fragment", [
    ({"vocab_sizes": (200,)}, "request at least 259"),
    ({"vocab_sizes": (258,)}, "request at least 259"),
    ({"vocab_sizes": (300,), "special_tokens": ()}, None),
    ({"vocab_sizes": ()}, "at least one vocabulary size"),
    ({"vocab_sizes": (1000, 1000)}, "repeats"),
    ({"vocab_sizes": (1000.5,)}, "not an integer"),
    ({"order": 0}, "order"),
    ({"order": 8}, "7 bytes"),
    ({"min_count": 0}, "min_count"),
    ({"max_piece_length": 0}, "max_piece_length"),
    ({"normalization": "nfkc"}, "identity"),
    ({"refine_em_rounds": -1}, "refine_em_rounds"),
    ({"refine_em_mode": "soft"}, "viterbi"),
    ({"special_tokens": ("<s>", "<s>")}, "distinct"),
])
def test_bad_settings_say_the_fix(kwargs, fragment):
    s = TrainSettings(**kwargs)
    if fragment is None:
        assert s.validate() is s
        return
    with pytest.raises(ConfigError, match=fragment):
        s.validate()


def test_bad_inputs():
    with pytest.raises(InputError, match="identity"):
        chunk_texts(*pack_texts([b"ok", b"\xff\xfe"]), TrainSettings(normalization="nfc"))
    with pytest.raises(InputError, match="no text"):
        train_bytepiece_local(["", ""], TrainSettings(vocab_sizes=(300,)))
    with pytest.raises(InputError, match="str or bytes"):
        pack_texts(["a", 3])
    with pytest.raises(InputError, match="offsets"):
        count_ngrams(np.zeros(3, np.uint8), np.array([0, 5]), 3)
    with pytest.raises(ConfigError, match="vocab size"):
        train_bytepiece_local(["abc"], TrainSettings(vocab_sizes=(100,)))
    with pytest.raises(InputError, match="single bytes"):
        build_model([b"ab"], [3], TrainSettings())


def test_distributed_pruning_steps_equal_prune_pieces():
    texts = _corpus(8, 300)
    s = TrainSettings(order=6, min_count=3, vocab_sizes=(400, 300))
    data, offsets = chunk_texts(*pack_texts(texts), s)
    keys, counts = count_ngrams(data, offsets, s.order)
    lm = build_ngram_model(keys, counts, s)
    keep = ((keys & 7) == 1) | (counts >= s.min_count)
    filtered = build_ngram_model(keys[keep], counts[keep], s)
    assert np.array_equal(lm.keys, filtered.keys) and np.array_equal(lm.log_probs, filtered.log_probs)
    piece_data, piece_offsets, piece_counts = segment_and_count_pieces(lm, data, offsets, s)
    pieces = piece_list(piece_data, piece_offsets)
    whole = prune_pieces(pieces, piece_counts, s)
    pieces, piece_counts = complete_bytes(pieces, piece_counts)
    mask = candidate_mask([len(p) for p in pieces], piece_counts, s)
    candidates = [p for p, m in zip(pieces, mask) if m]
    dropped = [p for p, m in zip(pieces, mask) if not m]
    gained = sum(resegment_counts(candidates, piece_counts[mask], part, piece_counts[~mask][i:i + 7])
                 for i, part in ((i, dropped[i:i + 7]) for i in range(0, len(dropped), 7)))
    steps = prune_candidates(candidates, piece_counts[mask] + gained, s)
    assert list(steps) == list(whole)
    for size in whole:
        assert steps[size][0] == whole[size][0] and np.array_equal(steps[size][1], whole[size][1])


def test_e_step_statistics_round_trip_and_add():
    texts = _corpus(9, 80)
    s = TrainSettings(order=4, min_count=2, vocab_sizes=(300,))
    (pieces, counts), = train_pieces(texts, s).values()
    data, offsets = chunk_texts(*pack_texts(texts), s)
    for mode in ("viterbi", "expected"):
        ms = TrainSettings(refine_em_mode=mode)
        a = em_e_step(pieces, counts, data, offsets[:30], ms, with_pairs=True)
        b = em_e_step(pieces, counts, data, offsets[29:], ms, with_pairs=True)
        whole = em_e_step(pieces, counts, data, offsets, ms, with_pairs=True)
        plain = em_e_step(pieces, counts, data, offsets, ms)
        assert isinstance(plain, np.ndarray) and np.allclose(plain, whole.pieces)
        both = EStepStatistics.from_bytes((a + b).to_bytes())
        assert np.allclose(both.pieces, whole.pieces) and both.pieces.dtype == whole.pieces.dtype
        assert _equal(both.pairs, whole.pairs)
    assert em_m_step(pieces, whole.pieces)[0] == [p for p, v in zip(pieces, whole.pieces)
                                                  if len(p) == 1 or round(v) >= 1]
