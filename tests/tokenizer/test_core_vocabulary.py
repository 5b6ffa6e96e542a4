"""get_vocab, len, id_to_bytes, piece_to_id, decode_batch, the error classes, and the lazy parts built once."""

from __future__ import annotations

import threading

import pytest

import tokenizer
from tests.tokenizer.sample_models import sample_texts
from tokenizer import InvalidIdError, Model, Tokenizer
from tokenizer.core import LAZY_PARTS
from tokenizer.piece_types import PieceType


def test_hand_example():
    tok = Tokenizer(Model.byte_level([b"ab"], [-1.0], specials=("<s>",)))
    assert len(tok) == tok.vocab_size == 258
    assert tok.get_vocab()[b"ab"] == 256 and tok.get_vocab()[b"a"] == 97 and b"<s>" not in tok.get_vocab()
    assert tok.id_to_bytes(256) == b"ab" and tok.id_to_bytes(0xE4) == b"\xe4" and tok.id_to_bytes(257) == b""
    assert tok.piece_to_id(b"ab") == 256 and tok.piece_to_id("zz") is None and tok.piece_to_id("<s>") == 257
    assert tok.decode_batch([[256], [98, 257]]) == ["ab", "b"]
    with pytest.raises(InvalidIdError, match="out of range"):
        tok.id_to_bytes(258)
    with pytest.raises(TypeError, match="list of id lists"):
        tok.decode_batch("ab")


@pytest.mark.parametrize("piece", [b"a", b""])
def test_byte_level_refuses_a_piece_shorter_than_two_bytes(piece):
    # ids 0..255 are already the single bytes: a second id for b"a" would make the model fail to load later.
    with pytest.raises(tokenizer.ModelError, match=r"piece 1 .*shorter than two bytes"):
        Model.byte_level([b"ab", piece], [-1.0, -2.0])


def test_id_to_bytes_joins_to_decode_bytes(tokenizers):
    for name, tok in tokenizers.items():
        for text in sample_texts(20):
            ids = tok.encode(text)
            joined = b"".join(tok.id_to_bytes(i) for i in ids)
            if tok.normalizer.is_identity:
                assert joined == tok.decode_bytes(ids) == text.encode(), name
            elif tok.model.pretokenizer.get("add_dummy_prefix"):  # decoding drops the dummy-prefix space
                assert joined.removeprefix(b" ") == tok.decode_bytes(ids), name
            else:
                assert joined == tok.decode_bytes(ids), name


def test_get_vocab_is_tiktokens_single_token_bytes(tokenizers):
    tiktoken = pytest.importorskip("tiktoken")
    from tests.tokenizer.test_core_special_tokens import tiktoken_twin

    tok = tokenizers["bpe byte_level"]
    encoding, to_ours = tiktoken_twin(tok)
    vocab = tok.get_vocab()
    for rank, ours in to_ours.items():
        if ours in tok.special_ids:
            continue
        assert tok.id_to_bytes(ours) == encoding.decode_single_token_bytes(rank)
        assert vocab[encoding.decode_single_token_bytes(rank)] == ours
    assert isinstance(encoding, tiktoken.Encoding)
    assert len(vocab) == len(tok) - len(tok.special_tokens)


def test_get_vocab_prefers_a_piece_to_a_byte_piece(tokenizers):
    for name, tok in tokenizers.items():
        vocab = tok.get_vocab()
        for data, i in vocab.items():
            assert tok.id_to_bytes(i) == data
            if tok.model.types[i] == PieceType.BYTE:
                assert all(tok.model.types[j] == PieceType.BYTE or tok.id_to_bytes(j) != data
                           for j in range(len(tok))), name


def test_decode_batch_is_decode_of_each(tokenizers):
    for tok in tokenizers.values():
        batch = tok.encode_batch(sample_texts(5))
        assert tok.decode_batch(batch) == [tok.decode(ids) for ids in batch]


def test_every_error_class_is_importable_from_the_package():
    from tokenizer import errors

    classes = [value for value in vars(errors).values()
               if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__]
    assert classes and all(getattr(tokenizer, cls.__name__) is cls for cls in classes)
    assert all(cls.__name__ in tokenizer.__all__ for cls in classes)


@pytest.mark.parametrize("first_call", ["encode", "decode", "get_vocab", "encode_with_offsets", "special"])
def test_lazy_parts_are_built_once_by_racing_threads(tokenizers, monkeypatch, first_call):
    """Threads released together by a barrier make their first call on one new Tokenizer; every lazy part is
    built exactly once and every thread gets the same result."""
    model = tokenizers["unigram"].model
    builds = {name: 0 for name in ("_build_compiled", "_build_normalizer", "_build_splitter",
                                   "_build_decode_table", "_build_piece_bytes", "_build_special_ids")}
    counter_lock = threading.Lock()
    for name in builds:
        original = getattr(Tokenizer, name)

        def counted(self, _original=original, _name=name):
            with counter_lock:
                builds[_name] += 1
            return _original(self)

        monkeypatch.setattr(Tokenizer, name, counted)
    tok = Tokenizer(model)
    calls = {
        "encode": lambda: tok.encode("Error handling"),
        "decode": lambda: tok.decode([5, 6, 7]),
        "get_vocab": lambda: len(tok.get_vocab()),
        "encode_with_offsets": lambda: tok.encode_with_offsets("Error handling"),
        "special": lambda: tok.encode("a<s>b", allowed_special="all"),
    }
    threads_count = 8
    barrier = threading.Barrier(threads_count)
    results, errors = [None] * threads_count, []

    def run(k):
        try:
            barrier.wait()
            results[k] = calls[first_call]()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(result == results[0] for result in results)
    assert all(count <= 1 for count in builds.values()), builds
    built = {name for name in LAZY_PARTS if getattr(tok, name) is not tokenizer.core.UNBUILT}
    assert built and sum(builds.values()) >= 1
