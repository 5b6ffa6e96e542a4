"""Twin of :mod:`tokenizer.kernels.xxhash`: XXH64 written out with Python integers (slow, for tests).

    >>> hex(ref_xxh64(b"", 0)), hex(ref_xxh64(b"abc", 0))
    ('0xef46db3751d8e999', '0x44bc2cf5ad770999')
"""

from __future__ import annotations

_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_MASK = (1 << 64) - 1


def ref_xxh64(data: bytes, seed: int) -> int:
    """Twin of :func:`tokenizer.kernels.xxhash.xxh64_range` over the whole of ``data``: XXH64 written out with
    Python integers."""
    p1, p2, p3, p4, p5 = _P1, _P2, _P3, _P4, _P5

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & _MASK

    def round_(acc, lane):
        return (rotl((acc + lane * p2) & _MASK, 31) * p1) & _MASK

    def merge(acc, lane):
        return ((acc ^ round_(0, lane)) * p1 + p4) & _MASK

    n, p = len(data), 0
    if n >= 32:
        lanes = [(seed + p1 + p2) & _MASK, (seed + p2) & _MASK, seed & _MASK, (seed - p1) & _MASK]
        while p + 32 <= n:
            for k in range(4):
                lanes[k] = round_(lanes[k], int.from_bytes(data[p + 8 * k:p + 8 * k + 8], "little"))
            p += 32
        h = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18)) & _MASK
        for lane in lanes:
            h = merge(h, lane)
    else:
        h = (seed + p5) & _MASK
    h = (h + n) & _MASK
    while p + 8 <= n:
        h ^= round_(0, int.from_bytes(data[p:p + 8], "little"))
        h = (rotl(h, 27) * p1 + p4) & _MASK
        p += 8
    if p + 4 <= n:
        h ^= (int.from_bytes(data[p:p + 4], "little") * p1) & _MASK
        h = (rotl(h, 23) * p2 + p3) & _MASK
        p += 4
    while p < n:
        h ^= (data[p] * p5) & _MASK
        h = (rotl(h, 11) * p1) & _MASK
        p += 1
    h ^= h >> 33
    h = (h * p2) & _MASK
    h ^= h >> 29
    h = (h * p3) & _MASK
    return h ^ (h >> 32)
