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


def test_packed_bytes_is_a_sequence_of_bytes():
    from tokenizer.packed import PackedBytes

    items = PackedBytes(*pack([b"ab", b"", b"c"]))
    assert len(items) == 3 and items.nbytes == 3
    assert list(items) == [b"ab", b"", b"c"] and items == [b"ab", b"", b"c"]
    assert items[0] == b"ab" and items[-1] == b"c" and list(items[1:]) == [b"", b"c"]
    with pytest.raises(IndexError):
        items[3]
    data, offsets = pack(items)
    assert data is items.data and offsets is items.offsets
    rebased = PackedBytes(np.frombuffer(b"xxabc", np.uint8), np.array([2, 4, 5]))
    assert rebased.offsets.tolist() == [0, 2, 3] and list(rebased) == [b"ab", b"c"]
    import pickle

    assert pickle.loads(pickle.dumps(items)) == items


def test_packed_bytes_iterates_in_blocks(monkeypatch):
    from tokenizer.packed import PackedBytes

    monkeypatch.setattr(PackedBytes, "ITER_BLOCK", 2)
    items = [bytes([i]) * (i % 3) for i in range(7)]
    assert list(PackedBytes(*pack(items))) == items


def test_argsort_spans_example():
    from tokenizer.kernels.packed_sort import argsort_spans, gather_distinct

    data, offsets = pack([b"b", b"ab", b"a", b"a\x00", b"a"])
    order = np.empty(5, np.int64)
    argsort_spans(data, offsets[:-1], offsets[1:], order)
    assert order.tolist() == [2, 4, 3, 1, 0]
    out, out_offsets, counts = gather_distinct(data, offsets[:-1], offsets[1:], np.array([1, 2, 3, 4, 5]), order)
    assert unpack(out, out_offsets) == [b"a", b"a\x00", b"ab", b"b"] and counts.tolist() == [8, 4, 2, 1]


@settings(max_examples=300, deadline=None)
@given(items=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\x01", b"\x00")), max_size=80),
       common=st.binary(max_size=20), share=st.floats(0, 1), repeats=st.integers(0, 3))
def test_sorting_spans_agrees_with_its_twins(items, common, share, repeats):
    """Long shared prefixes (several 8-byte digits deep), zero bytes (the padding's value), equal strings (by
    index, then summed), segments above and below the insertion-sort size; spans out of data order."""
    from tokenizer.kernels.packed_sort import argsort_spans, gather_distinct, strictly_increasing
    from tokenizer.twins.packed_sort import ref_argsort_spans, ref_gather_distinct, ref_strictly_increasing

    cut = int(share * len(items))
    items = [common + item for item in items[:cut]] + items[cut:] + items[:repeats]
    data, offsets = pack(items)
    starts, ends = offsets[:-1][::-1].copy(), offsets[1:][::-1].copy()
    counts = np.arange(1, len(items) + 1, dtype=np.int64)
    order = np.empty(len(items), np.int64)
    argsort_spans(data, starts, ends, order)
    assert order.tolist() == ref_argsort_spans(data.tobytes(), starts.tolist(), ends.tolist())
    out, out_offsets, summed = gather_distinct(data, starts, ends, counts, order)
    expected = ref_gather_distinct(data.tobytes(), starts.tolist(), ends.tolist(), counts.tolist())
    assert dict(zip(unpack(out, out_offsets), summed.tolist())) == expected
    assert unpack(out, out_offsets) == list(expected)
    for spans in ((starts, ends), (out_offsets[:-1], out_offsets[1:])):
        assert strictly_increasing(out if spans[0] is not starts else data, *spans) == ref_strictly_increasing(
            (out if spans[0] is not starts else data).tobytes(), spans[0].tolist(), spans[1].tolist())
