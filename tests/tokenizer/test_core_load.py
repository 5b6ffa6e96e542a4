"""Tokenizer.load of every file the exporters write, of a Hugging Face folder, and of the model file itself: the
same ids and text as the model that was exported."""

from __future__ import annotations

import os

import pytest

from jobs.export import EXPORTERS
from tests.tokenizer.sample_models import sample_texts
from tokenizer import ModelFileError, ShardpieceError, Tokenizer
from tokenizer.interop.tiktoken_files import PATTERNS

TEXTS = sample_texts(30) + ["  héllo   wörld  ", "☃ x <s>", ""]


def assert_same_tokenizer(loaded: Tokenizer, tok: Tokenizer, where: str, specials: bool = True):
    """The same ids and text on :data:`TEXTS`; with ``specials``, the same special tokens (a .tiktoken file has
    none: it holds the ranks only)."""
    if specials:
        assert len(loaded) == len(tok) and loaded.special_tokens == tok.special_tokens, where
        assert (loaded.bos_id, loaded.eos_id, loaded.unk_id) == (tok.bos_id, tok.eos_id, tok.unk_id), where
    for text in TEXTS:
        ids = tok.encode(text)
        assert loaded.encode(text) == ids, (where, text)
        assert loaded.decode(ids) == tok.decode(ids), (where, text)


@pytest.mark.parametrize("target", sorted(EXPORTERS))
def test_load_reads_what_each_exporter_writes(tokenizers, tmp_path, target):
    exported = 0
    for name, tok in tokenizers.items():
        out = tmp_path / name.replace(" ", "-")
        out.mkdir()
        try:
            written = EXPORTERS[target](tok.model, str(out / "model.tiktoken") if target == "tiktoken"
                                        else str(out) + os.sep)
        except ShardpieceError:
            continue  # this kind has no exact form in that format (the exporter says so)
        exported += 1
        files = [os.path.join(out, f) for f in os.listdir(out) if f in ("tokenizer.json", "sentencepiece.model")]
        if target == "tiktoken":  # the pattern is not in the file: the path names it, as export says
            pattern = {ours: name for name, ours in PATTERNS.items()}[tok.model.pretokenizer["pattern"]]
            assert f"{out / 'model.tiktoken'}:{pattern}" in written
            files = [f"{out / 'model.tiktoken'}:{pattern}"]
            with pytest.raises(ModelFileError, match="holds no pre-tokenizer pattern"):
                Tokenizer.load(out / "model.tiktoken")
        assert files, written
        for path in [*files, str(out)] if target == "huggingface" else files:
            assert_same_tokenizer(Tokenizer.load(path), tok, f"{name} {path}", specials=target != "tiktoken")
    assert exported >= 1


def test_sentencepiece_style_tokenizer_json_loads_as_that_model(tokenizers, tmp_path):
    """The normalizer Sequence that export writes for SentencePiece-style models was refused before."""
    tok = tokenizers["unigram"]
    EXPORTERS["huggingface"](tok.model, str(tmp_path))
    loaded = Tokenizer.load(tmp_path / "tokenizer.json")
    assert loaded.model.pretokenizer["name"] == "sentencepiece"
    assert loaded.model.pretokenizer["add_dummy_prefix"] == tok.model.pretokenizer["add_dummy_prefix"]
    assert loaded.encode_with_offsets("Error  handling") == tok.encode_with_offsets("Error  handling")


def test_a_folder_without_tokenizer_json_says_what_it_holds(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelFileError, match="a folder without a tokenizer.json.*notes.txt"):
        Tokenizer.load(tmp_path)


def test_model_file_round_trip(tokenizers, tmp_path):
    for name, tok in tokenizers.items():
        path = tmp_path / f"{name.replace(' ', '-')}.model"
        tok.save(path)
        assert_same_tokenizer(Tokenizer.load(path), tok, name)
