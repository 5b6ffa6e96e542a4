"""Normalizers: the SentencePiece charsmap kernels against their Python twins and against sentencepiece."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenizer.errors import ModelError
from tokenizer.interop import protobuf as pb
from tokenizer.normalizers.sentencepiece import (
    SentencePieceNormalizer, build_symbol_trie, sentencepiece_utf8_repair, split_charsmap,
)
from tokenizer.kernels import charsmap as C
from tokenizer.kernels import normalize as K
from tokenizer.kernels import utf8
from tokenizer.model import Model, PieceType
from tokenizer.normalizers import NFKC, Identity, for_model
from tokenizer.twins.charsmap import ref_ascii_pair, ref_charsmap_longest_match, ref_plain_char
from tokenizer.twins.utf8 import ref_valid_char_length
from tokenizer.twins.normalize import ref_normalize

# Rules with overlapping keys, a deletion, a mapping to spaces and to "▁", multi-character keys.
CUSTOM_RULES = "41 42\t58\n41\t59 59\n41 42 43\t\n20 20\t20\nFF21\t41 20 42\n78\t20 6C 6F 6E 67 20 20 72 65 70 6C\n" \
               "2581\t2581 2581\n3000\t20\n9\t20\n"


def _charsmap(spm, tmp_path_factory, name: str) -> bytes:
    if name == "custom":
        path = tmp_path_factory.mktemp("rules") / "rules.tsv"
        path.write_text(CUSTOM_RULES)
        normalizer = spm.SentencePieceNormalizer(rule_tsv=str(path))
    else:
        normalizer = spm.SentencePieceNormalizer(rule_name=name)
    return pb.Message.parse(normalizer.serialized_normalizer_spec()).get_bytes(2)


@pytest.fixture(scope="module")
def charsmaps(tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    return {name: _charsmap(spm, tmp_path_factory, name) for name in ("nmt_nfkc", "nmt_nfkc_cf", "nfkc", "custom")}


def _split(charsmap: bytes):
    if not charsmap:
        return [], b"\x00"
    trie, replacements = split_charsmap(charsmap)
    return trie.tolist(), replacements.tobytes()


TEXT_PARTS = st.sampled_from(
    ["a", "A", "AB", "ABC", "x", "Ａ", " ", "  ", "\t", "\u3000", "\u2581", "\ufffd", "\x00", "ｶ", "ﾞ", "ﬁ", "①", "ﷺ",
     "e\u0301", "😀", "中", "<sep>", "①②", "ab", "\u00a0", "\u200b", "K", "Å"]
) | st.text(max_size=3)
SYMBOL_SETS = st.sampled_from([(), (b"<sep>",), (b"<sep>", b"ab", "①②".encode(), "\u2581x".encode()),
                               (b"A", b"AB", b" ", b"a b")])


def _to_bytes(parts, raw):
    text = "".join(parts).encode("utf-8", "surrogatepass")
    return text + raw


# ============================================================================ kernel twins
@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=6))
def test_valid_char_length_twin(data):
    array = np.frombuffer(data, np.uint8)
    assert utf8.valid_char_length(array, 0, len(data)) == ref_valid_char_length(data, 0)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(TEXT_PARTS, max_size=4), name=st.sampled_from(["nmt_nfkc", "custom"]))
def test_charsmap_longest_match_twin(charsmaps, parts, name):
    text = "".join(parts).encode("utf-8", "surrogatepass")
    trie, _ = _split(charsmaps[name])
    array = np.frombuffer(text, np.uint8)
    for position in range(len(text)):
        assert tuple(C.charsmap_longest_match(np.asarray(trie, np.uint32), array, position, len(text))) == \
            ref_charsmap_longest_match(trie, text, position)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cps=st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=50), name=st.sampled_from(["", "nmt_nfkc", "custom"]))
def test_plain_char_table_twin(charsmaps, cps, name):
    trie, _ = _split(charsmaps[name] if name else b"")
    table = _PLAIN_TABLES.get(name)
    if table is None:
        table = _PLAIN_TABLES[name] = np.zeros(0x10000, np.uint8)
        C.build_plain_char_table(np.asarray(trie, np.uint32), table)
    for cp in cps + [0x41, 0x20, 0xFF21, 0x2581, 0x3000]:
        assert bool(table[cp]) == ref_plain_char(trie, cp), hex(cp)


_PLAIN_TABLES: dict = {}


@pytest.mark.parametrize("name", ["", "nmt_nfkc", "custom"])
def test_ascii_pair_table_twin(charsmaps, name):
    trie, _ = _split(charsmaps[name] if name else b"")
    table = np.zeros(128 * 128, np.uint8)
    C.build_ascii_pair_table(np.asarray(trie, np.uint32), table)
    for b0 in range(128):
        for b1 in range(0, 128, 3):
            assert bool(table[b0 * 128 + b1]) == ref_ascii_pair(trie, b0, b1), (b0, b1)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(TEXT_PARTS, max_size=25), raw=st.binary(max_size=4), flags=st.integers(0, 15),
       symbols=SYMBOL_SETS, name=st.sampled_from(["", "nmt_nfkc", "custom"]))
def test_normalize_kernel_twin(charsmaps, parts, raw, flags, symbols, name):
    text = _to_bytes(parts, raw)
    charsmap = charsmaps[name] if name else b""
    normalizer = SentencePieceNormalizer(
        charsmap, add_dummy_prefix=bool(flags & 1), remove_extra_whitespaces=bool(flags & 2),
        escape_whitespaces=bool(flags & 4), treat_whitespace_as_suffix=bool(flags & 8), user_defined_symbols=symbols)
    trie, replacements = _split(charsmap)
    assert normalizer.normalize(text) == ref_normalize(text, trie, replacements, set(symbols), flags)


@pytest.mark.oracle
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(TEXT_PARTS, max_size=25), raw=st.binary(max_size=4), flags=st.integers(0, 7),
       name=st.sampled_from(["nmt_nfkc", "nmt_nfkc_cf", "nfkc", "custom"]))
def test_normalize_matches_sentencepiece_normalizer(charsmaps, parts, raw, flags, name):
    spm = pytest.importorskip("sentencepiece")
    text = _to_bytes(parts, raw)
    options = dict(add_dummy_prefix=bool(flags & 1), remove_extra_whitespaces=bool(flags & 2),
                   escape_whitespaces=bool(flags & 4))
    key = (name, flags)
    if key not in _ORACLES:
        if name == "custom":
            ours = SentencePieceNormalizer(charsmaps[name], **options)
            spec = pb.Message([pb.Field(1, pb.LENGTH_DELIMITED, b"user_defined"),
                               pb.Field(2, pb.LENGTH_DELIMITED, charsmaps[name])]
                              + [pb.Field(3 + i, pb.VARINT, int(v)) for i, v in enumerate(options.values())])
            proto = pb.serialize_message([pb.Field(3, pb.LENGTH_DELIMITED, spec.serialize())])
            _ORACLES[key] = (ours, spm.SentencePieceNormalizer(model_proto=proto))
        else:
            _ORACLES[key] = (SentencePieceNormalizer(charsmaps[name], **options),
                             spm.SentencePieceNormalizer(rule_name=name, **options))
    ours, theirs = _ORACLES[key]
    assert ours.normalize(text) == theirs.normalize(text)


_ORACLES: dict = {}


# ============================================================================ behaviour
def test_hand_checked_examples(charsmaps):
    plain = SentencePieceNormalizer()
    assert plain.normalize(b"  Hello   world ") == "▁Hello▁world".encode()
    assert plain.normalize(b"") == b"" and plain.normalize(b"   ") == b""
    assert plain.normalize(b"a\xffb") == "▁a\ufffdb".encode()
    nfkc = SentencePieceNormalizer(charsmaps["nmt_nfkc"])
    assert nfkc.normalize("ｶ① ﬁ".encode()) == "▁カ1▁fi".encode()
    suffix = SentencePieceNormalizer(treat_whitespace_as_suffix=True)
    assert suffix.normalize(b" a  b ") == "a▁b▁".encode()
    keep = SentencePieceNormalizer(add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False)
    assert keep.normalize(b"  a\xff ") == "  a\ufffd ".encode()
    symbols = SentencePieceNormalizer(charsmaps["nmt_nfkc"], user_defined_symbols=["①②".encode()])
    assert symbols.normalize("①②①".encode()) == "▁①②1".encode()


def test_long_replacements_grow_the_buffer(charsmaps):
    text = ("ﷺ" * 3000 + "x" * 3000).encode()
    for name in ("nmt_nfkc", "custom"):
        normalizer = SentencePieceNormalizer(charsmaps[name], remove_extra_whitespaces=False)
        trie, replacements = _split(charsmaps[name])
        expected = ref_normalize(text, trie, replacements, set(), K.ADD_DUMMY_PREFIX | K.ESCAPE_WHITESPACES)
        assert len(expected) > 5 * len(text)
        assert normalizer.normalize(text) == expected


def test_batch_equals_one_by_one(charsmaps):
    normalizer = SentencePieceNormalizer(charsmaps["nmt_nfkc"], user_defined_symbols=[b"<sep>"])
    texts = [b"", "  ｶﾀｶﾅ  ".encode(), b"a<sep>b", "ﷺ".encode() * 50, b"\xff\xfe", b"   ", "中文 ①".encode()]
    blob = b"".join(texts)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    data = np.frombuffer(b"PREFIX" + blob, np.uint8)
    out, out_offsets = normalizer.normalize_batch(data, offsets + 6)  # offsets need not start at 0
    assert out_offsets[0] == 0
    assert [out[out_offsets[i]:out_offsets[i + 1]].tobytes() for i in range(len(texts))] == \
        [normalizer.normalize(t) for t in texts]
    empty_out, empty_offsets = normalizer.normalize_batch(np.zeros(0, np.uint8), np.zeros(1, np.int64))
    assert len(empty_out) == 0 and empty_offsets.tolist() == [0]


def test_pickles_via_constructor_arguments(charsmaps):
    normalizer = SentencePieceNormalizer(charsmaps["custom"], add_dummy_prefix=False, user_defined_symbols=[b"ab"],
                                         treat_whitespace_as_suffix=True, unk_surface="?")
    clone = pickle.loads(pickle.dumps(normalizer))
    text = "ABCAＡ ab  x\t".encode()
    assert clone.normalize(text) == normalizer.normalize(text)
    assert (clone.unk_surface, clone.user_defined_symbols) == ("?", (b"ab",))


def test_denormalize_and_decode_pieces():
    normalizer = SentencePieceNormalizer()
    assert normalizer.denormalize("▁Hello▁world".encode()) == b"Hello world"
    assert normalizer.denormalize(b"a\xe4\xb8") == "a\ufffd\ufffd".encode()
    assert normalizer.decode_pieces(["▁a".encode(), b"<0xE4>", b"<s>"], [1, 6, 3]) == "a\ufffd".encode()
    assert normalizer.decode_pieces([b"<0xE4>", b"<0xB8>", b"<0xAD>"], [6, 6, 6]) == "中".encode()
    assert normalizer.decode_pieces([b"<0xE4>", b"<s>", b"<0xB8>", b"<0xAD>"], [6, 3, 6, 6]) == "\ufffd" .encode() * 3
    assert normalizer.decode_pieces([b"<unk>", "▁x".encode()], [2, 1]) == " \u2047  x".encode()
    assert normalizer.decode_pieces(["▁".encode(), "▁x".encode()], [1, 1]) == b"x"
    assert SentencePieceNormalizer(remove_extra_whitespaces=False).decode_pieces(
        ["▁".encode(), "▁x".encode()], [1, 1]) == b" x"
    with pytest.raises(ValueError, match="one type per piece"):
        normalizer.decode_pieces([b"a"], [])


def test_sentencepiece_utf8_repair_replaces_each_invalid_byte():
    assert sentencepiece_utf8_repair(b"a\xe4\xb8") == "a\ufffd\ufffd".encode()
    assert sentencepiece_utf8_repair("\ufffd中".encode()) == "\ufffd中".encode()
    assert sentencepiece_utf8_repair(b"\xed\xa0\x80") == "\ufffd".encode() * 3  # a surrogate is not a character
    assert sentencepiece_utf8_repair(b"\xc0\x80") == "\ufffd".encode() * 2      # overlong


def test_symbol_trie_layout():
    edge_start, labels, targets, terminal = build_symbol_trie([b"ab"])
    assert edge_start.tolist() == [0, 1, 2, 2]
    assert labels.tolist() == [97, 98] and targets.tolist() == [1, 2] and terminal.tolist() == [0, 0, 1]


@pytest.mark.parametrize("blob", [b"", b"\x04\x00\x00\x00", b"\xff\x00\x00\x00abcd", b"\x03\x00\x00\x00abcd"])
def test_broken_charsmap_blobs_raise(blob):
    with pytest.raises(ModelError, match="charsmap"):
        split_charsmap(blob)


def _sentencepiece_model(normalizer=None, charsmap=b"", **pretokenizer) -> Model:
    pieces = [b"<unk>", b"<s>", b"</s>", "▁a".encode(), b"a", b"b", b"<sep>"]
    types = [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.CONTROL] + [PieceType.NORMAL] * 3 + \
        [PieceType.USER_DEFINED]
    return Model(pieces, np.zeros(len(pieces)), np.asarray(types), normalizer=normalizer or {"name": "identity"},
                 charsmap=charsmap, pretokenizer={"name": "sentencepiece", **pretokenizer}, unk_id=0)


def test_for_model_dispatches_to_the_sentencepiece_normalizer(charsmaps):
    normalizer = for_model(_sentencepiece_model())
    assert isinstance(normalizer, SentencePieceNormalizer)
    assert normalizer.user_defined_symbols == (b"<sep>",)
    assert normalizer.normalize("<sep>  ｶ".encode()) == "▁<sep>▁ｶ".encode()
    nfkc = for_model(_sentencepiece_model({"name": "precompiled"}, charsmaps["nmt_nfkc"], add_dummy_prefix=False))
    assert nfkc.normalize("<sep>  ｶ".encode()) == "<sep>▁カ".encode()
    assert isinstance(for_model(Model.byte_level([], [])), Identity)
    with pytest.raises(ModelError, match="pretokenizer 'sentencepiece'"):
        SentencePieceNormalizer.from_model(Model.byte_level([], []))


def test_other_normalizers_unchanged():
    assert NFKC().normalize("ｶ①".encode()) == "カ1".encode()
    assert Identity().normalize(b"\xff a") == b"\xff a"
