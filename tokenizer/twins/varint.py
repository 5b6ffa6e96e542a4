"""Slow, obviously-correct Python twin of :mod:`tokenizer.kernels.varint` (for tests only).

    >>> ref_encode_varints([5, 7, 7], delta=True).hex()
    '0a0400'
"""

from __future__ import annotations


def _wrap(value: int) -> int:
    """``value`` as a signed 64-bit integer (two's complement wrap-around)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def ref_encode_varints(values: list[int], delta: bool) -> bytes:
    out, previous = bytearray(), 0
    for value in values:
        if delta:
            step = _wrap(value - previous)
            previous = value
            unsigned = (step << 1) ^ (-1 if step < 0 else 0)
        else:
            unsigned = value
        unsigned &= (1 << 64) - 1
        while True:
            low, unsigned = unsigned & 0x7F, unsigned >> 7
            out.append(low | (0x80 if unsigned else 0))
            if not unsigned:
                break
    return bytes(out)


def ref_decode_varints(data: bytes, count: int, delta: bool) -> list[int]:
    values, position, previous = [], 0, 0
    for _ in range(count):
        unsigned, shift = 0, 0
        while True:
            byte = data[position]
            position += 1
            unsigned |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if delta:
            step = (unsigned >> 1) ^ -(unsigned & 1)
            previous = _wrap(previous + step)
            values.append(previous)
        else:
            values.append(_wrap(unsigned))
    return values
