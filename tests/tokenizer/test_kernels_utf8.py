"""The strict UTF-8 decoder kernel vs Python's strict codec, on arbitrary bytes and on the edges of each rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.utf8 import char_length, decode_char, valid_char_length


def python_decode(data: bytes, pos: int) -> tuple[int, int]:
    """(code point, length) of the one character ``data[pos:pos + k]`` decodes to, else (-1, 1)."""
    for k in range(1, 5):
        chunk = data[pos:pos + k]
        if len(chunk) < k:
            break
        try:
            decoded = chunk.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(decoded) == 1:
            return ord(decoded), k
        break
    return -1, 1


def kernel_decode(data: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    array = np.frombuffer(data, dtype=np.uint8)
    end = len(data) if end is None else end
    cp, length = decode_char(array, pos, end)
    return int(cp), int(length)


def test_docstring_examples():
    data = b"a\xc3\xa9\xe4\xb8"
    assert [kernel_decode(data, pos) for pos in range(5)] == [(0x61, 1), (0xE9, 2), (-1, 1), (-1, 1), (-1, 1)]
    assert kernel_decode("\u4e2d".encode(), 0) == (0x4E2D, 3)
    assert kernel_decode(b"\xe4a", 0) == (-1, 1)
    assert kernel_decode(b"\xed\xa0\x80", 0) == (-1, 1)
    assert char_length(np.frombuffer("\u4e2d".encode(), np.uint8), 0, 3) == 3
    assert valid_char_length(np.frombuffer(b"\xc3", np.uint8), 0, 1) == 0


@pytest.mark.parametrize("data", [
    b"\x7f", b"\x80", b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf", b"\xe0\x9f\xbf", b"\xe0\xa0\x80",
    b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xe1\x80", b"\xf1\x80\x80",
])
def test_rule_edges(data):
    assert kernel_decode(data, 0) == python_decode(data, 0)


def test_end_cuts_a_character():
    assert kernel_decode(b"\xc3\xa9", 0, end=1) == (-1, 1)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=1, max_size=12))
def test_matches_python_codec(data):
    array = np.frombuffer(data, dtype=np.uint8)
    for pos in range(len(data)):
        cp, length = python_decode(data, pos)
        assert kernel_decode(data, pos) == (cp, length)
        assert char_length(array, pos, len(data)) == length
        assert valid_char_length(array, pos, len(data)) == (length if cp >= 0 else 0)
