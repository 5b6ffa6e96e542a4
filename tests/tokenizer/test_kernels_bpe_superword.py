"""Superword models encoded from their words' ids (tokenizer.kernels.bpe_superword): the same ids as replaying every
coarse chunk whole (the path that defines them) and as the twin (the coarse split's twin plus merge replay's), on
random texts that reach every branch (words, coarse matches, contractions, non-ASCII, invalid bytes, a stretch
longer than the work arrays, a merge of the word table that crosses a pre-token), and the load-time helpers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tokenizer import Tokenizer
from tokenizer.compiled import WORK_START, CompiledModel
from tokenizer.kernels.bpe_superword import meeting_bytes, superword_tables, word_level_merges
from tokenizer.model import Model, PieceType
from tokenizer.trainers import bpe, superword as sw
from tokenizer.twins.bpe_superword import ref_superword_bpe

from tests.tokenizer.test_trainer_superword import sample_lines

ALPHABET = ["the", "of", "cat", "a", "b", " ", " ", " ", "  ", ",", ".", "!!", "'s", "'", "don't", "12345", "7",
            "\n", "\t", "\u00a0", "caf\u00e9", "\u6771\u4eac", "\u2014", "()", "/", "\r\n", "x = 1;"]


def models(monkeypatch, model: Model) -> tuple[Tokenizer, Tokenizer]:
    """``(words first, chunks whole)``: the same model encoded both ways (built now: the switch is read at build)."""
    fused = Tokenizer(model)
    fused.compiled
    monkeypatch.setattr(CompiledModel, "superword", False)
    whole = Tokenizer(model)
    whole.compiled
    monkeypatch.setattr(CompiledModel, "superword", True)
    return fused, whole


def twin_ids(model: Model, text: bytes) -> list[int]:
    """The twin's ids (the coarse split's twin, then merge replay's on each chunk) for a model's merges."""
    merges, byte_to_id = {}, [model.pieces.index(bytes([b])) for b in range(256)]
    lengths = model.provenance["bpe_merges"]["left_lengths"]
    merged = sorted((i for i, piece in enumerate(model.pieces)
                     if len(piece) > 1 and model.types[i] == PieceType.NORMAL), key=lambda i: (-model.scores[i], i))
    for rank, (piece_id, split) in enumerate(zip(merged, lengths)):
        piece = model.pieces[piece_id]
        pair = (model.pieces.index(piece[:split]), model.pieces.index(piece[split:]))
        merges.setdefault(pair, (piece_id, rank))
    return ref_superword_bpe(merges, byte_to_id, text)


def random_texts(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = "".join(rng.choice(ALPHABET) + rng.choice(["", " ", " "]) for _ in range(rng.randint(0, 30))).encode()
        if rng.random() < 0.2:
            text += bytes([rng.choice([0xFF, 0xC3, 0xE2, 0x80])]) + b"b"
        texts.append(text)
    return texts


@pytest.fixture(scope="module")
def trained() -> Model:
    settings = bpe.BpeSettings(vocab_sizes=(600,), superword_transition=0.6)
    return sw.train_local(sample_lines()[:500] + [t.encode() for t in ALPHABET], settings)[600]


def test_a_trained_model_gives_the_same_ids_both_ways_and_as_the_twin(monkeypatch, trained):
    assert superword_tables(Tokenizer(trained).compiled.byte_level, trained.pieces, Tokenizer(trained).compiled.units)
    fused, whole = models(monkeypatch, trained)
    texts = random_texts(3, 300) + sample_lines()[500:]
    assert fused.encode_batch(texts) == whole.encode_batch(texts)
    assert [fused.encode(t) for t in texts[:120]] == [twin_ids(trained, t) for t in texts[:120]]


def test_a_stretch_longer_than_the_work_arrays_goes_on_where_it_ends(monkeypatch, trained):
    """One stretch of words and single spaces past WORK_START bytes: the entry stops at it and goes on with larger
    arrays; then a number and more words (a coarse match after the long stretch)."""
    fused, whole = models(monkeypatch, trained)
    long = b" ".join([b"the cat", b"of a cat", b"caf\xc3\xa9"] * (WORK_START // 12)) + b" 12345 of the cat!!\n a"
    assert len(long) > WORK_START
    texts = [b"a b", long, b"of the"]
    assert fused.encode_batch(texts) == whole.encode_batch(texts)


def by_hand(merges: list[tuple[bytes, int]]) -> Model:
    """A superword model from merges ``(piece, left part's length)`` in rank order, after the 256 bytes."""
    pieces = [bytes([b]) for b in range(256)] + [piece for piece, _ in merges]
    return Model(pieces, -np.arange(len(pieces), dtype=np.float32), np.full(len(pieces), PieceType.NORMAL, np.int8),
                 algorithm="bpe", pretokenizer={"name": "byte_level", "pattern": "superword"},
                 provenance={"bpe_merges": {"left_lengths": [split for _, split in merges]}})


def test_a_word_merge_across_a_pre_token_taints_the_stretch(monkeypatch):
    """``a`` + the first byte of an em dash is a merge below T (a piece of part of a character says nothing of
    words), so the cut between ``a`` and ``—`` in the stretch ``a—b`` is not free: the stretch is encoded as one
    chunk, and the ids still equal replay's."""
    dash = "\u2014".encode()
    model = by_hand([(b"a" + dash[:1], 1), (b" c", 1), (b"a" + dash[:2], 2), (b"a c", 1)])
    assert word_level_merges(model.pieces[256:]) == 3
    fused, whole = models(monkeypatch, model)
    texts = [b"a" + dash + b"b", b"x a" + dash + b" c", b"a c a c", b"a" + dash[:2] + b"a c"]
    assert fused.encode_batch(texts) == whole.encode_batch(texts) == [twin_ids(model, t) for t in texts]
    assert fused.encode(b"a c") == [256 + 3]


def test_load_time_helpers():
    assert word_level_merges([b"th", b"\xe4\xbb", b" the", b" of the"]) == 3
    assert word_level_merges([]) == 0
    meeting = meeting_bytes([b"ab", b"cd"], np.array([0]), np.array([1]))
    at = ord("b") << 8 | ord("c")
    assert meeting[at >> 6] == 1 << (at & 63) and np.count_nonzero(meeting) == 1


def test_models_without_a_word_stage_replay_chunks_whole():
    """Plain byte-level BPE (another pattern) and a superword model whose first merge crosses words get no
    tables: their chunks are replayed whole."""
    plain = by_hand([(b"ab", 1)])
    plain.pretokenizer = {"name": "byte_level", "pattern": "gpt2"}
    crossing = by_hand([(b"a ", 1), (b"a b", 2)])
    for model in (plain, crossing):
        compiled = Tokenizer(model).compiled
        assert superword_tables(compiled.byte_level, model.pieces, compiled.units) is None
