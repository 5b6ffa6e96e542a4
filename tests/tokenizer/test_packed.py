"""Packed byte strings: round trips through lists and Arrow arrays, and the input checks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.errors import InputError
from tokenizer.packed import as_packed, from_arrow, offsets_valid, pack, to_arrow, unpack


def items_of(data, offsets) -> list[bytes]:
    return [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(offsets) - 1)]


def test_docstring_examples():
    data, offsets = pack([b"ab", b"c"])
    assert data.tolist() == [97, 98, 99] and offsets.tolist() == [0, 2, 3]
    assert data.dtype == np.uint8 and offsets.dtype == np.int64
    assert unpack(np.frombuffer(b"aab", np.uint8), [0, 1, 3]) == [b"a", b"ab"]
    data, offsets = from_arrow(pa.array([b"xx", b"ab", b"c"]).slice(1))
    assert data.tobytes() == b"xxabc" and offsets.tolist() == [2, 4, 5] and offsets.dtype == np.int32
    assert to_arrow(np.frombuffer(b"abcde", np.uint8), np.array([0, 2, 2, 5])).to_pylist() == [b"ab", b"", b"cde"]


def test_pack_writable_and_empty():
    data, _ = pack([b"ab"])
    assert not data.flags.writeable
    data, _ = pack([b"ab"], writable=True)
    assert data.flags.writeable
    data, offsets = pack([])
    assert data.shape == (0,) and offsets.tolist() == [0]


@settings(max_examples=100, deadline=None)
@given(items=st.lists(st.binary(max_size=6), max_size=8), start=st.integers(0, 3))
def test_round_trips(items, start):
    data, offsets = pack(items)
    assert unpack(data, offsets) == items
    for kind in (pa.binary(), pa.large_binary()):
        array = pa.array([b"zz"] * start + items, kind).slice(start)
        arrow_data, arrow_offsets = from_arrow(array)
        assert items_of(arrow_data, arrow_offsets) == items
        assert to_arrow(arrow_data, arrow_offsets).to_pylist() == items


def test_from_arrow_strings_and_empty():
    data, offsets = from_arrow(pa.array(["é", "z"], pa.large_string()))
    assert offsets.dtype == np.int64 and items_of(data, offsets) == ["é".encode(), b"z"]
    data, offsets = from_arrow(pa.array([], pa.string()))
    assert data.shape == (0,) and offsets.tolist() == [0]


def test_as_packed_checks():
    data, offsets = as_packed(b"abc", [0, 2, 3])
    assert data.dtype == np.uint8 and offsets.dtype == np.int64
    with pytest.raises(InputError, match="uint8"):
        as_packed(np.zeros(3, np.int32), [0, 3])
    with pytest.raises(InputError, match="rising"):
        as_packed(b"abc", [0, 4])
    assert as_packed(b"abc", [0, 4], check=False)[1].tolist() == [0, 4]
    assert offsets_valid(np.array([0, 2, 2, 3]), 3)
    assert not offsets_valid(np.array([0, 2, 1]), 3)
    assert not offsets_valid(np.zeros(0, np.int64), 3)
