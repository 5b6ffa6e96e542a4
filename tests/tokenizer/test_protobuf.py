"""The minimal protobuf wire-format reader/writer."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.interop import protobuf as pb


def test_hand_checked_encodings():
    assert pb.encode_varint(0) == b"\x00"
    assert pb.encode_varint(1) == b"\x01"
    assert pb.encode_varint(300) == b"\xac\x02"
    assert pb.decode_varint(b"\xac\x02", 0) == (300, 2)
    assert pb.encode_varint(-1) == b"\xff" * 9 + b"\x01"
    assert pb.as_int32(pb.decode_varint(pb.encode_varint(-1), 0)[0]) == -1
    # field 2, string "testing" (the protobuf documentation's example)
    assert pb.parse_message(b"\x12\x07testing") == [pb.Field(2, pb.LENGTH_DELIMITED, b"testing")]
    assert pb.as_float(0x3F800000) == 1.0
    assert pb.float_bits(-2.5) == struct.unpack("<I", struct.pack("<f", -2.5))[0]


fields = st.one_of(
    st.builds(pb.Field, st.integers(1, (1 << 29) - 1), st.just(pb.VARINT), st.integers(0, (1 << 64) - 1)),
    st.builds(pb.Field, st.integers(1, (1 << 29) - 1), st.just(pb.FIXED64), st.integers(0, (1 << 64) - 1)),
    st.builds(pb.Field, st.integers(1, (1 << 29) - 1), st.just(pb.FIXED32), st.integers(0, (1 << 32) - 1)),
    st.builds(pb.Field, st.integers(1, (1 << 29) - 1), st.just(pb.LENGTH_DELIMITED), st.binary(max_size=300)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(fields, max_size=20))
def test_serialize_then_parse_is_identity(message):
    data = pb.serialize_message(message)
    assert pb.parse_message(data) == message
    assert pb.Message.parse(data).serialize() == data


@settings(max_examples=200, deadline=None)
@given(st.integers(-(1 << 63), (1 << 64) - 1))
def test_varint_round_trip(value):
    encoded = pb.encode_varint(value)
    decoded, end = pb.decode_varint(encoded, 0)
    assert end == len(encoded) <= 10
    assert decoded == value % (1 << 64)


@settings(max_examples=200, deadline=None)
@given(st.lists(fields, min_size=1, max_size=5), st.data())
def test_truncated_messages_raise(message, data):
    encoded = pb.serialize_message(message)
    # cut strictly inside the last field: never a valid message
    last = pb.serialize_field(message[-1])
    cut = data.draw(st.integers(len(encoded) - len(last) + 1, len(encoded) - 1)) if len(last) > 1 else None
    if cut is None:
        return
    with pytest.raises(pb.ProtobufError):
        pb.parse_message(encoded[:cut])


@pytest.mark.parametrize("data,problem", [
    (b"\x08", "truncated varint"),
    (b"\x0b\x00", "group"),
    (b"\x0e\x00", "wire type 6"),
    (b"\x00\x01", "field number 0"),
    (b"\x12\x05abc", "claims 5 bytes"),
    (b"\x0d\x00\x00", "truncated fixed32"),
    (b"\x09\x00", "truncated fixed64"),
    (b"\x08" + b"\xff" * 11, "longer than 10"),
])
def test_malformed_bytes_say_what_is_wrong(data, problem):
    with pytest.raises(pb.ProtobufError, match=problem):
        pb.parse_message(data)


def test_message_accessors_follow_proto2_rules():
    sub_a = pb.serialize_message([pb.Field(1, pb.VARINT, 5)])
    sub_b = pb.serialize_message([pb.Field(2, pb.VARINT, 7)])
    message = pb.Message([
        pb.Field(1, pb.VARINT, 3), pb.Field(1, pb.VARINT, 4),                # last scalar wins
        pb.Field(2, pb.LENGTH_DELIMITED, sub_a), pb.Field(2, pb.LENGTH_DELIMITED, sub_b),  # messages merge
        pb.Field(3, pb.FIXED32, pb.float_bits(0.5)),
        pb.Field(4, pb.VARINT, pb.decode_varint(pb.encode_varint(-7), 0)[0]),
        pb.Field(99, pb.LENGTH_DELIMITED, b"unknown, kept"),
    ])
    assert message.get_int32(1, 0) == 4
    merged = message.message(2)
    assert merged.get_int32(1, 0) == 5 and merged.get_int32(2, 0) == 7
    assert message.get_float(3, 0.0) == 0.5
    assert message.get_int32(4, 0) == -7
    assert message.get_bool(5, True) is True and message.get_bytes(6) is None and message.message(7) is None
    assert pb.Message.parse(message.serialize()).fields[-1] == pb.Field(99, pb.LENGTH_DELIMITED, b"unknown, kept")
    with pytest.raises(pb.ProtobufError, match="wire type"):
        message.get_float(1, 0.0)
    message.set(1, pb.VARINT, 9)
    assert message.all(1) == [9] and message.fields[0].number == 1
    message.remove(99)
    assert not message.has(99)


def test_float_helpers_round_trip_float32():
    for value in (0.0, -0.0, 1.5, -1e-30, 3.4e38, math.inf):
        assert pb.as_float(pb.float_bits(value)) == struct.unpack("<f", struct.pack("<f", value))[0]
    assert pb.as_double(int.from_bytes(struct.pack("<d", 0.1), "little")) == 0.1
