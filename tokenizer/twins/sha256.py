"""Twin of :mod:`tokenizer.kernels.sha256`: the digests' limb sums with ``hashlib`` and Python integers.

    >>> ref_document_limb_sums([b"", b""])[0] == 2 * 0xF57055AF
    True
"""

from __future__ import annotations

import hashlib


def ref_document_limb_sums(texts: list[bytes]) -> list[int]:
    """Twin of :func:`tokenizer.kernels.sha256.document_limb_sums` over a list of documents: for each, the digest
    of ``sha256(le64(len) + text)`` read as a little-endian integer and cut into eight 32-bit limbs, summed."""
    sums = [0] * 8
    for text in texts:
        digest = int.from_bytes(hashlib.sha256(len(text).to_bytes(8, "little") + text).digest(), "little")
        for k in range(8):
            sums[k] += (digest >> (32 * k)) & 0xFFFFFFFF
    return sums
