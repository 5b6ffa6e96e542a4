"""Superword BPE (tokenizer.trainers.superword): the docstring's example, the settings' checks, the second stage
going on from the first stage's merges replayed on the coarse chunks, pieces that cross spaces within the word cap,
every line round-tripping, nested vocabularies, and plain BPE models unchanged by the new settings."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tokenizer import Tokenizer
from tokenizer.errors import ConfigError
from tokenizer.trainers import bpe, superword as sw
from tokenizer.trainers.superword_settings import transition_size


def sample_lines(n: int = 600, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    phrases = ["of the", "in the middle of", "by the way", "as well as", "data", "token", "東京 の", "42", "!!",
               "x = 1;", "café", "\t", "  "]
    return [" ".join(rng.choice(phrases) for _ in range(rng.randint(1, 8))).encode() for _ in range(n)]


def test_docstring_example():
    settings = bpe.BpeSettings(vocab_sizes=(259,), special_tokens=(), min_count=1, superword_transition=257)
    model = sw.train_local([b"a b a b"], settings)[259]
    assert model.pieces[256:] == [b" b", b"a b", b" a b"]
    assert model.pretokenizer == {"name": "byte_level", "pattern": "superword"}
    assert transition_size(bpe.BpeSettings(vocab_sizes=(1000,), superword_transition=0.8)) == 800
    assert sw.space_counts([b" of the", b"a"]).tolist() == [2, 0]


@pytest.mark.parametrize("changes, message", [
    ({"superword_transition": 1.5}, "share of the vocabulary below 1"),
    ({"superword_transition": 0.0}, "share of the vocabulary below 1"),
    ({"superword_transition": 1000}, "below the largest vocab size 1000"),
    ({"superword_transition": 200}, "from 259"),
    ({"superword_transition": 0.8, "pretokenizer": "sentencepiece"}, "needs pretokenizer byte_level"),
    ({"superword_transition": 0.8, "superword_pattern": "gpt2"}, "coarser split"),
    ({"superword_transition": 0.8, "superword_max_words": 0}, "superword_max_words=0"),
])
def test_settings_checks_say_what_to_change(changes, message):
    with pytest.raises(ConfigError, match=message):
        bpe.BpeSettings(vocab_sizes=(1000,), **changes).validate()


def test_plain_bpe_settings_and_models_do_not_mention_superwords():
    settings = bpe.BpeSettings(vocab_sizes=(300,))
    assert not any(key.startswith("superword") for key in settings.to_dict())
    assert settings.model_pretokenizer == {"name": "byte_level", "pattern": "gpt2"}


def test_second_stage_goes_on_from_the_first_and_crosses_spaces_within_the_cap():
    lines = sample_lines()
    settings = bpe.BpeSettings(vocab_sizes=(420, 600), superword_transition=300, superword_max_words=3)
    models = sw.train_local(lines, settings)
    plain = sw.train_local(lines, bpe.BpeSettings(vocab_sizes=(300,)))[300]
    big = models[600]
    first = 300 - 3
    assert big.pieces[:first] == plain.pieces[:first]  # stage 1 is plain BPE up to the transition
    assert models[420].pieces[:420 - 3] == big.pieces[:420 - 3]  # nested
    second = big.pieces[first:-3]
    crossing = [p for p in second if b" " in p.strip(b" ")]
    assert b" of the" in second and crossing, second[:20]
    assert max(p.count(b" ") for p in second) <= 3
    assert not any(b"\n" in p and len(p.strip(b"\n")) for p in second)  # no piece crosses a line


def test_every_line_round_trips_and_superwords_take_fewer_tokens():
    lines = sample_lines()
    train, test = lines[:500], lines[500:] + [b"", b"a  b \n\n c", "\u00e9\u6771 \x85".encode(), b"\xff\xfe x"]
    plain = Tokenizer(sw.train_local(train, bpe.BpeSettings(vocab_sizes=(600,)))[600])
    superword = Tokenizer(sw.train_local(train, bpe.BpeSettings(vocab_sizes=(600,),
                                                                      superword_transition=0.7))[600])
    encoded = superword.encode_batch(test)
    assert [superword.decode_bytes(ids) for ids in encoded] == test
    assert sum(map(len, encoded)) < sum(map(len, plain.encode_batch(test)))


def test_encoding_the_chunks_with_stage_one_replays_merges_by_rank():
    stage_one = bpe.Merges(np.array([97, 256]), np.array([98, 99]), np.array([5, 3]))  # ab, abc
    chunks = bpe.PackedBytes(*bpe.pack([b"abcab", b"c"]))
    settings = bpe.BpeSettings(vocab_sizes=(300,), special_tokens=(), superword_transition=258)
    symbols, offsets = sw.encode_chunks(stage_one, chunks, settings)
    assert symbols.tolist() == [257, 256, 99] and offsets.tolist() == [0, 2, 3]


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
def test_export_gives_tokenizers_ids_and_loads_back(tmp_path, pattern):
    """The tokenizer.json of a superword model (its coarse Split, one merges list) in Hugging Face tokenizers: the
    same ids on every line; the importer reads it back (``superbpe``: the published SuperBPE tokenizers' split)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizer.interop.huggingface import save_tokenizer_json

    lines = sample_lines()
    settings = bpe.BpeSettings(vocab_sizes=(600,), superword_transition=0.6, superword_pattern=pattern)
    model = sw.train_local(lines[:500], settings)[600]
    path = tmp_path / "tokenizer.json"
    save_tokenizer_json(model, path)
    texts = [line.decode() for line in lines[500:]] + ["a  b \n\n c", "by the way\nof the 12345!!"]
    ours = Tokenizer(model).encode_batch(texts)
    theirs = [e.ids for e in tokenizers.Tokenizer.from_file(str(path)).encode_batch(texts, add_special_tokens=False)]
    assert ours == theirs
    back = Tokenizer.load(str(path))
    assert back.model.pretokenizer["pattern"] == pattern and back.encode_batch(texts) == ours
