"""XXH64, the 64-bit xxHash, as Spark's ``xxhash64`` SQL function computes it for a binary value (seed 42), so that
code reading documents without Spark picks the same held-out documents as ``pipelines.spark.train_engine.split_holdout``.

Spark's ``XXH64.hashUnsafeBytes`` is the standard algorithm (32-byte stripes in four lanes, then 8-, 4- and 1-byte
tails, then the avalanche), reading little-endian words; its SQL result is the hash as a signed 64-bit integer.

Example (hand-checkable against the XXH64 reference vectors): ``xxh64(b"", 0)`` is ``0xEF46DB3751D8E999``. The
pure-Python twin is :func:`tokenizer.twins.xxhash.ref_xxh64`.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

SPARK_SEED = 42
#: ``pipelines.spark.train_engine.split_holdout`` holds a document out when ``pmod(xxhash64(text), HOLDOUT_BUCKETS)`` falls below
#: :func:`held_out_buckets` of the fraction.
HOLDOUT_BUCKETS = 1_000_000
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


@kernel(inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@kernel(inline="always")
def _read_le(data, p, nbytes):
    """The little-endian unsigned integer in ``data[p:p + nbytes]`` (``nbytes`` <= 8), as uint64."""
    value = np.uint64(0)
    for k in range(nbytes):
        value |= np.uint64(data[p + k]) << np.uint64(8 * k)
    return value


@kernel(inline="always")
def _round(acc, lane):
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@kernel(inline="always")
def _merge(acc, lane):
    acc ^= _round(np.uint64(0), lane)
    return acc * _P1 + _P4


@kernel
def xxh64_range(data, start, end, seed):
    """XXH64 (uint64) of ``data[start:end]`` (uint8) with ``seed`` (uint64)."""
    p = start
    length = end - start
    if length >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        while p + 32 <= end:
            v1 = _round(v1, _read_le(data, p, 8))
            v2 = _round(v2, _read_le(data, p + 8, 8))
            v3 = _round(v3, _read_le(data, p + 16, 8))
            v4 = _round(v4, _read_le(data, p + 24, 8))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + _P5
    h += np.uint64(length)
    while p + 8 <= end:
        h ^= _round(np.uint64(0), _read_le(data, p, 8))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        h ^= _read_le(data, p, 4) * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h ^= np.uint64(data[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@kernel
def span_bucket_kernel(data, offsets, seed, buckets, out):
    """``out[i] = pmod(xxhash64(data[offsets[i]:offsets[i + 1]]), buckets)`` (int64), Spark's
    ``pmod(xxhash64(col), buckets)`` with xxhash64 the signed XXH64 of the bytes and ``seed``."""
    for i in range(offsets.shape[0] - 1):
        signed = np.int64(xxh64_range(data, offsets[i], offsets[i + 1], np.uint64(seed)))
        out[i] = signed % np.int64(buckets)  # Numba's % follows Python: never negative for a positive modulus


def span_buckets(data, offsets, buckets: int, seed: int = SPARK_SEED) -> np.ndarray:
    """Bucket (int64, 0..buckets-1) of every packed byte string ``data[offsets[i]:offsets[i + 1]]``: Spark's
    ``pmod(xxhash64(value), buckets)``. ``span_buckets(b"ab", [0, 1, 2], 1)`` -> ``[0, 0]``."""
    out = np.empty(len(offsets) - 1, np.int64)
    span_bucket_kernel(np.ascontiguousarray(data, np.uint8), np.asarray(offsets, np.int64), seed, buckets, out)
    return out


def held_out_buckets(fraction: float) -> int:
    """How many of the ``HOLDOUT_BUCKETS`` buckets are held out: ``held_out_buckets(0.001)`` -> ``1000``."""
    return int(round(fraction * HOLDOUT_BUCKETS)) if fraction > 0 else 0


def held_out_documents(data, offsets, fraction: float):
    """Bool mask of the packed documents ``data[offsets[i]:offsets[i + 1]]`` (uint8, int64) that
    ``pipelines.spark.train_engine.split_holdout`` holds out at ``fraction`` (all false at 0)."""
    buckets = held_out_buckets(fraction)
    if buckets <= 0:
        return np.zeros(len(offsets) - 1, bool)
    return span_buckets(data, offsets, HOLDOUT_BUCKETS) < buckets
