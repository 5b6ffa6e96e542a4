"""normalize_batch of the Unicode forms equals normalizing each text alone, fast path included."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.errors import InputError
from tokenizer.normalizers import NFC, NFKC

# Characters where composition, reordering and compatibility mappings happen: bases, combining marks of several
# classes, precomposed letters, Hangul jamo and syllables, compatibility forms, CJK.
TRICKY = "aeoAE\u00e9\u0301\u0300\u0323\u0327\u0338\u1100\u1161\u11a8\uac00\u212b\u2126\uff76\u2460\ufb01 \n\u4e2d"


def pack(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return np.frombuffer(b"".join(texts), dtype=np.uint8), offsets


def unpack(data: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    return [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(offsets) - 1)]


@pytest.mark.parametrize("normalizer", [NFC(), NFKC()], ids=["nfc", "nfkc"])
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(alphabet=TRICKY, max_size=6), max_size=6), pre_normalize=st.booleans())
def test_batch_equals_per_text(normalizer, texts, pre_normalize):
    blobs = [t.encode() for t in texts]
    if pre_normalize:  # exercise the fast path: every text already normalized, the whole range too or not
        blobs = [normalizer.normalize(b) for b in blobs]
    data, offsets = normalizer.normalize_batch(*pack(blobs))
    assert unpack(data, offsets) == [normalizer.normalize(b) for b in blobs]


def test_batch_refuses_a_text_cut_inside_a_character():
    data, offsets = pack(["\u4e2d".encode()[:1], "\u4e2d".encode()[1:]])  # valid only when joined
    with pytest.raises(InputError, match="valid UTF-8"):
        NFC().normalize_batch(data, offsets)
