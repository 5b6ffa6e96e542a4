"""Twins of :mod:`tokenizer.kernels.utf8`: character lengths by Python's strict UTF-8 codec.

    >>> ref_char_length("é".encode(), 0), ref_char_length(b"\\xc3", 0), ref_valid_char_length(b"\\xc3", 0)
    (2, 1, 0)
    >>> ref_utf8_chars(b"a\\xc3\\xa9\\xff")
    [(b'a', 'a'), (b'\\xc3\\xa9', 'é'), (b'\\xff', None)]
"""

from __future__ import annotations


def ref_char_length(data: bytes, pos: int) -> int:
    """Twin of :func:`tokenizer.kernels.utf8.char_length`. Length of the UTF-8 character at ``pos``: the k
    in 1..4 for which ``data[pos:pos+k]`` decodes to exactly one character, else 1 (an invalid byte)."""
    for k in range(1, 5):
        chunk = data[pos:pos + k]
        if len(chunk) < k:
            break
        try:
            if len(chunk.decode("utf-8")) == 1:
                return k
        except UnicodeDecodeError:
            continue
    return 1


def ref_valid_char_length(text: bytes, position: int) -> int:
    """Twin of :func:`tokenizer.kernels.utf8.valid_char_length`, by decoding with Python's strict UTF-8 codec
    (which rejects the same overlong forms, surrogates and code points above U+10FFFF)."""
    for length in (1, 2, 3, 4):
        chunk = text[position:position + length]
        if len(chunk) < length:
            return 0
        try:
            decoded = chunk.decode("utf-8")
        except UnicodeDecodeError:
            continue
        return length if len(decoded) == 1 else 0
    return 0


def ref_utf8_chars(data: bytes) -> list[tuple[bytes, str | None]]:
    """``data`` cut into its characters by Python's strict UTF-8 codec: ``(bytes, the character)`` for each valid
    one, ``(one byte, None)`` for each byte that starts no valid character."""
    chars, pos = [], 0
    while pos < len(data):
        length = ref_valid_char_length(data, pos)
        chars.append((data[pos:pos + length], data[pos:pos + length].decode("utf-8")) if length
                     else (data[pos:pos + 1], None))
        pos += length or 1
    return chars
