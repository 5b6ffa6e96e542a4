"""SentencePiece .model import: loader fields and errors, normalizer and decoder against sentencepiece itself."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentencepiece_oracle import make_corpus, processor, train_model
from tokenizer.errors import ModelFileError
from tokenizer.interop import protobuf as pb
from tokenizer.interop.sentencepiece import load_sentencepiece, looks_like_sentencepiece
from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer
from tokenizer.model import Model, PieceType
from tokenizer.normalizers import for_model

pytestmark = pytest.mark.oracle

CONFIGS = {
    "unigram-nmt_nfkc": dict(model_type="unigram"),
    "bpe-nmt_nfkc": dict(model_type="bpe"),
    "unigram-identity-bytes": dict(model_type="unigram", normalization_rule_name="identity", byte_fallback=True),
    "bpe-identity-bytes": dict(model_type="bpe", normalization_rule_name="identity", byte_fallback=True),
    "unigram-symbols-bytes": dict(model_type="unigram", byte_fallback=True,
                                  user_defined_symbols=["<sep>", "ｶﾀ", "①②", "ab", "\u2581x"],
                                  control_symbols=["<cls>", "<mask>"]),
    "bpe-symbols": dict(model_type="bpe", user_defined_symbols=["<sep>", "ｶﾀ", "Ⅻ"], control_symbols=["<cls>"]),
    "unigram-nfkc_cf-suffix": dict(model_type="unigram", normalization_rule_name="nmt_nfkc_cf",
                                   treat_whitespace_as_suffix=True),
    "bpe-keep-spaces": dict(model_type="bpe", byte_fallback=True, remove_extra_whitespaces=False,
                            add_dummy_prefix=False, allow_whitespace_only_pieces=True),
}


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(1500, seed=11)


@pytest.fixture(scope="module")
def held_out():
    return make_corpus(300, seed=12)


@pytest.fixture(scope="module")
def trained(corpus):
    return {name: train_model(corpus, **options) for name, options in CONFIGS.items()}


def _types_from_processor(sp) -> list[int]:
    out = []
    for i in range(sp.get_piece_size()):
        if sp.is_unknown(i):
            out.append(PieceType.UNKNOWN)
        elif sp.is_control(i):
            out.append(PieceType.CONTROL)
        elif sp.is_unused(i):
            out.append(PieceType.UNUSED)
        elif sp.is_byte(i):
            out.append(PieceType.BYTE)
        else:
            out.append(-1)  # NORMAL or USER_DEFINED: the processor does not tell them apart
    return out


def _edit(data: bytes, path: tuple[int, ...], number: int, wire_type: int, value) -> bytes:
    """Set field ``number`` of the sub-message at ``path`` (field numbers from the root) and re-serialize."""
    root = pb.Message.parse(data)
    if not path:
        root.set(number, wire_type, value)
        return root.serialize()
    child = root.message(path[0]) or pb.Message()
    child.set(number, wire_type, value)
    root.set(path[0], pb.LENGTH_DELIMITED, child.serialize())
    return root.serialize()


# ============================================================================ loader
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_loaded_model_matches_processor(trained, name):
    data = trained[name]
    sp = processor(data)
    model = load_sentencepiece(data)
    assert model.vocab_size == sp.get_piece_size()
    assert model.pieces == [sp.id_to_piece(i).encode() for i in range(sp.get_piece_size())]
    assert np.array_equal(model.scores, np.array([sp.get_score(i) for i in range(sp.get_piece_size())], np.float32))
    for kind, ours in zip(_types_from_processor(sp), model.types):
        if kind == -1:
            assert ours in (PieceType.NORMAL, PieceType.USER_DEFINED)
        else:
            assert ours == kind
    assert (model.unk_id, model.bos_id, model.eos_id, model.pad_id) == (sp.unk_id(), sp.bos_id(), sp.eos_id(),
                                                                         sp.pad_id())
    assert model.algorithm == CONFIGS[name]["model_type"]
    assert model.byte_fallback == CONFIGS[name].get("byte_fallback", False)
    assert model.provenance["source_format"] == "sentencepiece"
    assert model.pretokenizer["name"] == "sentencepiece"
    symbols = CONFIGS[name].get("user_defined_symbols", [])
    assert sorted(model.pieces[i] for i in np.flatnonzero(model.types == PieceType.USER_DEFINED)) == sorted(
        s.encode() for s in symbols)
    # the model survives shardpiece's own file format
    assert Model.from_bytes(model.to_bytes()) == model


def test_model_file_round_trips_through_protobuf_writer(trained):
    for data in trained.values():
        assert pb.Message.parse(data).serialize() == data
        assert looks_like_sentencepiece(data)


def test_path_and_bytes_give_the_same_model(tmp_path, trained):
    path = tmp_path / "m.model"
    path.write_bytes(trained["bpe-nmt_nfkc"])
    assert load_sentencepiece(path) == load_sentencepiece(trained["bpe-nmt_nfkc"])


def test_identity_rule_gives_identity_normalizer(trained):
    assert load_sentencepiece(trained["bpe-identity-bytes"]).normalizer == {"name": "identity"}
    model = load_sentencepiece(trained["bpe-nmt_nfkc"])
    assert model.normalizer == {"name": "precompiled"} and model.charsmap


# ============================================================================ loader errors
def _field_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte spans of the top-level fields."""
    spans, position = [], 0
    while position < len(data):
        start = position
        tag, position = pb.decode_varint(data, position)
        length, position = pb.decode_varint(data, position)
        position += length
        spans.append((start, position))
    return spans


def test_truncated_files_are_rejected(tmp_path, trained):
    data = trained["unigram-nmt_nfkc"]
    spans = _field_spans(data)
    cuts = [spans[0][0] + 1, spans[0][1] - 1, spans[len(spans) // 2][0] + 2, len(data) - 1]
    for cut in cuts:
        path = tmp_path / f"cut{cut}.model"
        path.write_bytes(data[:cut])
        with pytest.raises(ModelFileError) as info:
            load_sentencepiece(path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize("garbage", [b"", b"hello world, not a model", b"\x89PNG\r\n\x1a\n\x00\x00",
                                     bytes(range(256)) * 3, b"\x0a\xff\xff\xff\xff\x0f"])
def test_garbage_is_rejected(garbage):
    with pytest.raises(ModelFileError):
        load_sentencepiece(garbage, source="junk.model")
    assert not looks_like_sentencepiece(garbage)


def test_shardpiece_model_is_not_taken_for_sentencepiece():
    data = Model.byte_level([b"ab"], [-1.0]).to_bytes()
    assert not looks_like_sentencepiece(data)
    with pytest.raises(ModelFileError):
        load_sentencepiece(data)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ModelFileError, match="nope.model"):
        load_sentencepiece(tmp_path / "nope.model")


@pytest.mark.parametrize("model_type,word", [(3, "word"), (4, "char")])
def test_word_and_char_models_are_refused(trained, model_type, word):
    data = _edit(trained["unigram-nmt_nfkc"], (2,), 3, pb.VARINT, model_type)
    with pytest.raises(ModelFileError, match=word):
        load_sentencepiece(data)


def test_denormalizer_rules_are_refused(trained):
    data = trained["unigram-nmt_nfkc"]
    charsmap = pb.Message.parse(data).message(3).get_bytes(2)
    data = _edit(data, (5,), 2, pb.LENGTH_DELIMITED, charsmap)
    with pytest.raises(ModelFileError, match="denormaliz"):
        load_sentencepiece(data)


def _replace_pieces(data: bytes, change) -> bytes:
    root = pb.Message.parse(data)
    fields = []
    for f in root.fields:
        if f.number == 1:
            piece = pb.Message.parse(f.value)
            new = change(piece)
            if new is None:
                continue
            f = pb.Field(1, pb.LENGTH_DELIMITED, new.serialize())
        fields.append(f)
    return pb.serialize_message(fields)


def test_model_without_unknown_piece_is_refused(trained):
    def drop_unk(piece):
        if piece.get_int32(3, 1) == PieceType.UNKNOWN:
            piece.set(3, pb.VARINT, PieceType.NORMAL)
        return piece

    with pytest.raises(ModelFileError, match="UNKNOWN"):
        load_sentencepiece(_replace_pieces(trained["unigram-nmt_nfkc"], drop_unk))


def test_incomplete_byte_pieces_are_refused(trained):
    def drop_one_byte(piece):
        return None if piece.get_bytes(1) == b"<0x41>" else piece

    with pytest.raises(ModelFileError, match="255 of the 256"):
        load_sentencepiece(_replace_pieces(trained["bpe-identity-bytes"], drop_one_byte))


def test_duplicate_pieces_are_refused(trained):
    def duplicate(piece):
        return pb.Message([pb.Field(1, pb.LENGTH_DELIMITED, b"<s>")] + piece.fields[1:]) \
            if piece.get_bytes(1) == b"</s>" else piece

    with pytest.raises(ModelFileError, match="twice"):
        load_sentencepiece(_replace_pieces(trained["unigram-nmt_nfkc"], duplicate))


def test_broken_charsmap_is_refused(trained):
    data = _edit(trained["unigram-nmt_nfkc"], (3,), 2, pb.LENGTH_DELIMITED, b"\xff\xff\x00\x00abcd")
    with pytest.raises(ModelFileError, match="charsmap"):
        load_sentencepiece(data)


# ============================================================================ normalizer vs sentencepiece
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_normalize_matches_sentencepiece(trained, corpus, held_out, name):
    data = trained[name]
    sp = processor(data)
    normalizer = for_model(load_sentencepiece(data))
    assert isinstance(normalizer, SentencePieceNormalizer)
    lines = held_out + corpus[:200]
    for line in lines:
        assert normalizer.normalize(line.encode()) == sp.normalize(line.encode()), repr(line)
    blob = b"".join(line.encode() for line in lines)
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum([len(line.encode()) for line in lines], out=offsets[1:])
    out, out_offsets = normalizer.normalize_batch(np.frombuffer(blob, np.uint8), offsets)
    expected = [sp.normalize(line.encode()) for line in lines]
    assert [out[out_offsets[i]:out_offsets[i + 1]].tobytes() for i in range(len(lines))] == expected


FLAG_COMBINATIONS = [(a, r, e, s) for a in (True, False) for r in (True, False) for e in (True, False)
                     for s in (True, False)]


@pytest.mark.parametrize("add_dummy,remove_extra,escape,suffix", FLAG_COMBINATIONS)
def test_every_whitespace_flag_combination(trained, held_out, add_dummy, remove_extra, escape, suffix):
    data = trained["unigram-symbols-bytes"]
    data = _edit(data, (3,), 3, pb.VARINT, int(add_dummy))
    data = _edit(data, (3,), 4, pb.VARINT, int(remove_extra))
    data = _edit(data, (3,), 5, pb.VARINT, int(escape))
    data = _edit(data, (2,), 24, pb.VARINT, int(suffix))
    sp = processor(data)
    model = load_sentencepiece(data)
    normalizer = for_model(model)
    for line in held_out[:150] + ["", " ", "   ", "\t", " a ", "ｶﾀ  ｶﾀ ", "  <sep>  x  "]:
        assert normalizer.normalize(line.encode()) == sp.normalize(line.encode()), repr(line)
        ids = sp.encode(line)
        pieces = [model.pieces[i] for i in ids]
        assert normalizer.decode_pieces(pieces, model.types[ids]) == sp.decode(ids).encode(), repr(line)


ALPHABET = st.sampled_from(
    list("aZ09 .,!?-'\t\n\r") + ["  ", "   ", "\u3000", "\u00a0", "\u2581", "\ufffd", "\x00", "\x1f", "\u200b"]
    + list("的一是中国日本語カタカナｶﾀｶﾅﾞﾟ")
    + ["ﬁ", "①", "㍿", "²", "Ⅻ", "Ａ", "！", "ﷺ", "e\u0301", "\u0301", "ㄱ", "😀", "👨‍👩‍👧", "\U0010fffd", "<sep>",
       "<cls>", "ab", "①②", "\u2581x"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(ALPHABET | st.text(max_size=3), max_size=30))
def test_normalize_arbitrary_text_matches_sentencepiece(trained, parts):
    text = "".join(parts)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates are not text
        return
    for name in ("unigram-symbols-bytes", "unigram-nfkc_cf-suffix", "bpe-keep-spaces"):
        normalizer = _normalizer(trained, name)
        assert normalizer.normalize(encoded) == _sp(trained, name).normalize(encoded)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=40))
def test_invalid_utf8_matches_sentencepiece(trained, data):
    for name in ("unigram-nmt_nfkc", "bpe-identity-bytes"):
        assert _normalizer(trained, name).normalize(data) == _sp(trained, name).normalize(data)


_CACHE: dict = {}


def _normalizer(trained, name):
    key = ("normalizer", name)
    if key not in _CACHE:
        _CACHE[key] = for_model(load_sentencepiece(trained[name]))
    return _CACHE[key]


def _sp(trained, name):
    key = ("sp", name)
    if key not in _CACHE:
        _CACHE[key] = processor(trained[name])
    return _CACHE[key]


# ============================================================================ decoding vs sentencepiece
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_matches_sentencepiece(trained, held_out, name):
    data = trained[name]
    sp = processor(data)
    model = load_sentencepiece(data)
    normalizer = for_model(model)
    for line in held_out:
        ids = sp.encode(line)
        pieces = [model.pieces[i] for i in ids]
        expected = sp.decode(ids).encode()
        assert normalizer.decode_pieces(pieces, model.types[ids]) == expected, repr(line)
        assert normalizer.decode_ids(ids, model.pieces, model.types) == expected, repr(line)
    # arbitrary id sequences (control pieces between byte pieces, leading spaces, unknowns, ...)
    rng = random.Random(5)
    special = [i for i in range(model.vocab_size) if model.types[i] != PieceType.NORMAL]
    space_pieces = [i for i, p in enumerate(model.pieces) if p.startswith("\u2581".encode())]
    for _ in range(300):
        ids = [rng.choice((rng.randrange(model.vocab_size), rng.choice(special), rng.choice(space_pieces)))
               for _ in range(rng.randint(0, 8))]
        pieces = [model.pieces[i] for i in ids]
        assert normalizer.decode_pieces(pieces, model.types[ids]) == sp.decode(ids).encode(), ids
        assert normalizer.decode_ids(ids, model.pieces, model.types) == sp.decode(ids).encode(), ids


def _joined_piece_bytes(model, ids) -> bytes:
    out = bytearray()
    for i in ids:
        kind = model.types[i]
        if kind == PieceType.BYTE:
            out.append(int(model.pieces[i][3:5], 16))
        elif kind == PieceType.CONTROL:
            continue
        elif kind == PieceType.UNKNOWN:
            out += model.pretokenizer["unk_surface"].encode()
        else:
            out += model.pieces[i]
    return bytes(out)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_denormalize_of_joined_pieces_matches_sentencepiece(trained, held_out, name):
    data = trained[name]
    sp = processor(data)
    model = load_sentencepiece(data)
    normalizer = for_model(model)
    for line in held_out:
        ids = sp.encode(line)
        assert normalizer.denormalize(_joined_piece_bytes(model, ids)) == sp.decode(ids).encode(), repr(line)


# ============================================================================ the Tokenizer end to end
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_tokenizer_matches_sentencepiece(tmp_path, trained, held_out, name):
    core = pytest.importorskip("tokenizer.core")
    path = tmp_path / f"{name}.model"
    path.write_bytes(trained[name])
    sp = processor(trained[name])
    tok = core.Tokenizer.load(str(path))
    for line in held_out:
        ids = sp.encode(line)
        assert tok.encode(line) == ids, repr(line)
        assert tok.decode(ids) == sp.decode(ids), repr(line)
    assert tok.encode_batch(held_out[:50]) == [sp.encode(line) for line in held_out[:50]]
    rng = random.Random(7)
    special = [i for i in range(sp.get_piece_size()) if not sp.is_unused(i) and (
        sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i) or sp.id_to_piece(i).startswith("\u2581"))]
    for _ in range(200):
        ids = [rng.choice((rng.randrange(sp.get_piece_size()), rng.choice(special))) for _ in range(rng.randint(0, 8))]
        assert tok.decode(ids) == sp.decode(ids), ids
