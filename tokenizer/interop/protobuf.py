"""A minimal protobuf wire-format reader and writer (no schema compiler, no dependency).

A message is kept as the ordered list of its fields, unknown ones included, so reading a file and writing it back
gives the same bytes (for input in canonical field order, as protobuf writers emit it). Values stay raw on the wire
level: a varint or fixed field is an ``int`` (unsigned), a length-delimited field is ``bytes``; the typed helpers
(:func:`as_int32`, :func:`as_float`, :func:`as_bool`) interpret them as a schema would.

Handles wire types 0 (varint), 1 (fixed64), 2 (length-delimited) and 5 (fixed32). Groups (wire types 3 and 4,
deprecated since proto2) are rejected with :class:`ProtobufError`.

Example (hand-checkable): field 1 = varint 150 is the three bytes ``08 96 01``::

    >>> parse_message(b"\\x08\\x96\\x01")
    [Field(number=1, wire_type=0, value=150)]
    >>> serialize_message([Field(1, VARINT, 150)])
    b'\\x08\\x96\\x01'
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable

VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")


class ProtobufError(ValueError):
    """Bytes that are not a well-formed protobuf message; the message gives the byte offset of the problem."""


@dataclass(frozen=True)
class Field:
    """One field as it is on the wire: ``value`` is an unsigned ``int`` (wire types 0, 1, 5) or ``bytes`` (2)."""

    number: int
    wire_type: int
    value: int | bytes


def decode_varint(data: bytes | memoryview, position: int) -> tuple[int, int]:
    """Read a base-128 varint at ``position``; returns ``(value, next_position)``.

    >>> decode_varint(b"\\x96\\x01", 0)
    (150, 2)
    """
    result = 0
    shift = 0
    end = len(data)
    start = position
    while True:
        if position >= end:
            raise ProtobufError(f"truncated varint at byte {start}")
        if position - start >= _MAX_VARINT_BYTES:
            raise ProtobufError(f"varint at byte {start} is longer than {_MAX_VARINT_BYTES} bytes")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, position


def encode_varint(value: int) -> bytes:
    """Base-128 varint of a non-negative int below 2**64 (negative int32/int64 use their 64-bit two's complement).

    >>> encode_varint(150), encode_varint(-1)[-1]
    (b'\\x96\\x01', 1)
    """
    if value < 0:
        value += 1 << 64
    if not 0 <= value < (1 << 64):
        raise ValueError(f"varint value {value} does not fit in 64 bits")
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def parse_message(data: bytes | memoryview) -> list[Field]:
    """All fields of one serialized message, in wire order. Raises :class:`ProtobufError` on malformed bytes."""
    data = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
    fields: list[Field] = []
    position = 0
    end = len(data)
    while position < end:
        tag_start = position
        tag, position = decode_varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if number == 0 or number >= (1 << 29):
            raise ProtobufError(f"invalid field number {number} at byte {tag_start}")
        if wire_type == VARINT:
            value, position = decode_varint(data, position)
        elif wire_type == FIXED64:
            if position + 8 > end:
                raise ProtobufError(f"truncated fixed64 field {number} at byte {tag_start}")
            value = int.from_bytes(data[position:position + 8], "little")
            position += 8
        elif wire_type == FIXED32:
            if position + 4 > end:
                raise ProtobufError(f"truncated fixed32 field {number} at byte {tag_start}")
            value = int.from_bytes(data[position:position + 4], "little")
            position += 4
        elif wire_type == LENGTH_DELIMITED:
            length, position = decode_varint(data, position)
            if position + length > end:
                raise ProtobufError(
                    f"field {number} at byte {tag_start} claims {length} bytes but only {end - position} remain "
                    "(truncated data)"
                )
            value = bytes(data[position:position + length])
            position += length
        elif wire_type in (START_GROUP, END_GROUP):
            raise ProtobufError(f"field {number} at byte {tag_start} is a group (wire type {wire_type}): unsupported")
        else:
            raise ProtobufError(f"invalid wire type {wire_type} for field {number} at byte {tag_start}")
        fields.append(Field(number, wire_type, value))
    return fields


def serialize_field(field: Field) -> bytes:
    """Wire bytes of one field (tag then value)."""
    tag = encode_varint((field.number << 3) | field.wire_type)
    if field.wire_type == VARINT:
        return tag + encode_varint(int(field.value))
    if field.wire_type == FIXED64:
        return tag + int(field.value).to_bytes(8, "little")
    if field.wire_type == FIXED32:
        return tag + int(field.value).to_bytes(4, "little")
    if field.wire_type == LENGTH_DELIMITED:
        payload = bytes(field.value)
        return tag + encode_varint(len(payload)) + payload
    raise ValueError(f"cannot serialize wire type {field.wire_type} (field {field.number})")


def serialize_message(fields: Iterable[Field]) -> bytes:
    """Wire bytes of a message given as fields (the inverse of :func:`parse_message`)."""
    return b"".join(serialize_field(f) for f in fields)


# ---------------------------------------------------------------------------- typed views of raw values
def as_int32(value: int) -> int:
    """A varint read as int32/int64/enum (two's complement), e.g. ``as_int32(2**64 - 1) == -1``."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= (1 << 63) else value


def as_bool(value: int) -> bool:
    return value != 0


def as_float(value: int) -> float:
    """A fixed32 read as IEEE float32, e.g. ``as_float(0x3F800000) == 1.0``."""
    return _FLOAT.unpack(int(value).to_bytes(4, "little"))[0]


def float_bits(value: float) -> int:
    """The fixed32 wire value of a float32 (inverse of :func:`as_float`)."""
    return int.from_bytes(_FLOAT.pack(value), "little")


def as_double(value: int) -> float:
    return _DOUBLE.unpack(int(value).to_bytes(8, "little"))[0]


class Message:
    """A parsed message: ordered raw fields plus lookups by field number, as proto2 semantics read them.

    A singular scalar takes the last occurrence; a singular embedded message merges all occurrences (protobuf's
    rule), which :meth:`message` gets by parsing their concatenation.
    """

    __slots__ = ("fields",)

    def __init__(self, fields: list[Field] | None = None):
        self.fields: list[Field] = list(fields or [])

    @classmethod
    def parse(cls, data: bytes | memoryview) -> "Message":
        return cls(parse_message(data))

    def serialize(self) -> bytes:
        return serialize_message(self.fields)

    def has(self, number: int) -> bool:
        return any(f.number == number for f in self.fields)

    def all(self, number: int, wire_type: int | None = None) -> list[int | bytes]:
        """Raw values of every occurrence of field ``number``; raises if one has another wire type."""
        values = []
        for f in self.fields:
            if f.number == number:
                if wire_type is not None and f.wire_type != wire_type:
                    raise ProtobufError(f"field {number} has wire type {f.wire_type}, expected {wire_type}")
                values.append(f.value)
        return values

    def last(self, number: int, wire_type: int, default=None):
        values = self.all(number, wire_type)
        return values[-1] if values else default

    def message(self, number: int) -> "Message | None":
        parts = self.all(number, LENGTH_DELIMITED)
        if not parts:
            return None
        return Message.parse(b"".join(parts))  # type: ignore[arg-type]

    def get_int32(self, number: int, default: int) -> int:
        value = self.last(number, VARINT)
        return default if value is None else as_int32(value)

    def get_bool(self, number: int, default: bool) -> bool:
        value = self.last(number, VARINT)
        return default if value is None else as_bool(value)

    def get_float(self, number: int, default: float) -> float:
        value = self.last(number, FIXED32)
        return default if value is None else as_float(value)

    def get_bytes(self, number: int, default: bytes | None = None) -> bytes | None:
        value = self.last(number, LENGTH_DELIMITED)
        return default if value is None else value

    def set(self, number: int, wire_type: int, value: int | bytes) -> None:
        """Replace every occurrence of field ``number`` by one with ``value`` (at the first one's place, or last)."""
        new = Field(number, wire_type, value)
        out, placed = [], False
        for f in self.fields:
            if f.number == number:
                if not placed:
                    out.append(new)
                    placed = True
            else:
                out.append(f)
        if not placed:
            out.append(new)
        self.fields = out

    def remove(self, number: int) -> None:
        self.fields = [f for f in self.fields if f.number != number]
