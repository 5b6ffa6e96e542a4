"""The documents' SHA-256 limb sums (:mod:`tokenizer.kernels.sha256`) against their ``hashlib`` twin."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import given, settings, strategies as st

from tokenizer.kernels.sha256 import document_limb_sums
from tokenizer.packed import pack
from tokenizer.twins.sha256 import ref_document_limb_sums

# Document lengths where the padded message changes shape: the message is 8 + len bytes, one block holds at most
# 55 message bytes (then 0x80 and the 8-byte bit length), so 47/48 and 111/112 switch to one block more, and
# 56/120 bytes make the message end on a block boundary; the rest are around 64-byte multiples of the document.
BOUNDARY_LENGTHS = sorted({n + d for n in (0, 47, 48, 55, 56, 63, 64, 111, 112, 119, 120, 127, 128) for d in (-1, 0, 1)
                           if n + d >= 0})


def limb_sums(texts: list[bytes]) -> list[int]:
    data, offsets = pack(texts)
    sums = document_limb_sums(np.asarray(data, np.uint8), np.asarray(offsets, np.int64))
    assert sums.dtype == np.uint64 and sums.shape == (8,)
    return [int(s) for s in sums]


def test_empty_document_example():
    digest = hashlib.sha256(bytes(8)).digest()
    assert digest[:4] == bytes.fromhex("af5570f5")
    assert limb_sums([b"", b""])[0] == 2 * 0xF57055AF == ref_document_limb_sums([b"", b""])[0]
    assert limb_sums([]) == [0] * 8


def test_every_boundary_length_alone():
    for n in BOUNDARY_LENGTHS:
        text = bytes((7 * i + n) % 256 for i in range(n))
        assert limb_sums([text]) == ref_document_limb_sums([text]), n


document = st.one_of(st.binary(max_size=200),
                     st.sampled_from(BOUNDARY_LENGTHS).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
                     st.binary(min_size=1000, max_size=5000))


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(document, max_size=12))
def test_kernel_equals_hashlib_twin(texts):
    assert limb_sums(texts) == ref_document_limb_sums(texts)


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(st.binary(max_size=80), min_size=1, max_size=8), prefix=st.binary(max_size=9))
def test_offsets_need_not_start_at_zero(texts, prefix):
    data, offsets = pack(texts)
    data = np.frombuffer(prefix + np.asarray(data, np.uint8).tobytes() + b"tail", np.uint8)
    offsets = np.asarray(offsets, np.int64) + len(prefix)
    assert [int(s) for s in document_limb_sums(data, offsets)] == ref_document_limb_sums(texts)
