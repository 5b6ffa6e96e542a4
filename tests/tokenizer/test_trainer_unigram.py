"""Unigram trainer: kernels vs their Python twins, seeds vs a brute-force substring count, EM/pruning rules,
determinism and sharding independence, and the trained model against sentencepiece's trainer (oracle)."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import Tokenizer
from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels import unigram_train as kt
from tokenizer.model import PieceType
from tokenizer.trainers import unigram as ug
from tokenizer.twins.unigram_train import (ref_best_score, ref_expected_counts, ref_expected_counts_dp, ref_pruning_losses,
                                           ref_valid_piece)

UNITS = ["a", "b", "\u4e2d", "\u00e9", "\u2581"]


@st.composite
def vocab_and_texts(draw, byte_mode=False):
    alphabet = [u.encode() for u in UNITS]
    candidates = sorted({b"".join(c) for n in (1, 2, 3) for c in
                         [tuple(draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n)))
                          for _ in range(6)]})
    pieces = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=10, unique=True))
    scores = {p: draw(st.sampled_from([-1.0, -1.5, -2.25, -3.0])) for p in pieces}
    texts = draw(st.lists(st.lists(st.sampled_from(alphabet), min_size=1, max_size=6).map(b"".join),
                          min_size=1, max_size=4))
    weights = draw(st.lists(st.integers(1, 5), min_size=len(texts), max_size=len(texts)))
    return scores, texts, weights


def trie_of(scores: dict[bytes, float]):
    pieces = sorted(scores)
    trie = ug.PieceTrie(pieces, byte_mode=False)
    return trie, np.array([scores[p] for p in pieces], np.float64)


@settings(max_examples=80, deadline=None)
@given(vocab_and_texts())
def test_expected_counts_kernel_matches_path_enumeration(case):
    scores, texts, weights = case
    trie, score_array = trie_of(scores)
    data, offsets = ug.pack(texts)
    unk = -12.0
    expected = np.zeros(len(trie.pieces), np.int64)
    kt.expected_counts(trie.units, np.exp(score_array), math.exp(unk), trie.max_bytes, False, data, offsets,
                       np.asarray(weights, np.int64), ug.E_STEP_SCALE, expected)
    want = ref_expected_counts(scores, texts, weights, unk)
    for k, piece in enumerate(trie.pieces):
        # each lattice node is rounded to 2**-24 on its own: error <= nodes * 2**-25
        assert abs(expected[k] / ug.E_STEP_SCALE - want.get(piece, 0.0)) < 1e-5


@settings(max_examples=40, deadline=None)
@given(vocab_and_texts())
def test_forward_backward_twin_matches_path_enumeration(case):
    scores, texts, weights = case
    counts, objective = ref_expected_counts_dp(scores, texts, weights, -12.0)
    want = ref_expected_counts(scores, texts, weights, -12.0)
    assert counts.keys() == want.keys()
    assert all(math.isclose(counts[k], want[k], rel_tol=1e-9, abs_tol=1e-12) for k in want)
    assert math.isfinite(objective)


@pytest.mark.parametrize("text, piece_scores", [
    ("\u4e2d" * 1500 + "ab" * 400, {"\u4e2d": -40.0, "\u4e2d\u4e2d": -70.0, "a": -45.0, "ab": -60.0}),  # 2**-1074 far off
    ("ab" * 1200, {"a": 3.0, "b": 2.5, "ab": 6.0, "ba": 5.0}),  # sums past 2**1023 without rescaling
    ("\u00e9a" * 700 + "\u2581", {"\u00e9": -30.0, "\u00e9a": -31.0, "a\u00e9": -32.0}),  # unknown nodes too
])
def test_expected_counts_stay_exact_on_chunks_whose_probabilities_leave_the_float_range(text, piece_scores):
    scores = {k.encode(): v for k, v in piece_scores.items()}
    trie, score_array = trie_of(scores)
    data, offsets = ug.pack([text.encode()])
    unk = min(scores.values()) - ug.UNK_PENALTY
    expected = np.zeros(len(trie.pieces), np.int64)
    objective = kt.expected_counts(trie.units, np.exp(score_array), math.exp(unk), trie.max_bytes, False, data,
                                   offsets, np.array([3], np.int64), ug.E_STEP_SCALE, expected)
    want, want_objective = ref_expected_counts_dp(scores, [text.encode()], [3], unk)
    assert math.isclose(objective, want_objective, rel_tol=1e-12)
    for k, piece in enumerate(trie.pieces):
        # one 2**-24 rounding per lattice node: at most 2 * 3 * len(text) * 2**-25 apart
        assert abs(expected[k] / ug.E_STEP_SCALE - want.get(piece, 0.0)) < 3e-3, piece
    assert expected.sum() > 0


@settings(max_examples=80, deadline=None)
@given(vocab_and_texts())
def test_viterbi_and_alternatives_match_enumeration(case):
    scores, texts, weights = case
    trie, score_array = trie_of(scores)
    unk = -12.0
    data, offsets = ug.pack(texts)
    freq = np.zeros(len(trie.pieces), np.int64)
    kt.viterbi_counts(trie.units, score_array, unk, trie.max_bytes, False, data, offsets,
                      np.asarray(weights, np.int64), freq)
    # the chosen path's score is the best path score
    for text in texts:
        freq_one = np.zeros(len(trie.pieces), np.int64)
        d, o = ug.pack([text])
        tokens = kt.viterbi_counts(trie.units, score_array, unk, trie.max_bytes, False, d, o,
                                   np.ones(1, np.int64), freq_one)
        chosen = float(np.dot(freq_one, score_array)) + unk * (tokens - int(freq_one.sum()))
        assert math.isclose(chosen, ref_best_score(scores, text, unk), abs_tol=1e-9)
    # alternatives: status and second-best score
    piece_data, piece_offsets = ug.pack(trie.pieces)
    status = np.zeros(len(trie.pieces), np.int8)
    alt_offsets = np.zeros(len(trie.pieces) + 1, np.int64)
    alt_ids = np.zeros(len(piece_data), np.int64)
    kt.piece_alternatives(trie.units, score_array, unk, trie.max_bytes, False, piece_data, piece_offsets,
                          np.arange(len(trie.pieces), dtype=np.int64), status, alt_offsets, alt_ids)
    for k, piece in enumerate(trie.pieces):
        if len(piece.decode()) == 1:
            assert status[k] == 0
            continue
        second = ref_best_score(scores, piece, unk, excluded=piece)
        if second > scores[piece]:
            assert status[k] == 1
        else:
            assert status[k] == 2
            alts = alt_ids[alt_offsets[k]:alt_offsets[k + 1]]
            total = sum(score_array[a] if a >= 0 else unk for a in alts)
            assert math.isclose(total, second, abs_tol=1e-9)
            assert b"".join(trie.pieces[a] for a in alts if a >= 0) == piece or -1 in alts.tolist()


SCRIPTS = {"a": "LATIN", "b": "LATIN", "\u4e2d": "HAN", "\u3042": "HAN", "1": "COMMON", ",": "COMMON",
           "\u0301": "INHERITED"}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(list(SCRIPTS) + ["\u2581"]), min_size=1, max_size=5),
       st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_valid_pieces_kernel_matches_twin(chars, split_ws, suffix, ws_only, by_number, by_script, digits):
    alphabet = sorted(set(SCRIPTS) | {"\u2581"})
    ids = {c: i + 1 for i, c in enumerate(alphabet)}
    names = sorted(set(SCRIPTS.values()))
    symbol_class = np.zeros(len(alphabet) + 1, np.uint8)
    symbol_script = np.full(len(alphabet) + 1, -1, np.int32)
    for c, i in ids.items():
        if c == "\u2581":
            symbol_class[i] = 1
        else:
            symbol_class[i] = 3 if c == "1" else 0
            symbol_script[i] = -2 if SCRIPTS[c] == "INHERITED" else names.index(SCRIPTS[c])
    text = np.array([ids[c] for c in chars], np.int32)
    out = np.zeros(1, np.uint8)
    kt.valid_pieces(text, np.zeros(1, np.int64), np.array([len(chars)], np.int64), symbol_class, symbol_script,
                    split_ws, suffix, ws_only, by_number, by_script, digits, out)
    want = ref_valid_piece(chars, split_ws, suffix, ws_only, by_number, by_script, digits,
                           script_of=lambda c: SCRIPTS[c])
    assert bool(out[0]) == want


def brute_force_seeds(chunks, counts, max_len):
    """Substrings (2..max_len chars) counted with weights, kept when right-branching (two different following
    symbols, chunk end counting as distinct per occurrence) or chunk-final, as the seed step defines them."""
    freq, following = Counter(), {}
    for chunk, count in zip(chunks, counts):
        text = chunk.decode()
        for i in range(len(text)):
            for j in range(i + 2, min(len(text), i + max_len) + 1):
                sub = text[i:j]
                freq[sub] += count
                nxt = text[j] if j < len(text) else ("<end>", chunk, i)
                following.setdefault(sub, set()).add(nxt)
    return {s: f for s, f in freq.items() if f >= 2 and len(following[s]) >= 2
            or (f >= 2 and any(isinstance(x, tuple) for x in following[s]))}


def test_seed_frequencies_match_brute_force():
    rng = random.Random(3)
    words = ["\u2581" + "".join(rng.choice("abc") for _ in range(rng.randint(1, 6))) for _ in range(40)]
    counter = Counter(rng.choice(words) for _ in range(300))
    chunks, counts = ug.chunk_table({w.encode(): c for w, c in counter.items()})
    s = ug.UnigramSettings(vocab_size=100, max_sentencepiece_length=5)
    required, _ = ug.required_characters(chunks, counts, 1.0)
    pieces, scores = ug.seed_pieces(chunks, counts, s, required)
    got = {p.decode() for p in pieces[len(required):]}
    brute = brute_force_seeds(chunks, counts.tolist(), 5)
    valid = {w for w in brute if "\u2581" not in w[1:]}
    assert got <= valid
    # every seed's log-probability is log(freq * len / total)
    total = sum(c for _, c in required) + sum(brute[w] * len(w) for w in got)
    for piece, score in zip(pieces[len(required):], scores[len(required):]):
        w = piece.decode()
        assert math.isclose(score, math.log(brute[w] * len(w) / total), rel_tol=1e-9)
    assert {w for w in valid if counter.get(w, 0) >= 2} <= got  # whole frequent words are always seeds


def test_digamma_matches_known_values():
    assert math.isclose(ug.digamma(1.0), -0.5772156649015329, rel_tol=1e-9)
    assert math.isclose(ug.digamma(10.0), 2.251752589066721, rel_tol=1e-9)


def test_m_step_drops_rare_pieces_and_uses_digamma():
    expected = np.array([3.0, 0.4, 1.6]) * ug.E_STEP_SCALE
    scores = ug.m_step(np.ones(3, bool), expected.astype(np.int64))
    assert scores[1] == -np.inf
    assert math.isclose(scores[0], ug.digamma(3.0) - ug.digamma(4.6), abs_tol=1e-6)


def corpus(seed=0, lines=400):
    rng = random.Random(seed)
    vocab = ["the", "cat", "sat", "on", "mat", "dog", "\u4e2d\u6587", "caf\u00e9", "42", "running", "runner"]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 8))) + rng.choice(["", ".", "!"])
            for _ in range(lines)]


def test_training_is_deterministic_and_shard_independent():
    s = ug.UnigramSettings(vocab_size=60)
    texts = corpus()
    model = ug.train_unigram_local(texts, s)
    assert model == ug.train_unigram_local(list(reversed(texts)), s)
    # sharded E-step (3 shards, summed) gives the same bytes
    splitter = ug.ChunkSplitter(s)
    counts, _ = splitter.split(t.encode() for t in texts)
    chunks, chunk_counts = ug.chunk_table(counts)
    shards = [(chunks[k::3], chunk_counts[k::3]) for k in range(3)]
    runners = [ug.local_runner(c, n) for c, n in shards]

    def e(trie, scores):
        parts = [r.e_step(trie, scores) for r in runners]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def v(trie, scores):
        parts = [r.viterbi(trie, scores) for r in runners]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    sharded = ug.train_from_chunks(chunks, chunk_counts, s, runner=ug.EStepRunner(e, v))
    assert sharded == model
    assert 30 < model.vocab_size <= 60  # a tiny corpus has fewer candidates (SentencePiece would refuse)
    tok = Tokenizer(model)
    assert tok.decode(tok.encode("the cat sat")) == "the cat sat"


def test_em_loop_ends_with_a_pruning_so_every_piece_is_used_and_reachable():
    s = ug.UnigramSettings(vocab_size=60)
    chunks, counts = ug.chunk_table(ug.ChunkSplitter(s).split(t.encode() for t in corpus(lines=2000))[0])
    required, _ = ug.required_characters(chunks, counts, s.character_coverage)
    seeds, seed_scores = ug.seed_pieces(chunks, counts, s, required)
    rounds: list[str] = []
    pieces, scores = ug.run_em(seeds, seed_scores, ug.local_runner(chunks, counts), s, int(counts.sum()),
                               progress=rounds.append)
    assert len(pieces) <= int(1.1 * s.vocab_size) < len(seeds)
    assert rounds[-1].startswith("[prune]")  # no M-step after the last pruning
    trie = ug.PieceTrie(pieces, False)
    order = np.arange(len(pieces), dtype=np.int64)
    data, offsets = ug.pack(pieces)
    status, _, _ = ug.piece_alternatives(trie, scores, order, data, offsets)
    assert not (status == 1).any()  # no piece that a split of it always beats
    freq, _ = ug.local_runner(chunks, counts).viterbi(trie, scores)
    assert (freq[order] > 0).all()  # every piece is used by some chunk's best segmentation


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from([0, 1, 2]),
                          st.lists(st.integers(-1, 9), min_size=1, max_size=6)), min_size=1, max_size=10),
       st.integers(1, 1000))
def test_pruning_losses_kernel_matches_twin(rows, sentence_total):
    freq = np.array([row[0] for row in rows] + [0] * 10, np.float64)[:max(10, len(rows))]
    order = np.arange(len(rows), dtype=np.int64)
    status = np.array([row[1] for row in rows], np.int8)
    alt_offsets = np.cumsum([0] + [len(row[2]) for row in rows]).astype(np.int64)
    alt_ids = np.array([a for row in rows for a in row[2]], np.int64)
    total = float(freq[order].sum()) + 1.0
    losses = np.empty(len(rows), np.float64)
    kt.pruning_losses(order, freq, status, alt_offsets, alt_ids, float(sentence_total), total, math.log(total),
                      losses)
    expected = ref_pruning_losses(order, freq, status, alt_offsets, alt_ids, sentence_total, total,
                                  math.log(total))
    for got, want in zip(losses.tolist(), expected):
        assert (math.isnan(got) and want is None) or got == want


def test_pruning_losses_example():
    losses = np.empty(1)
    kt.pruning_losses(np.array([0]), np.array([2.0, 3.0, 4.0]), np.array([2], np.int8), np.array([0, 2]),
                      np.array([1, 2]), 5.0, 10.0, math.log(10.0), losses)
    expected = 0.4 * (math.log(2) - math.log(10) - (math.log(5) - math.log(12)) - (math.log(6) - math.log(12)))
    assert math.isclose(losses[0], expected, rel_tol=1e-12)


def test_chunk_blocks_cut_by_bytes():
    assert ug.chunk_blocks(np.array([0, 3, 6, 9]), 4).tolist() == [0, 2, 3]
    assert ug.chunk_blocks(np.array([0, 3, 6, 9]), 100).tolist() == [0, 3]
    offsets = np.cumsum([0] + [random.Random(k).randint(1, 9) for k in range(500)])
    blocks = ug.chunk_blocks(offsets, 50)
    assert blocks[0] == 0 and blocks[-1] == 500 and np.all(np.diff(blocks) > 0)


def test_threads_give_identical_results_and_model_bytes():
    s = ug.UnigramSettings(vocab_size=60)
    splitter = ug.ChunkSplitter(s)
    counts, _ = splitter.split(t.encode() for t in corpus())
    chunks, chunk_counts = ug.chunk_table(counts)
    runners = {t: ug.local_runner(chunks, chunk_counts, threads=t, block_bytes=64) for t in (1, 2, 3)}
    pieces = sorted({c[i:i + n] for c in chunks for n in (1, 2, 3) for i in range(len(c) - n + 1)})
    trie = ug.PieceTrie(pieces, False)
    scores = np.log(np.linspace(1.0, 2.0, len(pieces)) / len(pieces))
    e1, objective1 = runners[1].e_step(trie, scores)
    v1, tokens1 = runners[1].viterbi(trie, scores)
    whole, whole_objective = ug.e_step(trie, scores, *ug.pack(chunks), chunk_counts)
    assert np.array_equal(e1, whole) and math.isclose(objective1, whole_objective, rel_tol=1e-12)
    assert e1.sum() > 0 and tokens1 > 0
    for t in (2, 3):
        e, objective = runners[t].e_step(trie, scores)
        v, tokens = runners[t].viterbi(trie, scores)
        assert np.array_equal(e, e1) and objective == objective1  # the same float sum, not just close
        assert np.array_equal(v, v1) and tokens == tokens1
    models = [ug.train_from_chunks(chunks, chunk_counts, s, runner=runners[t]).to_bytes() for t in (1, 2, 3)]
    assert models[0] == models[1] == models[2]
    assert models[0] == ug.train_from_chunks(chunks, chunk_counts, s, threads=2).to_bytes()
    with pytest.raises(ConfigError, match="threads"):
        ug.local_runner(chunks, chunk_counts, threads=0)


def test_meta_pieces_byte_fallback_and_symbols():
    s = ug.UnigramSettings(vocab_size=400, byte_fallback=True, user_defined_symbols=("<mask>",),
                           control_symbols=("<cls>",), pad_id=3)
    model = ug.train_unigram_local(corpus(1) + ["x <mask> y"] * 3, s)
    assert model.vocab_size <= 400
    assert model.pieces[:4] == [b"<unk>", b"<s>", b"</s>", b"<pad>"]
    assert model.types[0] == PieceType.UNKNOWN and model.pad_id == 3
    assert model.pieces[4] == b"<cls>" and model.types[4] == PieceType.CONTROL
    assert model.pieces[5] == b"<mask>" and model.types[5] == PieceType.USER_DEFINED
    assert model.pieces[6] == b"<0x00>" and model.types[6 + 255] == PieceType.BYTE
    tok = Tokenizer(model)
    ids = tok.encode("x <mask> \u00ff")
    assert 5 in ids and tok.decode(ids) == "x <mask> \u00ff"


def test_byte_variant_is_lossless():
    s = ug.UnigramSettings(vocab_size=300, variant="byte")
    texts = corpus(2) + ["  indented\tline \x00\xff"]
    model = ug.train_unigram_local([t.encode("utf-8", "surrogateescape") for t in texts] + [b"\xff\xfe raw"], s)
    tok = Tokenizer(model)
    assert model.vocab_size == 300
    for text in [b"  indented\tline", b"\xff\xfe raw", "the caf\u00e9 \u4e2d".encode()]:
        assert tok.decode_bytes(tok.encode(text)) == text


def test_errors_say_how_to_fix():
    with pytest.raises(ConfigError, match="raise --vocab-size"):
        ug.train_unigram_local(corpus(), ug.UnigramSettings(vocab_size=10))
    with pytest.raises(ConfigError, match="character_coverage"):
        ug.UnigramSettings(character_coverage=0.5).validate()
    with pytest.raises(ConfigError, match=r"vocab size 1 is too small for the special pieces: <s> has id 1; raise "):
        ug.UnigramSettings(vocab_size=1).validate()
    with pytest.raises(ConfigError, match="special id 1 is given to both <s> and </s>: give each its own id"):
        ug.UnigramSettings(eos_id=1).validate()
    with pytest.raises(InputError, match="no text"):
        ug.train_unigram_local(["", ""], ug.UnigramSettings(vocab_size=50))


def test_split_into_words_matches_sentencepiece_rules():
    ws = "\u2581"
    split = lambda t, *a: [w.decode() for w in ug.split_into_words(t.encode(), *a)]  # noqa: E731
    assert split(f"{ws}this{ws}is") == [f"{ws}this", f"{ws}is"]
    assert split(f"{ws}this{ws}{ws}is") == [f"{ws}this", ws, f"{ws}is"]
    assert split(f"{ws}this{ws}{ws}is", False, True) == [f"{ws}this", f"{ws}{ws}is"]
    assert split(f"this{ws}is{ws}", True) == [f"this{ws}", f"is{ws}"]
    assert split("hello") == ["hello"]


@pytest.mark.oracle
def test_close_to_sentencepiece_on_generated_text(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    rng = random.Random(5)
    syllables = ["ka", "to", "ri", "men", "sa", "lo", "qui", "de", "an", "tre", "\u00e9s", "ng"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(300)]
    weights = [1.0 / (k + 1) for k in range(len(words))]
    lines = [" ".join(rng.choices(words, weights, k=rng.randint(3, 12))) for _ in range(3000)]
    train, test = lines[:2500], lines[2500:]
    (tmp_path / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(tmp_path / "train.txt"), model_prefix=str(tmp_path / "sp"),
                                   vocab_size=200, model_type="unigram", normalization_rule_name="identity",
                                   num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    ours = Tokenizer(ug.train_unigram_local(train, ug.UnigramSettings(vocab_size=200)))
    n_bytes = sum(len(t.encode()) for t in test)
    ratio_sp = n_bytes / sum(len(sp.encode(t)) for t in test)
    ratio_ours = n_bytes / sum(len(ours.encode(t)) for t in test)
    assert abs(ratio_ours / ratio_sp - 1) < 0.02
    sp_pieces = {sp.id_to_piece(i) for i in range(sp.get_piece_size())}
    our_pieces = {ours.id_to_piece(i).decode() for i in range(ours.vocab_size)}
    assert len(sp_pieces & our_pieces) / len(sp_pieces) > 0.8


SPLIT_ALPHABET = ["a", "b", " ", "  ", "\u2581", "\u2585", "\u00e9", "\u4e2d", "\t", "<s>", "</s>", "<unk>", "<", "s>",
                  "<u", "xy", "\ufb01"]


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(SPLIT_ALPHABET), max_size=8).map("".join).map(str.encode)
                      | st.binary(max_size=6), max_size=8),
       variant=st.sampled_from(ug.VARIANTS), split_ws=st.booleans(), suffix=st.booleans(), ws_only=st.booleans(),
       dummy=st.booleans(), remove_extra=st.booleans(), max_length=st.sampled_from([0, 6, 4192]),
       symbols=st.sampled_from([(), ("xy",), ("a", "<s")]), shard_cut=st.integers(0, 8))
def test_chunk_count_kernel_path_matches_python_twin(texts, variant, split_ws, suffix, ws_only, dummy, remove_extra,
                                                     max_length, symbols, shard_cut):
    from tokenizer.trainers import bpe
    from tokenizer.trainers.bytepiece import pack_texts

    s = ug.UnigramSettings(vocab_size=400, variant=variant, split_by_whitespace=split_ws,
                           treat_whitespace_as_suffix=suffix, allow_whitespace_only_pieces=ws_only,
                           add_dummy_prefix=dummy, remove_extra_whitespaces=remove_extra,
                           max_sentence_length=max_length, user_defined_symbols=symbols)
    splitter = ug.ChunkSplitter(s)
    want, want_skipped = splitter.split_python(texts)
    got, skipped = splitter.split(texts)
    assert (dict(got), skipped) == (dict(want), want_skipped)
    # offsets that do not start at 0, and two shards merged, give the same table
    data, offsets = pack_texts([b"zz"] + texts)
    first = splitter.count(data, offsets[1:shard_cut + 2 if shard_cut < len(texts) else None])
    second = splitter.count(data, offsets[min(shard_cut, len(texts)) + 1:])
    merged = bpe.merge_chunk_counts(first[:3], second[:3])
    blob = merged[0].tobytes()
    table = {blob[a:b]: c for a, b, c in zip(merged[1][:-1].tolist(), merged[1][1:].tolist(), merged[2].tolist())}
    assert table == dict(want)
    assert first[3] + second[3] == want_skipped


def test_chunk_count_example():
    s = ug.UnigramSettings(vocab_size=100)
    chunk_data, chunk_offsets, counts, skipped = ug.ChunkSplitter(s).count(*ug.pack([b"a b", b"a", "x\u2585".encode()]))
    chunks = [chunk_data[a:b].tobytes().decode() for a, b in zip(chunk_offsets[:-1], chunk_offsets[1:])]
    assert (chunks, counts.tolist(), skipped) == (["\u2581a", "\u2581b"], [2, 1], 1)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(0.5, 1e12, allow_nan=False) | st.integers(1, 10 ** 9).map(float), min_size=1,
                       max_size=20))
def test_digamma_kernel_is_the_python_digamma_exactly(values):
    from tokenizer.twins.unigram_train import ref_digamma

    expected = np.array(values, np.float64)
    keep = expected >= 0.75
    out = np.empty(len(expected))
    kt.bayesian_scores(expected, keep, ref_digamma(123.25), out)
    want = [ref_digamma(v) - ref_digamma(123.25) if k else -math.inf for v, k in zip(values, keep.tolist())]
    assert out.tolist() == want
    assert all(kt.digamma(v) == ref_digamma(v) for v in values)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.text(alphabet="abc\u4e2d", min_size=1, max_size=7), min_size=1, max_size=12),
       data=st.data())
def test_seeds_do_not_depend_on_the_order_of_equal_suffixes_or_the_buckets(words, data):
    """The order among suffixes with equal first ``depth`` symbols is unspecified (an unstable sort), and the
    suffixes are sorted in buckets: seeds from sorts whose ties are in position order and in reverse position
    order, and from buckets of 1, 2 or 5 suffixes (groups split between second symbols), are the same."""
    from tokenizer.trainers.unigram import seeds

    counts = np.array(data.draw(st.lists(st.integers(1, 6), min_size=len(words), max_size=len(words))), np.int64)
    chunks, chunk_counts = ug.chunk_table({("\u2581" + w).encode(): int(c) for w, c in zip(words, counts)})
    s = ug.UnigramSettings(vocab_size=60, max_sentencepiece_length=4, seed_sentencepiece_size=7)
    required, _ = ug.required_characters(chunks, chunk_counts, 1.0)
    original = seeds.sorted_suffixes

    def ordered(direction):
        def sort(text, suffixes, depth):
            padded = [int(x) for x in text] + [0] * depth
            return np.array(sorted(suffixes.tolist(), key=lambda i: (padded[i:i + depth], direction * i)),
                            np.int64)
        return sort

    try:
        results = []
        for direction in (1, -1):
            seeds.sorted_suffixes = ordered(direction)
            results.append(ug.seed_pieces(chunks, chunk_counts, s, required))
    finally:
        seeds.sorted_suffixes = original
    results += [ug.seed_pieces(chunks, chunk_counts, s, required, bucket_suffixes=size) for size in (1, 2, 5)]
    original_pass = seeds.POSITION_PASS_SUFFIXES
    try:
        seeds.POSITION_PASS_SUFFIXES = 4  # the counting sort in passes of a few symbols' suffixes
        results.append(ug.seed_pieces(chunks, chunk_counts, s, required, bucket_suffixes=3))
    finally:
        seeds.POSITION_PASS_SUFFIXES = original_pass
    fast = ug.seed_pieces(chunks, chunk_counts, s, required)
    for pieces, scores in results:
        assert pieces == fast[0] and scores.tolist() == fast[1].tolist()


def test_seed_buckets_hold_every_startable_suffix_once_and_split_large_groups():
    chunks, counts = ug.chunk_table({"\u2581abab".encode(): 3, "\u2581ba".encode(): 2, "\u2581\u4e2da".encode(): 2})
    s = ug.UnigramSettings(vocab_size=60)
    required, _ = ug.required_characters(chunks, counts, 1.0)
    table = ug.symbol_table(chunks, counts, s, [c for c, _ in required])
    buckets = list(ug.seeds.suffix_buckets(table, 2, pass_suffixes=3))
    starts = np.concatenate(buckets)
    startable = np.flatnonzero(table.symbol_class[table.text] != 2)
    assert sorted(starts.tolist()) == startable.tolist()  # every suffix but the separators', once
    prefixes = [{tuple(table.text[p:p + 2].tolist()) for p in b} for b in buckets]
    assert all(len(b) <= 2 or len(p) == 1 for b, p in zip(buckets, prefixes))  # larger: one two-symbol group
    assert any(len(p) == 1 and len(b) == 2 for b, p in zip(buckets, prefixes))  # a group of more than 2 was split
    assert all(not (a & b) for i, a in enumerate(prefixes) for b in prefixes[i + 1:])  # no two-symbol prefix shared
    assert table.piece_bytes(table.chunk_start, table.chunk_end - table.chunk_start) == chunks
    text = np.array([0, 1, 2, 0, 1, 3, 0, 1, 2, 0], np.uint8)  # the docstring's example: whole second-symbol groups
    split = ug.seeds._second_symbol_buckets(text, np.array([1, 4, 7], np.int32), 4, 2)
    assert [b.tolist() for b in split] == [[1, 7], [4]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.integers(0, 6), st.data())
def test_positions_by_symbol_kernel_matches_twin(text, first, data):
    from tokenizer.twins.unigram_train import ref_positions_by_symbol

    text = np.array(text, np.uint16)
    present = np.bincount(text, minlength=7)[first:]
    sizes = [data.draw(st.integers(0, int(n))) for n in present[:data.draw(st.integers(0, len(present)))]]
    group_starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=group_starts[1:])
    out = np.full(int(group_starts[-1]), -1, np.int64)
    kt.positions_by_symbol(text, first, group_starts, out)
    assert out.tolist() == ref_positions_by_symbol(text, first, sizes)


def test_pruning_on_threads_is_the_same():
    s = ug.UnigramSettings(vocab_size=60)
    counts, _ = ug.ChunkSplitter(s).split(t.encode() for t in corpus())
    chunks, chunk_counts = ug.chunk_table(counts)
    required, _ = ug.required_characters(chunks, chunk_counts, s.character_coverage)
    pieces, scores = ug.seed_pieces(chunks, chunk_counts, s, required)
    trie = ug.PieceTrie(pieces, False)
    runner = ug.local_runner(chunks, chunk_counts)
    freq, _ = runner.viterbi(trie, scores)
    order = np.arange(len(pieces), dtype=np.int64)[::-1].copy()
    data, offsets = ug.pack([pieces[k] for k in order])
    one = ug.piece_alternatives(trie, scores, order, data, offsets, threads=1)
    for threads in (2, 3, len(order) + 5):
        many = ug.piece_alternatives(trie, scores, order, data, offsets, threads=threads)
        assert all(np.array_equal(a, b) for a, b in zip(many, one))
        assert (many[0] == 2).any() and many[1][-1] == len(one[2]) - 1  # alternatives exist; the spare slot
        new = ug.prune(trie, scores, order, freq, int(chunk_counts.sum()), 10, 0.75, threads=threads)
        want = ug.prune(trie, scores, order, freq, int(chunk_counts.sum()), 10, 0.75)
        assert np.array_equal(new[0], want[0]) and np.array_equal(new[1], want[1])
