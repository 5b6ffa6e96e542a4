"""``.tiktoken`` files as byte-level BPE models: a byte-level BPE model trained on the sample, written as a
``.tiktoken`` file and read back, gives tiktoken's own ids (tiktoken.Encoding over the same ranks and pattern) and
its source model's segmentation; a superword BPE model exports with its coarse split as tiktoken's ``pat_str`` and
gives tiktoken's ids too; a piece merge replay never makes is left out (or the model refused); bad files and
unsupported patterns fail with the fix."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.tokenizer.sample_models import sample_lines, sample_texts
from tests.tokenizer.test_kernels_pretokenize import kernel_split
from tests.tokenizer.test_kernels_superword_split import ALPHABET
from tokenizer import Tokenizer
from tokenizer.errors import ConfigError, ModelFileError
from tokenizer.interop.tiktoken_files import (TIKTOKEN_PATTERN_TEXT, load_tiktoken, merge_split,
                                              model_from_tiktoken_ranks, read_tiktoken_ranks, tiktoken_file_text,
                                              tiktoken_ranked_ids)
from tokenizer.model import Model, PieceType

SINGLE_BYTES = {bytes([b]): b for b in range(256)}


def test_merge_split_replays_the_lower_ranks():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"abc": 4, b"bc": 5, b"ca": 6}
    assert merge_split(ranks, b"abc") == 2  # ab (3) then ab + c
    assert merge_split(ranks, b"ab") == 1
    assert merge_split({**ranks, b"cab": 7}, b"cab") == 1  # ab (3) before ca (6): c + ab
    assert merge_split({**ranks, b"acb": 7}, b"acb") is None  # neither ac nor cb is a token: an UNUSED piece


def test_a_hand_written_file(tmp_path):
    path = tmp_path / "tiny.tiktoken"
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)] + [b"YWI= 256", b"", b"YWJj 257"]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert read_tiktoken_ranks(path)[b"ab"] == 256
    tokenizer = Tokenizer(load_tiktoken(path, "gpt2"))
    assert tokenizer.vocab_size == 258 and tokenizer.id_to_piece(256) == b"ab"
    assert tokenizer.encode("abc ab") == [257, 32, 256]  # pre-tokens "abc" (a token) and " ab" (" " + "ab")
    assert tokenizer.decode_bytes(tokenizer.encode("abc ab")) == b"abc ab"


@pytest.mark.parametrize("pattern, ours", [("gpt2", "gpt2"), ("cl100k", "llama3"), ("o200k", "o200k")])
def test_tiktoken_gives_the_same_ids(pattern, ours, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from tokenizer.trainers import bpe

    model = bpe.train_bpe_local(sample_lines(200), bpe.BpeSettings(vocab_sizes=(800,), pattern=ours))[800]
    path = tmp_path / "m.tiktoken"
    path.write_bytes(tiktoken_file_text(model))
    loaded = Tokenizer(load_tiktoken(path, pattern))
    encoding = tiktoken.Encoding(name="m", pat_str=TIKTOKEN_PATTERN_TEXT[pattern], special_tokens={},
                                 mergeable_ranks=read_tiktoken_ranks(path))
    source = Tokenizer(model)
    texts = sample_texts(300)
    assert [loaded.encode(t) for t in texts] == [encoding.encode_ordinary(t) for t in texts]
    assert [[source.id_to_piece(i) for i in source.encode(t)] for t in texts] == \
           [[loaded.id_to_piece(i) for i in loaded.encode(t)] for t in texts]


def test_bad_files_and_patterns_say_the_fix(tmp_path):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"YQ== 0\nnot a line\n")
    with pytest.raises(ModelFileError, match="line 2 .* is not 'BASE64TOKEN RANK'"):
        read_tiktoken_ranks(path)
    with pytest.raises(ModelFileError, match="cannot read the file"):
        read_tiktoken_ranks(tmp_path / "missing.tiktoken")
    with pytest.raises(ModelFileError, match="repeated or leaves a gap"):
        model_from_tiktoken_ranks({**SINGLE_BYTES, b"ab": 300}, "gpt2")
    with pytest.raises(ModelFileError, match="single bytes"):
        model_from_tiktoken_ranks({b"a": 0}, "gpt2")
    with pytest.raises(ConfigError, match="unknown tiktoken pattern 'p50k': use one of gpt2, cl100k, o200k, "
                                          "superword, superbpe"):
        model_from_tiktoken_ranks(SINGLE_BYTES, "p50k")


def test_only_byte_level_bpe_models_are_written(tokenizers):
    with pytest.raises(ConfigError, match="--to huggingface or --to sentencepiece"):
        tiktoken_file_text(tokenizers["unigram"].model)


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(ALPHABET), max_size=40))
def test_tiktoken_splits_with_the_coarse_pat_str_as_shardpiece_does(pattern, text):
    """Every chunk of shardpiece's split is a token here, so tiktoken emits each of its pre-tokens whole: its
    tokens are its pre-split, which is shardpiece's."""
    tiktoken = pytest.importorskip("tiktoken")
    chunks = kernel_split(text.encode(), pattern)
    ranks = {**SINGLE_BYTES, **{c: 256 + i for i, c in enumerate(dict.fromkeys(c for c in chunks if len(c) > 1))}}
    encoding = tiktoken.Encoding(name="split", pat_str=TIKTOKEN_PATTERN_TEXT[pattern], special_tokens={},
                                 mergeable_ranks=ranks)
    assert [encoding.decode_single_token_bytes(i) for i in encoding.encode_ordinary(text)] == chunks


@pytest.mark.parametrize("pattern", ["superword", "superbpe"])
def test_a_superword_model_exports_with_its_pat_str_and_gives_tiktoken_ids(pattern, tmp_path, capsys):
    """A superword BPE model trained on the sample, through ``shardpiece export --to tiktoken``: the printed
    pattern and the ``.pat_str`` file beside the ranks give tiktoken the model's pieces on every line (and on
    multi-line texts), tiktoken decodes them back, and ``FILE.tiktoken:PATTERN`` reads the file back with tiktoken's
    ids."""
    tiktoken = pytest.importorskip("tiktoken")
    from jobs.export import main as export
    from tokenizer.trainers import bpe, superword

    lines = sample_lines(300)
    settings_ = bpe.BpeSettings(vocab_sizes=(2000,), superword_transition=0.75, superword_pattern=pattern)
    model = superword.train_local(lines, settings_)[2000]
    model.save(tmp_path / "sw.model")
    out = str(tmp_path / "sw.tiktoken")
    assert export(["--model", str(tmp_path / "sw.model"), "--to", "tiktoken", out]) == 0
    printed = capsys.readouterr().out
    pat_str = (tmp_path / "sw.tiktoken.pat_str").read_text()
    assert pat_str == TIKTOKEN_PATTERN_TEXT[pattern] and pat_str in printed and f"{out}:{pattern}" in printed
    assert "left out" not in printed  # a trained model's pieces are all made by replaying its merges
    ranks = read_tiktoken_ranks(out)
    assert len(ranks) == model.vocab_size - len(settings_.special_tokens)
    encoding = tiktoken.Encoding(name="sw", pat_str=pat_str, special_tokens={}, mergeable_ranks=ranks)
    texts = sample_texts(1000)
    texts += ["\n".join(texts[i:i + 7]) for i in range(0, 200, 7)]
    texts += ["a  b \n\n c", "by the way\nof the 12345!!", "x.5 y..\r\n\tz\u3000 end ", "  ", "\n"]
    source = Tokenizer(model)
    by_rank = {rank: piece for piece, rank in ranks.items()}
    theirs = encoding.encode_ordinary_batch(texts)
    assert [[by_rank[i] for i in ids] for ids in theirs] == \
           [[source.id_to_piece(i) for i in ids] for ids in source.encode_batch(texts)]
    assert sum(len(p) > 1 and b" " in p.strip(b" ") for p in ranks) > 50  # superwords, and tiktoken uses them
    assert [encoding.decode(ids) for ids in theirs] == texts
    loaded = Tokenizer.load(f"{out}:{pattern}")
    assert loaded.model.pretokenizer["pattern"] == pattern and loaded.encode_batch(texts) == theirs


def _replay_only_model(ignore_merges: bool) -> Model:
    """Merges ``b``+``c``, ``a``+``b``, ``ab``+``c``: replay makes ``a`` ``bc`` of ``abc``, never ``abc``."""
    pieces = [bytes([b]) for b in range(256)] + [b"bc", b"ab", b"abc"]
    pretokenizer = {"name": "byte_level", "pattern": "gpt2", **({"ignore_merges": True} if ignore_merges else {})}
    return Model(pieces, -np.arange(259, dtype=np.float32), np.full(259, PieceType.NORMAL, np.int8),
                 algorithm="bpe", pretokenizer=pretokenizer,
                 provenance={"bpe_merges": {"left_lengths": [1, 1, 2]}})


def test_a_piece_replay_never_makes_is_left_out(tmp_path):
    """With ``abc`` in the file tiktoken would join ``a`` and ``bc``: left out, tiktoken gives the model's pieces;
    a model that emits whole pre-tokens (ignore_merges) would give ``abc`` for the pre-token ``abc``: refused."""
    tiktoken = pytest.importorskip("tiktoken")
    model = _replay_only_model(ignore_merges=False)
    assert [model.pieces[i] for i in Tokenizer(model).encode("abc abcab")] == [b"a", b"bc", b" ", b"a", b"bc", b"ab"]
    written, left_out = tiktoken_ranked_ids(model)
    assert left_out == [258] and written == list(range(258))
    whole = {**SINGLE_BYTES, b"bc": 256, b"ab": 257, b"abc": 258}
    assert tiktoken.Encoding(name="all", pat_str=TIKTOKEN_PATTERN_TEXT["gpt2"], special_tokens={},
                             mergeable_ranks=whole).encode_ordinary("abc") == [258]  # what the file must not hold
    path = tmp_path / "m.tiktoken"
    path.write_bytes(tiktoken_file_text(model))
    encoding = tiktoken.Encoding(name="m", pat_str=TIKTOKEN_PATTERN_TEXT["gpt2"], special_tokens={},
                                 mergeable_ranks=read_tiktoken_ranks(path))
    texts = ["abc abcab", "cabcbc", "aabbcc abc"]
    assert [encoding.encode_ordinary(t) for t in texts] == Tokenizer(model).encode_batch(texts)
    with pytest.raises(ConfigError, match=r"1 pieces \(the first: 258, b'abc'\) .*\(ignore_merges\).*huggingface"):
        tiktoken_file_text(_replay_only_model(ignore_merges=True))
