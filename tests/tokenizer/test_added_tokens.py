"""Added tokens of imported tokenizer.json files: cut out of the text before normalization and segmentation, with
Hugging Face tokenizers' rules (oracle: tokenizers itself), in encode, encode_batch (list, pyarrow) and decode."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import Model, ModelError, PieceType, Tokenizer
from tokenizer.added_tokens import AddedToken, AddedTokenSplitter, is_word_char
from tokenizer.normalizers import NFKC, Identity

TRAIN = ["Hello world, it's 2026!", "  two  spaces\tand tabs\n\nnew lines ", "中文和日本語のテキスト",
         "naïve café x²", "don't STOP'LL we've", "emoji 🙂🙂 and symbols §±", "ab abc abcd <a> a>b",
         "hello hello"] * 6
FRAGMENTS = ["a", "b", "ab", "x", " ", "  ", "\t", "\n", "é", "中", "<", ">", "|", "-", "hello", "world", "2",
             "\u3000", "\x1c", "🙂", "ﬁ", "Ａ"]


def texts_with(tokens: list[str]):
    # no unassigned code points: whether one is a word character (single_word) depends on each library's Unicode
    # version (Python 3.11's is 14.0; tokenizers' Rust regex is newer)
    assigned = st.characters(blacklist_categories=("Cs", "Cn"))
    piece = st.one_of(st.sampled_from(tokens), st.sampled_from(FRAGMENTS), st.text(assigned, max_size=3))
    return st.lists(piece, max_size=12).map("".join)


def model_with_added(tokens: list[AddedToken], extra_pieces: list[bytes]) -> Model:
    """A byte-level unigram model: bytes, ``b"ab"``, then ``extra_pieces`` (the added tokens' ids)."""
    pieces = [bytes([b]) for b in range(256)] + [b"ab"] + extra_pieces
    types = np.full(len(pieces), PieceType.NORMAL, np.int8)
    for t in tokens:
        types[t.id] = PieceType.CONTROL if t.special else PieceType.USER_DEFINED
    scores = np.full(len(pieces), -2.0, np.float32)
    scores[256] = -1.0
    return Model(pieces, scores, types, pretokenizer={"name": "none", "added_tokens": [t.spec() for t in tokens]})


# ---------------------------------------------------------------------------------------------- without oracle
def test_hand_example_of_the_splitter():
    tokens = [AddedToken(5, "<s>", special=True, normalized=False, lstrip=True), AddedToken(6, "ab", normalized=False)]
    assert AddedTokenSplitter(tokens, Identity()).split(b"x <s>abc") == [b"x", 5, 6, b"c"]


def test_rules_lstrip_rstrip_single_word_longest_and_two_phases():
    splitter = AddedTokenSplitter([
        AddedToken(1, "<L>", normalized=False, lstrip=True, rstrip=True),
        AddedToken(2, "word", normalized=False, single_word=True),
        AddedToken(3, "<a>", normalized=False), AddedToken(4, "<a><b>", normalized=False),
        AddedToken(5, "bc", normalized=False), AddedToken(6, "abcd", normalized=True),
    ], Identity())
    assert splitter.split("a \t<L>\u3000 b".encode()) == [b"a", 1, b"b"]        # U+3000 is white space
    assert splitter.split(b"a\x1c<L>") == [b"a\x1c", 1]                 # U+001C is not (Rust's \s)
    assert splitter.split(b"a word, words word_") == [b"a ", 2, b", words word_"]
    assert splitter.split(b"<a><b><a>") == [4, 3]                      # longest at the leftmost position
    assert splitter.split(b"abcd") == [b"a", 5, b"d"]                  # normalized=false tokens are cut first
    assert splitter.split(b"xabcdx") == [b"xa", 5, b"dx"]
    assert splitter.split(b"\xff<a>\xfe") == [b"\xff", 3, b"\xfe"]     # invalid UTF-8 passes through unchanged
    assert is_word_char("é") and is_word_char("_") and is_word_char("\u0301") and not is_word_char("-")


def test_normalized_tokens_match_the_normalized_text_and_decode_to_it():
    splitter = AddedTokenSplitter([AddedToken(7, "ﬁx", normalized=True), AddedToken(8, "Ａ", normalized=False)],
                                  NFKC())
    assert splitter.split("ﬁx fix Ａ①".encode()) == [7, b" ", 7, b" ", 8, b"1"]
    assert splitter.decode_bytes == {7: b"fix", 8: "Ａ".encode()}


def test_encode_decode_and_model_file_keep_added_tokens(tmp_path):
    tokens = [AddedToken(257, "<s>", special=True, normalized=False),
              AddedToken(258, "[X]", normalized=False, rstrip=True)]
    model = model_with_added(tokens, [b"<s>", b"[X]"])
    tok = Tokenizer(model)
    assert tok.encode("ab<s>[X]  ab") == [256, 257, 258, 256]
    assert tok.decode([256, 257, 258, 256]) == "ab<s>[X]ab"
    assert tok.encode("[X") == [91, 88]  # a partial token is plain text
    model.save(tmp_path / "m.model")
    loaded = Tokenizer.load(tmp_path / "m.model")
    assert loaded.model.pretokenizer["added_tokens"] == [t.spec() for t in tokens]
    assert loaded.encode("ab<s>[X]  ab") == [256, 257, 258, 256]


@settings(max_examples=60, deadline=None)
@given(text=texts_with(["<s>", "[X]"]), seed=st.integers(0, 2**32), alpha=st.sampled_from([0.0, 0.5, 2.0]))
def test_sampling_keeps_added_tokens_and_samples_the_stretches(text, seed, alpha):
    """alpha= sampling on a text with added tokens: the tokens' ids stay where the deterministic encoding puts
    them, each stretch between them is a sampled segmentation that decodes to that stretch, and a seed repeats."""
    tokens = [AddedToken(257, "<s>", special=True, normalized=False, lstrip=True),
              AddedToken(258, "[X]", normalized=False, rstrip=True)]
    tok = Tokenizer(model_with_added(tokens, [b"<s>", b"[X]"]))
    sampled = tok.encode(text, alpha=alpha, seed=seed)
    assert sampled == tok.encode(text, alpha=alpha, seed=seed)
    assert tok.decode(sampled) == tok.decode(tok.encode(text))
    best = tok.encode(text)
    assert [i for i in sampled if i in (257, 258)] == [i for i in best if i in (257, 258)]
    stretches = AddedTokenSplitter(tokens, Identity()).split(text.encode("utf-8", "surrogatepass"))
    start = 0
    for part in stretches:  # each stretch decodes on its own: no sampled piece crosses an added token
        if isinstance(part, int):
            assert sampled[start] == part
            start += 1
            continue
        end = start
        while end < len(sampled) and sampled[end] not in (257, 258):
            end += 1
        assert tok.decode_bytes(sampled[start:end]) == part
        start = end
    assert start == len(sampled)


def test_malformed_added_token_lists_are_refused():
    with pytest.raises(ModelError, match="outside the vocabulary"):
        Model([b"a", b"<s>"], np.zeros(2), [1, 3], pretokenizer={"name": "none",
                                                                  "added_tokens": [AddedToken(9, "<s>").spec()]})
    with pytest.raises(ModelError, match="boolean flags"):
        Model([b"a", b"<s>"], np.zeros(2), [1, 3],
              pretokenizer={"name": "none", "added_tokens": [{"id": 1, "special": 1}]})


@settings(max_examples=100, deadline=None)
@given(st.lists(texts_with(["<s>", "[X]", "<s", "X]"]), max_size=8), st.data())
def test_encode_batch_equals_encode_per_text(texts, data):
    import pyarrow as pa

    tokens = [AddedToken(257, "<s>", special=True, normalized=False, lstrip=True),
              AddedToken(258, "[X]", normalized=True, single_word=True)]
    tok = Tokenizer(model_with_added(tokens, [b"<s>", b"[X]"]))
    expected = [tok.encode(t, add_eos=False) for t in texts]
    assert tok.encode_batch(texts, num_threads=data.draw(st.sampled_from([1, 2]))) == expected
    nulls = data.draw(st.lists(st.booleans(), min_size=len(texts), max_size=len(texts)))
    array = pa.array([None if null else t for t, null in zip(texts, nulls)], type=pa.large_string())
    assert tok.encode_batch(array).to_pylist() == [None if null else e for e, null in zip(expected, nulls)]
    # the scan finds every text the splitter cuts
    blob = [t.encode() for t in texts]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blob])]).astype(np.int64)
    candidates = set(tok.added_token_splitter.candidate_documents(np.frombuffer(b"".join(blob) or b"\0", np.uint8),
                                                                  offsets).tolist())
    cut = {i for i, b in enumerate(blob) if any(isinstance(p, int) for p in tok.added_token_splitter.split(b))}
    assert cut <= candidates


def test_models_without_added_tokens_are_unchanged():
    model = Model.byte_level([b"ab"], [-1.0], specials=("<s>",))
    assert "added_tokens" not in model.pretokenizer and Tokenizer(model).added_token_splitter is None
    assert Tokenizer(model).encode("ab<s>") == [256, 60, 115, 62]  # CONTROL pieces are never matched in text


# ---------------------------------------------------------------------------------------------- tokenizers oracle
tokenizers = pytest.importorskip("tokenizers")

ORACLE_TOKENS = ["<|endoftext|>", "<|fim|>", "[X]", "<a>", "<a><b>", "b>", "hello", "\n", " sp", "café"]


def added(content, **flags):
    return tokenizers.AddedToken(content, **flags)


def oracle_tokens():
    return [added("<|fim|>", special=True, normalized=False, lstrip=True),
            added("[X]", normalized=False, rstrip=True),
            added("<a>", normalized=False), added("<a><b>", normalized=True), added("b>", normalized=False),
            added("hello", normalized=True, single_word=True),  # also a learned piece: keeps its vocab id
            added("\n", normalized=False), added(" sp", normalized=True), added("café", normalized=False)]


def hf_bpe(tmp_path, normalizer=None):
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    if normalizer is not None:
        tk.normalizer = normalizer
    tk.train_from_iterator(TRAIN, trainers.BpeTrainer(vocab_size=420, special_tokens=["<|endoftext|>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tk.add_special_tokens([added("<|fim|>", special=True, normalized=False, lstrip=True)])
    tk.add_tokens(oracle_tokens()[1:])
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    return tokenizers.Tokenizer.from_file(str(path)), path


def hf_unigram(tmp_path):
    from tokenizer.interop.huggingface import save_tokenizer_json
    from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

    model = train_bytepiece_local(TRAIN, TrainSettings(vocab_sizes=(300,), min_count=2, order=4))[300]
    save_tokenizer_json(model, tmp_path / "base.json")
    tk = tokenizers.Tokenizer.from_file(str(tmp_path / "base.json"))
    tk.add_special_tokens([added("<|endoftext|>", special=True, normalized=False)])
    tk.add_tokens(oracle_tokens())
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    return tokenizers.Tokenizer.from_file(str(path)), path


def check_against(tk, ours, texts):
    import pyarrow as pa

    expected = [e.ids for e in tk.encode_batch(texts, add_special_tokens=False)]
    assert [ours.encode(t) for t in texts] == expected
    assert ours.encode_batch(texts) == expected
    assert ours.encode_batch(pa.array(texts)).to_pylist() == expected
    mojibake = tk.token_to_id("café")  # tokenizers' ByteLevel decoder garbles non-ASCII added tokens; ours not
    for ids in expected:
        if mojibake not in ids:
            assert ours.decode(ids) == tk.decode(ids, skip_special_tokens=False)


@pytest.fixture(scope="module")
def bpe_pair(tmp_path_factory):
    tk, path = hf_bpe(tmp_path_factory.mktemp("bpe"))
    return tk, Tokenizer.load(path)


@pytest.mark.oracle
def test_imported_bpe_matches_added_tokens_as_tokenizers_does(bpe_pair):
    tk, ours = bpe_pair
    eot = tk.token_to_id("<|endoftext|>")
    assert ours.encode("a<|endoftext|>b") == [tk.token_to_id("a"), eot, tk.token_to_id("b")]
    assert ours.decode(ours.encode("a<|endoftext|>b")) == "a<|endoftext|>b"
    assert ours.encode("hello") == [tk.token_to_id("hello")] and ours.model.types[tk.token_to_id("hello")] == 1
    check_against(tk, ours, ["x  <|fim|>y", "[X]   z", "<a><b>b>", "say hello, hellos", "café sp sp\n\n", ""])


@pytest.mark.oracle
@settings(max_examples=150, deadline=None)
@given(st.lists(texts_with(ORACLE_TOKENS), min_size=1, max_size=6))
def test_imported_bpe_equals_tokenizers_on_generated_text(bpe_pair, texts):
    check_against(*bpe_pair, texts)


@pytest.mark.oracle
@settings(max_examples=60, deadline=None)
@given(st.lists(texts_with(ORACLE_TOKENS + ["ﬁ", "Ａ"]), min_size=1, max_size=6))
def test_imported_bpe_with_nfkc_normalizes_between_tokens(tmp_path_factory, texts):
    from tokenizers import normalizers

    cache = test_imported_bpe_with_nfkc_normalizes_between_tokens.__dict__
    if "pair" not in cache:
        tk, path = hf_bpe(tmp_path_factory.mktemp("nfkc"), normalizers.NFKC())
        cache["pair"] = (tk, Tokenizer.load(path))
    check_against(*cache["pair"], texts)


@pytest.mark.oracle
@settings(max_examples=100, deadline=None)
@given(st.lists(texts_with(ORACLE_TOKENS), min_size=1, max_size=6))
def test_imported_unigram_equals_tokenizers_on_generated_text(tmp_path_factory, texts):
    cache = test_imported_unigram_equals_tokenizers_on_generated_text.__dict__
    if "pair" not in cache:
        tk, path = hf_unigram(tmp_path_factory.mktemp("unigram"))
        cache["pair"] = (tk, Tokenizer.load(path))
    check_against(*cache["pair"], texts)


@pytest.mark.oracle
def test_round_trip_decode_without_stripping_tokens(bpe_pair):
    tk, ours = bpe_pair
    text = "a<|endoftext|>b<a><b>hello\n café<a>\xff"
    assert ours.decode(ours.encode(text)) == text
    assert ours.decode_bytes(ours.encode(b"<a>\xff\xfe")) == b"<a>\xff\xfe"


@pytest.mark.oracle
def test_export_writes_the_added_tokens_back(bpe_pair, tmp_path):
    from tokenizer.interop.huggingface import save_tokenizer_json

    tk, ours = bpe_pair
    save_tokenizer_json(ours.model, tmp_path / "again.json")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    written = {t["id"]: t for t in json.loads((tmp_path / "again.json").read_text())["added_tokens"]}
    original = {i: t for i, t in tk.get_added_tokens_decoder().items()}
    assert {i: (t["content"], t["special"], t["normalized"], t["lstrip"], t["rstrip"], t["single_word"])
            for i, t in written.items()} == {
        i: (t.content, t.special, t.normalized, t.lstrip, t.rstrip, t.single_word) for i, t in original.items()}
    texts = ["x  <|fim|>y [X]  <a><b>b> hello", "a<|endoftext|>b café sp", "plain text\n"]
    assert [e.ids for e in again.encode_batch(texts)] == [e.ids for e in tk.encode_batch(texts)]
