"""tokenizer.json export and import: identical ids to Hugging Face tokenizers (oracle), format details, errors."""

from __future__ import annotations

import json

import pytest

from tokenizer import Tokenizer
from tokenizer.errors import ModelFileError
from tokenizer.interop.huggingface import save_tokenizer_json
from tokenizer.interop.huggingface_common import bytes_to_unicode, encode_piece
from tokenizer.trainers import bpe

tokenizers = pytest.importorskip("tokenizers")
pytestmark = pytest.mark.oracle

TEXTS = ["Hello world, it's 2026!", "  two  spaces\tand tabs\n\nnew lines ", "中文和日本語のテキスト", "naïve café x²",
         "don't STOP'LL we've", "emoji 🙂🙂 and symbols §±", "a" * 50, "", " ", "\n"]
TRAIN = TEXTS * 5 + ["more text about the world and its words"] * 5


def hf_ids(path, texts):
    tk = tokenizers.Tokenizer.from_file(str(path))
    return [e.ids for e in tk.encode_batch(texts, add_special_tokens=False)]


def test_byte_map_is_gpt2s():
    table = bytes_to_unicode()
    assert len(set(table)) == 256 and table[32] == "Ġ" and table[10] == "Ċ" and table[ord("a")] == "a"
    assert encode_piece(b" a") == "Ġa"


@pytest.mark.parametrize("pattern", ["gpt2", "llama3", "o200k"])
def test_exported_bpe_gives_identical_ids(tmp_path, pattern):
    model = bpe.train_bpe_local(TRAIN, bpe.BpeSettings(vocab_sizes=(400,), pattern=pattern, min_count=1))[400]
    path = tmp_path / "tokenizer.json"
    save_tokenizer_json(model, path)
    ours = Tokenizer(model).encode_batch(TEXTS)
    assert hf_ids(path, TEXTS) == ours
    assert Tokenizer.load(path).encode_batch(TEXTS) == ours  # and back
    tk = tokenizers.Tokenizer.from_file(str(path))
    assert [tk.decode(ids) for ids in ours] == TEXTS


def test_exported_bytepiece_unigram_gives_identical_ids(tmp_path):
    from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

    model = train_bytepiece_local(TRAIN, TrainSettings(vocab_sizes=(300,), min_count=2, order=4))[300]
    path = tmp_path / "tokenizer.json"
    save_tokenizer_json(model, path)
    obj = json.loads(path.read_text())
    assert obj["model"]["type"] == "Unigram" and obj["pre_tokenizer"]["use_regex"] is False
    assert hf_ids(path, TEXTS) == Tokenizer(model).encode_batch(TEXTS)


def hf_trained(tmp_path, pre_tokenizer, **kwargs):
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tk = tokenizers.Tokenizer(models.BPE(**kwargs))
    tk.pre_tokenizer = pre_tokenizer
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(TRAIN, trainers.BpeTrainer(vocab_size=420, special_tokens=["<s>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    return path


def test_imported_hf_bpe_gives_identical_ids(tmp_path):
    from tokenizers import pre_tokenizers

    path = hf_trained(tmp_path, pre_tokenizers.ByteLevel(add_prefix_space=False))
    assert Tokenizer.load(path).encode_batch(TEXTS) == hf_ids(path, TEXTS)


def test_imported_llama3_style_with_ignore_merges(tmp_path):
    from tokenizers import Regex, pre_tokenizers
    from tokenizer.pretokenize_patterns import PATTERN_TEXT

    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(PATTERN_TEXT["llama3"]), "isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    path = hf_trained(tmp_path, pre, ignore_merges=True)
    assert Tokenizer.load(path).encode_batch(TEXTS) == hf_ids(path, TEXTS)


def test_imported_o200k_split_as_gpt_4o_spells_it(tmp_path):
    """Split with tiktoken's o200k regex, behavior Removed and invert true (matches kept), then ByteLevel."""
    from tokenizers import Regex, pre_tokenizers
    from tokenizer.pretokenize_patterns import PATTERN_TEXT

    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(PATTERN_TEXT["o200k"]), "removed", invert=True),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    path = hf_trained(tmp_path, pre, ignore_merges=True)
    texts = TEXTS + ["HelloWORLD'LL ABCdef x/\n/y", "ʰA \u0301ABC it'ſ naïveTÉST"]
    loaded = Tokenizer.load(path)
    assert loaded.model.pretokenizer["pattern"] == "o200k"
    assert loaded.encode_batch(texts) == hf_ids(path, texts)


def test_merge_replay_differs_from_concatenation_rule(tmp_path):
    # merges: (b, c) rank 0, (a, b) rank 1, (ab, c) rank 2: "abc" stays a|bc, as a merges list means
    vocab = {bytes_to_unicode()[b]: b for b in range(256)}
    vocab.update({"bc": 256, "ab": 257, "abc": 258})
    obj = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                             "use_regex": True},
           "post_processor": None, "decoder": None,
           "model": {"type": "BPE", "vocab": vocab, "merges": ["b c", "a b", "ab c"]}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(obj))
    assert Tokenizer.load(path).encode("abc") == [97, 256] == hf_ids(path, ["abc"])[0]


def test_imported_unigram_keeps_float64_scores(tmp_path):
    """Scores closer than float32 can tell apart: tokenizers sums them in f64 ("a" + "b" beats "ab" by 1e-12), and so
    does the imported model; float32 copies would tie, and the tie keeps "ab"."""
    table = bytes_to_unicode()
    vocab = [[table[b], -30.0] for b in range(256)]
    vocab[ord("a")][1] = vocab[ord("b")][1] = -1.0
    vocab.append(["ab", -2.0 - 1e-12])
    vocab.append(["cd", -2.0 + 1e-12])
    vocab[ord("c")][1] = vocab[ord("d")][1] = -1.0
    obj = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                             "use_regex": False},
           "post_processor": None, "decoder": None,
           "model": {"type": "Unigram", "unk_id": None, "vocab": vocab, "byte_fallback": False}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(obj))
    texts = ["ab", "cd", "abcdab", "xaby"]
    ours = Tokenizer.load(path)
    assert [ours.encode(t) for t in texts] == hf_ids(path, texts)
    assert ours.encode("ab") == [97, 98] and ours.encode("cd") == [257]
    ours.save(tmp_path / "m.shardpiece")  # the exact scores travel in the model file
    assert [Tokenizer.load(tmp_path / "m.shardpiece").encode(t) for t in texts] == hf_ids(path, texts)


def test_unsupported_tokenizer_json_is_refused(tmp_path):
    obj = {"normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "WordPiece"}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(ModelFileError, match="not supported"):
        Tokenizer.load(path)
