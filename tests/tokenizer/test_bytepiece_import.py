"""BytePiece import: ids equal bytepiece's Tokenizer (Viterbi, alpha=-1) on held-out text, ties included."""

from __future__ import annotations

import json
import random

import pytest

from tokenizer import ModelFileError, Tokenizer
from tokenizer.interop.bytepiece import load_bytepiece

WORDS = ("the of and tokenizer model byte piece corpus spark shard encode decode Hello World don't 2024 3.14 "
         "数据 模型 中文 分词 我们 今天 天气 很好 日本語 これは ペン です カタカナ ひらがな Привет мир café "
         "ελληνικά 😀 👍🏽 e\u0301").split()


def make_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        lines = []
        for _ in range(rng.randint(1, 3)):
            lines.append(rng.choice([" ", "", "  "]).join(rng.choice(WORDS) for _ in range(rng.randint(1, 10))))
        texts.append(rng.choice(["\n", "\n\n", "\r\n"]).join(lines) + rng.choice(["", "\n"]))
    return texts


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    bytepiece = pytest.importorskip("bytepiece")
    corpus = make_texts(2500, seed=1)  # about 200 KB
    trainer = bytepiece.Trainer(order=6, max_vocab_size=1500, min_count=8)
    trainer.train(corpus, workers=1)
    path = tmp_path_factory.mktemp("bytepiece") / "model.json"
    trainer.save(str(path))
    return path


@pytest.mark.oracle
@pytest.mark.slow
def test_identical_ids_to_bytepiece(model_path):
    bytepiece = pytest.importorskip("bytepiece")
    theirs = bytepiece.Tokenizer(str(model_path))
    ours = Tokenizer.load(model_path)
    assert ours.vocab_size == theirs.vocab_size
    held_out = make_texts(1500, seed=2) + ["", "\n", "\n\nx\n", "龘 unseen ñ text\n\n\nmore"]
    mismatches = [t for t in held_out if theirs.encode(t) != ours.encode(t)]
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]!r}"
    assert ours.encode_batch(held_out, num_threads=2) == [theirs.encode(t) for t in held_out]
    assert ours.encode("abc", add_bos=True, add_eos=True) == theirs.encode("abc", add_bos=True, add_eos=True)
    for i in (0, 3, 100, ours.vocab_size - 1):
        assert ours.id_to_piece(i) == (theirs.id_to_piece(i) if i > 2 else theirs.id_to_piece(i).encode())
    for text in held_out[:200]:
        import unicodedata

        assert ours.decode(ours.encode(text)) == unicodedata.normalize("NFC", text)


def test_round_trip_through_shardpiece_file(model_path, tmp_path):
    ours = Tokenizer.load(model_path)
    ours.save(tmp_path / "m.shardpiece")
    again = Tokenizer.load(tmp_path / "m.shardpiece")
    texts = make_texts(100, seed=3)
    assert again.encode_batch(texts) == ours.encode_batch(texts)
    assert again.compiled.score_dtype == ours.compiled.score_dtype


def test_bad_files_give_clear_errors(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"YQ==": [3, "a", 5], "Yg==": [5, "b", 2]}))
    with pytest.raises(ModelFileError, match="without gaps"):
        load_bytepiece(path)
    path.write_text(json.dumps({"not base64!": [3, "a", 5]}))
    with pytest.raises(ModelFileError, match="base64 piece"):
        Tokenizer.load(path)
    path.write_text("{ truncated")
    with pytest.raises(ModelFileError, match="JSON"):
        Tokenizer.load(path)
