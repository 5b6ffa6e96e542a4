"""SHA-256 of every document of a packed shard, for the corpus fingerprint of BytePiece training
(:func:`pipelines.train.bytepiece.multiset_fingerprint`): each document is hashed length-prefixed, as
``sha256(len(text).to_bytes(8, "little") + text)``, and the digests' eight 32-bit limbs (the digest read as a
little-endian integer, cut into 32-bit words from the lowest) are summed over the shard.

The hash is the standard SHA-256 (FIPS 180-4): the message padded with ``0x80``, zeros and its bit length (64-bit
big-endian) to a multiple of 64 bytes, then one compression of each 64-byte block. The length prefix is not in
``data``, so the blocks that hold it or the padding are assembled in a 64-byte staging block; the blocks between
are compressed straight from ``data``. Words are uint64 values below ``2**32``; a sum is masked to 32 bits before
it is rotated or kept. Unlike a Python loop over ``hashlib`` (the GIL held per document), the kernel runs nogil, on
the threads that count the shard's n-grams.

Example (hand-checkable with ``hashlib``): the empty document hashes eight zero bytes, whose digest begins
``af 55 70 f5``, so its limb 0 is ``0xF57055AF``; :func:`document_limb_sums` of the two documents ``b""`` and ``b""``
has limb 0 ``2 * 0xF57055AF``. The twin is :func:`tokenizer.twins.sha256.ref_document_limb_sums` (``hashlib``).
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

LIMBS = 8  # a 256-bit digest as eight 32-bit limbs
_MASK = np.uint64(0xFFFFFFFF)
_INITIAL = np.array([0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19],
                    np.uint64)
_ROUND = np.array([
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
], np.uint64)


@kernel(inline="always")
def _doubled(x):
    """``x`` (uint64 below ``2**32``) in both halves of a uint64: a right shift of it by ``r < 32``, masked to 32
    bits, is ``x`` rotated right by ``r`` as a 32-bit word."""
    return x | (x << np.uint64(32))


@kernel(inline="always")
def _rotr3(x, r1, r2, r3):
    """``rotr(x, r1) ^ rotr(x, r2) ^ rotr(x, r3)`` of the 32-bit word ``x`` (uint64 below ``2**32``)."""
    xx = _doubled(x)
    return ((xx >> np.uint64(r1)) ^ (xx >> np.uint64(r2)) ^ (xx >> np.uint64(r3))) & _MASK


@kernel(inline="always")
def _compress(state, schedule, block, at):
    """One SHA-256 compression of the 64 bytes ``block[at:at + 64]`` (uint8) into ``state`` (uint64[8], each word
    below ``2**32``); ``schedule`` (uint64[64]) is scratch for the message schedule."""
    for t in range(16):
        p = at + 4 * t
        schedule[t] = ((np.uint64(block[p]) << np.uint64(24)) | (np.uint64(block[p + 1]) << np.uint64(16))
                       | (np.uint64(block[p + 2]) << np.uint64(8)) | np.uint64(block[p + 3]))
    for t in range(16, 64):
        x = schedule[t - 15]
        y = schedule[t - 2]
        xx = _doubled(x)
        yy = _doubled(y)
        s0 = ((xx >> np.uint64(7)) ^ (xx >> np.uint64(18)) ^ (x >> np.uint64(3))) & _MASK
        s1 = ((yy >> np.uint64(17)) ^ (yy >> np.uint64(19)) ^ (y >> np.uint64(10))) & _MASK
        schedule[t] = (schedule[t - 16] + s0 + schedule[t - 7] + s1) & _MASK
    a = state[0]
    b = state[1]
    c = state[2]
    d = state[3]
    e = state[4]
    f = state[5]
    g = state[6]
    h = state[7]
    for t in range(64):
        first = h + _rotr3(e, 6, 11, 25) + (g ^ (e & (f ^ g))) + _ROUND[t] + schedule[t]  # below 2**35
        second = _rotr3(a, 2, 13, 22) + ((a & b) | (c & (a | b)))
        h = g
        g = f
        f = e
        e = (d + first) & _MASK
        d = c
        c = b
        b = a
        a = (first + second) & _MASK
    state[0] = (state[0] + a) & _MASK
    state[1] = (state[1] + b) & _MASK
    state[2] = (state[2] + c) & _MASK
    state[3] = (state[3] + d) & _MASK
    state[4] = (state[4] + e) & _MASK
    state[5] = (state[5] + f) & _MASK
    state[6] = (state[6] + g) & _MASK
    state[7] = (state[7] + h) & _MASK


@kernel
def document_limb_sums(data, offsets):
    """The sums over documents ``data[offsets[i]:offsets[i + 1]]`` (uint8; int64 ``(n + 1,)``) of the eight 32-bit
    limbs of ``sha256(le64(length) + document)``: uint64[8], limb ``k`` the digest's bytes ``4k .. 4k + 3`` read
    little-endian (``(int.from_bytes(digest, "little") >> 32 * k) & 0xFFFFFFFF``).

    The sums cannot overflow: each limb is below ``2**32``, so ``n`` documents sum below ``n * 2**32``, within
    uint64 for any ``n < 2**32`` (an offsets array that long would take 32 GiB; a shard holds a few MB).
    Example: ``document_limb_sums(np.zeros(0, np.uint8), np.zeros(3, np.int64))[0] == 2 * 0xF57055AF`` (two
    empty documents, see the module docstring).
    """
    sums = np.zeros(LIMBS, np.uint64)
    state = np.empty(LIMBS, np.uint64)
    schedule = np.empty(64, np.uint64)
    staging = np.empty(64, np.uint8)
    for i in range(len(offsets) - 1):
        start = offsets[i]
        length = offsets[i + 1] - start
        total = length + 8                       # message bytes: the 8-byte length prefix, then the document
        n_blocks = (total + 9 + 63) // 64        # room for the 0x80 byte and the 8-byte bit length
        bit_length = np.uint64(total) * np.uint64(8)
        for k in range(LIMBS):
            state[k] = _INITIAL[k]
        for block in range(n_blocks):
            first = block * 64                   # message position of the block's first byte
            if first >= 8 and first + 64 <= total:
                _compress(state, schedule, data, start + first - 8)
                continue
            for j in range(64):
                staging[j] = 0
            for m in range(first, min(first + 64, 8)):
                staging[m - first] = np.uint8((np.uint64(length) >> np.uint64(8 * m)) & np.uint64(0xFF))
            for m in range(max(first, 8), min(first + 64, total)):
                staging[m - first] = data[start + m - 8]
            if first <= total < first + 64:
                staging[total - first] = 0x80
            if block == n_blocks - 1:             # the bit length, big-endian, ends the last block
                for j in range(8):
                    staging[56 + j] = np.uint8((bit_length >> np.uint64(8 * (7 - j))) & np.uint64(0xFF))
            _compress(state, schedule, staging, 0)
        for k in range(LIMBS):
            word = state[k]                      # big-endian in the digest: the limb is its byte swap
            sums[k] += (((word & np.uint64(0xFF)) << np.uint64(24)) | ((word & np.uint64(0xFF00)) << np.uint64(8))
                        | ((word >> np.uint64(8)) & np.uint64(0xFF00)) | (word >> np.uint64(24)))
    return sums
