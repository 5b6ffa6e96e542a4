"""Identical ids to sentencepiece: tiny unigram and BPE models trained here, rebuilt as a Model from the processor
API (no .model reader involved), fed the text with spaces escaped to U+2581 as sentencepiece's normalizer does."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from tokenizer import Model, PieceType, Tokenizer

spm = pytest.importorskip("sentencepiece")
pytestmark = [pytest.mark.oracle, pytest.mark.slow]

WORDS = ("the of and tokenizer model byte piece corpus spark shard encode decode Hello World don't 2024 3.14 "
         "数据 模型 中文 分词 我们 今天 天气 很好 日本語 これは ペン です カタカナ ひらがな Привет мир ünïcödé "
         "naïve café ελληνικά 😀 👍🏽 🎉").split()
RARE = "龘齉靐ꙮ𓀀𝔘ñ€߷"
USER_DEFINED = "<sep>"


def make_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.2:
            parts.insert(rng.randrange(len(parts) + 1), USER_DEFINED)
        if rng.random() < 0.15:
            parts.append(rng.choice(RARE) * rng.randint(1, 3))
        sep = rng.choice([" ", " ", " ", "  ", ""])
        lines.append(sep.join(parts))
    return lines


def train(model_type: str, byte_fallback: bool) -> "spm.SentencePieceProcessor":
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(make_lines(3000, seed=1)), model_writer=writer, model_type=model_type,
        vocab_size=700, hard_vocab_limit=False, normalization_rule_name="identity", add_dummy_prefix=False,
        remove_extra_whitespaces=False, byte_fallback=byte_fallback, user_defined_symbols=[USER_DEFINED],
        character_coverage=0.995, num_threads=1, minloglevel=2, allow_whitespace_only_pieces=True,
    )
    return spm.SentencePieceProcessor(model_proto=writer.getvalue())


def model_from_processor(sp, algorithm: str, byte_fallback: bool) -> Model:
    n = sp.get_piece_size()
    pieces, scores, types = [], [], []
    for i in range(n):
        piece = sp.id_to_piece(i)
        pieces.append(piece.encode("utf-8"))
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(PieceType.UNKNOWN)
        elif sp.is_control(i):
            types.append(PieceType.CONTROL)
        elif sp.is_unused(i):
            types.append(PieceType.UNUSED)
        elif sp.is_byte(i):
            types.append(PieceType.BYTE)
        elif piece == USER_DEFINED:
            types.append(PieceType.USER_DEFINED)
        else:
            types.append(PieceType.NORMAL)
    return Model(pieces, np.array(scores, np.float32), np.array(types, np.int8), algorithm=algorithm,
                 unk_id=sp.unk_id(), bos_id=sp.bos_id(), eos_id=sp.eos_id(), pad_id=sp.pad_id(),
                 byte_fallback=byte_fallback)


@pytest.mark.parametrize("byte_fallback", [False, True])
@pytest.mark.parametrize("model_type,algorithm", [("unigram", "unigram"), ("bpe", "bpe")])
def test_identical_ids_to_sentencepiece(model_type, algorithm, byte_fallback):
    sp = train(model_type, byte_fallback)
    tok = Tokenizer(model_from_processor(sp, algorithm, byte_fallback))
    held_out = make_lines(800, seed=2) + ["", " ", "   leading and trailing   ", RARE * 3, "<sep><sep>x",
                                          "mixed 龘 unknown 𓀀𓀀 runs ñ", "\t tab \t", "▁already▁escaped"]
    expected = sp.encode(held_out)
    escaped = [line.replace(" ", "\u2581") for line in held_out]
    got = tok.encode_batch(escaped, num_threads=1)
    mismatches = [(line, e, g) for line, e, g in zip(held_out, expected, got) if e != g]
    assert not mismatches, f"{len(mismatches)} of {len(held_out)} lines differ, first: {mismatches[0]}"
    assert [tok.encode(t) for t in escaped[:50]] == expected[:50]
    assert tok.encode_batch(escaped, num_threads=2) == expected
    assert any(tok.unk_id in ids or (byte_fallback and any(sp.is_byte(i) for i in ids)) for ids in expected)
