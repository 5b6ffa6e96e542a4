"""SentencePiece export: sentencepiece loads every exported model and gives shardpiece's ids; re-import is
exact; byte-level models are refused with the reason."""

from __future__ import annotations

import random

import pytest

from tokenizer import Tokenizer
from tokenizer.interop.sentencepiece import load_sentencepiece
from tokenizer.interop.sentencepiece_export import ExportError, model_to_sentencepiece
from tokenizer.trainers import unigram as ug

spm = pytest.importorskip("sentencepiece")
pytestmark = pytest.mark.oracle


def lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    words = ["the", "cat", "caf\u00e9", "\u4e2d\u6587", "42", "run", "running", "\u3042\u3044", "x<mask>y", "a"]
    return ["  " * rng.randint(0, 1) + " ".join(rng.choice(words) for _ in range(rng.randint(1, 7)))
            + rng.choice(["", " ", "!", " \u00ff\u0416"]) for _ in range(n)]


@pytest.mark.parametrize("options", [
    {},
    {"byte_fallback": True, "user_defined_symbols": ("<mask>",), "pad_id": 3},
    {"add_dummy_prefix": False, "remove_extra_whitespaces": False, "allow_whitespace_only_pieces": True,
     "byte_fallback": True},
])
def test_sentencepiece_gives_identical_ids(tmp_path, options):
    model = ug.train_unigram_local(lines(1, 400), ug.UnigramSettings(vocab_size=150 + (256 if options.get("byte_fallback") else 0), **options))
    path = tmp_path / "m.model"
    path.write_bytes(model_to_sentencepiece(model))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = Tokenizer(model)
    assert sp.get_piece_size() == model.vocab_size
    for line in lines(2, 200) + ["", " ", "\u2581", "unseen \U0001F600 text"]:
        assert sp.encode(line) == ours.encode(line), line
    again = load_sentencepiece(path.read_bytes())
    assert again.pieces == model.pieces and again.types.tolist() == model.types.tolist()
    assert again.scores.tolist() == model.scores.tolist()


def test_byte_level_models_are_refused_with_the_reason():
    model = ug.train_unigram_local(lines(3, 100), ug.UnigramSettings(vocab_size=300, variant="byte"))
    with pytest.raises(ExportError, match="byte-level model.*UTF-8 text.*--to huggingface"):
        model_to_sentencepiece(model)


def test_export_command(tmp_path, capsys):
    from jobs.export import main

    model = ug.train_unigram_local(lines(4, 200), ug.UnigramSettings(vocab_size=120))
    source = tmp_path / "u.model"
    model.save(source)
    assert main(["export", "--model", str(source), "--to", "sentencepiece", str(tmp_path / "sp.model")]) == 0
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    assert sp.encode("the cat") == Tokenizer(model).encode("the cat")
    byte_model = ug.train_unigram_local(lines(4, 50), ug.UnigramSettings(vocab_size=280, variant="byte"))
    byte_model.save(tmp_path / "b.model")
    assert main(["export", "--model", str(tmp_path / "b.model"), "--to", "sentencepiece",
                 str(tmp_path / "b-sp.model")]) == 2
    assert "byte-level" in capsys.readouterr().err


def test_models_without_an_unknown_piece_are_refused_with_the_fix():
    """SentencePiece-style BPE has byte pieces, not an <unk> piece: the message says so and names the exports and
    the training that work."""
    from tokenizer.trainers.bpe import BpeSettings, train_bpe_local

    model = train_bpe_local(lines(5, 200), BpeSettings(vocab_sizes=(300,), pretokenizer="sentencepiece"))[300]
    with pytest.raises(ExportError, match="needs an <unk> piece, which a bpe model.*--to huggingface.*--algorithm "
                                          "unigram"):
        model_to_sentencepiece(model)
