"""The shuffle's varint columns: the kernels agree with their twins, decoding inverts encoding, truncated input is
refused."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tokenizer.kernels.varint import MAX_VARINT_BYTES, decode_varints, encode_varints
from tokenizer.twins.varint import ref_decode_varints, ref_encode_varints

_int64 = st.integers(-(1 << 63), (1 << 63) - 1)
_values = st.one_of(st.lists(_int64, max_size=40), st.lists(st.integers(0, 300), max_size=40),
                    st.lists(st.integers(0, 1 << 59), max_size=40).map(sorted))


def _encoded(values: list[int], delta: bool) -> bytes:
    array = np.array(values, np.int64)
    out = np.zeros(MAX_VARINT_BYTES * len(values) + 3, np.uint8)
    end = encode_varints(array, delta, out, 3)
    return out[3:end].tobytes()


@given(_values, st.booleans())
@settings(max_examples=200, deadline=None)
def test_varints_agree_with_the_twin_and_round_trip(values, delta):
    encoded = _encoded(values, delta)
    assert encoded == ref_encode_varints(values, delta)
    assert ref_decode_varints(encoded, len(values), delta) == values
    out = np.zeros(len(values), np.int64)
    data = np.frombuffer(b"\x01" + encoded, np.uint8)
    assert decode_varints(data, 1, out, delta) == len(data) and out.tolist() == values
    if encoded:
        assert decode_varints(data[:-1], 1, out, delta) == -1  # cut short: refused, not read past the end


def test_varints_by_hand():
    assert _encoded([300], False) == b"\xac\x02"
    assert _encoded([5, 7, 7], True) == bytes([10, 4, 0])  # zigzag differences 5, 2, 0
    assert _encoded([3, 1], True) == bytes([6, 3])  # a step of -2 -> 3
