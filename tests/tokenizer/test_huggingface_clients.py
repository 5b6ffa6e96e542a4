"""The exported Hugging Face tokenizer folder in the real client libraries: tokenizers and transformers give the
native ids on every line (text that spells a control token included), add bos/eos as ``tokenize --add-bos
--add-eos`` does, pad, and decode losslessly; ``Tokenizer.load`` reads the export back to the same ids and specials.

Models are trained here on the shipped sample corpus (``data/sample``): BytePiece, byte-level unigram, byte-level
BPE (the GPT-2 and the o200k pattern), superword BPE, and SentencePiece-style unigram and BPE (whose unigram model
also goes to sentencepiece, with the same ids)."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from tokenizer import Tokenizer
from tokenizer.interop.huggingface import save_huggingface
from tokenizer.model import PieceType

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.oracle

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "sample")
SPECIAL_TEXT = ["Hello <s> world </s> and <pad>", "<unk><s></s><pad>", "x<s>y", " </s> ", "<s", "s>", "<<s>>"]


def _lines(name: str) -> list[str]:
    with gzip.open(os.path.join(SAMPLE, f"{name}.txt.gz"), "rt", encoding="utf-8") as handle:
        return handle.read().split("\n")


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    """(training lines, test lines): 1,500 and 300 lines of each of en, zh and ja, plus the special-token text."""
    train, test = [], []
    for name in ("en", "zh", "ja"):
        lines = [line for line in _lines(name) if line]
        train += lines[:1500]
        test += lines[-300:]
    return train, test + SPECIAL_TEXT


def _train(kind: str, train: list[str]):
    if kind == "bytepiece":
        from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

        return train_bytepiece_local(train, TrainSettings(vocab_sizes=(1500,), min_count=2, order=4))[1500]
    if kind == "byte-unigram":
        from tokenizer.trainers.unigram import UnigramSettings, train_unigram_local

        return train_unigram_local(train, UnigramSettings(vocab_size=1500, variant="byte", pad_id=3))
    if kind == "sentencepiece-unigram":
        from tokenizer.trainers.unigram import UnigramSettings, train_unigram_local

        return train_unigram_local(train, UnigramSettings(vocab_size=4000, byte_fallback=True, pad_id=3,
                                                          character_coverage=0.995))
    from tokenizer.trainers import bpe

    if kind == "sentencepiece-bpe":
        return bpe.train_bpe_local(train, bpe.BpeSettings(vocab_sizes=(4000,), pretokenizer="sentencepiece"))[4000]
    if kind == "superword-bpe":  # merges across spaces after 900 pieces: the coarse Split in the export
        from tokenizer.trainers.superword import train_local

        return train_local(train, bpe.BpeSettings(vocab_sizes=(1500,), min_count=2, superword_transition=900))[1500]
    pattern = "o200k" if kind == "byte-level-bpe-o200k" else "gpt2"  # o200k: a Split with tiktoken's regex
    return bpe.train_bpe_local(train, bpe.BpeSettings(vocab_sizes=(1500,), pattern=pattern, min_count=2))[1500]


BYTE_LEVEL = ("bytepiece", "byte-unigram", "byte-level-bpe", "byte-level-bpe-o200k", "superword-bpe")


@pytest.fixture(scope="module", params=BYTE_LEVEL + ("sentencepiece-unigram", "sentencepiece-bpe"))
def exported(request, corpus, tmp_path_factory):
    """(native Tokenizer, export folder) for each model kind: the byte-level ones and the SentencePiece-style ones."""
    model = _train(request.param, corpus[0])
    folder = tmp_path_factory.mktemp(request.param)
    written = save_huggingface(model, folder)
    assert sorted(os.path.basename(p) for p in written) == [
        "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    return Tokenizer(model), str(folder)


def test_tokenizers_gives_the_native_ids_on_every_line(exported, corpus):
    native, folder = exported
    hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    ours = native.encode_batch(corpus[1])
    theirs = [e.ids for e in hf.encode_batch(corpus[1], add_special_tokens=False)]
    differing = [line for line, a, b in zip(corpus[1], ours, theirs) if a != b]
    assert not differing, differing[:5]
    controls = {native.model.bos_id, native.model.eos_id, native.model.pad_id}
    assert not any(i in controls for ids in theirs for i in ids)   # control text is ordinary text
    with_specials = [e.ids for e in hf.encode_batch(corpus[1][:20])]
    assert with_specials == [[native.bos_id] + ids + [native.eos_id] for ids in ours[:20]]
    assert [hf.decode(ids) for ids in ours] == [native.decode(ids) for ids in ours]
    if native.model.pretokenizer.get("name") != "sentencepiece":  # the byte-level models are lossless
        assert [hf.decode(ids) for ids in ours[-len(SPECIAL_TEXT):]] == SPECIAL_TEXT


def test_auto_tokenizer_loads_the_folder_with_specials_padding_and_lossless_decode(exported, corpus):
    native, folder = exported
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = native.model
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (model.bos_id, model.eos_id, model.pad_id)
    lines = corpus[1]
    ours = native.encode_batch(lines)
    assert tok(lines, add_special_tokens=False)["input_ids"] == ours
    assert tok(lines)["input_ids"] == native.encode_batch(lines, add_bos=True, add_eos=True)
    batch = tok(["a", "a longer line of text"], padding=True)
    assert len({len(ids) for ids in batch["input_ids"]}) == 1 and batch["input_ids"][0][-1] == model.pad_id
    assert batch["attention_mask"][0].count(1) == len(ours_a := native.encode("a", add_bos=True, add_eos=True))
    assert batch["input_ids"][0][:len(ours_a)] == ours_a
    assert [tok.decode(ids) for ids in ours] == [native.decode(ids) for ids in ours]   # no clean-up of spaces
    assert tok.decode(tok(lines[0])["input_ids"], skip_special_tokens=True) == native.decode(ours[0])


def test_the_export_loads_back_with_the_same_ids_and_specials(exported, corpus):
    native, folder = exported
    back = Tokenizer.load(os.path.join(folder, "tokenizer.json"))
    assert back.encode_batch(corpus[1]) == native.encode_batch(corpus[1])
    model = native.model
    assert (back.bos_id, back.eos_id, back.pad_id) == (model.bos_id, model.eos_id, model.pad_id)
    controls = [i for i in range(model.vocab_size) if model.types[i] == PieceType.CONTROL]
    assert [i for i in range(back.vocab_size) if back.model.types[i] == PieceType.CONTROL] == controls


def test_the_config_files_name_the_specials(exported):
    native, folder = exported
    config = json.load(open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8"))
    assert config["clean_up_tokenization_spaces"] is False and config["split_special_tokens"] is True
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    specials = json.load(open(os.path.join(folder, "special_tokens_map.json"), encoding="utf-8"))
    model = native.model
    assert specials == {f"{name}_token": model.pieces[getattr(model, f"{name}_id")].decode()
                        for name in ("bos", "eos", "unk", "pad") if getattr(model, f"{name}_id") >= 0}
    assert {config[key] for key in specials} == set(specials.values())


def test_control_tokens_in_text_is_one_opt_in_for_the_native_encoder_and_the_export(exported, tmp_path):
    from tokenizer.added_tokens import with_control_tokens_in_text

    native, _ = exported
    model = native.model
    opted = with_control_tokens_in_text(model)
    save_huggingface(opted, tmp_path)
    ours = Tokenizer(opted).encode_batch(SPECIAL_TEXT)
    assert ours[1][-3:] == [model.bos_id, model.eos_id, model.pad_id]   # "<unk><s></s><pad>": <unk> is no token
    assert any(model.bos_id in ids for ids in ours) and not any(model.bos_id in ids
                                                               for ids in native.encode_batch(SPECIAL_TEXT))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert [e.ids for e in hf.encode_batch(SPECIAL_TEXT, add_special_tokens=False)] == ours
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert auto(SPECIAL_TEXT, add_special_tokens=False)["input_ids"] == ours
    if model.pretokenizer.get("name") != "sentencepiece":
        assert Tokenizer.load(tmp_path / "tokenizer.json").encode_batch(SPECIAL_TEXT) == ours


def test_the_sentencepiece_style_unigram_model_gives_the_same_ids_in_sentencepiece(corpus, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    from tokenizer.interop.sentencepiece_export import save_sentencepiece

    native = Tokenizer(_train("sentencepiece-unigram", corpus[0]))   # the one kind that also exports there
    save_sentencepiece(native.model, tmp_path / "m.model")
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    lines = corpus[1] + ["-" * 80, "=" * 33, "." * 7, "www.www.www"]   # exact ties: the same order everywhere
    assert processor.encode(lines) == native.encode_batch(lines)


def test_decode_skip_special_tokens_and_len_mean_what_transformers_means(exported, corpus):
    """(Without skip_special_tokens transformers spells control tokens, which decode leaves out natively: the
    documented difference; with it the two agree.)"""
    native, folder = exported
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    assert len(native) == len(tok) == native.vocab_size
    for line in corpus[1][:200] + SPECIAL_TEXT:
        ids = native.encode(line, add_bos=True, add_eos=True)
        with_specials = native.encode(line + "<s>x</s>", allowed_special="all")
        for sequence in (ids, with_specials):
            assert native.decode(sequence, skip_special_tokens=True) == tok.decode(sequence, skip_special_tokens=True)
