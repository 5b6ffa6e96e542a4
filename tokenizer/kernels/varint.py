"""Numba kernels of the compact form count tables take in the shuffle: int64 columns as LEB128 varints, each value
optionally the zigzag-coded difference from the one before it (sorted keys then take a byte or two each, small
counts one). Slow, obviously-correct twins live in :mod:`tokenizer.twins.varint`; a hypothesis test checks that
each pair agrees and that decoding inverts encoding.

Varint: 7 bits per byte, low bits first, the high bit set on every byte but the last (``300 -> b"\\xac\\x02"``).
Zigzag maps signed to unsigned (``0, -1, 1, -2 -> 0, 1, 2, 3``), so a difference of either sign stays short.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

MAX_VARINT_BYTES = 10  # a 64-bit value takes at most 10 bytes of 7 bits


@kernel
def encode_varints(values, delta, out, at):
    """Write int64 ``values`` (with ``delta``: each one's zigzag-coded difference from the one before, the first
    from 0; else each as an unsigned 64-bit value) as varints into ``out`` (uint8, room for
    ``MAX_VARINT_BYTES`` per value) from byte ``at``; returns the end. Example: ``[5, 7, 7]`` with delta ->
    zigzag ``[10, 4, 0]`` -> bytes ``0a 04 00``."""
    previous = np.int64(0)
    for i in range(len(values)):
        value = values[i]
        if delta:
            step = value - previous  # (wraps like the decoder's sum: any int64 values round-trip)
            previous = value
            unsigned = np.uint64((step << 1) ^ (step >> 63))
        else:
            unsigned = np.uint64(value)
        while unsigned >= 0x80:
            out[at] = np.uint8((unsigned & np.uint64(0x7F)) | np.uint64(0x80))
            unsigned >>= np.uint64(7)
            at += 1
        out[at] = np.uint8(unsigned)
        at += 1
    return at


@kernel
def decode_varints(data, at, out, delta):
    """Read ``len(out)`` varints from ``data`` (uint8) at byte ``at`` into ``out`` (int64), undoing
    :func:`encode_varints` with the same ``delta``; returns the end, or -1 when ``data`` ends inside them."""
    previous = np.int64(0)
    for i in range(len(out)):
        unsigned = np.uint64(0)
        shift = np.uint64(0)
        while True:
            if at >= len(data) or shift > np.uint64(63):
                return -1
            byte = np.uint64(data[at])
            at += 1
            unsigned |= (byte & np.uint64(0x7F)) << shift
            if byte < 0x80:
                break
            shift += np.uint64(7)
        if delta:
            step = np.int64(unsigned >> np.uint64(1)) ^ -np.int64(unsigned & np.uint64(1))
            previous += step
            out[i] = previous
        else:
            out[i] = np.int64(unsigned)
    return at
